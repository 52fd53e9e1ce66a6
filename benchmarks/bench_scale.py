"""Level of detail at real scale: a 10M-vertex, 200k-streamline store written by
zarr-vectors 0.9.2, viewed in 3-D and 2-D at zoom x1, x4, x16 and x64.

    xvfb-run -a -s "-screen 0 1280x1024x24" python benchmarks/bench_scale.py

One command. The store is generated once into ``benchmarks/.work/`` (git-ignored; about
2.5 minutes and 150 MB for the default size) by :func:`write_tractogram`: ``--objects``
streamlines of ``--vertices`` vertices in bundles through a 1000^3 box, written with
``zarr_vectors`` (``Layout(cells=8)``) and its own pyramid,
``build_pyramid(factors=[(2.0, 1.0)] * 3)``. Every measurement runs in a fresh process.
Results: ``benchmarks/results/bench_scale.json`` and a table on stdout.

Measurements (ratios against baselines measured in the same run)

* **states**: for 3-D and 2-D at zoom x1 (the fitted overview), x4, x16 and x64 around the
  store centre, after the view settled: vertices the data layers hold / the vertex budget
  (target <= 1 everywhere), the level shown and, for a coarse level, its bin edge in screen
  pixels (targets: level 0 at 2-D zoom >= x16; overview states at level 0 or at a level
  whose bins are <= 8 px, with at least a quarter of the budget shown), the part of the
  streamlines shown.
* **first frame**: from ``open_in_viewer`` to the first data on screen / building a plain
  Tracks layer holding the budget (same process, after napari's warm-up; target <= 2).
* **pan stall**: the longest gap of a 10 ms ``QTimer`` while panning (animated) at 2-D x4
  and 3-D x4 with the loader (target <= 100 ms), hidden viewer.
* **peak RSS** of each process.
* **layer choice**: per streamline vertex, the UI-thread cost of replacing a Tracks layer's
  data vs a Vectors layer's holding the same streamlines (as segments), measured here.
"""

from __future__ import annotations

import argparse
import importlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
WORK = HERE / ".work"
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))
from _memory import peak_rss_mb  # noqa: E402

ZOOMS = (1, 4, 16, 64)


# --------------------------------------------------------------------------------------------
# the store
# --------------------------------------------------------------------------------------------


