"""What the store panel shows: a store's metadata and per-level counts."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from napari_zarr_vectors.napari.browse.groups import group_labels
from napari_zarr_vectors.napari.browse.table import ObjectTable, safe_read
from napari_zarr_vectors.napari.types import ZVStore
from napari_zarr_vectors.napari.values import dtype_word


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


def store_summary(store: ZVStore, counts: bool = True) -> StoreSummary:
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
    vattrs = []
    try:
        from napari_zarr_vectors.format.loading import attribute_specs

        specs = {spec.name: spec for spec in attribute_specs(store.layout, 0)}
        for name in store.vertex_attribute_names(0):
            spec = specs.get(name)
            if spec is None:  # left out by the core (it warned why)
                vattrs.append((name, "unreadable, left out"))
                continue
            text = spec.categories is not None or spec.dtype.kind in "US"
            dtype = "text" if text else dtype_word(spec.dtype)
            vattrs.append((spec.name, dtype if not spec.width else f"{dtype} × {spec.width}"))
    except Exception:  # noqa: BLE001 - metadata we cannot read is left out
        vattrs = [(n, "?") for n in safe_read(store.vertex_attribute_names, 0, [])]
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
    )


_PLACEMENT_SOURCES = {
    "trackvis_header": "TrackVis voxmm → RAS mm from headers/trk",
    "crs_affine": "the crs affine",
    "coordinate_offset": "coordinate_offset",
    "baked": "stored in it already",
}


def _placement(store: ZVStore) -> str:
    """What ``store.placement`` does, in words ("" when positions are shown as stored)."""
    placement = safe_read(lambda _: store.placement, 0, None)
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
