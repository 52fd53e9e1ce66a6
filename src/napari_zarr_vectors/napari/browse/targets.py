"""Layer glue for browsing: which store a layer shows, filtering, picking, isolating.

No Qt here (napari layer models only): the widgets call these functions, tests call them
directly. The browse logic proper (filters, colour tables) is in :mod:`.browse`.

Targets
-------
The widgets act on a *target*: the object that owns a store's data layers and applies object
filters to them at every level. That is the level-of-detail controller
(:func:`napari_zarr_vectors.napari.lod.controller.controller_for`) when the store was opened
through it. Layers opened without a controller (e.g. a plain ``viewer.open`` in an older
session) get a :class:`StaticTarget` with the same small interface (``store``, ``layers``,
``level``, ``set_object_filter``, ``events.refreshed``/``level_changed``), which filters the
loaded data directly: Points through ``shown``, other layers by slicing their loaded data.

Colour
------
Colouring layers (the Colour-by widget's choice, kept at every level) lives in
:mod:`.colour`; filtering a layer without a controller re-applies it from there.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard

import numpy as np

from napari_zarr_vectors.format.distinct import distinct
from napari_zarr_vectors.format.geometry import GeometryType
from napari_zarr_vectors.format.objects import shared_fragments_cause
from napari_zarr_vectors.napari.browse.filters import FilterState
from napari_zarr_vectors.napari.browse.static_filter import (
    LayerSnapshot,
    filter_layer,
    row_object_ids,
)
from napari_zarr_vectors.napari.browse.table import ObjectTable
from napari_zarr_vectors.napari.colour.live import (
    apply_colour,
    colour_spec_of,
    layer_kind,
    opening_colour,
    reapply_colour,
    restore_opening_colour,
)
from napari_zarr_vectors.napari.colour.spec import ColourSpec
from napari_zarr_vectors.napari.conventions import meta_of
from napari_zarr_vectors.napari.layerdata.build import (
    META,
    StoreInfo,
    layers_from_geometry,
)
from napari_zarr_vectors.napari.layerdata.store_info import store_info
from napari_zarr_vectors.napari.lod.controller import (
    ControllerEvents,
    ZVLayerController,
    controller_for,
)
from napari_zarr_vectors.napari.lod.swap import new_layer
from napari_zarr_vectors.napari.lod.viewer_layers import add_layer
from napari_zarr_vectors.napari.open_stores import OpenStore, open_store_for, register
from napari_zarr_vectors.napari.qa.compute import QA_ROLES

if TYPE_CHECKING:
    from napari.layers import Layer
    from napari.utils.events import Event

    from napari import Viewer
    from napari_zarr_vectors.format.api import GeometryStore
    from napari_zarr_vectors.format.geometry import Geometry

#: Layer roles that are not store data (the bounds box, isolated or selected objects drawn
#: whole, a region being drawn or the Dissect regions' outlines, a Dissect bundle).
NON_DATA_ROLES = ("bounds", "isolated", "selected", "region", "bundle")

#: How what object-level actions say on a store whose vertices' objects are not recorded
#: begins (:func:`objects_unknown` says why, after it).
OBJECTS_UNKNOWN = "object ids unknown in this store"


# --------------------------------------------------------------------------------------------
# which store, which layers
# --------------------------------------------------------------------------------------------


def is_data_layer(layer: Layer) -> bool:
    """A layer holding its store's data (not the bounds box, an isolated object, a Pyramid
    QA overlay or a level added side by side)."""
    return is_data_meta(meta_of(layer))


def is_data_meta(meta: dict | None) -> TypeGuard[dict]:
    """:func:`is_data_layer` of the layer whose ``metadata["zarr_vectors"]`` is ``meta``."""
    return (
        meta is not None
        and meta.get("role") not in (*NON_DATA_ROLES, *QA_ROLES)
        and meta.get("qa") is None
    )


def store_layers(viewer: Viewer, path: str | None) -> list[Layer]:
    """The viewer's data layers of the store at ``path``, in layer-list order."""
    return [
        layer
        for layer in viewer.layers
        if is_data_meta(meta := meta_of(layer)) and meta.get("path") == path
    ]


def controller_of(layer: Layer) -> ZVLayerController | None:
    """The level-of-detail controller driving ``layer`` (``None`` when there is none)."""
    return controller_for(layer)


