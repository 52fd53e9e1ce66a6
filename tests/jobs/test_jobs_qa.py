"""The whole-store QA job: equal to a serial run, equal to what reads of the store give, and
damage named by chunk."""

from __future__ import annotations

import shutil
import threading
import warnings

import numpy as np
import pytest

import napari_zarr_vectors as nzv
from napari_zarr_vectors.format import pyramid
from napari_zarr_vectors.format.chunks import ChunkTable
from napari_zarr_vectors.format.errors import ZVCancelledError
from napari_zarr_vectors.format.layout import LinkSet
from napari_zarr_vectors.jobs import qa as qa_module
from napari_zarr_vectors.jobs import qa_report
from napari_zarr_vectors.jobs.blocks import plan_blocks, read_block, references
from napari_zarr_vectors.jobs.qa import (
    BlockFragments,
    Grid,
    LevelPartial,
    RowCounts,
    _fragment_ownership,
    _ownership,
    coverage,
)

FIXTURES = [
    "v07/streamlines",
    "v07/skeleton",
    "v09/graph",
    "v09/mesh",
    "v09/points",
    "dense/polylines",
    "next/streamlines_additive",
    "next/trk_crs",
]


def _without_scheduler(result):
    out = result.to_json()
    out.pop("scheduler")
    return out


def _same(a, b):
    assert _without_scheduler(a) == _without_scheduler(b)
    assert a.images.keys() == b.images.keys()
    for lv in a.images:
        np.testing.assert_array_equal(a.images[lv], b.images[lv])


def _read_truth(store, level):
    """Positions of a level's own data, read the ordinary way."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return store.read(level, attributes=False, own_level_only=True).positions


def _two_rows_a_part(store, level):
    n = len(store.object_ids(level))
    return [(a, min(a + 2, n)) for a in range(0, n, 2)]


@pytest.mark.parametrize("name", FIXTURES)
def test_threads_in_small_blocks_equal_the_serial_run(data_dir, name, monkeypatch):
    """Threads, in blocks of one and three chunks and with the object indexes decoded two
    rows a task, give the serial run's report."""
    store = nzv.open_store(data_dir / f"{name}.zarrvectors")
    serial = qa_report(store, scheduler="sync", block_chunks=100_000)
    monkeypatch.setattr(qa_module, "_index_parts", _two_rows_a_part)
    _same(qa_report(store, block_chunks=1), serial)
    _same(qa_report(store, block_chunks=3, num_workers=2), serial)


@pytest.mark.parametrize("name", FIXTURES)
def test_counts_extremes_and_images_equal_a_read_of_each_level(data_dir, name):
    store = nzv.open_store(data_dir / f"{name}.zarrvectors")
    result = qa_report(store)
    grid = Grid.of(store)
    assert result.failures == []
    for info in result.levels:
        lv = info["level"]
        positions = _read_truth(store, lv).astype(np.float64)
        assert info["vertices_read"] == len(positions) == store.level(lv).vertex_count
        np.testing.assert_array_equal(info["data_lo"], positions.min(axis=0))
        np.testing.assert_array_equal(info["data_hi"], positions.max(axis=0))
        own = np.bincount(grid.pixels_of(positions), minlength=int(np.prod(grid.shape)))
        chain = store.refinement_chain(lv)
        if len(chain) == 1:
            np.testing.assert_array_equal(result.images[lv].ravel(), own)
        assert result.images[lv].sum() == sum(store.level(c).vertex_count for c in chain)
    assert result.verdict in ("pass", "warn")
    assert not [c for c in result.checks if c.status == "fail"]


def test_objects_kept_and_dropped_equal_the_pyramid_functions(data_dir):
    store = nzv.open_store(data_dir / "v09/mesh.zarrvectors")
    result = qa_report(store)
    levels = [lv.index for lv in store.levels]
    pairs = list(zip(levels[:-1], levels[1:], strict=True))
    for t, (fine, coarse) in zip(result.transitions, pairs, strict=True):
        dropped = pyramid.dropped_objects(store, fine, coarse)
        assert (t["fine"], t["coarse"]) == (fine, coarse)
        assert t["dropped"] == len(dropped)
        assert t["dropped_examples"] == dropped.tolist()
    assert [t["dropped"] for t in result.transitions] == [0, 1]
    for info in result.levels:
        present = pyramid.present_objects(store, info["level"])
        assert info["objects_with_vertices"] == len(present) == info["objects_kept"]
    # level 2 keeps half the objects (sparsity 0.5): the coverage it loses is said
    cover = {c.level: c for c in result.checks if c.name == "coverage of level 0"}
    assert cover[1].status == "pass" and cover[2].status == "warn"
    assert cover[2].detail.startswith("80.0% of the cells")


