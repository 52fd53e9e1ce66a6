"""Store facts the layer builders need (:class:`~napari_zarr_vectors.napari.layerdata.build.StoreInfo`) and the layer scale.

Shared by the reader, the level-of-detail loader and controller, and the widgets; it
imports nothing of theirs, so every napari-side module can depend on it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

import napari_zarr_vectors as nzv
from napari_zarr_vectors.format.geometry import PATH_TYPES
from napari_zarr_vectors.format.world import affine_box
from napari_zarr_vectors.napari.coords import napari_affine, napari_axis_order, placed_order
from napari_zarr_vectors.napari.layerdata.build import StoreInfo
from napari_zarr_vectors.napari.types import ZVStore


def store_info(store: ZVStore, level: int, *, lod: bool = False, objects: bool = True) -> StoreInfo:
    """The store facts the layer builders need (metadata, object attributes, groups).

    ``lod``: for level-of-detail layers, whose level changes with the view: names without
    the level, the Shapes-or-fast decision made once for the whole store (see
    :attr:`~napari_zarr_vectors.napari.layerdata.build.StoreInfo.shapes_hint`), and the same feature columns at every level --
    a coarse level that keeps level-0 object ids but stores no object attributes or groups
    (groups live at level 0 in every known writer) gets level 0's. ``objects=False`` leaves
    object attributes and groups out (the bounds box needs none, and reading them decodes
    the object index).
    """
    lo, hi = store.bounds
    object_attributes = _optional(store.object_attributes, level) if objects else {}
    groups = _optional(store.groups, level) if objects else {}
    if objects and lod and level != 0 and _keeps_object_ids(store, level):
        object_attributes = object_attributes or _optional(store.object_attributes, 0)
        groups = groups or _optional(store.groups, 0)
    return StoreInfo(
        path=str(store.path),
        name=str(store.name),
        geometry_type=str(store.geometry_type),
        axes=tuple(str(a) for a in store.axes),
        axis_types=_axis_types(store),
        units=tuple(store.units) if store.units is not None else (None,) * store.ndim,
        bounds=(np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)),
        level=int(level),
        scale=layer_scale(store),
        affine=world_affine(store),
        object_attributes=object_attributes,
        groups=groups,
        lod=lod,
        shapes_hint=_shapes_hint(store) if lod else None,
        level_vertex_count=_level_vertex_count(store, level) if lod else None,
        shared_vertex_attributes=_shared_vertex_attributes(store) if lod else (),
        n_objects=_object_count(store, level) if objects else 0,
    )


def _shared_vertex_attributes(store: ZVStore) -> tuple[str, ...]:
    """Vertex attribute names every level stores (in level 0's order)."""
    try:
        per_level = [list(store.vertex_attribute_names(lv.index)) for lv in store.levels]
    except (nzv.ZVError, AttributeError, KeyError):
        return ()
    if not per_level:
        return ()
    return tuple(n for n in per_level[0] if all(n in names for names in per_level[1:]))


def _level_vertex_count(store: ZVStore, level: int) -> int | None:
    try:
        count = store.level(level).vertex_count
    except (KeyError, AttributeError):
        return None
    return int(count) if count else None


def _keeps_object_ids(store: ZVStore, level: int) -> bool:
    try:
        return bool(store.level(level).preserves_object_ids)
    except (KeyError, AttributeError):
        return False


def _shapes_hint(store: ZVStore) -> int | None:
    """The most shapes a view of the store can hold: level-0 objects for paths and lines,
    level-0 vertices for graph and skeleton edges (2-D stores only; else ``None``)."""
    if int(store.ndim) != 2:
        return None
    lv0 = min(store.levels, key=lambda lv: lv.index)
    if store.geometry_type in PATH_TYPES:
        try:
            ids = store.object_ids(lv0.index)
        except nzv.ZVError:
            ids = None
        if ids is not None and len(ids):
            return int(len(ids))
    return int(lv0.vertex_count) if lv0.vertex_count is not None else None


def _axis_types(store: ZVStore) -> tuple[str, ...]:
    """The store's axis types (every axis a space axis for stores that do not say)."""
    types = getattr(store, "axis_types", None)
    if types is None or len(types) != int(store.ndim):
        return ("space",) * int(store.ndim)
    return tuple(str(t) for t in types)


def napari_order(store: ZVStore) -> np.ndarray:
    """The store column of each napari axis of the layer data
    (:func:`~napari_zarr_vectors.napari.coords.napari_axis_order`, permuted by
    :func:`~napari_zarr_vectors.napari.coords.placed_order` when the
    store's world placement permutes axes)."""
    return placed_order(napari_axis_order(_axis_types(store)), world_affine(store))


def world_box_to_store(
    store: ZVStore, lo: np.ndarray, hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """A world box in napari axis order -> the box of the stored space holding it, store
    order (the inverse placement; exact for axis permutations, flips and scales)."""
    order = napari_order(store)
    back = np.argsort(order)
    affine = world_affine(store)
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    if affine is not None:
        world_order = napari_axis_order(_axis_types(store))
        inverse = np.linalg.inv(napari_affine(affine, world_order, order))
        lo, hi = affine_box(inverse, lo, hi)
    return lo[back], hi[back]


def store_box_to_world(
    store: ZVStore, lo: np.ndarray, hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """A box of the stored space (store order) -> the world box holding it, napari axis
    order (what the layers show it as)."""
    lo, hi = affine_box(world_affine(store), lo, hi)
    world_order = napari_axis_order(_axis_types(store))
    return lo[world_order], hi[world_order]


def layer_scale(store: ZVStore) -> np.ndarray:
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
    scale[[t != "space" for t in _axis_types(store)]] = 1.0
    return scale


#: paths of the stores shown in their stored space (the Store panel's toggle)
_STORED_SPACE: set[str] = set()


def show_stored_space(path: str, on: bool) -> None:
    """Show the store at ``path`` in its stored space (``on``) or in the world (its
    placement applied, the default). The caller re-applies its layers' affines."""
    if on:
        _STORED_SPACE.add(str(path))
    else:
        _STORED_SPACE.discard(str(path))


def world_affine(store: ZVStore, *, stored_space: bool | None = None) -> np.ndarray | None:
    """The store -> world affine the layers carry as their napari ``affine`` (store column
    order, ``(ndim + 1, ndim + 1)``; the core's ``Store.placement``), or ``None`` when world
    coordinates are the stored ones: no ``crs``, positions baked, or the store is shown in
    its stored space (:func:`show_stored_space`; ``stored_space`` overrides it)."""
    placement = getattr(store, "placement", None)
    if stored_space is None:
        stored_space = str(getattr(store, "path", "")) in _STORED_SPACE
    if placement is None or stored_space:
        return None
    try:
        affine = np.asarray(placement.affine, dtype=float)
    except nzv.ZVError as e:  # a malformed crs: the geometry still opens, unplaced
        warnings.warn(f"{store.path}: world placement left out: {e}", stacklevel=2)
        return None
    ndim = int(store.ndim)
    if affine.shape != (ndim + 1, ndim + 1) or np.array_equal(affine, np.eye(ndim + 1)):
        return None
    return affine


def world_units_per_store_unit(affine: np.ndarray | None) -> float:
    """How long one stored unit is in the world (the geometric mean of the affine's
    singular values; 1 without one): a world pixel size divided by it is in stored units."""
    if affine is None:
        return 1.0
    values = np.linalg.svd(affine[:-1, :-1], compute_uv=False)
    values = values[values > 0]
    return float(np.exp(np.mean(np.log(values)))) if values.size else 1.0


def _object_count(store: ZVStore, level: int) -> int:
    """How many objects the level's object index holds (0 when it cannot be read: the
    warning is :func:`_optional`'s, for the object attributes)."""
    try:
        return len(store.object_ids(level))
    except nzv.ZVError:
        return 0


def _optional(getter: Callable[[int], dict], level: int) -> dict:
    """``getter(level)`` as a dict; a table the core cannot read is left out with a warning
    (the geometry still opens, without those features)."""
    try:
        return dict(getter(level) or {})
    except nzv.ZVError as e:
        warnings.warn(f"{getter.__name__} of level {level} left out: {e}", stacklevel=3)
        return {}
