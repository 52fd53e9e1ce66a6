"""Putting new arrays into live layers.

A level-of-detail refresh replaces a layer's data and features on the UI thread
(:func:`swap`, inside :func:`batched`: events and re-slicing held back, one refresh after).
The colouring that survives a swap (the user's colour-by choice, what they set through
napari, the builder's default) is :mod:`.colour`'s job: :func:`swap` calls it before and
after the new data goes in. napari internals are used only through :mod:`._napari_compat`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, cast

import numpy as np

from napari_zarr_vectors.napari._napari_compat import (
    emit_data_changed,
    ensure_tracks_coloured,
    held_back,
    lazy_track_index,
    set_points_data_quietly,
    set_tracks_data_quietly,
    thumbnail_kept,
    uniform_symbols_fast,
    unlink_tracks_colour,
    vectorised_track_validation,
)
from napari_zarr_vectors.napari.colour.live import (
    ColourMemory,
    capture,
    recolour,
    release_colour,
    surface_values,
)
from napari_zarr_vectors.napari.colour.live import layer_kind as _kind
from napari_zarr_vectors.napari.coords import store_to_layer
from napari_zarr_vectors.napari.layerdata.placement import Placement
from napari_zarr_vectors.napari.lod import line_draw
from napari_zarr_vectors.napari.lod.settings import get_settings
from napari_zarr_vectors.napari.lod.viewer_layers import make_layer

if TYPE_CHECKING:
    from napari.layers import Layer

    from napari_zarr_vectors.format.api import GeometryStore
    from napari_zarr_vectors.napari.types import LayerData


def new_layer(
    data: LayerData,
    kwargs: dict,
    kind: str,
    add: Callable[[Layer], object],
    fill: Callable[[Layer], object] | None = None,
) -> Layer:
    """A layer of a builder's output, given to ``add`` (which puts it in the viewer). On
    the fast draw path a Tracks layer of more than one row is made from its first row
    (napari's constructor processes every row twice: 6.5 s on the UI thread for 3.3M
    vertices) and, once added, takes its rows by ``fill(layer)``: by default the fast
    :func:`swap` with a new colour memory."""
    line = kind == "tracks" and get_settings().draw_path == "fast" and len(data) > 1
    if not line:
        layer = make_layer(data, kwargs, kind)
        add(layer)
        return layer
    layer = make_layer(data[:1], first_rows(kwargs), kind)
    add(layer)
    if fill is not None:
        fill(layer)
        return layer
    memory = ColourMemory(applied=capture(layer))
    with batched(layer):
        swap(layer, data, kwargs, memory)
    memory.applied = capture(layer)
    return layer


def first_rows(kwargs: dict, n: int = 1) -> dict:
    """``kwargs`` of a layer builder with the features cut to their first ``n`` rows."""
    features = {name: np.asarray(v)[:n] for name, v in kwargs.get("features", {}).items()}
    return {**kwargs, "features": features}


def swap(layer: Layer, data: LayerData, kwargs: dict, memory: ColourMemory) -> None:
    """Replace ``layer``'s data and features with a builder's output, then colour it
    (:func:`.live.recolour`: the user's choice where it still applies, else the builder's).
    Point sizes stay what they were. Tracks take the fast draw path unless the settings say
    ``draw_path="napari"`` (:func:`._napari_compat.set_tracks_data_quietly`: the same
    fields, without napari's per-vertex work a swap does not need)."""
    kind = _kind(layer)
    features = kwargs.get("features", {})
    release_colour(layer, features)
    if kind == "points":
        with uniform_symbols_fast():  # batched() emits the data event
            set_points_data_quietly(layer, cast("np.ndarray", data))  # one array (LayerData)
    elif kind == "tracks":
        rows = cast("np.ndarray", data)  # one array (LayerData)
        if get_settings().draw_path == "fast" and set_tracks_data_quietly(layer, rows, features):
            recolour(layer, kwargs, memory)
            ensure_tracks_coloured(layer)
            line_draw.follow(layer)  # its rows are drawn when batched() ends
            return
        line_draw.release(layer)
        with vectorised_track_validation(), lazy_track_index():
            layer.data = data
    elif kind == "surface":
        # (vertices, faces[, values]) (LayerData)
        layer.data = surface_values(cast("tuple", data), kwargs, memory)
    else:
        layer.data = data
    if hasattr(layer, "features"):
        layer.features = features
    recolour(layer, kwargs, memory)


#: events re-emitted once after a batched swap, per layer kind (listeners other than the
#: canvas: napari's dims/extent bookkeeping, layer controls, the Tracks shaders)
_AFTER_SWAP = {
    "points": ("features",),
    "vectors": ("features", "edge_color_mode"),
    "shapes": ("features",),
    "tracks": ("properties", "rebuild_tracks", "rebuild_graph", "color_by", "colormap"),
    "surface": ("features", "colormap", "contrast_limits"),
}

#: what a layer drawn by a vispy line (:mod:`.line_draw`) does not re-emit: napari's own
#: visual would take every row again (the line takes them from :func:`batched`)
_LINE_DRAWS = ("rebuild_tracks", "rebuild_graph")


@contextmanager
def batched(layer: Layer) -> Iterator[None]:
    """Swap data and colours with the layer's events and re-slicing held back, then refresh
    once: every setter would otherwise re-slice the layer and rebuild its canvas visual
    (napari's Points visual converts every shown point's symbol to text on each update).
    A Tracks layer drawn by a vispy line (:mod:`.line_draw`) gives the line its new rows
    and colours instead of napari's visual, and keeps its layer-list thumbnail
    (:func:`._napari_compat.thumbnail_kept`)."""
    kind = _kind(layer)
    with held_back(layer):
        yield
    drawing = line_draw.drawing_of(layer)
    with thumbnail_kept(layer) if drawing is not None else nullcontext():
        layer.refresh()
    emit_data_changed(layer)
    for name in _AFTER_SWAP.get(kind, ()):
        if drawing is not None and name in _LINE_DRAWS:
            continue
        emitter = getattr(layer.events, name, None)
        if emitter is not None:
            emitter()
    if drawing is not None:
        drawing.sync_rows()


def swap_empty(layer: Layer, store: GeometryStore) -> None:
    """No data in view: an empty layer (Tracks cannot be empty: one invisible vertex)."""
    kind = _kind(layer)
    ndim = int(layer.ndim)
    if kind == "tracks":
        order = Placement.of(store).order
        scale = np.ones(len(order))
        scale[order] = layer.scale[-len(order) :]  # the layer's scale, store order
        lo = store_to_layer(store.bounds[0], scale, order)[0]
        head = [0.0] * (1 + ndim - len(order))  # track id, and time when the store has none
        columns = {name: np.zeros(1) for name in layer.features.columns if name != "track_id"}
        colour_by = layer.color_by
        unlink_tracks_colour(layer)
        layer.data = np.concatenate([head, lo]).reshape(1, -1)
        layer.features = columns
        if colour_by in layer.properties_to_color_by:
            layer.color_by = colour_by
        return
    columns = {}
    if hasattr(layer, "features"):
        columns = {name: layer.features[name].to_numpy()[:0] for name in layer.features.columns}
    if kind == "surface":
        layer.data = (np.empty((0, ndim)), np.empty((0, 3), np.int64), np.empty(0))
        layer.features = columns  # no rows left (a feature row per vertex)
        return
    if kind == "vectors":
        layer.data = np.empty((0, 2, ndim))
    elif kind == "shapes":
        layer.data = []
    else:
        layer.data = np.empty((0, ndim))
    if hasattr(layer, "features"):
        layer.features = columns  # the same (empty) columns: readers of features keep working
