"""Saving napari layers as Zarr Vectors stores (the npe2 writer) and reading them back.

Round trips: layer -> store -> our core reader (same geometry, ids, attributes, store-order
world coordinates) -> napari reader (same layer). Layers opened from fixture stores go back to
their geometry type with ids, object attributes and groups. Plus the writer's own
``validate()``, the automatic pyramid, and the refusals (same store, existing target, failed
write, missing extra).
"""

from __future__ import annotations

import sys
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _zv_napari import copy_fixture, v07_store
from napari.layers import Layer, Points, Shapes, Surface, Tracks, Vectors

import napari_zarr_vectors as nzv
from napari_zarr_vectors.napari.layerdata.inverse import spec_from_layers
from napari_zarr_vectors.napari.npe2.reader import read_zarr_vectors
from napari_zarr_vectors.napari.npe2.writer import save_layers
from napari_zarr_vectors.write import (
    SOURCE_OBJECT_ID,
    MissingWriterError,
    SameStoreError,
    TargetExistsError,
    WriteError,
    choose_pyramid,
    write_store,
)

zv = pytest.importorskip("zarr_vectors")


def save(layers, path, **kwargs) -> Path:
    layers = layers if isinstance(layers, list) else [layers]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return save_layers(path, layers, show_progress=False, **kwargs)


def world(layer) -> np.ndarray:
    """World coordinates of a layer's vertices (napari order), as napari draws them."""
    return np.asarray(layer.data, float) * layer.scale + layer.translate


def f32(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float32)


def rows(positions, *columns) -> Counter:
    """Multiset of (coordinates, values...) rows, float32-exact."""
    pos = [tuple(r) for r in f32(positions).tolist()]
    cols = [np.asarray(c).tolist() for c in columns]
    return Counter(
        (p, *(tuple(c[i]) if isinstance(c[i], list) else c[i] for c in cols))
        for i, p in enumerate(pos)
    )


def reopen(path) -> list[Layer]:
    """The data layers napari's reader makes of ``path`` (level 0, static)."""
    out = read_zarr_vectors(str(path), level=0)
    return [Layer.create(d, k, t) for d, k, t in out[1:]]


def store_layers(path: Path) -> list[tuple]:
    """The layer data tuples napari gets from a store (level 0), bounds box first."""
    return [Layer.create(d, k, t).as_layer_data_tuple() for d, k, t in read_zarr_vectors(
        str(path), level=0
    )]  # fmt: skip


# --------------------------------------------------------------------------------------------
# plain napari layers
# --------------------------------------------------------------------------------------------


def test_points_round_trip_coordinates_units_and_features(tmp_path):
    rng = np.random.default_rng(1)
    data = rng.uniform(0, 50, (40, 3))
    kind = pd.Categorical(np.array(["soma", "axon"])[rng.integers(0, 2, 40)])
    layer = Points(
        data,
        scale=(2.0, 1.0, 0.5),
        translate=(10.0, -3.0, 4.0),
        axis_labels=("z", "y", "x"),
        units=("um", "um", "um"),
        features={"intensity": rng.random(40), "kind": kind, "n": np.arange(40)},
    )
    path = save(layer, tmp_path / "cells")  # the suffix is added
    assert path.name == "cells.zarrvectors"

    store = nzv.open_store(path)
    assert store.geometry_type == "point_cloud"
    assert store.axes == ["x", "y", "z"]
    assert store.units == ["micrometer"] * 3
    g = store.read(0)
    expected = world(layer)[:, ::-1]  # store order: x, y, z
    assert g.vertex_count == 40
    want = rows(expected, f32(layer.features["intensity"]), kind.astype(str), np.arange(40))
    got = rows(
        g.positions,
        f32(g.vertex_attributes["intensity"]),
        g.vertex_attributes["kind"],
        g.vertex_attributes["n"],
    )
    assert got == want

    (back,) = reopen(path)
    assert back._type_string == "points"
    assert back.axis_labels == ("z", "y", "x")
    assert rows(world(back), back.features["n"]) == rows(world(layer), np.arange(40))
    order = np.argsort(back.features["n"].to_numpy())
    assert back.features["kind"].to_numpy()[order].tolist() == kind.astype(str).tolist()


