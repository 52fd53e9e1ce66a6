"""Geometry -> napari layer data tuples, one function per geometry type.

Everything here is a pure function of a :class:`~napari_zarr_vectors.format.geometry.Geometry`
and a :class:`StoreInfo` (what the layers need to know about the store besides the geometry).
No store access, no Qt, no viewer. Work is vectorised numpy: no Python loop runs per vertex,
per edge or per face (loops run over attribute names, groups or path *lengths* only).

Coordinates: store -> layer data in napari axis order, as :mod:`napari_zarr_vectors.napari.coords`
describes (``docs/coordinates.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from napari_zarr_vectors.format.geometry import Geometry, GeometryType, flat_paths
from napari_zarr_vectors.format.missing import take_by_id
from napari_zarr_vectors.napari.colour.defaults import (
    DefaultColour,
    default_colour_by,
    default_point_colour,
    direction_colour,
    direction_feature,
    edge_colour_kwargs,
    flat_colormap,
    id_hue_colormap,
    id_hues,
    lifted_viridis,
    n_unique,
)
from napari_zarr_vectors.napari.colour.spec import finite_range
from napari_zarr_vectors.napari.conventions import (
    DIRECTION,
    GROUP_ID,
    GROUPS,
    META,
    META_FIELDS,
    NO_TIME,
    OBJECT_ID,
    LayerMeta,
    split_channels,
)
from napari_zarr_vectors.napari.coords import (
    FLIP_WINDING,
    axis_reversal_is_mirror,
    placement_mirrors,
)
from napari_zarr_vectors.napari.layerdata.placement import Placement

LayerData = tuple[Any, dict[str, Any], str]

#: how Points, Vectors and Surface layers draw in a 2-D view: everything inside the slab
#: ``dims.point ± dims.thickness / 2`` (napari's default draws one data unit around the
#: slice, whatever the slab: a thin, often empty slice of 3-D data)
SLAB_PROJECTION = "all"
#: Shapes layers are slow beyond about a thousand shapes (0.5 s to build 1,000 paths, 5 s for
#: 10,000). A Shapes layer is never created with more shapes than this.
SHAPES_MAX_OBJECTS = 1_000


@dataclass(frozen=True)
class StoreInfo:
    """What the layer builders need to know about a store, besides the geometry.

    Built from a store by :func:`.store_info.store_info`; tests build it by hand.

    Attributes
    ----------
    path, name
        Store path and display name (folder name without ``.zarrvectors``).
    geometry_type
        The store's geometry type.
    axes, units
        Store axis names and units (``None`` when undeclared), in store column order.
    axis_types
        Store axis types (``"space"``, ``"time"``, ``"channel"``, ...), store column order;
        empty: every axis is a space axis.
    bounds
        ``(lo, hi)`` store bounds in store column order.
    level
        The level the geometry was read from.
    scale
        World units per layer data unit, in store column order (see module docstring).
    object_attributes, groups
        As returned by ``store.object_attributes(level)`` and ``store.groups(level)``.
    lod
        The layers are managed by a level-of-detail controller (their level changes with
        the view): layer names do not carry the level.
    shapes_hint
        The most shapes any view of the store can need (e.g. its level-0 object count).
        When set, it decides Shapes vs. the fast layer type instead of the shapes of this
        one geometry, so every refresh of a store builds the same layer types.
    level_vertex_count
        The whole level's vertex count: point sizes follow the level's density rather than
        the number of points one view loaded.
    shared_vertex_attributes
        Vertex attributes stored at every level (level-of-detail layers only).
    n_objects
        How many objects the level's object index holds (0: unknown or none). Skeletons and
        graphs are coloured one colour per object when the store has several, whatever one
        read holds (one neuron isolated or filtered keeps its colour).
    """

    path: str
    name: str
    geometry_type: str
    axes: tuple[str, ...]
    units: tuple[str | None, ...]
    bounds: tuple[np.ndarray, np.ndarray]
    level: int = 0
    axis_types: tuple[str, ...] = ()
    scale: np.ndarray | None = None
    #: store -> world affine, store column order (``None``: world = stored coordinates)
    affine: np.ndarray | None = None
    #: the store is shown in its stored space (its own placement left out of ``affine``)
    stored_space: bool = False
    object_attributes: Mapping[str, np.ndarray] = field(default_factory=dict)
    groups: Mapping[int, np.ndarray] = field(default_factory=dict)
    lod: bool = False
    shapes_hint: int | None = None
    level_vertex_count: int | None = None
    #: scalar vertex attributes every level of the store holds (level-of-detail layers take
    #: their default colouring from these, so it does not change with the level)
    shared_vertex_attributes: tuple[str, ...] = ()
    n_objects: int = 0

    @property
    def ndim(self) -> int:
        return len(self.axes)

    @property
    def placement(self) -> Placement:
        """Where the layers put the store's coordinates (axis order, scale, affine)."""
        return Placement(
            self.axis_types or ("space",) * self.ndim,
            self.world_scale,
            self.affine,
            self.stored_space,
        )

    @property
    def order(self) -> np.ndarray:
        """Store column of each napari axis of the layer data (:attr:`Placement.order`)."""
        return self.placement.order

    @property
    def world_order(self) -> np.ndarray:
        """World column of each napari world axis (:attr:`Placement.world_order`): the same
        as :attr:`order` unless the placement permutes axes."""
        return self.placement.world_order

    @property
    def napari_affine(self) -> np.ndarray | None:
        """The layers' napari ``affine`` (napari axis order, ``None`` without a placement):
        ``world[world_order] = M @ [stored[order], 1]``."""
        return self.placement.napari_affine()

    @property
    def space(self) -> np.ndarray:
        """Store columns of the space axes, in store order."""
        return self.placement.space

    @property
    def n_lead(self) -> int:
        """Number of leading non-space napari axes (sliders: time, channel, ...)."""
        return self.ndim - len(self.space)

    @property
    def time_column(self) -> bool:
        """Tracks layers take their time column from the store: the store has exactly one
        non-space axis, never below 0 (napari Tracks hold times >= 0 plus 2-D or 3-D
        positions), and two or three space axes."""
        if self.n_lead != 1 or len(self.space) not in (2, 3):
            return False
        return bool(np.asarray(self.bounds[0], dtype=float)[self.order[0]] >= 0)

    @property
    def paths_as_tracks(self) -> bool:
        """Paths become a napari Tracks layer: a store of space axes only (2-D or 3-D, a
        hidden time at 0), or one whose single non-space axis is a time axis that Tracks
        take as their time column (a channel would make napari draw "tails" across
        channels)."""
        if self.n_lead == 0:
            return self.ndim in (2, 3)
        return self.time_column and self.axis_types[self.order[0]] == "time"

    @property
    def tracks_fit(self) -> bool:
        """napari Tracks can hold this store's axes: a time column from the store
        (:attr:`time_column`) or a hidden one (space axes only, 2-D or 3-D)."""
        return self.time_column or (self.n_lead == 0 and self.ndim in (2, 3))

    @property
    def world_scale(self) -> np.ndarray:
        """``scale`` as a float array (ones when unset), store column order."""
        if self.scale is None:
            return np.ones(self.ndim)
        return np.asarray(self.scale, dtype=float)


