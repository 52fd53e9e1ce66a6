"""Axis types and composite stores written by zarr-vectors 0.9.2."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import napari_zarr_vectors as nzv
from napari_zarr_vectors.format.api import GeometryStore

zv = pytest.importorskip("zarr_vectors")
composite = pytest.importorskip("zarr_vectors.composite")
from zarr_vectors import Axis, Layout, Schema  # noqa: E402

from composite_stores import EDGES, NODES, write_composite  # noqa: E402


def _rows(a) -> set[tuple[float, ...]]:
    return {tuple(map(float, r)) for r in np.asarray(a, np.float32)}


def write_points_t(path, positions, bounds, cell):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = zv.create(
            str(path),
            schema=Schema(
                4,
                bounds,
                axes=(
                    Axis("t", "second", "time"),
                    Axis("x", "micrometer"),
                    Axis("y", "micrometer"),
                    Axis("z", "micrometer"),
                ),
                layout=Layout(cell_size=cell),
                kind="point_cloud",
            ),
        )
        ds.add_points(positions)


def test_axis_types_of_a_time_lapse_and_every_vertex_with_its_time(tmp_path):
    rng = np.random.default_rng(0)
    pos = np.column_stack([rng.integers(0, 5, 300), rng.uniform(0, 100, (300, 3))])
    path = tmp_path / "t.zarrvectors"
    write_points_t(
        path, pos.astype(np.float32), ((0, 0, 0, 0), (4, 100, 100, 100)), (1, 50, 50, 50)
    )
    s = nzv.open_store(path)
    assert s.axes == ["t", "x", "y", "z"]
    assert s.axis_types == ["time", "space", "space", "space"]
    assert s.units == ["second", "micrometer", "micrometer", "micrometer"]
    assert s.geometry_types == ["point_cloud"]
    assert _rows(s.read().positions) == _rows(pos)
    # a time slab is a bbox along t: chunked by one time unit, only that time's chunks
    g = s.read(bbox=[[2, 0, 0, 0], [2, 100, 100, 100]])
    assert _rows(g.positions) == _rows(pos[pos[:, 0] == 2])
    assert set(np.asarray(g.chunks)[:, 0].tolist()) == {2}


def test_composite_store_lists_and_reads_each_geometry(tmp_path):
    rng = np.random.default_rng(1)
    points = rng.uniform(0, 100, (200, 3)).astype(np.float32)
    path = tmp_path / "c.zarrvectors"
    write_composite(path, points)
    s = nzv.open_store(path)
    assert s.geometry_types == ["point_cloud", "graph"]
    assert s.geometry_type == "point_cloud"
    # the default read is the store's own geometry, unchanged
    assert _rows(s.read().positions) == _rows(points)
    assert _rows(s.read(geometry_type="point_cloud").positions) == _rows(points)
    g = s.read(geometry_type="graph")
    assert g.geometry_type == "graph"
    assert _rows(g.positions) == _rows(NODES)
    pairs = {(tuple(g.positions[a]), tuple(g.positions[b])) for a, b in g.edges}
    assert pairs == {
        (tuple(NODES[a].astype(float)), tuple(NODES[b].astype(float))) for a, b in EDGES
    }
    # a bbox keeps the vertices inside and the edges between them
    g = s.read(geometry_type="graph", bbox=[[0, 0, 0], [25, 25, 25]])
    assert _rows(g.positions) == _rows(NODES[:2])
    assert len(g.edges) == 1
    view = s.geometry("graph")
    assert view.geometry_type == "graph" and view.levels[0].vertex_count == 4
    assert view.axes == s.axes and view.bounds is s.bounds
    assert view.object_ids(0).size == 0
    with pytest.raises(KeyError, match="geometry_types"):
        s.read(geometry_type="mesh")


def test_an_added_geometry_the_reader_cannot_read_is_named(tmp_path):
    rng = np.random.default_rng(2)
    path = tmp_path / "c.zarrvectors"
    lines = [rng.uniform(0, 100, (5, 3)).astype(np.float32) for _ in range(3)]
    write_composite(
        path,
        rng.uniform(0, 100, (50, 3)).astype(np.float32),
        [("streamline", {"polylines": lines})],
    )
    s = nzv.open_store(path)
    assert s.geometry_types == ["point_cloud", "graph", "streamline"]
    with pytest.raises(nzv.ZVFormatError, match="streamline"):
        s.geometry("streamline")


def test_an_added_mesh_keeps_its_faces_across_chunks(tmp_path):
    rng = np.random.default_rng(3)
    path = tmp_path / "c.zarrvectors"
    faces = np.array([[0, 1, 2], [1, 2, 3]])
    write_composite(
        path,
        rng.uniform(0, 100, (20, 3)).astype(np.float32),
        [("mesh", {"positions": NODES, "faces": faces})],
    )
    s = nzv.open_store(path)
    assert s.geometry_types == ["point_cloud", "graph", "mesh"]
    g = s.read(geometry_type="mesh")
    # the last vertex lies in another chunk: the second face spans two chunks
    assert len(np.unique(g.chunks, axis=0)) == 2
    got = {tuple(tuple(map(float, g.positions[i])) for i in f) for f in g.faces}
    want = {tuple(tuple(map(float, NODES[i])) for i in f) for f in faces}
    assert got == want


def test_pyramid_statistics_of_an_added_geometry(tmp_path):
    """Pyramid QA's statistics and link lists work on an added geometry (it has no layout:
    no per-level vertex documents, stored sizes or cross-level links)."""
    from napari_zarr_vectors.format import pyramid

    path = tmp_path / "mixed.zarrvectors"
    write_composite(path, np.random.default_rng(2).uniform(0, 100, (50, 3)).astype(np.float32))
    graph = nzv.open_store(path).geometry("graph")
    (row,) = pyramid.level_statistics(graph)
    assert row["level"] == 0 and row["chunks"] == len(graph.chunks(0)) > 0
    assert row["stored_bytes"] is None  # not listed for an added geometry
    assert pyramid.cross_level_deltas(graph, 0) == []


def test_a_store_and_its_added_geometry_implement_the_geometry_store_api(tmp_path):
    path = tmp_path / "c.zarrvectors"
    write_composite(path, np.array([[5.0, 5.0, 5.0]], np.float32))
    s = nzv.open_store(path)
    view = s.geometry("graph")
    assert isinstance(s, GeometryStore) and isinstance(view, GeometryStore)
    assert s.geometry("point_cloud") is s
    # the metadata is the parent's own
    assert (view.path, view.name, view.ndim, view.generation) == (s.path, s.name, 3, "0.9")
    assert view.axes == s.axes and view.units == s.units
    assert np.array_equal(view.chunk_shape, s.chunk_shape)
    # path pieces: neither geometry is a path type, both refuse alike
    for reader in (s, view):
        with pytest.raises(ValueError, match="read_pieces reads polylines and streamlines"):
            reader.read_pieces(0, reader.chunks(0))
    # the read scope of the view is the parent's: a read inside it reads the same data
    with view.reading(None):
        assert _rows(view.read().positions) == _rows(NODES)
