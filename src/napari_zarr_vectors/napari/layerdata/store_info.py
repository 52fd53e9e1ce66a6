"""Store facts the layer builders need (:class:`~napari_zarr_vectors.napari.layerdata.build.StoreInfo`).

Shared by the reader, the level-of-detail loader and controller, and the widgets; it
imports nothing of theirs, so every napari-side module can depend on it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

import napari_zarr_vectors as nzv
from napari_zarr_vectors.format.api import GeometryStore
from napari_zarr_vectors.format.geometry import PATH_TYPES
from napari_zarr_vectors.napari.layerdata.build import StoreInfo
from napari_zarr_vectors.napari.layerdata.placement import Placement


def store_info(
    store: GeometryStore, level: int, *, lod: bool = False, objects: bool = True
) -> StoreInfo:
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
    placement = Placement.of(store)
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
        axis_types=placement.axis_types,
        units=tuple(store.units) if store.units is not None else (None,) * store.ndim,
        bounds=(np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)),
        level=int(level),
        scale=placement.scale,
        affine=placement.affine,
        stored_space=placement.stored_space,
        object_attributes=object_attributes,
        groups=groups,
        lod=lod,
        shapes_hint=_shapes_hint(store) if lod else None,
        level_vertex_count=_level_vertex_count(store, level) if lod else None,
        shared_vertex_attributes=_shared_vertex_attributes(store) if lod else (),
        n_objects=_object_count(store, level) if objects else 0,
    )


def _shared_vertex_attributes(store: GeometryStore) -> tuple[str, ...]:
    """Vertex attribute names every level stores (in level 0's order)."""
    try:
        per_level = [list(store.vertex_attribute_names(lv.index)) for lv in store.levels]
    except (nzv.ZVError, AttributeError, KeyError):
        return ()
    if not per_level:
        return ()
    return tuple(n for n in per_level[0] if all(n in names for names in per_level[1:]))


def _level_vertex_count(store: GeometryStore, level: int) -> int | None:
    try:
        count = store.level(level).vertex_count
    except (KeyError, AttributeError):
        return None
    return int(count) if count else None


def _keeps_object_ids(store: GeometryStore, level: int) -> bool:
    try:
        return bool(store.level(level).preserves_object_ids)
    except (KeyError, AttributeError):
        return False


def _shapes_hint(store: GeometryStore) -> int | None:
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


def _object_count(store: GeometryStore, level: int) -> int:
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
