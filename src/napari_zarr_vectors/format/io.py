"""Byte access to a store through zarr's storage layer (local paths, URLs, any zarr Store).

Everything the format core reads goes through :class:`StoreIO`: whole-object gets, batched
concurrent gets on zarr's event loop, JSON documents and directory listings. It is
read-only: it opens stores with ``read_only=True`` and never writes.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from zarr.abc.store import Store
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync
from zarr.storage import FsspecStore, LocalStore

from .errors import NotAZVStoreError, ZVFormatError

#: Maximum number of concurrent get requests of one batch.
MAX_CONCURRENCY = 16

#: Local stores: threads that read the files of one large batch (each reads a contiguous slice),
#: for batches of at least ``LOCAL_PARALLEL_MIN`` keys.
LOCAL_READ_THREADS = 4
LOCAL_PARALLEL_MIN = 256

_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(LOCAL_READ_THREADS, thread_name_prefix="zv-read")
        return _POOL


def _read_files(root: str, keys: Sequence[str]) -> list[bytes | None]:
    out: list[bytes | None] = []
    for key in keys:
        try:
            with open(root + key, "rb") as fh:
                out.append(fh.read())
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            out.append(None)
    return out


def _make_store(location: str | os.PathLike[str] | Store, storage_options: dict | None) -> Store:
    if isinstance(location, Store):
        return location
    text = os.fspath(location)
    if "://" in text and not text.startswith("file://"):
        return FsspecStore.from_url(text, storage_options=storage_options or {}, read_only=True)
    if text.startswith("file://"):
        text = text[len("file://") :]
    path = Path(text).expanduser()
    if not path.is_dir():
        raise NotAZVStoreError(f"{text} is not a Zarr Vectors store: no such directory")
    return LocalStore(path, read_only=True)


class StoreIO:
    """Read-only access to the keys of one store.

    Parameters
    ----------
    location
        A local path, a URL understood by fsspec (``https://``, ``s3://`` ...), or an
        already-open zarr :class:`~zarr.abc.store.Store`.
    storage_options
        Passed to fsspec for URLs (credentials, anonymous access, ...).
    """

    def __init__(
        self, location: str | os.PathLike[str] | Store, storage_options: dict | None = None
    ) -> None:
        self.store = _make_store(location, storage_options)
        self.name = str(location) if not isinstance(location, Store) else str(location)
        self._prototype = default_buffer_prototype()
        # zarr's LocalStore hands every get to a worker thread (~0.1 ms each); batches of
        # small chunk files are read directly instead, with the same key -> path mapping.
        self._local_root = (
            os.path.join(os.fspath(self.store.root), "") if type(self.store) is LocalStore else None
        )

    # -- single gets ---------------------------------------------------------------------
    async def _aget(self, key: str) -> bytes | None:
        buf = await self.store.get(key, prototype=self._prototype)
        return None if buf is None else buf.to_bytes()

    def get(self, key: str) -> bytes | None:
        """The bytes stored under ``key``, or ``None`` when the key does not exist."""
        return sync(self._aget(key))

    def get_json(self, key: str) -> dict[str, Any] | None:
        """Parse the JSON document at ``key`` (``None`` when absent)."""
        raw = self.get(key)
        return None if raw is None else self.parse_json(raw, key)

    def parse_json(self, raw: bytes, key: str) -> dict[str, Any]:
        """Parse JSON bytes read from ``key``, raising :class:`ZVFormatError` when invalid."""
        try:
            doc = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ZVFormatError(f"invalid JSON in {key}: {exc}", store=self.name) from None
        if not isinstance(doc, dict):
            raise ZVFormatError(f"{key} is not a JSON object", store=self.name)
        return doc

    # -- batched gets -------------------------------------------------------------------
    async def _aget_many(self, keys: Sequence[str]) -> list[bytes | None]:
        sem = asyncio.Semaphore(MAX_CONCURRENCY)

        async def one(key: str) -> bytes | None:
            async with sem:
                return await self._aget(key)

        return list(await asyncio.gather(*(one(k) for k in keys)))

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        """Fetch many keys concurrently; the result is aligned with ``keys``."""
        if not keys:
            return []
        if self._local_root is not None:
            return self._get_many_local(keys)
        if len(keys) == 1:
            return [self.get(keys[0])]
        return sync(self._aget_many(list(keys)))

    def _get_many_local(self, keys: Sequence[str]) -> list[bytes | None]:
        root = self._local_root
        assert root is not None
        if len(keys) < LOCAL_PARALLEL_MIN:
            return _read_files(root, keys)
        step = -(-len(keys) // LOCAL_READ_THREADS)
        parts = [keys[i : i + step] for i in range(0, len(keys), step)]
        return [b for part in _pool().map(_read_files, [root] * len(parts), parts) for b in part]

    # -- listing -------------------------------------------------------------------------
    async def _alist_dir(self, prefix: str) -> list[str]:
        return [name async for name in self.store.list_dir(prefix)]

    def list_dir(self, prefix: str) -> list[str]:
        """Names directly below ``prefix`` (a folder path without trailing slash)."""
        prefix = prefix.strip("/")
        try:
            names = sync(self._alist_dir(prefix + "/" if prefix else ""))
        except (FileNotFoundError, NotADirectoryError):
            return []
        return sorted({n.strip("/").split("/")[0] for n in names if n.strip("/")})

    def exists_many(self, keys: Iterable[str]) -> list[bool]:
        """Whether each key exists (one concurrent round of ``exists`` calls)."""
        keys = list(keys)

        async def run() -> list[bool]:
            return list(await asyncio.gather(*(self.store.exists(k) for k in keys)))

        return sync(run()) if keys else []
