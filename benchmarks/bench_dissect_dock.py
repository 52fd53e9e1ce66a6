"""The Dissect dock on the 10M-vertex store in a shown window (docs/images/dissect_10m.png).

    xvfb-run -a -s "-screen 0 1280x1024x24" python benchmarks/bench_dissect_dock.py [STORE] [OUT]

STORE defaults to the bench_scale tractogram in ``benchmarks/.work``; OUT (default
``benchmarks/results/dissect_dock``) receives ``result.json``, ``canvas.png``,
``window.png`` and ``dock.png``. A 1280 x 1000 window; the store dropped in; the Dissect
dock from the plugin menu; a box added at the view centre (include) and a sphere (exclude)
moved to its corner, both then resized in the model as the fields do. Each step is timed
from the change to the exact count, with the longest gap between the ticks of a 10 ms
QTimer meanwhile (the UI thread's longest stall); a bundle is kept and shown (timed the
same way); then a 3-D view for the pictures.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
from qtpy.QtCore import QTimer
from qtpy.QtWidgets import QApplication

import napari
from napari_zarr_vectors.napari import controller_for

HERE = Path(__file__).resolve().parent
STORE = (
    sys.argv[1] if len(sys.argv) > 1 else str(HERE / ".work" / "tractogram_200000x50.zarrvectors")
)
OUT = Path(sys.argv[2]) if len(sys.argv) > 2 else HERE / "results" / "dissect_dock"


def wait_until(app, pred, timeout=600.0) -> float:
    t0 = time.perf_counter()
    while not pred():
        app.processEvents()
        time.sleep(0.01)
        if time.perf_counter() - t0 > timeout:
            raise TimeoutError
    return time.perf_counter() - t0


def pump(app, seconds: float) -> None:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        app.processEvents()
        time.sleep(0.01)


class Gaps:
    """The ticks of a 10 ms QTimer; :meth:`stop` gives the longest gap between two."""

    def __init__(self) -> None:
        self.ticks: list[float] = []
        self.timer = QTimer()
        self.timer.setInterval(10)
        self.timer.timeout.connect(lambda: self.ticks.append(time.perf_counter()))

    def start(self) -> None:
        self.ticks = [time.perf_counter()]
        self.timer.start()

    def stop(self) -> float:
        self.timer.stop()
        self.ticks.append(time.perf_counter())
        return float(np.max(np.diff(self.ticks)))


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance() or QApplication([])
    viewer = napari.Viewer(show=True)
    viewer.window._qt_window.resize(1280, 1000)
    layers = viewer.open(STORE, plugin="napari-zarr-vectors")
    c = controller_for(layers[-1])
    res: dict = {"store": Path(STORE).name, "open_s": wait_until(app, lambda: not c.is_loading)}
    pump(app, 1.0)
    _, widget = viewer.window.add_plugin_dock_widget("napari-zarr-vectors", "Dissect")
    pump(app, 0.5)
    d = widget.dissection
    gaps = Gaps()
    steps = []

    def timed(label, action) -> None:
        gaps.start()
        t = time.perf_counter()
        action()
        wait_until(app, lambda: not d.counting and d.result is not None)
        steps.append(
            {
                "step": label,
                "count_s": round(time.perf_counter() - t, 3),
                "longest_gap_ms": round(gaps.stop() * 1000, 1),
                "selected": int(len(d.result)),
            }
        )
        print(steps[-1], flush=True)

    timed("box added at the view centre (include)", lambda: widget.add_region("box"))
    timed("sphere added at the view centre", lambda: widget.add_region("sphere"))
    corner = np.asarray(d.regions[0].center) + np.asarray(d.regions[0].size) * 0.35
    timed("sphere moved, exclude", lambda: d.update(1, center=corner, role="exclude"))
    timed("box resized to 80", lambda: d.update(0, size=[80.0, 80.0, 80.0]))
    near = np.asarray(d.regions[0].center) + 35.0
    timed("sphere radius 30 at the box's corner", lambda: d.update(1, center=near, radius=30.0))
    res["steps"], res["status"] = steps, d.status
    widget.bundles.bundle_name.setText("through the centre, not the corner")
    widget.bundles.keep_bundle()
    gaps.start()
    t = time.perf_counter()
    job = widget.bundles.toggle_bundle()
    wait_until(app, lambda: job.done)
    res["bundle_show_s"] = round(time.perf_counter() - t, 3)
    res["bundle_show_longest_gap_ms"] = round(gaps.stop() * 1000, 1)
    pump(app, 1.0)
    viewer.dims.ndisplay = 3
    viewer.scene.camera.angles = (-15.0, 35.0, 140.0)
    viewer.scene.camera.zoom *= 1.8
    by_name = {layer.name: layer for layer in viewer.layers}
    bundle = by_name[f"{c.store.name} through the centre, not the corner"]
    bundle.opacity, bundle.tail_width = 0.7, 1.5
    by_name[f"{c.store.name} streamlines"].opacity = 0.25
    for _ in range(2):
        wait_until(app, lambda: not c.is_loading, timeout=120)
        pump(app, 2.0)
    viewer.screenshot(str(OUT / "canvas.png"), canvas_only=True, flash=False)
    viewer.screenshot(str(OUT / "window.png"), canvas_only=False, flash=False)
    widget.grab().save(str(OUT / "dock.png"))
    print(json.dumps(res, indent=1))
    (OUT / "result.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