class BrowseTarget(Protocol):
    """What the browse widgets act on: the layers of one open store and their object filter.
    :class:`~napari_zarr_vectors.napari.lod.controller.ZVLayerController` (level of detail)
    and :class:`StaticTarget` (layers of one level) implement it; both announce their
    changes through a :class:`~napari_zarr_vectors.napari.lod.controller.ControllerEvents`
    (``refreshed``, ``level_changed``, ``loading``)."""

    events: ControllerEvents
    open_store: OpenStore

    @property
    def store(self) -> GeometryStore: ...
    @property
    def controller(self) -> ZVLayerController | None: ...
    @property
    def layers(self) -> list[Layer]: ...
    @property
    def level(self) -> int: ...
    @property
    def locked_level(self) -> int | None: ...
    def default_colours(self) -> None:
        """Forget every colour choice on the layers and draw their default colours again."""
        ...

    @property
    def object_filter(self) -> np.ndarray | None: ...
    def set_object_filter(self, allowed_ids: np.ndarray | None) -> None: ...


def object_filter_of(layer: Layer) -> np.ndarray | None:
    """The object ids ``layer`` is filtered to (``None``: no filter): the filter of the
    browse target showing it (its controller, or the static target of its store)."""
    entry = open_store_for(layer)
    if entry is None:
        return None
    target = entry.controller or entry.static_target
    return target.object_filter if isinstance(target, ZVLayerController | StaticTarget) else None


def target_for(viewer: Viewer, layer: Layer) -> BrowseTarget | None:
    """The browse target of ``layer``: its controller, else the :class:`StaticTarget` of
    its open store. The bounds box and isolated objects lead to their store's target;
    ``None`` for other layers (or when the store has no data layers)."""
    meta = meta_of(layer)
    if meta is None:
        return None
    path = meta.get("path")
    candidates = [layer] if is_data_layer(layer) else []
    candidates += [lay for lay in store_layers(viewer, path) if lay is not layer]
    entry = next((e for e in map(open_store_for, candidates) if e is not None), None)
    if entry is None:
        entry = _adopt(store_layers(viewer, path))
        if entry is None:
            return None
    if isinstance(entry.controller, ZVLayerController):
        return entry.controller
    layers = [lay for lay in store_layers(viewer, path) if open_store_for(lay) is entry]
    target = entry.static_target
    if not isinstance(target, StaticTarget) or not target.alive():
        target = StaticTarget(entry, layers)
        entry.static_target = target
    else:
        target.update_layers(layers)
    return target


def _adopt(layers: list[Layer]) -> OpenStore | None:
    """Layers the reader did not hand over (e.g. made from saved layer data): one open
    store for them, for the geometry they show, opened from their path on first use."""
    if not layers:
        return None
    import napari_zarr_vectors as nzv

    meta = meta_of(layers[0])
    assert meta is not None  # a data layer (store_layers)
    path, kind = meta["path"], meta.get("geometry_type")

    def open_geometry() -> GeometryStore:
        store = nzv.open_store(path)
        return store.geometry(kind or store.geometry_type)

    entry = OpenStore(opener=open_geometry)
    for layer in layers:
        if (meta_of(layer) or {}).get("geometry_type") == kind:
            register(layer, entry)
    return entry


def open_store_of(layer: Layer) -> GeometryStore:
    """The store ``layer`` shows: the store object its reader opened (the geometry the
    layer shows, for a composite store)."""
    entry = open_store_for(layer) or _adopt([layer])
    assert entry is not None  # _adopt registers a layer of a store
    return entry.store


