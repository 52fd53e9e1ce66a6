"""Time and channel axes, and composite stores, in napari.

Stores are written by zarr-vectors 0.9.2 in each test: 3-D + t detections, 2-D + t cell
tracks, a channel axis, a composite store (points + an added graph).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import napari_zarr_vectors as nzv
from napari_zarr_vectors.napari import controller_for, open_in_viewer
from napari_zarr_vectors.napari.npe2.reader import read_zarr_vectors

zv = pytest.importorskip("zarr_vectors")
composite = pytest.importorskip("zarr_vectors.composite")
from zarr_vectors import Axis, Layout, Schema  # noqa: E402

TIMEOUT = 15_000
T = 5


def _create(path, axes, bounds, cell, kind):
    return zv.create(
        str(path),
        schema=Schema(len(axes), bounds, axes=axes, layout=Layout(cell_size=cell), kind=kind),
    )


@pytest.fixture
def points_t3d(tmp_path):
    """500 detections over 5 time points, axes (t, x, y, z), chunked by one time unit."""
    rng = np.random.default_rng(0)
    pos = np.column_stack([rng.integers(0, T, 500), rng.uniform(0, 100, (500, 3))])
    pos = pos.astype(np.float32)
    path = tmp_path / "detections.zarrvectors"
    axes = (
        Axis("t", "second", "time"),
        Axis("x", "micrometer"),
        Axis("y", "micrometer"),
        Axis("z", "micrometer"),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _create(
            path, axes, ((0, 0, 0, 0), (T - 1, 100, 100, 100)), (1, 50, 50, 50), "point_cloud"
        ).add_points(pos)
    return path, pos


@pytest.fixture
def tracks_t2d(tmp_path):
    """Six cells moving through ten time points, axes (t, x, y)."""
    rng = np.random.default_rng(1)
    tracks = []
    for _ in range(6):
        xy = np.cumsum(rng.normal(0, 3, (10, 2)), axis=0) + 50
        tracks.append(np.column_stack([np.arange(10.0), xy]).astype(np.float32))
    path = tmp_path / "cells.zarrvectors"
    axes = (Axis("t", "second", "time"), Axis("x"), Axis("y"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _create(path, axes, ((0, 0, 0), (9, 100, 100)), (10, 50, 50), "polyline").add_polylines(
            tracks
        )
    return path, tracks


def _layer(layers, word):
    return next(item for item in layers if word in item[1]["name"])


def test_a_time_lapse_puts_time_first_as_a_slider(points_t3d):
    path, pos = points_t3d
    layers = read_zarr_vectors(path)
    data, kwargs, kind = _layer(layers, "points")
    assert kind == "points"
    assert kwargs["axis_labels"] == ("t", "z", "y", "x")
    assert kwargs["units"] == ("second", "micrometer", "micrometer", "micrometer")
    scale = np.asarray(kwargs["scale"])
    assert scale[0] == 1.0  # one slider step per store time unit
    world = np.asarray(data) * scale
    stored = world[:, [0, 3, 2, 1]]  # napari (t, z, y, x) -> store (t, x, y, z)
    # the overview reads the time napari's slider starts at (the middle one), not all times
    middle = pos[pos[:, 0] == (T - 1) // 2]
    assert {tuple(r) for r in stored.astype(np.float32)} == {tuple(r) for r in middle}
    box, bkw, bkind = _layer(layers, "bounds")
    assert bkind == "tracks" and bkw["axis_labels"] == ("t", "z", "y", "x")
    # track id, time, z, y, x: the box at the first and the last time of the bounds
    assert np.asarray(box).shape[1] == 5
    assert set(np.asarray(box)[:, 1].tolist()) == {0.0, T - 1.0}
    world_box = np.asarray(box)[:, 1:] * np.asarray(bkw["scale"])
    assert world_box.min(axis=0).tolist() == [0, 0, 0, 0]
    assert world_box.max(axis=0).tolist() == [T - 1, 100, 100, 100]


def test_cell_tracks_take_the_stored_time(tracks_t2d):
    path, tracks = tracks_t2d
    layers = read_zarr_vectors(path)
    data, kwargs, kind = _layer(layers, "polylines")
    assert kind == "tracks"
    assert kwargs["axis_labels"] == ("t", "y", "x")
    data = np.asarray(data)
    scale = np.asarray(kwargs["scale"])
    stored = {tuple(r) for r in (data[:, 1:] * scale)[:, [0, 2, 1]].astype(np.float32)}
    assert stored == {tuple(r) for t in tracks for r in t}
    # one track per cell, its time column the stored t in order
    for tid in np.unique(data[:, 0]):
        rows = data[data[:, 0] == tid]
        assert rows[:, 1].tolist() == list(range(10))


def test_a_channel_axis_leads_and_the_bounds_box_spans_it(tmp_path):
    rng = np.random.default_rng(3)
    pos = np.column_stack([rng.integers(0, 3, 200), rng.uniform(0, 100, (200, 2))]).astype(
        np.float32
    )
    path = tmp_path / "channels.zarrvectors"
    axes = (Axis("x"), Axis("c", None, "channel"), Axis("y"))  # the channel in the middle
    pos = pos[:, [1, 0, 2]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _create(path, axes, ((0, 0, 0), (100, 2, 100)), (50, 1, 50), "point_cloud").add_points(pos)
    overview, _, _ = _layer(read_zarr_vectors(path), "points")
    assert set(np.asarray(overview)[:, 0].tolist()) == {1.0}  # the slider's first channel
    layers = read_zarr_vectors(path, level=0)  # the whole level
    data, kwargs, _ = _layer(layers, "points")
    assert kwargs["axis_labels"] == ("c", "y", "x")
    world = np.asarray(data) * np.asarray(kwargs["scale"])
    assert {tuple(r) for r in world[:, [2, 0, 1]].astype(np.float32)} == {tuple(r) for r in pos}
    box, bkw, _ = _layer(layers, "bounds")
    world_box = np.asarray(box)[:, 1:] * np.asarray(bkw["scale"])
    assert world_box.min(axis=0).tolist() == [0, 0, 0]
    assert world_box.max(axis=0).tolist() == [2, 100, 100]


def test_time_and_channel_get_a_vectors_bounds_box(tmp_path):
    from napari_zarr_vectors.napari.layerdata.build import StoreInfo, bounds_box_layer

    info = StoreInfo(
        path="p",
        name="n",
        geometry_type="point_cloud",
        axes=("t", "c", "x", "y", "z"),
        units=(None,) * 5,
        bounds=(np.zeros(5), np.array([4.0, 2.0, 10.0, 20.0, 30.0])),
        axis_types=("time", "channel", "space", "space", "space"),
    )
    data, kwargs, kind = bounds_box_layer(info)
    assert kind == "vectors" and kwargs["axis_labels"] == ("t", "c", "z", "y", "x")
    ends = np.concatenate([data[:, 0], data[:, 0] + data[:, 1]])
    assert ends.min(axis=0).tolist() == [0, 0, 0, 0, 0]
    assert ends.max(axis=0).tolist() == [4, 2, 30, 20, 10]
    assert len(data) == 5 * 2**4  # the edges of a 5-D box


@pytest.mark.parametrize(
    ("lead", "t_lo", "kinds"),
    [
        ("time", 0.0, ("tracks", "tracks")),
        ("time", -5.0, ("vectors", "vectors")),  # napari Tracks refuse negative times
        ("channel", 0.0, ("tracks", "vectors")),  # no tails across channels
    ],
)
def test_paths_are_tracks_in_time_else_vectors(lead, t_lo, kinds):
    from napari_zarr_vectors.format.geometry import Geometry
    from napari_zarr_vectors.napari.layerdata.build import StoreInfo, layers_from_geometry

    info = StoreInfo(
        path="p",
        name="n",
        geometry_type="polyline",
        axes=("t", "x", "y"),
        units=(None,) * 3,
        bounds=(np.array([t_lo, 0.0, 0.0]), np.array([5.0, 10.0, 10.0])),
        axis_types=(lead, "space", "space"),
    )
    positions = np.array([[t_lo, 1, 1], [1, 2, 2], [2, 3, 2]], float)
    geometry = Geometry("polyline", 0, positions, paths=[np.arange(3)])
    out = layers_from_geometry(geometry, info)
    assert tuple(kind for _, _, kind in out) == kinds
    data, kwargs, kind = out[1]
    if kind == "tracks":
        assert np.asarray(data)[:, 1].tolist() == [t_lo, 1, 2]  # the stored times
    else:
        starts = np.asarray(data)[:, 0] * np.asarray(kwargs["scale"])
        assert starts[:, 0].tolist() == [t_lo, 1]


def test_the_time_slider_loads_only_that_time(make_napari_viewer, qtbot, points_t3d):
    path, pos = points_t3d
    viewer = make_napari_viewer()
    c = open_in_viewer(viewer, path, first_view=False)
    assert viewer.dims.axis_labels == ("t", "z", "y", "x")
    layer = c.layers[0]
    viewer.dims.ndisplay = 3
    for t in (1, 3):
        viewer.dims.set_point(0, t)
        qtbot.waitUntil(lambda: not c.is_loading, timeout=TIMEOUT)
        data = np.asarray(layer.data)
        assert set(data[:, 0].tolist()) == {float(t)}
        assert len(data) == int((pos[:, 0] == t).sum())
        # that time's chunks, and the previous time's (napari shows t +- half a step, and
        # chunk t - 1 holds [t - 1, t)): never the other times'
        assert {int(k[0]) for k in c.chunks} == {t - 1, t}


def test_tracks_keep_every_time_while_the_slider_moves(make_napari_viewer, qtbot, tracks_t2d):
    path, tracks = tracks_t2d
    viewer = make_napari_viewer()
    c = open_in_viewer(viewer, path, first_view=False)
    layer = c.layers[0]
    viewer.dims.set_point(0, 4)
    qtbot.waitUntil(lambda: not c.is_loading, timeout=TIMEOUT)
    assert layer.current_time == 4
    assert sorted(set(np.asarray(layer.data)[:, 1].tolist())) == list(range(10))
    assert len(layer.data) == sum(len(t) for t in tracks)


def test_a_composite_store_opens_one_set_of_layers_per_geometry(make_napari_viewer, tmp_path):
    rng = np.random.default_rng(4)
    points = rng.uniform(0, 100, (200, 3)).astype(np.float32)
    nodes = np.array([[10, 10, 10], [20, 20, 20], [30, 30, 30], [70, 70, 70]], np.float32)
    lines = [rng.uniform(0, 100, (5, 3)).astype(np.float32) for _ in range(2)]
    path = tmp_path / "mixed.zarrvectors"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zv.create(
            str(path),
            schema=Schema(3, ((0, 0, 0), (100, 100, 100)), layout=Layout(cell_size=(50, 50, 50))),
        ).add_points(points)
        composite.add_geometry(
            str(path), "graph", positions=nodes, edges=np.array([[0, 1], [1, 2], [2, 3]])
        )
        composite.add_geometry(str(path), "streamline", polylines=lines)
    viewer = make_napari_viewer()
    with pytest.warns(UserWarning, match="geometry 'streamline' left out"):
        open_in_viewer(viewer, path, first_view=False)
    names = [layer.name for layer in viewer.layers]
    assert names == ["mixed bounds", "mixed points", "mixed graph edges", "mixed graph nodes"]
    by_name = {layer.name: layer for layer in viewer.layers}
    assert len(by_name["mixed points"].data) == 200
    node_world = np.asarray(by_name["mixed graph nodes"].data) * by_name["mixed graph nodes"].scale
    assert {tuple(r) for r in node_world[:, ::-1].astype(np.float32)} == {tuple(r) for r in nodes}
    assert len(by_name["mixed graph edges"].data) == 3
    points_c = controller_for(by_name["mixed points"])
    graph_c = controller_for(by_name["mixed graph edges"])
    assert points_c is not graph_c  # each geometry has its own level of detail
    assert graph_c.store.geometry_type == "graph" and points_c.store.geometry_type == "point_cloud"
    assert controller_for(by_name["mixed graph nodes"]) is graph_c
    assert isinstance(points_c.store, nzv.Store)


def test_a_graph_with_a_time_axis_gets_a_time_slider(tmp_path):
    nodes = np.array([[0, 10, 10], [0, 20, 10], [1, 12, 11], [1, 22, 12]], np.float32)
    path = tmp_path / "lineage.zarrvectors"
    axes = (Axis("t", None, "time"), Axis("x"), Axis("y"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _create(path, axes, ((0, 0, 0), (1, 50, 50)), (1, 50, 50), "graph").add_graph(
            nodes, np.array([[0, 1], [2, 3]])
        )
    layers = read_zarr_vectors(path, level=0)  # the whole level
    edges, ekw, ekind = _layer(layers, "edges")
    points, pkw, _ = _layer(layers, "nodes")
    assert ekw["axis_labels"] == pkw["axis_labels"] == ("t", "y", "x")
    assert ekind in ("vectors", "shapes")
    starts = np.asarray(edges)[:, 0] * np.asarray(ekw["scale"])
    ends = starts + np.asarray(edges)[:, 1] * np.asarray(ekw["scale"])
    # each edge stays within its time point
    assert sorted(starts[:, 0].tolist()) == [0.0, 1.0]
    assert np.array_equal(starts[:, 0], ends[:, 0])
    world = np.asarray(points) * np.asarray(pkw["scale"])
    assert {tuple(r) for r in world[:, [0, 2, 1]].astype(np.float32)} == {tuple(r) for r in nodes}


def test_a_time_lapse_layer_saves_in_store_axis_order(points_t3d, tmp_path):
    """Export (File > Save) of a time store's layer: store columns come back in the store's
    order (t, x, y, z), with the time axis typed, not the napari axes reversed."""
    from napari_zarr_vectors.napari.layerdata.inverse import spec_from_layers
    from napari_zarr_vectors.napari.npe2.writer import save_layers

    path, pos = points_t3d
    item = _layer(read_zarr_vectors(path, level=0), "points")  # the whole level, every time
    spec, _ = spec_from_layers([item])
    assert spec.axes == ("t", "x", "y", "z")
    assert spec.axis_types == ("time", "space", "space", "space")
    order = np.lexsort(spec.positions.T[::-1])
    want = pos[np.lexsort(pos.T[::-1])]
    shown = np.asarray(spec.positions)[order]
    assert shown.shape == want.shape and np.allclose(shown, want, atol=1e-4)
    out = save_layers(str(tmp_path / "again.zarrvectors"), [item])
    again = nzv.open_store(out).read(0).positions
    assert np.allclose(again[np.lexsort(again.T[::-1])], want, atol=1e-4)
