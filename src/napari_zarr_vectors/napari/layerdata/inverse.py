"""napari layers -> a :class:`~napari_zarr_vectors.write.WriteSpec`: the inverse of the
layer builders (:mod:`napari_zarr_vectors.napari.layerdata.build`), pure numpy over napari's
layer data tuples.

=============================  =====================================================
layer                          store
=============================  =====================================================
Points                         point_cloud (features -> vertex attributes)
Tracks                         polyline, one object per track id (time kept as a leading
                               ``t`` axis when it varies, else dropped)
Shapes ``path`` / ``line``     polyline / line (features -> object attributes)
Vectors                        line (features -> object attributes)
Surface                        mesh (vertex values -> vertex attribute ``values``)
=============================  =====================================================

Coordinates go back to store order and units, the inverse of the reader: world = data x
scale + translate (rotate, shear and affine included when set), then the axes are reversed.
Mesh winding is reversed with the axes, as the reader does, so a saved Surface opens as the
same Surface.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from napari_zarr_vectors.format.distinct import distinct
from napari_zarr_vectors.format.geometry import GRAPH_TYPES, PATH_TYPES, GeometryType
from napari_zarr_vectors.format.world import affine_box
from napari_zarr_vectors.napari.conventions import (
    DIRECTION,
    GROUP_ID,
    GROUPS,
    OBJECT_ID,
    LayerMeta,
    meta_of,
    regroup_channels,
)
from napari_zarr_vectors.napari.coords import (
    FLIP_WINDING,
    axis_reversal_is_mirror,
    napari_axis_order,
    to_store_order,
)
from napari_zarr_vectors.napari.layerdata.placement import (
    layer_data_to_store,
    layer_data_to_world,
    layer_world_columns,
)
from napari_zarr_vectors.napari.types import FullLayerData, LayerAttributes, LayerData
from napari_zarr_vectors.write.engine import WriteError
from napari_zarr_vectors.write.spec import WriteSpec

#: Feature columns the reader derives (never store attributes).
_DERIVED = (DIRECTION, f"zv_{DIRECTION}", "zv_highlight")


_DEFAULT_LABEL = re.compile(r"^(axis )?-?\d+$")


def spec_from_layers(layer_data: Sequence[FullLayerData]) -> tuple[WriteSpec, list[str]]:
    """One :class:`WriteSpec` for the layers, and the store paths they were read from.

    A store holds one geometry: the layers must be one data layer (store bounds boxes are
    left out), or the edges and nodes layers of one graph / skeleton store.
    """
    data_layers = [t for t in layer_data if _view(t[1]).role != "bounds"]
    if not data_layers:
        raise WriteError("only store bounds boxes were selected: select a data layer to save")
    sources = sorted({str(_view(t[1]).path) for t in layer_data if _view(t[1]).path})
    if len(data_layers) == 2:
        roles = {_view(t[1]).role: t for t in data_layers}
        paths = {_view(t[1]).path for t in data_layers}
        if set(roles) == {"edges", "nodes"} and len(paths) == 1:
            return graph_spec(roles["nodes"], roles["edges"]), sources
    if len(data_layers) > 1:
        names = ", ".join(repr(t[1].get("name", t[2])) for t in data_layers)
        raise WriteError(
            f"a Zarr Vectors store holds one geometry: select one layer to save (got {names})"
        )
    return spec_from_layer(*data_layers[0]), sources


def spec_from_layer(data: LayerData, attributes: LayerAttributes, layer_type: str) -> WriteSpec:
    """The :class:`WriteSpec` of one layer data tuple."""
    build = {
        "points": points_spec,
        "tracks": tracks_spec,
        "shapes": shapes_spec,
        "vectors": vectors_spec,
        "surface": surface_spec,
    }.get(layer_type)
    if build is None:
        raise WriteError(
            f"{attributes.get('name', layer_type)!r}: a {layer_type} layer cannot be saved as "
            "Zarr Vectors (Points, Tracks, Shapes paths/lines, Vectors and Surface can)"
        )
    meta = _view(attributes)
    spec = build(data, attributes)
    if spec.groups and meta.path:
        # group ids are kept, so the store's group attributes and names still describe them
        spec.group_attributes, spec.group_names = _source_groups(meta.path)
    return spec


def points_spec(data: LayerData, attributes: LayerAttributes) -> WriteSpec:
    """Points -> point_cloud; features -> vertex attributes (ids and groups when present)."""
    coords = np.asarray(data, dtype=np.float64)
    positions = layer_data_to_store(coords, attributes)
    return _per_vertex_spec(
        GeometryType.POINT_CLOUD, positions, _features(attributes), attributes, coords.shape[1]
    )


def tracks_spec(data: LayerData, attributes: LayerAttributes) -> WriteSpec:
    """Tracks -> polyline (or the store's path type): one object per track id, vertices in
    time order; the time column becomes a leading ``t`` axis when it varies."""
    table = np.asarray(data, dtype=np.float64)
    features = _features(attributes)
    order = np.lexsort((table[:, 1], table[:, 0]))  # by track id, then time (stable)
    table = table[order]
    features = {k: v[order] for k, v in features.items()}
    world = layer_data_to_world(table[:, 1:], attributes)  # time + space, napari order
    t, space = world[:, 0], world[:, 1:]
    nd = space.shape[1]
    axes, units = _store_axes(attributes, nd)
    track_ids, lengths = np.unique(table[:, 0].astype(np.int64), return_counts=True)
    row_ids = features.pop(OBJECT_ID, None)
    starts = np.cumsum(lengths) - lengths
    id_column = _int_column(row_ids)
    ids = id_column[starts] if id_column is not None else track_ids
    positions = to_store_order(space, napari_axis_order(("space",) * nd))
    axis_types: tuple[str, ...] = ("space",) * nd
    bounds = _meta_bounds(attributes, nd)
    if len(t) and np.ptp(t) > 0:
        labels = list(attributes.get("axis_labels") or [])
        t_name = str(labels[0]) if labels and not _DEFAULT_LABEL.match(str(labels[0])) else "t"
        t_unit = _unit_names(attributes, nd + 1)[0]
        positions = np.column_stack([t, positions])
        axes, units = (t_name, *axes), (t_unit, *units)
        axis_types = ("time", *axis_types)
        bounds = None
    _decode_categories(features, _view(attributes).categories or {})
    groups = _groups(features, np.repeat(ids, lengths))
    vattrs, oattrs = _split(features, np.repeat(ids, lengths), attributes)
    kind = _view(attributes).geometry_type
    return WriteSpec(
        kind if kind in (GeometryType.POLYLINE, GeometryType.STREAMLINE) else GeometryType.POLYLINE,
        positions,
        axes=axes,
        units=units,
        axis_types=axis_types,
        bounds=bounds,
        lengths=lengths,
        vertex_attributes=vattrs,
        object_ids=ids,
        object_attributes=_per_object(oattrs, ids),
        groups=groups,
        name=str(attributes.get("name", "")),
    )


def shapes_spec(data: LayerData, attributes: LayerAttributes) -> WriteSpec:
    """Shapes ``path`` / ``line`` -> polyline / line, one object per shape."""
    types = list(attributes.get("shape_type") or [])
    bad = sorted({t for t in types if t not in ("path", "line")})
    if bad:
        raise WriteError(
            f"{attributes.get('name')!r}: only path and line shapes can be saved as Zarr "
            f"Vectors; this layer also holds {', '.join(bad)} shapes"
        )
    if not len(data):
        raise WriteError(f"{attributes.get('name')!r} holds no shapes")
    lengths = np.fromiter((len(s) for s in data), np.int64, len(data))
    coords = np.concatenate([np.asarray(s, dtype=np.float64) for s in data])
    kind = _view(attributes).geometry_type
    if kind not in PATH_TYPES:
        lines = all(t == "line" for t in types)
        kind = GeometryType.LINE if lines else GeometryType.POLYLINE
    elif kind == GeometryType.LINE and not all(t == "line" for t in types):
        kind = GeometryType.POLYLINE
    return _per_object_spec(kind, coords, lengths, attributes)


def vectors_spec(data: LayerData, attributes: LayerAttributes) -> WriteSpec:
    """Vectors -> line: segment ``start -> start + length * direction`` (napari's drawing)."""
    vectors = np.asarray(data, dtype=np.float64)
    if vectors.ndim != 3 or vectors.shape[1] != 2:
        raise WriteError(f"{attributes.get('name')!r}: vectors data must be (N, 2, D)")
    length = float(attributes.get("length", 1.0))
    start = vectors[:, 0]
    end = start + length * vectors[:, 1]
    coords = np.stack([start, end], axis=1).reshape(-1, vectors.shape[2])
    lengths = np.full(len(vectors), 2, np.int64)
    return _per_object_spec(GeometryType.LINE, coords, lengths, attributes)


def surface_spec(data: LayerData, attributes: LayerAttributes) -> WriteSpec:
    """Surface -> mesh; vertex values -> vertex attribute ``values``; features -> vertex
    attributes (``object_id`` -> object ids)."""
    vertices = np.asarray(data[0], dtype=np.float64)
    faces = np.asarray(data[1], dtype=np.int64).reshape(-1, 3)
    nd = vertices.shape[1]
    if axis_reversal_is_mirror(nd):  # the reader flips the winding: flip it back
        faces = faces[:, FLIP_WINDING]
    positions = layer_data_to_store(vertices, attributes)
    features = _features(attributes)
    if len(data) > 2 and data[2] is not None and meta_of(attributes) is None:
        values = np.asarray(data[2])
        values = values.T if values.ndim == 2 and values.shape[-1] == len(vertices) else values
        if len(values) == len(vertices) and np.ptp(values, axis=0).any():
            name = "values" if "values" not in features else "surface_values"
            features[name] = values.astype(np.float32)
    return _per_vertex_spec(GeometryType.MESH, positions, features, attributes, nd, faces=faces)


def _per_vertex_spec(
    kind: str,
    positions: np.ndarray,
    features: dict[str, np.ndarray],
    attributes: LayerAttributes,
    nd: int,
    **extra: Any,
) -> WriteSpec:
    """A spec whose features are per vertex: ``object_id`` -> object ids, group columns ->
    groups, per-object constant columns -> object attributes, the rest vertex attributes."""
    axes, units = _store_axes(attributes, nd)
    ids = _int_column(features.pop(OBJECT_ID, None))
    groups = _groups(features, ids)
    vattrs, oattrs = _split(features, ids, attributes)
    return WriteSpec(
        kind,
        positions,
        axes=axes,
        units=units,
        axis_types=_axis_types(attributes, nd),
        bounds=_meta_bounds(attributes, nd),
        vertex_attributes=vattrs,
        object_ids=ids,
        object_attributes=oattrs,
        groups=groups,
        name=str(attributes.get("name", "")),
        **extra,
    )


def graph_spec(nodes: FullLayerData, edges: FullLayerData) -> WriteSpec:
    """The nodes (Points) and edges (Vectors / Shapes lines) layers of one graph or skeleton
    store -> that graph: edge endpoints are matched to nodes by their coordinates."""
    node_data, node_attrs, _ = nodes
    edge_spec = spec_from_layer(*edges)
    node_spec = points_spec(node_data, node_attrs)
    positions = node_spec.positions
    ends = edge_spec.positions  # (2E, D), two rows per edge in order
    key = np.concatenate([positions, ends]).astype(np.float32)
    _, inverse = np.unique(key, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    node_of_key = np.full(int(inverse.max()) + 1, -1, np.int64)
    node_of_key[inverse[: len(positions)][::-1]] = np.arange(len(positions))[::-1]
    edge_rows = node_of_key[inverse[len(positions) :]].reshape(-1, 2)
    if (edge_rows < 0).any():
        raise WriteError(
            f"{edges[1].get('name')!r}: {int((edge_rows < 0).any(axis=1).sum())} edges end "
            f"away from every node of {node_attrs.get('name')!r}"
        )
    kind = _view(node_attrs).geometry_type
    edge_source = _view(edges[1]).path
    names = _store_names(edge_source)
    edge_attrs = {
        k: v
        for k, v in regroup_channels(_features(edges[1]), skip=_DERIVED).items()
        if k not in (OBJECT_ID, GROUP_ID, GROUPS, *_DERIVED)
        and k not in node_spec.vertex_attributes
        and k not in node_spec.object_attributes
        and (names is None or k not in names[0] | names[1])
    }
    return WriteSpec(
        kind if kind in GRAPH_TYPES else GeometryType.GRAPH,
        positions,
        axes=node_spec.axes,
        units=node_spec.units,
        bounds=node_spec.bounds,
        edges=edge_rows,
        vertex_attributes=node_spec.vertex_attributes,
        edge_attributes=edge_attrs,
        object_ids=node_spec.object_ids,
        object_attributes=node_spec.object_attributes,
        groups=node_spec.groups,
        name=str(node_attrs.get("name", "")),
    )


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def _per_object_spec(
    kind: str, coords: np.ndarray, lengths: np.ndarray, attributes: LayerAttributes
) -> WriteSpec:
    """Paths / lines whose features have one row per object (Shapes, Vectors)."""
    nd = coords.shape[1]
    axes, units = _store_axes(attributes, nd)
    positions = layer_data_to_store(coords, attributes)
    features = _features(attributes)
    ids = _int_column(features.pop(OBJECT_ID, None))
    groups = _groups(features, ids)
    oattrs = regroup_channels(features, skip=_DERIVED)
    vattrs: dict[str, np.ndarray] = {}
    names = _store_names(_view(attributes).path)
    if names is not None:  # a store's vertex attributes joined per segment / path
        for k in [k for k in oattrs if k in names[1] and k not in names[0]]:
            vattrs[k] = np.repeat(oattrs.pop(k), lengths, axis=0)
    return WriteSpec(
        kind,
        positions,
        axes=axes,
        units=units,
        bounds=_meta_bounds(attributes, nd),
        lengths=lengths,
        vertex_attributes=vattrs,
        object_ids=ids,
        object_attributes=oattrs,
        groups=groups,
        name=str(attributes.get("name", "")),
    )


def _store_axes(
    attributes: LayerAttributes, nd: int
) -> tuple[tuple[str, ...], tuple[str | None, ...]]:
    """Store axis names and units (store order) for the last ``nd`` layer axes."""
    meta = _view(attributes)
    if meta.axes and len(meta.axes) == nd:
        units = meta.units or (None,) * nd
        return tuple(str(a) for a in meta.axes), tuple(u or None for u in units)
    columns = np.argsort(layer_world_columns(attributes, nd))
    labels = [str(x) for x in (attributes.get("axis_labels") or [])][-nd:]
    if len(labels) == nd and not any(_DEFAULT_LABEL.match(x) for x in labels):
        names = tuple(labels[c] for c in columns)
    else:
        names = tuple(("x", "y", "z")[i] if i < 3 else f"axis{i}" for i in range(nd))
    unit_names = _unit_names(attributes, nd)
    return names, tuple(unit_names[c] for c in columns)


def _axis_types(attributes: LayerAttributes, nd: int) -> tuple[str, ...]:
    """Store axis types (store order): a store layer's own, else every axis a space axis."""
    types = _view(attributes).axis_types
    if types is not None and len(types) == nd:
        return tuple(str(t) for t in types)
    return ("space",) * nd


def _unit_names(attributes: LayerAttributes, nd: int) -> list[str | None]:
    """Units of the last ``nd`` layer axes, napari order (``None`` for pixel / unset)."""
    units = list(attributes.get("units") or [])[-nd:]
    out: list[str | None] = []
    for u in units:
        text = str(u) if u is not None else ""
        out.append(None if text in ("", "pixel", "dimensionless") else text)
    return out if len(out) == nd else [None] * nd


def _meta_bounds(attributes: LayerAttributes, nd: int) -> tuple[np.ndarray, np.ndarray] | None:
    bounds = _view(attributes).bounds
    if not bounds or len(bounds) != 2 or len(bounds[0]) != nd:
        return None
    lo, hi = np.asarray(bounds[0], float), np.asarray(bounds[1], float)
    affine = _view(attributes).world_affine
    if affine is not None and np.shape(affine) == (nd + 1, nd + 1):
        # positions are saved where they are shown (the placement applied): so are bounds
        lo, hi = affine_box(np.asarray(affine, float), lo, hi)
    return lo, hi


def _features(attributes: LayerAttributes) -> dict[str, np.ndarray]:
    """The layer's features as ``{name: numpy array}`` (categoricals as ``str`` objects)."""
    table: Any = attributes.get("features")  # a DataFrame or {name: column}
    if table is None:
        return {}
    if hasattr(table, "columns"):
        out = {}
        for name in table.columns:
            column = table[name]
            if str(column.dtype) == "category":
                column = column.astype(object)
            out[str(name)] = column.to_numpy()
        return out
    return {str(k): np.asarray(v) for k, v in dict(table).items()}


def _int_column(values: np.ndarray | None) -> np.ndarray | None:
    if values is None:
        return None
    values = np.asarray(values)
    if values.dtype.kind == "f":
        if not np.all(np.isfinite(values)):
            return None
        values = values.astype(np.int64)
    return values.astype(np.int64) if values.dtype.kind in "iub" else None


def _groups(features: dict[str, np.ndarray], ids: np.ndarray | None) -> dict[int, np.ndarray]:
    """Groups from the reader's ``group_id`` / ``groups`` columns (removed from
    ``features``): ``{group id: member object ids}``."""
    first = features.pop(GROUP_ID, None)
    listing = features.pop(GROUPS, None)
    if ids is None or first is None:
        return {}
    obj, row = np.unique(ids, return_index=True)
    out: dict[int, list[np.ndarray]] = {}
    if listing is not None:
        for o, text in zip(obj, np.asarray(listing)[row], strict=True):  # one per object
            for g in str(text or "").split(";"):
                if g.strip().lstrip("-").isdigit() and int(g) >= 0:
                    out.setdefault(int(g), []).append(np.array([o]))
    else:
        gid = _int_column(np.asarray(first)[row])
        if gid is None:
            return {}
        for g in distinct(gid[gid >= 0]):
            out[int(g)] = [obj[gid == g]]
    return {g: distinct(np.concatenate(m)) for g, m in out.items()}


def _decode_categories(
    features: dict[str, np.ndarray], categories: Mapping[str, Sequence[str]]
) -> None:
    """Tracks layers from a store hold string attributes as integer codes
    (``metadata["zarr_vectors"]["categories"]``): back to strings."""
    for name, cats in categories.items():
        if name in features:
            codes = np.asarray(features[name]).astype(np.int64)
            features[name] = np.asarray(cats, dtype=object)[codes]


def _store_names(path: str | None) -> tuple[set[str], set[str]] | None:
    """``(object attribute names, vertex attribute names)`` of the store at ``path`` (level
    0), or ``None`` when it cannot be opened."""
    if not path:
        return None
    try:
        from napari_zarr_vectors.format.store import open_store

        store = open_store(str(path))
        return set(store.object_attributes(0)), set(store.vertex_attribute_names(0))
    except Exception:  # noqa: BLE001 - the store may be gone; fall back to the data
        return None


def _source_groups(path: str) -> tuple[dict[str, np.ndarray], dict[int, str]]:
    """The group attributes and group names of the store at ``path`` (level 0); empty when
    it is gone."""
    try:
        from napari_zarr_vectors.format.store import open_store

        store = open_store(str(path))
        attrs = {str(k): np.asarray(v) for k, v in store.group_attributes(0).items()}
        return attrs, store.group_names(0)
    except Exception:  # noqa: BLE001 - the store may be gone: the layer's data is still saved
        return {}, {}


def _split(
    features: dict[str, np.ndarray], ids: np.ndarray | None, attributes: LayerAttributes
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Per-row features -> (vertex attributes, object attributes by ascending object id).

    Only layers read from a store have object attributes joined onto their rows: the
    store's own object attribute names decide (when it can be opened), else columns that
    are constant within every object. Other layers' features are vertex attributes.
    """
    columns = regroup_channels(features, skip=_DERIVED)
    meta = meta_of(attributes)
    if ids is None or not meta:
        return columns, {}
    names = _store_names(meta.get("path"))
    obj, first = np.unique(ids, return_index=True)
    _, inverse = np.unique(ids, return_inverse=True)
    vertex: dict[str, np.ndarray] = {}
    per_object: dict[str, np.ndarray] = {}
    for name, values in columns.items():
        bare = name[len("object_") :] if name.startswith("object_") else name
        if names is not None:
            is_object = name in names[0] or (bare in names[0] and name not in names[1])
        else:
            is_object = _constant_per_object(values, first, inverse.reshape(-1))
        if is_object:
            per_object[bare if names is not None and bare in names[0] else name] = values[first]
        else:
            vertex[name] = values
    return vertex, per_object


def _per_object(attrs: dict[str, np.ndarray], path_ids: np.ndarray) -> dict[str, np.ndarray]:
    """Object attributes by ascending object id -> one row per path (``path_ids`` order)."""
    rows = np.searchsorted(distinct(path_ids), path_ids)
    return {k: np.asarray(v)[rows] for k, v in attrs.items()}


def _constant_per_object(values: np.ndarray, first: np.ndarray, inverse: np.ndarray) -> bool:
    values = np.asarray(values)
    ref = values[first][inverse]
    same = values == ref
    if values.dtype.kind == "f":
        same |= np.isnan(values) & np.isnan(ref)
    return bool(np.all(same))


def _view(attributes: LayerAttributes) -> LayerMeta:
    """The typed view of the layer's ``metadata["zarr_vectors"]``."""
    return LayerMeta.from_layer(attributes)
