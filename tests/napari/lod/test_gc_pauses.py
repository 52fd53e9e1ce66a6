"""Short garbage-collection pauses (gc_pauses): long-lived objects frozen once a store's view
settles, thawed when a frozen layer leaves or the window closes, no garbage frozen, and
nothing leaked: a layer that was frozen is freed once removed, a newer one without a thaw."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from _zv_napari import v07_store
from qtpy.QtCore import QEvent
from qtpy.QtWidgets import QApplication

from napari_zarr_vectors.napari import open_in_viewer
from napari_zarr_vectors.napari.lod import gc_pauses
from napari_zarr_vectors.napari.lod.viewer_layers import remove_layers

pytestmark = pytest.mark.gui


@pytest.fixture(autouse=True)
def _nothing_frozen_around():
    gc_pauses.thaw()
    gc.collect()
    assert not gc_pauses.frozen() and gc.get_freeze_count() == 0
    yield
    gc_pauses.thaw()
    gc.collect()


def _settled(qtbot, viewer, name="streamlines"):
    c = open_in_viewer(viewer, v07_store(name), first_view=False)
    qtbot.waitUntil(lambda: not c.is_loading and c.vertex_count > 0, timeout=15_000)
    return c


def test_frozen_once_settled_and_thawed_when_a_frozen_layer_leaves(make_napari_viewer, qtbot):
    if not gc_pauses.ENABLED:
        pytest.skip("NZV_FREEZE_GC=0")
    viewer = make_napari_viewer()
    c = _settled(qtbot, viewer)
    assert gc_pauses.frozen() and gc.get_freeze_count() > 1000
    layer = c.layers[0]
    assert gc_pauses.was_frozen(layer)
    gone = weakref.ref(layer)
    remove_layers(viewer, [layer, c.bounds_layer])
    del layer
    assert not gc_pauses.frozen() and gc.get_freeze_count() == 0
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)  # the layer controls
    assert gc_pauses.freeze_long_lived() is True  # its full collection comes first
    assert gone() is None  # the layer frozen at the settle is freed, not frozen again
    assert gc_pauses.freeze_long_lived() is False  # frozen already


def test_a_layer_added_after_the_freeze_is_freed_without_a_thaw(make_napari_viewer, qtbot):
    if not gc_pauses.ENABLED:
        pytest.skip("NZV_FREEZE_GC=0")
    viewer = make_napari_viewer()
    _settled(qtbot, viewer)
    overlay = viewer.add_vectors(np.zeros((4, 2, 3)), name="overlay")
    assert not gc_pauses.was_frozen(overlay)
    gone = weakref.ref(overlay)
    remove_layers(viewer, [overlay])
    del overlay
    assert gc_pauses.frozen() and gc.get_freeze_count() > 1000  # no thaw
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)  # the layer controls
    gc.collect()  # a full collection, the frozen objects skipped
    assert gone() is None


def test_a_layer_removed_in_napari_thaws_and_closing_thaws(make_napari_viewer, qtbot):
    if not gc_pauses.ENABLED:
        pytest.skip("NZV_FREEZE_GC=0")
    viewer = make_napari_viewer()
    other = viewer.add_points(np.zeros((2, 3)), name="other")
    c = _settled(qtbot, viewer)
    assert gc_pauses.frozen()
    viewer.layers.remove(other)  # napari's own removal (the layer list's delete button)
    assert gc.get_freeze_count() == 0
    gc.collect()
    c.refresh()
    qtbot.waitUntil(lambda: not c.is_loading, timeout=15_000)
    assert gc_pauses.frozen()  # frozen again at the next settle
    viewer.window._qt_window.close()  # the window's close button: the layers stay
    assert len(viewer.layers) == 2
    assert not gc_pauses.frozen() and gc.get_freeze_count() == 0


def test_no_garbage_is_frozen():
    class Cycle:
        pass

    a, b = Cycle(), Cycle()
    a.other, b.other = b, a
    gone = weakref.ref(a)
    gc.collect(1)  # alive: promoted to the oldest generation
    del a, b  # cyclic garbage now, which only a full collection frees
    gc.collect(1)
    assert gone() is not None
    assert gc_pauses.freeze_long_lived() is gc_pauses.ENABLED
    assert gone() is None


def test_scan_new_only_leaves_everything_thawed():
    gc_pauses.freeze_long_lived()
    with gc_pauses.scan_new_only():
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0 and not gc_pauses.frozen()
