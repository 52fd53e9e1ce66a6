"""Level-of-detail planning (napari_zarr_vectors.napari.lod.plan): pure functions, no Qt."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from napari_zarr_vectors.napari.lod import plan as lod


def view2d(center, zoom, canvas=(100, 200), point=(5.0, 0.0, 0.0), thickness=(2.0, 0, 0)):
    return lod.ViewState(
        ndisplay=2,
        center=center,
        zoom=zoom,
        canvas_size=canvas,
        point=point,
        displayed=(1, 2),
        thickness=thickness,
    )


def grid_chunks(n: int) -> np.ndarray:
    g = np.stack(np.meshgrid(*[np.arange(n)] * 3, indexing="ij"), -1).reshape(-1, 3)
    return g.astype(np.int64)


def level(index, bin_edge, chunk_edge, count):
    return SimpleNamespace(
        index=index,
        bin_shape=np.full(3, float(bin_edge)),
        chunk_shape=np.full(3, float(chunk_edge)),
        vertex_count=count,
    )


# --------------------------------------------------------------------------------------------
# visible box
# --------------------------------------------------------------------------------------------


def test_2d_box_is_the_canvas_around_the_centre_and_the_slab():
    # canvas 100 x 200 px at zoom 2 -> 50 x 100 world units around (row 40, column 60)
    lo, hi = lod.visible_box(view2d((40.0, 60.0), 2.0), np.zeros(3), np.full(3, 1000.0))
    np.testing.assert_allclose(lo, [4.0, 15.0, 10.0])
    np.testing.assert_allclose(hi, [6.0, 65.0, 110.0])


def test_2d_box_is_clipped_to_the_extent_and_empty_outside_it():
    lo, hi = lod.visible_box(view2d((0.0, 0.0), 1.0), np.zeros(3), np.full(3, 10.0))
    np.testing.assert_allclose(lo, [4.0, 0.0, 0.0])
    np.testing.assert_allclose(hi, [6.0, 10.0, 10.0])
    far = lod.visible_box(view2d((500.0, 500.0), 1.0), np.zeros(3), np.full(3, 10.0))
    assert lod.is_empty(far)


def test_2d_box_follows_the_displayed_axes():
    view = lod.ViewState(2, (40.0, 60.0), 2.0, (100, 200), (0.0, 7.0, 0.0), (0, 2), (0, 4.0, 0))
    lo, hi = lod.visible_box(view, np.zeros(3), np.full(3, 1000.0))
    np.testing.assert_allclose(lo, [15.0, 5.0, 10.0])
    np.testing.assert_allclose(hi, [65.0, 9.0, 110.0])


def test_3d_box_is_the_whole_extent_when_the_camera_sees_it_all():
    view = lod.ViewState(3, (5.0, 5.0, 5.0), 10.0, (400, 400), (0,) * 3, (0, 1, 2), (0,) * 3,
                         (-1.0, 0.0, 0.0), (0.0, -1.0, 0.0))  # fmt: skip
    lo, hi = lod.visible_box(view, np.zeros(3), np.full(3, 10.0))
    np.testing.assert_allclose(lo, 0.0)
    np.testing.assert_allclose(hi, 10.0)


def test_3d_box_zoomed_in_keeps_the_depth_and_crops_the_screen_axes():
    # looking down axis 0: the screen shows axes 1 (up) and 2 (right), the depth stays whole
    view = lod.ViewState(3, (50.0, 20.0, 20.0), 10.0, (100, 100), (0,) * 3, (0, 1, 2), (0,) * 3,
                         (-1.0, 0.0, 0.0), (0.0, -1.0, 0.0))  # fmt: skip
    lo, hi = lod.visible_box(view, np.zeros(3), np.full(3, 100.0))
    np.testing.assert_allclose(lo, [0.0, 15.0, 15.0], atol=1e-9)  # 5 units either side of 20
    np.testing.assert_allclose(hi, [100.0, 25.0, 25.0], atol=1e-9)


def test_3d_box_of_an_oblique_view_is_the_box_of_the_prism_inside_the_extent():
    # looking along (-0.6, 0.8, 0) through (50, 20, 20); the prism is 10 units wide
    view = lod.ViewState(3, (50.0, 20.0, 20.0), 10.0, (100, 100), (0,) * 3, (0, 1, 2), (0,) * 3,
                         (-0.6, 0.8, 0.0), (0.0, 0.0, -1.0))  # fmt: skip
    lo, hi = lod.visible_box(view, np.zeros(3), np.full(3, 100.0))
    # axis 2 is "up": 20 +- 5; in the (0, 1) plane a band of half-width 5 around the line
    # 0.8 * (a0 - 50) + 0.6 * (a1 - 20) = 0, clipped to the extent
    np.testing.assert_allclose(lo, [0.0, 0.0, 15.0], atol=1e-9)
    np.testing.assert_allclose(hi, [71.25, 95.0, 25.0], atol=1e-9)
    missed = lod.ViewState(3, (500.0, 20.0, 20.0), 10.0, (100, 100), (0,) * 3, (0, 1, 2),
                           (0,) * 3, (-0.6, 0.8, 0.0), (0.0, 0.0, -1.0))  # fmt: skip
    assert lod.is_empty(lod.visible_box(missed, np.zeros(3), np.full(3, 100.0)))


def test_perspective_3d_views_load_the_whole_extent():
    view = lod.ViewState(3, (50.0, 20.0, 20.0), 10.0, (100, 100), (0,) * 3, (0, 1, 2), (0,) * 3,
                         (-1.0, 0.0, 0.0), (0.0, -1.0, 0.0), perspective=30.0)  # fmt: skip
    lo, hi = lod.visible_box(view, np.zeros(3), np.full(3, 100.0))
    np.testing.assert_allclose(lo, 0.0)
    np.testing.assert_allclose(hi, 100.0)


def test_a_diagonal_3d_view_keeps_only_the_chunks_its_prism_crosses():
    # looking along the cube diagonal through the centre of [0, 80)^3 (chunks of 10)
    vd = np.array([-1.0, 1.0, 1.0]) / np.sqrt(3)
    up = np.array([0.0, -1.0, 1.0]) / np.sqrt(2)
    view = lod.ViewState(3, (40.0, 40.0, 40.0), 10.0, (100, 100), (0,) * 3, (0, 1, 2),
                         (0,) * 3, tuple(vd), tuple(up))  # fmt: skip
    prism = lod.Prism.of_view(view)
    chunks = grid_chunks(8)
    kept = lod.chunks_in_prism(chunks, np.full(3, 10.0), prism)
    # exact: a chunk is kept when the linear program "a point of the chunk in the prism"
    # is feasible
    from scipy.optimize import linprog

    right = np.cross(vd, up)[::-1]
    a_ub = np.array([right, -right, up[::-1], -up[::-1]])
    b_ub = np.array([5.0, 5.0, 5.0, 5.0]) + a_ub @ np.full(3, 40.0)
    want = set()
    for c in chunks.tolist():
        bounds = [(10.0 * v, 10.0 * v + 10.0) for v in c]
        if linprog(np.zeros(3), A_ub=a_ub, b_ub=b_ub, bounds=bounds).status == 0:
            want.add(tuple(c))
    assert {tuple(c) for c in kept.tolist()} == want
    assert 0 < len(want) < len(chunks) // 4
    assert lod.Prism.of_view(view2d((0.0, 0.0), 1.0)) is None


def test_grow_box_grows_only_the_given_axes():
    lo, hi = lod.grow_box((np.array([0.0, 10.0]), np.array([10.0, 30.0])), [1], 0.1)
    np.testing.assert_allclose(lo, [0.0, 8.0])
    np.testing.assert_allclose(hi, [10.0, 32.0])


# --------------------------------------------------------------------------------------------
# chunks
# --------------------------------------------------------------------------------------------


def test_chunks_in_box_are_the_chunks_the_box_touches():
    chunks = grid_chunks(4)  # edge 10 -> [0, 40)^3
    got = lod.chunks_in_box(chunks, np.full(3, 10.0), np.array([5.0, 0, 0]), np.array([15.0, 9, 9]))
    assert {tuple(c) for c in got} == {(0, 0, 0), (1, 0, 0)}
    # a box ending exactly on a chunk edge touches the next chunk (inclusive boxes)
    got = lod.chunks_in_box(chunks, np.full(3, 10.0), np.zeros(3), np.full(3, 10.0))
    assert len(got) == 8
    assert len(lod.chunks_in_box(chunks, np.full(3, 10.0), np.ones(3), np.zeros(3))) == 0


def test_chunks_in_box_matches_the_spatial_part_of_attribute_keys():
    chunks = np.array([[0, 0, 0, 0], [1, 0, 0, 0], [0, 5, 5, 5]])
    got = lod.chunks_in_box(chunks, np.full(3, 10.0), np.zeros(3), np.full(3, 9.0))
    assert got.tolist() == [[0, 0, 0, 0], [1, 0, 0, 0]]


def test_crop_fraction_is_the_part_of_each_chunk_inside_the_crop():
    chunks = np.array([[0, 0, 0], [0, 0, 1], [0, 0, 5]])
    crop = (np.array([-np.inf, -np.inf, 7.5]), np.array([np.inf, np.inf, 12.5]))
    np.testing.assert_allclose(lod.crop_fraction(chunks, np.full(3, 10.0), crop), [0.25, 0.25, 0])
    np.testing.assert_allclose(lod.crop_fraction(chunks, np.full(3, 10.0), None), 1.0)


def test_trim_to_budget_keeps_the_chunks_nearest_the_centre():
    chunks = np.array([[0, 0, 0], [5, 0, 0], [1, 0, 0], [9, 0, 0]])
    kept, est = lod.trim_to_budget(chunks, np.full(4, 10.0), np.full(3, 10.0), np.zeros(3), 25)
    assert kept.tolist() == [[0, 0, 0], [1, 0, 0]]  # original order, two nearest
    assert est.sum() == 20
    kept, _ = lod.trim_to_budget(chunks, np.full(4, 10.0), np.full(3, 10.0), None, 1000)
    assert len(kept) == 4


# --------------------------------------------------------------------------------------------
# levels
# --------------------------------------------------------------------------------------------

LEVELS = [level(0, 1.0, 10.0, 64_000), level(1, 2.0, 10.0, 8_000), level(2, 4.0, 20.0, 1_000)]
CHUNKS = [grid_chunks(4), grid_chunks(4), grid_chunks(2)]  # 64 / 64 / 8 chunks
WHOLE = (np.zeros(3), np.full(3, 39.0))


def test_an_over_budget_view_keeps_its_level_and_reads_a_ladder_fraction_of_the_objects():
    plan = lod.plan_level(LEVELS, CHUNKS, WHOLE, pixel_size=0.01, budget=10_000)
    # resolution decides the level (0); the budget decides the part of the objects read
    assert plan.level == 0 and len(plan.chunks) == 64 and plan.estimated_vertices == 64_000
    assert plan.fraction == pytest.approx(2 ** (-11 / 4))  # largest step <= 10,000 / 64,000
    assert plan.fraction * 64_000 <= 10_000
    whole = lod.plan_level(LEVELS, CHUNKS, WHOLE, 0.01, budget=100_000)
    assert whole.level == 0 and whole.fraction == 1.0
    # a filter letting a quarter of the objects through needs a larger fraction of them
    quarter = lod.plan_level(LEVELS, CHUNKS, WHOLE, 0.01, budget=10_000, share=0.25)
    assert quarter.estimated_vertices == 16_000 and quarter.fraction > plan.fraction


def test_a_small_view_gets_the_finest_level():
    corner = (np.zeros(3), np.full(3, 9.0))  # one level-0 chunk: 1,000 vertices
    plan = lod.plan_level(LEVELS, CHUNKS, corner, pixel_size=0.01, budget=10_000)
    assert plan.level == 0 and plan.chunks.tolist() == [[0, 0, 0]] and plan.fraction == 1.0


def test_zoomed_out_views_get_the_coarsest_level_whose_bins_are_a_few_pixels():
    # 1 world unit per pixel: bins of 1, 2 and 4 units are 1, 2, 4 pixels -> level 2
    assert lod.plan_level(LEVELS, CHUNKS, WHOLE, pixel_size=1.0, budget=10**9).level == 2
    # 0.5 units per pixel: bins 2, 4, 8 pixels -> level 1 is the coarsest within 4 pixels
    assert lod.plan_level(LEVELS, CHUNKS, WHOLE, pixel_size=0.5, budget=10**9).level == 1
    # the budget never moves it: a tiny budget at 0.5 units per pixel stays at level 1
    assert lod.plan_level(LEVELS, CHUNKS, WHOLE, pixel_size=0.5, budget=10).level == 1
    assert lod.resolution_level(LEVELS, 0.5) == 1 and lod.resolution_level(LEVELS, 0.01) == 0


def test_a_locked_level_is_shown_whatever_the_zoom_and_budget():
    plan = lod.plan_level(LEVELS, CHUNKS, WHOLE, 0.01, budget=10**9, locked=2)
    assert plan.level == 2 and len(plan.chunks) == 8 and plan.fraction == 1.0
    small = lod.plan_level(LEVELS, CHUNKS, WHOLE, 5.0, budget=500, locked=0)
    assert small.level == 0 and len(small.chunks) == 64 and small.fraction <= 500 / 64_000
    with pytest.raises(KeyError):
        lod.plan_level(LEVELS, CHUNKS, WHOLE, 0.01, locked=7)


def test_a_view_over_the_read_cap_reads_the_chunks_nearest_its_centre():
    plan = lod.plan_level(
        LEVELS, CHUNKS, WHOLE, 0.01, budget=10**9, center=np.zeros(3), read_cap=5_000
    )
    assert plan.level == 0 and len(plan.chunks) == 5 and plan.trimmed == 59
    assert [0, 0, 0] in plan.chunks.tolist()


def test_learnt_counts_and_crops_change_the_estimate():
    crop = (np.array([-np.inf, -np.inf, 0.0]), np.array([np.inf, np.inf, 2.5]))  # 1/4 layer
    plan = lod.plan_level(LEVELS, CHUNKS, WHOLE, 0.01, budget=5_000, crop=crop)
    # level 0: 16 chunks in the first z layer x 1,000 vertices x 1/4 = 4,000
    assert plan.level == 0 and len(plan.chunks) == 64 and plan.estimated_vertices == 4_000
    assert plan.fraction == 1.0
    counts = {(0, tuple(c)): 0 for c in CHUNKS[0].tolist()}
    plan = lod.plan_level(LEVELS, CHUNKS, WHOLE, 0.01, budget=10, counts=counts)
    assert plan.level == 0 and plan.estimated_vertices == 0 and plan.fraction == 1.0


def test_snapped_boxes_do_not_change_for_small_pans():
    box = (np.array([0.0, 100.0, 100.0]), np.array([10.0, 300.0, 500.0]))
    a = lod.snap_box(box, [1, 2])
    b = lod.snap_box((box[0] + [0, 3, 3], box[1] + [0, 3, 3]), [1, 2])
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert a[0][0] == 0.0 and a[1][0] == 10.0  # the slab axis is left exact
    assert np.all(a[0] <= box[0]) and np.all(a[1] >= box[1])  # only ever grows
    c = lod.snap_box((box[0] + [0, 40, 40], box[1] + [0, 40, 40]), [1, 2])
    assert not np.array_equal(a[0], c[0])  # a larger pan moves it


def test_initial_level_is_the_finest_whole_level_within_budget():
    assert lod.initial_level(LEVELS, 10_000) == 1
    assert lod.initial_level(LEVELS, 100_000) == 0
    assert lod.initial_level(LEVELS, 10) == 2
    unknown = [
        SimpleNamespace(index=0, vertex_count=None),
        SimpleNamespace(index=1, vertex_count=5),
    ]
    assert lod.initial_level(unknown, 10) == 1
    assert lod.initial_level(unknown[:1], 10) == 0
    assert lod.initial_level([], 10) == 0
