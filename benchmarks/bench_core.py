"""Format-core benchmark: bbox selectivity and decode overhead, as ratios.

Run: ``python benchmarks/bench_core.py`` (writes ``benchmarks/results/bench_core.json``).

* ``bbox_over_full``: time of a bbox read covering 1/64 of the volume / a full-level read
  (target <= 1/20 = 0.05).
* ``decode_over_zarr``: our full-level read (positions + attribute, fragment index decoded)
  / reading the same chunk blobs with plain zarr (``zarr.open_array(...)[:]`` per blob)
  (target <= 1.5).
* ``decode_over_raw_get``: our full read / fetching the same bytes through the same store
  without decoding (informational: the pure decode cost).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import zarr

sys.path.insert(0, str(Path(__file__).parent))
import napari_zarr_vectors as nzv  # noqa: E402
from _v07_writer import write_points_v07  # noqa: E402
from napari_zarr_vectors.format.io import StoreIO  # noqa: E402

HERE = Path(__file__).parent


def best_of(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    work = HERE / ".work" / "bench_core.zarrvectors"
    if work.exists():
        shutil.rmtree(work)
    rng = np.random.default_rng(0)
    positions = rng.uniform(0, 1000, size=(args.points, 3)).astype(np.float32)
    write_points_v07(work, positions, rng.random(args.points, dtype=np.float32), chunk=125.0)

    store = nzv.open_store(work)
    chunks = store.chunks(0)
    full = store.read(0)
    assert full.vertex_count == args.points
    lo, hi = np.array([0.0, 0.0, 0.0]), np.array([250.0, 250.0, 250.0]) - 1e-3  # 1/64 of the volume
    box = store.read(0, bbox=(lo, hi))
    inside = np.all((positions >= lo) & (positions <= hi), axis=1).sum()
    assert box.vertex_count == inside, (box.vertex_count, inside)

    keys = [".".join(map(str, c)) for c in chunks]
    arrays = ["vertices", "vertex_fragments", "vertex_attributes/intensity"]
    zstore = zarr.storage.LocalStore(work, read_only=True)

    def plain_zarr() -> None:
        for a in arrays:
            for k in keys:
                zarr.open_array(store=zstore, path=f"0/{a}/{k}", mode="r")[:]

    io = StoreIO(work)
    blob_keys = [f"0/{a}/{k}/{f}" for a in arrays for k in keys for f in ("zarr.json", "c/0")]

    t_full = best_of(lambda: nzv.open_store(work).read(0), args.repeats)
    t_box = best_of(lambda: nzv.open_store(work).read(0, bbox=(lo, hi)), args.repeats)
    t_zarr = best_of(plain_zarr, args.repeats)
    t_raw = best_of(lambda: io.get_many(blob_keys), args.repeats)
    result = {
        "points": args.points,
        "chunks": len(keys),
        "bbox_vertices": int(box.vertex_count),
        "seconds": {
            "full_read": t_full,
            "bbox_read": t_box,
            "plain_zarr_blobs": t_zarr,
            "raw_get": t_raw,
        },
        "ratios": {
            "bbox_over_full": t_box / t_full,
            "decode_over_zarr": t_full / t_zarr,
            "decode_over_raw_get": t_full / t_raw,
        },
        "targets": {"bbox_over_full": 1 / 20, "decode_over_zarr": 1.5},
    }
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "bench_core.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
