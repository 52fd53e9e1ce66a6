"""The decoded-chunk cache: byte budget, LRU eviction, no I/O on a warm read."""

from __future__ import annotations

import numpy as np
from _stores import CountingStore
from zarr.storage import LocalStore

import napari_zarr_vectors as nzv
from data_paths import data_root

V07 = data_root() / "v07"


def test_warm_read_does_no_io_and_equals_cold_read() -> None:
    counting = CountingStore(LocalStore(V07 / "streamlines.zarrvectors", read_only=True))
    store = nzv.open_store(counting)
    cache = nzv.ChunkCache()
    cold = store.read(0, cache=cache)
    counting.keys.clear()
    warm = store.read(0, cache=cache)
    assert not [k for k in counting.keys if "/vertices/" in k or "/vertex_attributes/" in k]
    np.testing.assert_array_equal(cold.positions, warm.positions)
    assert [p.tolist() for p in cold.paths] == [p.tolist() for p in warm.paths]
    np.testing.assert_array_equal(
        cold.vertex_attributes["radius"], warm.vertex_attributes["radius"]
    )


def test_prefetch_fills_the_cache_for_a_later_read() -> None:
    store = nzv.open_store(V07 / "points.zarrvectors")
    cache = nzv.ChunkCache()
    chunks = store.chunks(0)[:5]
    assert store.prefetch(0, chunks, cache) == 5
    hits = cache.hits
    g = store.read(0, chunks=chunks, cache=cache)
    assert cache.hits == hits + 5
    assert g.vertex_count == sum(
        store.read(0, chunks=chunks[i : i + 1]).vertex_count for i in range(5)
    )


def test_byte_budget_evicts_least_recently_used() -> None:
    store = nzv.open_store(V07 / "points.zarrvectors")
    probe = nzv.ChunkCache()
    store.read(0, chunks=store.chunks(0)[:1], cache=probe)
    one = probe.nbytes
    cache = nzv.ChunkCache(max_bytes=3 * one + one // 2)
    chunks = store.chunks(0)
    store.read(0, chunks=chunks[:3], cache=cache)
    assert cache.nbytes <= cache.max_bytes
    store.read(0, chunks=chunks[3:6], cache=cache)
    assert cache.nbytes <= cache.max_bytes and len(cache) <= 6
    # the first chunks were evicted: reading them again misses
    misses = cache.misses
    store.read(0, chunks=chunks[:1], cache=cache)
    assert cache.misses == misses + 1
