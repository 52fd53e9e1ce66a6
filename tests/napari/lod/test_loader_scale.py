"""Level of detail at scale, on small stores written by zarr-vectors 0.9.2: the
budget bounds what the layers hold, geometry is cropped to the view, the object subset is
stable across pans, grows when zooming in and respects filters, a locked level stays, and
graphs and skeletons follow the same rules. Driven through the loader (no Qt)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import napari_zarr_vectors as nzv
from napari_zarr_vectors.format.cache import ChunkCache
from napari_zarr_vectors.format.geometry import PIECE_TYPES
from napari_zarr_vectors.napari.lod import plan as lod
from napari_zarr_vectors.napari.lod.loader import PREVIEW_CHUNKS, Loader, LoadRequest
from napari_zarr_vectors.napari.lod.view_geometry import (
    object_rank,
    position_rank,
    resident_vertices,
)

zv_polylines = pytest.importorskip("zarr_vectors.types.polylines")
zv_graphs = pytest.importorskip("zarr_vectors.types.graphs")

BOUNDS = ([0.0, 0.0, 0.0], [100.0, 100.0, 100.0])


def _write(fn, path, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn(str(path), *args, chunk_shape=(25.0, 25.0, 25.0), bounds=BOUNDS, **kwargs)
    return nzv.open_store(path)


def random_walks(n: int, length: int, step: float, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    start = rng.uniform(10, 90, (n, 1, 3))
    walk = start + np.cumsum(rng.normal(0, step, (n, length, 3)), axis=1)
    return list(np.clip(walk, 0.0, 99.9).astype(np.float32))


@pytest.fixture(scope="module")
def tiny_objects(tmp_path_factory):
    """3,000 two-vertex streamlines."""
    path = tmp_path_factory.mktemp("scale") / "tiny.zarrvectors"
    return _write(zv_polylines.write_polylines, path, random_walks(3_000, 2, 1.0))


@pytest.fixture(scope="module")
def long_paths(tmp_path_factory):
    """60 streamlines of 300 vertices crossing many chunks, with the writer's pyramid."""
    import zarr_vectors as zv

    path = tmp_path_factory.mktemp("scale") / "long.zarrvectors"
    _write(zv_polylines.write_polylines, path, random_walks(60, 300, 1.5, seed=1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zv.open(str(path), mode="r+").build_pyramid(factors=[(2.0, 1.0)] * 2)
    return nzv.open_store(path)


@pytest.fixture(scope="module")
def skeletons(tmp_path_factory):
    """600 skeletons (chains of 10 nodes)."""
    n_obj, k = 600, 10
    walks = random_walks(n_obj, k, 1.0, seed=2)
    pos = np.concatenate(walks)
    first = np.arange(n_obj * k).reshape(n_obj, k)
    edges = np.stack([first[:, 1:].ravel(), first[:, :-1].ravel()], axis=1)
    path = tmp_path_factory.mktemp("scale") / "skeletons.zarrvectors"
    return _write(
        zv_graphs.write_graph,
        path,
        pos,
        edges,
        kind="skeleton",
        object_ids=np.repeat(np.arange(n_obj), k),
    )


def loader(store) -> Loader:
    return Loader(store, ChunkCache())


def view2d(center_yx, zoom, z=50.0, thickness=2.0) -> lod.ViewState:
    """A 2-D view (napari order z, y, x) of a 200x200-pixel canvas."""
    return lod.ViewState(
        ndisplay=2,
        center=tuple(center_yx),
        zoom=zoom,
        canvas_size=(200, 200),
        point=(z, 50.0, 50.0),
        displayed=(1, 2),
        thickness=(thickness, 0.0, 0.0),
    )


def view3d(zoom, center=(50.0, 50.0, 50.0)) -> lod.ViewState:
    return lod.ViewState(
        ndisplay=3,
        center=center,
        zoom=zoom,
        canvas_size=(200, 200),
        point=(50.0, 50.0, 50.0),
        displayed=(0, 1, 2),
        thickness=(1.0, 1.0, 1.0),
        view_direction=(1.0, 0.0, 0.0),
        up_direction=(0.0, 1.0, 0.0),
    )


def shown_ids(result) -> set[int]:
    g = result.geometry
    ids = g.path_object_ids if g.paths else g.vertex_object_ids
    return set(np.asarray(ids).tolist())


def held(result) -> int:
    """Vertices the built layers hold, counted from the layer data: two ends a vector,
    Surface vertices, else rows."""
    sizes = {"vectors": lambda d: 2 * len(d), "surface": lambda d: len(d[0])}
    return sum(sizes.get(kind, len)(data) for data, _, kind in result.layer_data)


# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fixture", ["tiny_objects", "long_paths", "skeletons"])
@pytest.mark.parametrize("budget", [150, 1_000])
def test_the_layers_never_hold_more_than_the_budget(request, fixture, budget):
    store = request.getfixturevalue(fixture)
    ld = loader(store)
    for view in (None, view3d(2.0), view3d(8.0), view2d((50, 50), 2.0), view2d((20, 20), 8.0)):
        result = ld.load(LoadRequest(view=view, budget=budget, force=True))
        assert held(result) == result.vertex_count == resident_vertices(result.geometry)
        assert 0 < result.vertex_count <= budget
    # the whole store is over these budgets: a subset was shown, and said so
    whole = ld.load(LoadRequest(view=None, budget=budget, force=True))
    assert whole.share.fraction < 1 and whole.share.items_shown < whole.share.items_in_view
    assert whole.share.left_out == whole.share.vertices_in_view - whole.vertex_count > 0


def test_no_level_is_given_up_for_the_budget(long_paths):
    # the 0.9.2 pyramid is coarser than any view of 200 px over 100 units resolves
    ld = loader(long_paths)
    for view in (None, view3d(2.0), view2d((50, 50), 2.0)):
        result = ld.load(LoadRequest(view=view, budget=150, force=True))
        assert result.level == 0
    locked = ld.load(LoadRequest(view=view3d(2.0), budget=150, locked=1, force=True))
    assert locked.level == 1 and 0 < locked.vertex_count <= 150


def test_the_level_stays_put_while_the_slice_moves_at_constant_zoom(long_paths):
    """Issue 16: in 2-D the level flipped 0 -> 1 -> 0 as the slice moved; it depends on the
    zoom (the screen's resolution) only."""
    ld = loader(long_paths)
    picked = {}
    for zoom in (0.01, 0.03, 0.1, 0.5, 2.0):
        levels = {
            ld.plan(LoadRequest(view=view2d((50, 50), zoom, z=z), budget=150))[0].level
            for z in np.linspace(0.0, 99.0, 12)
        }
        assert len(levels) == 1, (zoom, levels)
        picked[zoom] = levels.pop()
    assert picked[2.0] == 0 and max(picked.values()) > 0  # coarse levels were in play


def test_a_2d_view_crops_paths_to_its_slab_and_keeps_pieces_one_object(long_paths):
    ld = loader(long_paths)
    result = ld.load(LoadRequest(view=view2d((50, 50), 2.0, z=40.0), budget=10**6, force=True))
    g = result.geometry
    assert result.share.fraction == 1.0 and g.paths
    lo, hi = result.crop
    for p in g.paths:
        seg = g.positions[p]
        # every segment meets the slab z in [39, 41] (store axis 2): it is not all above/below
        a, b = seg[:-1, 2], seg[1:, 2]
        assert np.all(np.maximum(a, b) >= lo[2]) and np.all(np.minimum(a, b) <= hi[2])
    full = long_paths.read(0)
    # every object with a vertex in the slab is there, possibly in several pieces
    in_slab = {
        int(o)
        for o, p in zip(full.path_object_ids, full.paths, strict=True)
        if np.any((full.positions[p][:, 2] >= lo[2]) & (full.positions[p][:, 2] <= hi[2]))
    }
    assert in_slab <= set(g.path_object_ids.tolist())
    assert len(g.paths) > len(set(g.path_object_ids.tolist()))  # pieces share their id
    # far fewer vertices than the chunks read
    assert result.vertex_count < 0.5 * full.vertex_count


def test_a_3d_close_up_crops_to_the_view_box(long_paths):
    ld = loader(long_paths)
    # a budget below the whole store's rows (the whole store would be shown uncropped)
    result = ld.load(LoadRequest(view=view3d(8.0), budget=ld.whole_rows - 1, force=True))
    g = result.geometry
    lo, hi = result.crop
    assert g.vertex_count and np.all(lo[:2] > 0) and np.all(hi[:2] < 100)
    # each kept segment meets the box: no segment lies wholly on one side of it
    for p in g.paths:
        s = g.positions[p]
        a, b = s[:-1], s[1:]
        assert not np.any(np.all(np.maximum(a, b) < lo, axis=1))
        assert not np.any(np.all(np.minimum(a, b) > hi, axis=1))


def test_the_subset_is_stable_across_pans_and_grows_when_zooming_in(tiny_objects):
    ld = loader(tiny_objects)
    budget = 120
    first = ld.load(LoadRequest(view=view3d(1.0), budget=budget, force=True))
    again = ld.load(LoadRequest(view=view3d(1.0), budget=budget, force=True))
    assert shown_ids(first) == shown_ids(again) and first.share.fraction < 1
    # a small pan: the same objects, those still in view stay
    panned = ld.load(
        LoadRequest(view=view3d(1.0, center=(50.0, 51.0, 51.0)), budget=budget, force=True)
    )
    assert panned.share.fraction == first.share.fraction
    assert shown_ids(panned) == shown_ids(first)
    # zooming in: fewer objects in view, a larger fraction, only additions in view
    zoomed = ld.load(LoadRequest(view=view3d(4.0), budget=budget, force=True))
    assert zoomed.share.fraction > first.share.fraction
    lo, hi = zoomed.crop
    g = first.geometry
    inside = {
        int(o)
        for o, p in zip(g.path_object_ids, g.paths, strict=True)
        if np.all((g.positions[p] >= lo) & (g.positions[p] <= hi))
    }
    assert inside <= shown_ids(zoomed)
    # the objects shown are exactly those ranked below the fraction, among those in view
    ranks = object_rank(np.asarray(sorted(shown_ids(zoomed))))
    assert np.all(ranks < zoomed.share.fraction)


def run_all(ld: Loader, request: LoadRequest):
    """Drive :meth:`Loader.run` to its end: ``(previews, result)``."""
    gen, previews = ld.run(request), []
    while True:
        try:
            progress = next(gen)
        except StopIteration as stop:
            return previews, stop.value
        if progress.preview is not None:
            previews.append((progress.done, progress.total, progress.preview))


@pytest.mark.parametrize(("fixture", "budget"), [("tiny_objects", 300), ("skeletons", 1_000)])
def test_a_first_load_shows_a_preview_of_its_central_chunks_then_the_whole(
    request, fixture, budget
):
    store = request.getfixturevalue(fixture)
    ld = loader(store)
    plan, _ = ld.plan(LoadRequest(budget=budget))
    previews, final = run_all(ld, LoadRequest(budget=budget, progressive=True))
    assert len(previews) == 1
    done, total, preview = previews[0]
    # the first batch is PREVIEW_CHUNKS chunks, the nearest the store's centre
    assert done == len(preview.chunks) == PREVIEW_CHUNKS < total == len(final.chunks)
    centre = (np.asarray(store.bounds[0]) + np.asarray(store.bounds[1])) / 2
    edge = np.asarray(store.level(0).chunk_shape)

    def dist(chunks):
        return np.linalg.norm((np.asarray(chunks) + 0.5) * edge - centre, axis=-1) / edge[0]

    first = PREVIEW_CHUNKS - 1
    assert dist(preview.chunks).max() <= np.sort(dist(final.chunks))[first] + 1e-9
    assert {tuple(c) for c in preview.chunks.tolist()} <= {tuple(c) for c in final.chunks.tolist()}
    # within the budget
    assert 0 < preview.vertex_count <= budget and held(preview) == preview.vertex_count
    g = preview.geometry
    if store.geometry_type in PIECE_TYPES:
        # path pieces, read without the object index: objects unknown (id -1), each
        # piece a run of consecutive vertices of one stored path, ranked by its first vertex
        assert preview.share.item_kind == "pieces" and set(g.path_object_ids.tolist()) == {-1}
        whole = store.read(0, chunks=preview.chunks)
        stored = {tuple(np.round(p, 4)) for p in whole.positions.tolist()}
        assert {tuple(np.round(p, 4)) for p in g.positions.tolist()} <= stored
        firsts = g.positions[[p[0] for p in g.paths]]
        assert np.all(position_rank(firsts) < preview.share.fraction)
        assert "a first look" in preview.share.describe("paths")
    else:
        # about as dense as the final picture: no object ranked above the plan's fraction
        # (the estimate for the whole view)
        ranks = object_rank(np.asarray(sorted(shown_ids(preview))))
        assert np.all(ranks < plan.fraction) and plan.fraction < 1
    assert final.share.fraction < 1
    assert preview.key != final.key and preview.key[1:] == final.key
    # the final result is exactly what a load without a preview gives
    plain = loader(store).load(LoadRequest(budget=budget))
    assert shown_ids(plain) == shown_ids(final) and plain.vertex_count == final.vertex_count


def test_no_preview_unless_asked_or_when_one_batch_holds_everything(tiny_objects):
    previews, _ = run_all(loader(tiny_objects), LoadRequest(budget=300))
    assert previews == []
    close = view3d(8.0)  # a few chunks: one batch
    previews, result = run_all(
        loader(tiny_objects), LoadRequest(view=close, budget=300, progressive=True)
    )
    assert previews == [] and 0 < len(result.chunks) <= 16


def test_filters_combine_with_the_subset(tiny_objects):
    ld = loader(tiny_objects)
    allowed = np.arange(0, 3_000, 3)
    result = ld.load(LoadRequest(view=None, budget=120, allowed_ids=allowed, force=True))
    assert shown_ids(result) <= set(allowed.tolist())
    assert 0 < result.vertex_count <= 120 and result.share.fraction < 1
    assert result.share.items_in_view == pytest.approx(1_000, rel=0.25)
    # a filter small enough to fit shows all of it
    few = ld.load(LoadRequest(view=None, budget=120, allowed_ids=allowed[:20], force=True))
    assert shown_ids(few) == set(allowed[:20].tolist()) and few.share.fraction == 1.0


def test_skeletons_keep_whole_objects_and_their_edges(skeletons):
    ld = loader(skeletons)
    result = ld.load(LoadRequest(view=None, budget=400, force=True))
    g = result.geometry
    assert 0 < result.vertex_count <= 400 and result.share.fraction < 1
    ids = np.asarray(g.vertex_object_ids)
    assert np.all(object_rank(np.unique(ids)) < result.share.fraction)
    # every shown skeleton is whole: 10 nodes and 9 edges
    assert np.all(np.bincount(ids)[np.unique(ids)] == 10)
    assert len(g.edges) == 9 * len(np.unique(ids))
    edges, nodes = (data for data, _, _ in result.layer_data)
    assert len(edges) == len(g.edges) and len(nodes) == g.vertex_count


@pytest.mark.parametrize("name", ["points", "streamlines"])
def test_stores_whose_chunks_count_from_a_grid_origin_load_every_vertex_in_view(name):
    """The spec's dense form numbers chunks from ``bounds_min``: views still find them."""
    from _zv_napari import DATA

    store = nzv.open_store(DATA / "dense" / f"{name}.zarrvectors")
    assert store.level(0).grid_origin is not None
    lo, hi = (np.asarray(b, float) for b in store.bounds)
    mid = (lo + hi) / 2
    view = lod.ViewState(
        ndisplay=2,
        center=(mid[1], mid[0]),
        zoom=200 / float(np.max(hi - lo)) * 2,  # half the store across the canvas
        canvas_size=(200, 200),
        point=tuple(mid[::-1]),
        displayed=(1, 2),
        thickness=(float(hi[2] - lo[2]), 0.0, 0.0),  # the whole depth
    )
    result = loader(store).load(LoadRequest(view=view, budget=10**6, force=True))
    c_lo, c_hi = result.crop
    whole = store.read(0).positions
    inside = whole[np.all((whole >= c_lo) & (whole <= c_hi), axis=1)]
    got = {tuple(p) for p in np.asarray(result.geometry.positions).tolist()}
    assert len(inside) > 0 and {tuple(p) for p in inside.tolist()} <= got


def _random_view(rng, store) -> lod.ViewState | None:
    lo, hi = (np.asarray(b, float) for b in store.bounds)
    center = lo + rng.random(store.ndim) * (hi - lo)
    zoom = float(10 ** rng.uniform(-1, 2)) * 200 / max(float(np.max(hi - lo)), 1e-9)
    if rng.random() < 0.1:
        return None
    if store.ndim == 3 and rng.random() < 0.5:
        vd = rng.normal(size=3)
        vd /= np.linalg.norm(vd)
        up = np.cross(vd, rng.normal(size=3))
        up /= np.linalg.norm(up)
        c = tuple(center[::-1])
        return lod.ViewState(3, c, zoom, (200, 300), c, (0, 1, 2), (1.0,) * 3, tuple(vd), tuple(up))
    displayed = (1, 2) if store.ndim == 3 else (0, 1)
    thickness = tuple(float(x) for x in rng.uniform(0.5, 20, store.ndim))
    return lod.ViewState(
        2, tuple(center[::-1][-2:]), zoom, (200, 300), tuple(center[::-1]), displayed, thickness
    )


@pytest.mark.parametrize("layout", ["v07", "v09", "dense"])
def test_random_views_of_every_fixture_hold_the_budget_as_the_layers_count_it(layout):
    """Random 2-D / 3-D views, zooms, budgets, locked levels and filters over every fixture
    store: the layer data built holds exactly what the loader counted, within the budget."""
    from _zv_napari import DATA

    rng = np.random.default_rng(7)
    stores = sorted((DATA / layout).glob("*.zarrvectors"))
    assert stores
    for path in stores:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            store = nzv.open_store(path)
            ld = loader(store)
            ids = store.object_ids(0)
            for _ in range(8):
                budget = int(rng.choice([5, 30, 200, 10**6]))
                locked = None
                if rng.random() < 0.3:
                    locked = int(rng.choice([lv.index for lv in store.levels]))
                allowed = None
                if len(ids) and rng.random() < 0.3:
                    allowed = rng.choice(ids, max(1, len(ids) // 3), replace=False)
                request = LoadRequest(
                    view=_random_view(rng, store),
                    budget=budget,
                    locked=locked,
                    allowed_ids=allowed,
                    force=True,
                )
                result = ld.load(request)
                assert result.vertex_count <= budget, (path.name, request)
                assert held(result) == result.vertex_count, (path.name, request)
                if allowed is not None and result.geometry.vertex_object_ids is not None:
                    shown = set(np.asarray(result.geometry.vertex_object_ids).tolist()) - {-1}
                    if result.geometry.paths:
                        shown = set(result.geometry.path_object_ids.tolist())
                    if store.geometry_type != "mesh":  # mesh vertices carry one owner
                        assert shown <= set(np.asarray(allowed).tolist()), path.name


def test_preview_pieces_are_cropped_and_cut_to_the_budget(tiny_objects):
    from napari_zarr_vectors.napari.lod.view_geometry import pieces_to_budget

    chunks = tiny_objects.chunks(0)
    pieces = tiny_objects.read_pieces(0, chunks)
    box = (np.array([20.0, 20.0, 40.0]), np.array([80.0, 80.0, 45.0]))
    whole = pieces_to_budget(pieces, box, 10**9)
    # cropped: every segment kept meets the box
    from napari_zarr_vectors.napari.lod.view_geometry import segments_meet_box

    for p in whole.paths:
        q = whole.positions[p]
        if len(q) == 1:  # a one-vertex piece: inside
            assert np.all((q >= box[0]) & (q <= box[1]))
        else:
            assert segments_meet_box(q[:-1], q[1:], *box).all()
    assert set(whole.path_object_ids.tolist()) == {-1}
    budget = resident_vertices(whole) // 4
    cut = pieces_to_budget(pieces, box, budget)
    assert 0 < resident_vertices(cut) <= budget
    # the pieces kept are those ranked lowest (by their first stored vertex)
    assert set(map(tuple, cut.positions.tolist())) <= set(map(tuple, whole.positions.tolist()))


def test_coarse_levels_preview_objects_not_pieces(long_paths):
    """A coarse level stores one fragment per metavertex: its preview shows objects."""
    kinds = {}
    for level in (0, 1):
        ld = Loader(long_paths, ChunkCache(), batch_chunks=2)
        previews, final = run_all(
            ld, LoadRequest(budget=10**6, locked=level, progressive=True, force=True)
        )
        assert len(previews) == 1 and final.level == level
        kinds[level] = previews[0][2].share.item_kind
    assert kinds == {0: "pieces", 1: "objects"}
