"""Reading the fixture stores over HTTP (a loopback server started by the fixtures).

* with a directory index (like ``python -m http.server``): every store, every level, reads
  exactly what the local read gives (geometry, attributes, object and group tables);
* without one (a plain static host): the same geometry, found without any listing
  (0.7 chunks by probing candidate keys of the bounds' chunk grid, 0.9 by
  ``nonempty_chunks``); attribute names are unknowable there and are reported;
* Zarr consolidated metadata restores the names without an index;
* ``simplecache::`` keeps fetched objects on disk;
* nothing is ever written or opened for writing.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
import zarr
from _compare import DATA, STORES, assert_same_geometry, assert_same_tables, quiet, store_levels
from _zv_http import ZVHTTPServer

import napari_zarr_vectors as nzv
from napari_zarr_vectors.format.discovery import candidate_segments, level_chunk_grid

LEVELS = [pytest.param(s, lv, id=f"{s}-L{lv}") for s, lv in store_levels()]
CHUNK_ARRAYS = ("vertices", "vertex_fragments", "link_fragments")


def _local(rel: str) -> nzv.Store:
    return quiet(nzv.open_store, DATA / rel)


def _compare_level(remote: nzv.Store, local: nzv.Store, level: int, attributes: bool) -> None:
    want = quiet(local.read, level, attributes=attributes)
    got = quiet(remote.read, level, attributes=attributes)
    if isinstance(want, Exception):
        assert type(got) is type(want), (got, want)
        return
    assert not isinstance(got, Exception), got
    assert_same_geometry(got, want, attributes=attributes)


@pytest.mark.parametrize(("rel", "level"), LEVELS)
def test_read_with_directory_index_equals_local(http_index, rel, level):
    remote = quiet(nzv.open_store, f"{http_index.url}/{rel}")
    assert not isinstance(remote, Exception), remote
    assert remote.remote and not remote.listable
    local = _local(rel)
    assert [lv.index for lv in remote.levels] == [lv.index for lv in local.levels]
    _compare_level(remote, local, level, attributes=True)
    want = quiet(assert_same_tables, local, local, level)
    if not isinstance(want, Exception):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert_same_tables(remote, local, level)


@pytest.mark.parametrize(("rel", "level"), LEVELS)
def test_read_without_listing_equals_local_geometry(http_plain, rel, level):
    remote = quiet(nzv.open_store, f"{http_plain.url}/{rel}")
    assert not isinstance(remote, Exception), remote
    local = _local(rel)
    _compare_level(remote, local, level, attributes=False)
    np.testing.assert_array_equal(quiet(remote.chunks, level), local.chunks(level))


def test_chunk_discovery_does_not_list(http_index):
    """Even when the server has an index, chunks are found without listing chunk folders."""
    http_index.reset_log()
    for rel in ("v07/points.zarrvectors", "v07/graph.zarrvectors", "v09/mesh.zarrvectors"):
        store = quiet(nzv.open_store, f"{http_index.url}/{rel}")
        for lv in store.levels:
            quiet(store.read, lv.index)
            quiet(store.chunks, lv.index)
    listed = [p for _, p, _ in http_index.requests if (DATA / p.split("/", 1)[1]).is_dir()]
    assert not [p for p in listed if p.rstrip("/").rsplit("/", 1)[-1] in CHUNK_ARRAYS], listed


@pytest.mark.parametrize("rel", [s for s in STORES if not s.startswith("v09/edge-cases")])
def test_bbox_reads_without_listing(http_plain, rel):
    remote = quiet(nzv.open_store, f"{http_plain.url}/{rel}")
    local = _local(rel)
    lo, hi = (np.asarray(b, dtype=float) for b in local.bounds)
    mid = (lo + hi) / 2
    for box in ((lo, mid), (mid, hi), (lo + (hi - lo) * 0.3, hi - (hi - lo) * 0.2)):
        for lv in local.levels:
            want = quiet(local.read, lv.index, bbox=box, attributes=False)
            got = quiet(remote.read, lv.index, bbox=box, attributes=False)
            assert not isinstance(got, Exception), got
            assert_same_geometry(got, want, attributes=False)


def test_unknown_attribute_names_are_reported(http_plain):
    store = nzv.open_store(f"{http_plain.url}/v07/points.zarrvectors")
    with pytest.warns(nzv.ZVListingWarning, match="vertex attribute names"):
        g = store.read(0)
    assert g.vertex_count == _local("v07/points.zarrvectors").levels[0].vertex_count
    assert g.vertex_attributes == {}


def test_consolidated_metadata_names_attributes(tmp_path):
    """Zarr consolidated metadata (``zarr.consolidate_metadata``) replaces the listing."""
    rel = "v09/graph.zarrvectors"
    copy = tmp_path / "graph.zarrvectors"
    shutil.copytree(DATA / rel, copy)
    zarr.consolidate_metadata(zarr.storage.LocalStore(copy))
    local = _local(rel)
    with ZVHTTPServer(tmp_path, index=False) as server:
        remote = nzv.open_store(f"{server.url}/graph.zarrvectors")
        with warnings.catch_warnings():
            warnings.simplefilter("error", nzv.ZVListingWarning)
            for lv in local.levels:
                assert_same_geometry(remote.read(lv.index), quiet(local.read, lv.index))
                assert_same_tables(remote, local, lv.index)


@pytest.mark.parametrize("proto", ["simplecache", "filecache"])
def test_on_disk_cache_keeps_objects(tmp_path, proto):
    rel = "v09/points.zarrvectors"  # sharded: suffix and range reads through the cache
    cache = tmp_path / "cache"
    opts = {proto: {"cache_storage": str(cache)}}
    local = _local(rel)
    with ZVHTTPServer(DATA, index=True) as server:
        url = f"{proto}::{server.url}/{rel}"
        first = nzv.open_store(url, storage_options=opts)
        assert first.remote and not first.listable
        assert_same_geometry(first.read(0), local.read(0))
        n_first = len(server.requests)
        assert any(cache.iterdir())
        server.reset_log()
        second = nzv.open_store(url, storage_options=opts)
        assert_same_geometry(second.read(0), local.read(0))
        # cached objects are not fetched again (missing keys are, they are never cached)
        assert len(server.requests) < n_first / 2


def test_reading_never_writes(http_index):
    http_index.reset_log()
    store = quiet(nzv.open_store, f"{http_index.url}/v07/graph.zarrvectors")
    for lv in store.levels:
        quiet(store.read, lv.index)
    assert {m for m, _, _ in http_index.requests} <= {"GET", "HEAD"}
    zstore = store.layout.io.store
    assert zstore.read_only
    with pytest.raises(ValueError, match="read-only"):
        zarr.open_group(store=zstore, mode="w")


def test_enumeration_bounds():
    """0.7 candidate keys cover floor(lo/cs)..floor(hi/cs) of the bounds at every level."""
    store = nzv.open_store(DATA / "v07/points.zarrvectors")
    for lv in store.levels:
        grid = level_chunk_grid(store.root, lv)
        present = {tuple(c) for c in store.chunks(lv.index).tolist()}
        assert present <= {tuple(c) for c in grid.tolist()}
    assert len(candidate_segments(2, 3)) == 125
    assert "0.0.0_0.0.0" in candidate_segments(3, 3)
    assert candidate_segments(1, 3) == ["self"]


def test_too_many_candidates_is_a_clear_error(http_plain, monkeypatch):
    import napari_zarr_vectors.format.discovery as discovery

    monkeypatch.setattr(discovery, "MAX_ENUMERATED_CHUNKS", 4)
    monkeypatch.setattr(level_chunk_grid, "__defaults__", (4,))
    store = nzv.open_store(f"{http_plain.url}/v07/points.zarrvectors")
    with pytest.raises(nzv.ZVFormatError, match="candidate chunks"):
        store.chunks(0)
    # a bbox read needs no enumeration of the level
    lo = np.asarray(store.bounds[0])
    assert quiet(store.read, 0, bbox=(lo, lo + 1.0)).positions.shape[1] == 3


def test_plain_paths_are_local(tmp_path):
    local = nzv.open_store(Path(DATA / "v07/points.zarrvectors"))
    assert not local.remote and local.listable