class StaticTarget:
    """Browse target for layers opened without a level-of-detail controller.

    Filters apply to the loaded data: Points through ``shown``; Tracks, Vectors, Shapes and
    Surface by replacing their data with the rows of allowed objects (the full data is kept
    and restored when the filter clears). Colour settings are re-applied after slicing.
    """

    def __init__(self, entry: OpenStore, layers: Sequence[Layer]) -> None:
        self.open_store = entry
        self._layers = [weakref.ref(layer) for layer in layers]
        self._full: dict[int, LayerSnapshot] = {}
        self.allowed: np.ndarray | None = None
        self.events = ControllerEvents()
        #: each layer's colours as it came (every row): what "(default)" draws again
        self._opening = {id(layer): opening_colour(layer) for layer in layers}

    @property
    def store(self) -> GeometryStore:
        return self.open_store.store

    @property
    def path(self) -> str:
        return self.store.path

    controller = None
    locked_level = None

    @property
    def layers(self) -> list[Layer]:
        return [lay for ref in self._layers if (lay := ref()) is not None]

    @property
    def level(self) -> int:
        layers = self.layers
        if not layers:
            return 0
        meta = meta_of(layers[0])
        assert meta is not None  # its store's data layers
        return int(meta.get("level", 0))

    @property
    def object_filter(self) -> np.ndarray | None:
        return None if self.allowed is None else self.allowed.copy()

    def alive(self) -> bool:
        return bool(self.layers)

    def update_layers(self, layers: Sequence[Layer]) -> None:
        if [id(a) for a in layers] != [id(b) for b in self.layers]:
            self._layers = [weakref.ref(layer) for layer in layers]
            for layer in layers:
                if id(layer) not in self._opening:
                    self._opening[id(layer)] = opening_colour(layer)
            if self.allowed is not None:
                self.set_object_filter(self.allowed)

    def refresh(self) -> None:
        self.set_object_filter(self.allowed)

    def default_colours(self) -> None:
        """Forget every colour choice on the layers and draw the colours they opened with
        again (of the rows the filter keeps), as a controller's reload does."""
        for layer in self.layers:
            opening = self._opening.get(id(layer))
            if opening is None:
                continue
            snap = self._full.get(id(layer))  # filtered by slicing: the rows kept
            ids = None if snap is None else row_object_ids(layer_kind(layer), snap)
            keep = None if ids is None or self.allowed is None else np.isin(ids, self.allowed)
            restore_opening_colour(layer, opening, keep)

    def set_object_filter(self, allowed_ids: np.ndarray | None) -> None:
        self.allowed = None if allowed_ids is None else np.asarray(allowed_ids, np.int64)
        for layer in self.layers:
            filter_layer(layer, self.allowed, self._full)
        self.events.refreshed.emit()


# --------------------------------------------------------------------------------------------
# per-row object ids and positions
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# isolate
# --------------------------------------------------------------------------------------------


def only_objects(geometry: Geometry, object_ids: int | Sequence[int] | np.ndarray) -> Geometry:
    """The rows of ``geometry`` that belong to ``object_ids`` (edges/faces remapped, paths of
    other objects dropped). Meshes are returned unchanged: objects sharing a chunk's
    fragment cannot be separated by vertex (the core reads those vertices as
    ``OBJECT_UNKNOWN``)."""
    from napari_zarr_vectors.format.geometry import Geometry

    if geometry.vertex_object_ids is None or geometry.geometry_type == GeometryType.MESH:
        return geometry
    wanted = np.atleast_1d(np.asarray(object_ids, np.int64))
    keep = np.isin(np.asarray(geometry.vertex_object_ids, np.int64), wanted)
    path_ids = np.asarray(geometry.path_object_ids, np.int64)
    path_kept = np.isin(path_ids, wanted)
    if keep.all() and path_kept.all():
        return geometry
    new_index = np.full(len(keep), -1, np.int64)
    new_index[keep] = np.arange(int(keep.sum()))
    edges = np.asarray(geometry.edges, np.int64).reshape(-1, 2)
    edge_ok = keep[edges].all(1) if len(edges) else np.zeros(0, bool)
    paths = [
        new_index[np.asarray(geometry.paths[int(i)], np.int64)] for i in np.flatnonzero(path_kept)
    ]
    path_ids = path_ids[path_kept]
    faces = np.asarray(geometry.faces, np.int64).reshape(-1, 3)
    face_ok = keep[faces].all(1) if len(faces) else np.zeros(0, bool)
    return Geometry(
        geometry_type=geometry.geometry_type,
        level=geometry.level,
        positions=geometry.positions[keep],
        vertex_attributes={k: np.asarray(v)[keep] for k, v in geometry.vertex_attributes.items()},
        vertex_object_ids=np.asarray(geometry.vertex_object_ids, np.int64)[keep],
        edges=new_index[edges[edge_ok]],
        edge_attributes={k: np.asarray(v)[edge_ok] for k, v in geometry.edge_attributes.items()},
        faces=new_index[faces[face_ok]],
        paths=paths,
        path_object_ids=path_ids,
        chunks=geometry.chunks,
    )