def test_static_tracks_become_polylines_in_track_order(tmp_path):
    tracks = np.array(
        [
            [3, 0, 5, 5, 5],
            [3, 0, 6, 6, 7],
            [3, 0, 7, 8, 9],
            [8, 0, 1, 1, 1],
            [8, 0, 2, 3, 2],
        ],
        dtype=float,
    )
    layer = Tracks(tracks, scale=(1, 2, 2, 2), features={"speed": np.arange(5.0)})
    path = save(layer, tmp_path / "tracks.zarrvectors")
    store = nzv.open_store(path)
    assert store.geometry_type == "polyline"
    assert store.ndim == 3  # the constant time column is dropped
    g = store.read(0)
    paths = [g.positions[p] for p in g.paths]
    np.testing.assert_array_equal(paths[0], f32(tracks[:3, 2:] * 2)[:, ::-1])
    np.testing.assert_array_equal(paths[1], f32(tracks[3:, 2:] * 2)[:, ::-1])
    np.testing.assert_array_equal(
        g.vertex_attributes["speed"][np.concatenate(g.paths)], np.arange(5)
    )
    # the reference writer numbers paths 0..n-1: the track ids are kept as an attribute
    assert store.object_attributes(0)[SOURCE_OBJECT_ID].tolist() == [3, 8]

    (back,) = reopen(path)
    assert back._type_string == "tracks"
    spatial = back.data[:, 2:] * back.scale[1:] + back.translate[1:]
    np.testing.assert_allclose(spatial, tracks[:, 2:] * 2, rtol=1e-6)
    assert back.features["speed"].tolist() == list(range(5))


def test_tracks_moving_in_time_keep_a_time_axis(tmp_path):
    tracks = np.array([[1, 0, 0, 0], [1, 1, 2, 1], [1, 2, 4, 3], [2, 5, 9, 9], [2, 7, 8, 8]], float)
    layer = Tracks(tracks, axis_labels=("t", "y", "x"))
    store = nzv.open_store(save(layer, tmp_path / "moving.zarrvectors"))
    assert store.axes == ["t", "x", "y"]
    g = store.read(0)
    paths = [g.positions[p] for p in g.paths]
    np.testing.assert_array_equal(paths[0], f32(tracks[:3][:, [1, 3, 2]]))
    np.testing.assert_array_equal(paths[1], f32(tracks[3:][:, [1, 3, 2]]))


def test_shapes_paths_and_lines(tmp_path):
    paths = [np.array([[0, 0], [4, 1], [5, 5.0]]), np.array([[9, 9], [8, 1.0]])]
    layer = Shapes(paths, shape_type="path", scale=(0.5, 0.5), features={"q": [7, 9]})
    store = nzv.open_store(save(layer, tmp_path / "paths.zarrvectors"))
    assert store.geometry_type == "polyline"
    g = store.read(0)
    for i, p in enumerate(paths):
        np.testing.assert_array_equal(g.positions[g.paths[i]], f32(p * 0.5)[:, ::-1])
    assert store.object_attributes(0)["q"].tolist() == [7, 9]
    (back,) = reopen(store.path)  # a 2-D store with few paths opens as Shapes paths again
    assert back._type_string == "shapes" and back.shape_type == ["path", "path"]
    for got, want in zip(back.data, paths, strict=True):
        np.testing.assert_allclose(got * back.scale, want * 0.5, rtol=1e-6)
    assert back.features["q"].tolist() == [7, 9]
    # ... and that layer, opened from a store, saves as the same store again
    again = nzv.open_store(save(back, tmp_path / "again.zarrvectors"))
    assert again.geometry_type == "polyline" and again.axes == store.axes
    g2 = again.read(0)
    for i in range(2):
        np.testing.assert_array_equal(g2.positions[g2.paths[i]], g.positions[g.paths[i]])
    assert again.object_attributes(0)["q"].tolist() == [7, 9]

    lines = Shapes([np.array([[0, 0], [3, 4.0]])] * 2, shape_type="line")
    lines.data = [np.array([[0, 0], [3, 4.0]]), np.array([[1, 1], [2, 2.0]])]
    store = nzv.open_store(save(lines, tmp_path / "lines.zarrvectors"))
    assert store.geometry_type == "line"
    g = store.read(0)
    np.testing.assert_array_equal(g.positions[g.paths[1]], [[1, 1], [2, 2]])

    mixed = Shapes([np.array([[0, 0], [3, 4.0], [1, 1]])], shape_type="polygon")
    with pytest.raises(WriteError, match="polygon"):
        save(mixed, tmp_path / "polygons.zarrvectors")
    assert not (tmp_path / "polygons.zarrvectors").exists()


