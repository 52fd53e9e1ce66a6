"""Paths simplified to the screen (napari_zarr_vectors.napari.lod.simplify): endpoints
kept, order and ids kept, every original vertex within the tolerance of the simplified
polyline, all paths in one vectorised pass."""

from __future__ import annotations

import numpy as np
import pytest

from napari_zarr_vectors.format.geometry import Geometry, flat_paths, split_lengths
from napari_zarr_vectors.napari.lod import simplify
from napari_zarr_vectors.napari.lod.simplify import (
    simplify_geometry,
    simplify_rows,
    tolerance_band,
)


def walks(n: int, length: int, step: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Packed random walks of random lengths in ``[1, length]``: (positions, lengths)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, length + 1, n)
    pos = np.cumsum(rng.normal(0, step, (int(lengths.sum()), 3)), axis=0)
    return pos, lengths


def distance_to_polyline(points: np.ndarray, line: np.ndarray) -> np.ndarray:
    """Distance of each of ``points`` to the polyline ``line`` (brute force)."""
    if len(line) == 1:
        return np.linalg.norm(points - line[0], axis=1)
    a, b = line[:-1], line[1:]
    d = b - a
    p = points[:, None, :] - a[None]
    dd = np.einsum("ij,ij->i", d, d)
    t = np.clip(np.einsum("kij,ij->ki", p, d) / np.where(dd > 0, dd, 1.0), 0, 1)
    off = p - t[..., None] * d[None]
    return np.sqrt(np.einsum("kij,kij->ki", off, off)).min(axis=1)


@pytest.mark.parametrize("tolerance", [0.3, 1.0, 4.0])
def test_every_vertex_lies_within_the_tolerance_and_endpoints_stay(tolerance):
    pos, lengths = walks(300, 60, 1.0)
    keep = simplify_rows(pos, lengths, tolerance)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    assert keep[starts].all() and keep[ends - 1].all()
    assert 0 < keep.sum() < len(pos)  # it does simplify
    worst = 0.0
    for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
        original, kept = pos[a:b], pos[a:b][keep[a:b]]
        worst = max(worst, float(distance_to_polyline(original, kept).max()))
    assert worst <= tolerance * (1 + 1e-9)
    # and not far below: the tolerance is what it spends (a vertex more would be needed at
    # a smaller one)
    assert worst > 0.5 * tolerance


def test_straight_and_repeated_vertices_go_corners_stay():
    line = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0], [2, 0, 0], [3, 0, 0], [3, 5, 0], [3, 9, 0]])
    keep = simplify_rows(line.astype(float), np.array([len(line)]), 0.5)
    assert keep.tolist() == [True, False, False, False, True, False, True]


def test_no_tolerance_keeps_everything_and_single_vertex_paths_stay():
    pos, lengths = walks(50, 10, 1.0, seed=3)
    assert simplify_rows(pos, lengths, 0.0).all()
    keep = simplify_rows(np.zeros((3, 3)), np.array([1, 1, 1]), 5.0)
    assert keep.all()


def test_the_geometry_keeps_its_paths_order_and_ids():
    pos, lengths = walks(200, 40, 1.0, seed=1)
    order = np.random.default_rng(2).permutation(len(pos))  # paths index rows anywhere
    rows = np.empty(len(pos), np.int64)
    rows[order] = np.arange(len(pos))
    positions = np.empty_like(pos)
    positions[rows] = pos
    ids = np.arange(len(lengths), dtype=np.int64) * 7 + 3
    g = Geometry(
        "streamline",
        0,
        positions.astype(np.float32),
        paths=split_lengths(rows, lengths),
        path_object_ids=ids,
    )
    out = simplify_geometry(g, 1.0)
    assert out.tolerance == 1.0 and out.rows_before == len(pos) > out.rows_after
    assert np.array_equal(out.geometry.path_object_ids, ids)
    assert out.geometry.positions is g.positions  # the arrays are not copied
    new_rows, new_lengths = flat_paths(out.geometry.paths)
    assert len(new_lengths) == len(lengths) and out.rows_after == len(new_rows)
    for old, new in zip(g.paths, out.geometry.paths, strict=True):
        assert new[0] == old[0] and new[-1] == old[-1]
        position = {int(r): i for i, r in enumerate(old)}
        assert np.all(np.diff([position[int(r)] for r in new]) > 0)  # order kept


def test_other_geometries_are_left_alone():
    g = Geometry("line", 0, np.zeros((4, 3)), paths=[np.arange(4)], path_object_ids=np.zeros(1))
    assert simplify_geometry(g, 10.0).geometry is g


def test_it_is_one_pass_over_all_paths_not_a_loop_per_path(monkeypatch):
    """The rounds are as many as the deepest split, whatever the number of paths."""
    calls = []
    real = np.maximum.reduceat

    class Counting:
        def reduceat(self, *args, **kwargs):
            calls.append(1)
            return real(*args, **kwargs)

    monkeypatch.setattr(simplify.np, "maximum", Counting())
    few = walks(10, 50, 1.0, seed=4)
    many = (np.tile(few[0], (200, 1)), np.tile(few[1], 200))  # 200 copies of the same paths
    simplify_rows(*few, 1.0)
    rounds_few = len(calls)
    calls.clear()
    simplify_rows(*many, 1.0)
    assert 0 < len(calls) == rounds_few < 60


def test_the_tolerance_band_is_a_power_of_two_at_most_the_pixels():
    assert tolerance_band(1.3) == 1.0 and tolerance_band(0.7) == 0.5
    assert tolerance_band(4.0) == 4.0 and tolerance_band(0.0) == 0.0
    assert tolerance_band(3.0, pixels=0.5) == 1.0
