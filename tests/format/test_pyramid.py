"""Pyramid QA functions (format/pyramid.py) checked against the fixture stores themselves."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from data_paths import data_root
from napari_zarr_vectors import ZVChunkWarning, open_store
from napari_zarr_vectors.format import pyramid
from napari_zarr_vectors.format.layout.base import LinkSet
from napari_zarr_vectors.format.pyramid import (
    bin_boxes,
    chunk_boxes,
    cross_level_segments,
    dropped_objects,
    level_statistics,
)

DATA = data_root()

#: every fixture store with a pyramid and stored cross-level links
PYRAMIDS = [
    *(f"v07/{n}" for n in ("points", "lines", "streamlines", "polylines", "graph", "mesh")),
    *(f"v07/{n}" for n in ("skeleton", "points_binned")),
    *(f"v09/{n}" for n in ("points", "points_binned", "lines", "polylines", "streamlines")),
    *(f"v09/{n}" for n in ("graph", "skeleton", "mesh")),
    "v09/v07-twins/points",
    "v09/v07-twins/polylines",
    "v09/edge-cases/grid_demo",
    "v09/edge-cases/schema_demo2",
]


def store_of(name: str):
    return open_store(DATA / f"{name}.zarrvectors")


def rows_of(positions: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Index of every row of ``positions`` in ``table`` (exact match), -1 when absent."""
    table = np.ascontiguousarray(table, dtype=np.float64)
    positions = np.ascontiguousarray(positions, dtype=np.float64)
    view = np.dtype((np.void, table.dtype.itemsize * table.shape[1]))
    t = table.view(view).ravel()
    p = positions.view(view).ravel()
    order = np.argsort(t)
    pos = np.searchsorted(t[order], p)
    pos = np.minimum(pos, len(t) - 1)
    hit = t[order][pos] == p
    return np.where(hit, order[pos], -1)


def du(folder: Path) -> int:
    return sum(
        os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(folder) for f in files
    )


# --------------------------------------------------------------------------------------------
# statistics
# --------------------------------------------------------------------------------------------


def test_level_statistics_of_the_v07_points_pyramid():
    store = store_of("v07/points")
    truth = json.loads((DATA / "v07/expected/points.json").read_text())
    specs = truth["pyramid_summary"]["level_specs"]
    stats = level_statistics(store)
    assert [s["level"] for s in stats] == [0, 1, 2]
    assert [s["vertices"] for s in stats] == [
        240,
        specs[0]["vertex_count"],
        specs[1]["vertex_count"],
    ]
    assert [s["objects_total"] for s in stats] == [15, 15, 15]
    assert [s["objects_kept"] for s in stats] == [
        15,
        specs[0]["objects_kept"],
        specs[1]["objects_kept"],
    ]
    assert [s["sparsity"] for s in stats] == [1.0, 1.0, 8 / 15]
    assert [s["sparsity_declared"] for s in stats] == [1.0, 1.0, 0.5]
    assert [s["chunks"] for s in stats] == [len(store.chunks(lv)) for lv in (0, 1, 2)]
    assert [s["chunks"] for s in stats] == [63, 63, 8]
    assert [s["decoded_bytes"] for s in stats] == [240 * 12, 63 * 12, 8 * 12]
    assert [s["stored_bytes"] for s in stats] == [
        du(DATA / "v07/points.zarrvectors" / str(lv)) for lv in (0, 1, 2)
    ]
    assert all(s["stored_bytes"] > 0 for s in stats)
    assert [s["bin_shape"] for s in stats] == [[5.0] * 3, [10.0] * 3, [20.0] * 3]
    assert [s["chunk_shape"] for s in stats] == [[10.0] * 3, [10.0] * 3, [20.0] * 3]
    assert [s["coarsening_method"] for s in stats] == ["none", "per_object", "per_object"]
    assert [s["parent_level"] for s in stats] == [None, 0, 1]


def test_level_statistics_without_objects_and_with_a_single_level():
    binned = level_statistics(store_of("v07/points_binned"))
    assert [(s["objects_total"], s["objects_kept"], s["sparsity"]) for s in binned] == [
        (0, 0, None),
        (0, 0, None),
    ]
    single = level_statistics(store_of("v07/mesh_draco"))
    assert len(single) == 1
    assert single[0]["vertices"] == 50 and single[0]["chunks"] == 8
    assert single[0]["decoded_bytes"] == 50 * 3 * 4


