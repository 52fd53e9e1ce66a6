"""Whole reads that pack rows into arrays allocated once, fetch batches ahead on a side
thread and return paths as one lazy sequence give exactly the rows of a plain read,
whatever the level's ``vertex_count`` says, the batch size or the chunk holding damage."""

from __future__ import annotations

import json
import pickle
import platform
import re
import struct
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

import napari_zarr_vectors as nzv
from data_paths import data_root
from napari_zarr_vectors.format import loading
from napari_zarr_vectors.format.chunks import ChunkTable
from napari_zarr_vectors.format.decode import manifests
from napari_zarr_vectors.format.errors import ZVCancelledError, ZVChunkWarning, ZVFormatError
from napari_zarr_vectors.format.geometry import Paths, flat_paths, split_lengths
from napari_zarr_vectors.format.query import column_extremes

DATA = data_root()
STORES = ["v09/streamlines", "v09/points", "v07/streamlines", "v09/polylines"]


def _same(a, b) -> None:
    np.testing.assert_array_equal(a.positions, b.positions)
    for x, y in zip(flat_paths(a.paths), flat_paths(b.paths), strict=True):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a.path_object_ids, b.path_object_ids)
    assert sorted(a.vertex_attributes) == sorted(b.vertex_attributes)
    for k, v in a.vertex_attributes.items():
        np.testing.assert_array_equal(v, b.vertex_attributes[k])
    if a.vertex_object_ids is not None:
        np.testing.assert_array_equal(a.vertex_object_ids, b.vertex_object_ids)


def _set_vertex_count(store: Path, level: int, count: int) -> None:
    meta = store / str(level) / "zarr.json"
    doc = json.loads(meta.read_text())
    block = doc["attributes"].get("zarr_vectors_level") or doc["attributes"]
    block["vertex_count"] = count
    meta.write_text(json.dumps(doc))


