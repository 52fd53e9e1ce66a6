"""Remote vs local reads with 20 ms injected latency per request, as time ratios.

Run: ``python benchmarks/bench_remote.py`` (writes ``benchmarks/results/bench_remote.json``;
the 0.9 case needs ``zarr-vectors==0.9.2``).

Two stores are written into ``benchmarks/.work/`` (git-ignored) and served from a loopback
HTTP server in a child process (``tests/remote/_zv_http.py``; directory index on, so that
attribute names are known and both reads do the same work; chunks are still found without
listing) that holds every response ``--latency`` seconds:

* ``v07``: 150,000 uniform points in [0, 1000)³, one float32 attribute, chunk 125³
  (512 chunks, one level; ``benchmarks/_v07_writer.py``). The remote read finds the chunks
  by probing the 512 candidate keys of the bounds' chunk grid.
* ``v09``: 400,000 points, chunk 125³, bin 31.25³, written by zarr-vectors 0.9.2 with a
  two-level pyramid (levels of 400,000 / 4,096 / 64 vertices; 512 cells).

Timed (best of ``--repeats``, a fresh store each time):

* ``first_frame``: ``open_store`` + ``read`` of the level that
  ``napari_zarr_vectors.napari.lod.plan.initial_level`` picks;
* ``pan``: after the first frame, ``--pan-steps`` bbox reads of a 250³ window moving by
  100 along a serpentine path through the volume at level 0, sharing one ``ChunkCache``.

Reported per case and phase: remote and local seconds, ``remote_over_local``, the chunks and
the requests the remote read fetched, and the ratio expected with no concurrency,
``chunks x latency / local`` (and ``requests x latency / local``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import shutil
import subprocess
import sys
import time
import urllib.request
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import napari_zarr_vectors as nzv  # noqa: E402
from _v07_writer import write_points_v07  # noqa: E402
from napari_zarr_vectors.format import io as zv_io  # noqa: E402

SERVER = HERE.parent / "tests" / "remote" / "_zv_http.py"


def _initial_level() -> Callable[[Any], int]:
    """``napari_zarr_vectors.napari.lod.plan.initial_level``, imported without napari (the
    module is pure numpy)."""
    path = HERE.parent / "src" / "napari_zarr_vectors" / "napari" / "lod.py"
    spec = importlib.util.spec_from_file_location("_zv_lod", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.initial_level


initial_level = _initial_level()


def make_v07(path: Path, n: int) -> None:
    marker = path.with_suffix(".json")
    params = {"n": n, "writer": "_v07_writer", "chunk": 125.0}
    if path.exists() and marker.exists() and json.loads(marker.read_text()) == params:
        return
    if path.exists():
        shutil.rmtree(path)
    rng = np.random.default_rng(0)
    positions = rng.uniform(0, 1000, (n, 3)).astype(np.float32)
    write_points_v07(path, positions, rng.random(n, dtype=np.float32), chunk=125.0)
    marker.write_text(json.dumps(params))


def make_v09(path: Path, n: int) -> bool:
    try:
        from zarr_vectors.multiresolution.coarsen import build_pyramid
        from zarr_vectors.types.points import write_points
    except ImportError:
        return False
    marker = path.with_suffix(".json")
    params = {"n": n, "writer": "zarr-vectors 0.9.2", "chunk": 125.0, "bin": 31.25, "levels": 3}
    if path.exists() and marker.exists() and json.loads(marker.read_text()) == params:
        return True
    if path.exists():
        shutil.rmtree(path)
    rng = np.random.default_rng(1)
    positions = rng.uniform(0, 1000, (n, 3)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        write_points(
            str(path),
            positions,
            chunk_shape=(125.0,) * 3,
            bin_shape=(31.25,) * 3,
            bounds=([0.0] * 3, [1000.0] * 3),
            vertex_attributes={"intensity": rng.random(n).astype(np.float32)},
        )
        build_pyramid(str(path), factors=[(2.0, 1.0), (4.0, 1.0)])
    marker.write_text(json.dumps(params))
    return True


def pan_boxes(steps: int, window: float = 250.0, step: float = 100.0) -> list[np.ndarray]:
    """A serpentine path of ``steps`` windows through the middle z slab of [0, 1000)³."""
    boxes = []
    x, y, dx = 0.0, 0.0, step
    z = 375.0
    for _ in range(steps):
        lo = np.array([x, y, z])
        boxes.append(np.stack([lo, lo + window - 1e-3]))
        if not 0.0 <= x + dx <= 1000.0 - window:
            dx, y = -dx, y + step
        else:
            x += dx
    return boxes


def first_frame(location: str) -> tuple[Any, int, int]:
    """Open + read the initial level; returns the store, the level and its chunk count."""
    store = nzv.open_store(location)
    level = initial_level(store.levels)
    store.read(level)
    return store, level, len(store.chunks(level))


def pan(store: Any, boxes: list[np.ndarray]) -> int:
    """Read every box at level 0 with one shared cache; returns the chunks fetched."""
    cache = nzv.ChunkCache()
    for box in boxes:
        store.read(0, bbox=box, cache=cache)
    return cache.misses


@contextlib.contextmanager
def serve(root: Path, latency: float) -> Iterator[str]:
    """Serve ``root`` from ``tests/remote/_zv_http.py`` in a child process (so that the
    server does not compete with the reader for this process's GIL); yields its URL. The
    child stops when its stdin closes, or after 15 minutes whatever happens."""
    cmd = [sys.executable, str(SERVER), str(root), "--index", "--latency", str(latency)]
    proc = subprocess.Popen(
        [*cmd, "--lifetime", "900"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def requests(base: str, reset: bool = False) -> int:
    """Requests the server answered since the last reset (and reset when asked)."""
    with urllib.request.urlopen(f"{base}/__zv_stats__{'?reset' if reset else ''}") as r:
        return int(json.loads(r.read())["requests"])


def best(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def run_case(name: str, path: Path, args: argparse.Namespace) -> dict[str, Any]:
    boxes = pan_boxes(args.pan_steps)
    t_ff_local, (_, level, n_chunks) = best(lambda: first_frame(str(path)), args.repeats)

    def pan_local() -> int:
        store, *_ = first_frame(str(path))
        t0 = time.perf_counter()
        pan(store, boxes)
        return time.perf_counter() - t0

    t_pan_local = min(pan_local() for _ in range(args.repeats))

    with serve(path.parent, args.latency) as base:
        url = f"{base}/{path.name}"
        first_frame(url)  # warm-up: connections, imports
        ff_requests, t_ff_remote = [], []
        for _ in range(args.repeats):
            requests(base, reset=True)
            t0 = time.perf_counter()
            store, _, _ = first_frame(url)
            t_ff_remote.append(time.perf_counter() - t0)
            ff_requests.append(requests(base))
        pan_times, pan_requests, pan_chunks = [], [], 0
        for _ in range(args.repeats):
            store, _, _ = first_frame(url)
            requests(base, reset=True)
            t0 = time.perf_counter()
            pan_chunks = pan(store, boxes)
            pan_times.append(time.perf_counter() - t0)
            pan_requests.append(requests(base))

    def phase(t_remote: float, t_local: float, chunks: int, requests: int) -> dict[str, Any]:
        return {
            "remote_s": round(t_remote, 4),
            "local_s": round(t_local, 4),
            "remote_over_local": round(t_remote / t_local, 1),
            "chunks_fetched": chunks,
            "requests": requests,
            "serial_ratio_chunks": round(chunks * args.latency / t_local, 1),
            "serial_ratio_requests": round(requests * args.latency / t_local, 1),
        }

    return {
        "store": name,
        "initial_level": level,
        "first_frame": phase(min(t_ff_remote), t_ff_local, n_chunks, min(ff_requests)),
        "pan": phase(min(pan_times), t_pan_local, pan_chunks, min(pan_requests)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.020)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pan-steps", type=int, default=12)
    parser.add_argument("--v07-points", type=int, default=150_000)
    parser.add_argument("--v09-points", type=int, default=400_000)
    parser.add_argument("--concurrency", type=int, default=zv_io.MAX_CONCURRENCY)
    args = parser.parse_args()
    zv_io.MAX_CONCURRENCY = args.concurrency
    warnings.simplefilter("ignore")

    work = HERE / ".work" / "remote"
    work.mkdir(parents=True, exist_ok=True)
    cases = []
    v07 = work / "v07" / "points.zarrvectors"
    v07.parent.mkdir(exist_ok=True)
    make_v07(v07, args.v07_points)
    cases.append(run_case("v07", v07, args))
    v09 = work / "v09" / "points.zarrvectors"
    v09.parent.mkdir(exist_ok=True)
    if make_v09(v09, args.v09_points):
        cases.append(run_case("v09", v09, args))

    for case in cases:
        for key in ("first_frame", "pan"):
            p = case[key]
            print(
                f"{case['store']} {key:11s} remote {p['remote_s']:.3f} s / local "
                f"{p['local_s']:.3f} s = {p['remote_over_local']:6.1f}x  "
                f"({p['chunks_fetched']} chunks, {p['requests']} requests; no concurrency "
                f"would give ~{p['serial_ratio_chunks']}x by chunks, "
                f"~{p['serial_ratio_requests']}x by requests)"
            )
    out = {
        "latency_s": args.latency,
        "concurrency": args.concurrency,
        "repeats": args.repeats,
        "pan_steps": args.pan_steps,
        "cases": cases,
    }
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    (results / "bench_remote.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