def test_stored_bytes_only_where_file_sizes_are_cheap():
    from zarr.storage import LocalStore, WrapperStore

    path = DATA / "v07/points.zarrvectors"
    wrapped = open_store(WrapperStore(LocalStore(path, read_only=True)))
    assert [s["stored_bytes"] for s in level_statistics(wrapped)] == [None] * 3
    # asked for explicitly, a store that cannot list sizes still answers "unknown"
    assert [s["stored_bytes"] for s in level_statistics(wrapped, stored_bytes=True)] == [None] * 3
    local = open_store(path)
    assert [s["stored_bytes"] for s in level_statistics(local, stored_bytes=False)] == [None] * 3


# --------------------------------------------------------------------------------------------
# dropped objects
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["v07/points", "v07/lines", "v09/points", "v09/streamlines"])
def test_dropped_objects_are_the_ids_with_empty_coarse_manifests(name):
    store = store_of(name)
    top = store.levels[-1].index
    ids = store.object_ids(0)
    empty_at_top = [i for i in ids.tolist() if not store.manifest(top, i)]
    assert dropped_objects(store, 0, top).tolist() == sorted(empty_at_top)
    assert len(empty_at_top) > 0  # these pyramids were built with sparsity 2 at the top
    assert dropped_objects(store, 0, 1).tolist() == []
    # the dropped objects are unreadable at the top level and readable at level 0
    dropped = dropped_objects(store, 0, top)
    assert store.read(top, object_ids=dropped).vertex_count == 0
    assert store.read(0, object_ids=dropped).vertex_count > 0


def test_dropped_objects_without_objects_is_empty():
    assert dropped_objects(store_of("v07/points_binned"), 0, 1).size == 0
    assert dropped_objects(store_of("v07/mesh_draco"), 0, 0).size == 0


# --------------------------------------------------------------------------------------------
# chunk and bin grids
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [*PYRAMIDS, "v07/mesh_draco", "v07/graph_interleaved"])
def test_chunk_boxes_are_exactly_the_non_empty_chunks(name):
    store = store_of(name)
    for info in store.levels:
        level = info.index
        chunks = store.chunks(level)
        lo, hi = chunk_boxes(store, level)
        assert lo.shape == hi.shape == (len(chunks), store.ndim)
        np.testing.assert_array_equal(lo, chunks * info.chunk_shape)
        np.testing.assert_array_equal(hi - lo, np.broadcast_to(info.chunk_shape, lo.shape))
        # every stored vertex of a chunk lies in that chunk's half-open box
        if name.endswith("mesh_draco"):
            continue
        for k, c in enumerate(chunks):
            p = store.read(level, chunks=c[None], attributes=False).positions
            assert len(p), f"chunk {c} listed as non-empty"
            assert np.all((p >= lo[k]) & (p < hi[k])), (level, c.tolist())


@pytest.mark.parametrize(
    "name", ["points", "points_binned", "lines", "polylines", "streamlines", "graph", "mesh"]
)
def test_chunk_boxes_match_the_writers_non_empty_chunks(name):
    """Against the ground truth (``vertices_nonempty_chunks`` per level, 0.9 stores)."""
    store = store_of(f"v09/{name}")
    truth = json.loads((DATA / f"v09/expected/{name}.json").read_text())["levels"]
    for key, level_truth in truth.items():
        level = int(key)
        keys = np.asarray(
            [[int(v) for v in k.split(".")] for k in level_truth["vertices_nonempty_chunks"]]
        ).reshape(-1, 3)
        cs = store.level(level).chunk_shape
        lo, hi = chunk_boxes(store, level)
        assert len(lo) == len(keys)
        np.testing.assert_array_equal(
            np.unique(lo, axis=0), np.unique(keys * cs, axis=0).astype(np.float64)
        )
        np.testing.assert_array_equal(hi - lo, np.broadcast_to(cs, lo.shape))


def test_chunk_boxes_of_a_chunk_by_attribute_store_are_spatial():
    store = store_of("v09/edge-cases/cba_demo")
    chunks = store.chunks(0)
    lo, hi = chunk_boxes(store, 0)
    spatial = np.unique(chunks[:, 1:], axis=0)
    assert len(lo) == len(spatial) < len(chunks)
    np.testing.assert_array_equal(np.unique(lo, axis=0), spatial * store.chunk_shape)


def test_bin_boxes_tile_the_chunk():
    store = store_of("v07/points")  # level 0: chunk 10, bin 5; level 2: chunk 20, bin 20
    c = store.chunks(0)[0]
    lo, hi = bin_boxes(store, 0, c)
    assert len(lo) == 8
    np.testing.assert_array_equal(hi - lo, np.full((8, 3), 5.0))
    np.testing.assert_array_equal(lo.min(0), c * 10.0)
    np.testing.assert_array_equal(hi.max(0), c * 10.0 + 10.0)
    assert len(np.unique(lo, axis=0)) == 8
    c2 = store.chunks(2)[0]
    lo2, hi2 = bin_boxes(store, 2, c2)
    np.testing.assert_array_equal(lo2, [c2 * 20.0])
    np.testing.assert_array_equal(hi2, [c2 * 20.0 + 20.0])


