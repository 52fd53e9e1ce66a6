"""Short garbage-collection pauses while a store is explored.

A full collection of CPython's cyclic garbage collector traverses every tracked object. In a
napari viewer with a store open that is ~280,000 objects (napari's, pandas', scipy's, zarr's
and the plugin's modules, the viewer's widgets and layers): 0.1-0.13 s on the UI thread of a
2-core machine. Python starts one on its own once enough objects have survived two younger
collections, which during panning happens every few dozen swaps; landing in a 50 ms swap it
makes a 160 ms stall. napari also runs one for every layer removed from a viewer.

* :func:`freeze_long_lived` (``gc.freeze``), called when a store's view has settled, moves
  the objects alive then (modules, the viewer, the store's layers) to the permanent
  generation that collections skip. A full collection then scans only what was made since
  (under 1 ms while panning here) and still frees all of it: the overlays the Pyramid QA
  widget adds and removes, the arrays a swap replaces. One full collection runs just before
  the freeze (~0.1 s, once), so that no garbage is frozen.
* :func:`thaw` (``gc.unfreeze``) puts the frozen objects back when one of them may have
  become garbage that matters: a layer that was in the viewer at the freeze is removed
  (:func:`layer_removed`), a store's controller closes, a viewer's window closes.
* The next settle after a thaw freezes again (after its full collection). What a freeze
  keeps uncollected is at most what was alive at the freeze and became garbage later (e.g.
  a dock widget closed), and a thaw frees it.
* :func:`scan_new_only` is the short freeze :func:`.viewer_layers.remove_layers` puts
  around napari's per-layer ``gc.collect()`` when nothing is frozen, or when a frozen layer
  is removed: napari's collections then scan only the objects made since, and the removed
  layers are freed by the next full collection (at the latest the one before the next
  freeze).

``NZV_FREEZE_GC=0`` turns all of this off: Python's and napari's own collections.
"""

from __future__ import annotations

import contextlib
import gc
import os
import weakref
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from napari_zarr_vectors.napari._napari_compat import main_window

if TYPE_CHECKING:
    from napari.layers import Layer
    from qtpy.QtCore import QObject

    from napari import Viewer

#: whether :func:`freeze_long_lived` freezes (``NZV_FREEZE_GC=0``: never)
ENABLED = os.environ.get("NZV_FREEZE_GC", "1").strip().lower() not in ("0", "false", "no", "off")

_frozen = False  # objects frozen by freeze_long_lived
_scanning = 0  # inside scan_new_only: a thaw waits for the end of the block
_frozen_layers: weakref.WeakSet[Layer] = weakref.WeakSet()


def frozen() -> bool:
    """Whether long-lived objects are frozen (collections skip them)."""
    return _frozen


def freeze_long_lived(layers: Iterable[Layer] = ()) -> bool:
    """Freeze the objects alive now (``layers``: the viewer's layers, whose removal thaws),
    unless they are frozen already or the freeze is off. Returns whether it froze. A full
    collection runs first (~0.1 s, once a freeze), so that no garbage is frozen."""
    global _frozen
    if not ENABLED or _frozen or _scanning:
        return False
    gc.collect()
    _frozen_layers.clear()
    _frozen_layers.update(layers)
    gc.freeze()
    _frozen = True
    return True


def was_frozen(layer: Layer) -> bool:
    """Whether ``layer`` was in the viewer when the objects now frozen were frozen."""
    return _frozen and layer in _frozen_layers


def layer_removed(layer: Layer) -> None:
    """A layer left a viewer: thaw if it was frozen (it may now be garbage)."""
    if was_frozen(layer):
        thaw()


def thaw() -> None:
    """Put the frozen objects back into the collected generations (a no-op when nothing is
    frozen by :func:`freeze_long_lived`)."""
    global _frozen
    if not _frozen:
        return
    _frozen = False
    _frozen_layers.clear()
    if not _scanning:  # else at the end of the block
        gc.unfreeze()


@contextlib.contextmanager
def scan_new_only() -> Iterator[None]:
    """Within the block, collections skip every object that existed before it (napari's
    full ``gc.collect()`` per removed layer then scans only the new ones). Afterwards
    everything is thawed, the removed layers included."""
    global _scanning
    thaw()
    gc.freeze()
    _scanning += 1
    try:
        yield
    finally:
        _scanning -= 1
        if not _scanning:
            gc.unfreeze()


_CLOSE_FILTER: QObject | None = None


def thaw_on_close(viewer: Viewer) -> None:
    """Thaw when ``viewer``'s window closes (a no-op without a Qt window)."""
    global _CLOSE_FILTER
    window = main_window(viewer)
    if window is None:
        return
    from qtpy.QtCore import QEvent, QObject

    if _CLOSE_FILTER is None:

        class _ThawOnClose(QObject):
            def eventFilter(  # noqa: N802 - Qt's name
                self, obj: QObject | None, event: QEvent | None
            ) -> bool:
                if event is not None and event.type() == QEvent.Type.Close:
                    thaw()
                return False

        _CLOSE_FILTER = _ThawOnClose()
    window.installEventFilter(_CLOSE_FILTER)
