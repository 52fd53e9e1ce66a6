"""Putting new arrays into live layers, and the colouring that survives it.

A level-of-detail refresh replaces a layer's data and features on the UI thread
(:func:`swap`, inside :func:`batched`: events and re-slicing held back, one refresh after).
Before a swap the controller reads the layer's colouring (:func:`capture`); if the user
changed it since the last swap, that choice (:class:`ColourMemory`) is re-applied after
every swap while its feature exists, else the builder's default colouring is, with the
contrast limits first used for that feature. napari internals are used only through
:mod:`._napari_compat`.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._napari_compat import (
    colour_feature,
    emit_data_changed,
    held_back,
    set_points_data_quietly,
    uniform_symbols_fast,
    unlink_tracks_colour,
    vectorised_track_validation,
)
from .layers import META


@dataclass(frozen=True)
class _Colour:
    """The colouring of one colour channel of a layer (face, edge, tracks, surface)."""

    mode: str  # "direct", "cycle", "colormap"
    feature: str | None
    colormap: str | None
    contrast_limits: tuple[float, float] | None
    uniform: tuple[float, ...] | None  # the one direct colour, when all rows share it
    fingerprint: int | None  # direct per-row colours: hash of the array


@dataclass(frozen=True)
class _LayerColour:
    channel: _Colour | None
    size: float | None = None


@dataclass
class ColourMemory:
    applied: _LayerColour  # what the last swap left on the layer
    intent: _Colour | None = None  # the colouring the user chose (None: the builder's)
    size: float | None = None  # the point size the user chose (None: the builder's)
    limits: dict[str, Any] = field(default_factory=dict)  # first contrast limits per feature

    def observe(self, before: _LayerColour) -> None:
        """Record what the user changed since the last swap (``before`` vs ``applied``)."""
        if before.channel != self.applied.channel:
            channel = before.channel
            # per-row direct colours cannot be carried to other rows: the builder's then
            reusable = channel is not None and (channel.mode != "direct" or channel.uniform)
            self.intent = channel if reusable else None
        if before.size is not None and before.size != self.applied.size:
            self.size = before.size


def _kind(layer: Any) -> str:
    return type(layer).__name__.lower()


def _channel_attr(kind: str) -> str | None:
    return {"points": "face", "vectors": "edge", "shapes": "edge"}.get(kind)


def capture(layer: Any) -> _LayerColour:
    kind = _kind(layer)
    attr = _channel_attr(kind)
    if attr is not None:
        size = None
        if kind == "points":
            sizes = np.asarray(layer.size, dtype=float)
            size = float(sizes[0]) if sizes.size else float(layer.current_size)
        return _LayerColour(_capture_manager(layer, attr), size)
    if kind == "tracks":
        return _LayerColour(
            _Colour("colormap", layer.color_by, str(layer.colormap), None, None, None)
        )
    if kind == "surface":
        cmap = layer.colormap
        feature = layer.metadata.get(META, {}).get("colour_by")
        return _LayerColour(
            _Colour(
                "colormap",
                feature,
                getattr(cmap, "name", str(cmap)),
                tuple(float(v) for v in layer.contrast_limits),
                None,
                None,
            )
        )
    return _LayerColour(None)


def _capture_manager(layer: Any, attr: str) -> _Colour:
    mode = str(getattr(layer, f"{attr}_color_mode"))
    feature = colour_feature(layer, attr)
    cmap = getattr(layer, f"{attr}_colormap", None)
    limits = getattr(layer, f"{attr}_contrast_limits", None)
    uniform = fingerprint = None
    if mode == "direct":
        colours = np.asarray(getattr(layer, f"{attr}_color"), dtype=np.float32).reshape(-1, 4)
        if len(colours) and np.all(colours == colours[0]):
            uniform = tuple(float(c) for c in colours[0])
        elif len(colours):
            fingerprint = hash(colours.tobytes())
    return _Colour(
        mode,
        feature if mode != "direct" else None,
        getattr(cmap, "name", None),
        None if limits is None or mode == "direct" else tuple(float(v) for v in limits),
        uniform,
        fingerprint,
    )


def swap(layer: Any, data: Any, kwargs: dict, memory: ColourMemory) -> None:
    """Replace ``layer``'s data and features with a builder's output, then colour it as the
    user chose (``memory.intent``) when that still applies to the new features, else as the
    builder proposes (with the contrast limits first used for that feature, so colours stay
    put across refreshes). Point sizes stay what they were."""
    kind = _kind(layer)
    features = kwargs.get("features", {})
    intent = memory.intent
    chosen = intent  # what the user chose, even when its feature is missing here
    if intent is not None and intent.mode != "direct" and intent.feature not in features:
        intent = None  # e.g. a coarse level without that attribute: the builder's default
    attr = _channel_attr(kind)
    if attr is not None:
        current = _capture_manager(layer, attr)
        if current.feature is not None and current.feature not in features:
            # napari would warn that the colour-by feature was dropped: unlink it first
            setattr(layer, f"{attr}_color", "white")
        with uniform_symbols_fast() if kind == "points" else nullcontext():
            if kind == "points":
                set_points_data_quietly(layer, data)  # batched() emits the data event
            else:
                layer.data = data
        layer.features = features
        target = intent if intent is not None else _builder_colour(attr, kwargs, memory)
        _apply_colour(layer, attr, target)
        if kind == "points":
            # the user's size if they changed it, else the builder's size for this level
            size = memory.size if memory.size is not None else kwargs.get("size")
            if size is not None:
                size = float(size)
                sizes = np.asarray(layer.size, dtype=float)
                if sizes.size and not np.all(sizes == size):
                    layer.size = size
                layer.current_size = size
        return
    if kind == "tracks":
        unlink_tracks_colour(layer)  # napari resets features on a data swap
        with vectorised_track_validation():
            layer.data = data
        layer.features = features
        for name, cmap in (kwargs.get("colormaps_dict") or {}).items():
            layer.colormaps_dict.setdefault(name, cmap)
        colour_by = intent.feature if intent is not None else kwargs.get("color_by", "track_id")
        if colour_by not in layer.properties_to_color_by:
            colour_by = "track_id"
        layer.color_by = colour_by
        if intent is not None and intent.colormap and layer.colormap != intent.colormap:
            layer.colormap = intent.colormap
        return
    if kind == "surface":
        vertices, faces, values = data
        meta = kwargs.get("metadata", {}).get(META, {})
        name = intent.feature if intent is not None else meta.get("colour_by")
        if name is not None and name in features:
            values = np.asarray(features[name], dtype=np.float32)
        layer.data = (vertices, faces, values)
        layer.features = features
        cmap = chosen.colormap if chosen is not None else None  # a colormap suits any feature
        if cmap and getattr(layer.colormap, "name", None) != cmap:
            layer.colormap = cmap
        if intent is not None and intent.contrast_limits is not None:
            layer.contrast_limits = intent.contrast_limits
        elif name is not None:
            limits = memory.limits.setdefault(name, kwargs.get("contrast_limits"))
            if limits is not None:
                layer.contrast_limits = limits
        layer.metadata.setdefault(META, {})["colour_by"] = name
        return
    layer.data = data
    if hasattr(layer, "features"):
        layer.features = features


def _builder_colour(attr: str, kwargs: dict, memory: ColourMemory) -> Any:
    """The colouring a builder proposes: a :class:`_Colour` for a colour-by feature (with
    the contrast limits first seen for it), else the direct colour(s) as given."""
    colour = kwargs.get(f"{attr}_color")
    features = kwargs.get("features", {})
    if isinstance(colour, str) and colour in features:
        cmap = kwargs.get(f"{attr}_colormap")
        limits = kwargs.get(f"{attr}_contrast_limits")
        if limits is not None:
            limits = memory.limits.setdefault(colour, tuple(float(v) for v in limits))
        return _Colour("colormap", colour, getattr(cmap, "name", cmap), limits, None, None)
    return colour


def _apply_colour(layer: Any, attr: str, target: Any) -> None:
    """Colour ``layer``'s ``attr`` channel: a :class:`_Colour` (feature or uniform), or
    direct colour(s) (a name or an ``(N, 4)`` array); changes only what differs."""
    if target is None:
        return
    if not isinstance(target, _Colour):
        setattr(layer, f"{attr}_color", target)
        return
    if target.mode == "direct":
        if target.uniform is not None:
            setattr(layer, f"{attr}_color", np.asarray(target.uniform, dtype=np.float32))
        return
    current = _capture_manager(layer, attr)
    if current.feature != target.feature or current.mode != target.mode:
        setattr(layer, f"{attr}_color", target.feature)
        setattr(layer, f"{attr}_color_mode", target.mode)
    if target.mode != "colormap":
        return
    if target.colormap and current.colormap != target.colormap:
        setattr(layer, f"{attr}_colormap", target.colormap)
    if target.contrast_limits is not None:
        limits = getattr(layer, f"{attr}_contrast_limits", None)
        if limits is None or tuple(float(v) for v in limits) != tuple(target.contrast_limits):
            setattr(layer, f"{attr}_contrast_limits", target.contrast_limits)


#: events re-emitted once after a batched swap, per layer kind (listeners other than the
#: canvas: napari's dims/extent bookkeeping, layer controls, the Tracks shaders)
_AFTER_SWAP = {
    "points": ("features",),
    "vectors": ("features", "edge_color_mode"),
    "shapes": ("features",),
    "tracks": ("properties", "rebuild_tracks", "rebuild_graph", "color_by", "colormap"),
    "surface": ("features", "colormap", "contrast_limits"),
}


@contextmanager
def batched(layer: Any):
    """Swap data and colours with the layer's events and re-slicing held back, then refresh
    once: every setter would otherwise re-slice the layer and rebuild its canvas visual
    (napari's Points visual converts every shown point's symbol to text on each update)."""
    kind = _kind(layer)
    with held_back(layer):
        yield
    layer.refresh()
    emit_data_changed(layer)
    for name in _AFTER_SWAP.get(kind, ()):
        emitter = getattr(layer.events, name, None)
        if emitter is not None:
            emitter()


def swap_empty(layer: Any, store: Any) -> None:
    """No data in view: an empty layer (Tracks cannot be empty: one invisible vertex)."""
    kind = _kind(layer)
    ndim = int(layer.ndim)
    if kind == "tracks":
        lo = np.asarray(store.bounds[0], dtype=float)[::-1] / np.asarray(layer.scale[1:])
        columns = {name: np.zeros(1) for name in layer.features.columns if name != "track_id"}
        colour_by = layer.color_by
        unlink_tracks_colour(layer)
        layer.data = np.concatenate([[0.0, 0.0], lo]).reshape(1, -1)
        layer.features = columns
        if colour_by in layer.properties_to_color_by:
            layer.color_by = colour_by
        return
    if kind == "surface":
        layer.data = (np.empty((0, ndim)), np.empty((0, 3), np.int64), np.empty(0))
        return
    columns = {}
    if hasattr(layer, "features"):
        columns = {name: layer.features[name].to_numpy()[:0] for name in layer.features.columns}
    if kind == "vectors":
        layer.data = np.empty((0, 2, ndim))
    elif kind == "shapes":
        layer.data = []
    else:
        layer.data = np.empty((0, ndim))
    if hasattr(layer, "features"):
        layer.features = columns  # the same (empty) columns: readers of features keep working
