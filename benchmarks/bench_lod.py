"""Level-of-detail benchmark: UI stalls, time to first frame, resident vertices,
peak memory of a 10x larger store.

    xvfb-run -a -s "-screen 0 1280x1024x24" python benchmarks/bench_lod.py

One command; every measurement runs in a fresh subprocess (cold caches, its own peak RSS).
Results go to ``benchmarks/results/bench_lod.json`` as ratios plus the raw figures.

Stores (under ``benchmarks/.work/``, git-ignored):

* ``points_big`` / ``tracts_big`` from ``../shared/bench/bench07.tgz`` (ZV 0.7 reference
  writer; 1,000,000 points / 795,488 streamline vertices, 4 levels), unpacked if missing;
* ``points_1x`` / ``points_10x``: 1,000,000 / 10,000,000 uniform points in the same 1000^3
  box with the same 4-level pyramid (chunk 125, bins 31.25 .. 250), written by
  :func:`write_points_pyramid` for the memory comparison.

Measurements

* **UI stall**: a scripted sequence of 2-D zooms, pans and slice moves, a switch to 3-D,
  3-D zooms and rotations; every camera step is animated over 8 small moves 30 ms apart,
  then the run waits until the view settled. A 10 ms ``QTimer`` records the largest gap
  between its ticks over the whole sequence: with the loader (worker thread) vs the same
  sequence with the controller loading synchronously on the UI thread. Run on a hidden
  viewer (the plugin's own UI-thread work) and, for information, a shown one (adds
  llvmpipe software rendering of every frame).
* **time to first frame**: from ``open_in_viewer`` to the canvas' first draw, vs reading
  the same overview level alone with the static reader (``level=...``) and adding its
  layers; the store's coarsest level alone is reported too (shown viewer, after a warm-up
  layer so that napari's one-time initialisation counts in neither).
* **resident vertices**: after every refresh of the stall sequence, vertices in the
  store's layers / the vertex budget.
* **peak RSS**: peak resident memory (``VmHWM``) of a process that opens the store and
  runs the sequence, ``points_10x`` vs ``points_1x``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
WORK = HERE / ".work"
RESULTS = HERE / "results"
BENCH_TGZ = HERE.parent.parent / "shared" / "bench" / "bench07.tgz"

sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))  # data_paths: the fixture stores
from _memory import peak_rss_kb, rss_now_kb  # noqa: E402


def warmup_store() -> Path:
    """The small store napari's warm-up opens: the 0.7 points of the fixture tree."""
    from data_paths import data_root

    return data_root() / "v07" / "points.zarrvectors"


# --------------------------------------------------------------------------------------------
# stores
# --------------------------------------------------------------------------------------------


def ensure_bench07() -> None:
    if (WORK / "points_big.zarrvectors" / "zarr.json").is_file() and (
        WORK / "tracts_big.zarrvectors" / "zarr.json"
    ).is_file():
        return
    if not BENCH_TGZ.is_file():
        raise SystemExit(f"missing {BENCH_TGZ}: see ../shared/bench/README.md")
    WORK.mkdir(parents=True, exist_ok=True)
    print(f"unpacking {BENCH_TGZ} into {WORK} ...", flush=True)
    with tarfile.open(BENCH_TGZ) as tar:
        tar.extractall(WORK, filter="data")


