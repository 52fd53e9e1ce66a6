"""The selected objects of a store: shared state, their highlight on the canvas, their box.

No Qt here (napari layers only). Each browse target (an open store,
:func:`~napari_zarr_vectors.napari.browse.targets.target_for`) has one
:class:`ObjectSelection` (:func:`selection_for`): object ids plus listeners, set by the
*Object table* dock (selected rows) and by a click on the canvas (the pick of
:func:`~napari_zarr_vectors.napari.browse.pick.pick_at`).

:class:`SelectionHighlight` draws the selected objects over the store's layers: a Points
layer of the vertices those layers hold for them (world coordinates, so every layer kind
highlights alike), rebuilt after each level-of-detail refresh. Its metadata names the store
and the ids (``metadata["zarr_vectors_selection"]``); it carries no ``zarr_vectors`` block,
so the browse widgets never take it for a store layer.

*Show only the selection* (:func:`show_only`) puts its ids in the store's shared filters;
*dim the rest* (:func:`dim`) draws the store's layers faintly, so that the selected objects,
drawn whole over them, stand out.

:func:`objects_world_box` reads the selected objects through the store's read by object ids
(every chunk their manifests name, whatever the view) and returns their world box, which
:func:`fit_camera` frames.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from napari_zarr_vectors.format.distinct import distinct
from napari_zarr_vectors.napari.browse.filters import IdFilter
from napari_zarr_vectors.napari.browse.static_filter import layer_object_ids
from napari_zarr_vectors.napari.conventions import meta_of
from napari_zarr_vectors.napari.layerdata.placement import Placement, layer_world_positions
from napari_zarr_vectors.napari.lod.camera import fitting_zoom
from napari_zarr_vectors.napari.lod.viewer_layers import add_layer, remove_layers

if TYPE_CHECKING:
    from napari.layers import Layer, Points
    from napari.viewer import Viewer

    from napari_zarr_vectors.format.api import GeometryStore
    from napari_zarr_vectors.napari.browse.filters import FilterState
    from napari_zarr_vectors.napari.browse.targets import BrowseTarget

#: Colour of the selection highlight.
HIGHLIGHT = (1.0, 0.25, 1.0, 1.0)

#: ``metadata`` key of the highlight layer.
SELECTION_META = "zarr_vectors_selection"

#: Highlight points are this fraction of the store's largest extent across.
POINT_FRACTION = 1 / 250

#: Opacity factor of the layers *dim the rest* leaves behind the selection.
DIM_OPACITY = 0.2

#: The label the selection's id filter carries in the filter widgets.
FILTER_LABEL = "selected objects"

#: The highlight draws at most this many vertices (every k-th vertex beyond).
MAX_HIGHLIGHT_POINTS = 200_000


class ObjectSelection:
    """The selected object ids of one target and who to tell when they change.

    Listeners get ``(ids, source)``: ``source`` names who changed the selection (a widget
    ignores its own changes)."""

    def __init__(self) -> None:
        self.ids = np.empty(0, np.int64)
        self._listeners: list[Callable[[np.ndarray, object], None]] = []

    def set(self, object_ids: Sequence[int] | np.ndarray, source: object = None) -> None:
        ids = distinct(np.asarray(object_ids, np.int64).reshape(-1))
        if np.array_equal(ids, self.ids):
            return
        self.ids = ids
        for callback in list(self._listeners):
            callback(ids, source)

    def clear(self, source: object = None) -> None:
        self.set(np.empty(0, np.int64), source)

    def connect(self, callback: Callable[[np.ndarray, object], None]) -> None:
        if callback not in self._listeners:
            self._listeners.append(callback)

    def disconnect(self, callback: Callable[[np.ndarray, object], None]) -> None:
        if callback in self._listeners:
            self._listeners.remove(callback)


_selections: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def selection_for(target: BrowseTarget) -> ObjectSelection:
    """The :class:`ObjectSelection` of ``target`` (created on first use)."""
    selection = _selections.get(target)
    if selection is None:
        selection = ObjectSelection()
        _selections[target] = selection
    return selection


class SelectionHighlight:
    """Keeps a highlight layer of ``target``'s selected objects in ``viewer``: added when
    something is selected, rebuilt when the selection changes and after every refresh of
    the target's layers, removed when the selection is empty. One per target
    (:func:`highlight_for`)."""

    def __init__(self, viewer: Viewer, target: BrowseTarget) -> None:
        self.viewer = viewer
        self._target = weakref.ref(target)
        self.layer: Points | None = None
        self.selection = selection_for(target)
        self.selection.connect(self._changed)
        refreshed = getattr(getattr(target, "events", None), "refreshed", None)
        if refreshed is not None:
            refreshed.connect(self._refreshed)

    def _changed(self, ids: np.ndarray, source: object) -> None:
        self.update()

    def _refreshed(self, *_: object) -> None:
        if self.selection.ids.size:
            self.update()

    def update(self) -> None:
        target = self._target()
        ids = self.selection.ids
        if target is None or not ids.size:
            remove_layers(self.viewer, [self.layer])
            self.layer = None
            return
        points, shown = selected_vertices(target.layers, ids)
        if len(points) > MAX_HIGHLIGHT_POINTS:  # every k-th: napari draws it without a stall
            step = -(-len(points) // MAX_HIGHLIGHT_POINTS)
            points, shown = points[::step], shown[::step]
        meta = {SELECTION_META: {"path": str(target.store.path), "object_ids": ids.tolist()}}
        name = f"{target.store.name} selection"
        if self.layer is None or self.layer not in self.viewer.layers:
            from napari.layers import Points

            self.layer = Points(
                points,
                name=name,
                size=_point_size(target.store),
                face_color=np.asarray(HIGHLIGHT, np.float32),
                border_width=0.0,
                blending="translucent",  # additive turns dense highlights white
                features={"object_id": shown},
                metadata=meta,
                units=_units(target.layers, points.shape[1]),
            )
            add_layer(self.viewer, self.layer)
            return
        self.layer.data = points
        self.layer.features = {"object_id": shown}
        self.layer.metadata = meta
        self.layer.name = name


def show_only(filters: FilterState, ids: np.ndarray, on: bool) -> None:
    """Put ``ids`` in ``filters`` as its id filter (``on`` and some ids), or take the
    selection's id filter out."""
    if on and len(ids):
        filters.id_filter = IdFilter(tuple(np.asarray(ids, np.int64).tolist()), FILTER_LABEL)
    elif filters.id_filter is not None and filters.id_filter.label == FILTER_LABEL:
        filters.id_filter = None


