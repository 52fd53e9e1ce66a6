"""Composite stores: several geometry types in one store (zarr-vectors
``composite.add_geometry``).

The root lists every geometry in ``zarr_vectors.geometry_types``; the first is the store's
own (read by :class:`~.store.Store` as usual). Each added geometry lives in namespaced arrays
of the levels it was written to, listed by the level's ``geometry_index`` group attributes::

    <level>/geometry_index/zarr.json   {"graph": {"array": "vertices_graph",
                                                   "links_array": "links_graph", ...}}
    <level>/vertices_graph/            per-chunk raw vertex rows (vlen bytes, chunk grid)
    <level>/links_graph                (E, 2) edges / (F, 3) faces, a plain int64 array

Links index the vertices concatenated in chunk order (as zarr-vectors' own
``read_composite`` reads them). The writer keeps no path boundaries, object ids or
attributes for added geometries: added polylines, streamlines and lines cannot be read
(:class:`CompositeGeometryStore` raises :class:`ZVFormatError` naming the geometry).

:meth:`.store.Store.geometry` returns a :class:`CompositeGeometryStore`: a store-like view of
one added geometry with the :class:`~.store.Store` reading API, so everything that reads a
store (the napari level of detail, widgets) reads an added geometry the same way.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from contextlib import AbstractContextManager
from threading import Event, Lock
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast, overload

import numpy as np

from .cache import ChunkCache
from .chunks import unique_rows
from .decode.arrays import decode_rows, parse_dtype
from .errors import ZVChunkWarning, ZVFormatError
from .geometry import Geometry, GeometryType
from .query import chunks_in_bbox, normalise_bbox

if TYPE_CHECKING:
    from .layout.v09 import V09Layout
    from .metadata import LevelInfo
    from .store import Store

T = TypeVar("T")

#: Added geometry types whose namespaced arrays hold everything the type needs.
READABLE = ("point_cloud", "graph", "skeleton", "mesh")


def geometry_index(store: Store, level: int) -> dict[str, dict[str, Any]]:
    """``{geometry type: entry}`` of a level's ``geometry_index`` (empty when none)."""
    doc = store.layout.io.get_json(f"{level}/geometry_index/zarr.json")
    attrs = (doc or {}).get("attributes")
    if not isinstance(attrs, dict):
        return {}
    return {str(k): v for k, v in attrs.items() if isinstance(v, dict)}


def _count(entry: dict[str, Any]) -> int:
    value = entry.get("vertex_count")
    return int(value) if isinstance(value, int) and value >= 0 else 0