# --------------------------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------------------------


def layers_from_geometry(
    geometry: Geometry, info: StoreInfo, *, bounds_layer: bool = True
) -> list[LayerData]:
    """All layer data tuples for ``geometry``, the store-bounds box first when asked for.

    The bounds box makes the viewer's extent (camera reset, dims slider ranges) equal the
    store bounds even when the data does not touch them, or when only part of the store is
    loaded.
    """
    builders: dict[str, Callable[[Geometry, StoreInfo], list[LayerData]]] = {
        GeometryType.POINT_CLOUD: point_cloud_layers,
        GeometryType.LINE: line_layers,
        GeometryType.POLYLINE: path_layers,
        GeometryType.STREAMLINE: path_layers,
        GeometryType.GRAPH: graph_layers,
        GeometryType.SKELETON: graph_layers,
        GeometryType.MESH: mesh_layers,
    }
    try:
        build = builders[geometry.geometry_type]
    except KeyError:
        raise ValueError(f"unknown geometry type {geometry.geometry_type!r}") from None
    out = [bounds_box_layer(info)] if bounds_layer else []
    if geometry.vertex_count:
        built = build(geometry, info)
        for _, kwargs, _ in built:
            columns = object_columns(kwargs.get("features") or {}, info)
            kwargs["metadata"][META]["object_columns"] = columns
        out.extend(built)
    return out


def object_columns(features: Mapping[str, np.ndarray], info: StoreInfo) -> list[str]:
    """The feature columns holding the object's attributes and groups (joined onto each row
    by :func:`_object_features`), as opposed to the row's own attributes: what hover lists
    with the object id (``metadata["zarr_vectors"]["object_columns"]``).

    A store object attribute whose name a vertex or edge attribute already took is the
    ``object_``-prefixed column (:func:`_merge`)."""
    names = [GROUP_ID, GROUPS]
    for name, values in info.object_attributes.items():
        names.extend(split_channels(name, np.zeros((1, *np.shape(values)[1:]))))
    return [f"object_{n}" if f"object_{n}" in features else n for n in names if n in features]


# --------------------------------------------------------------------------------------------
# per geometry type
# --------------------------------------------------------------------------------------------


