"""Layer mapping on hand-made geometries: coordinates, 2-D stores, thresholds, features."""

from __future__ import annotations

import numpy as np
import pytest
from napari.layers import Layer

from napari_zarr_vectors.format.geometry import Geometry
from napari_zarr_vectors.format.missing import take_by_id
from napari_zarr_vectors.napari.layerdata import build as zv_layers
from napari_zarr_vectors.napari.layerdata.build import (
    SHAPES_MAX_OBJECTS,
    StoreInfo,
    layers_from_geometry,
)


def info(ndim=3, geometry_type="point_cloud", **kw) -> StoreInfo:
    axes = ("x", "y", "z", "w")[:ndim]
    defaults = dict(
        path="/data/demo.zarrvectors",
        name="demo",
        geometry_type=geometry_type,
        axes=axes,
        units=(None,) * ndim,
        bounds=(np.zeros(ndim), np.full(ndim, 10.0)),
    )
    defaults.update(kw)
    return StoreInfo(**defaults)


def data_layers(geometry, store_info):
    return layers_from_geometry(geometry, store_info, bounds_layer=False)


def make(layer_data):
    data, kwargs, layer_type = layer_data
    return Layer.create(data, kwargs, layer_type)


def random_paths(n_paths, length, ndim, seed=0):
    rng = np.random.default_rng(seed)
    positions = rng.uniform(0, 10, (n_paths * length, ndim))
    paths = list(np.arange(n_paths * length).reshape(n_paths, length))
    return positions, paths


# --------------------------------------------------------------------------------------------
# coordinates
# --------------------------------------------------------------------------------------------


def test_a_point_lands_at_its_store_position_in_napari_axis_order():
    g = Geometry("point_cloud", 0, np.array([[1.0, 2.0, 3.0], [9.0, 8.0, 7.0]]))
    store = info(scale=np.array([0.5, 2.0, 4.0]))
    (layer_data,) = data_layers(g, store)
    layer = make(layer_data)
    # world (z, y, x) = store (x, y, z) reversed, whatever the layer scale
    np.testing.assert_allclose(layer.data_to_world(layer.data[0]), [3.0, 2.0, 1.0])
    np.testing.assert_allclose(layer.extent.world, [[3.0, 2.0, 1.0], [7.0, 8.0, 9.0]])
    assert layer.axis_labels == ("z", "y", "x")
    np.testing.assert_allclose(layer.scale, [4.0, 2.0, 0.5])


def test_bounds_box_extent_is_the_store_bounds():
    store = info(bounds=(np.array([-1.0, 2.0, 3.0]), np.array([4.0, 5.0, 30.0])))
    box = make(zv_layers.bounds_box_layer(store))
    np.testing.assert_allclose(box.extent.world[:, 1:], [[3.0, 2.0, -1.0], [30.0, 5.0, 4.0]])
    assert len(np.unique(box.data[:, 0])) == 12, "a 3-D box has 12 edges"
    box2 = make(zv_layers.bounds_box_layer(info(ndim=2)))
    assert len(np.unique(box2.data[:, 0])) == 4


def test_declared_units_label_the_axes_in_napari_order():
    store = info(units=("micrometer", "micrometer", "nanometer"))
    (layer_data,) = data_layers(Geometry("point_cloud", 0, np.ones((2, 3))), store)
    assert layer_data[1]["units"] == ("nanometer", "micrometer", "micrometer")
    assert str(make(layer_data).units[0]) == "nanometer"


def test_unknown_units_are_dropped_not_fatal():
    store = info(units=("parsec-ish", None, None))
    (layer_data,) = data_layers(Geometry("point_cloud", 0, np.ones((2, 3))), store)
    assert "units" not in layer_data[1]
    make(layer_data)


@pytest.mark.parametrize("ndim, mirrored", [(2, True), (3, True), (4, False)])
def test_mesh_winding_follows_the_axis_reversal(ndim, mirrored):
    positions = np.eye(max(ndim, 3))[:3, :ndim] * 5.0
    faces = np.array([[0, 1, 2]])
    g = Geometry("mesh", 0, positions, faces=faces)
    ((_, got_faces, _), _, _) = data_layers(g, info(ndim=ndim, geometry_type="mesh"))[0]
    expected = [[0, 2, 1]] if mirrored else [[0, 1, 2]]
    np.testing.assert_array_equal(got_faces, expected)


# --------------------------------------------------------------------------------------------
# 2-D stores and the Shapes threshold
# --------------------------------------------------------------------------------------------


