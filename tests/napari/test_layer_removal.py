"""remove_layers: one batch, nothing left frozen, the removed layers freed."""

from __future__ import annotations

import gc
import weakref

import numpy as np

from napari_zarr_vectors.napari.layer_removal import remove_layers


def test_remove_layers_removes_those_given_and_frees_them(make_napari_viewer, qtbot):
    viewer = make_napari_viewer()
    a = viewer.add_points(np.zeros((3, 3)), name="a")
    b = viewer.add_points(np.ones((3, 3)), name="b")
    c = viewer.add_points(np.ones((3, 3)) * 2, name="c")
    batches: list[str] = []
    viewer.layers.events.begin_batch.connect(lambda e: batches.append("begin"))
    viewer.layers.events.end_batch.connect(lambda e: batches.append("end"))
    gone = weakref.ref(a)
    remove_layers(viewer, [a, None, c, c])  # absent and repeated entries are ignored
    assert [layer.name for layer in viewer.layers] == ["b"]
    assert batches == ["begin", "end"]  # one batch: one scene-graph update
    assert gc.get_freeze_count() == 0  # nothing stays frozen
    del a, c
    qtbot.wait(50)  # Qt deletes the layer controls on the event loop
    gc.collect()
    assert gone() is None  # the removed layers are freed by the next collection
    remove_layers(viewer, [])  # nothing to do
    assert [layer.name for layer in viewer.layers] == ["b"] and b in viewer.layers
