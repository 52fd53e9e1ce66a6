"""Where zarr-vectors 0.9.2's own reader returns wrong data, ours is right on the same store.

Each test runs the reference reader (a test-only import) and ours on one store and checks ours
against ground truth; the reference's wrong answer is asserted too (pinned to 0.9.2), so that
the test documents the difference it guards.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from _truth import coords, load_expected

import napari_zarr_vectors as nzv
from data_paths import data_root
from napari_zarr_vectors.format import ZVChunkWarning

zv = pytest.importorskip("zarr_vectors")
zv_graphs = pytest.importorskip("zarr_vectors.types.graphs")
zv_points = pytest.importorskip("zarr_vectors.types.points")
zv_meshes = pytest.importorskip("zarr_vectors.types.meshes")

V09 = data_root() / "v09"
REFERENCE_092 = getattr(zv, "__version__", "") == "0.9.2"


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def test_skeleton_bbox_does_not_invent_parent_edges(tmp_path: Path) -> None:
    """A chain zig-zagging between two chunks: every vertex of chunk x=1 has its parent in
    chunk x=0. A box over chunk 1 only must return no edge; the reference joins the chunk-1
    vertices to each other (the implicit sequential parent of the previous row), edges that
    do not exist."""
    x = np.array([1, 11, 2, 12, 3, 13, 4, 14], np.float32)
    pos = np.stack([x, 5 + 0.1 * np.arange(8), np.full(8, 5.0)], axis=1).astype(np.float32)
    edges = np.array([[i, i - 1] for i in range(1, 8)])  # (child, parent)
    path = str(tmp_path / "zigzag.zarrvectors")
    quiet(zv_graphs.write_graph, path, pos, edges, chunk_shape=(10, 10, 10), kind="skeleton")
    box = ([10, 0, 0], [19.9, 9.9, 9.9])

    ours = nzv.open_store(path).read(0, bbox=box)
    np.testing.assert_array_equal(np.sort(ours.positions[:, 0]), [11, 12, 13, 14])
    assert ours.edges.shape == (0, 2)
    full = nzv.open_store(path).read(0)  # and the whole tree is exactly the input
    truth = {(coords(pos[[c]])[0], coords(pos[[p]])[0]) for c, p in edges}
    got = {(coords(full.positions[[c]])[0], coords(full.positions[[p]])[0]) for c, p in full.edges}
    assert got == truth

    ref = quiet(zv_graphs.read_graph, path, bbox=box)
    if REFERENCE_092:
        assert len(ref["edges"]) == 3  # 12->11, 13->12, 14->13: invented


def test_binned_points_bbox_keeps_every_chunk() -> None:
    """Coarse levels of the binned 0.9 fixture (levels override chunk_shape): random boxes
    return exactly the level's points inside; the reference loses whole chunks."""
    path = V09 / "points_binned.zarrvectors"
    s = nzv.open_store(path)
    lo0, hi0 = s.bounds
    truth = np.asarray(load_expected("v09", "points_binned")["input"]["positions"], np.float32)
    assert sorted(coords(s.read(0).positions)) == sorted(coords(truth))
    rng = np.random.default_rng(7)
    reference_wrong = 0
    for level in (0, 1, 2):
        full = s.read(level).positions
        for _ in range(25):
            a, b = rng.uniform(lo0, hi0), rng.uniform(lo0, hi0)
            lo, hi = np.minimum(a, b), np.maximum(a, b)
            want = full[np.all((full >= lo) & (full <= hi), axis=1)]
            got = s.read(level, bbox=(lo, hi)).positions
            assert sorted(coords(got)) == sorted(coords(want)), (level, lo, hi)
            ref = quiet(
                zv_points.read_points, str(path), level=level, bbox=(lo.tolist(), hi.tolist())
            )
            reference_wrong += len(ref["positions"]) != len(want)
    if REFERENCE_092:
        assert reference_wrong > 10


def test_draco_mesh_reads() -> None:
    """The reference raises on the Draco edge-case store; ours returns its vertices and the
    intra-chunk faces (cross-chunk faces are in an order the store does not record)."""
    path = V09 / "edge-cases" / "mesh_draco.zarrvectors"
    if REFERENCE_092:
        with pytest.raises(Exception):  # noqa: B017 - whatever the reference raises
            quiet(zv_meshes.read_mesh, str(path))
    with pytest.warns(ZVChunkWarning, match="pre-Draco"):
        g = nzv.open_store(path).read(0)
    inp = load_expected("v09", "mesh")["input"]
    verts = np.asarray(inp["vertices"], np.float32).reshape(-1, 3)
    assert len(g.positions) == len(verts)
    d = np.abs(g.positions[:, None, :].astype(np.float64) - verts[None]).max(axis=2)
    nearest = d.argmin(axis=1)
    assert d.min(axis=1).max() < 0.05 and len(set(nearest.tolist())) == len(verts)
    faces = {tuple(np.roll(f, -int(np.argmin(f)))) for f in np.asarray(inp["faces"])}
    ours = [tuple(np.roll(nearest[f], -int(np.argmin(nearest[f])))) for f in g.faces]
    assert len(ours) > 0 and set(ours) <= faces
