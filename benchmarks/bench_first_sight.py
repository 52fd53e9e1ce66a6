"""A scientist's first minutes: dropping real stores into a shown napari window.

    xvfb-run -a -s "-screen 0 1280x1024x24" python benchmarks/bench_first_sight.py [--big]

One command. Stores (written once into ``benchmarks/.work/`` by zarr-vectors 0.9.2):
dipy's ``tracks300.trk`` and navis' five example neurons (``tests/realdata.py``), and with
``--big`` the 10,000,000-vertex, 200,000-streamline store of ``bench_scale.py`` (~2.5 min to
write once). Every measurement runs in a fresh process with a shown 1280x1000 window, default
settings (adaptive budget), the store opened as a drop opens it
(``viewer.open(path, plugin="napari-zarr-vectors")``):

* **cold**: the first store of the session (napari's and the plugin's first-use costs);
* **warm**: after another store was opened and closed in the same process;
* **baseline**: napari adding the same layers from arrays in memory (``Layer.create`` +
  ``viewer.add_layer`` of the layers' data tuples): for *warm*, in the same process and
  view; for *cold*, as the first layers of a fresh process (its first-use costs included).

Per store: the longest UI stall of the open (the largest gap of a 5 ms ``QTimer`` from the
drop until the view settled), time to the first picture (data in a layer and the window
painted) and to the whole view (nothing loading), the share of the store's objects in the
first picture. Targets: warm stall / baseline stall <= 1.5 (cold: informational); stores of <= 50,000 vertices
show 100% of their objects in the first picture. Results in
``benchmarks/results/bench_first_sight.json`` and a table on stdout.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = HERE / ".work"
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from _memory import peak_rss_mb  # noqa: E402


def warmup_store() -> Path:
    """The small store napari's warm-up opens: the 0.7 streamlines of the fixture tree."""
    from data_paths import data_root

    return data_root() / "v07" / "streamlines.zarrvectors"


def ensure_real_stores() -> dict[str, Path]:
    """tracks300 and the navis neurons, written once."""
    import realdata

    out = {}
    for name, write in (
        ("tracks300", realdata.write_tracks300),
        ("navis_neurons", realdata.write_navis_neurons),
    ):
        path = WORK / f"{name}.zarrvectors"
        if not path.is_dir():
            WORK.mkdir(parents=True, exist_ok=True)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                write(path)
        out[name] = path
    return out


# --------------------------------------------------------------------------------------------
# child process
# --------------------------------------------------------------------------------------------


class StallMonitor:
    """The largest gap between ticks of a 5 ms timer: the longest the UI thread was busy."""

    def __init__(self) -> None:
        from qtpy.QtCore import Qt, QTimer

        self.ticks: list[float] = []
        self.timer = QTimer()
        self.timer.setTimerType(Qt.TimerType.PreciseTimer)
        self.timer.timeout.connect(lambda: self.ticks.append(time.perf_counter()))

    def start(self) -> None:
        self.ticks = [time.perf_counter()]
        self.timer.start(5)

    def stop(self) -> float:
        self.timer.stop()
        self.ticks.append(time.perf_counter())
        return max((b - a for a, b in zip(self.ticks, self.ticks[1:], strict=False)), default=0.0)


def _events(seconds: float) -> None:
    from qtpy.QtWidgets import QApplication

    app = QApplication.instance()
    end = time.perf_counter() + seconds
    while True:
        app.processEvents()
        if time.perf_counter() >= end:
            return
        time.sleep(0.002)


def _open_and_watch(viewer, path: str) -> dict:
    """Drop ``path`` (from a timer, as a drop arrives) and watch until the view settles."""
    from qtpy.QtCore import QTimer

    from napari_zarr_vectors.napari import controller_for
    from napari_zarr_vectors.napari.npe2.reader import PLUGIN_NAME

    monitor = StallMonitor()
    opened: list = []
    monitor.start()
    t0 = time.perf_counter()
    QTimer.singleShot(0, lambda: opened.append(viewer.open(path, plugin=PLUGIN_NAME)))
    while not opened:
        _events(0.002)
    c = controller_for(opened[0][-1])
    t_first = None
    first_share = None
    deadline = t0 + 600
    while time.perf_counter() < deadline:
        _events(0.005)
        if t_first is None and any(len(layer.data) for layer in c.layers):
            viewer.window._qt_viewer.canvas.native.repaint()  # painted
            t_first = time.perf_counter() - t0
            first_share = (int(c.view_share.items_shown), int(c.view_share.items_in_view))
        if t_first is not None and not c.is_loading:
            _events(0.3)  # the first view's camera change and any reload it causes
            if not c.is_loading:
                break
    t_whole = time.perf_counter() - t0
    stall = monitor.stop()
    store = c.store
    try:
        n_objects = len(store.object_ids(0))
    except Exception:  # noqa: BLE001 - point clouds without objects
        n_objects = 0
    shown, in_view = first_share or (0, 0)
    return {
        "max_stall_s": round(stall, 3),
        "first_picture_s": round(t_first or float("nan"), 3),
        "whole_view_s": round(t_whole, 3),
        "objects": n_objects,
        "first_picture_objects": shown,
        "first_picture_share": round(shown / n_objects, 3) if n_objects else None,
        "ndisplay": int(viewer.dims.ndisplay),
        "rows": int(sum(len(layer.data) for layer in c.layers)),
        "budget": int(c.vertex_budget),
    }


