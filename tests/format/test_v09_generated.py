"""Stores written by zarr-vectors 0.9.2 from random inputs read back exactly.

Each example draws a numpy seed and a few sizes, builds an input, writes it with the real
0.9.2 writer into a temporary directory and checks that our read equals the input. The
writer reorders vertices (chunk-major, per object), so geometry is compared through
coordinates: multisets of vertices with their attributes, paths in order, edges as ordered
coordinate pairs, faces with their winding. Positions are distinct (drawn on a jittered grid)
so that a coordinate identifies its input vertex.
"""

from __future__ import annotations

import tempfile
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from napari_zarr_vectors.format import ZVChunkWarning, open_store

zv_points = pytest.importorskip("zarr_vectors.types.points")
zv_polylines = pytest.importorskip("zarr_vectors.types.polylines")
zv_graphs = pytest.importorskip("zarr_vectors.types.graphs")
zv_meshes = pytest.importorskip("zarr_vectors.types.meshes")

CHUNK = (20.0, 20.0, 20.0)
SETTINGS = settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=False,
)


def coords(positions) -> list[tuple[float, ...]]:
    return [tuple(float(x) for x in r) for r in np.asarray(positions, dtype=np.float32)]


def val(v):
    a = np.asarray(v)
    if a.dtype.kind == "f":
        a = a.astype(np.float32)
    return a.item() if a.ndim == 0 else tuple(a.tolist())


def rotate(face: tuple) -> tuple:
    i = min(range(len(face)), key=lambda k: face[k])
    return tuple(face[i:]) + tuple(face[:i])


