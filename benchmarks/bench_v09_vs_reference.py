"""0.9 read path vs zarr-vectors 0.9.2's own reader, as time ratios ours / theirs.

Run: ``python benchmarks/bench_v09_vs_reference.py`` (needs ``zarr-vectors==0.9.2``; writes
``benchmarks/results/bench_v09_vs_reference.json``).

The store is written once by zarr-vectors 0.9.2 into ``benchmarks/.work/`` (git-ignored) and
reused while its parameters match: uniform points in [0, 1000]³, one float32 attribute,
chunk 100³ (1000 cells), bin 25³, unsharded and uncompressed -- the setup of FORMAT09 §8.

Timed reads (best of ``--repeats``; ours and theirs alternate inside every repeat):

* ``full``: the whole of level 0, positions + ``intensity``
  (``open_store(p).read(0)`` vs ``zv.open(p).level(0).read()``);
* ``bbox_aligned``: the 200³ box [400, 600]³ (27 cells)
  (``read(0, bbox=...)`` vs ``.select(bbox=...).read()``);
* ``bbox_unaligned``: the 200³ box [310, 510]³ (27 cells).

Every read opens the store afresh (metadata included, as a viewer opening a file would);
``*_warm`` repeats the reads on an already-open store / dataset. Both readers must return
the same vertices (checked before timing). Target: every ratio <= 1.0.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
import warnings
from pathlib import Path

import numpy as np

import napari_zarr_vectors as nzv

HERE = Path(__file__).parent
BOXES = {
    "bbox_aligned": ((400.0, 400.0, 400.0), (600.0, 600.0, 600.0)),
    "bbox_unaligned": ((310.0, 310.0, 310.0), (510.0, 510.0, 510.0)),
}


def make_store(path: Path, n: int, seed: int) -> np.ndarray:
    """Write (or reuse) the benchmark store; returns the positions written."""
    from zarr_vectors.types.points import write_points

    rng = np.random.default_rng(seed)
    positions = rng.uniform(0, 1000, (n, 3)).astype(np.float32)
    intensity = rng.random(n).astype(np.float32)
    marker = path.with_suffix(".json")
    params = {"n": n, "seed": seed, "writer": "zarr-vectors 0.9.2", "chunk": 100.0, "bin": 25.0}
    if path.exists() and marker.exists() and json.loads(marker.read_text()) == params:
        return positions
    if path.exists():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    write_points(
        str(path),
        positions,
        chunk_shape=(100.0, 100.0, 100.0),
        bin_shape=(25.0, 25.0, 25.0),
        bounds=([0.0, 0.0, 0.0], [1000.0, 1000.0, 1000.0]),
        vertex_attributes={"intensity": intensity},
    )
    print(f"wrote {path} in {time.perf_counter() - t0:.1f} s")
    marker.write_text(json.dumps(params))
    return positions


def best_pair(ours, theirs, repeats: int) -> tuple[float, float]:
    """Best time of each callable, alternating them inside every repeat."""
    t_ours, t_theirs = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        ours()
        t_ours.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        theirs()
        t_theirs.append(time.perf_counter() - t0)
    return min(t_ours), min(t_theirs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=2_000_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--out", type=Path, default=HERE / "results" / "bench_v09_vs_reference.json"
    )
    args = parser.parse_args()

    warnings.filterwarnings("ignore")  # zarr's UnstableSpecificationWarning on vlen-bytes
    import zarr_vectors as zv

    path = HERE / ".work" / "points2m_v09.zarrvectors"
    positions = make_store(path, args.points, args.seed)
    p = str(path)

    # same answers first
    ours_full = nzv.open_store(path).read(0)
    theirs_full = zv.open(p).level(0).read()
    assert ours_full.vertex_count == len(theirs_full.positions) == args.points
    assert np.array_equal(
        np.sort(ours_full.vertex_attributes["intensity"]),
        np.sort(np.asarray(theirs_full.attributes["intensity"])),
    )
    counts = {}
    for name, (lo, hi) in BOXES.items():
        ours_box = nzv.open_store(path).read(0, bbox=(lo, hi))
        theirs_box = zv.open(p).level(0).select(bbox=(lo, hi)).read()
        inside = int(np.all((positions >= lo) & (positions <= hi), axis=1).sum())
        assert ours_box.vertex_count == len(theirs_box.positions) == inside, name
        assert sorted(map(tuple, ours_box.positions.tolist())) == sorted(
            map(tuple, np.asarray(theirs_box.positions).tolist())
        )
        counts[name] = inside

    seconds: dict[str, dict[str, float]] = {}
    seconds["full"] = dict(
        zip(
            ("ours", "theirs"),
            best_pair(
                lambda: nzv.open_store(path).read(0),
                lambda: zv.open(p).level(0).read(),
                args.repeats,
            ),
            strict=True,
        )
    )
    for name, (lo, hi) in BOXES.items():
        seconds[name] = dict(
            zip(
                ("ours", "theirs"),
                best_pair(
                    lambda lo=lo, hi=hi: nzv.open_store(path).read(0, bbox=(lo, hi)),
                    lambda lo=lo, hi=hi: zv.open(p).level(0).select(bbox=(lo, hi)).read(),
                    args.repeats,
                ),
                strict=True,
            )
        )
    store, level = nzv.open_store(path), zv.open(p).level(0)
    seconds["full_warm"] = dict(
        zip(
            ("ours", "theirs"),
            best_pair(lambda: store.read(0), lambda: level.read(), args.repeats),
            strict=True,
        )
    )
    lo, hi = BOXES["bbox_aligned"]
    seconds["bbox_aligned_warm"] = dict(
        zip(
            ("ours", "theirs"),
            best_pair(
                lambda: store.read(0, bbox=(lo, hi)),
                lambda: level.select(bbox=(lo, hi)).read(),
                args.repeats,
            ),
            strict=True,
        )
    )

    result = {
        "points": args.points,
        "cells": 1000,
        "repeats": args.repeats,
        "bbox_vertices": counts,
        "seconds": seconds,
        "ratios_ours_over_theirs": {k: v["ours"] / v["theirs"] for k, v in seconds.items()},
        "target": 1.0,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