def write_points_pyramid(root: Path, n: int, seed: int = 0) -> None:
    """``n`` uniform points in [0, 1000)^3 with an ``intensity`` attribute as a ZV 0.7 store
    with levels 0-3 (chunk 125; bins 31.25, 62.5, 125, 250; levels >= 1 hold the mean of the
    points of each occupied bin), laid out like the 0.7.0 reference writer's point clouds."""
    from _v07_writer import _blob, _fragments, _group, write_points_v07

    rng = np.random.default_rng(seed)
    positions = rng.uniform(0.0, 1000.0, (n, 3)).astype(np.float32)
    intensity = rng.random(n).astype(np.float32)
    chunk = 125.0
    write_points_v07(root, positions, intensity, chunk)
    bins = [31.25 * 2**k for k in range(4)]
    meta = json.loads((root / "zarr.json").read_text())
    zv = meta["attributes"]["zarr_vectors"]
    zv["base_bin_shape"] = [bins[0]] * 3
    zv["bounds"] = [[0.0, 0.0, 0.0], [1000.0, 1000.0, 1000.0]]
    zv["format_capabilities"] = ["multiscale_links"]
    meta["attributes"]["multiscales"][0]["datasets"] = [
        {
            "path": str(k),
            "coordinateTransformations": [
                {"type": "scale", "scale": [float(2**k)] * 3},
                {"type": "translation", "translation": [bins[k] / 2] * 3},
            ],
        }
        for k in range(4)
    ]
    (root / "zarr.json").write_text(json.dumps(meta))
    for k in range(1, 4):
        key = np.floor(positions / bins[k]).astype(np.int64)
        uniq, inverse = np.unique(key, axis=0, return_inverse=True)
        inverse = inverse.ravel()
        count = np.bincount(inverse)
        meta_pos = np.stack(
            [np.bincount(inverse, weights=positions[:, a]) / count for a in range(3)], axis=1
        ).astype(np.float32)
        level = root / str(k)
        _group(
            level,
            {
                "zarr_vectors_level": {
                    "level": k,
                    "vertex_count": int(len(meta_pos)),
                    "object_sparsity": 1.0,
                    "coarsening_method": "per_object",
                    "parent_level": k - 1,
                    "arrays_present": ["vertices"],
                }
            },
        )
        _group(level / "vertices", {"zv_array": "vertices", "dtype": "float32", "encoding": "raw"})
        _group(
            level / "vertex_fragments",
            {"zv_array": "vertex_fragments", "encoding": "fragment_index_v1"},
        )
        ckey = np.floor(meta_pos / chunk).astype(np.int64)
        order = np.lexsort(ckey.T[::-1])
        ckey, meta_pos = ckey[order], meta_pos[order]
        cuts = np.flatnonzero(np.any(np.diff(ckey, axis=0) != 0, axis=1)) + 1
        for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(ckey)], strict=True):
            name = ".".join(str(int(c)) for c in ckey[a])
            _blob(level / "vertices" / name, meta_pos[a:b].astype("<f4").tobytes())
            _blob(level / "vertex_fragments" / name, _fragments(int(b - a)))


def ensure_pyramid(name: str, n: int) -> Path:
    root = WORK / f"{name}.zarrvectors"
    if not (root / "3" / "zarr.json").is_file():
        print(f"writing {root} ({n:,} points) ...", flush=True)
        import shutil

        shutil.rmtree(root, ignore_errors=True)
        write_points_pyramid(root, n)
    return root


# --------------------------------------------------------------------------------------------
# child processes
# --------------------------------------------------------------------------------------------


def _process_events(seconds: float) -> None:
    from qtpy.QtWidgets import QApplication

    end = time.perf_counter() + seconds
    while True:
        QApplication.processEvents()
        if time.perf_counter() >= end:
            return
        time.sleep(0.002)


def _settle(c, timeout: float = 60.0) -> None:
    from qtpy.QtWidgets import QApplication

    end = time.perf_counter() + timeout
    while time.perf_counter() < end:
        QApplication.processEvents()
        if not c.is_loading:
            _process_events(0.05)
            if not c.is_loading:
                return
        time.sleep(0.002)
    raise TimeoutError("the view did not settle")


