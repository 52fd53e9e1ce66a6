"""Damaged and hostile remote stores: a 404 for a chunk the store says holds data
is reported, not read as empty; a server that never answers or sends endless bodies cannot
stretch a read past its deadline or its memory past what the metadata allows.
"""

from __future__ import annotations

import shutil
import time
import warnings

import numpy as np
import pytest
from _compare import DATA
from _zv_http import ZVHTTPServer

import napari_zarr_vectors as nzv
from napari_zarr_vectors.format import ZVChunkWarning, ZVFetchError, ZVFormatError
from napari_zarr_vectors.format import io as io_module
from napari_zarr_vectors.format.remote import RetryPolicy

POLICY = RetryPolicy(max_attempts=2, request_timeout=0.5, total_timeout=2.0, backoff_initial=0.01)


@pytest.mark.parametrize(
    ("rel", "missing"),
    [
        ("v09/points.zarrvectors", "0/vertices/c/0/1/0"),  # a shard nonempty_chunks lists
        ("v07/points.zarrvectors", "0/vertices/-1.-2.0/c/0"),  # a blob's bytes
    ],
)
def test_a_404_for_a_chunk_the_store_lists_is_reported(tmp_path, rel, missing):
    root = tmp_path / "served"
    shutil.copytree(DATA / rel, root / "store.zarrvectors")
    (root / "store.zarrvectors" / missing).unlink()
    with ZVHTTPServer(root) as server:
        url = f"{server.url}/store.zarrvectors"
        with pytest.warns(ZVChunkWarning, match="file is missing"):
            nzv.open_store(url, retry=POLICY).read(0)
        with pytest.raises(ZVFormatError, match=missing):
            nzv.open_store(url, retry=POLICY).read(0, strict=True)
        with warnings.catch_warnings():  # the other levels are whole
            warnings.simplefilter("error", ZVChunkWarning)
            nzv.open_store(url, retry=POLICY).read(1)


def _chunks(rel: str, level: int = 0) -> int:
    return len(nzv.open_store(DATA / rel).chunks(level))


#: the blobs of level 0's chunks (their zarr.json and c/0), not the level's metadata
CHUNK_BLOBS = r"/0/(vertices|vertex_fragments|vertex_attributes/[^/]+)/-?\d+\.-?\d+\.-?\d+/"


def _read(store: nzv.Store) -> tuple[list[str], float]:
    """Messages of a read's warnings (or of the error it raised), and its seconds."""
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            store.read(0)
        except nzv.ZVError as exc:
            return [str(exc)], time.perf_counter() - t0
    return [str(w.message) for w in caught], time.perf_counter() - t0


def test_a_server_that_stops_answering_ends_the_whole_read_within_its_deadline():
    """Every chunk blob request is accepted and never answered: without a budget for the
    whole read, each batch of 32 requests waited out ``total_timeout`` in turn."""
    rel = "v07/points.zarrvectors"
    assert _chunks(rel) * 5 > 4 * 32  # the level's blobs fill several batches
    policy = RetryPolicy(max_attempts=2, request_timeout=0.5, total_timeout=1.0)
    with ZVHTTPServer(DATA, index=True, hang=[CHUNK_BLOBS]) as server:
        store = nzv.open_store(f"{server.url}/{rel}", retry=policy)
        said, took = _read(store)
    assert took < 2.5, took  # ~ total_timeout after the last answer, not per batch
    assert any("answered none of the read's requests" in m for m in said), said[:3]


def test_a_slow_server_cannot_stretch_a_read_past_its_read_timeout():
    rel = "v07/points.zarrvectors"
    policy = RetryPolicy(max_attempts=1, request_timeout=5.0, total_timeout=5.0, read_timeout=1.0)
    with ZVHTTPServer(DATA, index=True, latency=0.25) as server:
        store = nzv.open_store(f"{server.url}/{rel}")
        store.layout.io.store.policy = policy  # opened at full speed, the read is timed
        said, took = _read(store)
    assert took < 2.0, took
    assert any("ran for its 1 s in all" in m for m in said), said[:3]


def test_an_endless_body_is_refused_at_the_size_cap(monkeypatch):
    monkeypatch.setattr(io_module, "MAX_OBJECT_BYTES", 1 << 20)
    rel = "v09/points.zarrvectors"
    with ZVHTTPServer(DATA, index=True, endless=["/0/vertices/c/0/1/0"]) as server:
        store = nzv.open_store(f"{server.url}/{rel}", retry=POLICY)
        with pytest.warns(ZVChunkWarning, match="more than the 1048576 bytes"):
            geom = store.read(0)
        with pytest.raises(ZVFetchError, match=f"{server.url}.*more than the 1048576 bytes"):
            store.read(0, strict=True)
        sent = server.endless_sent
    assert 0 < geom.vertex_count < nzv.open_store(DATA / rel).read(0).vertex_count
    # two reads took the cap and what the sockets buffered, never the endless rest
    assert sent < 2 * (1 << 20) + 2 * SOCKET_SLACK, sent


#: bytes an endless body may still pass into loopback socket buffers after the client stops
SOCKET_SLACK = 16 << 20


def test_a_read_of_hundreds_of_chunks_from_a_silent_server_ends_at_its_deadline(
    tmp_path, monkeypatch
):
    """Every chunk request of a level of 500 chunks is accepted and never answered: the whole
    read ends ``total_timeout`` after the server last answered (its metadata), not once per
    batch of 32 requests (16 batches x the deadline), with a typed error naming the store."""
    pytest.importorskip("zarr_vectors")
    from napari_zarr_vectors.write import WriteSpec, engine, write_store

    monkeypatch.setattr(engine, "VERTICES_PER_CHUNK", 10)  # ~ 500 chunks of 4,000 points
    root = tmp_path / "served"
    root.mkdir()
    positions = np.random.default_rng(0).uniform(0, 100, (4000, 3))
    spec = WriteSpec("point_cloud", positions, ("z", "y", "x"), (None, None, None))
    write_store(root / "many.zarrvectors", spec, pyramid=False)
    chunks = len(nzv.open_store(root / "many.zarrvectors").chunks(0))
    assert chunks >= 300
    # one request alone may wait 30 s: only the read's deadline can end it sooner
    policy = RetryPolicy(max_attempts=2, request_timeout=30.0, total_timeout=2.0)
    with ZVHTTPServer(root, index=True, hang=[r"/0/(vertices|vertex_fragments)/c/"]) as server:
        url = f"{server.url}/many.zarrvectors"
        store = nzv.open_store(url, retry=policy)
        said, took_whole = _read(store)
        t0 = time.perf_counter()
        with pytest.raises(ZVFetchError, match="could not fetch") as err:
            store.read(0, strict=True)
        took_strict = time.perf_counter() - t0
    batches = -(-chunks // 32)
    assert took_whole < 2 * policy.total_timeout < batches * policy.total_timeout, took_whole
    assert took_strict < 2 * policy.total_timeout, took_strict
    assert f"store {url}" in str(err.value)
    # every chunk is a named gap: the first batch timed out, the rest were never sent
    skipped = [m for m in said if m.startswith("skipping chunk") and f"store {url}" in m]
    assert len(skipped) == chunks, (len(skipped), said[:2])
    assert sum("answered none of the read's requests for 2 s" in m for m in said) > chunks - 64
