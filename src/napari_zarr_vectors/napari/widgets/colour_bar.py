"""Colour bars on the canvas: the colormap, its range and the attribute's name and unit, for
every plugin layer coloured by a continuous value.

napari draws the bars. Points and Surface layers show their own colour-bar overlay
(``face_colorbar``, ``colorbar``); Tracks, Shapes and Vectors, which napari gives none, get
napari's :class:`~napari.components.overlays.ColorBarOverlay` added to their overlays, fed by a
:class:`~napari.layers.utils.color_manager.ColorManager` of its own that holds the bar's
colormap and range (:func:`~napari_zarr_vectors.napari.colour.bar.bar_spec`).
So every bar looks the same, is tiled with napari's other overlays in the canvas's top-right
corner, is hidden with its layer, goes with it, and is in canvas screenshots. Bars and title
are drawn on napari's translucent background box, readable over the data.

napari's bar has no title: one text overlay in the corner, next to the bars, names the
attribute and unit and gives the exact range (``length_mm (mm)``, ``24.69 … 76.67``); with
several bars one line each, nearest bar first, with its layer's name. Layers coloured the
same way (a store's layers coloured together) show one bar.

:func:`install_colour_bars` (once per viewer, from :func:`~napari_zarr_vectors.napari.npe2.attach.hook_viewer`)
follows the viewer's layers: a bar appears, changes or disappears in the event-loop turn
after a layer's colouring, visibility or data changed. It also keeps the colormap name
napari's Tracks controls show true to the colours drawn (:func:`_name_tracks_colormap`).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from napari_zarr_vectors.napari._napari_compat import (
    colour_manager,
    layer_overlays,
    napari_colour_bar,
)
from napari_zarr_vectors.napari.colour.bar import BarSpec, bar_spec
from napari_zarr_vectors.napari.colour.defaults import DEFAULT_COLORMAP, direction_colormap
from napari_zarr_vectors.napari.colour.live import (
    colour_spec_of,
    layer_kind,
)
from napari_zarr_vectors.napari.conventions import DIRECTION, META

if TYPE_CHECKING:
    from napari.layers import Layer
    from napari.utils.events import Event

    from napari import Viewer

#: Key of the plugin's bar among a layer's overlays, and the layer attribute feeding it.
OVERLAY_KEY = "zv_colour_bar"
SOURCE_ATTRIBUTE = "_zv_colour_bar_source"

#: Key of the bar titles among the canvas overlays.
TITLE_KEY = "zv_colour_bar_titles"

#: Layer events that never change a colouring (mouse moves, status text, ...).
_QUIET_EVENTS = frozenset(
    {"status", "help", "cursor", "cursor_size", "interactive", "highlight", "thumbnail", "mode"}
)


class ColourBars:
    """The colour bars of one viewer (see the module docstring)."""

    def __init__(self, viewer: Viewer) -> None:
        # napari's layer models and Qt are imported once a viewer is there: importing what
        # opens a store (which installs the bars) loads neither (the Qt-free models, Pyramid
        # QA's, are importable without them)
        from napari.components.overlays import TextOverlay
        from qtpy.QtCore import QTimer

        self._viewer = weakref.ref(viewer)
        #: layer -> the bar it shows (layers whose bar another layer shows are not here)
        self.shown: dict[Layer, BarSpec] = {}
        self._timer = QTimer()
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self.refresh)
        self.titles = TextOverlay(position="top_right", font_size=10, box=True, visible=False)
        viewer.canvas.overlays[TITLE_KEY] = self.titles
        viewer.layers.events.inserted.connect(self._inserted)
        viewer.layers.events.removed.connect(self._removed)
        viewer.layers.events.moved.connect(self._later)
        for layer in viewer.layers:
            self._watch(layer)
        self.refresh()

    # -- following layers ------------------------------------------------------------------
    def _inserted(self, event: Event) -> None:
        self._watch(event.value)
        self._later()

    def _removed(self, event: Event) -> None:
        layer = event.value
        layer.events.disconnect(self._layer_event)
        for manager in _colour_managers(layer):
            manager.events.disconnect(self._later)
        self.shown.pop(layer, None)
        self._later()

    def _watch(self, layer: Layer) -> None:
        layer.events.connect(self._layer_event)
        for manager in _colour_managers(layer):
            manager.events.connect(self._later)

    def _layer_event(self, event: Event) -> None:
        if getattr(event, "type", None) not in _QUIET_EVENTS:
            self._later()

    def _later(self, *_: object) -> None:
        self._timer.start()

    # -- drawing -----------------------------------------------------------------------------
    def refresh(self) -> None:
        """Show the bar of every visible plugin layer coloured by a continuous value (one per
        distinct bar), hide the others, and title them."""
        viewer = self._viewer()
        if viewer is None:
            return
        self.shown = {}
        seen: set[tuple] = set()
        # napari tiles the top-right corner from the corner leftwards: the title, then the
        # bars of the layers in layer-list order
        for layer in viewer.layers:
            if META not in layer.metadata:
                continue
            if layer_kind(layer) == "tracks":
                _name_tracks_colormap(layer)
            spec = bar_spec(layer) if layer.visible else None
            if spec is not None and spec.key in seen:
                spec = None
            if spec is not None:
                seen.add(spec.key)
                self.shown[layer] = spec
            _show(layer, spec)
        labels = [
            f"{spec.label}\n{spec.range_text}"
            if len(self.shown) == 1
            else f"{spec.label}: {spec.range_text}  ({layer.name})"
            for layer, spec in self.shown.items()
        ]
        self.titles.text = "\n".join(labels)
        self.titles.visible = bool(labels)


def _name_tracks_colormap(layer: Layer) -> None:
    """Make a Tracks layer's ``colormap`` (the name napari's layer controls show) name the
    colormap it is drawn with: napari draws a feature with a ``colormaps_dict`` entry in that
    entry's colours and would still show its default colormap (``viridis`` over the
    direction palette). The name is the recorded choice's colormap, else the entry's own
    when napari knows it (the direction palette, registered by :func:`install_colour_bars`).
    A feature napari colours by ``colormap`` itself (one chosen in its controls) gets
    :data:`~napari_zarr_vectors.napari.colour.defaults.DEFAULT_COLORMAP` back from the direction
    palette."""
    cmap = layer.colormaps_dict.get(layer.color_by)
    if cmap is None:  # napari colours this feature by ``colormap``: not the direction palette
        if layer.colormap == DIRECTION:
            layer.colormap = DEFAULT_COLORMAP
        return
    spec = colour_spec_of(layer)
    if spec is not None and spec.feature == layer.color_by:
        name = None if spec.categorical else spec.colormap
    else:
        name = cmap.name if cmap.name == DIRECTION else None
    if name is not None and name != layer.colormap:
        layer.colormap = name


def _colour_managers(layer: Layer) -> list:
    managers = [colour_manager(layer, channel) for channel in ("face", "edge")]
    return [m for m in managers if m is not None and hasattr(m, "events")]


def _show(layer: Layer, spec: BarSpec | None) -> None:
    """Show ``spec`` as ``layer``'s bar (``None``: hide it)."""
    from napari.components.overlays import ColorBarOverlay
    from napari.layers.utils.color_manager import ColorManager

    own = napari_colour_bar(layer)
    if own is not None:
        if spec is not None:
            own.box = True
        own.visible = spec is not None
        return
    overlays = layer_overlays(layer)
    if spec is None:
        if OVERLAY_KEY in overlays:
            overlays[OVERLAY_KEY].visible = False
        return
    source = getattr(layer, SOURCE_ATTRIBUTE, None)
    if source is None:
        source = ColorManager()
        setattr(layer, SOURCE_ATTRIBUTE, source)
    source.continuous_colormap = spec.colormap
    source.contrast_limits = spec.contrast_limits
    if OVERLAY_KEY not in overlays:
        overlays[OVERLAY_KEY] = ColorBarOverlay(colormanager_attribute=SOURCE_ATTRIBUTE, box=True)
    overlays[OVERLAY_KEY].visible = True


_BARS: weakref.WeakKeyDictionary[Viewer, ColourBars] = weakref.WeakKeyDictionary()


def install_colour_bars(viewer: Viewer) -> ColourBars:
    """The colour bars of ``viewer`` (made on the first call)."""
    from napari.utils.colormaps import ensure_colormap

    bars = _BARS.get(viewer)
    if bars is None:
        # napari's Tracks controls list the colormaps napari knew when the layer came in
        ensure_colormap(direction_colormap())
        bars = _BARS[viewer] = ColourBars(viewer)
    return bars