def test_bin_boxes_clip_bins_that_do_not_divide_the_chunk():
    store = store_of("v09/edge-cases/schema_demo2")  # chunk 25, bin 6.25 -> 4 per axis
    c = store.chunks(0)[0]
    lo, hi = bin_boxes(store, 0, c)
    assert len(lo) == 64
    assert np.all(lo >= c * 25.0) and np.all(hi <= c * 25.0 + 25.0)
    assert np.isclose(np.prod(hi - lo, axis=1).sum(), 25.0**3)


@pytest.mark.parametrize("name", ["v07/points", "v09/points", "v09/polylines"])
def test_occupied_bins_hold_the_chunks_vertices(name):
    store = store_of(name)
    for level in (0, 1):
        info = store.level(level)
        for c in store.chunks(level)[:5]:
            lo, hi = bin_boxes(store, level, c, occupied=True)
            p = store.read(level, chunks=c[None], attributes=False).positions
            inside = np.all((p[:, None] >= lo[None]) & (p[:, None] < hi[None]), axis=2)
            assert np.all(inside.sum(1) == 1)  # every vertex in exactly one bin
            assert np.all(inside.sum(0) >= 1)  # no empty bin
            assert len(lo) == len(np.unique(np.floor(p / info.bin_shape), axis=0))


def test_bin_boxes_refuse_huge_enumerations(monkeypatch):
    store = store_of("v07/points")
    monkeypatch.setattr(pyramid, "MAX_BINS_PER_CHUNK", 4)
    with pytest.raises(ValueError, match="occupied"):
        bin_boxes(store, 0, store.chunks(0)[0])
    lo, _ = bin_boxes(store, 0, store.chunks(0)[0], occupied=True)
    assert 1 <= len(lo) <= 8


# --------------------------------------------------------------------------------------------
# cross-level links
# --------------------------------------------------------------------------------------------


def record_count(store, level: int, delta: int) -> int:
    """Records of the family straight from the layout (every owning chunk named)."""
    return len(store.links(level, delta, chunks=store.chunks(level)))


@pytest.mark.parametrize("name", PYRAMIDS)
def test_cross_level_segments_join_stored_vertices_of_the_two_levels(name):
    store = store_of(name)
    for info in store.levels[:-1]:
        level = info.index
        seg = cross_level_segments(store, level, +1)
        assert (seg.fine_level, seg.coarse_level) == (level, level + 1)
        assert seg.n_missing == 0
        assert len(seg) == record_count(store, level, +1) > 0
        fine_all = store.read(level, attributes=False).positions
        coarse_all = store.read(level + 1, attributes=False).positions
        # endpoints are stored coordinates of each level
        assert np.all(rows_of(seg.fine, fine_all) >= 0)
        assert np.all(rows_of(seg.coarse, coarse_all) >= 0)
        # ... and the coarse metavertex lies in the fine vertex's coarse bin
        bins = store.level(level + 1).bin_shape
        np.testing.assert_array_equal(np.floor(seg.fine / bins), np.floor(seg.coarse / bins))
        # at most one parent per fine vertex
        assert len(seg) <= len(fine_all)


@pytest.mark.parametrize("name", ["v07/points", "v07/streamlines", "v09/points", "v09/graph"])
def test_minus_one_family_mirrors_plus_one(name):
    store = store_of(name)
    for level in range(len(store.levels) - 1):
        up = cross_level_segments(store, level, +1)
        down = cross_level_segments(store, level + 1, -1)
        assert (down.fine_level, down.coarse_level) == (level, level + 1)
        a = np.unique(np.hstack([up.fine, up.coarse]), axis=0)
        b = np.unique(np.hstack([down.fine, down.coarse]), axis=0)
        np.testing.assert_array_equal(a, b)


