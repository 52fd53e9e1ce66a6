"""Making, adding and removing the plugin's layers without napari's avoidable UI-thread
costs.

* :func:`make_layer` is ``Layer.create`` with a cheaper layer-list thumbnail for Vectors
  layers: napari draws that thumbnail from up to 1,024 vectors with a Python loop per pixel
  of each (8-13 ms per update for chunk outlines, three or four updates while a layer is
  added); ours are drawn from :data:`THUMBNAIL_VECTORS`.
* :func:`remove_layers`: napari (0.9) runs a full garbage collection of the process for
  every layer removed from a viewer (``VispyCanvas._clean_and_update_scenegraph``), a guard
  against a Windows OpenGL driver bug. With a few hundred thousand live objects that takes
  0.1-0.2 s on the UI thread per layer. :func:`remove_layers` removes its layers in one
  batch (one scene-graph update). While the long-lived objects are frozen
  (:mod:`.gc_pauses`) napari's collections scan only the newer ones and free the removed
  layers at once. Otherwise (and when a removed layer is one of the frozen objects), except
  on Windows or with ``NZV_FREEZE_GC=0``, the objects that existed before are frozen for the
  removal (:func:`.gc_pauses.scan_new_only`), and the removed layers are freed by the next
  full collection.
* :func:`add_layer` adds an overlay without selecting it (napari selects every layer it
  adds, which rebuilds the layer controls shown: ~15 ms) and :func:`hold_paint` keeps the
  canvas from drawing until the next event-loop turn. Adding a layer (its visual and
  controls) and the frame that draws it then run in two turns, with the user's input (and
  any timer) handled between them, instead of one turn of ~0.1-0.15 s in software OpenGL.
  :func:`remove_layers`, the overlays' data updates and the level-of-detail swaps hold the
  frame the same way; :func:`next_turn` schedules the next step of a multi-turn change.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from napari_zarr_vectors.napari._napari_compat import (
    canvas_widget,
    inserted_unselected,
    with_small_vectors_thumbnail,
)
from napari_zarr_vectors.napari.lod import gc_pauses
from napari_zarr_vectors.napari.lod.gc_pauses import scan_new_only

if TYPE_CHECKING:
    from napari.layers import Layer

    from napari import Viewer
    from napari_zarr_vectors.napari.types import LayerData

_L = TypeVar("_L")

#: vectors a Vectors layer's layer-list thumbnail is drawn from (napari: 1,024)
THUMBNAIL_VECTORS = 64


def make_layer(data: LayerData, kwargs: dict[str, Any], kind: str) -> Layer:
    """``napari.layers.Layer.create(data, kwargs, kind)``, a Vectors layer with
    its thumbnail drawn from at most :data:`THUMBNAIL_VECTORS` vectors."""
    from napari.layers import Layer

    if kind != "vectors":
        return Layer.create(data, kwargs, kind)
    return with_small_vectors_thumbnail(lambda: Layer.create(data, kwargs, kind), THUMBNAIL_VECTORS)


def add_layer(viewer: Viewer, layer: _L, *, select: bool = False) -> _L:
    """``viewer.add_layer(layer)``, drawn from the next event-loop turn on
    (:func:`hold_paint`); the selection stays as it is unless ``select``."""
    hold_paint(viewer)
    if select:
        return viewer.add_layer(layer)
    with inserted_unselected(viewer.layers):
        return viewer.add_layer(layer)


def next_turn(callback: Callable[[], object]) -> None:
    """Call ``callback`` in a later event-loop turn, after the input events, paints and
    timers already waiting. (A 0 ms single shot is a posted event in Qt 6: it runs in the
    same pass as the paints waiting, before any timer, so a long step scheduled that way
    joins the frame before it into one stall.)"""
    from qtpy.QtCore import QTimer

    QTimer.singleShot(1, callback)


def later(seconds: float, callback: Callable[[], object]) -> None:
    """Call ``callback`` in an event-loop turn at least ``seconds`` from now (at least the
    next turn, as :func:`next_turn`)."""
    from qtpy.QtCore import QTimer

    QTimer.singleShot(max(int(round(seconds * 1000)), 1), callback)


def hold_paint(viewer: Viewer) -> None:
    """Keep ``viewer``'s canvas from drawing until the next event-loop turn (a no-op
    without a Qt window). The frame then comes in a turn of its own, after the work of
    this one and after the input events waiting for it."""
    canvas = canvas_widget(viewer)
    if canvas is None or not canvas.updatesEnabled():  # held already (released next turn)
        return
    canvas.setUpdatesEnabled(False)

    def release() -> None:
        with contextlib.suppress(RuntimeError):  # the window closed in between
            canvas.setUpdatesEnabled(True)
            canvas.update()

    next_turn(release)


def remove_layers(viewer: Viewer, layers: Iterable[Layer | None]) -> None:
    """Remove those of ``layers`` that ``viewer`` holds (each once; ``None`` and absent
    layers are skipped), in one batch; the frame without them comes in the next turn."""
    present = list({id(x): x for x in layers if x is not None and x in viewer.layers}.values())
    if not present:
        return
    hold_paint(viewer)
    # with long-lived objects frozen (gc_pauses) napari's collections are short already,
    # unless a layer removed is one of them
    cheap = gc_pauses.frozen() and not any(map(gc_pauses.was_frozen, present))
    scan = (
        scan_new_only()
        if gc_pauses.ENABLED and not cheap and sys.platform != "win32"
        else contextlib.nullcontext()
    )
    with scan, viewer.layers.batched_update():
        for layer in present:
            viewer.layers.remove(layer)