def isolate_layer_data(
    store: GeometryStore,
    object_ids: int | Sequence[int] | np.ndarray,
    level: int = 0,
    *,
    role: str = "isolated",
    colour: Sequence[float] | np.ndarray | None = None,
) -> list[tuple]:
    """Layer data tuples of whole objects at ``level`` (default full resolution), read
    through their manifests (every chunk they name, whatever the view), with ``role`` in
    their metadata block, named by object and part (:func:`isolated_names`). They keep the
    store's colours (skeletons and graphs one colour per object, as the store's layers draw
    them): ``"isolated"`` objects are drawn over the store wider and opaque, a
    ``"selected"`` set over its dimmed store; given a ``colour`` (a Dissect bundle), they
    are drawn in it instead.

    Raises ``KeyError`` when the store has none of ``object_ids``.
    """
    ids = distinct(np.atleast_1d(np.asarray(object_ids, np.int64)))
    known = np.isin(ids, np.asarray(store.object_ids(level), np.int64))
    if not known.any():
        raise KeyError(f"{store.name} has no object {_id_list(ids)} at level {level}")
    ids = ids[known]
    geometry = only_objects(store.read(level=level, object_ids=ids.tolist()), ids)
    info = store_info(store, level)
    built = layers_from_geometry(geometry, info, bounds_layer=False)
    parts = [
        part_word(str(store.geometry_type), kw["metadata"][META].get("role")) for _, kw, _ in built
    ]
    one = int(ids[0]) if len(ids) == 1 else None
    name = None if one is None else _object_name(store, one, level, info)
    names = isolated_names(parts, object_id=one, name=name, n=len(ids), role=role)
    out = []
    for (data, kwargs, kind), part, layer_name in zip(built, parts, names, strict=True):
        meta = kwargs["metadata"][META]
        source_role = meta.get("role")
        meta.update(role=role, object_id=one, n_objects=len(ids), source_role=source_role)
        if role == "selected":
            suffix = "" if source_role in _ONE_PART_ROLES else f" {source_role}"
            kwargs["name"] = f"{store.name} selected objects{suffix}"
        else:
            meta.update(part=part)
            kwargs["name"] = layer_name
            if colour is None:
                kwargs.update(emphasis_kwargs(kind, kwargs))
            else:
                meta.update(colour_by=None)
                kwargs.update(highlight_kwargs(kind, kwargs, colour))
        out.append((data, kwargs, kind))
    return out


def add_object_layers(viewer: Viewer, layer_data: Sequence[tuple]) -> list[Layer]:
    """Add the layers of :func:`isolate_layer_data` to ``viewer`` (not selected: the store's
    layer stays selected) in the colours the store's layers have now: each takes the
    Colour-by choice of the store's data layer of its part (as built otherwise)."""
    added = []
    for data, kwargs, kind in layer_data:
        layer = new_layer(data, kwargs, kind, add=partial(add_layer, viewer))
        meta = meta_of(layer) or {}
        source = next(
            (
                lay
                for lay in store_layers(viewer, meta.get("path"))
                if (meta_of(lay) or {}).get("role") == meta.get("source_role")
            ),
            None,
        )
        spec = None if source is None else colour_spec_of(source)
        if spec is not None:
            apply_colour(layer, spec)
        added.append(layer)
    return added


#: roles of a store's only data layer (its geometry says what it is)
_ONE_PART_ROLES = ("points", "lines", "polylines", "streamlines", "mesh")

#: napari's layer list (1280-pixel window, default dock widths) shows names of up to about
#: this many characters whole (measured: "#299 streamline (isolated)" whole, "object 2
#: skeleton (isolated)" cut to "object 2 ske…n (isolated)"); longer ones are cut in the middle
MAX_LAYER_NAME = 26

#: what the part of an object a data layer of each role shows is called
_PARTS = {"streamlines": "streamline", "polylines": "polyline"}


def part_word(geometry_type: str, role: str | None) -> str:
    """The part of an object a data layer of ``role`` shows: a skeleton's or graph's edges
    are the ``"skeleton"`` / ``"graph"`` itself, its points the ``"nodes"``; streamlines,
    polylines, meshes are one ``"streamline"``, ...."""
    if role == "edges":
        return "graph" if geometry_type == GeometryType.GRAPH else "skeleton"
    return _PARTS.get(str(role), str(role))