def tractogram(n_objects: int, n_vertices: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(n_objects, n_vertices, 3)`` float32 streamlines in 24 bundles (random cubic Bezier
    centre lines through [100, 900]^3, fibres spread and wandering around them) and the
    bundle of each streamline."""
    rng = np.random.default_rng(seed)
    n_bundles = 24
    ctrl = rng.uniform(100, 900, (n_bundles, 4, 3))
    t = np.linspace(0, 1, n_vertices)[:, None]
    basis = np.concatenate([(1 - t) ** 3, 3 * (1 - t) ** 2 * t, 3 * (1 - t) * t**2, t**3], 1)
    centres = np.einsum("pk,bkd->bpd", basis, ctrl)
    bundle = rng.integers(0, n_bundles, n_objects)
    pts = np.empty((n_objects, n_vertices, 3), np.float32)
    for start in range(0, n_objects, 20_000):  # in blocks: bounded temporary memory
        b = bundle[start : start + 20_000]
        off = rng.normal(0, 25, (len(b), 1, 3)) + np.cumsum(
            rng.normal(0, 1.5, (len(b), n_vertices, 3)), axis=1
        )
        pts[start : start + len(b)] = np.clip(centres[b] + off, 0, 999.9)
    return pts, bundle.astype(np.int32)


def write_tractogram(path: Path, n_objects: int, n_vertices: int) -> None:
    """Write the benchmark store with zarr-vectors 0.9.2 (and its pyramid)."""
    import zarr_vectors as zv
    from zarr_vectors.api import Axis, Layout, Schema

    pts, bundle = tractogram(n_objects, n_vertices)
    axes = tuple(Axis(a, "micrometer") for a in "xyz")
    layout = Layout(cells=8)
    schema = Schema(
        ndim=3, bounds=([0, 0, 0], [1000, 1000, 1000]), axes=axes, layout=layout,
        kind="streamline",
    )  # fmt: skip
    ds = zv.create(str(path), schema=schema)
    ds.add_polylines(
        list(pts), streamlines=True, layout=layout, object_attributes={"bundle": bundle}
    )
    ds.build_pyramid(factors=[(2.0, 1.0)] * 3)


def ensure_store(n_objects: int, n_vertices: int) -> Path:
    path = WORK / f"tractogram_{n_objects}x{n_vertices}.zarrvectors"
    marker = path.with_suffix(".json")
    params = {"objects": n_objects, "vertices": n_vertices, "writer": "zarr-vectors 0.9.2"}
    if path.is_dir() and marker.is_file() and json.loads(marker.read_text()) == params:
        return path
    shutil.rmtree(path, ignore_errors=True)
    WORK.mkdir(parents=True, exist_ok=True)
    print(f"writing {path.name} ({n_objects * n_vertices:,} vertices) ...", flush=True)
    t0 = time.perf_counter()
    write_tractogram(path, n_objects, n_vertices)
    print(f"  written in {time.perf_counter() - t0:.0f} s", flush=True)
    marker.write_text(json.dumps(params))
    return path


# --------------------------------------------------------------------------------------------
# child processes
# --------------------------------------------------------------------------------------------


def held_vertices(layer) -> int:
    """Vertices a napari layer holds: Tracks rows, two ends per vector, Points, Surface
    vertices, Shapes vertices."""
    kind = type(layer).__name__
    if kind == "Vectors":
        return 2 * len(layer.data)
    if kind == "Surface":
        return len(layer.data[0])
    if kind == "Shapes":
        return int(sum(len(d) for d in layer.data))
    return len(layer.data)


def _open(path: str, budget: int | None, show: bool = False):
    import napari
    from bench_lod import _process_events, _settle
    from napari_zarr_vectors.napari import open_in_viewer

    viewer = napari.Viewer(show=show)
    _process_events(0.3)
    t0 = time.perf_counter()
    c = open_in_viewer(viewer, path, vertex_budget=budget)
    _settle(c, timeout=300)
    return viewer, c, time.perf_counter() - t0


def _look(viewer, c, ndisplay: int, zoom: float, z0: dict) -> None:
    """Centre the camera on the store, at ``zoom`` times the fitted zoom."""
    viewer.dims.ndisplay = ndisplay
    lo, hi = (np.asarray(b, float)[::-1] for b in c.store.bounds)
    if ndisplay not in z0:
        viewer.reset_view()
        z0[ndisplay] = viewer.scene.camera.zoom
    mid = (lo + hi) / 2
    viewer.dims.point = tuple(mid)
    cam = viewer.scene.camera
    cam.center = tuple(mid[-ndisplay:]) if ndisplay == 3 else tuple(mid[-2:])
    cam.zoom = z0[ndisplay] * zoom


def child_states(path: str, budget: int | None) -> dict:
    from bench_lod import _settle

    viewer, c, t_open = _open(path, budget)
    z0: dict = {}
    rows = []
    for nd in (3, 2):
        for zoom in ZOOMS:
            _look(viewer, c, nd, zoom, z0)
            c.refresh(force=False)
            _settle(c, timeout=300)
            level = c.store.level(c.level)
            held = sum(held_vertices(layer) for layer in c.layers)
            meta = c.layers[0].metadata["zarr_vectors"] if c.layers else {}
            rows.append(
                {
                    "view": f"{nd}-D x{zoom}",
                    "level": int(c.level),
                    "bin_px": round(float(np.max(level.bin_shape)) * viewer.scene.camera.zoom, 2),
                    "held": int(held),
                    "budget": int(meta.get("loaded_budget") or c.vertex_budget),
                    "held_over_budget": round(
                        held / (meta.get("loaded_budget") or c.vertex_budget), 3
                    ),
                    "shown_fraction": meta.get("shown_fraction"),
                    "items_shown": meta.get("items_shown"),
                    "items_in_view": meta.get("items_in_view"),
                    "chunks": len(c.chunks),
                    "status": viewer.status if isinstance(viewer.status, str) else "",
                }
            )
    viewer.close()
    return {"open_and_settle_s": round(t_open, 3), "states": rows}


def child_first_frame(path: str, budget: int | None) -> dict:
    from napari.layers import Layer, Tracks

    import napari
    from bench_lod import _process_events, warmup_store
    from napari_zarr_vectors.napari import open_in_viewer
    from napari_zarr_vectors.napari.npe2.reader import read_zarr_vectors

    viewer = napari.Viewer(show=False)
    for data, kwargs, kind in read_zarr_vectors(warmup_store(), level=0):  # napari's warm-up
        viewer.add_layer(Layer.create(data, kwargs, kind))
    _process_events(0.5)
    viewer.layers.clear()
    # the plugin's own warm-up: the 0.9 layout module, which the (0.7) warm-up store does not
    # import. Imports are once per session, and compiling this module costs ~12 ms when, as
    # here, PYTHONDONTWRITEBYTECODE keeps Python from caching bytecode.
    importlib.import_module("napari_zarr_vectors.format.layout.v09")
    t0 = time.perf_counter()
    c = open_in_viewer(viewer, path, vertex_budget=budget)
    while not any(len(layer.data) for layer in c.layers):  # data on screen (the preview)
        _process_events(0.005)
    t_first = time.perf_counter() - t0
    first_rows = int(c.vertex_count)
    while c.is_loading:  # the whole view
        _process_events(0.005)
    t_whole = time.perf_counter() - t0
    n = int(c.vertex_budget)
    # baseline: a plain Tracks layer of budget size (50-vertex tracks), built in this process
    pts, _ = __import__("bench_scale").tractogram(max(n // 50, 1), 50, seed=1)
    flat = pts.reshape(-1, 3)[:n]
    ids = np.repeat(np.arange(len(pts)), 50)[:n]
    data = np.column_stack([ids, np.zeros(len(flat)), flat[:, ::-1]])
    t1 = time.perf_counter()
    layer = Tracks(data, name="baseline")
    viewer.add_layer(layer)
    _process_events(0.0)
    t_tracks = time.perf_counter() - t1
    viewer.close()
    return {
        "first_frame_s": round(t_first, 3),
        "first_frame_vertices": first_rows,
        "whole_view_s": round(t_whole, 3),
        "plain_tracks_s": round(t_tracks, 3),
        "ratio": round(t_first / t_tracks, 2),
        "budget": n,
    }


def child_pan(path: str, budget: int | None) -> dict:
    from qtpy.QtCore import Qt, QTimer

    from bench_lod import _process_events, _settle

    viewer, c, _ = _open(path, budget)
    z0: dict = {}
    out = {}
    swaps: dict[str, list[float]] = {}
    for nd in (2, 3):
        swaps[f"{nd}-D x4"] = seconds = []
        c.events.refreshed.connect(lambda s=seconds: s.append(c.last_update_seconds))
        _look(viewer, c, nd, 4, z0)
        _settle(c, timeout=300)
        ticks: list[float] = []
        timer = QTimer()
        timer.setTimerType(Qt.TimerType.PreciseTimer)
        timer.timeout.connect(lambda ticks=ticks: ticks.append(time.perf_counter()))
        timer.start(10)
        cam = viewer.scene.camera
        c0 = np.asarray(cam.center, float)
        extent = float(np.max(np.asarray(c.store.bounds[1]) - np.asarray(c.store.bounds[0])))
        for k in range(6):  # six pans of 1/8 of the store, each animated over 8 moves
            start = np.asarray(cam.center, float)
            target = c0.copy()
            target[-1] += extent / 8 * (k + 1) * (1 if k % 2 == 0 else -1) / 2
            target[-2] += extent / 16 * (k % 3 - 1)
            for f in np.linspace(0.125, 1.0, 8):
                cam.center = tuple(start + (target - start) * f)
                _process_events(0.03)
            _settle(c, timeout=300)
        _process_events(0.1)
        timer.stop()
        gaps = np.diff(ticks)
        out[f"{nd}-D x4"] = round(1000 * float(gaps.max()), 1)
        c.events.refreshed.disconnect()
    viewer.close()
    return {
        "max_stall_ms": out,
        "max_swap_ms": {k: round(1000 * max(v, default=0.0), 1) for k, v in swaps.items()},
        "swaps": {k: len(v) for k, v in swaps.items()},
    }


def child_layer_cost(n_tracks: int = 2_000, n_vertices: int = 50) -> dict:
    """UI-thread cost of replacing layer data with the same streamlines as Tracks (one row a
    vertex) and as Vectors (one segment a pair of consecutive vertices)."""
    from napari.layers import Tracks, Vectors

    import napari
    from bench_lod import _process_events

    viewer = napari.Viewer(show=False)
    out = {}
    for nd in (2, 3):
        viewer.dims.ndisplay = nd
        costs = {}
        for kind in ("tracks", "vectors"):
            times = []
            for seed in range(4):
                pts, _ = __import__("bench_scale").tractogram(n_tracks, n_vertices, seed=seed)
                flat = pts.reshape(-1, 3)[:, ::-1].astype(np.float64)
                if kind == "tracks":
                    ids = np.repeat(np.arange(n_tracks), n_vertices)
                    data = np.column_stack([ids, np.zeros(len(flat)), flat])
                else:
                    a = pts[:, :-1].reshape(-1, 3)[:, ::-1]
                    b = pts[:, 1:].reshape(-1, 3)[:, ::-1]
                    data = np.stack([a, b - a], axis=1)
                if seed == 0:
                    layer = Tracks(data) if kind == "tracks" else Vectors(data, vector_style="line")
                    viewer.add_layer(layer)
                    _process_events(0.2)
                    continue
                t0 = time.perf_counter()
                layer.data = data
                _process_events(0.0)
                times.append(time.perf_counter() - t0)
            viewer.layers.remove(layer)
            costs[kind] = min(times)
        n = n_tracks * n_vertices
        out[f"{nd}-D"] = {
            "tracks_us_per_streamline_vertex": round(1e6 * costs["tracks"] / n, 3),
            "vectors_us_per_streamline_vertex": round(1e6 * costs["vectors"] / n, 3),
            "vectors_over_tracks": round(costs["vectors"] / costs["tracks"], 2),
        }
    viewer.close()
    return out


CHILDREN = {
    "states": child_states,
    "first_frame": child_first_frame,
    "pan": child_pan,
    "layer_cost": child_layer_cost,
}


def _child(kind: str, path: str, budget: int | None) -> dict:
    fn = CHILDREN[kind]
    out = fn() if kind == "layer_cost" else fn(path, budget)
    out["peak_rss_mb"] = round(peak_rss_mb(), 1)
    return out


def run_child(kind: str, path: Path, budget: int | None) -> dict:
    cmd = [sys.executable, __file__, "--child", kind, "--store", str(path)]
    if budget is not None:
        cmd += ["--budget", str(budget)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(f"{kind} failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def table(results: dict) -> str:
    lines = [
        "| view | level | bin (px) | held / budget | streamlines shown |",
        "|---|---|---|---|---|",
    ]
    for s in results["states"]["states"]:
        frac = s["shown_fraction"]
        shown = (
            "all in view" if frac in (None, 1.0) else f"{100 * frac:.2g}% ({s['items_shown']:,})"
        )
        bin_px = "exact (level 0)" if s["level"] == 0 else f"{s['bin_px']:g}"
        lines.append(
            f"| {s['view']} | {s['level']} | {bin_px} | {s['held_over_budget']:.2f} "
            f"({s['held']:,} / {s['budget']:,}) | {shown} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--objects", type=int, default=200_000)
    ap.add_argument("--vertices", type=int, default=50)
    ap.add_argument("--budget", type=int, default=None, help="default: the plugin's")
    ap.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    ap.add_argument("--store", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(_child(args.child, args.store, args.budget)))
        return
    path = ensure_store(args.objects, args.vertices)
    results: dict = {"store": path.name, "budget_arg": args.budget}
    for kind in ("layer_cost", "first_frame", "states", "pan"):
        print(f"{kind} ...", flush=True)
        results[kind] = run_child(kind, path, args.budget)
        print(json.dumps(results[kind], indent=1)[:2000], flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "bench_scale.json"
    out.write_text(json.dumps(results, indent=1))
    print(table(results))
    ff = results["first_frame"]
    print(
        f"first frame {ff['first_frame_s']} s ({ff['first_frame_vertices']:,} vertices) / "
        f"plain Tracks of {ff['budget']:,} rows {ff['plain_tracks_s']} s = {ff['ratio']}; "
        f"whole view {ff['whole_view_s']} s"
    )
    print(f"max pan stall (ms): {results['pan']['max_stall_ms']}")
    print(f"results: {out}")


if __name__ == "__main__":
    main()