def test_2d_point_cloud_is_2d():
    g = Geometry("point_cloud", 0, np.array([[1.0, 2.0], [3.0, 4.0]]))
    (layer_data,) = data_layers(g, info(ndim=2))
    layer = make(layer_data)
    assert layer.ndim == 2 and layer.axis_labels == ("y", "x")
    np.testing.assert_allclose(layer.extent.world, [[2.0, 1.0], [4.0, 3.0]])


@pytest.mark.parametrize("kind", ["polyline", "streamline"])
def test_2d_paths_use_shapes_up_to_the_threshold_then_tracks(kind, monkeypatch):
    monkeypatch.setattr(zv_layers, "SHAPES_MAX_OBJECTS", 3)
    positions, paths = random_paths(3, 5, 2)
    g = Geometry(kind, 0, positions, paths=paths, path_object_ids=np.arange(3))
    (few,) = data_layers(g, info(ndim=2, geometry_type=kind))
    assert few[2] == "shapes" and few[1]["shape_type"] == "path" and len(few[0]) == 3
    layer = make(few)
    np.testing.assert_allclose(layer.data[1] * layer.scale, positions[paths[1]][:, ::-1])

    positions, paths = random_paths(4, 5, 2)
    g = Geometry(kind, 0, positions, paths=paths, path_object_ids=np.arange(4))
    (many,) = data_layers(g, info(ndim=2, geometry_type=kind))
    assert many[2] == "tracks"
    assert "fast view: 4 > 3 shapes" in many[1]["name"]
    assert many[1]["metadata"]["zarr_vectors"]["role"] == f"{kind}s"


def test_3d_paths_always_use_tracks():
    """Shapes hide 3-D paths in 2-D slices, so 3-D stores never get Shapes."""
    positions, paths = random_paths(3, 5, 3)
    g = Geometry("polyline", 0, positions, paths=paths, path_object_ids=np.arange(3))
    (layer_data,) = data_layers(g, info(geometry_type="polyline"))
    assert layer_data[2] == "tracks" and "fast view" not in layer_data[1]["name"]


def test_2d_lines_and_graph_edges_switch_from_shapes_to_vectors(monkeypatch):
    monkeypatch.setattr(zv_layers, "SHAPES_MAX_OBJECTS", 2)
    positions = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    ids = np.array([0, 0, 1, 1])
    two = Geometry("line", 0, positions, vertex_object_ids=ids, edges=np.array([[0, 1], [2, 3]]))
    (layer_data,) = data_layers(two, info(ndim=2, geometry_type="line"))
    assert layer_data[2] == "shapes" and layer_data[1]["shape_type"] == "line"
    make(layer_data)
    three = Geometry(
        "graph", 0, positions, vertex_object_ids=ids, edges=np.array([[0, 1], [1, 2], [2, 3]])
    )
    edges, nodes = data_layers(three, info(ndim=2, geometry_type="graph"))
    assert edges[2] == "vectors" and "fast view" in edges[1]["name"] and nodes[2] == "points"


def test_no_shapes_layer_ever_exceeds_the_threshold():
    n = SHAPES_MAX_OBJECTS + 1
    positions = np.random.default_rng(1).uniform(0, 10, (2 * n, 2))
    edges = np.arange(2 * n).reshape(n, 2)
    for kind in ("line", "graph", "skeleton"):
        g = Geometry(kind, 0, positions, edges=edges)
        for data, _, layer_type in data_layers(g, info(ndim=2, geometry_type=kind)):
            assert layer_type != "shapes" or len(data) <= SHAPES_MAX_OBJECTS


# --------------------------------------------------------------------------------------------
# features
# --------------------------------------------------------------------------------------------


def test_object_attributes_join_per_vertex_missing_ids_become_missing_values():
    g = Geometry(
        "point_cloud",
        0,
        np.zeros((4, 3)),
        vertex_attributes={"v": np.arange(4.0), "rgbw": np.arange(16).reshape(4, 4)},
        vertex_object_ids=np.array([0, 1, 1, 7]),
    )
    store = info(
        object_attributes={"score": np.array([0.5, 1.5]), "tag": np.array(["a", "b"], object)},
        groups={2: np.array([1]), 0: np.array([0, 1])},
    )
    ((_, kwargs, _),) = data_layers(g, store)
    f = kwargs["features"]
    assert set(f) == {"object_id", "v", "rgbw[0]", "rgbw[1]", "rgbw[2]", "rgbw[3]"} | {
        "score",
        "tag",
        "group_id",
        "groups",
    }
    np.testing.assert_array_equal(f["score"][:3], [0.5, 1.5, 1.5])
    assert np.isnan(f["score"][3])
    assert list(f["tag"]) == ["a", "b", "b", None]
    # object 1 is in groups 0 and 2: coloured as the smaller, 2
    np.testing.assert_array_equal(f["group_id"], [0, 2, 2, -1])
    assert list(f["groups"][:3]) == ["0", "0;2", "0;2"]