class _FromParent(Generic[T]):
    """A read-only attribute of a :class:`CompositeGeometryStore` that is its parent
    store's attribute of the same name (axes, bounds, path ...)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __get__(self, view: CompositeGeometryStore, owner: type | None = None) -> T:
        value: T = getattr(view._parent, self._name)
        return value


class CompositeGeometryStore:
    """One added geometry of a composite store, read through the
    :class:`~.api.GeometryStore` API (``read``, ``read_pieces``, ``chunks``, ``prefetch``,
    levels, bounds, axes ...); no objects, groups or attributes (the writer stores none for
    added geometries). Every read takes ``cancel`` as the parent store's reads do.

    Raises :class:`ZVFormatError` when the geometry cannot be read (a type whose
    arrays keep no path boundaries, a store generation without namespaced arrays, no
    level holding it).
    """

    def __init__(self, parent: Store, geometry_type: str) -> None:
        self._parent = parent
        self._geometry_type = geometry_type
        self._lock = Lock()
        self._chunk_lists: dict[int, np.ndarray] = {}
        where: dict[str, Any] = {"store": parent.path}
        if geometry_type not in READABLE:
            raise ZVFormatError(
                f"geometry {geometry_type!r}: a composite store's added {geometry_type} keeps "
                "no path boundaries (zarr-vectors add_geometry), so it cannot be read",
                **where,
            )
        if parent.generation != "0.9":
            raise ZVFormatError(
                f"geometry {geometry_type!r}: added geometries of {parent.generation} "
                "stores are not read",
                **where,
            )
        self._entries = {}
        for lv in parent.levels:
            entry = geometry_index(parent, lv.index).get(geometry_type)
            if entry is not None:
                self._entries[lv.index] = entry
        if not self._entries:
            raise ZVFormatError(
                f"geometry {geometry_type!r} is listed in geometry_types but no level's "
                "geometry_index holds it",
                **where,
            )
        # the levels holding the geometry, with its own vertex counts
        self.levels = [
            dataclasses.replace(lv, vertex_count=_count(self._entries[lv.index]))
            for lv in parent.levels
            if lv.index in self._entries
        ]
        # the parent's layout, private: its attribute listings are the store's own geometry's
        self._layout = parent.layout

    # -- the store's metadata, from the parent ------------------------------------------
    path = _FromParent[str]()
    name = _FromParent[str]()
    remote = _FromParent[bool]()
    listable = _FromParent[bool]()
    zv_version = _FromParent[str]()
    generation = _FromParent[str]()
    ndim = _FromParent[int]()
    axes = _FromParent["list[str]"]()
    axis_types = _FromParent["list[str]"]()
    units = _FromParent["list[str | None]"]()
    bounds = _FromParent["tuple[np.ndarray, np.ndarray]"]()
    chunk_shape = _FromParent[np.ndarray]()
    base_bin_shape = _FromParent[np.ndarray]()

    def reading(self, cancel: Event | None) -> AbstractContextManager[None]:
        """The parent store's read scope: reads stop once ``cancel`` is set."""
        return self._parent.reading(cancel)

    @property
    def geometry_type(self) -> str:
        return self._geometry_type

    @property
    def geometry_types(self) -> list[str]:
        return [self._geometry_type]

    def level(self, level: int) -> LevelInfo:
        for lv in self.levels:
            if lv.index == level:
                return lv
        raise KeyError(
            f"{self._parent.path} geometry {self._geometry_type!r} has no level {level} "
            f"(levels: {[lv.index for lv in self.levels]})"
        )

    @overload
    def _array(self, level: int, key: Literal["array"] = "array") -> str: ...
    @overload
    def _array(self, level: int, key: str) -> str | None: ...
    def _array(self, level: int, key: str = "array") -> str | None:
        self.level(level)
        value = self._entries[level].get(key)
        if key == "array" and not isinstance(value, str):
            value = f"vertices_{self._geometry_type}"
        return value if isinstance(value, str) else None

    def chunks(self, level: int = 0) -> np.ndarray:
        """``(K, ndim)`` chunks of the level holding vertices of this geometry."""
        with self._lock:
            if level not in self._chunk_lists:
                self._chunk_lists[level] = self._layout.list_chunks(level, self._array(level))
            return self._chunk_lists[level]

    # -- no objects, groups or attributes ------------------------------------------------
    def object_index(self, level: int = 0, strict: bool = False) -> None:
        return None

    def object_index_parts(self, level: int, rows_per_part: int) -> list[tuple[int, int]]:
        return []

    def object_index_part(self, level: int, start: int, stop: int, strict: bool = False) -> None:
        return None

    def object_ids(self, level: int = 0) -> np.ndarray:
        return np.empty(0, np.int64)

    def object_presence(self, level: int = 0) -> np.ndarray:
        return np.zeros(0, bool)

    def object_attributes(self, level: int = 0) -> dict[str, np.ndarray]:
        return {}

    def object_attribute_presence(self, level: int = 0) -> dict[str, np.ndarray]:
        return {}

    def groups(self, level: int = 0) -> dict[int, np.ndarray]:
        return {}

    def group_names(self, level: int = 0) -> dict[int, str]:
        return {}

    def group_attributes(self, level: int = 0) -> dict[str, np.ndarray]:
        return {}

    def vertex_attribute_names(self, level: int = 0) -> list[str]:
        return []

    # -- reading -------------------------------------------------------------------------
    def prefetch(
        self,
        level: int,
        chunks: np.ndarray,
        cache: ChunkCache,
        *,
        attributes: bool = True,
        cancel: Event | None = None,
    ) -> int:
        """Nothing is cached for added geometries (their reads are whole-level small
        arrays); returns how many of ``chunks`` hold vertices."""
        with self.reading(cancel):
            listed = {tuple(c) for c in self.chunks(level).tolist()}
        return sum(tuple(c) in listed for c in np.asarray(chunks).tolist())

    def read(
        self,
        level: int = 0,
        bbox: Sequence[Sequence[float]] | None = None,
        object_ids: Sequence[int] | np.ndarray | None = None,
        group_ids: Sequence[int] | np.ndarray | None = None,
        *,
        chunks: np.ndarray | None = None,
        attributes: bool = True,
        strict: bool = False,
        cache: ChunkCache | None = None,
        cancel: Event | None = None,
    ) -> Geometry:
        """The geometry's vertices in ``chunks`` (default: all) and ``bbox`` (exactly), and
        for graphs, skeletons and meshes the links whose every vertex is kept. Object and
        group selections select nothing (added geometries have no objects). A chunk that
        cannot be decoded is left out with a :class:`ZVChunkWarning` (``strict``: raised);
        links then index the vertices that were read. ``cancel`` stops the read as it stops
        the parent store's (:class:`~.errors.ZVCancelledError`)."""
        with self.reading(cancel):
            return self._read(level, bbox, object_ids, group_ids, chunks, strict)

    def read_pieces(
        self,
        level: int,
        chunks: np.ndarray,
        *,
        fraction: float = 1.0,
        bbox: Sequence[Sequence[float]] | None = None,
        max_vertices: int | None = None,
        attributes: bool = True,
        strict: bool = False,
        cache: ChunkCache | None = None,
        cancel: Event | None = None,
    ) -> Geometry:
        """Path pieces are read from polylines and streamlines only, and an added geometry
        is never one (they keep no path boundaries): raises :class:`ValueError`, as
        :meth:`.store.Store.read_pieces` does for these geometry types."""
        raise ValueError(
            f"{self.path}: read_pieces reads polylines and streamlines, not {self._geometry_type}"
        )

    def _read(
        self,
        level: int,
        bbox: Sequence[Sequence[float]] | None,
        object_ids: Sequence[int] | np.ndarray | None,
        group_ids: Sequence[int] | np.ndarray | None,
        chunks: np.ndarray | None,
        strict: bool,
    ) -> Geometry:
        info = self.level(level)
        ndim = self._parent.ndim
        listed = self.chunks(level)
        wanted = listed if chunks is None else np.asarray(chunks, np.int64).reshape(-1, ndim)
        box = None if bbox is None else normalise_bbox(bbox, ndim, self.path)
        if box is not None:
            wanted = chunks_in_bbox(wanted, info, *box)
        if object_ids is not None or group_ids is not None:
            wanted = wanted[:0]
        # links index the whole level's vertices: linked types read every chunk
        read_chunks = wanted if self._geometry_type == GeometryType.POINT_CLOUD else listed
        positions, from_chunk = self._vertices(level, read_chunks, strict)
        wanted_keys = {tuple(c) for c in wanted.tolist()}
        keep = np.array([tuple(c) in wanted_keys for c in read_chunks.tolist()], bool)
        keep = keep[from_chunk] if len(from_chunk) else np.zeros(0, bool)
        if box is not None:
            keep &= np.all((positions >= box[0]) & (positions <= box[1]), axis=1)
        geometry = Geometry(
            self._geometry_type,
            level,
            positions[keep],
            chunks=unique_rows(read_chunks[from_chunk[keep]].reshape(-1, ndim)),
        )
        if self._geometry_type != GeometryType.POINT_CLOUD:
            links = self._links(level, positions, keep)
            if self._geometry_type == GeometryType.MESH:
                geometry.faces = links
            else:
                geometry.edges = links
        return geometry

    def _vertices(
        self, level: int, chunks: np.ndarray, strict: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """Vertices of ``chunks`` concatenated in their order, and the index into
        ``chunks`` of each vertex's chunk."""
        array = self._array(level)
        ndim = self._parent.ndim
        meta = self._layout.array_attributes(level, array) or {}
        dtype = parse_dtype(str(meta.get("dtype", "float32")))
        cells = self._layout.read_cells(level, [array], chunks)[array] if len(chunks) else []
        parts, owner = [], []
        for i, (chunk, raw) in enumerate(zip(chunks.tolist(), cells, strict=True)):
            try:
                if isinstance(raw, ZVFormatError):
                    raise raw
                if raw is None:
                    continue
                rows = decode_rows(raw, dtype, ndim)
            except ZVFormatError as exc:
                where = ZVFormatError(
                    exc.reason, store=self.path, level=level, array=array, chunk=chunk
                )
                if strict:
                    raise where from None
                warnings.warn(f"{where}; left out", ZVChunkWarning, stacklevel=4)
                continue
            parts.append(rows.astype(np.float64))
            owner.append(np.full(len(rows), i, np.int64))
        if not parts:
            return np.empty((0, ndim)), np.empty(0, np.int64)
        return np.concatenate(parts), np.concatenate(owner)

    def _links(self, level: int, positions: np.ndarray, keep: np.ndarray) -> np.ndarray:
        """Edges ``(E, 2)`` or faces ``(F, 3)`` whose every vertex is kept, as rows of the
        kept vertices."""
        width = 3 if self._geometry_type == GeometryType.MESH else 2
        name = self._array(level, "links_array")
        layout = cast("V09Layout", self._layout)  # (a 0.9 store's: see __init__)
        links = None if name is None else layout.read_whole(level, name)
        if links is None:
            return np.empty((0, width), np.int64)
        links = np.asarray(links, np.int64).reshape(-1, width)
        new_row = np.full(len(positions), -1, np.int64)
        new_row[keep] = np.arange(int(keep.sum()))
        inside = np.all((links >= 0) & (links < len(positions)), axis=1)
        mapped = new_row[links[inside]]
        return mapped[np.all(mapped >= 0, axis=1)]
