"""Layer actions for Zarr Vectors layers (npe2 commands in *Layers > Visualize > Zarr
Vectors pyramid*; napari 0.9 does not let plugins add to the layer list's context menu).

napari injects the active layer (``None`` when there is none) and the viewer. Each action
acts on the Pyramid QA model of the layer's store
(:func:`~napari_zarr_vectors.napari.qa.model.qa_model_for`), the one the *Pyramid QA*
widget shows, so the actions and the widget share one state (locks, outlines); only
*Pyramid QA for this layer* docks the widget. Without a store to act on, a notification
says what to do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from napari.utils.notifications import show_info

from napari_zarr_vectors.napari.conventions import meta_of
from napari_zarr_vectors.napari.qa.model import PyramidQA, qa_model_for, store_layer
from napari_zarr_vectors.napari.widgets._browse_base import unwrap

if TYPE_CHECKING:
    from napari.layers import Layer
    from napari.viewer import Viewer

PLUGIN = "napari-zarr-vectors"
WIDGET = "Pyramid QA"

#: what an action says when no store is open
NO_STORE = "Open a Zarr Vectors store first."
#: what an action says when the active layer is of no store (while one is open)
NOT_A_STORE_LAYER = "Select a Zarr Vectors layer first."


def _store_layer(layer: Layer | None, viewer: Viewer | None) -> Layer | None:
    """The layer to act on, or ``None`` after saying why there is none."""
    if viewer is None or store_layer(viewer) is None:
        show_info(NO_STORE)
        return None
    if meta_of(layer) is None or store_layer(viewer, layer) is not layer:
        show_info(NOT_A_STORE_LAYER)
        return None
    return layer


def model_for(layer: Layer | None, viewer: Viewer | None) -> PyramidQA | None:
    """The Pyramid QA model of ``layer``'s store (``None``, with a notification saying
    why, when there is none)."""
    viewer = None if viewer is None else unwrap(viewer)
    layer = _store_layer(None if layer is None else unwrap(layer), viewer)
    return None if layer is None else qa_model_for(viewer, layer)


def open_pyramid_qa(layer: Layer | None = None, viewer: Viewer | None = None) -> None:
    """Dock the *Pyramid QA* widget on this layer."""
    if model_for(layer, viewer) is None:
        return
    assert viewer is not None  # a model: found in this viewer
    _, widget = viewer.window.add_plugin_dock_widget(PLUGIN, WIDGET)
    unwrap(widget).retarget(unwrap(layer))


def lock_shown_level(layer: Layer | None = None, viewer: Viewer | None = None) -> None:
    """Lock the layer's store at the level it shows now."""
    model = model_for(layer, viewer)
    if model is not None:
        model.lock_shown_level()


def unlock_level(layer: Layer | None = None, viewer: Viewer | None = None) -> None:
    """Back to the automatic, zoom-driven level."""
    model = model_for(layer, viewer)
    if model is not None:
        model.lock_level(None)


def finer_level(layer: Layer | None = None, viewer: Viewer | None = None) -> None:
    """Lock one level finer."""
    model = model_for(layer, viewer)
    if model is not None:
        model.step_level(-1)


def coarser_level(layer: Layer | None = None, viewer: Viewer | None = None) -> None:
    """Lock one level coarser."""
    model = model_for(layer, viewer)
    if model is not None:
        model.step_level(+1)


def outline_chunks(layer: Layer | None = None, viewer: Viewer | None = None) -> None:
    """Outline the non-empty chunks of the level the layer shows (following it)."""
    model = model_for(layer, viewer)
    if model is not None:
        model.show_chunks(True)
