"""Root and level metadata of a ZV store (FORMAT07 §2-§3, FORMAT09 §1)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import NotAZVStoreError, UnsupportedVersionError, ZVFormatError

GEOMETRY_TYPES = ("point_cloud", "line", "polyline", "streamline", "graph", "skeleton", "mesh")

#: Format versions this reader understands, as (major, minor) pairs.
SUPPORTED_VERSIONS = ((0, 7), (0, 9))


def parse_version(text: str) -> tuple[int, ...]:
    """``"0.9.2"`` -> ``(0, 9, 2)``, ignoring non-digits inside components."""
    parts = []
    for comp in str(text).split("."):
        digits = re.sub(r"\D", "", comp)
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


@dataclass(frozen=True)
class LevelInfo:
    """Metadata of one pyramid level.

    ``chunk_shape`` is the effective chunk edge (the level override or the root's),
    ``bin_shape`` the metavertex bin edge, ``bin_ratio`` the bin relative to level 0.
    """

    index: int
    path: str
    chunk_shape: np.ndarray
    bin_shape: np.ndarray
    bin_ratio: np.ndarray
    vertex_count: int
    object_sparsity: float
    coarsening_method: str
    parent_level: int | None
    preserves_object_ids: bool = False
    inherited_num_objects: int | None = None
    chunk_dims: tuple[str, ...] | None = None
    chunk_attribute_name: str | None = None
    chunk_attribute_values: tuple[Any, ...] | None = None
    attributes: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def key_ndim(self) -> int:
        """Number of components of a chunk key (ndim, or ndim + 1 when chunked by attribute)."""
        return len(self.chunk_dims) if self.chunk_dims else int(self.chunk_shape.size)


@dataclass(frozen=True)
class RootMetadata:
    """The ``zarr_vectors`` and ``multiscales`` blocks of a store root."""

    zv_version: str
    geometry_type: str
    axes: tuple[str, ...]
    axis_types: tuple[str, ...]
    units: tuple[str | None, ...]
    chunk_shape: np.ndarray
    bounds: tuple[np.ndarray, np.ndarray]
    base_bin_shape: np.ndarray | None
    links_convention: str
    format_capabilities: tuple[str, ...]
    datasets: tuple[dict[str, Any], ...]
    raw: dict[str, Any] = field(repr=False)

    @property
    def ndim(self) -> int:
        return len(self.axes)

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return parse_version(self.zv_version)


def _floats(value: Any, n: int, what: str, store: str) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise ZVFormatError(f"{what} is not a list of numbers", store=store) from None
    if arr.size != n:
        raise ZVFormatError(f"{what} has {arr.size} values for {n} axes", store=store)
    return arr


def parse_root(doc: dict[str, Any] | None, store: str) -> RootMetadata:
    """Validate a root ``zarr.json`` document and return its ZV metadata."""
    if doc is None:
        raise NotAZVStoreError(f"{store} is not a Zarr Vectors store: no zarr.json at its root")
    if doc.get("zarr_format") != 3 or doc.get("node_type") != "group":
        raise NotAZVStoreError(
            f"{store} is not a Zarr Vectors store: the root is not a Zarr v3 group"
        )
    attrs = doc.get("attributes") or {}
    zv = attrs.get("zarr_vectors")
    if not isinstance(zv, dict):
        raise NotAZVStoreError(
            f"{store} is not a Zarr Vectors store: its root has no 'zarr_vectors' attributes"
        )
    version = str(zv.get("zv_version", ""))
    vt = parse_version(version)
    if vt[:2] not in SUPPORTED_VERSIONS:
        supported = ", ".join(f"{a}.{b}.x" for a, b in SUPPORTED_VERSIONS)
        raise UnsupportedVersionError(
            f"{store}: ZV format version {version or '(missing)'} is not supported "
            f"(this reader reads {supported})"
        )
    gtypes = zv.get("geometry_types") or []
    if not gtypes or gtypes[0] not in GEOMETRY_TYPES:
        raise ZVFormatError(f"unknown geometry_types {gtypes!r}", store=store)
    ms = attrs.get("multiscales") or [{}]
    ms0 = ms[0] if isinstance(ms, list) and ms and isinstance(ms[0], dict) else {}
    axes_meta = ms0.get("axes") or []
    chunk_raw = zv.get("chunk_shape")
    if chunk_raw is None:
        raise ZVFormatError("root metadata has no chunk_shape", store=store)
    ndim = len(axes_meta) if axes_meta else len(chunk_raw)
    if not axes_meta:
        axes_meta = (
            [{"name": n, "type": "space"} for n in "xyz"[:ndim]]
            if ndim <= 3
            else [{"name": f"axis{i}", "type": "space"} for i in range(ndim)]
        )
    axes = tuple(str(a.get("name", f"axis{i}")) for i, a in enumerate(axes_meta))
    chunk_shape = _floats(chunk_raw, ndim, "chunk_shape", store)
    if np.any(chunk_shape <= 0):
        raise ZVFormatError(f"chunk_shape {chunk_shape.tolist()} is not positive", store=store)
    bounds_raw = zv.get("bounds")
    if bounds_raw is None or len(bounds_raw) != 2:
        raise ZVFormatError("root metadata has no [min, max] bounds", store=store)
    lo = _floats(bounds_raw[0], ndim, "bounds[0]", store)
    hi = _floats(bounds_raw[1], ndim, "bounds[1]", store)
    base_bin = zv.get("base_bin_shape")
    return RootMetadata(
        zv_version=version,
        geometry_type=str(gtypes[0]),
        axes=axes,
        axis_types=tuple(str(a.get("type", "space")) for a in axes_meta),
        units=tuple(a.get("unit") for a in axes_meta),
        chunk_shape=chunk_shape,
        bounds=(lo, hi),
        base_bin_shape=None
        if base_bin is None
        else _floats(base_bin, ndim, "base_bin_shape", store),
        links_convention=str(zv.get("links_convention", "implicit_sequential")),
        format_capabilities=tuple(zv.get("format_capabilities") or ()),
        datasets=tuple(d for d in ms0.get("datasets") or () if isinstance(d, dict)),
        raw=attrs,
    )


def _transform(dataset: dict[str, Any], kind: str) -> list[float] | None:
    for t in dataset.get("coordinateTransformations") or ():
        if isinstance(t, dict) and t.get("type") == kind:
            return t.get(kind)
    return None


def parse_level(root: RootMetadata, path: str, doc: dict[str, Any] | None, store: str) -> LevelInfo:
    """Build the :class:`LevelInfo` of level ``path`` from its ``zarr.json`` and the root."""
    index = int(path)
    attrs = ((doc or {}).get("attributes") or {}).get("zarr_vectors_level") or {}
    ndim = root.ndim
    chunk = attrs.get("chunk_shape")
    chunk_shape = (
        root.chunk_shape if chunk is None else _floats(chunk, ndim, "level chunk_shape", store)
    )
    if np.any(chunk_shape <= 0):
        raise ZVFormatError("level chunk_shape is not positive", store=store, level=index)
    base_bin = root.base_bin_shape if root.base_bin_shape is not None else root.chunk_shape
    dataset = next((d for d in root.datasets if str(d.get("path")) == path), None)
    bin_ratio = np.ones(ndim)
    bin_shape = base_bin.copy()
    if dataset is not None and index > 0:
        scale = _transform(dataset, "scale")
        trans = _transform(dataset, "translation")
        if scale is not None and len(scale) == ndim:
            bin_ratio = np.round(np.asarray(scale, dtype=np.float64))
            bin_shape = base_bin * bin_ratio
        if trans is not None and len(trans) == ndim:
            bin_shape = 2.0 * np.asarray(trans, dtype=np.float64)
            bin_ratio = np.round(bin_shape / base_bin)
    dims = attrs.get("chunk_dims")
    values = attrs.get("chunk_attribute_values")
    return LevelInfo(
        index=index,
        path=path,
        chunk_shape=chunk_shape,
        bin_shape=bin_shape,
        bin_ratio=bin_ratio,
        vertex_count=int(attrs.get("vertex_count", 0) or 0),
        object_sparsity=float(attrs.get("object_sparsity", 1.0) or 1.0),
        coarsening_method=str(attrs.get("coarsening_method", "none" if index == 0 else "unknown")),
        parent_level=attrs.get("parent_level"),
        preserves_object_ids=bool(attrs.get("preserves_object_ids", False)),
        inherited_num_objects=attrs.get("inherited_num_objects"),
        chunk_dims=tuple(dims) if dims else None,
        chunk_attribute_name=attrs.get("chunk_attribute_name"),
        chunk_attribute_values=tuple(values) if values is not None else None,
        attributes=attrs,
    )
