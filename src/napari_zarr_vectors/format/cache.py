"""A thread-safe, byte-bounded LRU cache of decoded chunks."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable

from .chunks import ChunkData

#: Marker stored for chunks that hold no data, so they are not probed again.
EMPTY = object()


class Unreadable:
    """Marker stored for a chunk whose bytes could not be decoded: the read that found it
    warned (:class:`~napari_zarr_vectors.format.errors.ZVChunkWarning`) and left a gap; later
    reads through the cache leave the same gap without decoding it again, and a cache
    wrapper can still count it. ``message`` is the warning's text (store, level, array,
    chunk and file); ``file`` the stored key of the bytes, when known."""

    __slots__ = ("file", "message")

    def __init__(self, message: str, file: str | None = None) -> None:
        self.message = message
        self.file = file


def chunk_nbytes(chunk: ChunkData) -> int:
    """Approximate memory held by a decoded chunk."""
    fi = chunk.fragments
    n = chunk.positions.nbytes + fi.start.nbytes + fi.count.nbytes + fi.explicit_rows.nbytes
    n += sum(v.nbytes for v in chunk.attributes.values())
    if chunk.faces is not None:
        n += chunk.faces.nbytes
    return n + 256


class ChunkCache:
    """Decoded chunks keyed by ``(store, level, chunk, with_attributes)``, evicted least
    recently used first once their total size exceeds ``max_bytes``.

    Share one cache between the reads of a viewer so that panning back is instant.
    """

    def __init__(self, max_bytes: int = 512 * 2**20) -> None:
        self.max_bytes = int(max_bytes)
        self._items: OrderedDict[Hashable, tuple[object, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @property
    def nbytes(self) -> int:
        """Bytes currently held."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: Hashable) -> object | None:
        """The cached value (``EMPTY`` for a known-empty chunk, an :class:`Unreadable` for an
        undecodable one) or ``None`` on a miss."""
        with self._lock:
            item = self._items.get(key)
            if item is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return item[0]

    def put(self, key: Hashable, value: ChunkData | object) -> None:
        """Store a decoded chunk (or a marker) and evict down to the byte budget."""
        size = chunk_nbytes(value) if isinstance(value, ChunkData) else 64
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._items[key] = (value, size)
            self._bytes += size
            while self._bytes > self.max_bytes and self._items:
                _, (_, evicted) = self._items.popitem(last=False)
                self._bytes -= evicted

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0