def test_vectors_become_lines_drawn_as_napari_draws_them(tmp_path):
    vec = np.array([[[1, 1, 1], [0, 2, 0]], [[5, 5, 5], [1, 0, -1]]], float)
    layer = Vectors(vec, length=2.0, features={"w": [0.5, 1.5]}, translate=(1, 0, 0))
    store = nzv.open_store(save(layer, tmp_path / "vectors.zarrvectors"))
    assert store.geometry_type == "line"
    g = store.read(0)
    start = vec[:, 0] + [1, 0, 0]
    end = start + 2.0 * vec[:, 1]
    for i in range(2):
        np.testing.assert_array_equal(g.positions[g.paths[i]], f32([start[i], end[i]])[:, ::-1])
    assert store.object_attributes(0)["w"].tolist() == [0.5, 1.5]
    (back,) = reopen(store.path)
    assert back._type_string == "vectors"
    got = np.sort(back.data[:, 0] * back.scale, axis=0)
    np.testing.assert_allclose(got, np.sort(start, axis=0), rtol=1e-6)


def _face_set(positions, faces) -> Counter:
    """Faces as rotated coordinate triples (winding kept, starting vertex normalised)."""
    pos = [tuple(r) for r in f32(positions).tolist()]
    out = Counter()
    for f in np.asarray(faces).tolist():
        tri = [pos[i] for i in f]
        k = tri.index(min(tri))
        out[tuple(tri[k:] + tri[:k])] += 1
    return out


def test_surface_round_trip_keeps_winding_and_values(tmp_path):
    verts = np.array([[0, 0, 0], [0, 0, 10], [0, 10, 0], [10, 0, 0]], float)
    faces = np.array([[0, 1, 2], [0, 3, 1], [0, 2, 3], [1, 3, 2]])
    layer = Surface((verts, faces, np.array([0.0, 1.0, 2.0, 3.0])))
    store = nzv.open_store(save(layer, tmp_path / "tet.zarrvectors"))
    assert store.geometry_type == "mesh"
    g = store.read(0)
    # store order reverses the axes: a mirror, so the winding is reversed with it
    assert _face_set(g.positions, g.faces) == _face_set(verts[:, ::-1], faces[:, [0, 2, 1]])
    assert rows(g.positions, g.vertex_attributes["values"]) == rows(verts[:, ::-1], np.arange(4.0))
    (back,) = reopen(store.path)
    assert back._type_string == "surface"
    bv, bf = back.data[0] * back.scale, back.data[1]
    assert _face_set(bv, bf) == _face_set(verts, faces)  # the same Surface, same winding


# --------------------------------------------------------------------------------------------
# layers opened from a store
# --------------------------------------------------------------------------------------------


def _objects(store) -> dict[int, list]:
    """Per object id: its vertices (path order for paths, sorted otherwise)."""
    out = {}
    for oid in store.object_ids(0).tolist():
        g = store.read(0, object_ids=[oid])
        if g.paths:
            out[oid] = f32(np.concatenate([g.positions[p] for p in g.paths])).tolist()
        else:
            out[oid] = sorted(f32(g.positions).tolist())
    return out