def test_v07_links_match_the_reference_readback_exactly():
    """Level 1 -> 2 of the 0.7 points store against the reference library's own readback:
    both storage places (``links/+1/<chunk>`` and ``cross_chunk_links/+1``), every record,
    the exact stored coordinates of both endpoints."""
    truth = json.loads((DATA / "v07/expected/points.json").read_text())["reference_readback"]

    def rows(level):  # chunk key -> (n, 3) float32 rows (fragments concatenated)
        return {
            k: np.asarray([r for frag in v for r in frag], np.float32).reshape(-1, 3)
            for k, v in truth[level]["chunks"].items()
        }

    fine_rows, coarse_rows = rows("1"), rows("2")
    pairs = []
    for key, groups in truth["1"]["links_cross_level"]["1"].items():
        for a, b in (ab for g in groups for ab in g):
            pairs.append((fine_rows[key][a], coarse_rows[key][b]))
    n_cells = len(pairs)
    for (fk, fr), (ck, cr) in truth["1"]["cross_chunk_links"]["1"]:
        pairs.append((fine_rows[fk][fr], coarse_rows[ck][cr]))
    assert n_cells == 8 and len(pairs) == 62
    expected = np.unique(np.asarray([np.concatenate(p) for p in pairs]), axis=0)

    store = store_of("v07/points")
    seg = cross_level_segments(store, 1, +1)
    assert len(seg) == 62 and seg.n_missing == 0
    got = np.unique(np.hstack([seg.fine, seg.coarse]).astype(np.float32), axis=0)
    np.testing.assert_array_equal(got, expected)
    # the mirrored family at level 2 gives the same records
    down = cross_level_segments(store, 2, -1)
    got = np.unique(np.hstack([down.fine, down.coarse]).astype(np.float32), axis=0)
    np.testing.assert_array_equal(got, expected)


def test_every_level0_point_has_its_parent_and_its_object():
    store = store_of("v07/points")
    seg = cross_level_segments(store, 0, +1)
    full = store.read(0, attributes=False)
    assert len(seg) == full.vertex_count == 240
    idx = rows_of(seg.fine, full.positions)
    np.testing.assert_array_equal(seg.fine_object_ids, full.vertex_object_ids[idx])


def test_object_selection():
    store = store_of("v07/points")
    everything = cross_level_segments(store, 0, +1)
    for oid in (3, 11):
        seg = cross_level_segments(store, 0, +1, object_ids=[oid])
        assert np.all(seg.fine_object_ids == oid)
        assert len(seg) == store.read(0, object_ids=[oid]).vertex_count > 0
        mask = everything.fine_object_ids == oid
        np.testing.assert_array_equal(
            np.unique(seg.fine, axis=0), np.unique(everything.fine[mask], axis=0)
        )
    assert len(cross_level_segments(store, 0, +1, object_ids=[999])) == 0
    # a level-1 -> 2 selection of an object kept at level 1 and dropped at level 2
    dropped = dropped_objects(store, 1, 2)
    seg = cross_level_segments(store, 1, +1, object_ids=dropped[:1])
    assert np.all(rows_of(seg.coarse, store.read(2).positions) >= 0)


def test_bbox_selection():
    store = store_of("v09/points")
    everything = cross_level_segments(store, 0, +1)
    box = (np.array([-20.0, -20.0, -20.0]), np.array([5.0, 10.0, 0.0]))
    seg = cross_level_segments(store, 0, +1, bbox=box)
    inside = np.all((everything.fine >= box[0]) & (everything.fine <= box[1]), axis=1)
    assert 0 < len(seg) == inside.sum() < len(everything)
    np.testing.assert_array_equal(
        np.unique(seg.fine, axis=0), np.unique(everything.fine[inside], axis=0)
    )


def test_unresolvable_records_are_dropped_and_counted(monkeypatch):
    store = store_of("v07/points")
    real = store.links(0, 1, chunks=store.chunks(0))
    extra_chunks = np.array([[[99, 99, 99], [0, 0, 0]], [real.chunks[0, 0], real.chunks[0, 1]]])
    extra_rows = np.array([[0, 0], [0, 10_000]])
    fake = LinkSet.of_chunks(
        np.concatenate([real.chunks, extra_chunks]), np.concatenate([real.rows, extra_rows])
    )
    monkeypatch.setattr(store, "links", lambda level, delta=0, chunks=None: fake)
    with pytest.warns(ZVChunkWarning, match="2 cross-level links of level 0 toward level 1"):
        seg = cross_level_segments(store, 0, +1)
    assert seg.n_missing == 2
    assert len(seg) == len(real)
    assert seg.n_records == len(real) + 2


def test_cross_level_segments_without_links_or_levels():
    single = store_of("v07/mesh_draco")
    with pytest.raises(KeyError):
        cross_level_segments(single, 0, +1)
    with pytest.raises(ValueError):
        cross_level_segments(store_of("v07/points"), 0, 0)
    # level 2 of points is the top: it has a -1 family but no +1 family
    top = store_of("v07/points")
    assert pyramid.cross_level_deltas(top, 2) == [-1]
    with pytest.raises(KeyError):
        cross_level_segments(top, 2, +1)
