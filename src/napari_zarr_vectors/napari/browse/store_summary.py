"""What the store panel shows: a store's metadata and per-level counts."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from napari_zarr_vectors.format.api import GeometryStore, store_layout
from napari_zarr_vectors.napari.browse.groups import group_labels
from napari_zarr_vectors.napari.browse.table import ObjectTable, safe_read
from napari_zarr_vectors.napari.browse.targets import objects_unknown
from napari_zarr_vectors.napari.values import dtype_word

if TYPE_CHECKING:
    from napari_zarr_vectors.format.layout import Layout
    from napari_zarr_vectors.format.world import WorldPlacement


@dataclass(frozen=True)
class LevelSummary:
    index: int
    chunk_shape: tuple[float, ...]
    bin_shape: tuple[float, ...]
    vertex_count: int | None
    object_count: int | None
    coarsening: str


@dataclass(frozen=True)
class StoreSummary:
    """What the store panel shows (metadata plus per-level counts)."""

    name: str
    path: str
    zv_version: str
    geometry_type: str
    axes: tuple[str, ...]
    units: tuple[str | None, ...]
    bounds: tuple[tuple[float, ...], tuple[float, ...]]
    levels: tuple[LevelSummary, ...]
    vertex_attributes: tuple[tuple[str, str], ...]
    object_attributes: tuple[tuple[str, str], ...]
    n_objects: int
    groups: tuple[tuple[int, str, int], ...]
    group_attributes: tuple[tuple[str, str], ...]
    #: where the layers place the stored coordinates ("" = as stored)
    placement: str = ""
    #: why the store's objects cannot be told apart (:func:`.targets.objects_unknown`; "")
    objects_unknown: str = ""


def store_summary(store: GeometryStore, counts: bool = True) -> StoreSummary:
    """Metadata of ``store`` for the store panel. ``counts`` also reads each level's object
    index to count its objects (the panel does that off the UI thread)."""
    levels = []
    for lv in store.levels:
        n_obj = None
        if counts:
            presence = safe_read(store.object_presence, lv.index, None)
            n_obj = None if presence is None or not len(presence) else int(np.sum(presence))
        levels.append(
            LevelSummary(
                index=int(lv.index),
                chunk_shape=tuple(float(v) for v in np.ravel(lv.chunk_shape)),
                bin_shape=tuple(float(v) for v in np.ravel(lv.bin_shape)),
                vertex_count=None if lv.vertex_count is None else int(lv.vertex_count),
                object_count=n_obj,
                coarsening=str(getattr(lv, "coarsening_method", "") or ""),
            )
        )
    vattrs = _vertex_attribute_types(store)
    oattrs = [
        (name, _dtype_text(np.asarray(v)))
        for name, v in safe_read(store.object_attributes, 0, {}).items()
    ]
    table = ObjectTable.from_store(store, 0) if counts else None
    labels = group_labels(table) if table is not None else {}
    gcounts = table.group_counts() if table is not None else {}
    groups = tuple((g, labels.get(g, f"group {g}"), gcounts.get(g, 0)) for g in sorted(gcounts))
    gattrs = [
        (name, _dtype_text(np.asarray(v)))
        for name, v in safe_read(store.group_attributes, 0, {}).items()
    ]
    lo, hi = store.bounds
    return StoreSummary(
        name=str(store.name),
        path=str(store.path),
        zv_version=str(store.zv_version),
        geometry_type=str(store.geometry_type),
        axes=tuple(store.axes),
        units=tuple(store.units),
        bounds=(tuple(float(v) for v in lo), tuple(float(v) for v in hi)),
        levels=tuple(levels),
        vertex_attributes=tuple(vattrs),
        object_attributes=tuple(oattrs),
        n_objects=0 if table is None else table.n_objects,
        groups=groups,
        group_attributes=tuple(gattrs),
        placement=_placement(store),
        objects_unknown=safe_read(lambda _: objects_unknown(store), 0, "") if counts else "",
    )


_PLACEMENT_SOURCES = {
    "trackvis_header": "TrackVis voxmm → RAS mm from headers/trk",
    "crs_affine": "the crs affine",
    "coordinate_offset": "coordinate_offset",
    "baked": "stored in it already",
}


def _vertex_attribute_types(store: GeometryStore) -> list[tuple[str, str]]:
    """``(name, type)`` of each vertex attribute of level 0; every type ``"?"`` when their
    array metadata cannot be read (an added geometry of a composite store has none)."""
    layout = store_layout(store)
    if layout is not None:
        with contextlib.suppress(Exception):  # metadata we cannot read is left out
            return _typed_vertex_attributes(store, layout)
    return [(n, "?") for n in safe_read(store.vertex_attribute_names, 0, [])]


def _typed_vertex_attributes(store: GeometryStore, layout: Layout) -> list[tuple[str, str]]:
    from napari_zarr_vectors.format.loading import attribute_specs

    specs = {spec.name: spec for spec in attribute_specs(layout, 0)}
    vattrs = []
    for name in store.vertex_attribute_names(0):
        spec = specs.get(name)
        if spec is None:  # left out by the core (it warned why)
            vattrs.append((name, "unreadable, left out"))
            continue
        text = spec.categories is not None or spec.dtype.kind in "US"
        dtype = "text" if text else dtype_word(spec.dtype)
        vattrs.append((spec.name, dtype if not spec.width else f"{dtype} × {spec.width}"))
    return vattrs


def _placement(store: GeometryStore) -> str:
    """What ``store.placement`` does, in words ("" when positions are shown as stored)."""
    # an added geometry of a composite store has none
    placement: WorldPlacement | None = safe_read(
        lambda _: getattr(store, "placement", None), 0, None
    )
    if placement is None or placement.source == "identity":
        return ""
    space = placement.space or "world"
    how = _PLACEMENT_SOURCES.get(placement.source, placement.source)
    return f"{space} ({how}{'' if placement.exact else ', best effort'})"


def _dtype_text(values: np.ndarray) -> str:
    kind = dtype_word(values.dtype)
    if values.ndim > 1:
        return f"{kind} × {int(np.prod(values.shape[1:]))}"
    return kind