def _sequence(viewer, c):
    """The scripted camera steps: (name, list of small moves)."""
    cam = viewer.scene.camera
    lo, hi = (np.asarray(b, float)[::-1] for b in c.store.bounds)  # napari order z, y, x
    size = hi - lo
    z0 = cam.zoom
    zaxis = viewer.dims.ndim - 3

    def zoom_to(factor):
        start = cam.zoom
        return [lambda f=f: setattr(cam, "zoom", start * (factor * z0 / start) ** f) for f in
                np.linspace(0.125, 1.0, 8)]  # fmt: skip

    def pan_to(fy, fx):
        c0 = np.asarray(cam.center, float)
        target = c0.copy()
        target[-2:] = lo[1:] + size[1:] * np.array([fy, fx])
        return [lambda f=f: setattr(cam, "center", tuple(c0 + (target - c0) * f)) for f in
                np.linspace(0.125, 1.0, 8)]  # fmt: skip

    def slice_by(steps):
        step = int(np.sign(steps))
        return [
            lambda: viewer.dims.set_current_step(zaxis, viewer.dims.current_step[zaxis] + step)
        ] * abs(steps)

    def rotate_by(d):
        a0 = np.asarray(cam.angles, float)
        return [lambda f=f: setattr(cam, "angles", tuple(a0 + np.asarray(d) * f)) for f in
                np.linspace(0.125, 1.0, 8)]  # fmt: skip

    def ndisplay(n):
        return [lambda: setattr(viewer.dims, "ndisplay", n)]

    return [
        ("2d zoom x2", lambda: zoom_to(2)),
        ("2d zoom x4", lambda: zoom_to(4)),
        ("2d pan", lambda: pan_to(0.3, 0.3)),
        ("2d pan", lambda: pan_to(0.3, 0.7)),
        ("2d zoom x8", lambda: zoom_to(8)),
        ("2d pan", lambda: pan_to(0.7, 0.7)),
        ("2d zoom x1", lambda: zoom_to(1)),
        ("2d pan back", lambda: pan_to(0.5, 0.5)),
        ("2d slice +", lambda: slice_by(4)),
        ("2d slice -", lambda: slice_by(-8)),
        ("3d", lambda: ndisplay(3)),
        ("3d zoom x3", lambda: zoom_to(3)),
        ("3d rotate", lambda: rotate_by((0.0, 30.0, 20.0))),
        ("3d zoom x8", lambda: zoom_to(8)),
        ("3d rotate", lambda: rotate_by((20.0, -40.0, 0.0))),
        ("3d zoom x25", lambda: zoom_to(25)),
        ("3d rotate", lambda: rotate_by((-20.0, 20.0, 10.0))),
        ("3d zoom x1", lambda: zoom_to(1)),
        ("2d", lambda: ndisplay(2)),
    ]


def child_stall(store: str, mode: str, show: bool, budget: int | None) -> dict:
    from qtpy.QtCore import Qt, QTimer

    import napari
    from napari_zarr_vectors.napari import open_in_viewer

    viewer = napari.Viewer(show=show)
    _process_events(0.5)
    t0 = time.perf_counter()
    c = open_in_viewer(viewer, WORK / f"{store}.zarrvectors", vertex_budget=budget)
    _settle(c)
    t_open = time.perf_counter() - t0
    c.synchronous = mode == "sync"
    resident = []

    def on_refresh():
        resident.append(int(sum(len(layer.data) for layer in c.layers)))

    c.events.refreshed.connect(on_refresh)
    on_refresh()
    ticks: list[float] = []
    timer = QTimer()
    timer.setTimerType(Qt.TimerType.PreciseTimer)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    steps = []
    timer.start(10)
    start = time.perf_counter()
    for name, make in _sequence(viewer, c):
        s0 = time.perf_counter()
        first_tick = len(ticks)
        for move in make():
            move()
            _process_events(0.03)
        _settle(c)
        _process_events(0.1)
        gaps = np.diff(ticks[max(first_tick - 1, 0) :]) if len(ticks) > first_tick else [0]
        steps.append(
            {
                "step": name,
                "level": c.level,
                "chunks": len(c.chunks),
                "vertices": c.vertex_count,
                "seconds": round(time.perf_counter() - s0, 3),
                "max_gap_ms": round(1000 * float(np.max(gaps)), 1),
            }
        )
    timer.stop()
    total = time.perf_counter() - start
    gaps = np.diff(ticks)
    out = {
        "store": store,
        "mode": mode,
        "show": show,
        "budget": c.vertex_budget,
        "open_and_settle_s": round(t_open, 3),
        "sequence_s": round(total, 3),
        "max_stall_ms": round(1000 * float(gaps.max()), 1),
        "p99_stall_ms": round(1000 * float(np.percentile(gaps, 99)), 1),
        "ticks": len(ticks),
        "max_resident_vertices": max(resident),
        "load_avg": [round(x, 2) for x in os.getloadavg()],
        "refreshes": len(resident) - 1,
        "steps": steps,
    }
    viewer.close()
    return out


