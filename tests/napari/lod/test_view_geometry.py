"""Cutting a read geometry to a view (napari_zarr_vectors.napari.lod.view_geometry): crop, the
stable object subset and the count the budget bounds. Pure numpy, no Qt."""

from __future__ import annotations

import numpy as np
import pytest

from napari_zarr_vectors.format.geometry import Geometry
from napari_zarr_vectors.napari.lod import view_geometry as vg


def paths_geometry(paths_xyz, ids, kind="streamline"):
    """A path geometry from a list of (n, 3) coordinate arrays."""
    lengths = [len(p) for p in paths_xyz]
    pos = np.concatenate(paths_xyz).astype(np.float64)
    starts = np.r_[0, np.cumsum(lengths)[:-1]]
    paths = [np.arange(s, s + n) for s, n in zip(starts, lengths, strict=True)]
    return Geometry(
        geometry_type=kind,
        level=0,
        positions=pos,
        vertex_object_ids=np.repeat(np.asarray(ids), lengths),
        paths=paths,
        path_object_ids=np.asarray(ids, np.int64),
        vertex_attributes={"fa": pos[:, 0] / 100.0},
    )


def box(lo, hi):
    return np.asarray(lo, float), np.asarray(hi, float)


# --------------------------------------------------------------------------------------------
# crop
# --------------------------------------------------------------------------------------------


def test_a_path_crossing_a_2d_slab_keeps_the_segments_that_meet_it():
    # a path along z from 0 to 100 in steps of 10; the slab is z in [42, 58]
    z = np.arange(0, 101, 10.0)
    path = np.column_stack([np.full_like(z, 5.0), np.full_like(z, 5.0), z])
    g = paths_geometry([path], [7])
    out = vg.crop_geometry(g, box([-np.inf, -np.inf, 42], [np.inf, np.inf, 58]))
    # segments 40-50 and 50-60 meet the slab: vertices 40, 50, 60, one path, object 7
    assert len(out.paths) == 1 and out.path_object_ids.tolist() == [7]
    np.testing.assert_array_equal(out.positions[out.paths[0]][:, 2], [40, 50, 60])
    np.testing.assert_allclose(out.vertex_attributes["fa"], 0.05)
    assert out.vertex_object_ids.tolist() == [7, 7, 7]
    assert vg.resident_vertices(out) == 3


def test_a_segment_passing_through_the_box_is_kept_though_both_ends_are_outside():
    path = np.array([[0.0, 0, 0], [100.0, 100, 100]])
    out = vg.crop_geometry(paths_geometry([path], [1]), box([40, 40, 40], [60, 60, 60]))
    assert len(out.paths) == 1 and out.vertex_count == 2
    out = vg.crop_geometry(paths_geometry([path], [1]), box([40, 60, 0], [50, 70, 10]))
    assert out.vertex_count == 0 and out.paths == []


def test_crop_splits_an_outside_excursion_and_keeps_object_ids():
    y = np.array([0, 5, 50, 95, 100, 95, 5, 0], float)
    path = np.column_stack([np.zeros(8), y, np.zeros(8)])
    out = vg.crop_geometry(paths_geometry([path], [9]), box([-1, -1, -1], [1, 20, 1]))
    pieces = [out.positions[p][:, 1].tolist() for p in out.paths]
    # 0-5 and 5-50 meet the box, 50-95-100-95 do not, 95-5 passes through it, 5-0 is in
    assert pieces == [[0, 5, 50], [95, 5, 0]]
    assert out.path_object_ids.tolist() == [9, 9]


def test_graph_edges_meeting_the_box_are_kept_with_both_vertices():
    pos = np.array([[0.0, 0, 0], [10, 0, 0], [100, 0, 0], [200, 0, 0]])
    g = Geometry(
        "graph",
        0,
        pos,
        vertex_object_ids=np.array([1, 1, 2, 2]),
        edges=np.array([[0, 1], [1, 2], [2, 3]]),
        edge_attributes={"w": np.array([1.0, 2.0, 3.0])},
    )
    out = vg.crop_geometry(g, box([-1, -1, -1], [50, 1, 1]))
    # edges 0-1 (inside) and 1-2 (crosses x = 50) stay; 2-3 is outside
    assert out.positions[:, 0].tolist() == [0, 10, 100]
    assert out.edges.tolist() == [[0, 1], [1, 2]] and out.edge_attributes["w"].tolist() == [1, 2]
    assert vg.resident_vertices(out) == 2 * 2 + 3


def test_mesh_faces_whose_box_meets_the_crop_are_kept():
    pos = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [50, 50, 0], [51, 50, 0], [50, 51, 0]])
    g = Geometry("mesh", 0, pos, faces=np.array([[0, 1, 2], [3, 4, 5]]))
    out = vg.crop_geometry(g, box([-1, -1, -1], [2, 2, 1]))
    assert out.faces.tolist() == [[0, 1, 2]] and out.vertex_count == 3


def test_points_outside_the_box_are_dropped():
    pos = np.array([[0.0, 0, 0], [5, 5, 5], [50, 5, 5]])
    g = Geometry("point_cloud", 0, pos, vertex_attributes={"i": np.array([1, 2, 3])})
    out = vg.crop_geometry(g, box([0, 0, 0], [10, 10, 10]))
    assert out.vertex_attributes["i"].tolist() == [1, 2]


