"""Remote reads against a fault-injecting loopback server: random 500s, long delays,
dropped connections and truncated bodies (deterministic seeds).

Retries make every read equal the local one while each key fails at most ``max_faults``
times; a chunk that keeps failing leaves a gap and a ``ZVChunkWarning`` naming store,
level, array and chunk, and is fetched again by the next read. Every read is bounded in
time (short request timeouts here) and can be cancelled.
"""

from __future__ import annotations

import asyncio
import threading
import time
import warnings

import numpy as np
import pytest
from _compare import DATA, assert_same_geometry, assert_same_tables, quiet
from _zv_http import FAULT_KINDS, ZVHTTPServer

import napari_zarr_vectors as nzv
from napari_zarr_vectors.format.remote import RetryPolicy, is_transient

#: Quick retries for the tests: a held response (0.6 s) is abandoned after 0.3 s.
POLICY = RetryPolicy(max_attempts=4, request_timeout=0.3, total_timeout=10.0, backoff_initial=0.01)
FAULT_DELAY = 0.6
FAULT_STORES = [
    "v07/points.zarrvectors",
    "v07/graph.zarrvectors",
    "v07/streamlines.zarrvectors",
    "v07/mesh.zarrvectors",
    "v09/points.zarrvectors",
    "v09/skeleton.zarrvectors",
    "v09/polylines.zarrvectors",
    "v09/edge-cases/shard_zstd.zarrvectors",
]


def _local(rel: str) -> nzv.Store:
    return quiet(nzv.open_store, DATA / rel)


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_each_fault_kind_is_retried(kind):
    """Every request fails once with ``kind``, then succeeds: reads equal the local read."""
    rel = "v09/edge-cases/shard_zstd.zarrvectors"  # sharded: byte-range reads too
    with ZVHTTPServer(
        DATA, index=True, fault_rate=1.0, fault_kinds=[kind], max_faults=1, fault_delay=FAULT_DELAY
    ) as server:
        remote = nzv.open_store(f"{server.url}/{rel}", retry=POLICY)
        local = _local(rel)
        with warnings.catch_warnings():
            warnings.simplefilter("error", nzv.ZVChunkWarning)
            for lv in local.levels:
                assert_same_geometry(remote.read(lv.index), quiet(local.read, lv.index))
        assert {k for _, k in server.faults} == {kind}


@pytest.mark.parametrize(("seed", "rel"), list(enumerate(FAULT_STORES)))
def test_random_faults_are_absorbed(rel, seed):
    """25 % of requests fail (any kind, at most twice per key): reads equal the local ones."""
    with ZVHTTPServer(
        DATA, index=True, fault_rate=0.25, max_faults=2, fault_delay=FAULT_DELAY, seed=seed
    ) as server:
        remote = nzv.open_store(f"{server.url}/{rel}", retry=POLICY)
        local = _local(rel)
        with warnings.catch_warnings():
            warnings.simplefilter("error", nzv.ZVChunkWarning)
            warnings.simplefilter("ignore", nzv.ZVListingWarning)
            for lv in local.levels:
                assert_same_geometry(remote.read(lv.index), quiet(local.read, lv.index))
                assert_same_tables(remote, local, lv.index)
        assert server.faults, "the server injected no fault"


def test_a_chunk_that_keeps_failing_leaves_a_named_gap():
    rel = "v07/points.zarrvectors"
    bad = f"/{rel}/0/vertices/0.0.0/c/0"
    local = _local(rel)
    cache = nzv.ChunkCache()
    with ZVHTTPServer(DATA, index=True, always_fail=[bad]) as server:
        remote = nzv.open_store(f"{server.url}/{rel}", retry=POLICY)
        with pytest.warns(nzv.ZVChunkWarning) as record:
            g = remote.read(0, cache=cache)
        messages = [str(w.message) for w in record if "could not fetch" in str(w.message)]
        assert len(messages) == 1, messages
        for part in (server.url, "level 0", "array vertices", "chunk 0.0.0", "500"):
            assert part in messages[0]
        full = local.read(0)
        lost = np.all(np.floor(full.positions / local.levels[0].chunk_shape) == 0, axis=1)
        assert g.vertex_count == full.vertex_count - int(lost.sum())
        assert sum(1 for _, p, _ in server.requests if p == bad) == POLICY.max_attempts
        with pytest.raises(nzv.ZVFetchError, match="chunk 0.0.0"):
            remote.read(0, strict=True)
        # the failure was not cached: once the server recovers, the gap closes
        server.always_fail = ()
        with warnings.catch_warnings():
            warnings.simplefilter("error", nzv.ZVChunkWarning)
            assert_same_geometry(remote.read(0, cache=cache), full)


def test_metadata_that_keeps_failing_raises_in_bounded_time():
    rel = "v09/points.zarrvectors"
    policy = RetryPolicy(
        max_attempts=3, request_timeout=0.3, total_timeout=1.0, backoff_initial=0.01
    )
    with ZVHTTPServer(DATA, always_fail=[f"/{rel}/zarr.json"]) as server:
        t0 = time.monotonic()
        with pytest.raises(nzv.ZVFetchError, match="zarr.json"):
            nzv.open_store(f"{server.url}/{rel}", retry=policy)
        assert time.monotonic() - t0 < 5


