"""Isolating one object in a shown napari window: where the time goes.

    xvfb-run -a -s "-screen 0 1280x1024x24" python benchmarks/bench_isolate.py

One command. Stores (written once into ``benchmarks/.work/`` by zarr-vectors 0.9.2, as
``bench_first_sight.py`` writes them): navis' five example neurons (skeletons of 4,300-4,800
nodes each: an edges and a nodes layer per isolated neuron) and dipy's tracks300 (one Tracks
layer per streamline). The store is opened as a drop opens it in a shown 1280x1000 window;
each object is then isolated three ways, best of three objects:

* **read + build** (worker side, timed on the UI thread here): ``isolate_layer_data``, the
  object read through its manifest and turned into layer data;
* **add** (UI stall): ``add_object_layers``, the layers made and inserted;
* **baseline** (UI stall): napari alone making and inserting the same layer data tuples
  (``Layer.create`` + ``viewer.add_layer``, which also selects them), in the same view;
* **click to layers**: *Pick and isolate*'s ``isolate(k)`` until its layers are in and
  painted (the worker, the add and one frame).

The first object's click to layers is kept too (``first_click_to_layers_s``: the isolate
path's first use in the session). Targets: click to layers <= 1 s; add / baseline <= 1.2 (what the plugin adds to napari's
own cost of a layer). Results in ``benchmarks/results/bench_isolate.json`` and on stdout.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))

from bench_first_sight import ensure_real_stores  # noqa: E402


def _wait(app, cond, timeout: float = 20.0) -> None:
    t0 = time.perf_counter()
    while not cond() and time.perf_counter() - t0 < timeout:
        app.processEvents()
        time.sleep(0.002)


def measure(path: Path, object_ids: list[int]) -> dict:
    from napari.layers import Layer
    from qtpy.QtWidgets import QApplication

    import napari
    from napari_zarr_vectors.napari import controller_for
    from napari_zarr_vectors.napari.browse.targets import add_object_layers, isolate_layer_data
    from napari_zarr_vectors.napari.lod.viewer_layers import remove_layers

    viewer = napari.Viewer(show=True)
    viewer.window._qt_window.resize(1280, 1000)
    app = QApplication.instance()
    layers = viewer.open(str(path), plugin="napari-zarr-vectors")
    c = controller_for(layers[-1])
    _wait(app, lambda: not c.is_loading)
    viewer.layers.selection.active = c.layers[0]
    _, pick = viewer.window.add_plugin_dock_widget("napari-zarr-vectors", "Pick and isolate")
    _wait(app, lambda: pick.store is not None)
    for _ in range(20):
        app.processEvents()
    rows: dict[str, list[float]] = {"read_build_s": [], "add_s": [], "baseline_s": []}
    rows["click_to_layers_s"] = []
    for oid in object_ids:
        t0 = time.perf_counter()
        data = isolate_layer_data(c.store, oid)
        t1 = time.perf_counter()
        added = add_object_layers(viewer, data)
        t2 = time.perf_counter()
        app.processEvents()
        remove_layers(viewer, added)
        app.processEvents()
        t3 = time.perf_counter()
        plain = [viewer.add_layer(Layer.create(d, dict(kw), k)) for d, kw, k in data]
        t4 = time.perf_counter()
        app.processEvents()
        remove_layers(viewer, plain)
        app.processEvents()
        viewer.layers.selection.active = c.layers[0]  # napari selected its own new layers
        app.processEvents()
        n_before = len(viewer.layers)
        t5 = time.perf_counter()
        assert pick.isolate(oid) is not None
        _wait(app, lambda n=n_before, d=data: len(viewer.layers) == n + len(d))
        app.processEvents()  # the frame showing them
        t6 = time.perf_counter()
        remove_layers(viewer, pick.isolated_layers())
        app.processEvents()
        for key, value in zip(rows, (t1 - t0, t2 - t1, t4 - t3, t6 - t5), strict=True):
            rows[key].append(value)
    viewer.close()
    best = {key: round(min(values), 3) for key, values in rows.items()}
    best["first_click_to_layers_s"] = round(rows["click_to_layers_s"][0], 3)
    best["add_over_baseline"] = round(best["add_s"] / best["baseline_s"], 2)
    best["layers_per_object"] = len(data)
    return best


def main() -> None:
    stores = ensure_real_stores()
    results = {
        "navis_neurons": measure(stores["navis_neurons"], [1, 2, 3]),
        "tracks300": measure(stores["tracks300"], [12, 77, 250]),
    }
    for name, r in results.items():
        print(name, json.dumps(r))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "bench_isolate.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
