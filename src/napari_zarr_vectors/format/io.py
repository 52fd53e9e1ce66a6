"""Byte access to a store through zarr's storage layer (local paths, URLs, any zarr Store).

Everything the format core reads goes through :class:`StoreIO`: whole-object gets, batched
concurrent gets on zarr's event loop, JSON documents and directory listings. It is
read-only: it opens stores with ``read_only=True`` and never writes.

URLs (see ``docs/remote.md``)
-----------------------------
``https://``, ``s3://``, ``gs://`` ... open a :class:`~zarr.storage.FsspecStore`
(``FsspecStore.from_url(url, storage_options=..., read_only=True)``). Chained fsspec URLs
(``simplecache::https://...``, ``filecache::s3://...``) add fsspec's on-disk cache; their
caching filesystem is synchronous, so it is wrapped in fsspec's ``AsyncFileSystemWrapper``
(zarr 3.1's ``from_url`` cannot drive it). Remote stores are wrapped in
:class:`~napari_zarr_vectors.format.remote.RetryingStore` (retries, timeouts).

Listing
-------
:attr:`StoreIO.listable` says whether the store can list its keys: local folders and object
stores (S3, GCS, ...) can, plain HTTP cannot. Readers of unlistable stores find chunks
without listing (0.9 ``nonempty_chunks``, 0.7 candidate keys probed over the chunk grid of
the bounds); for the few names that only a listing reveals (attribute names, 0.9 link
segments) :meth:`StoreIO.list_dir_known` consults Zarr consolidated metadata, then the HTTP
server's directory index when it has one, and otherwise answers ``None`` (unknown).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import io
import json
import os
import re
import stat
import threading
import warnings
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote

from zarr.abc.store import (
    ByteRequest,
    OffsetByteRequest,
    RangeByteRequest,
    Store,
    SuffixByteRequest,
)
from zarr.core.buffer import Buffer, BufferPrototype, default_buffer_prototype
from zarr.core.sync import sync
from zarr.storage import FsspecStore, LocalStore

from .errors import (
    NotAZVStoreError,
    ZVCancelledError,
    ZVError,
    ZVFetchError,
    ZVFormatError,
    ZVLeftoverWarning,
)
from .remote import RetryingStore, RetryPolicy, describe, read_budget, unwrap

#: Maximum number of concurrent get requests of one batch (remote and non-local stores;
#: local folders take the threaded fast path). With 20 ms per request, 32 in flight read a
#: 512-chunk level about 30 times faster than one at a time (benchmarks/bench_remote.py).
MAX_CONCURRENCY = 32

#: Seconds between two looks at the ``cancel`` event of a running batch.
CANCEL_POLL = 0.02

#: fsspec protocols without a listing (a directory index, when the server has one, is
#: used for names only).
UNLISTABLE_PROTOCOLS = frozenset({"http", "https"})

#: fsspec protocols of local data (no retries, no listing cache).
LOCAL_PROTOCOLS = frozenset({"file", "local", "memory"})

#: Most bytes one stored object (chunk file, shard, metadata document) may hold: a read of
#: more is refused before it is made (local files by their size, HTTP bodies by their
#: ``Content-Length`` or once they pass it).
MAX_OBJECT_BYTES = 1 << 30

#: Locks that serialise concurrent reads of one object through ``simplecache::``.
CACHE_LOCKS = 64

#: Local stores: threads that read the files of one large batch (each reads a contiguous slice),
#: for batches of at least ``LOCAL_PARALLEL_MIN`` keys.
LOCAL_READ_THREADS = 4
LOCAL_PARALLEL_MIN = 256

#: Fewest bytes :func:`map_parallel` hands to the read threads (below, one thread works).
PARALLEL_MIN_BYTES = 1 << 20

#: The hidden folder a write builds a store in before renaming it into place
#: (``.<name>.partial-<8 hex digits>``, see ``write.engine``): a leftover when a write died.
PARTIAL_NAME = re.compile(r"^\..+\.partial-[0-9a-f]{8}$")

T = TypeVar("T")

_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(LOCAL_READ_THREADS, thread_name_prefix="zv-read")
        return _POOL


_SIDE_POOL: ThreadPoolExecutor | None = None


def _side_pool() -> ThreadPoolExecutor:
    """The threads of :meth:`StoreIO.in_background` (not the read threads, which the work
    handed to them may use)."""
    global _SIDE_POOL
    with _POOL_LOCK:
        if _SIDE_POOL is None:
            _SIDE_POOL = ThreadPoolExecutor(2, thread_name_prefix="zv-side")
        return _SIDE_POOL


def map_parallel(
    fn: Callable[..., T], *iterables: Sequence[Any], nbytes: int | None = None
) -> list[T]:
    """``list(map(fn, *iterables))`` on the read threads (work that releases the GIL, e.g.
    decompression), the calling thread when there is one item or the items hold fewer than
    :data:`PARALLEL_MIN_BYTES` (``nbytes``, when the caller knows it: handing small work
    to the threads costs more than doing it); the first exception (in item order) is
    raised."""
    n = len(iterables[0])
    if n < 2 or (nbytes is not None and nbytes < PARALLEL_MIN_BYTES):
        return list(map(fn, *iterables))
    # a few contiguous slices, not one task per item: handing a task to the pool costs
    # ~50 us, more than decoding a small cell
    step = -(-n // min(n, 4 * LOCAL_READ_THREADS))

    def run(lo: int) -> list[T]:
        return list(map(fn, *(it[lo : lo + step] for it in iterables)))

    return [v for part in _pool().map(run, range(0, n, step)) for v in part]


def _read_files(root: str, keys: Sequence[str]) -> list[bytes | ZVFetchError | None]:
    out: list[bytes | ZVFetchError | None] = []
    for key in keys:
        try:
            out.append(read_local(root + key))
        except ZVFetchError as exc:
            out.append(exc)
    return out


def read_local(path: str, byte_range: ByteRequest | None = None) -> bytes | None:
    """The bytes of a local file, or of ``byte_range`` of it (``None`` when there is none).

    Only regular files are read, and only the bytes their size announces: a FIFO (which
    would block the read forever) or a device (``/dev/zero`` never ends) is refused without
    reading, as is a read of more than :data:`MAX_OBJECT_BYTES` or a file that grows while it
    is read. Those and a file that cannot be opened (a symlink loop, no permission) raise
    :class:`ZVFetchError` naming the file.
    """
    file = LocalFile.open(path)
    if file is None:
        return None
    with file:
        return file.read(*_span(byte_range, file.size))


class LocalFile:
    """A regular file of a local store, open for reading at offsets (a context manager that
    closes it): what :func:`read_local` reads, and what a layout reads a cell's payload from
    straight into memory it is handed (:meth:`read_into`)."""

    def __init__(self, path: str, fd: int, size: int) -> None:
        self.path = path
        self._fd = fd
        #: the file's size when it was opened
        self.size = size

    @classmethod
    def open(cls, path: str) -> LocalFile | None:
        """The file at ``path`` opened; ``None`` when there is none (or it is a directory).
        Raises :class:`ZVFetchError` for a file that cannot be opened or is not a regular
        file (a FIFO, device or socket: refused unread)."""
        try:
            flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
            fd = os.open(path, flags)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            if os.path.islink(path):
                raise ZVFetchError(f"{path} is a link to nothing ({os.readlink(path)})") from None
            return None
        except OSError as exc:
            raise ZVFetchError(f"cannot open {path}: {describe(exc)}") from None
        try:
            mode = os.fstat(fd)
        except OSError as exc:
            os.close(fd)
            raise ZVFetchError(f"cannot read {path}: {describe(exc)}") from None
        if stat.S_ISREG(mode.st_mode):
            return cls(path, fd, mode.st_size)
        os.close(fd)
        if stat.S_ISDIR(mode.st_mode):
            return None
        raise ZVFetchError(
            f"{path} is not a regular file (a FIFO, device or socket): refused unread"
        )

    def __enter__(self) -> LocalFile:
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self._fd)

    def read(self, start: int, stop: int) -> bytes:
        """Bytes ``[start, stop)`` of the file (fewer when it ends sooner). Raises
        :class:`ZVFetchError` for a read of more than :data:`MAX_OBJECT_BYTES`, a file that
        grew past its size while it was read, or a failed read."""
        if stop - start > MAX_OBJECT_BYTES:
            raise ZVFetchError(
                f"{self.path}: a read of {stop - start} bytes, more than the "
                f"{MAX_OBJECT_BYTES} one stored object may hold"
            )
        try:
            os.lseek(self._fd, start, os.SEEK_SET)
            parts, want = [], stop - start + 1  # one byte more: a file that grew is refused
            while want > 0:
                part = os.read(self._fd, min(want, 1 << 30))
                if not part:
                    break
                parts.append(part)
                want -= len(part)
        except OSError as exc:
            raise ZVFetchError(f"cannot read {self.path}: {describe(exc)}") from None
        data = b"".join(parts)
        if len(data) > stop - start and stop == self.size:
            raise ZVFetchError(
                f"{self.path} changed while it was read (it holds more than its size)"
            )
        return data[: stop - start]

    def read_into(self, start: int, out: memoryview) -> bool:
        """Fill ``out`` (writable bytes) with the file's bytes from ``start``, without a copy
        in between; whether the file held them all (``False``: it ended sooner or could not
        be read, and ``out`` holds what was read)."""
        try:
            os.lseek(self._fd, start, os.SEEK_SET)
            with io.FileIO(self._fd, "rb", closefd=False) as file:
                done = 0
                while done < len(out):
                    got = file.readinto(out[done:])
                    if not got:
                        return False
                    done += got
        except OSError:
            return False
        return True


def _span(byte_range: ByteRequest | None, size: int) -> tuple[int, int]:
    """``[start, stop)`` of a zarr byte request in a file of ``size`` bytes."""
    if byte_range is None:
        return 0, size
    if isinstance(byte_range, RangeByteRequest):
        return min(byte_range.start, size), min(max(byte_range.end, byte_range.start), size)
    if isinstance(byte_range, OffsetByteRequest):
        return min(byte_range.offset, size), size
    if isinstance(byte_range, SuffixByteRequest):
        return max(0, size - byte_range.suffix), size
    raise TypeError(f"unexpected byte range {byte_range!r}")


class SafeLocalStore(LocalStore):
    """zarr's read-only :class:`~zarr.storage.LocalStore` whose reads go through
    :func:`read_local` (regular files only, bounded), so that zarr's own reads of a store
    (sharded arrays, whole tables) meet FIFOs, devices and symlink loops as errors."""

    async def get(
        self,
        key: str,
        prototype: BufferPrototype | None = None,
        byte_range: ByteRequest | None = None,
    ) -> Buffer | None:
        prototype = prototype or default_buffer_prototype()
        data = await asyncio.to_thread(read_local, os.path.join(self.root, key), byte_range)
        return None if data is None else prototype.buffer.from_bytes(data)

    async def get_partial_values(
        self,
        prototype: BufferPrototype,
        key_ranges: Iterable[tuple[str, ByteRequest | None]],
    ) -> list[Buffer | None]:
        return list(await asyncio.gather(*(self.get(k, prototype, r) for k, r in key_ranges)))

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        # every entry but folders: a FIFO, device or broken link where a chunk file belongs
        # is listed, so that reading it reports it (zarr lists regular files only)
        head = self.root.as_posix() + "/"
        for p in (self.root / prefix.rstrip("/")).rglob("*"):
            if not p.is_dir():
                yield p.as_posix().replace(head, "", 1)


def open_url(url: str, storage_options: dict[str, Any] | None = None) -> FsspecStore:
    """A read-only :class:`~zarr.storage.FsspecStore` for an fsspec URL.

    ``storage_options`` go to fsspec as usual: ``{"anon": True}`` for public S3 buckets,
    ``{"key": ..., "secret": ..., "client_kwargs": {"endpoint_url": ...}}``, HTTP
    ``{"headers": {...}}``, or per-protocol options of a chained URL
    (``{"simplecache": {"cache_storage": "/tmp/zv"}, "s3": {"anon": True}}``).
    """
    opts = dict(storage_options or {})
    if "::" not in url:
        protocol = url.split("://", 1)[0]
        if protocol in ("s3", "s3a"):
            # botocore keeps 10 connections per client by default: allow a full batch
            # (on top of any config_kwargs from fsspec's configuration, which this replaces)
            from fsspec.config import conf

            config = dict((conf.get(protocol) or {}).get("config_kwargs") or {})
            config.update(opts.get("config_kwargs") or {})
            config.setdefault("max_pool_connections", MAX_CONCURRENCY)
            opts["config_kwargs"] = config
        store = FsspecStore.from_url(url, storage_options=opts, read_only=True)
        if protocol in UNLISTABLE_PROTOCOLS:
            _cap_bodies(store.fs)
        return store
    from fsspec.core import url_to_fs

    fs, path = url_to_fs(url, **opts)
    if not (fs.async_impl and getattr(fs, "asynchronous", False)):
        from fsspec.implementations.asyn_wrapper import AsyncFileSystemWrapper

        fs = AsyncFileSystemWrapper(fs, asynchronous=True)
        _make_cache_safe(fs)
    return FsspecStore(fs, read_only=True, path=path)


class BodyTooLargeError(Exception):
    """An HTTP response body longer than :data:`MAX_OBJECT_BYTES` (never retried)."""


def _cap_bodies(fs: Any) -> None:
    """Make an fsspec HTTP filesystem read response bodies up to :data:`MAX_OBJECT_BYTES`
    and refuse longer ones (by their ``Content-Length``, or once the body passes the cap):
    fsspec's own ``_cat_file`` reads whatever the server sends (an endless body: until memory
    runs out). Otherwise the request is made as fsspec makes it."""
    if not all(hasattr(fs, a) for a in ("kwargs", "set_session", "encode_url", "_process_limits")):
        return

    async def cat_file(
        url: str, start: int | None = None, end: int | None = None, **kwargs: Any
    ) -> bytes:
        kw = fs.kwargs.copy()
        kw.update(kwargs)
        if start is not None or end is not None:
            if start == end:
                return b""
            headers = kw.pop("headers", {}).copy()
            headers["Range"] = await fs._process_limits(url, start, end)
            kw["headers"] = headers
        session = await fs.set_session()
        async with session.get(fs.encode_url(url), **kw) as r:
            fs._raise_not_found_for_status(r, url)
            if (r.content_length or 0) > MAX_OBJECT_BYTES:
                raise BodyTooLargeError(
                    f"{url} announces {r.content_length} bytes, more than the "
                    f"{MAX_OBJECT_BYTES} one stored object may hold"
                )
            out = bytearray()
            async for part in r.content.iter_chunked(1 << 20):
                out += part
                if len(out) > MAX_OBJECT_BYTES:
                    raise BodyTooLargeError(
                        f"{url} sends more than the {MAX_OBJECT_BYTES} bytes one stored "
                        "object may hold"
                    )
        return bytes(out)

    fs._cat_file = cat_file


def _make_cache_safe(fs: Any) -> None:
    """Make a wrapped sync (caching) filesystem safe for zarr's reads.

    * zarr's sharding codec asks for negative (suffix) byte ranges, which fsspec's caching
      filesystems fail on (their local file objects have no ``size``): such a read fetches
      the (cached) object and slices it;
    * two concurrent first reads of one object (inner chunks of one shard) race on its
      cache file: reads of the same path are serialised (by one of ``CACHE_LOCKS`` locks
      picked by the path's hash, so different paths mostly stay concurrent);
      ``filecache``/``blockcache`` also race on their shared cache metadata, so all their
      reads are serialised (use ``simplecache::`` for concurrent cold reads).
    """
    plain = fs._cat_file
    locks = [
        asyncio.Lock() for _ in range(CACHE_LOCKS if "simplecache" in _fs_protocols(fs) else 1)
    ]

    async def cat_file(
        path: str, start: int | None = None, end: int | None = None, **kwargs: Any
    ) -> bytes:
        lock = locks[hash(path) % len(locks)]
        async with lock:
            if (start is not None and start < 0) or (end is not None and end < 0):
                whole: bytes = await plain(path, **kwargs)
                return whole[start:end]
            data: bytes = await plain(path, start=start, end=end, **kwargs)
            return data

    fs._cat_file = cat_file


def is_url(text: str) -> bool:
    """Whether ``text`` names a remote location (``scheme://`` other than ``file://``, or a
    chained fsspec URL such as ``simplecache::https://...``)."""
    return "::" in text or ("://" in text and not text.startswith("file://"))


def local_path(location: str) -> str | None:
    """The local path ``location`` names (a plain path, or a ``file://`` URL without its
    scheme); ``None`` for a remote URL."""
    if is_url(location):
        return None
    return location[len("file://") :] if location.startswith("file://") else location


def _make_store(
    location: str | os.PathLike[str] | Store, storage_options: dict[str, Any] | None
) -> Store:
    if isinstance(location, Store):
        return location
    text = os.fspath(location)
    if is_url(text):
        return open_url(text, storage_options)
    text = local_path(text) or text
    path = Path(text).expanduser()
    if not path.is_dir():
        raise NotAZVStoreError(f"{text} is not a Zarr Vectors store: no such directory")
    if PARTIAL_NAME.match(path.name):
        warnings.warn(
            f"{text} is the leftover of a write that did not finish: it may hold only part of "
            "a store (the next write into its folder removes it)",
            ZVLeftoverWarning,
            stacklevel=4,
        )
    return SafeLocalStore(path, read_only=True)


def _fs_protocols(fs: Any) -> set[str]:
    """Protocols of an fsspec filesystem and of every filesystem it wraps (caches, async
    wrappers), e.g. ``{"simplecache", "http", "https"}``."""
    out: set[str] = set()
    for _ in range(8):
        if fs is None:
            break
        proto = getattr(fs, "protocol", None)
        out |= {proto} if isinstance(proto, str) else set(proto or ())
        inner = getattr(fs, "sync_fs", None)
        if inner is None:  # caching filesystems delegate attribute access: look in __dict__
            try:
                inner = object.__getattribute__(fs, "__dict__").get("fs")
            except AttributeError:
                inner = None
        fs = inner
    return out


def _store_protocols(store: Store) -> set[str] | None:
    """Protocols behind a store (``None`` when it is neither fsspec nor obstore)."""
    inner = unwrap(store)
    if isinstance(inner, FsspecStore):
        return _fs_protocols(inner.fs)
    if type(inner).__name__ == "ObjectStore":  # zarr's obstore adapter
        kind = type(getattr(inner, "store", None)).__name__
        return {
            "HTTPStore": {"http"},
            "LocalStore": {"file"},
            "MemoryStore": {"memory"},
        }.get(kind, {kind})
    return None


class StoreIO:
    """Read-only access to the keys of one store.

    Parameters
    ----------
    location
        A local path, a URL understood by fsspec (``https://``, ``s3://``,
        ``simplecache::https://`` ...), or an already-open zarr :class:`~zarr.abc.store.Store`.
    storage_options
        Passed to fsspec for URLs (credentials, anonymous access, ...).
    retry
        Retry policy of remote stores (default :class:`RetryPolicy()`).

    Attributes
    ----------
    remote
        The store is reached over a network: its gets are retried and its listings cached.
    listable
        The store can list its keys (local folders, S3, ...; not plain HTTP).
    """

    def __init__(
        self,
        location: str | os.PathLike[str] | Store,
        storage_options: dict[str, Any] | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        base = _make_store(location, storage_options)
        if type(base) is LocalStore:  # reads of a given LocalStore are bounded too
            base = SafeLocalStore(base.root, read_only=True)
        self.name = str(location)
        protocols = _store_protocols(base)
        self.remote = protocols is not None and not protocols <= LOCAL_PROTOCOLS
        self.listable = bool(base.supports_listing) and not (
            protocols and protocols & UNLISTABLE_PROTOCOLS
        )
        self.store: Store = RetryingStore(base, retry, self.name) if self.remote else base
        self.concurrency = MAX_CONCURRENCY
        self._prototype = default_buffer_prototype()
        # zarr's LocalStore hands every get to a worker thread (~0.1 ms each); batches of
        # small chunk files are read directly instead, with the same key -> path mapping.
        self._local_root = (
            os.path.join(os.fspath(base.root), "") if type(base) is SafeLocalStore else None
        )
        self._lock = threading.Lock()
        self._listings: dict[tuple[str, bool, bool], list[str] | None] = {}
        self._root_doc: dict[str, Any] | None = None
        self._has_index: bool | None = None
        self._cancel = threading.local()
        #: What this store already warned about (see ``discovery.warn_unlisted``).
        self.warned: set[str] = set()

    # -- single gets ---------------------------------------------------------------------
    async def _aget(self, key: str) -> bytes | None:
        try:
            buf = await self.store.get(key, prototype=self._prototype)
        except ZVFetchError as exc:
            raise exc.located(store=self.name, key=key) from None
        return None if buf is None else buf.to_bytes()

    def get(self, key: str) -> bytes | None:
        """The bytes stored under ``key``, or ``None`` when the key does not exist.

        Raises :class:`ZVFetchError` when a remote key keeps failing."""
        if self._local_root is not None:  # (zarr's local get hands every read to a thread)
            try:
                return read_local(self._local_root + key)
            except ZVFetchError as exc:
                raise exc.located(store=self.name, key=key) from None
        return sync(self._aget(key))

    def get_json(self, key: str) -> dict[str, Any] | None:
        """Parse the JSON document at ``key`` (``None`` when absent)."""
        if key == "zarr.json" and self._root_doc is not None:
            return self._root_doc
        raw = self.get(key)
        doc = None if raw is None else self.parse_json(raw, key)
        if key == "zarr.json":
            self._root_doc = doc
        return doc

    def parse_json(self, raw: bytes, key: str) -> dict[str, Any]:
        """Parse JSON bytes read from ``key``, raising :class:`ZVFormatError` when invalid."""
        try:
            doc = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ZVFormatError(f"invalid JSON in {key}: {exc}", store=self.name) from None
        except RecursionError:
            raise ZVFormatError(f"{key} nests its JSON too deeply", store=self.name) from None
        if not isinstance(doc, dict):
            raise ZVFormatError(f"{key} is not a JSON object", store=self.name)
        return doc

    # -- batched gets -------------------------------------------------------------------
    def read_budget(self) -> contextlib.AbstractContextManager[None]:
        """Within this block the requests of the calling thread share one
        :class:`~napari_zarr_vectors.format.remote.ReadBudget` (remote stores: a whole read
        ends within its policy's ``read_timeout``, and ``total_timeout`` after the server
        last answered)."""
        store = self.store
        return read_budget(store.policy if isinstance(store, RetryingStore) else None)

    def in_background(self, fn: Callable[[], T]) -> Future[T]:
        """``fn()`` on a side thread, as if the calling thread ran it: with the calling
        thread's read budget (:meth:`read_budget`) and cancel event (:meth:`cancellable`),
        so that a read that also fetches something else (the next batch of chunks, a
        level's object index) overlaps the two and still ends by its deadline or when it
        is cancelled; ``result()`` raises what ``fn`` raised."""
        context = contextvars.copy_context()
        cancel = getattr(self._cancel, "event", None)

        def run() -> T:
            with self.cancellable(cancel):
                return context.run(fn)

        return _side_pool().submit(run)

    @contextlib.contextmanager
    def cancellable(self, cancel: threading.Event | None) -> Iterator[None]:
        """Within this block, batched gets of the calling thread stop early (raising
        :class:`ZVCancelledError`) once ``cancel`` is set: requests not started yet are
        never sent, requests in flight are abandoned."""
        previous = getattr(self._cancel, "event", None)
        self._cancel.event = cancel
        try:
            yield
        finally:
            self._cancel.event = previous

    async def _aget_many(
        self, keys: Sequence[str], cancel: threading.Event | None
    ) -> list[bytes | ZVFetchError | None]:
        sem = asyncio.Semaphore(self.concurrency)

        async def one(key: str) -> bytes | ZVFetchError | None:
            async with sem:
                if cancel is not None and cancel.is_set():
                    raise ZVCancelledError(f"read of {self.name} cancelled")
                try:
                    return await self._aget(key)
                except ZVFetchError as exc:
                    return exc

        batch = asyncio.gather(*(one(k) for k in keys))
        if cancel is None:
            return list(await batch)
        while True:
            done, _ = await asyncio.wait({batch}, timeout=CANCEL_POLL)
            if done:
                return list(batch.result())
            if cancel.is_set():
                batch.cancel()
                with contextlib.suppress(BaseException):
                    await batch
                raise ZVCancelledError(f"read of {self.name} cancelled")

    def local_path(self, key: str) -> str | None:
        """The file holding ``key`` in a local store whose files are read directly (what
        :meth:`fetch_many` reads); ``None`` for any other store."""
        return None if self._local_root is None else self._local_root + key

    def fetch_many(self, keys: Sequence[str]) -> list[bytes | ZVFetchError | None]:
        """Fetch many keys concurrently (at most :attr:`concurrency` at a time); the result
        is aligned with ``keys``: bytes, ``None`` for a missing key, or the
        :class:`ZVFetchError` of a remote key that kept failing (it is not raised)."""
        if not keys:
            return []
        cancel = getattr(self._cancel, "event", None)
        if cancel is not None and cancel.is_set():
            raise ZVCancelledError(f"read of {self.name} cancelled")
        if self._local_root is not None:
            return list(self._get_many_local(keys))
        return sync(self._aget_many(list(keys), cancel))

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        """Fetch many keys concurrently; the result is aligned with ``keys``. Raises the
        first :class:`ZVFetchError` when a remote key keeps failing."""
        out = self.fetch_many(keys)
        for value in out:
            if isinstance(value, ZVFetchError):
                raise value
        return out  # type: ignore[return-value]

    def _get_many_local(self, keys: Sequence[str]) -> list[bytes | ZVFetchError | None]:
        root = self._local_root
        assert root is not None
        if len(keys) < LOCAL_PARALLEL_MIN:
            out = _read_files(root, keys)
        else:
            step = -(-len(keys) // LOCAL_READ_THREADS)
            parts = [keys[i : i + step] for i in range(0, len(keys), step)]
            out = [b for part in _pool().map(_read_files, [root] * len(parts), parts) for b in part]
        return [
            v.located(store=self.name, key=k) if isinstance(v, ZVFetchError) else v
            for v, k in zip(out, keys, strict=True)
        ]

    # -- listing -------------------------------------------------------------------------
    async def _alist_dir(self, prefix: str) -> list[str]:
        return [name async for name in self.store.list_dir(prefix)]

    def _list(self, prefix: str) -> list[str]:
        """Raw listing of the store (no fallbacks); names are URL-unquoted for HTTP indexes."""
        try:
            if self._local_root is not None:  # what zarr's LocalStore lists, without its loop
                names = os.listdir(self._local_root + prefix)
            else:
                names = sync(self._alist_dir(prefix + "/" if prefix else ""))
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:  # a symlink loop, no permission ...
            raise ZVFormatError(
                f"cannot list {prefix or 'the store'}: {describe(exc)}", store=self.name
            ) from None
        names = [unquote(n) for n in names] if not self.listable else names
        return sorted({n.strip("/").split("/")[0] for n in names if n.strip("/")})

    def list_dir(self, prefix: str) -> list[str]:
        """Names directly below ``prefix`` (a folder path without trailing slash).

        For stores that cannot be listed this is :meth:`list_dir_known`, with ``[]`` for
        unknown."""
        names = self.list_dir_known(prefix)
        return [] if names is None else names

    def list_dir_known(
        self, prefix: str, index: bool = True, all_nodes: bool = False
    ) -> list[str] | None:
        """Names directly below ``prefix``, or ``None`` when the store cannot tell.

        Listable stores list. Other stores answer from the Zarr consolidated metadata of
        the root ``zarr.json`` when it covers ``prefix``, else (with ``index=True``) from
        the HTTP server's directory index when the server has one, else ``None``.
        ``all_nodes=True`` says that every folder of the store is a Zarr node with a
        ``zarr.json`` (0.9), so consolidated metadata without ``prefix`` means "nothing
        there". Remote answers are cached for the life of this object (stores are read as
        static).
        """
        prefix = prefix.strip("/")
        if self.listable and not self.remote:
            return self._list(prefix)
        with self._lock:
            if (prefix, index, all_nodes) in self._listings:
                return self._listings[(prefix, index, all_nodes)]
        if self.listable:
            names: list[str] | None = self._list(prefix)
        else:
            names = self._consolidated_children(prefix, all_nodes)
            if names is None and index:
                names = self._index_children(prefix)
        with self._lock:
            self._listings[(prefix, index, all_nodes)] = names
        return names

    def _consolidated_children(self, prefix: str, all_nodes: bool) -> list[str] | None:
        """Child names from Zarr v3 consolidated metadata, ``None`` when it does not cover
        ``prefix`` (no consolidated metadata, or no node there while folders may lack a
        ``zarr.json``: 0.7 parent folders often do, and zarr cannot consolidate below them)."""
        try:
            root = self.get_json("zarr.json")
        except ZVError:
            return None
        consolidated = (root or {}).get("consolidated_metadata")
        meta = consolidated.get("metadata") if isinstance(consolidated, dict) else None
        if not isinstance(meta, dict):
            return None
        if prefix and prefix not in meta:
            return [] if all_nodes else None
        head = prefix + "/" if prefix else ""
        return sorted(
            {k[len(head) :].split("/")[0] for k in meta if k.startswith(head) and k != head}
        )

    def _index_children(self, prefix: str) -> list[str] | None:
        """Child names from the HTTP server's directory index (``None`` without one)."""
        if self._has_index is None:
            try:
                self._has_index = "zarr.json" in self._list("")
            except (ZVError, OSError):
                self._has_index = False
        if not self._has_index:
            return None
        try:
            return self._list(prefix)
        except (ZVError, OSError):
            return None
