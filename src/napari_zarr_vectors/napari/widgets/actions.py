"""Layer actions for Zarr Vectors layers (npe2 commands in *Layers > Visualize > Zarr
Vectors pyramid*; napari 0.9 does not let plugins add to the layer list's context menu).

napari injects the active layer and the viewer. Each action opens (or reuses) the
*Pyramid QA* dock widget, points it at the layer and runs the matching widget method, so
the actions and the widget share one state (locks, overlays).
"""

from __future__ import annotations

from napari.layers import Layer
from napari.utils.notifications import show_info
from napari.viewer import Viewer

from napari_zarr_vectors.napari.widgets.pyramid import PyramidQAWidget, is_zv_layer

PLUGIN = "napari-zarr-vectors"
WIDGET = "Pyramid QA"


def pyramid_widget(viewer: Viewer) -> PyramidQAWidget | None:
    """The viewer's *Pyramid QA* dock widget (docked on first use)."""
    window = getattr(viewer, "window", None)
    if window is None:
        return None
    _, widget = window.add_plugin_dock_widget(PLUGIN, WIDGET)
    return widget if isinstance(widget, PyramidQAWidget) else None


def _widget_for(layer: Layer, viewer: Viewer) -> PyramidQAWidget | None:
    if layer is None or not is_zv_layer(layer):
        show_info("Select a Zarr Vectors layer first.")
        return None
    widget = pyramid_widget(viewer)
    if widget is not None:
        widget.retarget(layer)
    return widget


def open_pyramid_qa(layer: Layer, viewer: Viewer) -> None:
    """Dock the *Pyramid QA* widget on this layer."""
    _widget_for(layer, viewer)


def lock_shown_level(layer: Layer, viewer: Viewer) -> None:
    """Lock the layer's store at the level it shows now."""
    widget = _widget_for(layer, viewer)
    if widget is not None and widget.target is not None:
        widget.lock_level(widget.target.level)


def unlock_level(layer: Layer, viewer: Viewer) -> None:
    """Back to the automatic, zoom-driven level."""
    widget = _widget_for(layer, viewer)
    if widget is not None:
        widget.lock_level(None)


def finer_level(layer: Layer, viewer: Viewer) -> None:
    widget = _widget_for(layer, viewer)
    if widget is not None:
        widget.step_level(-1)


def coarser_level(layer: Layer, viewer: Viewer) -> None:
    widget = _widget_for(layer, viewer)
    if widget is not None:
        widget.step_level(+1)


def outline_chunks(layer: Layer, viewer: Viewer) -> None:
    """Outline the non-empty chunks of the level the layer shows."""
    widget = _widget_for(layer, viewer)
    if widget is not None:
        widget.show_chunks(True)
