"""Chunk blocks: how a job cuts a level into tasks, and how a task reads its block.

A block is a run of a level's own chunks in level order, never splitting the chunks of one
spatial cell (the attribute bins of a chunk-by-attribute store stay together), so every
vertex of a spatial chunk is read by exactly one task. A task reads its block strictly;
when that fails, chunk by chunk, so that a damaged chunk costs only itself and is named
(:class:`~.runner.ChunkFailure`) while the rest of the block is read.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..format.chunks import LoadedChunks
from ..format.errors import ZVCancelledError, chunk_key
from ..format.pyramid import load_rows
from .runner import ChunkFailure

#: Chunks per block by default: a task's memory is about this many decoded chunks.
BLOCK_CHUNKS = 8


def plan_blocks(store: Any, level: int, block_chunks: int = BLOCK_CHUNKS) -> list[np.ndarray]:
    """The level's own non-empty chunks cut into blocks of about ``block_chunks`` chunks
    (``(k, key_ndim)`` int64 each), in level order."""
    chunks = _own_chunks(store, level)
    if not len(chunks):
        return []
    ndim = store.ndim
    spatial = chunks[:, chunks.shape[1] - ndim :]
    # a new spatial cell starts where the spatial part changes (chunks are in level order:
    # the attribute bins of a cell are not interleaved with other cells when sorted)
    order = np.lexsort(spatial.T[::-1])
    chunks, spatial = chunks[order], spatial[order]
    starts = np.flatnonzero(np.r_[True, np.any(spatial[1:] != spatial[:-1], axis=1)])
    cuts = starts[:: max(int(block_chunks), 1)][1:]
    return np.split(chunks, cuts)


def _own_chunks(store: Any, level: int) -> np.ndarray:
    """The chunks of the level's own data (an additive level's own ones, not its chain's)."""
    own = getattr(store, "_own_chunks", None)
    chunks = own(level) if own is not None else store.chunks(level)
    return np.asarray(chunks, np.int64).reshape(-1, store.level(level).key_ndim)


class Block(NamedTuple):
    """What a task read of its block: the rows of the chunks that decoded and the chunks that
    did not."""

    loaded: LoadedChunks
    failures: list[ChunkFailure]


def read_block(store: Any, level: int, chunks: np.ndarray) -> Block:
    """The vertex rows of ``chunks`` (own data of ``level``); a chunk that cannot be decoded
    is left out and named in ``failures``."""
    chunks = np.asarray(chunks, np.int64)
    try:
        return Block(load_rows(store, level, chunks, strict=True), [])
    except ZVCancelledError:
        raise
    except Exception:  # noqa: BLE001 - find the chunks that fail, one by one
        pass
    good, failures = [], []
    for chunk in chunks:
        try:
            load_rows(store, level, chunk[None], strict=True)
        except ZVCancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - reported by key
            failures.append(ChunkFailure(level, chunk_key(chunk), _message(exc)))
        else:
            good.append(chunk)
    kept = np.asarray(good, np.int64).reshape(-1, chunks.shape[1])
    return Block(load_rows(store, level, kept, strict=True), failures)


def _message(exc: Exception) -> str:
    text = str(exc)
    return text if type(exc).__name__ in text else f"{type(exc).__name__}: {text}"


class References(NamedTuple):
    """The manifest entries of a level naming the loaded chunks of a block: the object row
    of each entry, its row count (0: an empty or out-of-range fragment) and the loaded rows
    of all of them, concatenated (a vertex shared by several objects appears once per
    object)."""

    object_rows: np.ndarray
    counts: np.ndarray
    rows: np.ndarray

    @property
    def unresolved(self) -> int:
        return int(np.count_nonzero(self.counts == 0))

    def row_ids(self, index: Any) -> np.ndarray:
        """The object id of every one of :attr:`rows`."""
        return np.repeat(index.ids[self.object_rows], self.counts)


def references(loaded: LoadedChunks, index: Any) -> References:
    """The references of ``index`` (the level's object index) into ``loaded``: only the
    entries naming its chunks are looked at (:meth:`ObjectIndex.entries_by_chunk`)."""
    empty = np.empty(0, np.int64)
    if index is None or not loaded.n_rows or not len(index.ids):
        return References(empty, empty, empty)
    entries, at = index.entries_by_chunk(loaded.table.chunks)
    ascending = np.argsort(entries)  # manifest order: object by object, each in its order
    entries, at = entries[ascending], at[ascending]
    rows, counts = loaded.fragment_rows(at, index.frags[entries])
    return References(
        index.rows_of_entries(entries), np.asarray(counts, np.int64), np.asarray(rows, np.int64)
    )
