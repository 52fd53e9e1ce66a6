"""Drawing dense streamlines: what one swap costs per vertex on the UI thread, by draw path,
and what part of a 10M-vertex / 200k-streamline store the overview shows.

    xvfb-run -a -s "-screen 0 1280x1024x24" python benchmarks/bench_draw.py

One command; the store is the one of ``bench_scale.py`` (written once into
``benchmarks/.work/``). Every measurement runs in a fresh process with a shown 1280x1000
window. Results: ``benchmarks/results/bench_draw.json`` and tables on stdout.

Measurements (ratios against plain napari Tracks measured in the same process)

* **draw paths**: replacing the data of a layer holding 50-vertex streamlines, in 3-D, for
  each candidate: napari ``Tracks`` as napari ships it (the baseline), ``Tracks`` through
  the plugin's swap (vectorised validation, the k-d tree of napari's hover lookup made
  lazy: :func:`.swap.swap`), ``Vectors`` (a segment per vertex pair) and a single vispy
  ``Line`` visual (``method="gl"``, a boolean ``connect`` mask) in napari's scene. Per
  candidate: the setter on the UI thread ("swap"), the setter plus the frame that draws it
  ("to frame"), and one more frame with nothing changed ("render", what a 3-D rotation
  costs a frame); per streamline vertex, best of 4, at two sizes.
* **overview states**: the 3-D and 2-D whole view and 2-D zoom x4 of the 10M store, at the
  adaptive budget, with paths simplified to the screen and without
  (``--no-simplify`` in the child): streamlines shown / in view, the layer's metadata.
* **overview fill** (the fast path): per state, the seconds from the view settling to the
  fill's picture holding every batch (``fill_s``), the streamlines it draws, and the paint
  time of the canvas's frames (median and longest) through the whole run.
* **rotation**: the frame time of a 3-D rotation of the overview (30 steps of 3 degrees,
  each step waiting for its frame): what the layer's own line costs a frame while the view
  moves.
* **stall**: the longest gap of a 10 ms timer through those view changes (shown window),
  and how many gaps were over 150 ms.

The machine is shared (2 cores, other sessions running): absolute times are noisy, the
ratios are taken within one process and one run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))

SIZES = (100_000, 400_000)
CANDIDATES = ("tracks", "tracks_plugin", "tracks_fast", "vectors", "vispy_line")


def _streamlines(n_vertices: int, seed: int) -> np.ndarray:
    """``(n_vertices // 50, 50, 3)`` streamlines (napari order z, y, x)."""
    from bench_scale import tractogram

    pts, _ = tractogram(max(n_vertices // 50, 1), 50, seed=seed)
    return pts[:, :, ::-1].astype(np.float64)


def _shown_viewer(ndisplay: int = 3):
    import napari
    from bench_lod import _process_events

    viewer = napari.Viewer(show=True)
    viewer.window._qt_window.resize(1280, 1000)  # the window
    viewer.dims.ndisplay = ndisplay
    _process_events(0.5)
    return viewer


class _Frames:
    """Waits for napari's canvas to draw a frame (its vispy ``draw`` event)."""

    def __init__(self, viewer) -> None:
        self.canvas = viewer.window._qt_viewer.canvas._scene_canvas  # private: benchmark only
        self.drawn = 0
        self.canvas.events.draw.connect(self._on_draw)

    def _on_draw(self, event=None) -> None:
        self.drawn += 1

    def wait(self, timeout: float = 30.0) -> None:
        from qtpy.QtWidgets import QApplication

        start = self.drawn
        self.canvas.update()
        end = time.perf_counter() + timeout
        while self.drawn == start and time.perf_counter() < end:
            QApplication.processEvents()


def _tracks_input(p: np.ndarray) -> tuple[np.ndarray, dict]:
    """Tracks rows (one track per streamline, t = 0) and the features a streamline layer
    swaps in: object ids and the direction code it is coloured by (as the builder makes)."""
    from napari_zarr_vectors.napari.colour.defaults import direction_feature

    n, k, _ = p.shape
    ids = np.repeat(np.arange(n), k)
    tangents = np.diff(p, axis=1)
    tangents = np.concatenate([tangents, tangents[:, -1:]], axis=1).reshape(-1, 3)
    direction, _ = direction_feature(tangents[:, ::-1])
    rows = np.column_stack([ids, np.zeros(n * k), p.reshape(-1, 3)])
    return rows, {"object_id": ids, "direction": direction}


def _candidate(kind: str, viewer, pts: np.ndarray):
    """``(set(pts), remove())`` for a draw path holding ``pts``; every Tracks candidate is
    coloured by direction (a colour map of every vertex, as the plugin's layers are)."""
    from napari.layers import Tracks, Vectors

    from napari_zarr_vectors.napari.colour.defaults import direction_colormap
    from napari_zarr_vectors.napari.colour.live import ColourMemory, capture
    from napari_zarr_vectors.napari.lod import swap
    from napari_zarr_vectors.napari.lod.settings import configure

    if kind.startswith("tracks"):
        rows, features = _tracks_input(pts)
        layer = viewer.add_layer(Tracks(rows, tail_width=2, blending="translucent"))
        cmaps = {"direction": direction_colormap()}
        layer.features, layer.colormaps_dict, layer.color_by = features, dict(cmaps), "direction"
        memory = ColourMemory(applied=capture(layer))

        def set_data(prepared):
            rows, features = prepared
            if kind == "tracks":  # napari as it ships
                layer.data = rows
                layer.features = features
                layer.color_by = "direction"
                return
            configure(draw_path="napari" if kind == "tracks_plugin" else "fast")
            kwargs = {"features": features, "color_by": "direction", "colormaps_dict": cmaps}
            with swap.batched(layer):
                swap.swap(layer, rows, kwargs, memory)

        set_data.prepare = _tracks_input  # worker-side work: not timed
        return set_data, lambda: viewer.layers.remove(layer)
    if kind == "vectors":

        def segments(p):
            a = p[:, :-1].reshape(-1, 3)
            return np.stack([a, p[:, 1:].reshape(-1, 3) - a], axis=1)

        layer = viewer.add_layer(Vectors(segments(pts), vector_style="line", edge_width=1))

        def set_vectors(p):
            layer.data = segments(p)

        return set_vectors, lambda: viewer.layers.remove(layer)
    # a single vispy Line visual in napari's scene (private API; measured, not used)
    from vispy.scene.visuals import Line

    scene = viewer.window._qt_viewer.canvas.view.scene
    line = Line(method="gl", parent=scene, antialias=False)

    def set_line(p):
        n, k, _ = p.shape
        connect = np.ones(n * k, bool)
        connect[k - 1 :: k] = False  # no segment from one streamline to the next
        d = np.diff(p, axis=1)
        d = np.concatenate([d, d[:, -1:]], axis=1).reshape(-1, 3)
        rgb = np.abs(d) / np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-12)
        colours = np.column_stack([rgb[:, ::-1], np.ones(len(rgb))]).astype(np.float32)
        # vispy takes (x, y, z): napari's scene holds data reversed
        line.set_data(pos=p.reshape(-1, 3)[:, ::-1].astype(np.float32), color=colours,
                      connect=connect)  # fmt: skip

    set_line(pts)

    def remove():
        line.parent = None

    return set_line, remove


def child_draw() -> dict:
    from bench_lod import _process_events

    viewer = _shown_viewer(3)
    frames = _Frames(viewer)
    out: dict = {}
    for n in SIZES:
        row = {}
        for kind in CANDIDATES:
            set_data, remove = _candidate(kind, viewer, _streamlines(n, 0))
            viewer.reset_view()
            frames.wait()
            _process_events(0.3)
            swaps, to_frame, render = [], [], []
            for seed in range(1, 5):
                pts = getattr(set_data, "prepare", lambda p: p)(_streamlines(n, seed))
                t0 = time.perf_counter()
                set_data(pts)
                t1 = time.perf_counter()
                frames.wait()
                t2 = time.perf_counter()
                frames.wait()
                t3 = time.perf_counter()
                swaps.append(t1 - t0)
                to_frame.append(t2 - t0)
                render.append(t3 - t2)
                _process_events(0.05)
            remove()
            _process_events(0.2)
            row[kind] = {
                "swap_us_per_vertex": round(1e6 * min(swaps) / n, 3),
                "to_frame_us_per_vertex": round(1e6 * min(to_frame) / n, 3),
                "render_ms": round(1000 * min(render), 1),
            }
        base = row["tracks"]
        for kind in CANDIDATES:
            row[kind]["swap_over_tracks"] = round(
                row[kind]["swap_us_per_vertex"] / base["swap_us_per_vertex"], 3
            )
            row[kind]["to_frame_over_tracks"] = round(
                row[kind]["to_frame_us_per_vertex"] / base["to_frame_us_per_vertex"], 3
            )
        out[str(n)] = row
    viewer.close()
    return out


STATES = (("3-D whole", 3, 1.0), ("2-D whole", 2, 1.0), ("2-D x4", 2, 4.0))


def child_states(path: str, simplify: bool, draw_path: str = "fast") -> dict:
    from qtpy.QtCore import Qt, QTimer

    from bench_lod import _process_events, _settle
    from bench_scale import _look
    from napari_zarr_vectors.napari import open_in_viewer
    from napari_zarr_vectors.napari.lod import loader, overview_fill
    from napari_zarr_vectors.napari.lod.settings import configure, get_settings

    configure(draw_path=draw_path)
    if not simplify:
        loader.Loader.simplify_tolerance = lambda self, request: 0.0
    viewer = _shown_viewer(3)
    paints = _PaintTimes(viewer)
    ticks: list[float] = []
    timer = QTimer()
    timer.setTimerType(Qt.TimerType.PreciseTimer)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    t0 = time.perf_counter()
    c = open_in_viewer(viewer, path)
    t_open = time.perf_counter() - t0
    timer.start(10)
    _settle(c, timeout=600)
    z0: dict = {}
    rows = []
    for name, nd, zoom in STATES:
        _look(viewer, c, nd, zoom, z0)
        _settle(c, timeout=600)
        settled = time.perf_counter()
        fill = overview_fill.fill_of(c.layers[0])
        while fill is not None and not fill.complete and time.perf_counter() - settled < 60:
            _process_events(0.02)
        fill_s = time.perf_counter() - settled if fill is not None else None
        _process_events(0.3)
        meta = c.layers[0].metadata["zarr_vectors"]
        rows.append(
            {
                "view": name,
                "level": int(meta["level"]),
                "items_shown": int(meta["items_shown"]),
                "items_in_view": int(meta["items_in_view"]),
                "shown_pct": round(100 * meta["items_shown"] / max(meta["items_in_view"], 1), 2),
                "vertices_shown": int(meta["vertices_shown"]),
                "budget": int(meta["loaded_budget"]),
                "simplified_keep": meta.get("simplified_keep"),
                "simplify_tolerance": meta.get("simplify_tolerance"),
                "status": viewer.status if isinstance(viewer.status, str) else "",
                "items_filled": int(meta.get("items_filled") or 0),
                "fill_s": None if fill_s is None else round(fill_s, 2),
            }
        )
    rotation = _rotation_frames(viewer, c)
    timer.stop()
    gaps = np.diff(ticks) if len(ticks) > 1 else np.zeros(1)
    painted = np.asarray(paints.seconds) if paints.seconds else np.zeros(1)
    viewer.close()
    cost = get_settings().swap_cost
    return {
        "draw_path": draw_path,
        "us_per_vertex": round(1e6 * (cost.seconds_per_vertex or 0.0), 3),
        "fixed_ms": round(1e3 * (cost.fixed_seconds or 0.0), 1),
        "open_call_s": round(t_open, 3),
        "max_stall_after_open_ms": round(1000 * float(gaps.max()), 1),
        "stalls_over_150ms": int((gaps > 0.15).sum()),
        "paint_ms_median": round(1000 * float(np.median(painted)), 1),
        "paint_ms_max": round(1000 * float(painted.max()), 1),
        "rotation_frame_ms_median": round(1000 * float(np.median(rotation)), 1),
        "rotation_frame_ms_max": round(1000 * float(rotation.max()), 1),
        "states": rows,
    }


class _PaintTimes:
    """The time of each paint of napari's canvas (its vispy ``on_draw``; private: benchmark
    only)."""

    def __init__(self, viewer) -> None:
        canvas = viewer.window._qt_viewer.canvas._scene_canvas
        self.seconds: list[float] = []
        draw = canvas.on_draw

        def timed(event):
            start = time.perf_counter()
            try:
                return draw(event)
            finally:
                self.seconds.append(time.perf_counter() - start)

        canvas.on_draw = timed


def _rotation_frames(viewer, controller, steps: int = 30) -> np.ndarray:
    """Seconds from each 3-degree turn of the 3-D camera to its frame drawn."""
    from bench_lod import _settle
    from bench_scale import _look

    _look(viewer, controller, 3, 1.0, {})
    _settle(controller, timeout=600)
    frames = _Frames(viewer)
    seconds = []
    for _ in range(steps):
        azimuth, elevation, roll = viewer.scene.camera.angles
        start = time.perf_counter()
        viewer.scene.camera.angles = (azimuth, elevation + 3.0, roll)
        frames.wait()
        seconds.append(time.perf_counter() - start)
    return np.asarray(seconds)


def run_child(args: list[str]) -> dict:
    cmd = [sys.executable, __file__, "--child", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"{args} failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def tables(results: dict) -> str:
    lines = [
        "| draw path | vertices | swap (µs/vertex) | swap / Tracks | to frame (µs/vertex) "
        "| to frame / Tracks | one render (ms) |",
        "|---|---|---|---|---|---|---|",
    ]
    for n, row in results["draw"].items():
        for kind, r in row.items():
            lines.append(
                f"| {kind} | {int(n):,} | {r['swap_us_per_vertex']:.2f} | "
                f"{r['swap_over_tracks']:.2f} | {r['to_frame_us_per_vertex']:.2f} | "
                f"{r['to_frame_over_tracks']:.2f} | {r['render_ms']:.0f} |"
            )
    lines += [
        "",
        "| view | draw path, paths | level | streamlines shown | of them filled | fill (s) "
        "| vertices | budget | swap µs/vertex (fixed ms) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label, res in results["states"].items():
        for s in res["states"]:
            lines.append(
                f"| {s['view']} | {label} | {s['level']} | {s['shown_pct']:.2f}% "
                f"({s['items_shown']:,} of {s['items_in_view']:,}) | {s['items_filled']:,} "
                f"| {s['fill_s'] if s['fill_s'] is not None else '-'} | {s['vertices_shown']:,} "
                f"| {s['budget']:,} | {res['us_per_vertex']:.2f} ({res['fixed_ms']:.0f}) |"
            )
    lines += [
        "",
        "| draw path, paths | open call (s) | longest stall | stalls > 150 ms "
        "| paint median / max (ms) | 3-D rotation frame median / max (ms) |",
        "|---|---|---|---|---|---|",
    ]
    for label, res in results["states"].items():
        lines.append(
            f"| {label} | {res['open_call_s']:.2f} | {res['max_stall_after_open_ms']:.0f} ms "
            f"| {res['stalls_over_150ms']} | {res['paint_ms_median']:.0f} / "
            f"{res['paint_ms_max']:.0f} | {res['rotation_frame_ms_median']:.0f} / "
            f"{res['rotation_frame_ms_max']:.0f} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--objects", type=int, default=200_000)
    ap.add_argument("--vertices", type=int, default=50)
    ap.add_argument("--only", choices=("draw", "states"), help="run one part (default: both)")
    ap.add_argument("--child", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        kind, *rest = args.child
        if kind == "draw":
            print(json.dumps(child_draw()))
        else:
            print(json.dumps(child_states(rest[0], rest[1] == "1", rest[2])))
        return
    from bench_scale import ensure_store

    path = ensure_store(args.objects, args.vertices)
    results: dict = {"store": path.name, "draw": {}, "states": {}}
    if args.only in (None, "draw"):
        results["draw"] = run_child(["draw"])
        print(json.dumps(results["draw"], indent=1), flush=True)
    if args.only in (None, "states"):
        results["states"] = {
            f"{draw}, {'simplified' if simple else 'stored'}": run_child(
                ["states", str(path), "1" if simple else "0", draw]
            )
            for draw, simple in (("fast", True), ("napari", True), ("fast", False))
        }
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "bench_draw.json"
    if args.only and out.is_file():  # one part run again: keep the other's last figures
        earlier = json.loads(out.read_text())
        other = "states" if args.only == "draw" else "draw"
        results[other] = earlier.get(other, {})
    out.write_text(json.dumps(results, indent=1))
    print(tables(results))
    print(f"results: {out}")


if __name__ == "__main__":
    main()