@pytest.mark.parametrize("name", STORES)
@pytest.mark.parametrize("declared", ["one", "half", "ten times", "2**33"])
def test_a_wrong_vertex_count_reads_the_same_rows(name: str, declared: str, data_copy):
    """The declared count only sizes the first allocation: fewer (growth), more (trimmed)
    or more than a read allocates up front (grown from nothing) give the same rows."""
    clean = nzv.open_store(DATA / f"{name}.zarrvectors").read(0)
    path = data_copy(name)
    n = clean.vertex_count
    count = {"one": 1, "half": n // 2, "ten times": 10 * n, "2**33": 2**33}[declared]
    _set_vertex_count(path, 0, count)
    got = nzv.open_store(path).read(0)
    _same(got, clean)
    assert got.positions.base is None or got.positions.base.shape[0] == clean.vertex_count


@pytest.mark.parametrize("name", STORES)
@pytest.mark.parametrize("batch", [1, 2, 7])
@pytest.mark.parametrize("ahead", [True, False])
def test_batches_fetched_ahead_give_the_rows_of_one_batch(name, batch, ahead, monkeypatch):
    whole = nzv.open_store(DATA / f"{name}.zarrvectors").read(0)
    box = (whole.positions.min(axis=0).tolist(), np.median(whole.positions, axis=0).tolist())
    boxed = nzv.open_store(DATA / f"{name}.zarrvectors").read(0, bbox=box)
    monkeypatch.setattr(loading, "READ_BATCH", batch)
    monkeypatch.setattr(loading, "PIPELINE_MIN_ROWS", 0 if ahead else 2**40)
    _same(nzv.open_store(DATA / f"{name}.zarrvectors").read(0), whole)
    _same(nzv.open_store(DATA / f"{name}.zarrvectors").read(0, bbox=box), boxed)


@pytest.mark.parametrize("name", ["v09/streamlines", "v09/points"])
@pytest.mark.parametrize("ahead", [True, False])
def test_damage_in_a_later_batch_is_reported_with_its_chunk(name, ahead, monkeypatch, data_copy):
    """A chunk of the last batch that cannot be decoded raises with ``strict=True`` (from
    the side thread when fetched ahead, naming its chunk and file) and is a gap of its
    own rows otherwise. (Streamlines read their object index beside: no batch ahead.)"""
    monkeypatch.setattr(loading, "PIPELINE_MIN_ROWS", 0 if ahead else 2**40)
    path = data_copy(name)
    clean = nzv.open_store(path).read(0)
    files = sorted(p for p in (path / "0" / "vertices" / "c").rglob("*") if p.is_file())
    damaged = files[-1]  # the last cell: read in the last batch
    damaged.write_bytes(damaged.read_bytes()[:-5])
    monkeypatch.setattr(loading, "READ_BATCH", 2)
    with pytest.raises(ZVFormatError) as err:
        nzv.open_store(path).read(0, strict=True)
    assert err.value.key == damaged.relative_to(path).as_posix()
    chunk = [int(v) for v in err.value.chunk.split(".")]
    assert chunk in nzv.open_store(path).chunks(0).tolist()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = nzv.open_store(path).read(0)
    # every chunk whose cells the damaged file holds (one, or a shard's few) is a gap
    said = [
        str(w.message)
        for w in seen
        if issubclass(w.category, ZVChunkWarning) and str(w.message).startswith("skipping chunk")
    ]
    named = [
        [int(v) for v in m.group(1).split(".")]
        for m in (re.search(r"chunk (-?\d+(?:\.-?\d+)*)", t) for t in said)
        if m
    ]
    assert chunk in named and len(named) == len(said)
    assert all(f"file {damaged.relative_to(path).as_posix()})" in t for t in said)
    lost = nzv.open_store(DATA / f"{name}.zarrvectors").read(0, chunks=named)
    assert lost.vertex_count > 0
    assert got.vertex_count == clean.vertex_count - lost.vertex_count
    rows = {tuple(r) for r in clean.positions.tolist()} - {
        tuple(r) for r in lost.positions.tolist()
    }
    assert {tuple(r) for r in got.positions.tolist()} == rows


@pytest.mark.parametrize(("name", "ahead"), [("v09/streamlines", 0), ("v09/points", 1)])
def test_batches_are_fetched_ahead_unless_the_object_index_is_read_beside(name, ahead, monkeypatch):
    """2 cores: a local read whose object index is read on a side thread (paths) fetches
    its batches itself; a read that only checks object ids beside fetches one ahead."""
    monkeypatch.setattr(loading, "READ_BATCH", 1)
    monkeypatch.setattr(loading, "PIPELINE_MIN_ROWS", 0)
    fetched_on: list[str] = []
    fetch = loading._fetch

    def recording(*args, **kwargs):
        fetched_on.append(threading.current_thread().name)
        return fetch(*args, **kwargs)

    monkeypatch.setattr(loading, "_fetch", recording)
    store = nzv.open_store(DATA / f"{name}.zarrvectors")
    n = len(store.chunks(0))
    whole = store.read(0)
    assert len(fetched_on) == n > 2
    beside = [t for t in fetched_on if t != threading.current_thread().name]
    assert len(beside) == (n - 1) * ahead
    assert whole.vertex_count == nzv.open_store(DATA / f"{name}.zarrvectors").read(0).vertex_count


def test_a_large_read_gives_the_memory_of_its_fetched_bytes_back(monkeypatch):
    """Between fetching and assembling a read of at least RELEASE_MIN_ROWS rows, the C
    heap's free pages are given back (glibc ``malloc_trim``); smaller reads skip it."""
    from napari_zarr_vectors.format import memory
    from napari_zarr_vectors.format import store as store_module

    calls: list[int] = []
    monkeypatch.setattr(store_module, "release_freed_memory", lambda: calls.append(1))
    path = DATA / "v09/streamlines.zarrvectors"
    n = nzv.open_store(path).read(0).vertex_count
    assert calls == []  # fewer rows than RELEASE_MIN_ROWS
    monkeypatch.setattr(store_module, "RELEASE_MIN_ROWS", n)
    assert nzv.open_store(path).read(0).vertex_count == n
    assert calls == [1]
    if sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc":
        assert memory._malloc_trim() is not None  # (the real one: found and callable)
        memory.release_freed_memory()


def test_paths_are_a_sequence_of_views_of_one_array():
    g = nzv.open_store(DATA / "v09/streamlines.zarrvectors").read(0)
    paths = g.paths
    assert isinstance(paths, Paths) and len(paths) == len(g.path_object_ids) > 2
    items = list(paths)
    assert all(p.base is paths.flat or p.base is paths.flat.base for p in items)
    np.testing.assert_array_equal(paths[-1], items[-1])
    np.testing.assert_array_equal(paths[1], items[1])
    assert [p.tolist() for p in paths[1:3]] == [items[1].tolist(), items[2].tolist()]
    with pytest.raises(IndexError):
        paths[len(paths)]
    assert paths == items and paths != items[:-1] and Paths(np.empty(0), []) == []
    rows, lengths = flat_paths(paths)
    np.testing.assert_array_equal(rows, np.concatenate(items))
    np.testing.assert_array_equal(lengths, [len(p) for p in items])
    assert flat_paths(items)[0].tolist() == rows.tolist()
    again = pickle.loads(pickle.dumps(g))
    assert again.paths == items


def test_split_lengths_cuts_in_order():
    p = split_lengths(np.arange(6), np.array([2, 0, 4]))
    assert [x.tolist() for x in p] == [[0, 1], [], [2, 3, 4, 5]]


def _manifest(blocks: list[tuple[tuple[int, int, int], int]]) -> bytes:
    out = struct.pack("<I", len(blocks))
    for chunk, frag in blocks:
        out += struct.pack("<qqqBq", *chunk, 0, frag)
    return out


@pytest.mark.parametrize("per_slice", [1, 2, 1000])
def test_manifest_tables_are_int32_and_widen_when_a_value_does_not_fit(per_slice, monkeypatch):
    monkeypatch.setattr(manifests, "MANIFEST_SLICE", per_slice)
    small = [_manifest([((0, 1, 2), 3), ((1, 1, 2), 0)]), _manifest([((4, 0, 0), 7)])]
    blocks, chunks, frags = manifests.decode_mode0_manifests(small, 3)
    assert chunks.dtype == np.int32 and frags.dtype == np.int32
    assert blocks.tolist() == [2, 1]
    assert chunks.tolist() == [[0, 1, 2], [1, 1, 2], [4, 0, 0]] and frags.tolist() == [3, 0, 7]
    big = [*small, _manifest([((2**40, -(2**35), 1), 2**33)])]
    blocks, chunks, frags = manifests.decode_mode0_manifests(big, 3)
    assert chunks.dtype == np.int64 and frags.dtype == np.int64
    assert chunks[-1].tolist() == [2**40, -(2**35), 1] and frags.tolist() == [3, 0, 7, 2**33]
    assert chunks[:3].tolist() == [[0, 1, 2], [1, 1, 2], [4, 0, 0]]


@pytest.mark.parametrize("n", [1, 5, 63, 64, 65, 1000, 4099])
def test_column_extremes_are_numpys(n: int):
    rng = np.random.default_rng(n)
    p = (rng.random((n, 3)) * 100 - 50).astype(np.float32)
    lo, hi = column_extremes(p)
    np.testing.assert_array_equal(lo, p.min(axis=0))
    np.testing.assert_array_equal(hi, p.max(axis=0))
    lo, hi = column_extremes(p[::2] if n > 1 else p)  # not contiguous
    q = p[::2] if n > 1 else p
    np.testing.assert_array_equal(lo, q.min(axis=0))
    p[n // 2, 1] = np.nan
    lo, hi = column_extremes(p)
    assert np.isnan(lo[1]) and np.isnan(hi[1]) and lo[0] == p[:, 0].min()


@pytest.mark.parametrize("origin", [0, -5, 2**31 - 40, -(2**31) + 3])
def test_dense_lookup_of_int32_coordinates_near_the_int32_limits(origin: int):
    rng = np.random.default_rng(abs(origin) % 1000)
    axis = np.arange(origin, origin + 6)
    grid = np.stack(np.meshgrid(axis, axis, axis, indexing="ij"), -1).reshape(-1, 3)
    held = grid[rng.random(len(grid)) < 0.7]
    table = ChunkTable(held)
    assert table._dense is not None
    probe = np.concatenate([grid, grid + 7, grid - 7]).astype(np.int64)
    probe = probe[(probe >= -(2**31)).all(1) & (probe < 2**31).all(1)]
    expected = np.full(len(probe), -1)
    for i, row in enumerate(held):
        expected[(probe == row).all(1)] = i
    np.testing.assert_array_equal(table.index_of(probe), expected)
    np.testing.assert_array_equal(table.index_of(probe.astype(np.int32)), expected)


def test_a_cancelled_read_stops_the_batches_fetched_on_the_side_thread(monkeypatch):
    """The cancel event of a read reaches the batches fetched ahead on a side thread: once
    it is set, the next batch is not fetched and the read raises."""
    monkeypatch.setattr(loading, "READ_BATCH", 1)
    monkeypatch.setattr(loading, "PIPELINE_MIN_ROWS", 0)
    cancel = threading.Event()
    copied = []
    append = loading._append_batch

    def append_then_cancel(*args, **kwargs):
        copied.append(1)
        cancel.set()
        return append(*args, **kwargs)

    monkeypatch.setattr(loading, "_append_batch", append_then_cancel)
    store = nzv.open_store(DATA / "v09/streamlines.zarrvectors")
    assert len(store.chunks(0)) > 5
    with pytest.raises(ZVCancelledError):
        store.read(0, cancel=cancel)
    assert len(copied) <= 2  # the batch fetched before the event was set, at most
