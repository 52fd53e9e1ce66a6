"""Root and level metadata of a ZV store (FORMAT07 §2-§3, FORMAT09 §1)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import (
    NotAZVStoreError,
    UnsupportedCapabilityError,
    UnsupportedVersionError,
    ZVFormatError,
)
from .geometry import GEOMETRY_TYPES
from .validate import (
    Source,
    as_mapping,
    bool_field,
    float_field,
    float_list,
    int_field,
    str_field,
    str_list,
)

#: Most axes a store may declare.
MAX_NDIM = 16

#: Format versions this reader understands, as (major, minor) pairs.
SUPPORTED_VERSIONS = ((0, 7), (0, 9))

#: Capabilities this reader implements: a store whose root ``required_capabilities`` lists
#: any other is refused (FORMAT-NEXT §5). The 0.9.2 features upstream lists in its
#: ``SUPPORTED_CAPABILITIES``, plus the newer layouts read here (additive levels, the dense
#: object index, fragment link groups).
IMPLEMENTED_CAPABILITIES = frozenset(
    {
        "preserved_object_ids",
        "shared_fragments",
        "fragment_index",
        "multiscale_links",
        "additive_levels",
        "dense_manifests",
        "fragment_link_groups",
    }
)


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
    #: ``"replace"`` (the level's own data is all of it) or ``"add"`` (it adds to the next
    #: coarser level: FORMAT-NEXT §6, :mod:`.refinement`)
    refinement: str = "replace"
    #: World position of the lower corner of spatial chunk key 0 (``None`` = the origin, as
    #: in every writer; the spec's dense form counts chunks from ``bounds_min``).
    grid_origin: np.ndarray | None = None

    @property
    def key_ndim(self) -> int:
        """Number of components of a chunk key (ndim, or ndim + 1 when chunked by attribute)."""
        return len(self.chunk_dims) if self.chunk_dims else int(self.chunk_shape.size)

    @property
    def chunk_origin(self) -> np.ndarray:
        """World position of the lower corner of spatial chunk key 0 (``grid_origin``, zeros
        when it is ``None``): chunk key ``k`` spans ``chunk_origin + k * chunk_shape`` up to
        the next key."""
        if self.grid_origin is None:
            return np.zeros(int(self.chunk_shape.size), np.float64)
        return np.asarray(self.grid_origin, np.float64)


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
    #: every geometry the root lists, the store's own first (composite stores list more)
    geometry_types: tuple[str, ...] = ()
    #: capabilities a reader must implement to open the store (all in
    #: :data:`IMPLEMENTED_CAPABILITIES`, or the store is refused)
    required_capabilities: tuple[str, ...] = ()

    @property
    def ndim(self) -> int:
        return len(self.axes)

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return parse_version(self.zv_version)


def parse_root(doc: dict[str, Any] | None, store: str) -> RootMetadata:
    """Validate a root ``zarr.json`` document and return its ZV metadata.

    Every field is type- and range-checked: a corrupted value raises :class:`ZVFormatError`
    naming ``zarr.json`` and the field.
    """
    if doc is None:
        raise NotAZVStoreError(f"{store} is not a Zarr Vectors store: no zarr.json at its root")
    if doc.get("zarr_format") != 3 or doc.get("node_type") != "group":
        raise NotAZVStoreError(
            f"{store} is not a Zarr Vectors store: the root is not a Zarr v3 group"
        )
    src = Source(store, "zarr.json")
    attrs = doc.get("attributes") or {}
    zv = attrs.get("zarr_vectors") if isinstance(attrs, dict) else None
    if not isinstance(zv, dict):
        raise NotAZVStoreError(
            f"{store} is not a Zarr Vectors store: its root has no 'zarr_vectors' attributes"
        )
    version = zv.get("zv_version", "")
    if not isinstance(version, str):
        raise src.error("zarr_vectors.zv_version", f"is {version!r}, expected a string")
    vt = parse_version(version)
    if vt[:2] not in SUPPORTED_VERSIONS:
        supported = ", ".join(f"{a}.{b}.x" for a, b in SUPPORTED_VERSIONS)
        raise UnsupportedVersionError(
            f"{store}: ZV format version {version or '(missing)'} is not supported "
            f"(this reader reads {supported})"
        )
    required = str_list(
        zv.get("required_capabilities") or [], "zarr_vectors.required_capabilities", src
    )
    missing = [c for c in required if c not in IMPLEMENTED_CAPABILITIES]
    if missing:
        raise UnsupportedCapabilityError(
            f"{store} requires the capabilit{'ies' if len(missing) > 1 else 'y'} "
            f"{', '.join(repr(c) for c in missing)}, which this reader does not implement "
            f"(zarr.json: zarr_vectors.required_capabilities; implemented: "
            f"{sorted(IMPLEMENTED_CAPABILITIES)})",
            missing,
        )
    gtypes = zv.get("geometry_types") or []
    if not isinstance(gtypes, list) or not gtypes or gtypes[0] not in GEOMETRY_TYPES:
        raise ZVFormatError(
            f"zarr.json: field 'zarr_vectors.geometry_types' is {gtypes!r}, expected one of "
            f"{list(GEOMETRY_TYPES)}",
            store=store,
        )
    ms = attrs.get("multiscales") or [{}]
    ms0 = ms[0] if isinstance(ms, list) and ms and isinstance(ms[0], dict) else {}
    axes_meta = ms0.get("axes") or []
    if not isinstance(axes_meta, list) or not all(isinstance(a, dict) for a in axes_meta):
        raise src.error("multiscales[0].axes", "is not a list of axis objects")
    chunk_raw = zv.get("chunk_shape")
    if chunk_raw is None:
        raise ZVFormatError("root metadata has no chunk_shape", store=store)
    if not isinstance(chunk_raw, list) or not 1 <= len(chunk_raw) <= MAX_NDIM:
        raise src.error("zarr_vectors.chunk_shape", f"is {chunk_raw!r}, expected a list")
    ndim = len(axes_meta) if axes_meta else len(chunk_raw)
    if not 1 <= ndim <= MAX_NDIM:
        raise src.error("multiscales[0].axes", f"has {ndim} axes, expected 1..{MAX_NDIM}")
    if not axes_meta:
        axes_meta = (
            [{"name": n, "type": "space"} for n in "xyz"[:ndim]]
            if ndim <= 3
            else [{"name": f"axis{i}", "type": "space"} for i in range(ndim)]
        )
    axes = tuple(str(a.get("name", f"axis{i}")) for i, a in enumerate(axes_meta))
    chunk_shape = float_list(chunk_raw, "zarr_vectors.chunk_shape", src, ndim)
    if np.any(chunk_shape <= 0):
        raise ZVFormatError(f"chunk_shape {chunk_shape.tolist()} is not positive", store=store)
    _check_addressable(chunk_shape, store)
    bounds_raw = zv.get("bounds")
    if not isinstance(bounds_raw, list) or len(bounds_raw) != 2:
        raise ZVFormatError("root metadata has no [min, max] bounds", store=store)
    lo = float_list(bounds_raw[0], "zarr_vectors.bounds[0]", src, ndim)
    hi = float_list(bounds_raw[1], "zarr_vectors.bounds[1]", src, ndim)
    base_bin = zv.get("base_bin_shape")
    base_bin_shape = (
        None if base_bin is None else float_list(base_bin, "zarr_vectors.base_bin_shape", src, ndim)
    )
    if base_bin_shape is not None and np.any(base_bin_shape <= 0):
        raise src.error("zarr_vectors.base_bin_shape", "is not positive")
    caps = zv.get("format_capabilities") or ()
    datasets = ms0.get("datasets") or ()
    if not isinstance(datasets, list | tuple):
        raise src.error("multiscales[0].datasets", f"is {datasets!r}, expected a list")
    for i, d in enumerate(datasets):
        path = d.get("path") if isinstance(d, dict) else None
        if not (isinstance(path, str | int) and not isinstance(path, bool) and str(path).isdigit()):
            raise src.error(
                f"multiscales[0].datasets[{i}].path", f"is {path!r}, expected a level number"
            )
    if datasets and "0" not in {str(d["path"]) for d in datasets}:
        raise src.error("multiscales[0].datasets", "lists no level 0")
    return RootMetadata(
        zv_version=version,
        geometry_type=str(gtypes[0]),
        axes=axes,
        axis_types=tuple(str(a.get("type", "space")) for a in axes_meta),
        units=tuple(a.get("unit") if isinstance(a.get("unit"), str) else None for a in axes_meta),
        chunk_shape=chunk_shape,
        bounds=(lo, hi),
        base_bin_shape=base_bin_shape,
        links_convention=str(zv.get("links_convention", "implicit_sequential")),
        format_capabilities=tuple(str(c) for c in caps) if isinstance(caps, list) else (),
        datasets=tuple(d for d in datasets if isinstance(d, dict)),
        raw=attrs,
        geometry_types=tuple(dict.fromkeys(str(g) for g in gtypes)),
        required_capabilities=tuple(required),
    )


def _transform(dataset: dict[str, Any], kind: str, src: Source) -> np.ndarray | None:
    transforms = dataset.get("coordinateTransformations") or ()
    if not isinstance(transforms, list | tuple):
        raise src.error("datasets coordinateTransformations", f"is {transforms!r}, not a list")
    for t in transforms:
        if isinstance(t, dict) and t.get("type") == kind:
            value = t.get(kind)
            return None if value is None else float_list(value, f"datasets {kind}", src)
    return None


def parse_level(root: RootMetadata, path: str, doc: dict[str, Any] | None, store: str) -> LevelInfo:
    """Build the :class:`LevelInfo` of level ``path`` from its ``zarr.json`` and the root.

    Every field is type- and range-checked (:mod:`.validate`): a corrupted value raises
    :class:`ZVFormatError` naming ``<level>/zarr.json`` and the field.
    """
    index = int(path)
    src = Source(store, f"{path}/zarr.json", index)
    top = as_mapping((doc or {}).get("attributes"), "attributes", src)
    attrs = as_mapping(top.get("zarr_vectors_level"), "zarr_vectors_level", src)
    ndim = root.ndim
    chunk = attrs.get("chunk_shape")
    chunk_shape = root.chunk_shape if chunk is None else float_list(chunk, "chunk_shape", src, ndim)
    if np.any(chunk_shape <= 0):
        raise ZVFormatError("level chunk_shape is not positive", store=store, level=index)
    _check_addressable(chunk_shape, store, index)
    base_bin = root.base_bin_shape if root.base_bin_shape is not None else root.chunk_shape
    dataset = next((d for d in root.datasets if str(d.get("path")) == path), None)
    bin_ratio = np.ones(ndim)
    bin_shape = base_bin.copy()
    if dataset is not None and index > 0:
        rsrc = Source(store, "zarr.json", index)
        scale = _transform(dataset, "scale", rsrc)
        trans = _transform(dataset, "translation", rsrc)
        if scale is not None and len(scale) == ndim:
            bin_ratio = np.round(scale)
            bin_shape = base_bin * bin_ratio
        # a root coordinate_offset is written into the multiscales translation too
        # (FORMAT-NEXT §9.5): there the translation is no half bin, the scale decides
        offset_store = (root.raw.get("zarr_vectors") or {}).get("coordinate_offset") is not None
        if trans is not None and len(trans) == ndim and not (offset_store and scale is not None):
            bin_shape = 2.0 * trans
            bin_ratio = np.round(bin_shape / base_bin)
    dims = attrs.get("chunk_dims")
    if dims is not None:
        dims = str_list(dims, "chunk_dims", src)
        if len(dims) > MAX_NDIM:
            raise src.error("chunk_dims", f"has {len(dims)} names")
    values = attrs.get("chunk_attribute_values")
    if values is not None and not isinstance(values, list):
        raise src.error("chunk_attribute_values", f"is {values!r}, expected a list")
    if values and not (
        all(isinstance(v, str) for v in values)
        or all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
    ):
        # the values of one attribute: all strings or all numbers
        raise src.error("chunk_attribute_values", f"is {values!r}, expected strings or numbers")
    parent = int_field(attrs, "parent_level", src, None, 0, 1 << 20)
    inherited = int_field(attrs, "inherited_num_objects", src, None)
    cattr = str_field(attrs, "chunk_attribute_name", src, None)
    return LevelInfo(
        index=index,
        path=path,
        chunk_shape=chunk_shape,
        bin_shape=bin_shape,
        bin_ratio=bin_ratio,
        vertex_count=int_field(attrs, "vertex_count", src, 0),
        object_sparsity=float_field(attrs, "object_sparsity", src, 1.0, 0.0, None) or 1.0,
        coarsening_method=str_field(
            attrs, "coarsening_method", src, "none" if index == 0 else "unknown"
        ),
        parent_level=parent,
        preserves_object_ids=bool_field(attrs, "preserves_object_ids", src),
        inherited_num_objects=inherited,
        chunk_dims=tuple(dims) if dims else None,
        chunk_attribute_name=cattr,
        chunk_attribute_values=tuple(values) if values is not None else None,
        attributes=attrs,
        refinement=str_field(attrs, "refinement", src, "replace"),
    )


def _check_addressable(chunk_shape: np.ndarray, store: str, level: int | None = None) -> None:
    """Raise :class:`ZVFormatError` for a chunk edge so large that the chunk after the
    first has no finite box (``2 * edge`` overflows a double): no chunk but the first could
    be placed, and every box query would miss the others without a word."""
    with np.errstate(over="ignore"):
        if not np.all(np.isfinite(np.asarray(chunk_shape, np.float64) * 2)):
            raise ZVFormatError(
                f"chunk_shape {chunk_shape.tolist()} is too large to address a second chunk",
                store=store,
                level=level,
            )
