"""The decoded-chunk cache every opened store shares (one byte budget, one LRU order), and
each store's window on it.

Its size is the plugin setting ``cache_mb`` (:mod:`.settings`); changing the setting
resizes the live cache.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

import numpy as np

from napari_zarr_vectors.format.cache import ChunkCache, Unreadable
from napari_zarr_vectors.napari.lod.settings import get_settings, on_cache_resize

_CACHE_LOCK = threading.Lock()
_SHARED_CACHE: ChunkCache | None = None


def shared_cache() -> ChunkCache:
    """The process-wide decoded-chunk cache every store's loader shares (its byte budget is
    :func:`.settings.configure` ``cache_mb``; default 512 MiB)."""
    global _SHARED_CACHE
    with _CACHE_LOCK:
        if _SHARED_CACHE is None:
            cache = ChunkCache(get_settings().cache_bytes)
            _SHARED_CACHE = cache

            def resize(max_bytes: int) -> None:  # the next insertion evicts down
                cache.max_bytes = max_bytes

            on_cache_resize(resize)
        return _SHARED_CACHE


class StoreCacheView:
    """One opened store's window on the shared cache: keys are prefixed with a token of the
    :class:`Loader`, so two openings of the same path never share decoded chunks (a store
    rewritten in place between opens is read afresh), while all stores still share one byte
    budget and one LRU order. Duck-types the ``get``/``put`` the format core uses.

    It also remembers every chunk a read through it found undecodable (the core warns once,
    then caches an :class:`~napari_zarr_vectors.format.cache.Unreadable` marker and later
    reads leave the same gap silently): :meth:`unreadable_in` lets each reload count them."""

    _tokens = itertools.count()

    def __init__(self, shared: ChunkCache) -> None:
        self.shared = shared
        self.token = ("nzv-loader", next(self._tokens))
        #: (level, chunk) -> the stored file (or chunk key) of every undecodable chunk seen;
        #: kept when the shared cache evicts the marker (the chunk stays unreadable)
        self._unreadable: dict[tuple[int, tuple[int, ...]], str] = {}

    def get(self, key: Any) -> object | None:
        return self.shared.get((self.token, key))

    def put(self, key: Any, value: Any) -> None:
        if isinstance(value, Unreadable):  # the core's key: (store, level, chunk, attributes)
            chunk = tuple(int(c) for c in key[2])
            self._unreadable[(int(key[1]), chunk)] = value.file or ".".join(map(str, chunk))
        self.shared.put((self.token, key), value)

    def unreadable_in(self, level: int, chunks: np.ndarray) -> list[tuple[tuple[int, ...], str]]:
        """``(chunk, file)`` of each of ``chunks`` of ``level`` found undecodable so far."""
        if not self._unreadable:
            return []
        keys = (tuple(c) for c in np.asarray(chunks, dtype=np.int64).tolist())
        return [(c, self._unreadable[(level, c)]) for c in keys if (level, c) in self._unreadable]

    @property
    def max_bytes(self) -> int:
        return self.shared.max_bytes

    @property
    def nbytes(self) -> int:
        return self.shared.nbytes
