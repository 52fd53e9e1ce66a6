"""The public entry point: :func:`open_store` and :class:`Store`."""

from __future__ import annotations

import contextlib
import functools
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from threading import Event
from typing import Any

import numpy as np
from zarr.abc.store import Store as ZarrStore

from .api import GeometryStore
from .assembly import Selection, assemble, assemble_pieces
from .cache import ChunkCache
from .chunks import LoadedChunks
from .composite import CompositeGeometryStore
from .errors import ZVChunkWarning
from .geometry import PIECE_TYPES, Geometry
from .io import StoreIO
from .layout import LinkSet, ObjectRows, ObjectTable
from .level_objects import LevelObjects, manifest_chunks
from .loaded_links import links_of_loaded, report_gaps
from .loading import AttributeSpec, attribute_specs, load_chunks
from .memory import release_freed_memory
from .metadata import LevelInfo
from .objects import ObjectIndex
from .query import candidate_chunks, chunks_in_bbox, normalise_bbox
from .refinement import concat_geometries, map_chunks
from .remote import RetryPolicy
from .store_metadata import StoreMetadata

#: A bbox read probes at most this many candidate chunk keys before it lists the level instead.
MAX_CANDIDATE_CHUNKS = 4096

#: Fewest rows a read loads after which the memory its fetched bytes took is given back
#: before the result is built (:func:`.memory.release_freed_memory`).
RELEASE_MIN_ROWS = 1 << 20


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


