"""make_layer, add_layer, remove_layers: cheap Vectors thumbnails; an overlay added without
taking the selection; one batch, nothing left frozen, the removed layers freed; the frame of
a change drawn in a later event-loop turn than the change."""

from __future__ import annotations

import gc
import weakref

import numpy as np

from napari_zarr_vectors.napari.lod.viewer_layers import (
    THUMBNAIL_VECTORS,
    add_layer,
    hold_paint,
    make_layer,
    next_turn,
    remove_layers,
)


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

    def freed() -> bool:
        gc.collect()
        return gone() is None

    # the removed layers are freed by a collection once Qt has deleted their layer controls
    # on the event loop (deleteLater: a few turns, longer on a loaded machine)
    qtbot.waitUntil(freed, timeout=10_000)
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


def test_add_layer_keeps_the_selection_unless_asked(make_napari_viewer, qtbot):
    from napari.layers import Points

    viewer = make_napari_viewer()
    store = viewer.add_points(np.zeros((3, 3)), name="store")
    assert viewer.layers.selection.active is store
    overlay = add_layer(viewer, Points(np.ones((2, 3)), name="overlay"))
    assert [layer.name for layer in viewer.layers] == ["store", "overlay"]
    assert viewer.layers.selection.active is store and overlay not in viewer.layers.selection
    assert viewer.layers._activate_on_insert is True  # napari's own adds select as before
    picked = add_layer(viewer, Points(np.ones((1, 3)), name="picked"), select=True)
    assert viewer.layers.selection.active is picked
    plain = viewer.add_points(np.zeros((1, 3)), name="plain")
    assert viewer.layers.selection.active is plain


def test_a_change_is_drawn_in_a_later_turn(make_napari_viewer, qtbot):
    """add_layer holds the canvas's frame: the posted paint of this turn does not draw it;
    the next turn does (and the canvas is drawable again)."""
    from napari.layers import Points
    from qtpy.QtWidgets import QApplication

    viewer = make_napari_viewer(show=True)
    canvas = viewer.window._qt_viewer.canvas
    draws: list[int] = []
    canvas._scene_canvas.events.draw.connect(lambda e: draws.append(1))
    qtbot.waitUntil(lambda: bool(draws), timeout=5000)  # the shown window's first frame
    draws.clear()
    add_layer(viewer, Points(np.ones((2, 3)), name="overlay"))
    assert not canvas.native.updatesEnabled()
    QApplication.sendPostedEvents()  # the paint requests of this turn
    assert draws == []
    qtbot.waitUntil(lambda: canvas.native.updatesEnabled() and bool(draws), timeout=5000)
    remove_layers(viewer, [viewer.layers["overlay"]])
    assert not canvas.native.updatesEnabled()
    hold_paint(viewer)  # held already: one release for both
    qtbot.waitUntil(canvas.native.updatesEnabled, timeout=5000)


def test_hold_paint_without_a_window_and_next_turn_order(qtbot):
    from napari.components import ViewerModel
    from qtpy.QtCore import QTimer

    model = ViewerModel()
    hold_paint(model)  # no Qt window: nothing to hold
    add_layer(model, make_layer(np.zeros((2, 3)), {"name": "p"}, "points"))
    assert [layer.name for layer in model.layers] == ["p"]
    order: list[str] = []
    next_turn(lambda: order.append("next turn"))
    QTimer.singleShot(0, lambda: order.append("posted"))  # a posted event (a paint, a result)
    qtbot.waitUntil(lambda: len(order) == 2, timeout=2000)
    assert order == ["posted", "next turn"]
