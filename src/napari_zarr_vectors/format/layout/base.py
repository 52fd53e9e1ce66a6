"""The container interface both on-disk generations implement.

A :class:`Layout` knows *where* a store keeps each logical array and returns raw payload
bytes or lightly-decoded tables; it never assembles geometry. ``v07`` (one tiny Zarr array
per spatial chunk) and ``v09`` (one vlen-bytes Zarr array per logical array) implement it.

Conventions
-----------
* ``chunks`` arrays are ``(K, key_ndim)`` int64 chunk coordinates (absolute, may be negative).
* Grid array names are level-relative: ``"vertices"``, ``"vertex_fragments"``,
  ``"link_fragments"``, ``"vertex_attributes/<name>"``, ``"fragment_attributes/<name>"``.
"""

from __future__ import annotations

import threading
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np

from ..decode.arrays import parse_attribute_dtype
from ..discovery import warn_unlisted
from ..errors import ZVAttributeWarning, ZVChunkWarning, ZVFormatError, ZVUnsupportedDtypeError
from ..io import StoreIO
from ..metadata import LevelInfo, RootMetadata
from ..validate import Source, as_mapping, str_field

if TYPE_CHECKING:
    from zarr import Array
    from zarr.core.array import AsyncArray

    from ..chunks import ChunkTable


class PayloadSink(Protocol):
    """Where :meth:`Layout.read_payloads_into` puts the payloads it reads."""

    def claim(self, i: int, nbytes: int) -> memoryview | None:
        """Writable memory of ``nbytes`` for the payload of chunk ``i`` (read into it
        next), or ``None`` to leave that chunk to :meth:`Layout.read_cell_views`."""

    def drop(self, i: int) -> None:
        """The payload of chunk ``i`` could not be read after all: its memory, the last
        claimed, is free again."""