def point_cloud_layers(geometry: Geometry, info: StoreInfo) -> list[LayerData]:
    """A point cloud as one Points layer; every attribute and id is a feature."""
    return [_points_layer(geometry, info, role="points", label="points")]


def line_layers(geometry: Geometry, info: StoreInfo) -> list[LayerData]:
    """Line segments: Shapes ``line`` for few lines in 2-D stores, else Vectors."""
    starts, ends, features = _segments(geometry, info)
    colour = direction_colour(features)
    return [
        _segment_layer(
            starts, ends, features, info, colour, role="lines", label="lines", geometry=geometry
        )
    ]


def path_layers(geometry: Geometry, info: StoreInfo) -> list[LayerData]:
    """Polylines / streamlines: Shapes ``path`` for few objects in 2-D stores, else Tracks
    (with the store's time axis as their time column when it has one,
    :attr:`StoreInfo.paths_as_tracks`), else -- a channel slider, time and channel, one or
    four space axes -- their segments as Vectors."""
    label = "streamlines" if geometry.geometry_type == GeometryType.STREAMLINE else "polylines"
    paths = [np.asarray(p, dtype=np.int64) for p in geometry.paths]
    if _use_shapes(info, len(paths)):
        return [_path_shapes_layer(geometry, paths, info, label)]
    if not info.paths_as_tracks:
        starts, ends, features = _segments(geometry, info)
        return [
            _segment_layer(
                starts,
                ends,
                features,
                info,
                DefaultColour(direct="#40c0ff"),
                role=label,
                label=label,
                geometry=geometry,
            )
        ]
    return [_tracks_layer(geometry, paths, info, label, label + _fast_note(info, len(paths)))]


def graph_layers(geometry: Geometry, info: StoreInfo) -> list[LayerData]:
    """Graphs and skeletons: edges (Vectors, or Shapes ``line`` when few) + nodes (Points)."""
    kind = geometry.geometry_type
    starts, ends, features = _segments(geometry, info)
    if _per_object(features, info):
        default = default_colour_by(features, OBJECT_ID)
    else:
        default = DefaultColour(direct="#ffb000" if kind == GeometryType.SKELETON else "#40c0ff")
    edges = _segment_layer(
        starts,
        ends,
        features,
        info,
        default,
        role="edges",
        label=f"{kind} edges",
        geometry=geometry,
    )
    # a skeleton's nodes sit on its edges, densely: beads a little wider than the edges, in
    # the edges' colours (one per skeleton), so the skeleton reads as one object; a graph's
    # nodes are its subject, drawn at half the points' size in their own colouring
    skeleton = kind == GeometryType.SKELETON
    size = 1.5 * _line_width(info) if skeleton else 0.5 * _level_point_size(geometry, info)
    nodes = _points_layer(
        geometry,
        info,
        role="nodes",
        label=f"{kind} nodes",
        size=size,
        by_object=skeleton,
    )
    return [edges, nodes]


def mesh_layers(geometry: Geometry, info: StoreInfo) -> list[LayerData]:
    """A mesh level as one Surface; vertex attributes and object ids are features.

    ``vertex_values`` (what the Surface colours by) default to the first scalar vertex
    attribute, else the object id. A level that stores vertices but no faces (the coarse
    levels zarr-vectors writes: metavertices only) is drawn as Points (role ``"vertices"``)
    instead of an invisible Surface.
    """
    faces = np.asarray(geometry.faces, dtype=np.int64).reshape(-1, 3)
    if not len(faces):
        return [_points_layer(geometry, info, role="vertices", label="mesh vertices")]
    features = _vertex_features(geometry, info, np.arange(geometry.vertex_count))
    name = _first_scalar(features, _attribute_columns(geometry.vertex_attributes))
    if name is None and OBJECT_ID in features:
        name = OBJECT_ID
    if name is None:
        values = np.zeros(geometry.vertex_count, np.float32)
    elif name == OBJECT_ID:  # each object in its own bright colour, as on the other layers
        values = id_hues(features[name])
    else:
        values = np.asarray(features[name], dtype=np.float32)
    if axis_reversal_is_mirror(len(info.space)) != placement_mirrors(info.affine, info.space):
        faces = faces[:, FLIP_WINDING]
    kwargs = _common_kwargs(info, "mesh", "mesh", geometry, extra={"colour_by": name})
    kwargs.update(
        features=features,
        colormap=id_hue_colormap() if name == OBJECT_ID else lifted_viridis(),
        shading="smooth",
        projection_mode=SLAB_PROJECTION,
    )
    if name is not None:
        kwargs["contrast_limits"] = (0.0, 1.0) if name == OBJECT_ID else finite_range(values)
    return [((_layer_coords(geometry.positions, info), faces, values), kwargs, "surface")]