def test_a_server_that_never_answers_cannot_hang_a_read():
    rel = "v07/points.zarrvectors"
    policy = RetryPolicy(
        max_attempts=5, request_timeout=0.2, total_timeout=0.6, backoff_initial=0.01
    )
    with ZVHTTPServer(DATA) as ok:
        remote_ok = nzv.open_store(f"{ok.url}/{rel}")
        chunks = remote_ok.chunks(0)
    with ZVHTTPServer(
        DATA, fault_rate=1.0, fault_kinds=["delay"], fault_delay=30, max_faults=10**6
    ) as server:
        t0 = time.monotonic()
        with pytest.raises(nzv.ZVFetchError, match="timed out"):
            nzv.open_store(f"{server.url}/{rel}", retry=policy)
        assert time.monotonic() - t0 < 5
    # chunk reads on a store whose data stopped answering: gaps + warnings, bounded time
    with ZVHTTPServer(DATA) as server:
        remote = nzv.open_store(f"{server.url}/{rel}", retry=policy)
        remote.read(0, chunks=chunks[:1], attributes=False)  # metadata fetched and kept
        server.fault_rate, server.fault_kinds, server.fault_delay = 1.0, ("delay",), 30
        server.max_faults = 10**6
        t0 = time.monotonic()
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            g = remote.read(0, chunks=chunks, attributes=False)
        assert time.monotonic() - t0 < 10
        assert g.vertex_count == 0
        assert sum("could not fetch" in str(w.message) for w in record) == len(chunks)


def test_cancel_abandons_a_running_batch():
    rel = "v07/points.zarrvectors"
    with ZVHTTPServer(DATA, latency=0.3) as server:
        remote = nzv.open_store(f"{server.url}/{rel}")
        chunks = remote.chunks(0)
        cancel = threading.Event()
        outcome: list[object] = []

        def load() -> None:
            try:
                outcome.append(remote.prefetch(0, chunks, nzv.ChunkCache(), cancel=cancel))
            except Exception as exc:  # noqa: BLE001 - inspected below
                outcome.append(exc)

        server.reset_log()
        worker = threading.Thread(target=load)
        worker.start()
        started = time.monotonic() + 5
        while not server.requests and time.monotonic() < started:  # the batch is running
            time.sleep(0.01)
        assert server.requests
        t0 = time.monotonic()
        cancel.set()
        worker.join(timeout=5)
        assert not worker.is_alive()
        assert time.monotonic() - t0 < 1.0
        assert isinstance(outcome[0], nzv.ZVCancelledError)
        # an already-set event stops a read before it sends anything
        server.reset_log()
        with pytest.raises(nzv.ZVCancelledError):
            remote.read(0, chunks=chunks, cancel=cancel)


def test_transient_classification():
    aiohttp = pytest.importorskip("aiohttp")
    info = aiohttp.RequestInfo(
        url=__import__("yarl").URL("http://x/y"), method="GET", headers={}, real_url=None
    )

    def status(code: int) -> Exception:
        return aiohttp.ClientResponseError(info, (), status=code)

    assert is_transient(status(500)) and is_transient(status(503)) and is_transient(status(429))
    assert not is_transient(status(403)) and not is_transient(status(400))
    assert is_transient(aiohttp.ClientPayloadError("Response payload is not completed"))
    assert is_transient(aiohttp.ServerDisconnectedError())
    # asyncio's name for it, as aiohttp raises it (an alias of TimeoutError since 3.11)
    assert is_transient(asyncio.TimeoutError()) and is_transient(ConnectionResetError())  # noqa: UP041
    assert not is_transient(FileNotFoundError()) and not is_transient(PermissionError())
    assert not is_transient(ValueError("bug"))


def test_retry_policy_is_bounded():
    calls = []

    async def flaky() -> int:
        calls.append(time.monotonic())
        if len(calls) < 3:
            raise ConnectionResetError("reset")
        return 7

    policy = RetryPolicy(max_attempts=4, backoff_initial=0.01)
    from zarr.core.sync import sync

    assert sync(policy.run(flaky, "k", "s")) == 7 and len(calls) == 3
    calls.clear()

    async def broken() -> int:
        calls.append(1)
        raise ConnectionResetError("reset")

    with pytest.raises(nzv.ZVFetchError, match="after 4 attempts"):
        sync(policy.run(broken, "k", "s"))
    assert len(calls) == 4
    calls.clear()

    async def forbidden() -> int:
        calls.append(1)
        raise PermissionError("403")

    with pytest.raises(nzv.ZVFetchError):
        sync(policy.run(forbidden, "k", "s"))
    assert len(calls) == 1


def test_cancel_stops_reads_of_an_added_geometry(tmp_path):
    pytest.importorskip("zarr_vectors")
    from composite_stores import NODES, write_composite

    write_composite(tmp_path / "c.zarrvectors", np.array([[60.0, 60.0, 60.0]], np.float32))
    with ZVHTTPServer(tmp_path, index=True) as server:
        remote = nzv.open_store(f"{server.url}/c.zarrvectors")
        graph = remote.geometry("graph")
        chunks = graph.chunks(0)
        assert len(chunks) == 2  # the nodes lie in two of the 50-unit cells
        cancel = threading.Event()
        cancel.set()
        server.reset_log()
        with pytest.raises(nzv.ZVCancelledError):
            graph.read(0, cancel=cancel)
        with pytest.raises(nzv.ZVCancelledError):
            remote.read(0, geometry_type="graph", cancel=cancel)
        assert not [p for _, p, _ in server.requests if "vertices_graph/c/" in p]
        # without a cancel, the same read fetches the chunks and reads every node
        g = graph.read(0)
        assert sum("vertices_graph/c/" in p for _, p, _ in server.requests) == 2
        assert sorted(map(tuple, g.positions.tolist())) == sorted(map(tuple, NODES.tolist()))