def _baseline(viewer, tuples) -> float:
    """Longest UI stall of napari adding ``tuples`` (data, meta, kind) from memory."""
    from napari.layers import Layer
    from qtpy.QtCore import QTimer

    monitor = StallMonitor()
    done: list = []

    def add() -> None:
        for data, meta, kind in tuples:
            viewer.add_layer(Layer.create(data, meta, kind))
        done.append(True)

    tuples = _with_colormaps(tuples)
    monitor.start()
    QTimer.singleShot(0, add)
    while not done:
        _events(0.002)
    _events(0.5)
    return monitor.stop()


def _layer_tuples(viewer) -> list:
    """The viewer's layers as (data, kwargs, kind) without their plugin metadata (Tracks
    colormaps as plain dicts, so that the tuples pickle; units as text, so that napari's
    first use of its unit registry falls inside the cold baseline's timing as in ours)."""
    tuples = []
    for layer in viewer.layers:
        data, meta, kind = layer.as_layer_data_tuple()
        meta = {k: v for k, v in meta.items() if k != "metadata"}
        if meta.get("units") is not None:  # as text: unpickling pint units would build
            meta["units"] = tuple(str(u) for u in meta["units"])  # the registry untimed
        if "colormaps_dict" in meta:
            meta["colormaps_dict"] = {k: v.dict() for k, v in meta["colormaps_dict"].items()}
        tuples.append((data, meta, kind))
    return tuples


def _with_colormaps(tuples: list) -> list:
    """:func:`_layer_tuples` with its Tracks colormaps rebuilt."""
    from napari.utils.colormaps import Colormap, ensure_colormap

    out = []
    for data, meta, kind in tuples:
        if "colormaps_dict" in meta:
            cmaps = {k: Colormap(**v) for k, v in meta["colormaps_dict"].items()}
            meta = {**meta, "colormaps_dict": cmaps}
            for name, cmap in cmaps.items():  # the layer's colormap names one (a new process)
                cmap.name = name
                ensure_colormap(cmap)
        out.append((data, meta, kind))
    return out


def child_cold_baseline(pickled: str) -> dict:
    """napari adding the pickled layers as the first layers of this process."""
    import pickle

    import napari

    with open(pickled, "rb") as fh:
        tuples, nd = pickle.load(fh)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        viewer = napari.Viewer(show=True)
    viewer.window._qt_window.resize(1280, 1000)
    viewer.dims.ndisplay = nd
    _events(0.5)
    stall = _baseline(viewer, tuples)
    viewer.close()
    return {"baseline_stall_s": round(stall, 3)}


def child(path: str, warm: bool) -> dict:
    import pickle

    import napari

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        viewer = napari.Viewer(show=True)
    viewer.window._qt_window.resize(1280, 1000)
    _events(0.5)
    if warm:  # another store first: the session's first-use costs are paid
        _open_and_watch(viewer, str(warmup_store()))
        viewer.layers.clear()
        viewer.dims.ndisplay = 2
        _events(0.3)
    out = _open_and_watch(viewer, path)
    nd = viewer.dims.ndisplay
    tuples = _layer_tuples(viewer)
    if not warm:  # for the cold baseline, in a fresh process
        pickled = WORK / f"{Path(path).stem}.layers.pkl"
        with open(pickled, "wb") as fh:
            pickle.dump((tuples, nd), fh)
        out["pickled"] = str(pickled)
    if warm:
        viewer.layers.clear()
        viewer.dims.ndisplay = nd
        _events(0.3)
        out["baseline_stall_s"] = round(_baseline(viewer, tuples), 3)
        out["stall_over_baseline"] = round(out["max_stall_s"] / out["baseline_stall_s"], 2)
    viewer.close()
    out["peak_rss_mb"] = round(peak_rss_mb(), 1)
    return out


def run_child(path: Path | str, warm: bool, baseline: bool = False) -> dict:
    cmd = [sys.executable, __file__, "--child", str(path)] + (["--warm"] if warm else [])
    cmd += ["--cold-baseline"] if baseline else []
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(f"{Path(path).name} failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--big", action="store_true", help="also the 10M-vertex store")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--warm", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--cold-baseline", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        run = (
            child_cold_baseline(args.child) if args.cold_baseline else child(args.child, args.warm)
        )
        print(json.dumps(run))
        return
    stores = ensure_real_stores()
    if args.big:
        from bench_scale import ensure_store

        stores["tractogram_10M"] = ensure_store(200_000, 50)
    results: dict = {}
    for name, path in stores.items():
        for warm in (False, True):
            key = f"{name} {'warm' if warm else 'cold'}"
            print(f"{key} ...", flush=True)
            r = results[key] = run_child(path, warm)
            if not warm:
                base = run_child(r.pop("pickled"), False, baseline=True)["baseline_stall_s"]
                r["baseline_stall_s"] = base
                r["stall_over_baseline"] = round(r["max_stall_s"] / base, 2)
            print(json.dumps(r), flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "bench_first_sight.json"
    out.write_text(json.dumps(results, indent=1))
    print(
        "| store | max UI stall (s) | stall / napari adding the layers | first picture (s) "
        "| whole view (s) | objects in the first picture |"
    )
    print("|---|---|---|---|---|---|")
    for key, r in results.items():
        share = r["first_picture_share"]
        share = "—" if share is None else f"{100 * share:.0f}% ({r['first_picture_objects']:,})"
        ratio = r.get("stall_over_baseline", "—")
        print(
            f"| {key} | {r['max_stall_s']} | {ratio} | {r['first_picture_s']} "
            f"| {r['whole_view_s']} | {share} |"
        )
    print(f"results: {out}")


if __name__ == "__main__":
    main()