def child_first_frame(store: str, mode: str) -> dict:
    from napari.layers import Layer
    from qtpy.QtWidgets import QApplication

    import napari
    from napari_zarr_vectors import open_store
    from napari_zarr_vectors.napari import open_in_viewer
    from napari_zarr_vectors.napari.npe2.reader import read_zarr_vectors

    path = WORK / f"{store}.zarrvectors"
    viewer = napari.Viewer(show=True)
    # warm-up: napari's one-time initialisation (unit registry, layer modules, shaders) is
    # paid by the first layers of a process whatever they are; both modes exclude it
    for data, kwargs, kind in read_zarr_vectors(warmup_store(), level=0):
        viewer.add_layer(Layer.create(data, kwargs, kind))
    _process_events(1.0)
    viewer.layers.clear()
    _process_events(0.5)
    canvas = viewer.window._qt_viewer.canvas._scene_canvas
    draws: list[float] = []
    canvas.events.draw.connect(lambda event: draws.append(time.perf_counter()))
    draws.clear()
    t0 = time.perf_counter()
    if mode == "lod":
        c = open_in_viewer(viewer, path)
        level = c.level
    else:
        # "overview": the level the LOD open shows (lod.initial_level), read alone by the
        # static reader; "coarsest": the store's coarsest level read alone
        levels = open_store(path).levels
        if mode == "overview":
            from napari_zarr_vectors.napari.lod.plan import initial_level
            from napari_zarr_vectors.napari.lod.settings import vertex_budget

            level = initial_level(levels, vertex_budget())
        else:
            level = max(lv.index for lv in levels)
        for data, kwargs, kind in read_zarr_vectors(path, level=level):
            viewer.add_layer(Layer.create(data, kwargs, kind))
    t_added = time.perf_counter()
    while not [d for d in draws if d > t_added]:
        QApplication.processEvents()
    first = [d for d in draws if d > t_added][0]
    out = {
        "store": store,
        "mode": mode,
        "level": level,
        "first_frame_s": round(first - t0, 4),
        "layers_added_s": round(t_added - t0, 4),
    }
    viewer.close()
    return out


def child_rss(store: str) -> dict:
    import napari
    from napari_zarr_vectors.napari import open_in_viewer

    viewer = napari.Viewer(show=False)
    _process_events(0.5)
    baseline = rss_now_kb()
    c = open_in_viewer(viewer, WORK / f"{store}.zarrvectors")
    _settle(c)
    for _name, make in _sequence(viewer, c):
        for move in make():
            move()
            _process_events(0.03)
        _settle(c)
    peak = peak_rss_kb()
    out = {
        "store": store,
        "baseline_rss_mb": round(baseline / 1024, 1),
        "peak_rss_mb": round(peak / 1024, 1),
        "cache_mb": round(c.loader.cache.nbytes / 2**20, 1),
    }
    viewer.close()
    return out


