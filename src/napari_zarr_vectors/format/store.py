"""The public entry point: :func:`open_store` and :class:`Store`."""

from __future__ import annotations

import contextlib
import functools
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from functools import cached_property
from pathlib import PurePosixPath
from threading import Event, Lock
from typing import Any

import numpy as np
from zarr.abc.store import Store as ZarrStore

from .api import GeometryStore
from .assembly import Selection, assemble, assemble_pieces
from .cache import ChunkCache
from .chunks import ChunkTable, LoadedChunks, unique_rows
from .composite import CompositeGeometryStore
from .errors import ZVChunkWarning, ZVError, ZVFormatError, chunk_key
from .geometry import GRAPH_TYPES, PATH_TYPES, PIECE_TYPES, Geometry, GeometryType
from .io import StoreIO
from .layout import Layout, LinkSet, ObjectAttribute, ObjectRows, ObjectTable, detect_layout
from .layout.keys import sort_chunks
from .loading import attribute_specs, load_chunks
from .memory import release_freed_memory
from .metadata import LevelInfo, RootMetadata, parse_level, parse_root
from .missing import missing_value
from .objects import FragmentSharing, ObjectIndex, decode_object_index
from .parametric import Parametric, ParametricObject, read_parametric
from .query import candidate_chunks, chunks_in_bbox, normalise_bbox
from .refinement import concat_geometries, map_chunks, refinement_chains
from .remote import RetryPolicy
from .world import WorldPlacement, world_placement

#: A bbox read probes at most this many candidate chunk keys before it lists the level instead.
MAX_CANDIDATE_CHUNKS = 4096

#: Fewest rows a read loads after which the memory its fetched bytes took is given back
#: before the result is built (:func:`.memory.release_freed_memory`).
RELEASE_MIN_ROWS = 1 << 20

#: a read of at most 1 / PARTIAL_INDEX_SHARE of a level's objects decodes only their
#: manifests while the level's full object index is not decoded yet
PARTIAL_INDEX_SHARE = 8


def open_store(
    location: str | os.PathLike[str] | ZarrStore,
    *,
    storage_options: dict[str, Any] | None = None,
    retry: RetryPolicy | None = None,
) -> Store:
    """Open a Zarr Vectors store for reading. Reads metadata only.

    Parameters
    ----------
    location
        A local path (``str`` or :class:`~pathlib.Path`), a URL (``https://``, ``s3://``,
        ``simplecache::https://`` for fsspec's on-disk cache, ...), or an open zarr
        :class:`~zarr.abc.store.Store`. URLs are opened read-only through
        ``zarr.storage.FsspecStore`` (see ``docs/remote.md``).
    storage_options
        fsspec options for URLs (credentials, ``anon=True`` ...).
    retry
        Retries and timeouts of remote requests (default :class:`RetryPolicy()`).

    Raises
    ------
    NotAZVStoreError
        The location is not a ZV store.
    UnsupportedVersionError
        The store's format version or container layout is unknown to this reader.
    """
    io = StoreIO(location, storage_options, retry)
    with io.read_budget():
        return Store(io)


def _cancellable(method: Callable[..., Any]) -> Callable[..., Any]:
    """Apply a read method's keyword ``cancel`` (a :class:`threading.Event`) to its fetches:
    once it is set, fetches not started yet are dropped and the method raises
    :class:`~napari_zarr_vectors.format.errors.ZVCancelledError`. Remote stores also get the
    level's metadata in one batch first."""

    @functools.wraps(method)
    def wrapper(self: Store, *args: Any, cancel: Event | None = None, **kwargs: Any) -> Any:
        with self.reading(cancel):
            if self._io.remote:
                level = kwargs.get("level", args[0] if args else 0)
                self._prefetch_metadata(level)
            return method(self, *args, cancel=cancel, **kwargs)

    return wrapper


