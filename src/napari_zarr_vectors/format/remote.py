"""Remote stores: retries with backoff, per-request timeouts and failure classification.

Every request to a remote store (``https://``, ``s3://``, chained ``simplecache::`` URLs, any
fsspec or obstore store) goes through :class:`RetryingStore`, a read-only zarr
:class:`~zarr.storage.WrapperStore`, so zarr's own array reads (sharded 0.9 arrays, object
index manifests) are retried exactly like the reader's batched chunk gets.

Policy (the defaults, see :class:`RetryPolicy`):

* each attempt is bounded by :data:`REQUEST_TIMEOUT` seconds;
* transient failures (HTTP 5xx, 408, 425, 429; timeouts; refused, reset or dropped
  connections; truncated bodies; other I/O errors) are retried up to
  :data:`MAX_ATTEMPTS` attempts in all, after ``BACKOFF_INITIAL * 2**k`` seconds (capped at
  :data:`BACKOFF_MAX`, with jitter), and never past :data:`TOTAL_TIMEOUT` seconds per key;
* a missing key (HTTP 404, ``FileNotFoundError``) is not an error: zarr reports it as
  absent, and the reader treats an absent chunk as empty;
* permanent failures (403 and other 4xx, ``PermissionError``) are not retried;
* when a key still fails, :class:`~napari_zarr_vectors.format.errors.ZVFetchError` is
  raised; the reader turns it into a gap plus a warning naming store, level, array and chunk;
* a whole read (:func:`read_budget`: one ``Store.read`` / ``read_pieces`` / ``prefetch``
  call, or opening a store) ends within :data:`READ_TIMEOUT` seconds in all, and within
  :data:`TOTAL_TIMEOUT` seconds of the last answer of its server: once either has passed,
  every request of the read still waiting or running fails at once (a server that accepts
  connections and never answers cannot stretch a read batch after batch).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from zarr.abc.store import ByteRequest, Store
from zarr.core.buffer import Buffer, BufferPrototype
from zarr.storage import WrapperStore

from .errors import ZVFetchError

T = TypeVar("T")

#: Attempts per key, the first one included.
MAX_ATTEMPTS = 4
#: Seconds one attempt may take before it is abandoned (and retried).
REQUEST_TIMEOUT = 10.0
#: Seconds all attempts of one key may take together, backoff included.
TOTAL_TIMEOUT = 30.0
#: Seconds one whole read may take (see :func:`read_budget`).
READ_TIMEOUT = 300.0
#: Backoff before the first retry, doubled for every further retry.
BACKOFF_INITIAL = 0.1
#: Longest backoff between two attempts.
BACKOFF_MAX = 2.0

#: HTTP statuses worth retrying besides every 5xx.
RETRY_STATUSES = frozenset({408, 425, 429})

#: Exception class names (anywhere in the MRO) of transient transport failures raised by
#: aiohttp, botocore/aiobotocore, requests and urllib3, matched by name so that none of
#: those packages has to be importable.
_TRANSIENT_NAMES = frozenset(
    {
        "ClientPayloadError",  # aiohttp: truncated body / broken chunked encoding
        "ClientConnectionError",  # aiohttp: refused, reset, server disconnected
        "ServerTimeoutError",
        "ContentLengthError",
        "TransferEncodingError",
        "IncompleteReadError",  # botocore / asyncio
        "ResponseStreamingError",
        "EndpointConnectionError",
        "ConnectionClosedError",
        "ReadTimeoutError",
        "ConnectTimeoutError",
        "ProtocolError",  # urllib3
        "ChunkedEncodingError",  # requests
        "IncompleteRead",  # http.client
    }
)


def _status(exc: BaseException) -> int | None:
    """The HTTP status an exception carries (aiohttp ``status``, botocore ``response``)."""
    status = getattr(exc, "status", None)
    if isinstance(status, int):
        return status
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        code = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
        if isinstance(code, int):
            return code
    return None


def is_transient(exc: BaseException) -> bool:
    """Whether a failed request is worth retrying (see the module docstring)."""
    if isinstance(exc, (FileNotFoundError, IsADirectoryError, NotADirectoryError)):
        return False
    if isinstance(exc, PermissionError):
        return False
    status = _status(exc)
    if status is not None:
        return status >= 500 or status in RETRY_STATUSES
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError, ConnectionError)):
        return True
    if any(cls.__name__ in _TRANSIENT_NAMES for cls in type(exc).__mro__):
        return True
    # s3fs maps S3 errors without a closer match (InternalError, SlowDown ...) to OSError
    return isinstance(exc, OSError)


def describe(exc: BaseException) -> str:
    """A one-line description of a failure for error messages."""
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)) and not str(exc):
        return "timed out"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@dataclass(frozen=True)
class RetryPolicy:
    """How many times, how long and how patiently a remote key is fetched.

    Parameters
    ----------
    max_attempts
        Attempts per key, the first one included (``1`` = no retries).
    request_timeout
        Seconds one attempt may take.
    total_timeout
        Seconds all attempts of one key may take together.
    backoff_initial, backoff_max
        Backoff before retry ``k`` (0-based) is ``backoff_initial * 2**k``, at most
        ``backoff_max``, times a random factor in ``[0.5, 1]``.
    read_timeout
        Seconds one whole read may take, all its requests together (:func:`read_budget`);
        it also ends ``total_timeout`` seconds after its server last answered.
    """

    max_attempts: int = MAX_ATTEMPTS
    request_timeout: float = REQUEST_TIMEOUT
    total_timeout: float = TOTAL_TIMEOUT
    backoff_initial: float = BACKOFF_INITIAL
    backoff_max: float = BACKOFF_MAX
    read_timeout: float = READ_TIMEOUT

    def backoff(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (0-based)."""
        base = min(self.backoff_max, self.backoff_initial * (2.0**retry))
        return base * random.uniform(0.5, 1.0)

    async def run(self, attempt: Callable[[], Awaitable[T]], what: str, store: str) -> T:
        """Await ``attempt()`` until it succeeds, retrying transient failures.

        Raises
        ------
        ZVFetchError
            The last failure, once attempts or time are exhausted, or at once for a
            permanent failure. ``asyncio.CancelledError`` is never swallowed.
        """
        budget = _BUDGET.get()
        deadline = time.monotonic() + self.total_timeout
        tries = 0
        while True:
            tries += 1
            now = time.monotonic()
            remaining = deadline - now
            if budget is not None:
                if budget.left(now) <= 0:
                    raise ZVFetchError(f"could not fetch {what}: {budget.why(now)}", store=store)
                remaining = min(remaining, budget.left(now))
            try:
                result = await asyncio.wait_for(
                    attempt(), timeout=max(0.001, min(self.request_timeout, remaining))
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - classified below
                failure: BaseException = exc
            else:
                if budget is not None:
                    budget.answered()
                return result
            transient = is_transient(failure)
            pause = self.backoff(tries - 1)
            now = time.monotonic()
            end = deadline if budget is None else min(deadline, now + budget.left(now))
            if not transient or tries >= self.max_attempts or now + pause >= end:
                after = f" after {tries} attempts" if tries > 1 else ""
                raise ZVFetchError(
                    f"could not fetch {what}{after}: {describe(failure)}", store=store
                ) from failure
            await asyncio.sleep(pause)


class ReadBudget:
    """The time one read may still spend on requests: until ``read_timeout`` after it began,
    and until ``total_timeout`` after its server last answered one of its requests."""

    def __init__(self, policy: RetryPolicy) -> None:
        self.begin = self.last = time.monotonic()
        self.end = self.begin + policy.read_timeout
        self.stall = policy.total_timeout

    def left(self, now: float) -> float:
        """Seconds left at ``now`` (``<= 0``: the read gives up on its requests)."""
        return min(self.end, self.last + self.stall) - now

    def answered(self) -> None:
        """A request of the read was answered."""
        self.last = time.monotonic()

    def why(self, now: float) -> str:
        if now >= self.end:
            return f"the read ran for its {self.end - self.begin:g} s in all"
        return f"the server answered none of the read's requests for {self.stall:g} s"


#: The budget of the read running in this context (zarr's ``sync`` carries it to the event
#: loop's tasks: a ContextVar set in the calling thread travels with the coroutines).
_BUDGET: ContextVar[ReadBudget | None] = ContextVar("zv_read_budget", default=None)


@contextlib.contextmanager
def read_budget(policy: RetryPolicy | None) -> Iterator[None]:
    """Requests inside this block share one :class:`ReadBudget` of ``policy`` (none for
    ``None``, e.g. local stores); a block inside another keeps the outer budget."""
    if policy is None or _BUDGET.get() is not None:
        yield
        return
    token = _BUDGET.set(ReadBudget(policy))
    try:
        yield
    finally:
        _BUDGET.reset(token)


class RetryingStore(WrapperStore[Store]):
    """A read-only zarr store that retries the reads of the store it wraps.

    ``get`` / ``get_partial_values`` / ``exists`` / ``list_dir`` / ``list_prefix`` apply
    ``policy``; writes are refused by the wrapped store, which is always opened read-only.
    """

    def __init__(self, store: Store, policy: RetryPolicy | None = None, name: str = "") -> None:
        super().__init__(store)
        self.policy = policy or RetryPolicy()
        self.name = name or str(store)

    def _with_store(self, store: Store) -> RetryingStore:
        return type(self)(store, self.policy, self.name)

    async def get(
        self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None = None
    ) -> Buffer | None:
        return await self.policy.run(
            lambda: self._store.get(key, prototype, byte_range), repr(key), self.name
        )

    async def get_partial_values(
        self, prototype: BufferPrototype, key_ranges: Iterable[tuple[str, ByteRequest | None]]
    ) -> list[Buffer | None]:
        return list(await asyncio.gather(*(self.get(k, prototype, r) for k, r in key_ranges)))

    async def exists(self, key: str) -> bool:
        return await self.policy.run(lambda: self._store.exists(key), repr(key), self.name)

    async def _collect(self, listing: Callable[[], AsyncIterator[str]]) -> list[str]:
        async def once() -> list[str]:
            return [name async for name in listing()]

        return await self.policy.run(once, "a listing", self.name)

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        for name in await self._collect(lambda: self._store.list_dir(prefix)):
            yield name

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        for name in await self._collect(lambda: self._store.list_prefix(prefix)):
            yield name

    def __repr__(self) -> str:
        return f"RetryingStore({self._store!r})"


def unwrap(store: Any) -> Any:
    """The innermost store below any :class:`~zarr.storage.WrapperStore` layers."""
    seen = 0
    while isinstance(store, WrapperStore) and seen < 16:
        store = store._store
        seen += 1
    return store
