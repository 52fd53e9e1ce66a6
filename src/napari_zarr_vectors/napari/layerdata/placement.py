"""Where a store's layers put its coordinates: the napari side's one home of placement
(``docs/coordinates.md``).

Two spaces, one name per direction between them:

* the **stored space**, store column order: what the core reads and queries (geometry,
  chunk keys, bins, bounds);
* the **world**, napari axis order: what the layers show and what the camera, the dims
  point, picking and selection see.

A :class:`Placement` is the per-store value that maps one to the other: the store's axis
types (napari axis order, :func:`~..coords.napari_axis_order`), its level-0 layer scale,
the store -> world affine of its ``crs`` (the core's ``Store.placement``) and whether the
store is shown in its stored space (the Store panel's toggle, :func:`show_stored_space`).
Its directions are :meth:`~Placement.to_world_points` / :meth:`~Placement.to_store_points`,
:meth:`~Placement.to_world_box` / :meth:`~Placement.to_store_box`, and for layer data
:meth:`~Placement.to_layer_data` (stored space -> a layer's data) with its inverse through a
layer's own transforms, :func:`layer_data_to_world` / :func:`layer_data_to_store` (what
saving writes), and :func:`layer_world_positions` (what picking and selection measure).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

import napari_zarr_vectors as nzv
from napari_zarr_vectors.format.api import GeometryStore
from napari_zarr_vectors.format.world import affine_box
from napari_zarr_vectors.napari.conventions import LayerMeta
from napari_zarr_vectors.napari.coords import (
    layer_to_world,
    napari_affine,
    napari_axis_order,
    placed_order,
    space_axes,
    store_to_layer,
    to_store_order,
)
from napari_zarr_vectors.napari.types import LayerAttributes

if TYPE_CHECKING:
    from napari.layers import Layer

#: paths of the stores shown in their stored space (the Store panel's toggle)
_STORED_SPACE: set[str] = set()


def show_stored_space(path: str, on: bool) -> None:
    """Show the store at ``path`` in its stored space (``on``) or in the world (its
    placement applied, the default). The caller opens its layers again."""
    if on:
        _STORED_SPACE.add(str(path))
    else:
        _STORED_SPACE.discard(str(path))


@dataclass(frozen=True, eq=False)
class Placement:
    """Where one store's layers put its stored coordinates.

    ``axis_types`` are the store's (store order), ``scale`` is world units per layer data
    unit (store order: the level-0 bin shape on space axes, 1 on sliders), ``affine`` the
    ``(ndim + 1, ndim + 1)`` store -> world affine the layers carry (store order; ``None``
    when world coordinates are the stored ones: no ``crs``, positions baked, or
    ``stored_space``), ``stored_space`` whether the store is shown in its stored space.
    """

    axis_types: tuple[str, ...]
    scale: np.ndarray
    affine: np.ndarray | None = None
    stored_space: bool = False

    @classmethod
    def of(cls, store: GeometryStore, *, stored_space: bool | None = None) -> Placement:
        """The placement of ``store`` as its layers show it (``stored_space`` overrides the
        Store panel's toggle, :func:`show_stored_space`)."""
        if stored_space is None:
            stored_space = str(getattr(store, "path", "")) in _STORED_SPACE
        types = store_axis_types(store)
        affine = None if stored_space else _store_affine(store)
        return cls(types, _level0_scale(store, types), affine, bool(stored_space))

    # -- what the layers carry ------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.axis_types)

    @cached_property
    def world_order(self) -> np.ndarray:
        """The store column of each napari world axis (:func:`~..coords.napari_axis_order`)."""
        return napari_axis_order(self.axis_types)

    @cached_property
    def order(self) -> np.ndarray:
        """The store column of each napari axis of the layer data: :attr:`world_order`,
        permuted when the affine permutes axes (:func:`~..coords.placed_order`)."""
        return placed_order(self.world_order, self.affine)

    @property
    def space(self) -> np.ndarray:
        """Store columns of the space axes, store order."""
        return space_axes(self.axis_types)

    def napari_affine(self, ndim: int | None = None) -> np.ndarray | None:
        """The layers' napari ``affine`` (``None`` without a placement): rows in
        :attr:`world_order`, columns in :attr:`order`, identity on the leading axes a layer
        adds (``ndim``: the hidden time axis of tracks)."""
        if self.affine is None:
            return None
        return napari_affine(self.affine, self.world_order, self.order, ndim)

    @cached_property
    def _inverse(self) -> np.ndarray | None:
        """World (napari order) -> layer data order in store units: the inverse of
        :meth:`napari_affine`."""
        affine = self.napari_affine()
        return None if affine is None else np.linalg.inv(affine)

    @property
    def world_units_per_store_unit(self) -> float:
        """How long one stored unit is in the world (the geometric mean of the affine's
        singular values; 1 without one): a world pixel size divided by it is in stored units."""
        if self.affine is None:
            return 1.0
        values = np.linalg.svd(self.affine[:-1, :-1], compute_uv=False)
        values = values[values > 0]
        return float(np.exp(np.mean(np.log(values)))) if values.size else 1.0

    # -- points ---------------------------------------------------------------------------
    def to_world_points(self, positions: np.ndarray) -> np.ndarray:
        """``(N, ndim)`` stored positions (store order) -> world (napari order)."""
        pos = np.asarray(positions, np.float64).reshape(-1, self.ndim)
        if self.affine is not None:
            pos = pos @ self.affine[:-1, :-1].T + self.affine[:-1, -1]
        return pos[:, self.world_order]

    def to_store_points(self, world: np.ndarray) -> np.ndarray:
        """``(N, ndim)`` world positions (napari order) -> the stored space (store order)."""
        pos = np.asarray(world, np.float64).reshape(-1, self.ndim)
        if self._inverse is not None:
            pos = pos @ self._inverse[:-1, :-1].T + self._inverse[:-1, -1]
        return pos[:, np.argsort(self.order)]

    # -- boxes ----------------------------------------------------------------------------
    def to_world_box(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A box of the stored space (store order) -> the world box holding it (napari
        order; the smallest axis-aligned box around a rotated one)."""
        lo, hi = affine_box(self.affine, lo, hi)
        return lo[self.world_order], hi[self.world_order]

    def to_store_box(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A world box (napari order) -> the box of the stored space holding it (store
        order; exact for axis permutations, flips and scales)."""
        lo, hi = affine_box(self._inverse, lo, hi)
        back = np.argsort(self.order)
        return lo[back], hi[back]

    # -- layer data -----------------------------------------------------------------------
    def to_layer_data(self, positions: np.ndarray) -> np.ndarray:
        """Stored positions (store order) -> layer data (:attr:`order`, units of
        :attr:`scale`); the layers' scale and :meth:`napari_affine` take it to the world."""
        return store_to_layer(positions, self.scale, self.order)


def store_axis_types(store: GeometryStore) -> tuple[str, ...]:
    """The store's axis types (every axis a space axis for stores that do not say)."""
    types = getattr(store, "axis_types", None)
    if types is None or len(types) != int(store.ndim):
        return ("space",) * int(store.ndim)
    return tuple(str(t) for t in types)


def _level0_scale(store: GeometryStore, axis_types: Sequence[str]) -> np.ndarray:
    """World units per layer data unit, store order: for space axes the level-0 bin shape,
    else the chunk shape, else 1; 1 for non-space axes (a time slider steps one store
    time unit, a channel slider one channel)."""
    ndim = int(store.ndim)
    scale = np.ones(ndim)
    for candidate in (
        getattr(store.levels[0], "bin_shape", None) if store.levels else None,
        store.chunk_shape,
    ):
        if candidate is None:
            continue
        values = np.asarray(candidate, dtype=float).reshape(-1)
        if values.shape == (ndim,) and np.all(np.isfinite(values)) and np.all(values > 0):
            scale = values.copy()
            break
    scale[[t != "space" for t in axis_types]] = 1.0
    return scale


def _store_affine(store: GeometryStore) -> np.ndarray | None:
    """The core's ``Store.placement`` affine (store order), or ``None`` when it is the
    identity or the store's ``crs`` is malformed (a warning; the geometry still opens,
    unplaced)."""
    placement = getattr(store, "placement", None)
    if placement is None:
        return None
    try:
        affine = np.asarray(placement.affine, dtype=float)
    except nzv.ZVError as e:
        warnings.warn(f"{store.path}: world placement left out: {e}", stacklevel=3)
        return None
    ndim = int(store.ndim)
    if affine.shape != (ndim + 1, ndim + 1) or np.array_equal(affine, np.eye(ndim + 1)):
        return None
    return affine


# ------------------------------------------------------------------------------------------
# back from a layer (its own transforms: the layer may be a user's, with no store)
# ------------------------------------------------------------------------------------------


def layer_data_to_world(coords: np.ndarray, attributes: LayerAttributes) -> np.ndarray:
    """Layer data -> world coordinates (napari axis order), as napari draws the layer."""
    return layer_to_world(
        coords,
        attributes.get("scale"),
        attributes.get("translate"),
        attributes.get("rotate"),
        attributes.get("shear"),
        attributes.get("affine"),
    )


def layer_data_to_store(coords: np.ndarray, attributes: LayerAttributes) -> np.ndarray:
    """Layer data -> the positions a store of the layer holds (the inverse of the reader,
    what saving writes): the world, in store column order (:func:`layer_world_columns`)."""
    world = layer_data_to_world(coords, attributes)
    return to_store_order(world, layer_world_columns(attributes, world.shape[1]))


def layer_world_columns(attributes: LayerAttributes, nd: int) -> np.ndarray:
    """The store column of each napari world axis for ``nd`` axes: the layer's
    ``metadata["zarr_vectors"]["napari_order"]`` (``world_order`` when placed: its data order
    may be permuted), else space axes only (:func:`~..coords.napari_axis_order`)."""
    meta = LayerMeta.from_layer(attributes)
    order = meta.world_order if meta.world_affine is not None else meta.napari_order
    if order is not None and sorted(int(o) for o in order) == list(range(nd)):
        return np.asarray(order, dtype=np.int64)
    return napari_axis_order(("space",) * nd)


def layer_world_positions(layer: Layer) -> tuple[np.ndarray, np.ndarray]:
    """World coordinates (napari order, spatial axes only) of every drawable vertex, and the
    feature row of each: Points rows, Tracks vertices, Vectors start and end, Shapes vertices,
    Surface vertices. Hidden Points (``shown`` False) are left out. A layer ``affine`` (a
    store's world placement) is applied after the scale."""
    data, rows = _drawn_vertices(layer)
    return _placed_to_world(layer_placement(layer), data), rows


def layer_placement(layer: Layer) -> tuple:
    """``(scale, translate, affine)`` of ``layer``, as tuples (a hashable value, read on the
    UI thread, for :func:`tracks_rows_world` on a worker)."""
    matrix = getattr(getattr(layer, "affine", None), "affine_matrix", None)
    affine = None if matrix is None else tuple(map(tuple, np.asarray(matrix, float).tolist()))
    scale = tuple(np.asarray(layer.scale, float).tolist())
    return scale, tuple(np.asarray(layer.translate, float).tolist()), affine


def tracks_rows_world(placement: tuple, rows: np.ndarray) -> np.ndarray:
    """World coordinates (as :func:`layer_world_positions`) of Tracks ``rows``
    (``track_id, t, axes...`` in a layer's data order) that the layer does not hold, an
    overview fill's, by the layer's :func:`layer_placement`."""
    return _placed_to_world(placement, np.asarray(rows, dtype=np.float64)[:, 2:])


def _placed_to_world(placement: tuple, data: np.ndarray) -> np.ndarray:
    scale, translate, affine = placement
    matrix = None if affine is None else np.asarray(affine)
    return layer_to_world(data, np.asarray(scale), np.asarray(translate), affine=matrix)


def _drawn_vertices(layer: Layer) -> tuple[np.ndarray, np.ndarray]:
    """The layer data of :func:`layer_world_positions` (spatial axes only) and the row of
    each."""
    kind = type(layer).__name__.lower()
    nd = len(layer.scale)
    if kind == "points":
        rows = np.flatnonzero(np.asarray(layer.shown, bool))
        return np.asarray(layer.data, dtype=np.float64)[rows], rows
    if kind == "tracks":
        data = np.asarray(layer.data, dtype=np.float64)[:, 2:]
        return data, np.arange(len(data))
    if kind == "vectors":
        data = np.asarray(layer.data, dtype=np.float64)
        if not len(data):
            return np.empty((0, nd)), np.empty(0, np.int64)
        pts = np.concatenate([data[:, 0], data[:, 0] + data[:, 1]])
        return pts, np.tile(np.arange(len(data)), 2)
    if kind == "shapes":
        shapes = [np.asarray(s, dtype=np.float64) for s in layer.data]
        if not shapes:
            return np.empty((0, nd)), np.empty(0, np.int64)
        return np.concatenate(shapes), np.repeat(np.arange(len(shapes)), [len(s) for s in shapes])
    if kind == "surface":
        vertices = np.asarray(layer.data[0], dtype=np.float64)
        return vertices, np.arange(len(vertices))
    return np.empty((0, nd)), np.empty(0, np.int64)