@pytest.mark.parametrize("version", ["v07", "v09"])
@pytest.mark.parametrize("name", ["points", "polylines", "streamlines", "mesh", "lines"])
def test_store_layers_save_as_their_geometry_with_ids_attributes_and_groups(
    name, version, tmp_path
):
    src = copy_fixture(name, tmp_path, version)
    tuples = store_layers(src)
    out = save([Layer.create(*t) for t in tuples], tmp_path / f"{name}-copy.zarrvectors")
    a, b = nzv.open_store(src), nzv.open_store(out)
    assert b.geometry_type == a.geometry_type
    assert b.axes == a.axes
    ga, gb = a.read(0), b.read(0)
    if name == "mesh":
        # a vertex shared by several objects carries the first one's id (in the core and in
        # napari's features): the layer holds the objects its vertices name
        ids = np.unique(ga.vertex_object_ids)
        np.testing.assert_array_equal(b.object_ids(0), ids)
        assert _face_set(gb.positions, gb.faces) == _face_set(ga.positions, ga.faces)
    else:
        ids = a.object_ids(0)
        np.testing.assert_array_equal(b.object_ids(0), ids)
        assert _objects(b) == _objects(a)
    oa, ob = a.object_attributes(0), b.object_attributes(0)
    assert set(ob) == set(oa)
    for k in oa:
        np.testing.assert_array_equal(np.asarray(ob[k])[ids], np.asarray(oa[k])[ids])
    assert {g: m.tolist() for g, m in b.groups(0).items()} == {
        g: np.intersect1d(m, ids).tolist() for g, m in a.groups(0).items()
    }
    assert b.group_names(0) == a.group_names(0)
    gaa, gab = a.group_attributes(0), b.group_attributes(0)
    assert set(gab) == set(gaa)
    for k, v in gaa.items():
        np.testing.assert_array_equal(gab[k], v)
    for k, v in ga.vertex_attributes.items():
        if name == "lines":  # a segment carries its first endpoint's values only
            continue
        assert rows(gb.positions, gb.vertex_attributes[k]) == rows(ga.positions, v)
    assert zv.open(str(out)).validate().errors == []


@pytest.mark.parametrize("version", ["v07", "v09"])
@pytest.mark.parametrize("name", ["graph", "skeleton"])
def test_graph_edges_and_nodes_layers_save_as_the_graph(name, version, tmp_path):
    src = copy_fixture(name, tmp_path, version)
    tuples = store_layers(src)
    out = save([Layer.create(*t) for t in tuples], tmp_path / f"{name}-copy.zarrvectors")
    a, b = nzv.open_store(src), nzv.open_store(out)
    assert b.geometry_type == name
    ga, gb = a.read(0), b.read(0)

    def edges(g):
        p = [tuple(r) for r in f32(g.positions).tolist()]
        return Counter((p[i], p[j]) for i, j in g.edges.tolist())

    assert edges(gb) == edges(ga)
    assert b.group_names(0) == a.group_names(0)
    assert {g: m.tolist() for g, m in b.groups(0).items()} == {
        g: m.tolist() for g, m in a.groups(0).items()
    }
    assert rows(gb.positions, gb.vertex_object_ids) == rows(ga.positions, ga.vertex_object_ids)
    key = next(iter(ga.vertex_attributes))
    assert rows(gb.positions, gb.vertex_attributes[key]) == rows(
        ga.positions, ga.vertex_attributes[key]
    )


def test_one_geometry_per_store(tmp_path):
    a = Points(np.zeros((2, 2)))
    b = Points(np.ones((2, 2)))
    with pytest.raises(WriteError, match="one geometry"):
        spec_from_layers([a.as_layer_data_tuple(), b.as_layer_data_tuple()])
    bounds = store_layers(v07_store("points"))[0]
    with pytest.raises(WriteError, match="bounds"):
        spec_from_layers([bounds])


# --------------------------------------------------------------------------------------------
# pyramid and validation
# --------------------------------------------------------------------------------------------