def isolated_names(
    parts: Sequence[str],
    *,
    object_id: int | None = None,
    name: str | None = None,
    n: int = 1,
    role: str = "isolated",
) -> list[str]:
    """Layer names of isolated objects, one per part: ``"<object> <part> (<role>)"``,
    each at most :data:`MAX_LAYER_NAME` characters when it can be. One object is called by
    its own ``name`` when that is short enough for every part, else ``object k``, else
    ``#k``; ``n`` objects ``n objects``, else ``n×``. Every part of one isolation names
    the object the same way."""
    if n == 1:
        whos = ([name] if name else []) + [f"object {object_id}", f"#{object_id}"]
    else:
        whos = [f"{n:,} objects", f"{n:,}×"]
    names = [[f"{who} {part} ({role})" for part in parts] for who in whos]
    fitting = [row for row in names if all(len(text) <= MAX_LAYER_NAME for text in row)]
    return fitting[0] if fitting else names[-1]


def _object_name(store: GeometryStore, object_id: int, level: int, info: StoreInfo) -> str | None:
    """The text ``name`` object attribute of ``object_id`` when it names that object alone
    (``None``: no such attribute, or other objects share the name)."""
    names = next(
        (np.asarray(v) for k, v in info.object_attributes.items() if str(k).lower() == "name"),
        None,
    )
    if names is None or names.dtype.kind not in "UO" or names.ndim != 1:
        return None
    all_ids = np.asarray(store.object_ids(level), np.int64)
    row: np.ndarray | list[int] = (
        np.flatnonzero(all_ids == object_id) if len(all_ids) == len(names) else []
    )
    if not len(row):
        return None
    name = str(names[row[0]]).strip()
    return name if name and np.count_nonzero(names == names[row[0]]) == 1 else None


def _id_list(ids: np.ndarray) -> str:
    shown = ", ".join(str(i) for i in ids[:5].tolist())
    return shown + (f", … ({len(ids):,} ids)" if len(ids) > 5 else "")


def emphasis_kwargs(kind: str, kwargs: dict) -> dict:
    """Layer keyword arguments drawing an isolated layer of ``kind`` over its store in its
    own colours: opaque (no additive blending, which turned overlapping colours white),
    lines twice as wide, points as built (a skeleton's soma stays a bead, not a blob)."""
    out: dict[str, Any] = {"blending": "translucent", "opacity": 1.0}
    if kind in ("vectors", "shapes"):
        out["edge_width"] = float(kwargs.get("edge_width", 1.0)) * 2
    elif kind == "tracks":
        out["tail_width"] = float(kwargs.get("tail_width", 2.0)) * 2
    return out


def highlight_kwargs(kind: str, kwargs: dict, colour: Sequence[float] | np.ndarray) -> dict:
    """Layer keyword arguments drawing a layer of ``kind`` in one ``colour`` (a Dissect
    bundle; translucent: additive blending turned overlapping paths white). The features of
    a Tracks layer gain the colour column it is coloured by."""
    colour = np.asarray(colour, np.float32)
    if kind == "points":
        size = float(np.max(kwargs.get("size", 1.0))) * 1.5
        for key in ("face_colormap", "face_contrast_limits"):
            kwargs.pop(key, None)
        return {"face_color": colour, "size": size, "border_width": 0.0, "blending": "translucent"}
    if kind in ("vectors", "shapes"):
        for key in ("edge_colormap", "edge_contrast_limits"):
            kwargs.pop(key, None)
        return {"edge_color": colour, "edge_width": float(kwargs.get("edge_width", 1.0)) * 2}
    if kind == "tracks":
        from napari.utils.colormaps import Colormap

        name = "zv_highlight"
        features = dict(kwargs.get("features", {}))
        n_rows = len(next(iter(features.values()))) if features else 0
        features[name] = np.zeros(n_rows)
        return {
            "features": features,
            "color_by": name,
            "colormaps_dict": {name: Colormap([colour, colour], name=name)},
            "tail_width": 4.0,
            "blending": "translucent",
        }
    if kind == "surface":
        from napari.utils.colormaps import Colormap

        return {
            "colormap": Colormap([colour, colour], name="zv_highlight"),
            "opacity": 0.9,
        }
    return {}


