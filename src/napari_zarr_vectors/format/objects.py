"""Decoded object index of a level: every manifest as flat, vectorisable entry tables."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

import numpy as np

from .chunks import ChunkTable
from .decode.fragments import expand_ranges
from .decode.manifests import decode_manifest, decode_mode0_manifests
from .distinct import distinct
from .errors import ZVChunkWarning, ZVFormatError
from .layout.base import ObjectTable


@dataclass(frozen=True)
class ObjectIndex:
    """All manifests of a level.

    Entry ``e`` is fragment ``frags[e]`` of chunk ``chunks[e]``; the entries of object row
    ``r`` (object id ``ids[r]``) are ``offsets[r]:offsets[r+1]``, in traversal order.

    ``whole_chunk``: the level's objects may name one fragment of a chunk whole (a mesh
    level, :data:`FragmentSharing`): a fragment several objects name then holds the vertices
    of all of them, which is whose not recorded (:attr:`shared_entries`). ``draco``: the
    level's vertex blobs are Draco-encoded (what is said of those fragments:
    :func:`shared_fragments_cause`).
    """

    ids: np.ndarray  # (O,) int64
    offsets: np.ndarray  # (O + 1,) int64
    chunks: np.ndarray  # (E, key_ndim) int32 or int64
    frags: np.ndarray  # (E,) int32 or int64
    whole_chunk: bool = False
    draco: bool = False

    @property
    def num_objects(self) -> int:
        return int(self.ids.size)

    @cached_property
    def entry_rows(self) -> np.ndarray:
        """Object row of every entry (int32 below 2**31 objects; read-only, built once)."""
        dtype = np.int32 if self.num_objects < 2**31 else np.int64
        rows = np.repeat(np.arange(self.num_objects, dtype=dtype), np.diff(self.offsets))
        rows.setflags(write=False)
        return rows

    @property
    def present(self) -> np.ndarray:
        """Whether each object row has at least one manifest entry."""
        return np.diff(self.offsets) > 0

    def rows_of_ids(self, object_ids: np.ndarray) -> np.ndarray:
        """Object rows of the given ids (ids not in the index are left out), ascending."""
        wanted = distinct(np.asarray(object_ids, dtype=np.int64))
        return np.flatnonzero(np.isin(self.ids, wanted))

    def part(self, start: int, stop: int) -> ObjectIndex:
        """The index of object rows ``start:stop`` alone (its row 0 is row ``start``)."""
        lo, hi = int(self.offsets[start]), int(self.offsets[stop])
        return ObjectIndex(
            self.ids[start:stop],
            self.offsets[start : stop + 1] - lo,
            self.chunks[lo:hi],
            self.frags[lo:hi],
            self.whole_chunk,
            self.draco,
        )

    def entries_of_rows(self, rows: np.ndarray) -> np.ndarray:
        """Entry indices of the given object rows, object by object, in manifest order."""
        rows = np.asarray(rows, dtype=np.int64)
        starts = self.offsets[rows]
        counts = self.offsets[rows + 1] - starts
        return expand_ranges(starts, counts)

    @cached_property
    def _by_chunk(self) -> tuple[Callable[[np.ndarray], np.ndarray], np.ndarray, np.ndarray]:
        """``(key of chunks, entries sorted by chunk key, the sorted keys)``, built once (one
        sort of small integer keys), so that the entries naming a few chunks cost their own
        number, not the level's."""
        chunks = np.asarray(self.chunks)
        if not len(chunks):
            none = np.empty(0, np.int64)
            return lambda c: np.full(len(c), -1, np.int64), none, none
        lo = chunks.min(axis=0).astype(np.int64)
        span = tuple(int(h) - int(low) + 1 for h, low in zip(chunks.max(axis=0), lo, strict=True))
        if math.prod(span) < 2**62:

            def linear(c: np.ndarray) -> np.ndarray:  # axis by axis: no (E, ndim) temporaries
                out = np.zeros(len(c), np.int64)
                for axis, n in enumerate(span):
                    out *= n
                    out += c[:, axis]
                    out -= lo[axis]
                return out

            def key(c: np.ndarray) -> np.ndarray:
                c = np.asarray(c, np.int64)
                inside = np.all((c >= lo) & (c < lo + np.array(span)), axis=1)
                return np.where(inside, linear(c), -1)

            keys = linear(chunks)
        else:  # (corrupt coordinates near the int64 limits: keys by the distinct chunks)
            held = ChunkTable(np.unique(chunks, axis=0))

            def key(c: np.ndarray) -> np.ndarray:
                return held.index_of(np.asarray(c, np.int64)).astype(np.int64)

            keys = key(chunks)
        top = int(keys.max())
        small = keys.astype(np.uint16 if top < 2**16 else np.uint32 if top < 2**32 else np.int64)
        order = np.argsort(small, kind="stable")  # (a radix sort for 16-bit keys)
        if len(order) < 2**31:  # held as long as the index: half the memory
            order = order.astype(np.int32)
        return key, order, small[order]

    def entries_by_chunk(self, chunks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(entries, at)``: the entries naming any of the distinct ``chunks`` (``(k,
        key_ndim)``), chunk by chunk, and the position in ``chunks`` of each one's chunk
        (one look-up per chunk, not per entry)."""
        key, order, sorted_keys = self._by_chunk
        k = key(np.asarray(chunks, np.int64).reshape(-1, self.chunks.shape[1]))
        named = np.flatnonzero(k >= 0)
        k = k[named].astype(sorted_keys.dtype)
        first = np.searchsorted(sorted_keys, k, side="left")
        n = np.searchsorted(sorted_keys, k, side="right") - first
        return order[expand_ranges(first, n)], np.repeat(named, n)

    @cached_property
    def shared_entries(self) -> np.ndarray:
        """Whether each entry names a fragment another object names too, in a
        :attr:`whole_chunk` level (all ``False`` otherwise): the rows of those fragments
        belong to one of those objects, the store does not say which."""
        shared = np.zeros(len(self.frags), bool)
        if not self.whole_chunk or len(self.frags) < 2:
            return shared
        frags = np.asarray(self.frags, np.int64)
        keys = np.unique(np.column_stack([self.chunks, frags]), axis=0, return_inverse=True)[1]
        keys = keys.ravel()
        # distinct (fragment, object) pairs, then the fragments in more than one of them
        pairs = np.unique(np.column_stack([keys, self.entry_rows]), axis=0)
        named, count = np.unique(pairs[:, 0], return_counts=True)
        shared[np.isin(keys, named[count > 1])] = True
        return shared

    def rows_of_entries(self, entries: np.ndarray) -> np.ndarray:
        """Object row of each of ``entries``: a gather from :attr:`entry_rows` when it is
        built or ``entries`` are many, else a binary search (not built for a few)."""
        if "entry_rows" in self.__dict__ or 64 * len(entries) > len(self.frags):
            rows: np.ndarray = self.entry_rows[entries]
            return rows
        return np.searchsorted(self.offsets, entries, side="right") - 1

    def manifest(self, object_id: int) -> list[tuple[tuple[int, ...], int]]:
        """``[(chunk, fragment), ...]`` of one object, in manifest order."""
        rows = self.rows_of_ids(np.array([object_id]))
        if rows.size == 0:
            raise KeyError(f"object {object_id} is not in the object index")
        r = int(rows[0])
        sl = slice(self.offsets[r], self.offsets[r + 1])
        return [
            (tuple(int(v) for v in c), int(f))
            for c, f in zip(self.chunks[sl], self.frags[sl], strict=True)
        ]


#: Which fragments the objects of a level may share: ``"any"`` (the store declares
#: ``shared_fragments``: the root's capability token, as the spec asks, or the level's key,
#: as the coarsener writes it), ``"whole-chunk"`` (a mesh level: zarr-vectors 0.7 meshes and
#: every Draco mesh keep one fragment per chunk, fragment 0, which every object in the chunk
#: names) or ``"none"``.
FragmentSharing = Literal["any", "whole-chunk", "none"]


def decode_object_index(
    table: ObjectTable,
    key_ndim: int,
    where: dict[str, Any],
    strict: bool,
    sharing: FragmentSharing = "any",
    draco: bool = False,
) -> ObjectIndex:
    """Decode every manifest of ``table``; a corrupt manifest warns and counts as empty
    (``strict=True`` raises instead). ``where`` locates errors (store, level); ``draco``:
    the level's vertex blobs are Draco-encoded (:attr:`ObjectIndex.draco`).

    Manifests of mode-0 blocks (what every type writer emits) are checked against
    ``sharing``: two objects naming one fragment the level may not share warns (the read
    goes on with the manifests as they are; ``strict=True`` raises). Range and explicit
    blocks come from zarr-vectors' low-level building calls, which share fragments without
    declaring it (``extra/explicit_demo``): their manifests are not checked."""
    ids = np.asarray(table.ids, dtype=np.int64)
    fast = decode_mode0_manifests(table.manifests, key_ndim)
    if fast is not None:
        blocks, chunks, frags = fast
        offsets = np.zeros(len(blocks) + 1, np.int64)
        np.cumsum(blocks, out=offsets[1:])
        index = ObjectIndex(ids, offsets, chunks, frags, sharing == "whole-chunk", draco)
        if sharing != "any":
            _check_unshared(index, sharing == "whole-chunk", where, strict)
        return index
    counts = np.zeros(len(table.manifests), dtype=np.int64)
    chunk_parts: list[np.ndarray] = []
    frag_parts: list[np.ndarray] = []
    for r, raw in enumerate(table.manifests):
        try:
            c, f = decode_manifest(raw, key_ndim)
        except ZVFormatError as exc:
            err = exc.located(array="object_index/manifests", **where)
            err = ZVFormatError(
                f"{err.reason} in the manifest of object {int(table.ids[r])}",
                store=err.store,
                level=err.level,
                array=err.array,
            )
            if strict:
                raise err from None
            warnings.warn(str(err), ZVChunkWarning, stacklevel=3)
            continue
        counts[r] = f.size
        chunk_parts.append(c)
        frag_parts.append(f)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    chunks = np.concatenate(chunk_parts) if chunk_parts else np.empty((0, key_ndim), np.int64)
    frags = np.concatenate(frag_parts) if frag_parts else np.empty(0, np.int64)
    return ObjectIndex(ids, offsets, chunks, frags, sharing == "whole-chunk", draco)


def shared_fragments_cause(index: ObjectIndex) -> str:
    """Why vertices of ``index``'s level have no known object (fragments several objects
    name whole: :attr:`ObjectIndex.shared_entries`), as every message about them says it:
    of the store's Draco-encoded chunks (zarr-vectors 0.9.2 writes each as one fragment
    every object in it names) or of its raw ones (e.g. a 0.7-layout mesh, one fragment
    per chunk)."""
    kind = "Draco-encoded" if index.draco else "raw (not Draco-encoded)"
    return f"its {kind} mesh chunks hold several objects' vertices in one fragment"


def unattributed_chunks(index: ObjectIndex) -> tuple[np.ndarray, list[np.ndarray]]:
    """The chunks of ``index`` holding vertices whose object is not recorded (a fragment
    several objects name whole: :attr:`ObjectIndex.shared_entries`), ``(k, key_ndim)``
    ascending, and for each the ids of the objects naming it, ascending."""
    shared = np.flatnonzero(index.shared_entries)
    if not shared.size:
        return np.empty((0, index.chunks.shape[1]), np.int64), []
    chunks = np.asarray(index.chunks[shared], np.int64)
    ids = index.ids[index.rows_of_entries(shared)]
    unknown, which = np.unique(chunks, axis=0, return_inverse=True)
    which = which.ravel()
    order = np.lexsort((ids, which))
    cut = np.flatnonzero(np.diff(which[order])) + 1
    return unknown, [distinct(part) for part in np.split(ids[order], cut)]


def _entry_keys(chunks: np.ndarray, frags: np.ndarray) -> tuple[np.ndarray, int] | None:
    """One integer per entry, equal for equal ``(chunk, fragment)`` (int32 when the key
    space fits it), and the number of keys per chunk (``fragment key % that`` is the
    fragment); ``None`` when the space overflows int64 (corrupt coordinates)."""
    columns = [chunks[:, axis] for axis in range(chunks.shape[1])]  # strided: no copies
    lo = [int(c.min()) for c in columns]
    span = [int(c.max()) - low + 1 for c, low in zip(columns, lo, strict=True)]
    per_chunk = int(frags.max()) + 1 if int(frags.min()) >= 0 else 0
    space = math.prod(span) * per_chunk
    if per_chunk == 0 or space >= 2**62:
        return None
    # int32 when no partial sum below can leave it (a sort of int32 takes half the time)
    reach = max(max(abs(low), abs(low + n)) for low, n in zip(lo, span, strict=True))
    small = space < 2**30 and reach < 2**30
    key = np.zeros(len(frags), np.int32) if small else np.zeros(len(frags), np.int64)
    for column, low, n in zip(columns, lo, span, strict=True):
        key *= n
        key += column
        key -= low
    key *= per_chunk
    key += frags
    return key, per_chunk


def _check_unshared(
    index: ObjectIndex, whole_chunk: bool, where: dict[str, Any], strict: bool
) -> None:
    """Warn (``strict``: raise) when two objects of ``index`` name the same fragment of a
    chunk; with ``whole_chunk``, a chunk whose entries all name fragment 0 (one fragment
    every object in the chunk shares) may. One sort of one integer per entry; the entries
    of the shared fragments only are looked at further."""
    frags = np.asarray(index.frags)
    if frags.size < 2 or (whole_chunk and not frags.any()):
        return
    keyed = _entry_keys(np.asarray(index.chunks), frags)
    if keyed is None:  # (coordinates near the int64 limits: by the rows themselves)
        rows = np.concatenate([index.chunks, frags[:, None]], axis=1).astype(np.int64)
        key = np.unique(rows, axis=0, return_inverse=True)[1].ravel()
        per_chunk = 0
    else:
        key, per_chunk = keyed
    ordered = np.sort(key)
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    if not repeated.size:
        return
    repeated = distinct(repeated)
    if whole_chunk and per_chunk:  # fragment 0 of a chunk naming no other fragment
        first = repeated - repeated % per_chunk
        last = ordered[np.searchsorted(ordered, first + per_chunk) - 1]
        repeated = repeated[(repeated != first) | (last != first)]
    entries = np.flatnonzero(np.isin(key, repeated))
    rows = index.rows_of_entries(entries)
    by_key = np.lexsort((rows, key[entries]))
    entries, rows = entries[by_key], rows[by_key]
    same_key = key[entries][1:] == key[entries][:-1]
    other = np.flatnonzero(same_key & (rows[1:] != rows[:-1]))
    if not other.size:  # repeats within one manifest only
        return
    shared = distinct(key[entries][1:][other]).size
    e = int(entries[other[0]])
    a, b = int(index.ids[rows[other[0]]]), int(index.ids[rows[other[0] + 1]])
    chunk = index.chunks[e]
    err = ZVFormatError(
        f"objects {a} and {b} both name fragment {int(frags[e])} of chunk "
        f"{'.'.join(str(int(c)) for c in chunk)} ({shared} fragment"
        f"{'s' if shared != 1 else ''} named by several objects), but the store does not "
        "declare shared_fragments: a manifest is likely damaged",
        array="object_index/manifests",
        chunk=chunk,
        **where,
    )
    if strict:
        raise err
    warnings.warn(str(err), ZVChunkWarning, stacklevel=3)