@dataclass
class LinkSet:
    """Link records of one level and delta, endpoint by endpoint.

    ``chunks[m, k]`` / ``rows[m, k]`` locate endpoint ``k`` of record ``m``: endpoint 0 at
    the owning level, endpoints ``k >= 1`` at ``level + delta``. Rows are in the endpoint
    chunk's vertex row numbering. ``attributes`` are aligned with the records (NaN where
    the store has no value for a record).

    The records of one link cell share their endpoint chunks, so the chunks are held as
    ``keys`` (one ``(W, key_ndim)`` combination per cell) and ``key_of`` (each record's
    combination): ten million records of a few hundred cells cost ``rows`` and ``key_of``,
    not a ``(M, W, key_ndim)`` array. :attr:`chunks` builds that array when asked;
    :meth:`chunk_index` looks the endpoints up in a chunk table without it.
    """

    keys: np.ndarray  # (K, W, key_ndim) int64
    key_of: np.ndarray  # (M,) int32 (int64 past 2**31 keys), into keys
    rows: np.ndarray  # (M, W) int64
    attributes: dict[str, np.ndarray] = field(default_factory=dict)
    #: the gaps: one located :class:`ZVFormatError` per link cell (or level-wide blob) whose
    #: records could not be read or were impossible, and left out
    errors: list[ZVFormatError] = field(default_factory=list)
    #: ``(D, key_ndim)`` chunks that may own a record left out (its endpoint 0 there): a
    #: skeleton cannot tell their vertices' parents (see :meth:`lose`)
    damaged: np.ndarray | None = None
    #: a record left out may own any chunk (a level-wide blob could not be read)
    damaged_anywhere: bool = False

    @classmethod
    def empty(cls, width: int, key_ndim: int) -> LinkSet:
        return cls.of([], [], {}, width, key_ndim)

    @classmethod
    def of_chunks(cls, chunks: np.ndarray, rows: np.ndarray) -> LinkSet:
        """Records given with every endpoint's chunk (``(M, W, key_ndim)``)."""
        return cls(np.asarray(chunks, np.int64), np.arange(len(rows)), np.asarray(rows, np.int64))

    @staticmethod
    def cell(chunk: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A part for :meth:`of`: the records ``rows`` (``(M, W)``) of one cell, every
        endpoint in ``chunk``."""
        width = rows.shape[1]
        keys = np.broadcast_to(np.asarray(chunk, np.int64), (1, width, len(chunk)))
        return keys, np.array([len(rows)], np.int64)

    @property
    def width(self) -> int:
        return int(self.rows.shape[1])

    def __len__(self) -> int:
        return int(self.rows.shape[0])

    @property
    def chunks(self) -> np.ndarray:
        """``(M, W, key_ndim)`` int64: the chunk of every endpoint."""
        chunks: np.ndarray = self.keys[self.key_of]
        return chunks

    def chunk_index(self, table: ChunkTable) -> np.ndarray:
        """``(M, W)``: the position in ``table`` of every endpoint's chunk, ``-1`` where
        absent (each combination looked up once)."""
        at: np.ndarray = table.index_of(self.keys)[self.key_of]
        return at

    @classmethod
    def of(
        cls,
        parts: list[tuple[np.ndarray, np.ndarray]],
        parts_r: list[np.ndarray],
        attributes: dict[str, np.ndarray],
        width: int,
        key_ndim: int,
        gaps: Sequence[tuple[ZVFormatError, np.ndarray | None]] = (),
    ) -> LinkSet:
        """The records of several parts and their rows (``(M_j, W)`` pieces, in order),
        with the gaps ``(error, chunks)`` a layout met reading them (see :meth:`lose`).
        A part is ``(keys, runs)``: ``keys`` as in the class, ``runs[i]`` records in a row
        with the chunks ``keys[i]``."""
        if parts_r:
            keys = np.concatenate([k for k, _ in parts]).astype(np.int64, copy=False)
            runs = np.concatenate([r for _, r in parts])
            index = np.int32 if len(keys) < 2**31 else np.int64
            key_of = np.repeat(np.arange(len(keys), dtype=index), runs)
            # (a copy, always: the pieces may be read-only views of the cells' bytes)
            rows = np.concatenate(parts_r).astype(np.int64, copy=False)
            links = cls(keys, key_of, rows, attributes)
        else:
            links = cls(
                np.empty((0, width, key_ndim), np.int64),
                np.empty(0, np.int32),
                np.empty((0, width), np.int64),
            )
        for error, where in gaps:
            links.lose(error, where)
        return links

    def lose(self, error: ZVFormatError, chunks: np.ndarray | None = None) -> None:
        """Record a gap: ``error`` names it; ``chunks`` are where the records it cost have
        their endpoint 0 (``None``: anywhere in the level)."""
        self.errors.append(error)
        if chunks is None:
            self.damaged_anywhere = True
            return
        chunks = np.asarray(chunks, np.int64).reshape(-1, self.keys.shape[2])
        self.damaged = chunks if self.damaged is None else np.concatenate([self.damaged, chunks])

    def damaged_in(self, table: ChunkTable) -> np.ndarray:
        """Which chunks of a :class:`~napari_zarr_vectors.format.chunks.ChunkTable` may own a
        record left out (bool per table row)."""
        out = np.full(len(table.chunks), self.damaged_anywhere)
        if self.damaged is not None and not self.damaged_anywhere:
            at = table.index_of(self.damaged)
            out[at[at >= 0]] = True
        return out

    def keep(self, mask: np.ndarray) -> LinkSet:
        """The records where ``mask`` holds (the gaps carried over)."""
        return LinkSet(
            self.keys,
            self.key_of[mask],
            self.rows[mask],
            {k: v[mask] for k, v in self.attributes.items()},
            self.errors,
            self.damaged,
            self.damaged_anywhere,
        )


def decoded_chunk_shape(arr: AsyncArray[Any] | Array[Any]) -> tuple[int, ...] | None:
    """Shape of the chunks zarr decodes one by one to read the zarr array ``arr`` (a sharded
    array's inner chunks); ``None`` for an irregular grid."""
    for codec in getattr(arr.metadata, "codecs", ()):
        inner = getattr(codec, "chunk_shape", None)  # the sharding codec
        if inner is not None:
            return tuple(int(c) for c in inner)
    shape = getattr(arr.metadata.chunk_grid, "chunk_shape", None)
    return None if shape is None else tuple(int(c) for c in shape)


@dataclass
class ObjectTable:
    """Object index of a level: row ``r`` describes object ``ids[r]``; manifests are raw
    blobs (a list, or :class:`~..decode.vlen.PackedBlobs` when read packed)."""

    ids: np.ndarray  # (O,) int64
    manifests: Sequence[bytes]


@dataclass
class ObjectRows:
    """The object ids of a level's index rows, read without the manifests:
    ``manifests(rows)`` reads the manifests of index rows ``rows`` (ascending) alone, as
    the :class:`ObjectTable` of those rows; ``chunk_rows``: the rows of one stored chunk of
    manifests (a read of rows reads the chunks holding them whole)."""

    ids: np.ndarray  # (O,) int64
    manifests: Callable[[np.ndarray], ObjectTable]
    chunk_rows: int = 1


@dataclass
class ObjectAttribute:
    """One object attribute, row-aligned with :attr:`ObjectTable.ids`.

    ``present`` marks rows that hold a value (``None`` = all rows hold one).
    """

    values: np.ndarray
    present: np.ndarray | None = None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class GroupTable:
    """Groups of a level: ``members[g]`` are the object ids of group ``g``."""

    members: dict[int, np.ndarray]
    names: dict[int, str] = field(default_factory=dict)


class LinkReader(Protocol):
    """A layout part that reads the link families (:class:`LinksFromPart`)."""

    def deltas(self, level: int) -> list[int]: ...

    def width(self, level: int, delta: int = 0) -> int | None: ...

    def read(self, level: int, delta: int = 0, chunks: np.ndarray | None = None) -> LinkSet: ...


class LinksFromPart:
    """The link methods of a :class:`Layout` whose links one part reads (``self.links``)."""

    links: LinkReader

    def link_deltas(self, level: int) -> list[int]:
        return self.links.deltas(level)

    def link_width(self, level: int, delta: int = 0) -> int | None:
        return self.links.width(level, delta)

    def read_links(self, level: int, delta: int = 0, chunks: np.ndarray | None = None) -> LinkSet:
        return self.links.read(level, delta, chunks)


class Layout(ABC):
    """Where the arrays of a ZV store live, and how to get their bytes.

    Implementations must be read-only and must raise :class:`ZVFormatError` (with store,
    level, array and chunk) for bytes they cannot decode, never ``IndexError`` & co.
    """

    #: ``"0.7"`` or ``"0.9"``.
    generation: str = ""

    def __init__(self, io: StoreIO, root: RootMetadata, levels: Sequence[LevelInfo]) -> None:
        self.io = io
        self.root = root
        self.levels = {lv.index: lv for lv in levels}
        self._lock = threading.Lock()
        self._docs: dict[str, dict[str, Any] | None] = {}
        self._warned: set[str] = set()  # attributes left out, warned once (left_out)
        self._warned_lock = threading.Lock()

    # -- node metadata (zarr.json), cached for the life of the layout ---------------------
    def doc(self, path: str) -> dict[str, Any] | None:
        """The parsed ``zarr.json`` of the node at ``path`` (cached; ``None`` when absent)."""
        with self._lock:
            if path in self._docs:
                return self._docs[path]
        self.prefetch_docs([path])
        with self._lock:
            return self._docs[path]

    def prefetch_docs(self, paths: Sequence[str]) -> None:
        """Fetch the ``zarr.json`` of every node path not cached yet, in one batch."""
        with self._lock:
            missing = [p for p in dict.fromkeys(paths) if p not in self._docs]
        if not missing:
            return
        raws = self.io.get_many([f"{p}/zarr.json" for p in missing])
        docs = {}
        error = None
        for p, raw in zip(missing, raws, strict=True):
            try:
                docs[p] = None if raw is None else self.io.parse_json(raw, f"{p}/zarr.json")
            except ZVFormatError as exc:  # left uncached: raised when that node is used
                error = error or exc
        with self._lock:
            self._docs.update(docs)
        if error is not None and len(missing) == 1:
            raise error

    def attrs(self, path: str) -> dict[str, Any] | None:
        """The ``attributes`` of the node at ``path`` (``None`` when there is no node);
        raises :class:`ZVFormatError` naming the file when they are not a JSON object."""
        doc = self.doc(path)
        return (
            None if doc is None else as_mapping(doc.get("attributes"), "attributes", self.src(path))
        )

    def src(self, path: str, level: int | None = None, array: str | None = None) -> Source:
        """The :class:`~napari_zarr_vectors.format.validate.Source` of the node at ``path``
        (its ``zarr.json``), for the validation helpers."""
        if level is None:
            head = path.split("/", 1)[0]
            level = int(head) if head.isdigit() else None
        return Source(self.io.name, f"{path}/zarr.json", level, array)

    # -- helpers shared by implementations ---------------------------------------------
    def error(
        self,
        message: str,
        level: int | None = None,
        array: str | None = None,
        chunk: Sequence[int] | str | None = None,
    ) -> ZVFormatError:
        """A :class:`ZVFormatError` located in this store."""
        return ZVFormatError(message, store=self.io.name, level=level, array=array, chunk=chunk)

    def warn_missing(self, level: int, path: str, what: str = "attribute") -> None:
        """Warn that a listed folder holds no array or group (its data or ``zarr.json`` is
        gone): ``what`` it holds (an attribute, links) is left out."""
        error = self.error("the folder is listed but holds no array", level, path)
        warnings.warn(f"{what} left out: {error}", ZVChunkWarning, stacklevel=3)

    def warn_if_listed(self, level: int, name: str, what: str) -> None:
        """:meth:`warn_missing` when the level's folder lists ``name`` (a folder whose
        ``zarr.json`` is gone), found absent by the caller; a store without it says nothing."""
        if name in (self.io.list_dir_known(f"{level}", all_nodes=True) or ()):
            self.warn_missing(level, name, what)

    def warn_misaligned(self, level: int, name: str, rows: int, n_objects: int) -> None:
        """Warn that object attribute ``name`` holds ``rows`` rows for ``n_objects`` objects
        (e.g. an inflated ``shape``): its rows cannot be matched to objects, it is left out."""
        error = self.error(
            f"{rows} rows for {n_objects} objects", level, f"object_attributes/{name}"
        )
        warnings.warn(f"left out: {error}", ZVChunkWarning, stacklevel=3)

    def key_ndim(self, level: int) -> int:
        return self.levels[level].key_ndim

    # -- grid arrays -------------------------------------------------------------------
    @abstractmethod
    def list_chunks(self, level: int, array: str = "vertices") -> np.ndarray:
        """Chunks holding data for ``array``, sorted as integer tuples; ``(K, key_ndim)``."""

    #: Level-relative nodes whose ``zarr.json`` a read of a level needs (prefetched in one
    #: batch for remote stores by :meth:`prefetch_metadata`).
    LEVEL_NODES: tuple[str, ...] = (
        "vertices",
        "vertex_fragments",
        "object_index",
        "object_index/manifests",
        "object_index/object_ids",
        "links/0",
        "cross_chunk_links/0",
        "groups",
    )

    def prefetch_metadata(self, level: int) -> None:
        """Fetch the metadata a read of ``level`` needs in as few round trips as possible
        (a remote store otherwise pays one round trip per document). Optional."""
        return None

    def knows_chunks(self, level: int) -> bool:
        """Whether :meth:`list_chunks` of the level's ``vertices`` is free (recorded in
        metadata), so that a bbox read should use it instead of probing candidate keys."""
        return False

    def array_attributes(self, level: int, array: str) -> dict[str, Any] | None:
        """ZV attributes of a logical array (``dtype``, ``encoding``, ``row_shape`` ...): the
        attributes of ``<level>/<array>``'s ``zarr.json`` (``None`` without one)."""
        return self.attrs(f"{level}/{array}")

    def attribute_dtype(
        self, level: int, kind: str, name: str, array: str, default: str = "float32"
    ) -> np.dtype | None:
        """The dtype the ``kind`` (``"edge"``, ``"object"``, ``"group"``) attribute ``name``
        declares in ``array``'s attributes (``default`` when it declares none), or ``None`` when it cannot be decoded (``object``
        and other unsupported kinds): then it is left out with a
        :class:`~..errors.ZVAttributeWarning` naming it, its array, level and store. A
        corrupt ``dtype`` field still raises (:class:`ZVFormatError`)."""
        meta = self.array_attributes(level, array) or {}
        src = self.src(f"{level}/{array}", level, array)
        try:
            return parse_attribute_dtype(str_field(meta, "dtype", src, default))
        except ZVUnsupportedDtypeError as exc:
            self.left_out(kind, name, exc.located(store=self.io.name, level=level, array=array))
            return None

    def left_out(self, kind: str, name: str, error: ZVFormatError) -> None:
        """Warn (:class:`~..errors.ZVAttributeWarning`, once per store: the level of detail
        reads a level again and again) that the ``kind`` attribute ``name`` is left out
        because of ``error``, which names its store, level and array."""
        message = f"{kind} attribute {name!r} left out: {error}"
        with self._warned_lock:
            if message in self._warned:
                return
            self._warned.add(message)
        warnings.warn(message, ZVAttributeWarning, stacklevel=3)

    @abstractmethod
    def read_cells(
        self, level: int, arrays: Sequence[str], chunks: np.ndarray
    ) -> dict[str, list[bytes | ZVFormatError | None]]:
        """Payload bytes of every (array, chunk) pair, fetched concurrently.

        ``None`` = no data there; a :class:`ZVFormatError` instance (not raised) = that
        cell's container bytes were unreadable, so the caller can skip just that chunk.
        """

    def read_cell_views(
        self, level: int, arrays: Sequence[str], chunks: np.ndarray
    ) -> dict[str, list[bytes | memoryview | ZVFormatError | None]]:
        """:meth:`read_cells` with each payload any bytes-like buffer: a layout that can
        hands out views of the fetched bytes (no copy of a chunk's payload)."""
        cells = self.read_cells(level, arrays, chunks)
        return cast(dict[str, list[bytes | memoryview | ZVFormatError | None]], cells)

    def reads_in_place(self, level: int, array: str) -> bool:
        """Whether :meth:`read_payloads_into` reads ``array``'s cells at ``level`` (local
        cells stored plainly); here: never."""
        return False

    def read_payloads_into(
        self, level: int, array: str, chunks: np.ndarray, sink: PayloadSink
    ) -> np.ndarray:
        """Read the payloads of ``array``'s cells of ``chunks`` straight into the memory
        ``sink`` hands out (no fetched copy in between) where :meth:`reads_in_place`, each
        checked as :meth:`read_cell_views` checks it. Whether each chunk's payload was read
        so (bool); the others (an empty or damaged cell, a sink that declined) are for
        :meth:`read_cell_views`, which reports what is wrong with them. Here: none."""
        return np.zeros(len(chunks), dtype=bool)

    @abstractmethod
    def list_attributes(self, level: int, kind: str) -> list[str]:
        """Names of the ``kind`` attributes at a level: ``"vertex"``, ``"object"``,
        ``"group"``, ``"link"`` or ``"fragment"``."""

    def unlisted_attributes(self, kind: str) -> list[str]:
        """No attribute names of ``kind`` to be had (the store cannot be listed): warn once
        per store, and read the geometry without them."""
        warn_unlisted(
            self.io.name,
            self.io.warned,
            f"{kind} attribute names",
            f"geometry is read without {kind} attributes",
        )
        return []

    # -- links -------------------------------------------------------------------------
    @abstractmethod
    def link_deltas(self, level: int) -> list[int]:
        """Level deltas that have link records at ``level`` (0 = intra-level)."""

    @abstractmethod
    def link_width(self, level: int, delta: int = 0) -> int | None:
        """Endpoints per record of the ``delta`` family (``None`` when there is none)."""

    @abstractmethod
    def read_links(self, level: int, delta: int = 0, chunks: np.ndarray | None = None) -> LinkSet:
        """Link records whose endpoint-0 chunk is in ``chunks`` (all when ``None``),
        plus every record that touches one of ``chunks`` through another endpoint when
        the layout stores it elsewhere (0.7 cross-chunk records)."""

    # -- objects and groups -------------------------------------------------------------
    @abstractmethod
    def read_object_table(self, level: int) -> ObjectTable | None:
        """The level's object index, or ``None`` when it has none."""

    def read_object_rows(self, level: int) -> ObjectRows | ObjectTable | None:
        """The level's object ids with a reader of a few rows' manifests, where the
        layout stores manifests in chunks of rows; else the whole table
        (:meth:`read_object_table`)."""
        return self.read_object_table(level)

    @abstractmethod
    def read_object_attributes(self, level: int) -> dict[str, ObjectAttribute]:
        """Every object attribute of the level, row-aligned with the object table."""

    @abstractmethod
    def read_groups(self, level: int) -> GroupTable | None:
        """The level's groups, or ``None``."""

    @abstractmethod
    def read_group_attributes(self, level: int) -> dict[str, np.ndarray]:
        """Every group attribute, indexed by group id."""

    def gather_whole(
        self, level: int, named: Sequence[tuple[str, AsyncArray[Any] | None]]
    ) -> list[np.ndarray | None]:
        """Whole contents of opened arrays (``(name, AsyncArray or None)``; the caller has
        checked their sizes), read concurrently; a failed read raises :class:`ZVFormatError`
        naming the level and array."""
        import asyncio

        from zarr.core.sync import sync

        async def one(arr: AsyncArray[Any] | None) -> np.ndarray | None:
            if arr is None:
                return None
            whole = await arr.getitem(tuple(slice(None) for _ in arr.shape))
            return cast(np.ndarray, whole)  # (zarr's default buffers are numpy arrays)

        async def run() -> list[np.ndarray | BaseException | None]:
            return await asyncio.gather(*(one(a) for _, a in named), return_exceptions=True)

        out: list[np.ndarray | None] = []
        for (name, _), res in zip(named, sync(run()), strict=True):
            if isinstance(res, BaseException):
                raise self.error(
                    f"cannot read the array: {type(res).__name__}: {res}", level, name
                ) from None
            out.append(None if res is None else np.asarray(res))
        return out