def bounds_box_layer(info: StoreInfo) -> LayerData:
    """The store bounds as a wireframe box; its world extent is exactly the store bounds,
    in napari axis order, whatever the axes.

    A Tracks layer (projected whole in 2-D views) when napari Tracks can hold the axes
    (:attr:`StoreInfo.tracks_fit`): each edge of the box of the space axes is one two-vertex
    track, at ``t = 0`` on a hidden time axis, or -- a store with a time (or other
    non-space) axis -- once at its lower and once at its upper bound, with a tail that
    keeps the lower copy drawn at every time. Else (e.g. time and channel axes, one or
    four space axes) the edges of the box of every axis as a Vectors layer.
    """
    lo, hi = (np.asarray(b, dtype=float) for b in info.bounds)
    tracks = info.tracks_fit
    box_axes = info.space if tracks else np.arange(info.ndim)
    k = len(box_axes)
    corners = np.array(np.meshgrid(*[[0, 1]] * k, indexing="ij")).reshape(k, -1).T
    # box edges join corners that differ in exactly one axis
    a, b = np.nonzero(np.triu(np.abs(corners[:, None, :] - corners[None, :, :]).sum(-1) == 1))
    ends = np.stack([corners[a], corners[b]], axis=1).reshape(-1, k)  # 0/1 per box axis
    pts = np.tile(lo, (len(ends), 1))
    pts[:, box_axes] += ends * (hi - lo)[box_axes]
    if not tracks:
        coords = _layer_coords(pts, info).reshape(-1, 2, info.ndim)
        kwargs = _common_kwargs(info, "bounds", "bounds", None)
        kwargs.update(
            edge_color="#999999", edge_width=0.0, length=1.0, vector_style="line", opacity=0.5
        )
        return np.stack([coords[:, 0], coords[:, 1] - coords[:, 0]], axis=1), kwargs, "vectors"
    kwargs = _common_kwargs(info, "bounds", "bounds", None, tracks=True)
    if info.time_column:  # the box at the first and the last time of the bounds
        t = info.order[0]
        upper = pts.copy()
        upper[:, t] = hi[t]
        pts = np.vstack([pts, upper])
        # a tail ten times the time span: the lower copy fades by at most a tenth
        kwargs.update(tail_length=int(np.ceil(10.0 * (hi[t] - lo[t] + 1.0))), head_length=0)
    track_ids = np.repeat(np.arange(len(pts) // 2), 2)
    data = _track_rows(track_ids, _layer_coords(pts, info), info)
    kwargs.update(
        features={"box": np.zeros(len(track_ids))},
        color_by="box",
        colormaps_dict={"box": flat_colormap("box", (0.6, 0.6, 0.6, 1.0))},
        tail_width=1.0,
        opacity=0.5,
        blending="translucent",
    )
    return data, kwargs, "tracks"


def _track_rows(track_ids: np.ndarray, coords: np.ndarray, info: StoreInfo) -> np.ndarray:
    """napari Tracks data: track id, time, position. The time is the store's time axis
    (already the first napari axis of ``coords``) when it has one
    (:attr:`StoreInfo.time_column`), else 0 on a hidden axis."""
    if info.time_column:
        return np.column_stack([track_ids, coords])
    return np.column_stack([track_ids, np.zeros(len(coords)), coords])


# --------------------------------------------------------------------------------------------
# layer builders shared by the types
# --------------------------------------------------------------------------------------------


def _per_object(features: Mapping[str, np.ndarray], info: StoreInfo) -> bool:
    """Whether rows are coloured by their object: the store (else these rows) has several."""
    return OBJECT_ID in features and (info.n_objects > 1 or n_unique(features[OBJECT_ID]) > 1)


def _points_layer(
    geometry: Geometry,
    info: StoreInfo,
    *,
    role: str,
    label: str,
    size: float | None = None,
    by_object: bool = False,
) -> LayerData:
    """Points of every vertex; ``by_object``: in the colours of their objects when there
    are several (a skeleton's nodes, as its edges), else the points' default colouring."""
    rows = np.arange(geometry.vertex_count)
    features = _vertex_features(geometry, info, rows)
    if by_object and _per_object(features, info):
        colour = default_colour_by(features, OBJECT_ID)
    else:
        colour = default_point_colour(
            geometry.vertex_attributes,
            features,
            _first_scalar(features, _attribute_columns(geometry.vertex_attributes)),
        )
    kwargs = _common_kwargs(info, role, label, geometry, extra={"colour_by": colour.source})
    kwargs.update(
        features=features,
        size=_level_point_size(geometry, info) if size is None else size,
        # no border: napari's dim-grey border still rims each marker (its antialiasing),
        # which greys out dense points in 2-D
        border_width=0.0,
        border_color="transparent",
        projection_mode=SLAB_PROJECTION,
    )
    if colour.feature is not None:
        kwargs.update(face_color=colour.feature, face_colormap=colour.colormap)
        if colour.contrast_limits is not None:
            kwargs["face_contrast_limits"] = colour.contrast_limits
    elif colour.direct is not None:
        kwargs["face_color"] = colour.direct
    return _layer_coords(geometry.positions, info), kwargs, "points"


def _segment_layer(
    starts: np.ndarray,
    ends: np.ndarray,
    features: dict[str, np.ndarray],
    info: StoreInfo,
    colour: DefaultColour,
    *,
    role: str,
    label: str,
    geometry: Geometry,
) -> LayerData:
    """Segments as Shapes ``line`` (2-D stores, few segments) or else Vectors (fast)."""
    p0 = _layer_coords(starts, info)
    p1 = _layer_coords(ends, info)
    shapes = _use_shapes(info, len(p0))
    if not shapes:
        label += _fast_note(info, len(p0))
    kwargs = _common_kwargs(info, role, label, geometry, extra={"colour_by": colour.source})
    kwargs.update(features=features, edge_width=_line_width(info), **edge_colour_kwargs(colour))
    if shapes:
        kwargs.update(shape_type="line", face_color="transparent")
        return list(np.stack([p0, p1], axis=1)), kwargs, "shapes"
    kwargs.update(length=1.0, vector_style="line", projection_mode=SLAB_PROJECTION)
    return np.stack([p0, p1 - p0], axis=1), kwargs, "vectors"


def _path_shapes_layer(
    geometry: Geometry, paths: list[np.ndarray], info: StoreInfo, label: str
) -> LayerData:
    object_ids = _path_object_ids(geometry, len(paths))
    features = {OBJECT_ID: object_ids}
    _merge(features, _object_features(object_ids, info), prefix="object_")
    name = _first_scalar(features, _attribute_columns(info.object_attributes))
    if name is None and n_unique(object_ids) > 1:
        name = OBJECT_ID
    colour = (
        default_colour_by(features, name) if name is not None else DefaultColour(direct="#40c0ff")
    )
    coords = _layer_coords(geometry.positions, info)
    kwargs = _common_kwargs(info, label, label, geometry, extra={"colour_by": colour.source})
    kwargs.update(
        features=features,
        shape_type="path",
        edge_width=_line_width(info),
        face_color="transparent",
    )
    kwargs.update(edge_colour_kwargs(colour))
    return [coords[p] for p in paths], kwargs, "shapes"


def _tracks_layer(
    geometry: Geometry, paths: list[np.ndarray], info: StoreInfo, role: str, label: str
) -> LayerData:
    lengths = np.fromiter((len(p) for p in paths), dtype=np.int64, count=len(paths))
    rows = np.concatenate(paths) if paths else np.empty(0, np.int64)
    track_ids = np.repeat(np.arange(len(paths)), lengths)
    object_ids = np.repeat(_path_object_ids(geometry, len(paths)), lengths)

    features: dict[str, np.ndarray] = {OBJECT_ID: object_ids}
    _merge(features, _columns_of(geometry.vertex_attributes, rows), prefix="vertex_")
    _merge(features, _object_features(object_ids, info), prefix="object_")
    features, categories = _encode_categories(features)

    direction_value, direction_colormap = direction_feature(
        _path_tangents(geometry.positions[:, info.space], rows, lengths)
    )
    direction = _free_name(features, DIRECTION)
    features[direction] = direction_value

    if geometry.geometry_type == GeometryType.STREAMLINE:
        color_by = direction
    elif info.lod:  # the same default at every level: an attribute every level stores
        color_by = next((n for n in info.shared_vertex_attributes if n in features), direction)
    else:
        color_by = (
            _first_scalar(features, _attribute_columns(geometry.vertex_attributes)) or direction
        )
    data = _track_rows(track_ids, _layer_coords(geometry.positions[rows], info), info)
    kwargs = _common_kwargs(
        info,
        role,
        label,
        geometry,
        tracks=True,
        extra={"colour_by": color_by, "categories": categories},
    )
    kwargs.update(
        features=features,
        color_by=color_by,
        # a vertex attribute drawn by napari's own colormap: the one Colour by draws numbers
        # in (plain viridis' low end vanishes on black); registered, Tracks take it by name
        colormap=lifted_viridis().name,
        colormaps_dict={direction: direction_colormap},
        tail_width=2.0,
        # napari's default (additive) turns dense tractography white; translucent lines
        # keep their colours where thousands overlap
        blending="translucent",
    )
    return data, kwargs, "tracks"


# --------------------------------------------------------------------------------------------
# features
# --------------------------------------------------------------------------------------------


def _vertex_features(geometry: Geometry, info: StoreInfo, rows: np.ndarray) -> dict[str, Any]:
    """Per-vertex table: object id, vertex attributes, joined object attributes, group ids."""
    features: dict[str, np.ndarray] = {}
    object_ids = None
    if geometry.vertex_object_ids is not None:
        object_ids = np.asarray(geometry.vertex_object_ids, dtype=np.int64)[rows]
        features[OBJECT_ID] = object_ids
    _merge(features, _columns_of(geometry.vertex_attributes, rows), prefix="vertex_")
    if object_ids is not None:
        _merge(features, _object_features(object_ids, info), prefix="object_")
    return features


def _segments(
    geometry: Geometry, info: StoreInfo
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Segment endpoints and a per-segment feature table.

    Uses ``geometry.edges`` (graph, skeleton); lines use consecutive vertices of
    ``geometry.paths``, so every segment carries its own path's object id even where coarse
    levels share a metavertex between objects. Features: object id (of the path, or of the
    first vertex), edge attributes, the first vertex's attributes, the object's attributes.
    """
    edges = np.asarray(geometry.edges, dtype=np.int64).reshape(-1, 2)
    edge_attrs: Mapping[str, np.ndarray] = geometry.edge_attributes
    object_ids = None
    if geometry.paths and (len(edges) == 0 or geometry.geometry_type == GeometryType.LINE):
        rows, lengths = flat_paths(geometry.paths)
        ends_of_paths = np.cumsum(lengths) - 1
        keep = np.ones(len(rows), bool)
        keep[ends_of_paths] = False  # a segment starts at every vertex but a path's last
        first = np.nonzero(keep)[0]
        edges = np.column_stack([rows[first], rows[first + 1]])
        path_of_row = np.repeat(np.arange(len(lengths)), lengths)
        object_ids = _path_object_ids(geometry, len(lengths))[path_of_row[first]]
        edge_attrs = {}
    elif geometry.vertex_object_ids is not None:
        object_ids = np.asarray(geometry.vertex_object_ids, dtype=np.int64)[edges[:, 0]]

    features: dict[str, np.ndarray] = {}
    if object_ids is not None:
        features[OBJECT_ID] = object_ids
    _merge(features, _columns_of(edge_attrs, slice(None)), prefix="edge_")
    _merge(features, _columns_of(geometry.vertex_attributes, edges[:, 0]), prefix="vertex_")
    if object_ids is not None:
        _merge(features, _object_features(object_ids, info), prefix="object_")
    starts = geometry.positions[edges[:, 0]]
    ends = geometry.positions[edges[:, 1]]
    if geometry.geometry_type == GeometryType.LINE:
        value, _ = direction_feature((ends - starts)[:, info.space])
        features[_free_name(features, DIRECTION)] = value
    return starts, ends, features


def _object_features(object_ids: np.ndarray, info: StoreInfo) -> dict[str, np.ndarray]:
    """Object attributes and group membership, joined onto rows with object ``object_ids``."""
    out: dict[str, np.ndarray] = {}
    for name, values in info.object_attributes.items():
        out.update(split_channels(name, take_by_id(values, object_ids, as_float=True)))
    if info.groups:
        colour_group, listing = _group_membership(info.groups)
        out[GROUP_ID] = take_by_id(colour_group, object_ids, fill=-1)
        if listing is not None:
            out[GROUPS] = take_by_id(listing, object_ids)
    return out


def _group_membership(groups: Mapping[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray | None]:
    """Per object id: the group it is coloured as (-1: none), and, when some object is in
    several groups, a ``"g1;g2"`` listing per object (``None`` otherwise).

    An object in several groups is coloured as the *smallest* of them (fewest members; ties:
    the lowest id), so a group nested in a larger one still gets its colour (the Colour-by
    legend states the rule)."""
    gids = np.fromiter(groups.keys(), dtype=np.int64, count=len(groups))
    members = [np.asarray(v, dtype=np.int64).ravel() for v in groups.values()]
    counts = np.fromiter((len(m) for m in members), np.int64, len(members))
    oids = np.concatenate(members) if members else np.empty(0, np.int64)
    pair_gids = np.repeat(gids, counts)
    pair_sizes = np.repeat(counts, counts)
    valid = oids >= 0
    oids, pair_gids, pair_sizes = oids[valid], pair_gids[valid], pair_sizes[valid]
    n = int(oids.max()) + 1 if len(oids) else 0
    first = np.full(n, -1, dtype=np.int64)
    by_size = np.lexsort((pair_gids, pair_sizes, oids))  # per object: smallest group first
    heads = np.ones(len(by_size), bool)
    heads[1:] = oids[by_size][1:] != oids[by_size][:-1]
    first[oids[by_size][heads]] = pair_gids[by_size][heads]
    per_object = np.bincount(oids, minlength=n)
    if not (per_object > 1).any():
        return first, None
    order = np.lexsort((pair_gids, oids))
    split = np.split(pair_gids[order], np.cumsum(per_object)[:-1])
    listing = np.array([";".join(map(str, g)) for g in split], dtype=object)
    return first, listing


def _columns_of(attrs: Mapping[str, np.ndarray], rows: np.ndarray | slice) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for name, values in attrs.items():
        out.update(split_channels(name, np.asarray(values)[rows]))
    return out


def _merge(target: dict[str, np.ndarray], columns: Mapping[str, np.ndarray], prefix: str) -> None:
    """Add ``columns`` to ``target``; a name already taken gets ``prefix``."""
    for name, values in columns.items():
        key = name if name not in target else f"{prefix}{name}"
        target[key] = values


def _free_name(features: Mapping[str, np.ndarray], name: str) -> str:
    """``name``, or ``zv_<name>`` when a store attribute already uses it."""
    return name if name not in features else f"zv_{name}"


def _attribute_columns(attrs: Mapping[str, np.ndarray]) -> list[str]:
    """Feature column names made from ``attrs`` (before any collision prefix)."""
    names: list[str] = []
    for name, values in attrs.items():
        values = np.asarray(values)
        if values.ndim <= 1 or int(np.prod(values.shape[1:])) == 1:
            names.append(name)
    return names


def _encode_categories(
    features: dict[str, np.ndarray],
) -> tuple[dict[str, np.ndarray], dict[str, list[str]]]:
    """Replace non-numeric columns (text, booleans) with integer codes (Tracks colour
    numbers only, and napari's Tracks cannot normalise booleans).

    Returns the new table and ``{name: categories}``; code ``i`` means ``categories[i]``
    (a missing string reads ``"None"``, booleans ``"False"`` / ``"True"``).
    """
    categories: dict[str, list[str]] = {}
    out: dict[str, np.ndarray] = {}
    for name, values in features.items():
        if values.dtype.kind in "iuf":
            out[name] = values
            continue
        cats, codes = np.unique(values.astype(str), return_inverse=True)
        out[name] = codes.astype(np.int64)
        categories[name] = cats.tolist()
    return out, categories


# --------------------------------------------------------------------------------------------
# colour
# --------------------------------------------------------------------------------------------


def _first_scalar(features: Mapping[str, np.ndarray], candidates: Sequence[str]) -> str | None:
    """First candidate column that is numeric (not boolean: two categories), finite
    everywhere and not constant."""
    for name in candidates:
        values = features.get(name)
        if values is None or values.dtype.kind not in "iuf" or len(values) == 0:
            continue
        if np.isfinite(values).all() and np.ptp(values) > 0:
            return name
    return None


def _path_tangents(positions: np.ndarray, rows: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Central-difference tangent at every path vertex (one-sided at path ends)."""
    if not len(rows):
        return np.empty((0, positions.shape[1]))
    ends = np.cumsum(lengths)
    starts = ends - lengths
    idx = np.arange(len(rows))
    is_start = np.zeros(len(rows), bool)
    is_end = np.zeros(len(rows), bool)
    nonempty = lengths > 0
    is_start[starts[nonempty]] = True
    is_end[ends[nonempty] - 1] = True
    prev = np.where(is_start, idx, idx - 1)
    nxt = np.where(is_end, idx, idx + 1)
    pts = positions[rows]
    return pts[nxt] - pts[prev]


# --------------------------------------------------------------------------------------------
# coordinates, sizes, common kwargs
# --------------------------------------------------------------------------------------------


def _use_shapes(info: StoreInfo, n_shapes: int) -> bool:
    """Shapes only for 2-D stores (3-D shapes vanish from 2-D slices) and few shapes."""
    if info.shapes_hint is not None:
        return info.ndim == 2 and n_shapes > 0 and info.shapes_hint <= SHAPES_MAX_OBJECTS
    return info.ndim == 2 and 0 < n_shapes <= SHAPES_MAX_OBJECTS


def _fast_note(info: StoreInfo, n_shapes: int) -> str:
    """Name suffix telling users a fast layer replaced Shapes (2-D stores, too many shapes)."""
    if info.shapes_hint is not None:
        n_shapes = info.shapes_hint
    if info.ndim == 2 and n_shapes > SHAPES_MAX_OBJECTS:
        return f" (fast view: {n_shapes:,} > {SHAPES_MAX_OBJECTS:,} shapes)"
    return ""


def _data_extent(info: StoreInfo) -> np.ndarray:
    """Extent of the space axes in data units (sizes and widths are spatial)."""
    lo, hi = (np.asarray(b, dtype=float) for b in info.bounds)
    return (np.abs(hi - lo) / info.world_scale)[info.space]


def _point_size(info: StoreInfo, n: int) -> float:
    """Half the mean spacing of ``n`` points spread over the bounds, within [1/1000, 1/50] of
    the largest bounds edge (data units)."""
    extent = _data_extent(info)
    largest = float(extent.max()) if extent.size and extent.max() > 0 else 1.0
    spacing = float(np.prod(np.maximum(extent, largest * 1e-3)) / max(n, 1)) ** (
        1 / max(len(extent), 1)
    )
    return float(np.clip(0.5 * spacing, largest / 1000, largest / 50))


def _level_point_size(geometry: Geometry, info: StoreInfo) -> float:
    return _point_size(info, info.level_vertex_count or geometry.vertex_count)


def _line_width(info: StoreInfo) -> float:
    extent = _data_extent(info)
    largest = float(extent.max()) if extent.size and extent.max() > 0 else 1.0
    return largest / 200


def _path_object_ids(geometry: Geometry, n_paths: int) -> np.ndarray:
    ids = np.asarray(geometry.path_object_ids, dtype=np.int64)
    return ids if len(ids) == n_paths else np.arange(n_paths, dtype=np.int64)


def _units(info: StoreInfo) -> tuple[str, ...] | None:
    """napari units in napari order, or None when the store declares none (or pint rejects
    one); undeclared axes of a partly declared store become ``pixel``."""
    if not any(info.units):
        return None
    import pint

    registry = pint.get_application_registry()
    units = tuple(u if u else "pixel" for u in np.asarray(info.units, object)[info.world_order])
    try:
        for u in units:
            registry.Unit(u)
    except (pint.errors.UndefinedUnitError, ValueError, TypeError, AttributeError):
        return None
    return units


def _time_label(axes: Sequence[str]) -> str:
    return NO_TIME if NO_TIME not in axes else f"({NO_TIME})"


def layer_name(info: StoreInfo, label: str) -> str:
    """``"<store name> <label>"``, with the level when it is not level 0 (static layers;
    a level-of-detail layer's level is in its metadata and the status bar instead).

    Leading words of ``label`` that repeat the end of the store name are said once: a store
    named ``mesh`` gives ``mesh`` and ``mesh bounds``, ``skeleton`` gives ``skeleton nodes``.
    """
    name = _join_words(str(info.name), label)
    return name if info.level == 0 or info.lod else f"{name} (level {info.level})"


def _join_words(head: str, tail: str) -> str:
    words = tail.split()
    last = head.split()[-1].lower() if head.split() else ""
    while words and words[0].lower().rstrip("s") == last.rstrip("s"):
        words = words[1:]
    return " ".join([head, *words])


def _common_kwargs(
    info: StoreInfo,
    role: str,
    label: str,
    geometry: Geometry | None,
    *,
    tracks: bool = False,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    scale = info.world_scale[info.order]
    labels = tuple(info.axes[i] for i in info.world_order)
    units = _units(info)
    if tracks and not info.time_column:  # a hidden time axis, every vertex at t = 0
        scale = np.concatenate([[1.0], scale])
        labels = (_time_label(info.axes), *labels)
        units = ("pixel", *units) if units is not None else None
    placed = info.affine is not None
    chunks = None if geometry is None else geometry.chunks
    extra = {k: v for k, v in (extra or {}).items() if v is not None and v != {}}
    typed = {k: extra.pop(k) for k in [k for k in extra if k in META_FIELDS]}
    meta = LayerMeta(
        path=info.path,
        name=info.name,
        geometry_type=info.geometry_type,
        level=info.level,
        role=role,
        axes=tuple(info.axes),
        units=tuple(info.units),
        axis_types=tuple(info.axis_types) or ("space",) * len(info.axes),
        axis_order="reversed" if info.n_lead == 0 else "non-space first, space reversed",
        napari_order=tuple(info.order.tolist()),
        scale=tuple(info.world_scale.tolist()),
        bounds=tuple(tuple(np.asarray(b, float).tolist()) for b in info.bounds),
        vertex_count=None if geometry is None else geometry.vertex_count,
        chunks=None if chunks is None else np.asarray(chunks).tolist(),
        world_affine=np.asarray(info.affine, float).tolist() if placed else None,
        world_order=tuple(info.world_order.tolist()) if placed else None,
        other=extra,
        **typed,
    )
    kwargs: dict[str, Any] = {
        "name": layer_name(info, label),
        "scale": tuple(float(s) for s in scale),
        "axis_labels": labels,
        "metadata": {META: meta.to_dict()},
    }
    if units is not None:
        kwargs["units"] = units
    if info.affine is not None:
        kwargs["affine"] = info.placement.napari_affine(len(scale))
    return kwargs


def _layer_coords(positions: np.ndarray, info: StoreInfo) -> np.ndarray:
    """Store coordinates (store column order) -> this store's layer data (napari order)."""
    return info.placement.to_layer_data(positions)
