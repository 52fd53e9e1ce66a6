"""The objects and groups of a store's levels, as :class:`~.store.Store` reads them: the
object index of each level (decoded once and kept; its ids alone read first where that
is cheaper), object attributes and groups by id, and the objects a read by ids or groups
selects."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from threading import Lock
from typing import Any

import numpy as np

from .chunks import ChunkTable, unique_rows
from .distinct import distinct
from .errors import ZVChunkWarning, ZVError
from .geometry import PATH_TYPES, GeometryType
from .layout import Layout, ObjectAttribute, ObjectRows, ObjectTable
from .layout.keys import sort_chunks
from .metadata import LevelInfo, RootMetadata
from .missing import missing_value
from .objects import FragmentSharing, ObjectIndex, decode_object_index

#: a read of at most 1 / PARTIAL_INDEX_SHARE of a level's objects decodes only their
#: manifests while the level's full object index is not decoded yet
PARTIAL_INDEX_SHARE = 8

#: Largest object id for which per-id arrays are built for sparse id spaces.
MAX_DENSE_ID = 50_000_000


class LevelObjects:
    """The object indexes, object attributes and groups of one store's levels.

    ``level`` is the store's :meth:`~.store_metadata.StoreMetadata.level` (the metadata of a
    level; raises ``KeyError`` for one the store does not have), ``path`` the store's
    location (what errors and warnings name), ``draco`` whether a level's vertex blobs are
    Draco-encoded (:attr:`.objects.ObjectIndex.draco`)."""

    def __init__(
        self,
        layout: Layout,
        root: RootMetadata,
        level: Callable[[int], LevelInfo],
        path: str,
        draco: Callable[[int], bool],
    ) -> None:
        self.layout = layout
        self.root = root
        self.level = level
        self.path = path
        self.draco = draco
        #: object indexes and tables have a lock of their own: reading a large one (a
        #: worker's side thread) does not hold up chunk listings and reads meanwhile
        self._lock = Lock()
        self._index: dict[int, ObjectIndex | None] = {}
        #: object ids of levels whose full index is not decoded yet (point-cloud reads,
        #: reads by id), with a reader of a few rows' manifests
        #: (:meth:`Layout.read_object_rows`)
        self._rows: dict[int, ObjectRows | ObjectTable | None] = {}

    # -- the object index --------------------------------------------------------------
    def index(self, level: int, strict: bool = False) -> ObjectIndex | None:
        """Decoded manifests of a level (cached), or ``None`` when it has no objects."""
        self.level(level)
        with self._lock:
            if level not in self._index:
                held = self._rows.pop(level, None)
                table: ObjectTable | None
                if isinstance(held, ObjectTable):
                    table = held
                else:
                    table = self.layout.read_object_table(level)
                self._index[level] = (
                    None
                    if table is None
                    else decode_object_index(
                        table,
                        self.level(level).key_ndim,
                        {"store": self.path, "level": level},
                        strict,
                        *self._sharing(level),
                    )
                )
            return self._index[level]

    def index_parts(self, level: int, rows_per_part: int) -> list[tuple[int, int]]:
        """The level's index rows cut into ``(start, stop)`` parts of about
        ``rows_per_part`` rows, whole chunks of stored manifests each (no chunk is read by
        two parts), decodable alone (:meth:`index_part`); one part when the layout stores
        the manifests whole (a part would read them all) or the full index is decoded
        already; none without an index."""
        found = self.ids_only(level)
        if found is None:
            return []
        n = len(found.ids)
        if isinstance(found, ObjectRows):
            per = max(found.chunk_rows, 1)
            step = per * max(round(rows_per_part / per), 1)
        else:
            step = n
        return [(a, min(a + step, n)) for a in range(0, n, max(step, 1))] or [(0, 0)]

    def index_part(
        self, level: int, start: int, stop: int, strict: bool = False
    ) -> ObjectIndex | None:
        """The object index of rows ``start:stop`` of the level's index (row 0 of it is
        row ``start``): only their manifests decoded where the layout stores them in chunks
        of rows, else a part of the full index (:meth:`index`)."""
        found = self.ids_only(level)
        if found is None:
            return None
        if not isinstance(found, ObjectRows):
            index = self.index(level, strict)
            return None if index is None else index.part(start, stop)
        where = {"store": self.path, "level": level}
        return decode_object_index(
            found.manifests(np.arange(start, stop, dtype=np.int64)),
            self.level(level).key_ndim,
            where,
            strict,
            *self._sharing(level),
        )

    def _sharing(self, level: int) -> tuple[FragmentSharing, bool]:
        """Which fragments the level's objects may share (:data:`.objects.FragmentSharing`)
        and, where they may name a chunk's fragment whole, whether the level is
        Draco-encoded (what is said of those fragments)."""
        if "shared_fragments" in self.root.format_capabilities or self.level(level).attributes.get(
            "shared_fragments"
        ):
            return "any", False
        if self.root.geometry_type != GeometryType.MESH:
            return "none", False
        return "whole-chunk", self.draco(level)

    def ids_only(self, level: int) -> ObjectIndex | ObjectTable | ObjectRows | None:
        """What the level already holds of its object index, else its object ids with a
        reader of a few rows' manifests (read once and kept until the full table is read)."""
        self.level(level)
        with self._lock:
            if level in self._index:
                return self._index[level]
            if level not in self._rows:
                self._rows[level] = self.layout.read_object_rows(level)
            return self._rows[level]

    def ids(self, level: int) -> np.ndarray:
        """Ids of every object of the level's object index (empty when none)."""
        found = self.ids_only(level)
        return np.empty(0, np.int64) if found is None else np.asarray(found.ids, np.int64)

    def presence(self, levels: Sequence[int]) -> np.ndarray:
        """Boolean array indexed by object id: whether the object has geometry at any of
        ``levels``."""
        found = []
        for lv in levels:
            index = self.index(lv)
            if index is not None:
                found.append(_by_id(index.ids, index.present, False))
        if not found:
            return np.zeros(0, dtype=bool)
        out = np.zeros(max(f.size for f in found), dtype=bool)
        for f in found:
            out[: f.size] |= f
        return out

    def read_beside(
        self, level: int, strict: bool
    ) -> tuple[Future[ObjectIndex | ObjectTable | ObjectRows | None], bool]:
        """Start reading the level's object index in the background, beside the chunks of
        a read, and whether it is the whole index (for strict reads and paths); else its
        ids and metadata, read and checked beside the chunks, its manifests read and
        decoded when the per-vertex object ids are asked for."""
        pending: Future[ObjectIndex | ObjectTable | ObjectRows | None]
        if strict or self.root.geometry_type in PATH_TYPES:
            pending = self.layout.io.in_background(functools.partial(self.index, level, strict))
            return pending, True
        pending = self.layout.io.in_background(functools.partial(self.ids_only, level))
        return pending, False

    # -- attributes and groups ---------------------------------------------------------
    def attributes(self, level: int) -> dict[str, np.ndarray]:
        """:meth:`~.store.Store.object_attributes`."""
        ids = self.ids(level)
        return {
            name: _by_id(ids, a.values, missing_value(a.values.dtype))
            for name, a in self._aligned_attributes(level, ids.size).items()
        }

    def attribute_presence(self, level: int) -> dict[str, np.ndarray]:
        """``{name: bool array indexed by object id}``: which objects hold a value."""
        ids = self.ids(level)
        out = {}
        for name, a in self._aligned_attributes(level, ids.size).items():
            present = a.present if a.present is not None else np.ones(a.values.shape[0], bool)
            out[name] = _by_id(ids, present, False)
        return out

    def _aligned_attributes(self, level: int, n_objects: int) -> dict[str, ObjectAttribute]:
        """The level's object attributes that hold one row per object; one whose row count
        differs from the object index's (e.g. an inflated ``shape``) cannot be matched to
        the objects and is left out with a :class:`ZVChunkWarning`."""
        out = {}
        for name, a in self.layout.read_object_attributes(level).items():
            if a.values.shape[0] != n_objects:
                self.layout.warn_misaligned(level, name, a.values.shape[0], n_objects)
                continue
            out[name] = a
        return out

    def groups(self, level: int) -> dict[int, np.ndarray]:
        """``{group id: int64 object ids}``; a warning names object ids the groups name
        that the level does not hold."""
        table = self.layout.read_groups(level)
        if table is None:
            return {}
        ids = self.ids(level)
        if len(ids) and table.members:
            members = np.concatenate(list(table.members.values()))
            unknown = members[~np.isin(members, ids)]
            if unknown.size:
                warnings.warn(
                    f"{self.path} level {level}: groups name {unknown.size} object ids the "
                    f"level does not hold (e.g. {int(unknown[0])}); they select nothing",
                    ZVChunkWarning,
                    stacklevel=3,
                )
        return dict(table.members)

    # -- a read by object or group ids -------------------------------------------------
    def select(
        self,
        level: int,
        object_ids: Sequence[int] | np.ndarray | None,
        group_ids: Sequence[int] | np.ndarray | None,
        strict: bool,
    ) -> tuple[ObjectIndex | None, np.ndarray]:
        """``(index, rows)``: an object index holding the requested objects and the members
        of the requested groups (groups live at level 0), and their rows in it, ascending.

        While the level's full index is not decoded, a selection of at most
        1 / :data:`PARTIAL_INDEX_SHARE` of the objects decodes only its own manifests (a
        few objects of a 200,000-object store cost no decoding of the other 199,000)."""
        wanted = [np.empty(0, np.int64)]
        if object_ids is not None:
            wanted.append(np.asarray(object_ids, dtype=np.int64).ravel())
        if group_ids is not None:
            groups = self.groups(0)
            wanted += [groups.get(int(g), wanted[0]) for g in np.asarray(group_ids).ravel()]
        ids = distinct(np.concatenate(wanted))
        found = self.ids_only(level)
        if found is None:
            return None, np.empty(0, np.int64)
        rows = np.flatnonzero(np.isin(found.ids, ids))
        if isinstance(found, ObjectIndex):
            return found, rows
        if rows.size * PARTIAL_INDEX_SHARE > found.ids.size:
            index = self.index(level, strict=strict)
            return index, rows
        if isinstance(found, ObjectRows):  # only the manifest chunks holding these rows
            part = found.manifests(rows)
        else:
            part = ObjectTable(found.ids[rows], [found.manifests[r] for r in rows.tolist()])
        where = {"store": self.path, "level": level}
        index = decode_object_index(
            part, self.level(level).key_ndim, where, strict, *self._sharing(level)
        )
        return index, np.arange(rows.size, dtype=np.int64)