def test_tracks300_serial_threads_and_a_two_worker_cluster_agree(tracks300_store):
    pytest.importorskip("distributed")
    path, truth = tracks300_store
    store = nzv.open_store(path)
    serial = qa_report(store, scheduler="sync")
    cluster = qa_report(store, scheduler={"n_workers": 2, "processes": False}, block_chunks=2)
    _same(cluster, serial)
    assert serial.verdict == "pass"
    base = serial.levels[0]
    assert base["vertices_read"] == truth.vertex_count == 14_576
    assert base["objects_with_vertices"] == 300
    assert base["links"] == {"+1": {"records": 14_576, "unresolved": 0}}
    lengths = serial.histograms["length_mm"]
    assert sum(lengths["counts"][0]) == sum(lengths["counts"][1]) == 300
    edges = np.asarray(lengths["edges"])
    np.testing.assert_array_equal(
        lengths["counts"][0], np.histogram(truth.object_attributes["length_mm"], edges)[0]
    )


def test_a_damaged_chunk_is_reported_by_key_and_the_rest_is_read(damaged):
    path, key, rows = damaged
    store = nzv.open_store(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = qa_report(store, block_chunks=4)
    assert [(f.level, f.chunk) for f in result.failures] == [(0, key)]
    assert "vlen-bytes chunk of 3 bytes" in result.failures[0].error
    base = result.levels[0]
    assert base["failed_chunks"] == [key]
    assert base["vertices_read"] == store.level(0).vertex_count - rows
    failed = {(c.name, c.level): c for c in result.checks if c.status == "fail"}
    assert key in failed[("every chunk reads", 0)].detail
    assert (
        f"{base['vertices_read']:,} vertices read"
        in failed[("vertex count matches the metadata", 0)].detail
    )
    assert result.verdict == "fail"
    assert result.to_json()["failures"][0]["chunk"] == key


def test_non_finite_vertices_are_named_by_chunk(data_copy):
    path = data_copy("v09/streamlines")
    store = nzv.open_store(path)
    chunk = store.chunks(0)[0]
    grid = store.layout.grids.open(0, "vertices")
    f = path / grid.keys((chunk - grid.origin)[None])[0]
    raw = bytearray(f.read_bytes())
    # one vlen item, uncompressed float32 rows: the last coordinate of the last vertex
    raw[-4:] = np.float32(np.nan).tobytes()
    f.write_bytes(bytes(raw))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = qa_report(nzv.open_store(path))
    assert result.failures == []
    bad = next(
        c for c in result.checks if c.name.startswith("vertices lie inside") and c.level == 0
    )
    assert bad.status == "fail" and "1 not finite" in bad.detail
    assert ".".join(map(str, chunk.tolist())) in bad.detail


def test_cancel_stops_the_report(data_dir):
    store = nzv.open_store(data_dir / "v09/points.zarrvectors")
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(ZVCancelledError):
        qa_report(store, cancel=cancel)


def test_coverage_counts_neighbouring_cells_and_nothing_else():
    fine = np.zeros((8, 8), np.int64)
    fine[1, 1] = fine[6, 6] = 3
    coarse = np.zeros_like(fine)
    coarse[2, 2] = 1  # next to (1, 1) at cells of 1 pixel, far from (6, 6)
    pixel = np.array([1.0, 1.0])
    assert coverage(fine, coarse, pixel, 1.0) == 0.5
    assert coverage(fine, fine, pixel, 1.0) == 1.0
    assert coverage(fine, np.zeros_like(fine), pixel, 1.0) == 0.0


@pytest.mark.parametrize("by_rows", [False, True])
@pytest.mark.parametrize("name", FIXTURES)
def test_ownership_from_fragments_equals_the_rows_the_manifests_name(data_dir, name, by_rows):
    """The ownership the level's index task finds from the fragments a block sent equals
    the one from the rows the manifests name (and the way by rows, of fragments that are
    not disjoint ranges, too)."""
    store = nzv.open_store(data_dir / f"{name}.zarrvectors")
    grid = Grid.of(store)
    for lv in (lv.index for lv in store.levels):
        index = store.object_index(lv)
        if index is None:
            continue
        for chunks in plan_blocks(store, lv, 2):
            loaded = read_block(store, lv, chunks).loaded
            part = LevelPartial(lv, store.ndim, grid.shape)
            if by_rows:
                _ownership(part, loaded, index)
            else:  # the index in three parts, as the level's tasks decode it
                fragments = BlockFragments.of(loaded)
                assert fragments is not None  # (the fixtures' fragments are disjoint ranges)
                cuts = np.linspace(0, index.num_objects, 4).astype(int)
                for a, b in zip(cuts[:-1], cuts[1:], strict=True):
                    _fragment_ownership(part, fragments, index.part(a, b), a)
                part.unowned_vertices = fragments.unnamed_rows(part.named_fragments)
                part.seen_rows = [np.concatenate(part.seen_rows)]
            refs = references(loaded, index)
            covered = np.zeros(loaded.n_rows, bool)
            covered[refs.rows] = True
            assert part.unowned_vertices == np.count_nonzero(~covered)
            assert part.empty_references == refs.unresolved
            seen = np.unique(refs.object_rows[refs.counts > 0])
            np.testing.assert_array_equal(np.concatenate(part.seen_rows or [seen[:0]]), seen)


def test_a_far_vertex_lands_on_the_image_edge():
    grid = Grid((0, 1), np.array([0.0, 0.0]), np.array([10.0, 5.0]), (5, 10))
    positions = np.array([[0.5, 0.5], [9.5, 4.5], [1e30, -1e30], [-3.0, 2.5]], np.float32)
    assert grid.pixels_of(positions).tolist() == [0, 49, 9, 20]


def test_link_endpoints_resolve_cell_by_cell_as_record_by_record():
    table = ChunkTable(np.array([[0, 0, 0], [0, 0, 1], [1, 0, 0]]))
    counts = np.array([3, 1, 2])
    rng = np.random.default_rng(7)
    # cells of records sharing their chunks, a chunk not read, rows out of range
    keys = np.array(
        [[[0, 0, 0], [1, 0, 0]], [[5, 5, 5], [0, 0, 1]], [[0, 0, 1], [0, 0, 0]], [[1, 0, 0]] * 2]
    )
    key_of = np.repeat(np.arange(len(keys)), [4, 3, 5, 2])
    links = LinkSet(keys, key_of, rng.integers(-1, 4, (len(key_of), 2)))
    for k in (0, 1):
        at = table.index_of(links.chunks[:, k])
        truth = [a >= 0 and 0 <= r < counts[a] for a, r in zip(at, links.rows[:, k], strict=True)]
        assert RowCounts(table, counts).resolves(links, k).tolist() == truth
    nothing = RowCounts(ChunkTable(np.empty((0, 3), np.int64)), counts[:0])
    assert nothing.resolves(links, 0).tolist() == [False] * len(key_of)


def test_manifest_entries_naming_chunks_the_level_does_not_list_are_counted(data_copy):
    path = data_copy("v07/streamlines")
    before = nzv.open_store(path)
    chunk = before.chunks(0)[0]
    named = int(np.count_nonzero(np.all(before.object_index(0).chunks == chunk, axis=1)))
    assert named > 0
    key = ".".join(map(str, chunk.tolist()))
    for folder in ("vertices", "vertex_fragments"):  # the chunk is gone from the listing
        shutil.rmtree(path / "0" / folder / key)
    store = nzv.open_store(path)
    assert len(store.chunks(0)) == len(before.chunks(0)) - 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        serial = qa_report(store, scheduler="sync")
        _same(qa_report(nzv.open_store(path), block_chunks=1), serial)
    assert serial.levels[0]["manifest_chunks_not_listed"] == named
    assert [lv["manifest_chunks_not_listed"] for lv in serial.levels[1:]] == [0] * (
        len(serial.levels) - 1
    )


def test_an_object_index_that_does_not_read_is_a_failure_of_its_level(data_copy):
    path = data_copy("v09/streamlines")
    for f in (path / "0" / "object_index" / "manifests").rglob("*"):
        if f.is_file() and f.name != "zarr.json":
            f.write_bytes(b"\x01\x02\x03")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = qa_report(nzv.open_store(path))
    # (named by the rows of the task that read it: here, every row)
    assert "object_index rows 0:12" in {f.chunk for f in result.failures if f.level == 0}
    base = result.levels[0]
    assert base["objects_with_vertices"] is None and base["unowned_vertices"] is None
    assert base["objects_total"] == 0
    assert result.levels[1]["objects_with_vertices"] == result.levels[1]["objects_kept"] > 0