def test_a_pyramid_by_default_and_none_on_request(tmp_path):
    rng = np.random.default_rng(3)
    layer = Points(rng.uniform(0, 1000, (30_000, 3)))
    path = save(layer, tmp_path / "big.zarrvectors", validate=True)
    store = nzv.open_store(path)
    assert len(store.levels) >= 2
    counts = [lv.vertex_count for lv in store.levels]
    assert counts[0] == 30_000 and counts[-1] < 10_000
    assert counts[1] > 30_000 / 16  # about one vertex per level-0 bin: ~8x fewer per level
    assert store.read(len(store.levels) - 1).vertex_count == counts[-1]
    assert zv.open(str(path)).validate().errors == []

    flat = nzv.open_store(save(layer, tmp_path / "flat.zarrvectors", pyramid=False))
    assert len(flat.levels) == 1 and flat.levels[0].vertex_count == 30_000


def test_bins_aim_at_one_vertex_each_within_limits():
    from napari_zarr_vectors.write import choose_cells, choose_subcells

    assert choose_cells(5_000, 3) == 1
    assert choose_cells(1_000_000, 3) == 4  # about 20,000 vertices per chunk
    assert choose_subcells(1_000_000, 3, 4) == 25  # 100 bins per axis over the extent
    assert choose_subcells(50, 3, 1) == 4  # never fewer than the writer's default
    assert choose_subcells(10**9, 2, 1) == int(20_000**0.5)  # never more than a chunk holds


def test_pyramid_choice_follows_extent_and_size():
    none = choose_pyramid(500, [100, 100, 100], [100, 100, 100], [25, 25, 25])
    assert none.n_levels == 0  # small data: level 0 is already cheap
    one = choose_pyramid(10**6, [100, 100, 100], [25, 25, 25], [6.25, 6.25, 6.25])
    assert one.n_levels == 1 and one.expected_vertices == (8**3,)  # 8^3 bins of 12.5
    plan = choose_pyramid(10**6, [1000, 1000, 1000], [25, 25, 25], [6.25, 6.25, 6.25])
    assert plan.n_levels == 3  # 80^3, 40^3, then 20^3 = 8,000 bins: under the target
    assert all(f == (2.0, 1.0) for f in plan.factors)
    assert plan.expected_vertices[-1] <= 10_000
    assert list(plan.expected_vertices) == sorted(plan.expected_vertices, reverse=True)
    # once a bin outgrows its chunk, chunks double too
    assert plan.chunk_scale_factors == (1, 1, 2)


# --------------------------------------------------------------------------------------------
# never destroy data
# --------------------------------------------------------------------------------------------


def test_refuses_to_write_into_the_store_being_read(tmp_path):
    src = copy_fixture("points", tmp_path)
    before = sorted(p.relative_to(src) for p in src.rglob("*"))
    layers = [Layer.create(*t) for t in store_layers(src)]
    with pytest.raises(SameStoreError):
        save(layers, src)
    with pytest.raises(SameStoreError):
        save(layers, src / "inside.zarrvectors")
    assert sorted(p.relative_to(src) for p in src.rglob("*")) == before


def test_an_existing_target_is_never_overwritten(tmp_path):
    target = tmp_path / "taken.zarrvectors"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    with pytest.raises(TargetExistsError):
        save(Points(np.zeros((3, 2))), target)
    assert (target / "keep.txt").read_text() == "mine"
    assert [p.name for p in tmp_path.iterdir()] == ["taken.zarrvectors"]