def manifest_chunks(
    index: ObjectIndex | None,
    rows: np.ndarray,
    key_ndim: int,
    among: np.ndarray | None = None,
) -> np.ndarray:
    """The chunks named by the manifests of object rows ``rows``, in level order; with
    ``among``, only those of these chunks (in their order) the manifests name."""
    if index is None or rows.size == 0:
        return np.empty((0, key_ndim), np.int64)
    named = index.chunks[index.entries_of_rows(rows)]
    if among is not None:  # a lookup in the given chunks: no sort of the entries
        at = ChunkTable(among).index_of(named)
        hit = np.bincount(at[at >= 0], minlength=len(among)) > 0
        return among[hit]
    return sort_chunks(unique_rows(named))


def _by_id(ids: np.ndarray, values: np.ndarray, fill: Any) -> np.ndarray:
    """Scatter row-aligned ``values`` into an array indexed by object id."""
    n = ids.size
    if n == 0:
        return values[:0]
    if np.array_equal(ids, np.arange(n)):
        return values
    top = int(ids.max())
    if ids.min() < 0 or top > MAX_DENSE_ID:
        raise ZVError(f"object ids up to {top} are too sparse to index by id; use object_ids()")
    out = np.full((top + 1, *values.shape[1:]), fill, dtype=values.dtype)
    out[ids] = values
    return out