class Store:
    """A read-only ZV store: metadata, and reads by level, bbox, object ids or group ids."""

    def __init__(self, io: StoreIO) -> None:
        self._io = io
        self.root: RootMetadata = parse_root(io.get_json("zarr.json"), io.name)
        self.levels: list[LevelInfo] = self._read_levels()
        self.layout: Layout = detect_layout(io, self.root, self.levels)
        self._chains = refinement_chains(self.root, self.levels, io.name)
        self._lock = Lock()
        #: object indexes and tables have a lock of their own: reading a large one (a
        #: worker's side thread) does not hold up chunk listings and reads meanwhile
        self._objects_lock = Lock()
        self._object_index: dict[int, ObjectIndex | None] = {}
        #: object ids of levels whose full index is not decoded yet (point-cloud reads,
        #: reads by id), with a reader of a few rows' manifests
        #: (:meth:`Layout.read_object_rows`)
        self._object_rows: dict[int, ObjectRows | ObjectTable | None] = {}
        self._chunk_lists: dict[int, np.ndarray] = {}
        self._chain_chunks: dict[int, np.ndarray] = {}
        self._warm: set[int] = set()
        self._geometries: dict[str, CompositeGeometryStore] = {}

    @contextlib.contextmanager
    def reading(self, cancel: Event | None) -> Iterator[None]:
        """Within this block, the reads of the calling thread share one read budget (remote
        stores) and stop once ``cancel`` is set: fetches not started yet are dropped and
        the read raises :class:`~napari_zarr_vectors.format.errors.ZVCancelledError`."""
        with self._io.cancellable(cancel), self._io.read_budget():
            yield

    def _prefetch_metadata(self, level: int) -> None:
        """Remote stores: the metadata documents of a level in one batch, once."""
        with self._lock:
            if level in self._warm or not any(lv.index == level for lv in self.levels):
                return
            self._warm.add(level)
        with contextlib.suppress(ZVError):  # only a shortcut: the read meets errors in context
            self.layout.prefetch_metadata(level)

    def _read_levels(self) -> list[LevelInfo]:
        paths = [str(d.get("path")) for d in self.root.datasets if str(d.get("path", "")).isdigit()]
        if not paths:
            paths = sorted((n for n in self._io.list_dir("") if n.isdigit()), key=int)
        docs = self._io.get_many([f"{p}/zarr.json" for p in paths])
        levels = []
        for p, raw in zip(paths, docs, strict=True):
            if raw is None:  # listed by the root, gone from the store
                error = ZVFormatError(
                    f"the root lists the level, but {p}/zarr.json is missing",
                    store=self._io.name,
                    level=int(p),
                )
                warnings.warn(f"level left out: {error}", ZVChunkWarning, stacklevel=4)
                continue
            levels.append(
                parse_level(self.root, p, self._io.parse_json(raw, f"{p}/zarr.json"), self._io.name)
            )
        if not levels:
            raise ZVFormatError("the store has no resolution levels", store=self._io.name)
        return sorted(levels, key=lambda lv: lv.index)

    # -- metadata ----------------------------------------------------------------------
    @property
    def path(self) -> str:
        """The location the store was opened from."""
        return self._io.name

    @property
    def name(self) -> str:
        """The store's folder name without its ``.zarrvectors`` (or short ``.zv``) suffix."""
        base = PurePosixPath(self.path.rstrip("/").replace("\\", "/")).name
        for suffix in (".zarrvectors", ".zv"):
            if base.endswith(suffix) and len(base) > len(suffix):
                return base[: -len(suffix)]
        return base.split(".zarrvectors")[0] or base

    @property
    def remote(self) -> bool:
        """The store is reached over a network (requests are retried, latency matters)."""
        return self._io.remote

    @property
    def listable(self) -> bool:
        """The store can list its keys (``False`` for plain HTTP: :meth:`chunks` of a 0.7
        store then probes every candidate key of the level's grid, one request each)."""
        return self._io.listable

    @property
    def zv_version(self) -> str:
        return self.root.zv_version

    @property
    def generation(self) -> str:
        """Container layout: ``"0.7"``, ``"0.9"`` or ``"dense"`` (the spec's grid-shaped
        arrays)."""
        return self.layout.generation

    @property
    def geometry_type(self) -> str:
        """The store's own geometry (the first the root lists)."""
        return self.root.geometry_type

    @property
    def geometry_types(self) -> list[str]:
        """Every geometry the store holds, its own first: a composite store (zarr-vectors
        ``composite.add_geometry``) lists the geometries added to it after it."""
        return list(self.root.geometry_types or (self.root.geometry_type,))

    def geometry(self, geometry_type: str) -> GeometryStore:
        """The reader of one of :attr:`geometry_types`: this store for its own geometry, else
        a :class:`~.composite.CompositeGeometryStore` (both implement
        :class:`~.api.GeometryStore`).

        Raises ``KeyError`` naming the store's geometries for one it does not hold, and
        :class:`ZVFormatError` for an added geometry this reader cannot read.
        """
        if geometry_type == self.geometry_type:
            return self
        if geometry_type not in self.geometry_types:
            raise KeyError(
                f"{self.path} holds no {geometry_type!r} geometry "
                f"(geometry_types: {self.geometry_types})"
            )
        with self._lock:
            view = self._geometries.get(geometry_type)
        if view is None:
            view = CompositeGeometryStore(self, geometry_type)
            with self._lock:
                self._geometries[geometry_type] = view
        return view

    @property
    def ndim(self) -> int:
        return self.root.ndim

    @cached_property
    def placement(self) -> WorldPlacement:
        """Where the stored coordinates lie in the world (:mod:`.world`): the store ->
        world affine from the root ``crs`` (TrackVis voxmm -> RAS mm from ``headers/trk``
        for zarr-vectors-tools' TRK ingest, a plain affine otherwise, the identity when
        positions were stored in the output space) and ``coordinate_offset``. Reads stay in
        the stored space; a voxmm store without its TRK header warns once (best effort)."""
        zv = self.root.raw.get("zarr_vectors") or {}
        header = self.trk_header if isinstance(zv.get("crs"), dict) else None
        placement, warning = world_placement(zv, header, self.ndim, self.path)
        if warning:
            warnings.warn(warning, UserWarning, stacklevel=2)
        return placement

    @cached_property
    def trk_header(self) -> dict[str, Any] | None:
        """The attributes of the store's ``headers/trk`` group (a TRK ingest's TrackVis
        header: ``vox_to_ras``, ``dimensions``, ``voxel_size``, ``voxel_order``, ...),
        ``None`` when it has none."""
        doc = self._io.get_json("headers/trk/zarr.json")
        if doc is None:
            return None
        header = doc.get("attributes")
        if not isinstance(header, dict):
            raise ZVFormatError(
                "headers/trk/zarr.json: field 'attributes' is not a JSON object",
                store=self.path,
            )
        return header

    @property
    def world_affine(self) -> np.ndarray:
        """``placement.affine``: the ``(ndim + 1, ndim + 1)`` store -> world matrix."""
        return self.placement.affine

    @property
    def axes(self) -> list[str]:
        """Axis names in vertex column order (e.g. ``["x", "y", "z"]``)."""
        return list(self.root.axes)

    @property
    def axis_types(self) -> list[str]:
        """Type per axis (``"space"``, ``"time"``, ``"channel"``, ...; ``"space"`` where
        undeclared), in vertex column order."""
        return list(self.root.axis_types)

    @property
    def units(self) -> list[str | None]:
        """Declared unit per axis (``None`` where undeclared)."""
        return list(self.root.units)

    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Inclusive ``(lo, hi)`` world extent from the root metadata."""
        return self.root.bounds

    @property
    def chunk_shape(self) -> np.ndarray:
        """Level-0 chunk edge per axis."""
        return self.root.chunk_shape

    @property
    def base_bin_shape(self) -> np.ndarray:
        """Level-0 bin edge (the chunk shape when the store declares none)."""
        return self.levels[0].bin_shape

    def level(self, level: int) -> LevelInfo:
        """Metadata of one level; raises ``KeyError`` naming the available levels."""
        for lv in self.levels:
            if lv.index == level:
                return lv
        raise KeyError(
            f"{self.path} has no level {level} (levels: {[lv.index for lv in self.levels]})"
        )

    def chunks(self, level: int = 0) -> np.ndarray:
        """``(K, key_ndim)`` coordinates of the level's non-empty chunks, in level order.

        For an additive level (:meth:`refinement_chain`), the chunks of its grid that hold
        any of its complete content: its own non-empty chunks and those overlapping the
        non-empty chunks of the coarser levels it adds to (some hold no own data)."""
        chain = self.refinement_chain(level)
        if len(chain) == 1:
            return self._own_chunks(level)
        with self._lock:
            if level in self._chain_chunks:
                return self._chain_chunks[level]
        info = self.level(level)
        parts = [self._own_chunks(level)]
        parts += [map_chunks(self._own_chunks(c), self.level(c), info) for c in chain[1:]]
        found = sort_chunks(unique_rows(np.concatenate(parts)))
        with self._lock:
            self._chain_chunks[level] = found
        return found

    def _own_chunks(self, level: int) -> np.ndarray:
        """The level's own non-empty chunks (listed once)."""
        self.level(level)
        with self._lock:
            if level not in self._chunk_lists:
                self._chunk_lists[level] = self.layout.list_chunks(level, "vertices")
            return self._chunk_lists[level]

    def refinement_chain(self, level: int = 0) -> tuple[int, ...]:
        """The levels whose own data make up ``level``'s content, finest first: ``(level,)``
        unless the level is additive (``refinement: "add"``, FORMAT-NEXT §6), then
        ``level`` and the chain of ``level + 1``. :meth:`read`, :meth:`read_pieces`,
        :meth:`prefetch`, :meth:`chunks` and :meth:`object_presence` cover the whole
        chain; the object index, object attributes and ``LevelInfo.vertex_count``
        describe the level's own data."""
        self.level(level)
        return self._chains.get(level, (level,))

    def vertex_attribute_names(self, level: int = 0) -> list[str]:
        return self.layout.list_attributes(level, "vertex")

    @cached_property
    def parametric(self) -> Parametric:
        """Resolution-independent objects of the root ``parametric/`` group, with their
        groups and group attributes (empty when the store has none)."""
        return read_parametric(self._io)

    @property
    def parametric_objects(self) -> list[ParametricObject]:
        """Shortcut for ``parametric.objects``."""
        return self.parametric.objects

    # -- objects and groups ------------------------------------------------------------
    def object_index(self, level: int = 0, strict: bool = False) -> ObjectIndex | None:
        """Decoded manifests of a level (cached), or ``None`` when it has no objects."""
        self.level(level)
        with self._objects_lock:
            if level not in self._object_index:
                held = self._object_rows.pop(level, None)
                table: ObjectTable | None
                if isinstance(held, ObjectTable):
                    table = held
                else:
                    table = self.layout.read_object_table(level)
                self._object_index[level] = (
                    None
                    if table is None
                    else decode_object_index(
                        table,
                        self.level(level).key_ndim,
                        {"store": self.path, "level": level},
                        strict,
                        self._fragment_sharing(level),
                    )
                )
            return self._object_index[level]

    def _fragment_sharing(self, level: int) -> FragmentSharing:
        """Which fragments the level's objects may share (:data:`.objects.FragmentSharing`)."""
        if "shared_fragments" in self.root.format_capabilities or self.level(level).attributes.get(
            "shared_fragments"
        ):
            return "any"
        return "whole-chunk" if self.geometry_type == GeometryType.MESH else "none"

    def _object_ids_only(self, level: int) -> ObjectIndex | ObjectTable | ObjectRows | None:
        """What the level already holds of its object index, else its object ids with a
        reader of a few rows' manifests (read once and kept until the full table is read)."""
        self.level(level)
        with self._objects_lock:
            if level in self._object_index:
                return self._object_index[level]
            if level not in self._object_rows:
                self._object_rows[level] = self.layout.read_object_rows(level)
            return self._object_rows[level]

    def object_ids(self, level: int = 0) -> np.ndarray:
        """Ids of every object of the level's object index (empty when none)."""
        found = self._object_ids_only(level)
        return np.empty(0, np.int64) if found is None else np.asarray(found.ids, np.int64)

    def object_presence(self, level: int = 0) -> np.ndarray:
        """Boolean array indexed by object id: whether the object has geometry at ``level``
        (for an additive level, at any level of its :meth:`refinement_chain`)."""
        found = []
        for lv in self.refinement_chain(level):
            index = self.object_index(lv)
            if index is not None:
                found.append(_by_id(index.ids, index.present, False))
        if not found:
            return np.zeros(0, dtype=bool)
        out = np.zeros(max(f.size for f in found), dtype=bool)
        for f in found:
            out[: f.size] |= f
        return out

    def manifest(self, level: int, object_id: int) -> list[tuple[tuple[int, ...], int]]:
        """``[(chunk, fragment), ...]`` of one object in traversal order."""
        index = self.object_index(level)
        if index is None:
            raise KeyError(f"{self.path} level {level} has no object index")
        return index.manifest(object_id)

    def object_attributes(self, level: int = 0) -> dict[str, np.ndarray]:
        """``{name: array indexed by object id}``.

        Rows of objects absent at the level hold the store's absence value: zero in 0.7
        stores, the fill sentinel (NaN, INT_MIN, UINT_MAX) in 0.9 stores; ids missing from the
        id space hold :func:`.missing.missing_value` of the dtype. Use
        :meth:`object_presence` (or :meth:`object_attribute_presence`) to tell them apart.
        """
        ids = self.object_ids(level)
        return {
            name: _by_id(ids, a.values, missing_value(a.values.dtype))
            for name, a in self._aligned_object_attributes(level, ids.size).items()
        }

    def object_attribute_presence(self, level: int = 0) -> dict[str, np.ndarray]:
        """``{name: bool array indexed by object id}``: which objects hold a value."""
        ids = self.object_ids(level)
        out = {}
        for name, a in self._aligned_object_attributes(level, ids.size).items():
            present = a.present if a.present is not None else np.ones(a.values.shape[0], bool)
            out[name] = _by_id(ids, present, False)
        return out

    def _aligned_object_attributes(self, level: int, n_objects: int) -> dict[str, ObjectAttribute]:
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

    def groups(self, level: int = 0) -> dict[int, np.ndarray]:
        """``{group id: int64 object ids}`` (groups live at level 0 in every known writer)."""
        table = self.layout.read_groups(level)
        if table is None:
            return {}
        ids = self.object_ids(level)
        if len(ids) and table.members:
            members = np.concatenate(list(table.members.values()))
            unknown = members[~np.isin(members, ids)]
            if unknown.size:
                warnings.warn(
                    f"{self.path} level {level}: groups name {unknown.size} object ids the "
                    f"level does not hold (e.g. {int(unknown[0])}); they select nothing",
                    ZVChunkWarning,
                    stacklevel=2,
                )
        return dict(table.members)

    def group_names(self, level: int = 0) -> dict[int, str]:
        """``{group id: name}`` for stores that name their groups (0.9 ``group_names``)."""
        table = self.layout.read_groups(level)
        return {} if table is None else dict(table.names)

    def group_attributes(self, level: int = 0) -> dict[str, np.ndarray]:
        """``{name: array indexed by group id}``."""
        return self.layout.read_group_attributes(level)

    def links(
        self, level: int, delta: int = 0, chunks: np.ndarray | None = None, *, strict: bool = False
    ) -> LinkSet:
        """Raw link records of a level (``delta != 0``: cross-level links to ``level + delta``).
        A link cell that cannot be read is left out with a :class:`ZVChunkWarning` naming it
        (``strict=True``: raises); ``LinkSet.errors`` lists those gaps."""
        self.level(level)
        links = self.layout.read_links(level, delta, chunks)
        _report_gaps(links, strict)
        return links

    # -- reading -----------------------------------------------------------------------
    @_cancellable
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
        geometry_type: str | None = None,
        own_level_only: bool = False,
    ) -> Geometry:
        """Read geometry from one level.

        Parameters
        ----------
        level
            Pyramid level (0 = full resolution).
        bbox
            ``(lo, hi)`` in store coordinates (store axis order and units), inclusive;
            a malformed box raises :class:`ZVArgumentError`. Point clouds return exactly
            the vertices inside; object types return every fragment of every chunk the box intersects
            (paths leaving the loaded chunks are split into their loaded runs).
        object_ids, group_ids
            Read only these objects (or the objects of these groups), through their
            manifests: only the chunks they name are fetched. Both may be combined with
            ``bbox`` (the intersection is read). Ids not in the store select nothing.
        chunks
            Read exactly these chunk coordinates (``(K, key_ndim)``), e.g. from a
            level-of-detail planner; with ``object_ids``/``group_ids``, only those of them
            the objects' manifests name.
        attributes
            Decode vertex attributes (default) or skip them.
        strict
            Raise :class:`ZVFormatError` on a corrupt chunk instead of warning and
            leaving a gap.
        cache
            A :class:`ChunkCache` shared between reads: chunks it holds are not fetched
            or decoded again.
        cancel
            A :class:`threading.Event`: once set, fetches not started yet are dropped and
            the read raises :class:`ZVCancelledError` (applied by ``_cancellable``).
        geometry_type
            One of :attr:`geometry_types` (default: the store's own), read through
            :meth:`geometry`.
        own_level_only
            For an additive level (:meth:`refinement_chain`): only the data the level
            stores itself. By default such a read returns its complete content: the own
            reads of its chain concatenated, finest first (``chunks`` are mapped onto each
            coarser grid through the chunks that overlap them).
        """
        if geometry_type is not None and geometry_type != self.geometry_type:
            return self.geometry(geometry_type).read(
                level,
                bbox,
                object_ids,
                group_ids,
                chunks=chunks,
                attributes=attributes,
                strict=strict,
                cache=cache,
                cancel=cancel,
            )
        chain = self.refinement_chain(level)
        if len(chain) > 1 and not own_level_only:
            parts = self._over_chain(
                self.read,
                level,
                chunks,
                bbox=bbox,
                object_ids=object_ids,
                group_ids=group_ids,
                attributes=attributes,
                strict=strict,
                cache=cache,
                cancel=cancel,
            )
            return concat_geometries(parts, level)
        info = self.level(level)
        knd = info.key_ndim
        box = None if bbox is None else normalise_bbox(bbox, self.ndim, self.path)
        selection = Selection(bbox=box, store=self.path, strict=strict)
        pending: Future[ObjectIndex | ObjectTable | ObjectRows | None] | None = None
        index: ObjectIndex | ObjectTable | ObjectRows | Callable[[], ObjectIndex | None] | None
        beside = False  # the object index read beside: a local read fetches no batch ahead
        if object_ids is not None or group_ids is not None:
            selected, selection.object_rows = self._selected(level, object_ids, group_ids, strict)
            index = selected
        elif strict or self.geometry_type in PATH_TYPES:  # read beside the chunks
            pending = self._io.in_background(functools.partial(self.object_index, level, strict))
            beside = True
        else:  # its ids and metadata read and checked beside the chunks; its manifests
            # read and decoded when the per-vertex object ids are asked for
            pending = self._io.in_background(functools.partial(self._object_ids_only, level))
        if selection.object_rows is not None:
            named = None if chunks is None else np.asarray(chunks, np.int64).reshape(-1, knd)
            target = self._manifest_chunks(selected, selection.object_rows, knd, named)
        elif chunks is not None:
            target = np.asarray(chunks, dtype=np.int64).reshape(-1, knd)
        elif (
            box is not None
            and knd == self.ndim
            and level not in self._chunk_lists
            and not self.layout.knows_chunks(level)
        ):
            # a small box needs no listing: missing candidate chunks simply hold no data
            candidates = candidate_chunks(info, *box, limit=MAX_CANDIDATE_CHUNKS)
            target = self._own_chunks(level) if candidates is None else candidates
        else:
            target = self._own_chunks(level)
            selection.whole = box is None
        if box is not None:
            target = chunks_in_bbox(target, info, *box)

        specs = attribute_specs(self.layout, level) if attributes else []
        draco = self._is_draco(level)
        if draco and specs:
            warnings.warn(
                f"{self.path} level {level}: vertex attributes "
                f"{[s.name for s in specs]} are stored in pre-Draco row order, which the "
                "store does not record; they are left out",
                ZVChunkWarning,
                stacklevel=2,
            )
            specs = []
        try:
            decoded = load_chunks(
                self.layout, level, target, specs, strict=strict, cache=cache, beside=beside
            )
        finally:
            if pending is not None:  # (its error first: the object index is the level's)
                index = pending.result()
        if isinstance(index, ObjectTable | ObjectRows):
            index = functools.partial(self.object_index, level)
        loaded = LoadedChunks.build(decoded, self.ndim, knd, owned=cache is None)
        if loaded.n_rows >= RELEASE_MIN_ROWS:  # the fetched bytes are freed by now
            release_freed_memory()
        links = self._read_links(level, loaded, strict, not draco, selection.whole)
        if draco and links is not None:
            if len(links):
                warnings.warn(
                    f"{self.path} level {level}: {len(links)} faces spanning Draco chunks "
                    "refer to the pre-Draco vertex order and are left out (intra-chunk faces "
                    "are shown)",
                    ZVChunkWarning,
                    stacklevel=2,
                )
            links = None
        cattr = None
        if (
            info.chunk_attribute_name
            and info.chunk_attribute_values is not None
            and info.chunk_dims
        ):
            cattr = (info.chunk_attribute_name, info.chunk_attribute_values)
        return assemble(self.geometry_type, level, loaded, specs, index, links, selection, cattr)

    @_cancellable
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
        own_level_only: bool = False,
    ) -> Geometry:
        """The path pieces of ``chunks`` (polylines and streamlines), read without the
        object index: a quick look that costs only the chunks themselves.

        Every fragment (a run of one path's consecutive vertices inside one chunk) is one
        path whose object is unknown (``path_object_ids`` ``-1``, no
        ``vertex_object_ids``). Only the pieces whose first vertex ranks below
        ``fraction`` (:func:`.ranks.position_rank`) are kept, so a piece kept at one
        fraction is kept at every larger one whatever chunks are read with it. With
        ``bbox`` (store coordinates, inclusive), only pieces with a vertex inside are kept, whole;
        with ``max_vertices``, the lowest-ranked of them whose vertices (those inside
        ``bbox``) add up to at most that. ``attributes``, ``strict``, ``cache`` and
        ``cancel`` work as in :meth:`read`, and so does ``own_level_only`` (an additive level's
        pieces come from its whole chain, ``max_vertices`` per level). Raises
        :class:`ValueError` for other geometry types."""
        if self.geometry_type not in PIECE_TYPES:
            raise ValueError(
                f"{self.path}: read_pieces reads polylines and streamlines, not "
                f"{self.geometry_type}"
            )
        chain = self.refinement_chain(level)
        if len(chain) > 1 and not own_level_only:
            parts = self._over_chain(
                self.read_pieces,
                level,
                chunks,
                fraction=fraction,
                bbox=bbox,
                max_vertices=max_vertices,
                attributes=attributes,
                strict=strict,
                cache=cache,
                cancel=cancel,
            )
            return concat_geometries(parts, level)
        info = self.level(level)
        target = np.asarray(chunks, dtype=np.int64).reshape(-1, info.key_ndim)
        box = None if bbox is None else normalise_bbox(bbox, self.ndim, self.path)
        if box is not None and len(target) and info.key_ndim == self.ndim:
            # sides that do not cut the chunks read need no test
            edge = np.asarray(info.chunk_shape, np.float64)
            origin = info.chunk_origin
            lo, hi = box[0].copy(), box[1].copy()
            lo[lo <= target.min(axis=0) * edge + origin] = -np.inf
            hi[hi >= (target.max(axis=0) + 1) * edge + origin] = np.inf
            box = (lo, hi)
        specs = attribute_specs(self.layout, level) if attributes else []
        decoded = load_chunks(self.layout, level, target, specs, strict=strict, cache=cache)
        loaded = LoadedChunks.build(decoded, self.ndim, info.key_ndim)
        return assemble_pieces(
            self.geometry_type, level, loaded, specs, float(fraction), box, max_vertices
        )

    @_cancellable
    def prefetch(
        self,
        level: int,
        chunks: np.ndarray,
        cache: ChunkCache,
        *,
        attributes: bool = True,
        cancel: Event | None = None,
        own_level_only: bool = False,
    ) -> int:
        """Fetch and decode ``chunks`` into ``cache`` without assembling geometry, so a
        later :meth:`read` with the same cache costs no I/O. Returns how many of them
        hold data. Loaders call it batch by batch to report progress and stay cancellable;
        setting ``cancel`` also abandons the running batch's fetches
        (:class:`ZVCancelledError`). Chunks whose fetch failed are not cached. An additive
        level also prefetches the chunks of its chain that overlap ``chunks`` (unless
        ``own_level_only``)."""
        chain = self.refinement_chain(level)
        if len(chain) > 1 and not own_level_only:
            return sum(
                self._over_chain(
                    self.prefetch, level, chunks, cache=cache, attributes=attributes, cancel=cancel
                )
            )
        info = self.level(level)
        specs = (
            attribute_specs(self.layout, level) if attributes and not self._is_draco(level) else []
        )
        target = np.asarray(chunks, dtype=np.int64).reshape(-1, info.key_ndim)
        return len(load_chunks(self.layout, level, target, specs, cache=cache))

    def _over_chain(
        self, method: Callable[..., Any], level: int, chunks: np.ndarray | None, **kwargs: Any
    ) -> list[Any]:
        """``method`` (:meth:`read`, :meth:`read_pieces` or :meth:`prefetch`) on the own
        data of every level of ``level``'s refinement chain, finest first, with ``chunks``
        (``None``: whole levels) mapped onto each level's grid."""
        return [
            method(
                lv,
                chunks=None if chunks is None else self._chain_cells(chunks, level, lv),
                own_level_only=True,
                **kwargs,
            )
            for lv in self.refinement_chain(level)
        ]

    def _chain_cells(self, chunks: np.ndarray, level: int, other: int) -> np.ndarray:
        """``chunks`` of ``level`` as the chunks of ``other`` (a level of its chain) that
        overlap them."""
        if other == level:
            return np.asarray(chunks, np.int64).reshape(-1, self.level(level).key_ndim)
        return map_chunks(chunks, self.level(level), self.level(other))

    def _is_draco(self, level: int) -> bool:
        meta = self.layout.array_attributes(level, "vertices") or {}
        return meta.get("encoding") == "draco"

    def _selected(
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
        ids = np.unique(np.concatenate(wanted))
        found = self._object_ids_only(level)
        if found is None:
            return None, np.empty(0, np.int64)
        rows = np.flatnonzero(np.isin(found.ids, ids))
        if isinstance(found, ObjectIndex):
            return found, rows
        if rows.size * PARTIAL_INDEX_SHARE > found.ids.size:
            index = self.object_index(level, strict=strict)
            return index, rows
        if isinstance(found, ObjectRows):  # only the manifest chunks holding these rows
            part = found.manifests(rows)
        else:
            part = ObjectTable(found.ids[rows], [found.manifests[r] for r in rows.tolist()])
        where = {"store": self.path, "level": level}
        index = decode_object_index(
            part, self.level(level).key_ndim, where, strict, self._fragment_sharing(level)
        )
        return index, np.arange(rows.size, dtype=np.int64)

    @staticmethod
    def _manifest_chunks(
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

    def _read_links(
        self,
        level: int,
        loaded: LoadedChunks,
        strict: bool,
        check: bool = True,
        whole: bool = False,
    ) -> LinkSet | None:
        """The level's links touching ``loaded``; with ``check``, records pointing at rows
        the loaded chunks do not hold (``whole``, a read of the whole level: or at chunks the
        level does not list) are left out as gaps. Every gap is reported."""
        if self.geometry_type not in (*GRAPH_TYPES, GeometryType.MESH) or loaded.n_rows == 0:
            return None
        try:
            if 0 not in self.layout.link_deltas(level):
                return None
            links = self.layout.read_links(level, 0, loaded.table.chunks)
        except ZVFormatError as exc:
            if strict:
                raise
            warnings.warn(f"links left out: {exc}", ZVChunkWarning, stacklevel=3)
            return None
        if check:
            listed = self._own_chunks(level) if whole else None
            links = _impossible_records(links, loaded, self.path, level, listed)
        _report_gaps(links, strict)
        return links

    def __repr__(self) -> str:
        return (
            f"<Store {self.path!r} {self.geometry_type} ZV {self.zv_version} "
            f"({self.ndim}-D, {len(self.levels)} level(s))>"
        )


def _impossible_records(
    links: LinkSet,
    loaded: LoadedChunks,
    store: str,
    level: int,
    whole: np.ndarray | None = None,
) -> LinkSet:
    """``links`` without the records that have an endpoint in a loaded chunk at a row that
    chunk does not hold (a corrupt index: read as is it would drop an edge silently or, in
    a skeleton, leave an implicit parent in place), or, when the read was of the whole level
    (``whole``: its listed chunks), in a chunk the level does not list; each chunk owning
    such records is reported as a gap."""
    if not len(links):
        return links
    at = loaded.table.index_of(links.chunks)
    bad_ep = (at >= 0) & (loaded.global_rows(links.chunks, links.rows) < 0)
    if whole is not None:  # the read loaded the level: an endpoint must be in a listed chunk
        bad_ep |= ChunkTable(whole).index_of(links.chunks) < 0
    bad = np.flatnonzero(bad_ep.any(axis=1))
    if bad.size == 0:
        return links
    owners = links.chunks[bad, 0]
    sizes = np.diff(loaded.start)
    for chunk in unique_rows(owners):
        first = bad[np.flatnonzero(np.all(owners == chunk, axis=1))]
        m, k = first[0], int(np.flatnonzero(bad_ep[first[0]])[0])
        held = f"holds {int(sizes[at[m, k]])}" if at[m, k] >= 0 else "the level does not list"
        error = ZVFormatError(
            f"{first.size} link record(s) point at rows their chunks do not hold (row "
            f"{int(links.rows[m, k])} of chunk {chunk_key(links.chunks[m, k])}, which {held})",
            store=store,
            level=level,
            array="links/0",
            chunk=chunk,
        )
        links.lose(error, chunk)
    keep = np.ones(len(links), bool)
    keep[bad] = False
    return links.keep(keep)


def _report_gaps(links: LinkSet, strict: bool) -> None:
    """Warn about every gap of ``links`` (``strict``: raise the first)."""
    for error in links.errors:
        if strict:
            raise error
        warnings.warn(f"links left out: {error}", ZVChunkWarning, stacklevel=4)


#: Largest object id for which per-id arrays are built for sparse id spaces.
MAX_DENSE_ID = 50_000_000


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