def object_table(target: BrowseTarget) -> ObjectTable:
    """The level-0 object table of the target's open store (read once per open store)."""
    entry = target.open_store
    if entry.objects is None:
        entry.objects = ObjectTable.from_store(entry.store, 0)
    return entry.objects


def objects_unknown(store: GeometryStore) -> str | None:
    """:data:`OBJECTS_UNKNOWN` and why, when level 0 of ``store`` has vertices whose object
    the store does not record (a mesh chunk's one fragment named by several objects, as
    zarr-vectors 0.9.2 writes Draco chunks and 0.7 wrote raw ones:
    :func:`~napari_zarr_vectors.format.objects.shared_fragments_cause`), else ``None``. Only
    mesh stores can: the object index of no other is read for it."""
    if store.geometry_type != GeometryType.MESH:
        return None
    index = store.object_index(0)
    if index is None or not index.shared_entries.any():
        return None
    return f"{OBJECTS_UNKNOWN}: {shared_fragments_cause(index)}"


# --------------------------------------------------------------------------------------------
# browse state: the filters of one target, shared by the widgets
# --------------------------------------------------------------------------------------------


class BrowseState:
    """The browse state of one target (one open store): its object table, the user's
    filters, its store-wide colour choice, and who to tell when they change. Widgets share it
    through :func:`browse_state_of`, so the group filter and the attribute filters combine (AND)."""

    def __init__(self, target: BrowseTarget) -> None:
        self._target = weakref.ref(target)
        self.store = target.store
        self.table = object_table(target)
        self.filters = FilterState(self.table)
        #: why object-level actions are off on this store (:func:`objects_unknown`), or ``None``
        self.objects_unknown = objects_unknown(self.store)
        #: the colour chosen for every layer of the store (``None``: per layer, or none)
        self.colour: ColourSpec | None = None
        self._coloured: set[int] = set()  # ids of the layers there when it was chosen
        self._listeners: list[Callable[[], None]] = []
        target.events.refreshed.connect(self._on_refreshed)

    @property
    def target(self) -> BrowseTarget | None:
        return self._target()

    def connect(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` when the filters change and after every data refresh."""
        if callback not in self._listeners:
            self._listeners.append(callback)

    def disconnect(self, callback: Callable[[], None]) -> None:
        if callback in self._listeners:
            self._listeners.remove(callback)

    def apply(self) -> np.ndarray | None:
        """Send the combined filter to the target (``set_object_filter``) and tell the
        widgets. Returns the allowed ids (``None``: no filter)."""
        allowed = self.filters.allowed()
        target = self.target
        if target is not None:
            target.set_object_filter(allowed)
            self._annotate()
        for callback in list(self._listeners):
            callback()
        return allowed

    def choose_colour(self, spec: ColourSpec | None) -> None:
        """Record the store-wide colour choice (``None``: the choice is per layer). A layer
        the target adds later (a level drawn as another layer kind, e.g. a mesh level
        without faces as points) takes it: in its colours, or the fallback grey."""
        self.colour = spec
        self._coloured = {id(layer) for layer in getattr(self.target, "layers", [])}

    def _on_refreshed(self, event: Event | None = None) -> None:
        target = self.target
        for layer in list(getattr(target, "layers", [])):
            if self.colour is not None and id(layer) not in self._coloured:
                self._coloured.add(id(layer))
                apply_colour(layer, self.colour)
            else:
                reapply_colour(layer)
        self._annotate()
        for callback in list(self._listeners):
            callback()

    def _annotate(self) -> None:
        """Record how many objects pass in each data layer's metadata (layer names stay as
        they are; the filter docks show the count)."""
        target = self.target
        if target is None:
            return
        passing = (
            {"passing": self.filters.n_passing(), "total": self.table.n_objects}
            if self.filters.active
            else None
        )
        for layer in list(getattr(target, "layers", [])):
            meta = meta_of(layer)
            if meta is not None:
                meta["filter"] = None if passing is None else dict(passing)


def browse_state_of(target: BrowseTarget | None) -> BrowseState | None:
    """The shared :class:`BrowseState` of ``target`` (created on first use, kept with its
    open store)."""
    if target is None:
        return None
    entry = target.open_store
    state = entry.browse
    if not isinstance(state, BrowseState) or state.target is not target:
        state = entry.browse = BrowseState(target)
    return state