def run_child(*args: str) -> dict:
    cmd = [sys.executable, "-W", "ignore", str(Path(__file__).resolve()), "--child", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(
            f"{' '.join(args)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
        )
    return json.loads(lines[-1][len("RESULT ") :])


# --------------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument(
        "--repeat", type=int, default=3, help="repetitions of the stall and first-frame runs"
    )
    parser.add_argument("--quick", action="store_true", help="skip the shown-viewer stall runs")
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        if kind == "stall":
            store, mode, show, budget = rest
            result = child_stall(store, mode, show == "1", None if budget == "-" else int(budget))
        elif kind == "first_frame":
            result = child_first_frame(*rest)
        elif kind == "rss":
            result = child_rss(*rest)
        else:
            raise SystemExit(f"unknown child {kind}")
        print("RESULT " + json.dumps(result), flush=True)
        return

    ensure_bench07()
    ensure_pyramid("points_1x", 1_000_000)
    ensure_pyramid("points_10x", 10_000_000)
    report: dict = {
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
        }
    }

    print(f"UI stall (hidden viewer, best of {args.repeat}) ...", flush=True)
    stall = {}
    all_runs: dict = {}
    for store in ("points_big", "tracts_big"):
        for mode in ("loader", "sync"):
            runs = [run_child("stall", store, mode, "0", "-") for _ in range(args.repeat)]
            all_runs[f"{store}/{mode}/hidden"] = [
                {k: r[k] for k in ("max_stall_ms", "p99_stall_ms", "load_avg")} for r in runs
            ]
            r = stall[f"{store}/{mode}/hidden"] = min(runs, key=lambda r: r["max_stall_ms"])
            print(f"  {store:11s} {mode:6s} max stall {r['max_stall_ms']:7.1f} ms "
                  f"(runs: {[x['max_stall_ms'] for x in runs]}), "
                  f"resident <= {max(x['max_resident_vertices'] for x in runs):,}", flush=True)  # fmt: skip
            r["max_resident_vertices"] = max(x["max_resident_vertices"] for x in runs)
    if not args.quick:
        print("UI stall (shown viewer, software rendering) ...", flush=True)
        for mode in ("loader", "sync"):
            stall[f"points_big/{mode}/shown"] = run_child("stall", "points_big", mode, "1", "-")
            r = stall[f"points_big/{mode}/shown"]
            print(f"  points_big  {mode:6s} max stall {r['max_stall_ms']:7.1f} ms", flush=True)
    report["stall"] = stall
    report["stall_runs"] = all_runs

    print("time to first frame ...", flush=True)
    frames = {"lod": [], "overview": [], "coarsest": []}
    for _ in range(args.repeat):
        for mode in frames:
            frames[mode].append(run_child("first_frame", "points_big", mode))
    ff = {
        mode: statistics.median(r["first_frame_s"] for r in runs) for mode, runs in frames.items()
    }
    report["first_frame"] = {"runs": frames, "median_s": ff}
    print(
        f"  lod {ff['lod']:.3f} s; the same overview level alone {ff['overview']:.3f} s; "
        f"the coarsest level alone {ff['coarsest']:.3f} s",
        flush=True,
    )

    print("peak RSS, 1x vs 10x store ...", flush=True)
    rss = {name: run_child("rss", name) for name in ("points_1x", "points_10x")}
    report["rss"] = rss
    print(f"  1x {rss['points_1x']['peak_rss_mb']} MB, 10x {rss['points_10x']['peak_rss_mb']} MB")

    hidden = stall["points_big/loader/hidden"]
    ratios = {
        "max_ui_stall_ms_loader": hidden["max_stall_ms"],
        "max_ui_stall_ms_sync": stall["points_big/sync/hidden"]["max_stall_ms"],
        "stall_loader_over_sync": round(
            hidden["max_stall_ms"] / stall["points_big/sync/hidden"]["max_stall_ms"], 3
        ),
        "first_frame_over_overview_level_alone": round(ff["lod"] / ff["overview"], 3),
        "first_frame_over_coarsest_level_alone": round(ff["lod"] / ff["coarsest"], 3),
        "max_resident_over_budget": round(
            max(r["max_resident_vertices"] / r["budget"] for r in stall.values()), 3
        ),
        "peak_rss_10x_over_1x": round(
            rss["points_10x"]["peak_rss_mb"] / rss["points_1x"]["peak_rss_mb"], 3
        ),
        "peak_rss_above_baseline_10x_over_1x": round(
            (rss["points_10x"]["peak_rss_mb"] - rss["points_10x"]["baseline_rss_mb"])
            / (rss["points_1x"]["peak_rss_mb"] - rss["points_1x"]["baseline_rss_mb"]),
            3,
        ),
    }
    targets = {
        "max_ui_stall_ms_loader": "<= 100",
        "first_frame_over_overview_level_alone": "<= 1.2",
        "max_resident_over_budget": "<= 1.0",
        "peak_rss_10x_over_1x": "<= 1.5",
    }
    report["ratios"] = ratios
    report["targets"] = targets
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "bench_lod.json"
    out.write_text(json.dumps(report, indent=2))
    print(json.dumps(ratios, indent=2))
    print(f"written {out}")


if __name__ == "__main__":
    main()