def test_name_collisions_get_a_prefix():
    g = Geometry(
        "point_cloud",
        0,
        np.zeros((2, 3)),
        vertex_attributes={"score": np.array([1.0, 2.0])},
        vertex_object_ids=np.array([0, 0]),
    )
    ((_, kwargs, _),) = data_layers(g, info(object_attributes={"score": np.array([9.0])}))
    np.testing.assert_array_equal(kwargs["features"]["score"], [1.0, 2.0])
    np.testing.assert_array_equal(kwargs["features"]["object_score"], [9.0, 9.0])


def test_tracks_encode_strings_and_colour_streamlines_by_direction():
    positions = np.array([[0.0, 0, 0], [1, 0, 0], [2, 0, 0], [0, 0, 0], [0, 0, 1]])
    g = Geometry(
        "streamline",
        0,
        positions,
        vertex_attributes={"label": np.array(["a", "b", "a", "c", "c"], object)},
        paths=[np.array([0, 1, 2]), np.array([3, 4])],
        path_object_ids=np.array([5, 6]),
    )
    ((data, kwargs, _),) = data_layers(g, info(geometry_type="streamline"))
    f = kwargs["features"]
    np.testing.assert_array_equal(f["object_id"], [5, 5, 5, 6, 6])
    np.testing.assert_array_equal(f["label"], [0, 1, 0, 2, 2])
    assert kwargs["metadata"]["zarr_vectors"]["categories"]["label"] == ["a", "b", "c"]
    assert kwargs["color_by"] == "direction"
    layer = make((data, kwargs, "tracks"))
    colours = layer.track_colors
    x_going, z_going = colours[0], colours[3]
    assert x_going[0] > 0.9 and x_going[1] < 0.3 and x_going[2] < 0.3, "along x: red"
    assert z_going[2] > 0.9 and z_going[0] < 0.3, "along z: blue"


def test_polylines_colour_by_their_first_scalar_vertex_attribute():
    positions, paths = random_paths(2, 4, 3)
    g = Geometry(
        "polyline",
        0,
        positions,
        vertex_attributes={"radius": np.linspace(1, 2, 8)},
        paths=paths,
        path_object_ids=np.arange(2),
    )
    ((_, kwargs, _),) = data_layers(g, info(geometry_type="polyline"))
    assert kwargs["color_by"] == "radius"


def test_integer_ids_get_direct_colours_without_napari_warnings(recwarn):
    positions = np.random.default_rng(2).uniform(0, 10, (6, 3))
    g = Geometry(
        "graph",
        0,
        positions,
        vertex_object_ids=np.array([0, 0, 0, 1, 1, 1]),
        vertex_attributes={"degree": np.array([1, 2, 1, 1, 2, 1], np.int32)},
        edges=np.array([[0, 1], [1, 2], [3, 4], [4, 5]]),
    )
    for layer_data in data_layers(g, info(geometry_type="graph")):
        make(layer_data)
    assert not [w for w in recwarn if "categorical" in str(w.message)]


def test_empty_geometry_gives_the_bounds_box_only():
    g = Geometry("polyline", 0, np.empty((0, 3)))
    result = layers_from_geometry(g, info(geometry_type="polyline"))
    assert [lt for _, _, lt in result] == ["tracks"]
    assert result[0][1]["metadata"]["zarr_vectors"]["role"] == "bounds"


def test_layer_names_and_metadata():
    g = Geometry("skeleton", 2, np.zeros((2, 3)), edges=np.array([[1, 0]]))
    edges, nodes = data_layers(g, info(geometry_type="skeleton", level=2))
    assert edges[1]["name"] == "demo skeleton edges (level 2)"
    assert nodes[1]["name"] == "demo skeleton nodes (level 2)"
    meta = edges[1]["metadata"]["zarr_vectors"]
    assert meta["path"] == "/data/demo.zarrvectors" and meta["level"] == 2
    assert meta["geometry_type"] == "skeleton" and meta["axis_order"] == "reversed"


# --------------------------------------------------------------------------------------------
# cost: vectorised, no per-vertex Python
# --------------------------------------------------------------------------------------------