# --------------------------------------------------------------------------------------------
# ranks, ladder, subset
# --------------------------------------------------------------------------------------------


def test_ranks_are_fixed_per_id_and_uniform():
    ids = np.arange(100_000)
    r = vg.object_rank(ids)
    assert np.array_equal(r, vg.object_rank(ids))
    assert np.array_equal(vg.object_rank(ids[::-1]), r[::-1])
    assert r.min() >= 0.0 and r.max() < 1.0
    hist = np.histogram(r, bins=10, range=(0, 1))[0]
    assert np.all(np.abs(hist - 10_000) < 500)


def test_the_ladder():
    assert vg.ladder_floor(1.0) == 1.0 and vg.ladder_floor(2.0) == 1.0
    assert vg.ladder_floor(0.5) == 0.5
    assert vg.ladder_floor(0.3) == pytest.approx(2 ** (-7 / 4))  # 0.297
    assert vg.ladder_step(0.5, 4) == 1.0 and vg.ladder_step(0.25, 4) == 0.5
    assert vg.ladder_floor(0.0) == 0.0


def many_paths(n, length, seed=0):
    rng = np.random.default_rng(seed)
    starts = rng.uniform(0, 1000, (n, 1, 3))
    steps = np.cumsum(rng.normal(0, 3, (n, length, 3)), axis=1)
    return paths_geometry(list(starts + steps), np.arange(n) * 3 + 11)


@pytest.mark.parametrize(("n", "length"), [(20_000, 2), (300, 400)])
def test_the_subset_holds_the_budget_with_tiny_objects_and_long_paths(n, length):
    g = many_paths(n, length)
    for budget in (1_000, 7_777, 30_000):
        sub = vg.subset_to_budget(g, budget)
        assert vg.resident_vertices(sub.geometry) == sub.vertices_shown <= budget
        assert sub.fraction < 1.0 and sub.items_in_view == n
        # the objects shown are exactly those ranked below the fraction
        shown = np.unique(sub.geometry.path_object_ids)
        expected = np.unique(g.path_object_ids)[
            vg.object_rank(np.unique(g.path_object_ids)) < sub.fraction
        ]
        assert np.array_equal(shown, expected)
        # and the next ladder step would not have fitted
        up = vg.ladder_step(sub.fraction, 1)
        more = np.isin(g.path_object_ids, g.path_object_ids[vg.object_rank(g.path_object_ids) < up])
        assert int(np.asarray([len(p) for p in g.paths])[more].sum()) > budget


def test_the_subset_is_stable_and_only_grows_when_fewer_vertices_are_in_view():
    g = many_paths(5_000, 20)
    whole = vg.subset_to_budget(g, 20_000)
    # "zooming in": a crop holds fewer vertices, so the fraction rises and objects are added
    inner = vg.crop_geometry(g, box([200, 200, 200], [800, 800, 800]))
    zoomed = vg.subset_to_budget(inner, 20_000)
    assert zoomed.fraction >= whole.fraction
    ids_whole = set(whole.geometry.path_object_ids.tolist())
    ids_zoomed = set(zoomed.geometry.path_object_ids.tolist())
    in_inner = set(inner.path_object_ids.tolist())
    assert ids_whole & in_inner <= ids_zoomed
    # the same view twice: the same objects
    again = vg.subset_to_budget(g, 20_000)
    assert np.array_equal(again.geometry.path_object_ids, whole.geometry.path_object_ids)


def test_a_filter_and_the_subset_combine():
    g = many_paths(2_000, 10)
    allowed = g.path_object_ids[::2]
    filtered = vg.filter_geometry(g, allowed)
    sub = vg.subset_to_budget(filtered, 3_000)
    assert set(sub.geometry.path_object_ids.tolist()) <= set(allowed.tolist())
    assert sub.vertices_shown <= 3_000 and sub.items_in_view == 1_000


def test_point_clouds_thin_by_vertex_stably():
    rng = np.random.default_rng(1)
    pos = rng.uniform(0, 100, (50_000, 3))
    g = Geometry("point_cloud", 0, pos, vertex_object_ids=np.zeros(50_000, np.int64))
    sub = vg.subset_to_budget(g, 5_000)
    assert sub.kind == "vertices" and 0 < sub.vertices_shown <= 5_000
    # the points shown from a part of the cloud are the same points shown from the whole
    part = vg.crop_geometry(g, box([0, 0, 0], [50, 100, 100]))
    sub_part = vg.subset_to_budget(part, 5_000)
    assert sub_part.fraction >= sub.fraction
    shown_whole = {tuple(p) for p in sub.geometry.positions[sub.geometry.positions[:, 0] <= 50]}
    shown_part = {tuple(p) for p in sub_part.geometry.positions}
    assert shown_whole <= shown_part


def test_graphs_count_segment_ends_and_nodes():
    pos = np.arange(30, dtype=float).reshape(10, 3)
    g = Geometry(
        "skeleton",
        0,
        pos,
        vertex_object_ids=np.repeat(np.arange(5), 2),
        edges=np.arange(10).reshape(5, 2),
    )
    assert vg.resident_vertices(g) == 10 + 2 * 5
    sub = vg.subset_to_budget(g, 8)  # each object: 2 nodes + 1 edge = 4 vertices
    assert sub.vertices_shown <= 8 and sub.vertices_shown % 4 == 0
    assert len(sub.geometry.edges) == sub.vertices_shown // 4
