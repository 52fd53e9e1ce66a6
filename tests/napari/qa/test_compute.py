"""The parts of Pyramid QA without a viewer or Qt: napari/qa/compute.py and the worker jobs
of napari/qa/jobs.py and napari/qa/overlays.py."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import numpy as np
import pytest
from _zv_napari import v07_store

import napari_zarr_vectors as nzv
from napari_zarr_vectors.format import pyramid as core
from napari_zarr_vectors.napari.lod.view_geometry import object_rank
from napari_zarr_vectors.napari.qa import compute as qa
from napari_zarr_vectors.napari.qa.jobs import dropped_job, levels_holding_job


def run_job(gen):
    """Drive a worker job generator to its end: (progress reports, result)."""
    reports = []
    try:
        while True:
            reports.append(next(gen))
    except StopIteration as stop:
        return reports, stop.value


# --------------------------------------------------------------------------------------------
# statistics
# --------------------------------------------------------------------------------------------


def test_stat_cells_say_what_they_count():
    row = {
        "level": 1,
        "vertices": 4216,
        "objects_kept": 4000,
        "objects_total": 8000,
        "sparsity": 0.5,
        "chunks": 779,
        "stored_bytes": 1_234_567,
        "decoded_bytes": None,
        "bin_shape": (62.5, 62.5, 62.5),
        "chunk_shape": (125.0, 125.0, 125.0),
        "coarsening_method": "per_object",
    }
    cells = qa.stat_cells(row)
    assert qa.STAT_COLUMNS[1] == "stored vertices"
    assert cells == [
        "1",
        "4,216",
        "4,000 / 8,000",
        "0.5",
        "779",
        "1.2 MB",
        "–",
        "62.5×62.5×62.5",
        "125×125×125",
        "per_object",
    ]
    text = qa.drawn_text(1, 24274, 4216, locked=False)
    assert "24,274 vertices drawn" in text and "4,216 stored vertices" in text


# --------------------------------------------------------------------------------------------
# dropped objects
# --------------------------------------------------------------------------------------------


def test_dropped_objects_and_the_levels_holding_them():
    store = nzv.open_store(v07_store("points"))
    _, d = run_job(dropped_job(store, 2, 0, threading.Event()))  # ordered finer first
    assert (d.fine, d.coarse, d.has_objects, d.n_fine) == (0, 2, True, 15)
    np.testing.assert_array_equal(d.ids, core.dropped_objects(store, 0, 2))
    assert d.ids.tolist() == [4, 7, 8, 10, 11, 12, 13]
    assert d.describe() == "7 object(s) present at level 0 are absent at level 2."
    assert d.describe(max_listed=5).endswith("(first 5 listed).")
    # present at levels 0 and 1, absent at 2: where "Filter shown layer" can show them
    for ids, holding in ((d.ids, [0, 1]), ([0], [0, 1, 2]), ([999], [])):
        assert run_job(levels_holding_job(store, ids, threading.Event()))[1] == holding


# --------------------------------------------------------------------------------------------
# capping what is drawn
# --------------------------------------------------------------------------------------------


def test_select_within_keeps_whole_objects_by_fixed_rank():
    ids = np.repeat(np.arange(200), 10)  # 200 objects of 10 items
    keep = qa.select_within(500, ids=ids)
    assert 0 < keep.sum() <= 500
    kept = np.unique(ids[keep])
    # whole objects only
    assert np.all(np.bincount(ids[keep], minlength=200)[kept] == 10)
    # the lowest-ranked objects (a fixed rank per id, as the level of detail uses)
    ranks = object_rank(np.arange(200))
    assert ranks[kept].max() < np.delete(ranks, kept).min()
    # a larger cap keeps a superset; everything fits -> everything
    bigger = qa.select_within(1500, ids=ids)
    assert set(kept) <= set(np.unique(ids[bigger]))
    assert qa.select_within(2000, ids=ids).all()
    # the same objects whatever order the items come in
    perm = np.random.default_rng(0).permutation(len(ids))
    assert set(np.unique(ids[perm][qa.select_within(500, ids=ids[perm])])) == set(kept)


def test_select_within_one_object_too_large_is_taken_evenly():
    ids = np.zeros(1000, np.int64)
    keep = qa.select_within(100, ids=ids)
    assert 0 < keep.sum() <= 100
    rows = np.flatnonzero(keep)
    assert rows[0] == 0 and np.all(np.diff(rows) == 10)


def test_select_within_by_position_without_ids():
    pos = np.random.default_rng(1).random((5000, 3))
    keep = qa.select_within(1000, positions=pos)
    assert 0 < keep.sum() <= 1000
    # stable: the same points whatever the order
    perm = np.random.default_rng(2).permutation(5000)
    again = qa.select_within(1000, positions=pos[perm])
    assert {tuple(p) for p in pos[keep]} == {tuple(p) for p in pos[perm][again]}


def test_shown_of_states_the_cap():
    assert qa.shown_of(780, 780, "links") == "780 links"
    assert qa.shown_of(60_000, 780_044, "links") == (
        "showing 60,000 of 780,044 links (capped by the vertex budget)"
    )


# --------------------------------------------------------------------------------------------
# asking first
# --------------------------------------------------------------------------------------------


def test_estimate_read_and_reads_most():
    store = nzv.open_store(v07_store("points"))
    total = qa.store_vertices(store)
    assert total == 240 + 63 + 8
    assert qa.estimate_read(store, 0) == 240
    lo, hi = store.bounds
    assert qa.estimate_read(store, 0, (lo, hi)) == 240
    # a box holding a few of the 63 chunks: that share of the vertices
    chunks = store.chunks(0)
    cs = np.asarray(store.level(0).chunk_shape, float)
    box = (chunks[0] * cs + 1.0, chunks[0] * cs + cs - 1.0)
    assert qa.estimate_read(store, 0, box) == round(240 / len(chunks))
    assert qa.estimate_read(store, 0, share=0.5) == 120
    # most of the store: more than half of its vertices and more than the budget
    assert qa.reads_most(240, store, budget=100)
    assert not qa.reads_most(240, store, budget=1000)
    assert not qa.reads_most(150, store, budget=100)


# --------------------------------------------------------------------------------------------
# grid mode, batches, ids
# --------------------------------------------------------------------------------------------


def fake_layer(level=None, visible=True):
    meta = {} if level is None else {"zarr_vectors": {"level": level, "qa": qa.SIDE_BY_SIDE}}
    return SimpleNamespace(metadata=meta, visible=visible)


def test_grid_plan_gives_cells_to_the_side_by_side_levels_only():
    data, bounds, hidden = fake_layer(), fake_layer(), fake_layer(visible=False)
    side = [fake_layer(0), fake_layer(2)]
    hide, stride = qa.grid_plan([bounds, data, hidden, *side], side)
    assert hide == [bounds, data] and stride == 1
    # two layers a level (e.g. graph edges and nodes) share a cell
    side = [fake_layer(0), fake_layer(0), fake_layer(1), fake_layer(1)]
    assert qa.grid_plan(side, side) == ([], 2)


def test_chunk_batches_cover_every_chunk_once():
    store = nzv.open_store(v07_store("points"))
    chunks = store.chunks(0)
    batches = qa.chunk_batches(chunks, 3, per_batch=4)
    assert len(batches) > 1
    seen = np.zeros(len(chunks), int)
    for lo, hi in batches:
        seen += np.all((chunks >= lo) & (chunks <= hi), axis=1)
    assert np.all(seen == 1)


def test_parse_ids():
    assert qa.parse_ids("3, 5 7;-1 x") == [3, 5, 7, -1]


# --------------------------------------------------------------------------------------------
# worker jobs (layer data, no viewer)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["points", "streamlines"])
def test_links_job_resolves_every_link_in_batches_and_caps(name):
    from napari_zarr_vectors.napari.qa.overlays import _link_boxes, links_job

    store = nzv.open_store(v07_store(name))
    whole = core.cross_level_segments(store, 0, +1)
    assert len(_link_boxes(store, 0, None)) > 1
    reports, built = run_job(links_job(store, 0, 1, None, None, 10**6, "all", threading.Event()))
    assert reports[-1].done == reports[-1].total - 1
    assert built.total == built.shown == len(whole)
    (layer,) = built.items
    assert type(layer).__name__ == "Vectors" and len(layer.data) == len(whole)
    # the same fine endpoints as one whole-level call (order aside)
    starts = np.asarray(layer.data)[:, 0] * np.asarray(layer.scale)
    np.testing.assert_allclose(
        np.sort(starts[:, ::-1], axis=0), np.sort(whole.fine, axis=0), atol=1e-5
    )
    # capped: at most budget / 2 arrows, whole objects
    _, capped = run_job(links_job(store, 0, 1, None, None, 60, "all", threading.Event()))
    assert 0 < capped.shown <= 30 and capped.total == len(whole)
    assert capped.note.startswith(f"showing {capped.shown:,} of {len(whole):,} link(s)")


def test_isolate_job_caps_to_the_budget_and_highlights():
    from napari_zarr_vectors.napari.qa.overlays import isolate_job

    store = nzv.open_store(v07_store("streamlines"))
    ids = core.dropped_objects(store, 0, 2)
    _, built = run_job(isolate_job(store, ids, (0, 2), 10**6, threading.Event()))
    (layer,) = built.items
    assert layer.metadata["zarr_vectors"]["role"] == "qa_dropped"
    assert set(np.unique(layer.features["object_id"])) == set(ids.tolist())
    _, small = run_job(isolate_job(store, ids, (0, 2), 20, threading.Event()))
    assert len(small.items[0].data) <= 20 and small.note.startswith("showing")