def dim(layers: Sequence[Layer], on: bool) -> None:
    """Draw ``layers`` at :data:`DIM_OPACITY` of their opacity (``on``), or as before. The
    opacity before dimming is kept in the layer's metadata block, so dimming twice does not
    compound and undimming restores exactly."""
    for layer in layers:
        meta = meta_of(layer)
        if meta is None:
            continue
        if on and "undimmed_opacity" not in meta:
            meta["undimmed_opacity"] = float(layer.opacity)
            layer.opacity = float(layer.opacity) * DIM_OPACITY
        elif not on and "undimmed_opacity" in meta:
            layer.opacity = meta.pop("undimmed_opacity")


_highlights: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def highlight_for(viewer: Viewer, target: BrowseTarget) -> SelectionHighlight:
    """The :class:`SelectionHighlight` of ``target`` in ``viewer`` (created on first use)."""
    highlight = _highlights.get(target)
    if highlight is None or highlight.viewer is not viewer:
        highlight = SelectionHighlight(viewer, target)
        _highlights[target] = highlight
    return highlight


def selected_vertices(layers: Sequence[Layer], ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World positions (napari order) of the vertices ``layers`` draw for objects ``ids``,
    and the object id of each."""
    parts, owners = [], []
    for layer in layers:
        object_ids = layer_object_ids(layer)
        if object_ids is None:
            continue
        pts, rows = layer_world_positions(layer)
        owner = object_ids[rows]
        keep = np.isin(owner, ids)
        parts.append(pts[keep])
        owners.append(owner[keep].astype(np.int64))
    if not parts:
        return np.empty((0, 3)), np.empty(0, np.int64)
    width = max(p.shape[1] for p in parts)
    parts = [p for p in parts if p.shape[1] == width]
    owners = [o for o, p in zip(owners, parts, strict=False) if p.shape[1] == width]
    return np.concatenate(parts), np.concatenate(owners)


def _units(layers: Sequence[Layer], ndim: int) -> tuple | None:
    """The units of the last ``ndim`` axes of the store's layers (``None``: none known), so
    that napari renders the highlight in the same units as them."""
    for layer in layers:
        units = getattr(layer, "units", None)
        if units is not None and len(units) >= ndim:
            return tuple(units)[-ndim:]
    return None


def _point_size(store: GeometryStore) -> float:
    lo, hi = store.bounds
    extent = float(np.max(np.asarray(hi, np.float64) - np.asarray(lo, np.float64)))
    return max(extent * POINT_FRACTION, 1e-9)


def objects_world_box(
    store: GeometryStore, object_ids: Sequence[int] | np.ndarray, level: int = 0
) -> tuple[np.ndarray, np.ndarray] | None:
    """The world box (napari axis order) of the vertices of ``object_ids`` at ``level``,
    read through the store's read by object ids; ``None`` when they have none there."""
    ids = np.asarray(object_ids, np.int64)
    geometry = store.read(level=level, object_ids=ids)
    positions = np.asarray(geometry.positions, np.float64)
    if geometry.vertex_object_ids is not None:
        positions = positions[np.isin(geometry.vertex_object_ids, ids)]
    positions = positions[np.isfinite(positions).all(axis=1)]
    if not len(positions):
        return None
    return Placement.of(store).to_world_box(positions.min(axis=0), positions.max(axis=0))


def fit_camera(viewer: Viewer, lo: np.ndarray, hi: np.ndarray, margin: float = 0.1) -> None:
    """Centre the camera on the world box ``lo``-``hi`` (napari order of the last axes) and
    zoom so that the box as the camera sees it (its projection on the screen in 3-D,
    :func:`~..lod.camera.fitting_zoom`) fills the canvas but a ``margin``: a small object
    is zoomed in on, whatever the zoom was. A 2-D view also moves its slice to the box's
    middle. A box of no size on screen (one vertex) is centred at the current zoom."""
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    ndim = viewer.dims.ndim
    k = min(len(lo), ndim)
    full_lo = np.asarray(viewer.dims.point, np.float64).copy()
    full_hi = full_lo.copy()
    full_lo[ndim - k :], full_hi[ndim - k :] = lo[-k:], hi[-k:]
    centre = (full_lo + full_hi) / 2
    displayed = list(viewer.dims.displayed)
    for axis in range(ndim - k, ndim):
        if axis not in displayed:
            viewer.dims.set_point(axis, centre[axis])
    zoom = fitting_zoom(viewer, full_lo, full_hi, margin)
    viewer.scene.camera.center = tuple(centre[displayed])
    if zoom is not None:
        viewer.scene.camera.zoom = zoom