def test_large_geometries_become_layers_holding_every_vertex():
    rng = np.random.default_rng(3)
    n = 200_000
    points = Geometry(
        "point_cloud",
        0,
        rng.uniform(0, 10, (n, 3)),
        vertex_attributes={
            "a": rng.random(n),
            "label": np.array(["x", "y"], object)[rng.integers(0, 2, n)],
        },
        vertex_object_ids=rng.integers(0, 5_000, n),
    )
    store = info(object_attributes={"s": rng.random(5_000)}, groups={0: np.arange(2_500)})
    positions, paths = random_paths(10_000, 20, 3)
    streamlines = Geometry(
        "streamline", 0, positions, paths=paths, path_object_ids=np.arange(len(paths))
    )
    (cloud,) = data_layers(points, store)
    layer = make(cloud)
    world = np.asarray(layer.data) * layer.scale + layer.translate
    np.testing.assert_allclose(world, points.positions[:, ::-1], rtol=1e-6)
    np.testing.assert_array_equal(layer.features["a"], points.vertex_attributes["a"])
    (tracks,) = data_layers(streamlines, info(geometry_type="streamline"))
    track_ids = np.asarray(tracks[0])[:, 0]
    assert len(track_ids) == len(positions) and len(np.unique(track_ids)) == len(paths)


def test_object_tables_shorter_than_the_ids_or_empty():
    ids = np.array([0, 3, -1])
    np.testing.assert_array_equal(take_by_id(np.array([5, 6]), ids, fill=-1), [5, -1, -1])
    assert np.isnan(take_by_id(np.empty(0), ids, as_float=True)).all()
    multi = take_by_id(np.ones((2, 3), np.uint8), ids, as_float=True)
    assert multi.shape == (3, 3) and np.isnan(multi[1:]).all() and (multi[0] == 1).all()


# --------------------------------------------------------------------------------------------
# the metadata block
# --------------------------------------------------------------------------------------------


def test_layer_metadata_reads_through_the_typed_view_and_round_trips():
    from napari_zarr_vectors.napari.conventions import META, LayerMeta, meta_of

    affine = np.diag([-1.0, 2.0, 1.0, 1.0])  # x mirrored and moved, y stretched
    affine[0, 3] = 3.0
    g = Geometry(
        "point_cloud",
        0,
        np.array([[1.0, 2.0, 3.0], [9.0, 8.0, 7.0]]),
        vertex_object_ids=np.array([4, 5]),
    )
    store = info(scale=np.array([0.5, 2.0, 4.0]), affine=affine)
    (layer_data,) = data_layers(g, store)
    block = layer_data[1]["metadata"][META]
    meta = LayerMeta.from_layer(layer_data[1])
    assert meta.path == "/data/demo.zarrvectors" and meta.geometry_type == "point_cloud"
    assert meta.role == "points" and meta.level == 0 and meta.vertex_count == 2
    assert meta.axes == ("x", "y", "z") and meta.axis_types == ("space",) * 3
    assert meta.napari_order == (2, 1, 0) and meta.world_order == (2, 1, 0)
    assert meta.scale == (0.5, 2.0, 4.0)
    assert meta.bounds == ((0.0, 0.0, 0.0), (10.0, 10.0, 10.0))
    assert meta.world_affine[0] == [-1.0, 0.0, 0.0, 3.0]
    assert meta.object_columns == [] and meta.other == {}
    assert meta.to_dict() == block and list(meta.to_dict()) == list(block)
    layer = make(layer_data)
    assert meta_of(layer) is layer.metadata[META]
    assert LayerMeta.from_layer(layer) == LayerMeta.from_dict(layer.metadata[META])
    # keys other modules add stay as they are, in order
    block["session"] = 7
    block["colour_by"] = None
    again = LayerMeta.from_dict(block)
    assert again.other == {"session": 7} and again.colour_by is None
    assert again.to_dict() == block and list(again.to_dict()) == list(block)
    assert meta_of(make(([[0.0, 0.0]], {}, "points"))) is None
    assert LayerMeta.from_layer({"name": "plain"}) == LayerMeta(keys=())


def test_keys_other_modules_pass_to_the_builders_land_in_the_block():
    from napari_zarr_vectors.napari.conventions import META, LayerMeta

    kwargs = zv_layers._common_kwargs(
        info(), "qa_dropped", "dropped", None, extra={"qa_level": 1, "colour_by": None}
    )
    block = kwargs["metadata"][META]
    assert block["qa_level"] == 1 and block["role"] == "qa_dropped"
    assert "colour_by" not in block and "vertex_count" not in block
    meta = LayerMeta.from_dict(block)
    assert meta.other == {"qa_level": 1} and meta.to_dict() == block
