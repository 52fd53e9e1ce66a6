"""The worker side of level of detail (napari_zarr_vectors.napari.lod.loader), driven
synchronously: planning, batched fetching, budget enforcement, failures, filters, seams."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from _zv_napari import DATA, v07_store

import napari_zarr_vectors as nzv
from napari_zarr_vectors.format.cache import ChunkCache
from napari_zarr_vectors.napari.lod import plan as lod
from napari_zarr_vectors.napari.lod.loader import Loader, LoadRequest, Progress
from napari_zarr_vectors.napari.lod.view_geometry import (
    filter_geometry,
    position_rank,
    resident_vertices,
)


def loader_for(path, **kwargs) -> Loader:
    return Loader(nzv.open_store(path), ChunkCache(), **kwargs)


def run(loader: Loader, request: LoadRequest, cancel_after: int | None = None):
    """Run to the end; returns (progress list, result)."""
    progress: list[Progress] = []
    gen = loader.run(
        request, cancelled=lambda: cancel_after is not None and len(progress) > cancel_after
    )
    while True:
        try:
            progress.append(next(gen))
        except StopIteration as stop:
            return progress, stop.value


def slab_view(z: float, thickness: float, zoom: float = 1.0) -> lod.ViewState:
    """A 2-D view (napari order z, y, x) centred on the origin showing a 1000-px canvas."""
    return lod.ViewState(
        ndisplay=2,
        center=(0.0, 0.0),
        zoom=zoom,
        canvas_size=(1000, 1000),
        point=(z, 0.0, 0.0),
        displayed=(1, 2),
        thickness=(thickness, 0.0, 0.0),
    )


def keys(chunks) -> set[tuple[int, ...]]:
    return {tuple(int(v) for v in c) for c in np.asarray(chunks).tolist()}


# --------------------------------------------------------------------------------------------
# planning and loading
# --------------------------------------------------------------------------------------------


def test_a_whole_store_request_shows_the_resolution_level_thinned_to_the_budget():
    loader = loader_for(v07_store("points"))  # 240 / 63 / 8 vertices
    store = loader.store
    _, result = run(loader, LoadRequest(budget=100))
    # no camera: the level a 1000-pixel view of the whole store resolves, never a coarser
    # one for the budget; the budget thins its points instead
    lo, hi = (np.asarray(b, float) for b in store.bounds)
    assert result.level == lod.resolution_level(store.levels, float(np.max(hi - lo)) / 1000)
    assert keys(result.chunks) == keys(store.chunks(result.level))
    whole = store.read(result.level)
    assert 0 < result.vertex_count <= 100 < whole.vertex_count
    assert result.share.fraction < 1 and result.share.item_kind == "vertices"
    assert result.share.items_in_view == whole.vertex_count == result.share.vertices_in_view
    # exactly the points ranked below the fraction
    expected = whole.positions[position_rank(whole.positions) < result.share.fraction]
    assert {tuple(p) for p in result.geometry.positions} == {tuple(p) for p in expected}
    ((data, kwargs, kind),) = result.layer_data
    assert kind == "points" and len(data) == result.vertex_count
    assert kwargs["metadata"]["zarr_vectors"]["level"] == result.level
    assert kwargs["name"] == "points"  # level-of-detail layers: no level in the name


def test_progress_is_reported_after_every_batch():
    loader = loader_for(v07_store("points"), batch_chunks=8)
    progress, result = run(loader, LoadRequest(budget=1_000))
    assert result.level == 0
    total = len(result.chunks)
    assert [p.done for p in progress] == [0, *range(8, total, 8), total]
    assert {p.total for p in progress} == {total}
    assert {p.level for p in progress} == {0}


def test_the_same_plan_is_not_loaded_again():
    loader = loader_for(v07_store("points"))
    _, first = run(loader, LoadRequest(budget=100))
    progress, again = run(loader, LoadRequest(budget=100, current_key=first.key))
    assert again.unchanged and not again.layer_data and progress == []
    _, forced = run(loader, LoadRequest(budget=100, current_key=first.key, force=True))
    assert not forced.unchanged and forced.vertex_count == first.vertex_count


def test_a_cancelled_run_stops_between_batches_and_returns_nothing():
    loader = loader_for(v07_store("points"), batch_chunks=4)
    progress, result = run(loader, LoadRequest(budget=1_000), cancel_after=2)
    assert result is None
    assert len(progress) == 3  # the initial report and two batches


def test_a_chunk_that_fails_is_left_out_and_reported(monkeypatch):
    loader = loader_for(v07_store("points"), batch_chunks=8)
    store = loader.store
    bad = tuple(store.chunks(0)[5].tolist())
    real = store.prefetch

    def prefetch(level, chunks, cache, **kw):
        if bad in keys(chunks):
            raise OSError("connection reset")
        return real(level, chunks, cache, **kw)

    monkeypatch.setattr(store, "prefetch", prefetch)
    _, result = run(loader, LoadRequest(budget=1_000))
    assert [c for c, _ in result.failed] == [bad]
    assert "OSError: connection reset" in result.failed[0][1]
    assert bad not in keys(result.chunks)
    assert keys(result.chunks) == keys(store.chunks(0)) - {bad}
    full = store.read(0)
    in_bad = np.all(np.floor(full.positions / 10.0).astype(int) == bad, axis=1)
    assert result.vertex_count == full.vertex_count - int(in_bad.sum()) > 0


def test_a_missing_dependency_is_raised_not_skipped(monkeypatch):
    loader = loader_for(v07_store("points"))

    def prefetch(*a, **k):
        raise nzv.MissingDependencyError("DracoPy is needed: pip install DracoPy")

    monkeypatch.setattr(loader.store, "prefetch", prefetch)
    with pytest.raises(nzv.MissingDependencyError):
        run(loader, LoadRequest(budget=1_000))


def test_the_budget_holds_even_when_the_store_underestimates_its_levels():
    loader = loader_for(v07_store("points"))
    store = loader.store
    # claim 1 vertex per level: every estimate fits, the real counts do not
    store.levels = [dataclasses.replace(lv, vertex_count=1) for lv in store.levels]
    _, result = run(loader, LoadRequest(budget=30))
    assert 0 < result.vertex_count <= 30
    assert resident_vertices(result.geometry) == result.vertex_count
    _, locked = run(loader, LoadRequest(budget=30, locked=0))
    # a locked level is that level, every chunk of the view read, thinned to the budget
    assert locked.level == 0 and 0 < locked.vertex_count <= 30 and locked.share.fraction < 1
    assert keys(locked.chunks) == keys(store.chunks(0)) and locked.trimmed == 0


def test_a_2d_point_cloud_view_keeps_only_the_slab():
    loader = loader_for(v07_store("points"))
    store = loader.store
    _, result = run(loader, LoadRequest(view=slab_view(z=3.0, thickness=5.0), budget=1_000))
    assert result.level == 0
    z = result.geometry.positions[:, 2]
    assert np.all((z >= 0.5) & (z <= 5.5))
    lo, hi = (np.asarray(b, float) for b in store.bounds)
    expected = store.read(0, bbox=([lo[0], lo[1], 0.5], [hi[0], hi[1], 5.5]))
    assert result.vertex_count == expected.vertex_count > 0
    # the chunks of the slab only (z in [0.5, 5.5] -> chunk layer 0)
    assert {c[2] for c in keys(result.chunks)} == {0}


def test_learnt_counts_refine_later_estimates():
    loader = loader_for(v07_store("points"))
    run(loader, LoadRequest(budget=10_000))
    counts = {c: n for (lv, c), n in loader.counts.items() if lv == 0}
    full = loader.store.read(0)
    key, n = np.unique(np.floor(full.positions / 10.0).astype(int), axis=0, return_counts=True)
    assert counts == dict(zip(map(tuple, key.tolist()), n.tolist(), strict=True))


# --------------------------------------------------------------------------------------------
# objects across chunk seams
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("relpath", ["v07/streamlines", "v09/polylines", "v09/streamlines"])
def test_paths_are_continuous_across_chunk_seams_at_every_level(relpath):
    path = DATA / f"{relpath}.zarrvectors"
    loader = loader_for(path)
    store = loader.store
    for lv in store.levels:
        _, result = run(loader, LoadRequest(budget=10**9, locked=lv.index))
        full = store.read(lv.index)
        got = [result.geometry.positions[p] for p in result.geometry.paths]
        want = [full.positions[p] for p in full.paths]
        assert len(got) == len(want), f"level {lv.index}: a path broke at a chunk seam"
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)


def test_a_partial_view_splits_paths_only_where_they_leave_the_loaded_chunks():
    loader = loader_for(DATA / "v09/streamlines.zarrvectors")
    store = loader.store
    edge = store.level(0).chunk_shape
    view = lod.ViewState(2, (10.0, 10.0), 20.0, (400, 400), (10.0, 0.0, 0.0), (1, 2), (5.0, 0, 0))
    _, result = run(loader, LoadRequest(view=view, budget=10**9, locked=0))
    loaded = keys(result.chunks)
    assert 0 < len(loaded) < len(store.chunks(0))
    full = store.read(0)
    whole = {
        int(o): full.positions[p] for p, o in zip(full.paths, full.path_object_ids, strict=True)
    }
    pieces: dict[int, list[np.ndarray]] = {}
    for p, o in zip(result.geometry.paths, result.geometry.path_object_ids, strict=True):
        pieces.setdefault(int(o), []).append(result.geometry.positions[p])
    assert pieces
    for oid, runs in pieces.items():
        line = whole[oid]
        starts = []
        for piece in runs:  # each piece is a contiguous run of the whole path
            hits = [
                i
                for i in range(len(line) - len(piece) + 1)
                if np.array_equal(line[i : i + len(piece)], piece)
            ]
            assert hits, f"object {oid}: a piece is not a run of its path"
            starts.append((hits[0], hits[0] + len(piece)))
        starts.sort()
        for (_, end), (nxt, _) in zip(starts, starts[1:], strict=False):
            gap = line[end:nxt]  # between two pieces: vertices outside the loaded chunks only
            assert len(gap) > 0
            assert not keys(np.floor(gap / edge).astype(int)) & loaded


# --------------------------------------------------------------------------------------------
# object filter
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "relpath", ["v07/points", "v07/streamlines", "v07/graph", "v09/mesh", "v07/lines"]
)
def test_the_object_filter_keeps_only_allowed_objects(relpath):
    store = nzv.open_store(DATA / f"{relpath}.zarrvectors")
    geometry = store.read(0)
    ids = np.unique(geometry.vertex_object_ids)
    allowed = ids[::2]
    kept = filter_geometry(geometry, allowed)
    assert 0 < kept.vertex_count < geometry.vertex_count
    if kept.paths:
        assert set(kept.path_object_ids.tolist()) <= set(allowed.tolist())
        rows = np.concatenate(kept.paths)
        assert rows.max() < kept.vertex_count
    else:
        assert set(kept.vertex_object_ids.tolist()) <= set(allowed.tolist())
    for name, values in kept.vertex_attributes.items():
        assert len(values) == kept.vertex_count, name
    if len(geometry.edges):
        assert 0 < len(kept.edges) < len(geometry.edges)
        assert kept.edges.max() < kept.vertex_count
        assert set(kept.vertex_object_ids[kept.edges.ravel()].tolist()) <= set(allowed.tolist())
    if len(geometry.faces):
        assert 0 < len(kept.faces) < len(geometry.faces) and kept.faces.max() < kept.vertex_count


def test_a_filtered_request_counts_only_the_allowed_objects():
    loader = loader_for(v07_store("points"))
    _, result = run(loader, LoadRequest(budget=1_000, allowed_ids=np.array([3])))
    assert set(result.geometry.vertex_object_ids.tolist()) == {3}
    assert result.vertex_count == int((loader.store.read(0).vertex_object_ids == 3).sum())


# --------------------------------------------------------------------------------------------
# the shared cache
# --------------------------------------------------------------------------------------------


def test_openings_share_the_cache_budget_but_not_its_entries():
    shared = ChunkCache()
    first = Loader(nzv.open_store(v07_store("points")), shared)
    run(first, LoadRequest(budget=1_000))
    held = len(shared)
    assert held > 0 and shared.nbytes > 0
    run(first, LoadRequest(budget=1_000, force=True))
    assert len(shared) == held  # panning back: everything came from the cache
    second = Loader(nzv.open_store(v07_store("points")), shared)
    run(second, LoadRequest(budget=1_000))
    assert len(shared) == 2 * held  # a new opening decodes afresh (the store may have changed)


# --------------------------------------------------------------------------------------------
# paths simplified to the screen
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def arcs(tmp_path_factory):
    return write_arcs(tmp_path_factory.mktemp("simplify") / "arcs.zarrvectors")


def write_arcs(path):
    """800 smooth streamlines of 100 vertices (arcs of circles) in a 100^3 box, opened."""
    import warnings

    polylines = pytest.importorskip("zarr_vectors.types.polylines")
    rng = np.random.default_rng(5)
    t = np.linspace(0.0, 1.2, 100)
    centre = rng.uniform(35, 65, (800, 1, 3))
    radius = rng.uniform(15, 25, (800, 1, 1))
    phase = rng.uniform(0, 2 * np.pi, (800, 1))
    a = (phase + t)[..., None]
    ring = np.concatenate([np.cos(a), np.sin(a), 0.1 * a], axis=2)
    walks = np.clip(centre + radius * ring, 0.0, 99.9).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        polylines.write_polylines(
            str(path),
            list(walks),
            chunk_shape=(25.0, 25.0, 25.0),
            bounds=([0.0] * 3, [100.0] * 3),
            geometry_type="streamline",
        )
    return nzv.open_store(path)


def view_3d(zoom: float = 1.0) -> lod.ViewState:
    """The whole 100^3 box in a 200 x 200 canvas at zoom 1 (half a unit a pixel)."""
    return lod.ViewState(
        ndisplay=3,
        center=(50.0, 50.0, 50.0),
        zoom=2.0 * zoom,
        canvas_size=(200, 200),
        point=(50.0, 50.0, 50.0),
        displayed=(0, 1, 2),
        thickness=(1.0, 1.0, 1.0),
        view_direction=(1.0, 0.0, 0.0),
        up_direction=(0.0, 1.0, 0.0),
    )


def test_paths_simplified_to_the_screen_show_more_whole_streamlines(arcs, monkeypatch):
    import napari_zarr_vectors.napari.lod.loader as loader_module

    monkeypatch.setattr(loader_module, "SMALL_STORE_ROWS", 1_000)  # 80,000 rows: "large"
    ld = Loader(arcs, ChunkCache())
    budget = 4_000
    stored = ld.load(LoadRequest(view=view_3d(), budget=budget, locked=0))  # QA: every vertex
    simple = ld.load(LoadRequest(view=view_3d(), budget=budget))
    assert stored.share.simplify_tolerance == 0 and not stored.share.simplified_note
    assert 30 <= stored.share.items_shown <= 40  # 100 vertices a path
    assert stored.vertex_count == 100 * stored.share.items_shown <= budget
    # about a pixel (half a unit): several times the streamlines, whole, within the budget
    assert simple.share.simplify_tolerance == 0.5
    assert simple.vertex_count <= budget
    assert simple.share.items_shown >= 4 * stored.share.items_shown
    assert abs(simple.share.items_in_view - 800) <= 40  # estimated from the part read
    assert abs(stored.share.items_in_view - 800) <= 40
    assert simple.share.fraction > stored.share.fraction
    # the same streamlines and more (a stable subset), each still from end to end
    before = set(stored.geometry.path_object_ids.tolist())
    after = set(simple.geometry.path_object_ids.tolist())
    assert before < after and len(simple.geometry.paths) == len(after)
    whole = arcs.read(0)
    path_of = dict(zip(whole.path_object_ids.tolist(), whole.paths, strict=True))
    g = simple.geometry
    for oid, rows in zip(g.path_object_ids.tolist(), g.paths, strict=True):
        full = path_of[oid]
        assert np.array_equal(g.positions[rows[[0, -1]]], whole.positions[full[[0, -1]]])
        assert 2 <= len(rows) < len(full)
    # announced: metadata, status
    meta = simple.share.as_metadata()
    assert meta["simplified"] and meta["simplify_tolerance"] == 0.5
    assert 0 < meta["simplified_keep"] < 0.25
    assert meta["items_shown"] == simple.share.items_shown and meta["subset_of"] == "objects"
    assert meta["shown_fraction"] == simple.share.fraction
    assert simple.share.simplified_note.startswith("paths simplified to the screen")
    assert stored.share.as_metadata()["simplified"] is False
    # zooming in refines the band (and the plan key): twice the zoom, half the tolerance
    closer = ld.load(LoadRequest(view=view_3d(2.0), budget=budget))
    assert closer.share.simplify_tolerance == 0.25 and closer.key != simple.key


def test_small_stores_and_views_that_fit_keep_every_vertex(arcs, monkeypatch):
    ld = Loader(arcs, ChunkCache())  # 80,000 rows: a small store (SMALL_STORE_ROWS)
    small = ld.load(LoadRequest(view=view_3d(), budget=4_000))
    assert small.share.simplify_tolerance == 0
    assert small.vertex_count == 100 * small.share.items_shown <= 4_000
    import napari_zarr_vectors.napari.lod.loader as loader_module

    monkeypatch.setattr(loader_module, "SMALL_STORE_ROWS", 1_000)
    fits = Loader(arcs, ChunkCache()).load(LoadRequest(view=view_3d(), budget=100_000))
    assert fits.share.simplify_tolerance == 0 and fits.vertex_count == 80_000