def distinct_positions(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` distinct float32 points in [-40, 60)³, spread over several 20³ chunks."""
    cells = rng.choice(20**3, size=n, replace=False)
    grid = np.stack(np.unravel_index(cells, (20, 20, 20)), axis=1).astype(np.float64)
    return (grid * 5.0 - 40.0 + rng.uniform(0.1, 4.9, (n, 3))).astype(np.float32)


def _object_positions(s, oid: int) -> np.ndarray:
    """The vertices of one object read through its manifest (path order for paths)."""
    g = s.read(0, object_ids=[oid])
    if g.paths:
        return np.concatenate([g.positions[p] for p in g.paths])
    return g.positions


def write_and_read(write, *args, **kwargs):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gen.zarrvectors"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            write(str(path), *args, **kwargs)
        s = open_store(path)
        assert s.generation == "0.9"
        with warnings.catch_warnings():
            warnings.simplefilter("error", ZVChunkWarning)
            geom = s.read(0)
            extra = {
                "object_attributes": s.object_attributes(0),
                "groups": s.groups(0),
                "group_attributes": s.group_attributes(0),
                "objects": {int(o): _object_positions(s, int(o)) for o in s.object_ids(0)},
                "chunks": s.chunks(0),
            }
        return geom, extra


@SETTINGS
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 80),
    n_objects=st.integers(1, 6),
    shard=st.booleans(),
)
def test_points_with_attributes_objects_and_groups(seed, n, n_objects, shard):
    rng = np.random.default_rng(seed)
    pos = distinct_positions(rng, n)
    oid = rng.integers(0, n_objects, n)
    oid[: min(n, n_objects)] = np.arange(min(n, n_objects))  # every object has a vertex
    n_obj = int(oid.max()) + 1
    intensity = rng.random(n).astype(np.float32)
    rgb = rng.integers(0, 255, (n, 3)).astype(np.uint8)
    label = rng.integers(-5, 100, n_obj).astype(np.int32)
    groups = {0: sorted(set(rng.integers(0, n_obj, 3).tolist()))}
    geom, extra = write_and_read(
        zv_points.write_points,
        pos,
        chunk_shape=CHUNK,
        bounds=([-40.0] * 3, [60.0] * 3),
        vertex_attributes={"intensity": intensity, "rgb": rgb},
        object_ids=oid,
        object_attributes={"label": label},
        groups=groups,
        group_attributes={"w": np.array([1.5], np.float32)},
        shard_shape=(2, 2, 2) if shard else None,
    )
    want = Counter(
        (c, val(intensity[i]), val(rgb[i]), int(oid[i])) for i, c in enumerate(coords(pos))
    )
    got = Counter(
        (c, val(geom.vertex_attributes["intensity"][i]), val(geom.vertex_attributes["rgb"][i]),
         int(geom.vertex_object_ids[i]))
        for i, c in enumerate(coords(geom.positions))
    )  # fmt: skip
    assert got == want
    np.testing.assert_array_equal(extra["object_attributes"]["label"], label)
    assert {g: m.tolist() for g, m in extra["groups"].items()} == groups
    np.testing.assert_array_equal(extra["group_attributes"]["w"], [1.5])
    for o, opos in extra["objects"].items():
        assert Counter(coords(opos)) == Counter(coords(pos[oid == o]))
    expected_chunks = np.unique(np.floor(pos / np.array(CHUNK)).astype(np.int64), axis=0)
    np.testing.assert_array_equal(extra["chunks"], expected_chunks)


@SETTINGS
@given(
    seed=st.integers(0, 2**32 - 1),
    n_lines=st.integers(1, 6),
    channels=st.sampled_from([1, 2, 3]),
)
def test_polylines_keep_their_order_and_attributes(seed, n_lines, channels):
    rng = np.random.default_rng(seed)
    lines, attrs = [], []
    for _ in range(n_lines):
        k = int(rng.integers(2, 15))
        start = rng.uniform(-30, 50, 3)
        walk = start + np.cumsum(rng.normal(0, 6, (k, 3)), axis=0)
        lines.append(np.clip(walk, -39.9, 59.9).astype(np.float32))
        shape = (k,) if channels == 1 else (k, channels)
        attrs.append(rng.random(shape).astype(np.float32))
    geom, extra = write_and_read(
        zv_polylines.write_polylines,
        lines,
        chunk_shape=CHUNK,
        bounds=([-40.0] * 3, [60.0] * 3),
        vertex_attributes={"c": attrs},
        object_attributes={"len": np.arange(n_lines, dtype=np.float32)},
    )
    assert geom.path_object_ids.tolist() == list(range(n_lines))
    assert len(geom.paths) == n_lines
    for i, p in enumerate(geom.paths):
        np.testing.assert_array_equal(geom.positions[p], lines[i])
        np.testing.assert_array_equal(geom.vertex_attributes["c"][p], attrs[i])
        np.testing.assert_array_equal(extra["objects"][i], lines[i])
    np.testing.assert_array_equal(extra["object_attributes"]["len"], np.arange(n_lines))


@SETTINGS
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 60),
    m=st.integers(1, 120),
)
def test_graph_edges_and_edge_attributes(seed, n, m):
    rng = np.random.default_rng(seed)
    pos = distinct_positions(rng, n)
    u = rng.integers(0, n, m)
    v = (u + rng.integers(1, n, m)) % n  # no self loops; duplicates allowed
    edges = np.stack([u, v], axis=1)
    weight = rng.random(m).astype(np.float32)
    oid = rng.integers(0, 3, n)
    geom, _ = write_and_read(
        zv_graphs.write_graph,
        pos,
        edges,
        chunk_shape=CHUNK,
        bounds=([-40.0] * 3, [60.0] * 3),
        link_attributes={"weight": weight},
        vertex_attributes={"r": np.arange(n, dtype=np.float32)},
        object_ids=oid,
    )
    c_in = coords(pos)
    want = Counter((c_in[a], c_in[b], val(w)) for (a, b), w in zip(edges, weight, strict=True))
    c = coords(geom.positions)
    got = Counter(
        (c[a], c[b], val(w))
        for (a, b), w in zip(geom.edges.tolist(), geom.edge_attributes["weight"], strict=True)
    )
    assert got == want
    r = geom.vertex_attributes["r"].astype(np.int64)
    np.testing.assert_array_equal(geom.positions, pos[r])
    np.testing.assert_array_equal(geom.vertex_object_ids, oid[r])


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 60))
def test_skeleton_child_parent_edges(seed, n):
    rng = np.random.default_rng(seed)
    pos = distinct_positions(rng, n)
    parent = np.array([int(rng.integers(0, i)) for i in range(1, n)], dtype=np.int64)
    edges = np.stack([np.arange(1, n), parent], axis=1)
    geom, _ = write_and_read(
        zv_graphs.write_graph,
        pos,
        edges,
        chunk_shape=CHUNK,
        bounds=([-40.0] * 3, [60.0] * 3),
        kind="skeleton",
    )
    c_in, c = coords(pos), coords(geom.positions)
    assert Counter((c[a], c[b]) for a, b in geom.edges.tolist()) == Counter(
        (c_in[a], c_in[b]) for a, b in edges.tolist()
    )


@SETTINGS
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(3, 50),
    f=st.integers(1, 80),
    shard=st.booleans(),
)
def test_mesh_faces_keep_their_winding(seed, n, f, shard):
    rng = np.random.default_rng(seed)
    pos = distinct_positions(rng, n)
    faces = np.array([rng.choice(n, 3, replace=False) for _ in range(f)], dtype=np.int64)
    oid = rng.integers(0, 2, n)
    geom, extra = write_and_read(
        zv_meshes.write_mesh,
        pos,
        faces,
        chunk_shape=CHUNK,
        bounds=([-40.0] * 3, [60.0] * 3),
        object_ids=oid,
        vertex_attributes={"k": np.arange(n, dtype=np.float32)},
        shard_shape=(2, 2, 2) if shard else None,
    )
    c_in, c = coords(pos), coords(geom.positions)
    assert Counter(rotate(tuple(c[i] for i in t)) for t in geom.faces.tolist()) == Counter(
        rotate(tuple(c_in[i] for i in t)) for t in faces.tolist()
    )
    k = geom.vertex_attributes["k"].astype(np.int64)
    np.testing.assert_array_equal(geom.positions, pos[k])
    for o, opos in extra["objects"].items():
        assert Counter(coords(opos)) == Counter(coords(pos[oid == o]))