class Store(StoreMetadata):
    """A read-only ZV store: metadata (:class:`~.store_metadata.StoreMetadata`), and reads
    by level, bbox, object ids or group ids."""

    def __init__(self, io: StoreIO) -> None:
        super().__init__(io)
        self._objects = LevelObjects(self.layout, self.root, self.level, self.path, self._is_draco)
        self._geometries: dict[str, CompositeGeometryStore] = {}

    @contextlib.contextmanager
    def reading(self, cancel: Event | None) -> Iterator[None]:
        """Within this block, the reads of the calling thread share one read budget (remote
        stores) and stop once ``cancel`` is set: fetches not started yet are dropped and
        the read raises :class:`~napari_zarr_vectors.format.errors.ZVCancelledError`."""
        with self._io.cancellable(cancel), self._io.read_budget():
            yield

    # -- metadata ----------------------------------------------------------------------
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

    # -- objects and groups ------------------------------------------------------------
    def object_index(self, level: int = 0, strict: bool = False) -> ObjectIndex | None:
        """Decoded manifests of a level (cached), or ``None`` when it has no objects."""
        return self._objects.index(level, strict)

    def object_index_parts(self, level: int, rows_per_part: int) -> list[tuple[int, int]]:
        """The level's object index cut into ``(start, stop)`` row ranges of about
        ``rows_per_part`` rows that :meth:`object_index_part` decodes alone (one range when
        the layout stores the manifests whole; none without an index)."""
        return self._objects.index_parts(level, rows_per_part)

    def object_index_part(
        self, level: int, start: int, stop: int, strict: bool = False
    ) -> ObjectIndex | None:
        """The object index of rows ``start:stop`` of the level's index alone (not cached:
        a whole-store job's task decodes a part, not the level)."""
        return self._objects.index_part(level, start, stop, strict)

    def object_ids(self, level: int = 0) -> np.ndarray:
        """Ids of every object of the level's object index (empty when none)."""
        return self._objects.ids(level)

    def object_presence(self, level: int = 0) -> np.ndarray:
        """Boolean array indexed by object id: whether the object has geometry at ``level``
        (for an additive level, at any level of its :meth:`refinement_chain`)."""
        return self._objects.presence(self.refinement_chain(level))

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
        An attribute whose row count differs from the object index's (e.g. an inflated
        ``shape``) cannot be matched to the objects and is left out with a
        :class:`ZVChunkWarning`.
        """
        return self._objects.attributes(level)

    def object_attribute_presence(self, level: int = 0) -> dict[str, np.ndarray]:
        """``{name: bool array indexed by object id}``: which objects hold a value."""
        return self._objects.attribute_presence(level)

    def groups(self, level: int = 0) -> dict[int, np.ndarray]:
        """``{group id: int64 object ids}`` (groups live at level 0 in every known writer)."""
        return self._objects.groups(level)

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
        report_gaps(links, strict)
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
        box = None if bbox is None else normalise_bbox(bbox, self.ndim, self.path)
        selection = Selection(bbox=box, store=self.path, strict=strict)
        selected = pending = None
        beside = False  # the object index read beside: a local read fetches no batch ahead
        if object_ids is not None or group_ids is not None:
            selected, selection.object_rows = self._objects.select(
                level, object_ids, group_ids, strict
            )
        else:
            pending, beside = self._objects.read_beside(level, strict)
        index: ObjectIndex | ObjectTable | ObjectRows | Callable[[], ObjectIndex | None] | None
        index = selected
        target = self._read_target(level, box, chunks, selection, selected)
        draco = self._is_draco(level)
        specs = self._vertex_specs(level, attributes, draco)
        try:
            decoded = load_chunks(
                self.layout, level, target, specs, strict=strict, cache=cache, beside=beside
            )
        finally:
            if pending is not None:  # (its error first: the object index is the level's)
                index = pending.result()
        if isinstance(index, ObjectTable | ObjectRows):
            index = functools.partial(self.object_index, level)
        loaded = LoadedChunks.build(decoded, self.ndim, info.key_ndim, owned=cache is None)
        if loaded.n_rows >= RELEASE_MIN_ROWS:  # the fetched bytes are freed by now
            release_freed_memory()
        listed = functools.partial(self._own_chunks, level) if selection.whole else None
        links = links_of_loaded(
            self.layout, self.geometry_type, self.path, level, loaded, strict, draco, listed
        )
        return assemble(
            self.geometry_type,
            level,
            loaded,
            specs,
            index,
            links,
            selection,
            _chunk_attribute(info),
        )

    def _read_target(
        self,
        level: int,
        box: tuple[np.ndarray, np.ndarray] | None,
        chunks: np.ndarray | None,
        selection: Selection,
        selected: ObjectIndex | None,
    ) -> np.ndarray:
        """The chunks a :meth:`read` loads: those the selected objects' manifests name (of
        ``chunks``, when given), ``chunks``, or the level's (for a small box and a level
        not listed yet, the candidate chunks the box meets: a missing one holds no data),
        narrowed to those ``box`` meets. Sets ``selection.whole`` for a read of the whole
        level."""
        info = self.level(level)
        knd = info.key_ndim
        if selection.object_rows is not None:
            named = None if chunks is None else np.asarray(chunks, np.int64).reshape(-1, knd)
            target = manifest_chunks(selected, selection.object_rows, knd, named)
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
        return target

    def _vertex_specs(self, level: int, attributes: bool, draco: bool) -> list[AttributeSpec]:
        """The vertex attributes a :meth:`read` decodes: none without ``attributes`` or in
        a Draco store (``draco``: stored in pre-Draco row order; left out with a
        warning)."""
        specs = attribute_specs(self.layout, level) if attributes else []
        if draco and specs:
            warnings.warn(
                f"{self.path} level {level}: vertex attributes "
                f"{[s.name for s in specs]} are stored in pre-Draco row order, which the "
                "store does not record; they are left out",
                ZVChunkWarning,
                stacklevel=3,
            )
            return []
        return specs

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

    def __repr__(self) -> str:
        return (
            f"<Store {self.path!r} {self.geometry_type} ZV {self.zv_version} "
            f"({self.ndim}-D, {len(self.levels)} level(s))>"
        )


def _chunk_attribute(info: LevelInfo) -> tuple[str, tuple[Any, ...]] | None:
    """The attribute a level is chunked by (``chunk_dims``: the first chunk key axis bins
    it): its name and the value of each bin, for :func:`.assembly.assemble`; ``None`` for
    a level chunked in space alone."""
    if info.chunk_attribute_name and info.chunk_attribute_values is not None and info.chunk_dims:
        return info.chunk_attribute_name, info.chunk_attribute_values
    return None