def test_a_failed_write_leaves_nothing_behind(tmp_path, monkeypatch):
    from zarr_vectors.api.dataset import Dataset

    def boom(self, *args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(Dataset, "build_pyramid", boom)
    layer = Points(np.random.default_rng(0).uniform(0, 1000, (30_000, 3)))
    with pytest.raises(RuntimeError, match="disk full"):
        save(layer, tmp_path / "broken.zarrvectors")
    assert list(tmp_path.iterdir()) == []  # neither the store nor its temporary sibling


def test_missing_write_extra_is_named(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "zarr_vectors", None)
    with pytest.raises(MissingWriterError, match=r"napari-zarr-vectors\[write\]"):
        save(Points(np.zeros((3, 2))), tmp_path / "x.zarrvectors")
    assert list(tmp_path.iterdir()) == []
    # reading never needs it
    assert nzv.open_store(v07_store("points")).read(0).vertex_count == 240


def test_write_store_refuses_remote_targets(tmp_path):
    spec, _ = spec_from_layers([Points(np.zeros((3, 2))).as_layer_data_tuple()])
    with pytest.raises(WriteError, match="local"):
        write_store("s3://bucket/x.zarrvectors", spec)


# --------------------------------------------------------------------------------------------
# in a viewer
# --------------------------------------------------------------------------------------------


@pytest.mark.gui
def test_viewer_save_and_reopen(make_napari_viewer, tmp_path):
    viewer = make_napari_viewer()
    rng = np.random.default_rng(5)
    pts = viewer.add_points(rng.uniform(0, 20, (25, 3)), features={"v": np.arange(25.0)})
    viewer.layers.selection = {pts}
    written = viewer.layers.save(
        str(tmp_path / "fromviewer.zarrvectors"), selected=True, plugin="napari-zarr-vectors"
    )
    assert [Path(p).name for p in written] == ["fromviewer.zarrvectors"]
    layers = viewer.open(written[0], plugin="napari-zarr-vectors")
    data = [layer for layer in layers if layer.metadata["zarr_vectors"]["role"] == "points"]
    assert len(data) == 1
    back = data[0]
    assert rows(world(back), back.features["v"]) == rows(world(pts), np.arange(25.0))


def test_string_vertex_attributes_survive_a_tracks_layer(tmp_path):
    """Tracks colour numbers only: the reader codes strings, the writer decodes them back."""
    from napari_zarr_vectors.write import WriteSpec

    positions = np.array([[0, 0, 0], [5, 5, 5], [9, 9, 9], [20, 1, 1], [25, 2, 2.0]])
    kind = np.array(["root", "mid", "tip", "root", "tip"], dtype=object)
    spec = WriteSpec(
        "streamline",
        positions,
        axes=("x", "y", "z"),
        units=("millimeter",) * 3,
        lengths=[3, 2],
        vertex_attributes={"kind": kind},
        object_attributes={"fa": np.array([0.25, 0.75], np.float32)},
    )
    src = write_store(tmp_path / "src.zarrvectors", spec, pyramid=False)
    (layer,) = reopen(src)
    assert layer._type_string == "tracks"
    assert layer.features["kind"].dtype.kind in "iu"  # coded for Tracks
    out = nzv.open_store(save(layer, tmp_path / "copy.zarrvectors"))
    assert out.geometry_type == "streamline"
    assert out.units == ["millimeter"] * 3
    g = out.read(0)
    order = np.concatenate(g.paths)
    np.testing.assert_array_equal(g.positions[order], f32(positions))
    assert g.vertex_attributes["kind"][order].tolist() == kind.tolist()
    assert out.object_attributes(0)["fa"].tolist() == [0.25, 0.75]


def test_skeleton_cycles_are_refused(tmp_path):
    from napari_zarr_vectors.write import WriteSpec

    spec = WriteSpec(
        "skeleton",
        np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0.0]]),
        axes=("x", "y", "z"),
        units=(None,) * 3,
        edges=np.array([[0, 1], [1, 2], [2, 0]]),
    )
    with pytest.raises(WriteError, match="cycle"):
        write_store(tmp_path / "loop.zarrvectors", spec, pyramid=False)
    assert list(tmp_path.iterdir()) == []


def test_empty_and_non_finite_layers_are_refused(tmp_path):
    with pytest.raises(WriteError, match="no vertices"):
        save(Points(np.zeros((0, 3))), tmp_path / "empty.zarrvectors")
    with pytest.raises(WriteError, match="non-finite"):
        save(Points(np.array([[0, 0, np.nan], [1, 1, 1.0]])), tmp_path / "nan.zarrvectors")
    assert list(tmp_path.iterdir()) == []
