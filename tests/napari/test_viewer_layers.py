"""make_layer and remove_layers: cheap Vectors thumbnails; one batch, nothing left frozen,
the removed layers freed."""

from __future__ import annotations

import gc
import weakref

import numpy as np

from napari_zarr_vectors.napari.viewer_layers import THUMBNAIL_VECTORS, make_layer, remove_layers


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


def test_make_layer_draws_vectors_thumbnails_from_few_vectors():
    from napari.layers import Points, Vectors

    default = Vectors._max_vectors_thumbnail
    data = np.random.default_rng(0).uniform(0, 100, (5_000, 2, 3))
    layer = make_layer(data, {"name": "edges", "edge_width": 2.0}, "vectors")
    assert isinstance(layer, Vectors) and np.array_equal(layer.data, data)
    assert layer.name == "edges" and layer.edge_width == 2.0
    assert layer._max_vectors_thumbnail == THUMBNAIL_VECTORS < default
    assert Vectors._max_vectors_thumbnail == default  # napari's default is left alone
    points = make_layer(np.zeros((2, 3)), {"name": "p"}, "points")
    assert isinstance(points, Points) and points.name == "p"
