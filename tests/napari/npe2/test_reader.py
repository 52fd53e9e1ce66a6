"""Reader tests without a viewer: call the npe2 reader, assert on the layer data tuples."""

from __future__ import annotations

import json
import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from _zv_napari import DATA, V07_STORES, expected, f32, v07_store
from napari.layers import Layer

import napari_zarr_vectors as nzv
from napari_zarr_vectors.napari.npe2 import reader as zv_reader
from napari_zarr_vectors.napari.npe2.reader import (
    PLUGIN_NAME,
    READER_PATTERN,
    READER_PATTERNS,
    napari_get_reader,
    register_reader_preference,
)


def read(path, **kwargs):
    """What napari does: ask the reader hook for a function, call it."""
    reader = napari_get_reader(str(path))
    assert callable(reader), f"not claimed: {path}"
    return reader(str(path), **kwargs)


def by_role(layer_data) -> dict[str, tuple]:
    return {kw["metadata"]["zarr_vectors"]["role"]: (data, kw, lt) for data, kw, lt in layer_data}


def world(data: np.ndarray, kwargs: dict) -> np.ndarray:
    """Layer data coordinates -> world, back in store (x, y, z) column order."""
    scale = np.asarray(kwargs["scale"])
    ndim = len(kwargs["axis_labels"]) - (1 if kwargs.get("color_by") is not None else 0)
    return (np.asarray(data) * scale[-ndim:])[:, ::-1]


def rows_sorted(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    return a[np.lexsort(a.T[::-1])]


# --------------------------------------------------------------------------------------------
# claiming paths
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(V07_STORES))
def test_claims_every_v07_store(name):
    assert napari_get_reader(str(v07_store(name))) is zv_reader.read_for_napari


def test_claims_trailing_slash_root_json_and_path_objects():
    store = v07_store("points")
    assert napari_get_reader(str(store) + "/") is not None
    assert napari_get_reader(str(store / "zarr.json")) is not None
    assert napari_get_reader([store]) is not None


def test_not_mine_for_plain_zarr_empty_folder_files_and_missing_paths(tmp_path):
    zarr = pytest.importorskip("zarr")
    plain = tmp_path / "image.zarr"
    group = zarr.open_group(str(plain), mode="w")
    group.create_array("data", shape=(4, 4), dtype="uint8")
    group.attrs["multiscales"] = [{"version": "0.4", "datasets": [{"path": "data"}]}]
    empty = tmp_path / "empty"
    empty.mkdir()
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "zarr.json").write_text("{not json")
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    for path in (plain, empty, broken, text, tmp_path / "missing.zarrvectors"):
        assert napari_get_reader(str(path)) is None, path
    # folders named as stores are claimed, so that opening them says what is wrong
    # (tests/napari/test_errors_reach_user.py)
    for name in ("empty.zarrvectors", "broken.zv"):
        (tmp_path / name).mkdir()
        assert napari_get_reader(str(tmp_path / name)) is zv_reader.read_for_napari
    assert napari_get_reader([str(v07_store("points")), str(v07_store("mesh"))]) is None


def test_not_mine_reads_only_the_root_zarr_json(tmp_path, monkeypatch):
    """The quick check never opens the store through the core."""
    monkeypatch.setattr(nzv, "open_store", lambda *a, **k: pytest.fail("core was called"))
    (tmp_path / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group"}')
    assert napari_get_reader(str(tmp_path)) is None
    assert napari_get_reader(str(v07_store("points"))) is not None


# --------------------------------------------------------------------------------------------
# every geometry type
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(V07_STORES))
def test_metadata_name_axes_and_bounds_layer(name):
    layers = read(v07_store(name))
    store = nzv.open_store(v07_store(name))
    lo, hi = store.bounds
    for _, kwargs, _ in layers:
        meta = kwargs["metadata"]["zarr_vectors"]
        assert meta["path"] == store.path
        assert meta["geometry_type"] == V07_STORES[name]
        assert meta["level"] == 0
        assert kwargs["name"] == store.name or kwargs["name"].startswith(store.name + " ")
        assert kwargs["axis_labels"][-3:] == ("z", "y", "x")
    data, kwargs, layer_type = layers[0]
    assert layer_type == "tracks" and kwargs["metadata"]["zarr_vectors"]["role"] == "bounds"
    extent = Layer.create(data, kwargs, layer_type).extent.world[:, 1:]
    np.testing.assert_allclose(extent, np.stack([lo[::-1], hi[::-1]]))


def test_point_cloud():
    truth = expected("v07", "points")
    (bounds, points) = read(v07_store("points"))
    data, kwargs, layer_type = points
    assert layer_type == "points"
    assert kwargs["name"] == "points"
    assert data.shape == (240, 3)
    np.testing.assert_allclose(
        rows_sorted(f32(world(data, kwargs))), rows_sorted(f32(truth["positions"])), atol=1e-5
    )
    features = kwargs["features"]
    expected_columns = {"object_id", "intensity", "label", "rgb[0]", "rgb[1]", "rgb[2]"}
    expected_columns |= {"score", "color[0]", "color[1]", "color[2]", "group_id", "groups"}
    assert expected_columns <= set(features)
    assert sorted(features["object_id"].tolist()) == sorted(truth["object_ids"])
    # object attribute joined per vertex; group listing for objects in two groups
    score = np.asarray(truth["object_attributes"]["score"])
    np.testing.assert_allclose(features["score"], score[features["object_id"]])
    in_two = np.isin(features["object_id"], [0, 5, 10])
    assert set(features["groups"][in_two]) == {"0;3", "1;3", "2;3"}
    assert set(features["group_id"][~in_two]) <= {0, 1, 2}
    assert set(features["label"]) <= set(truth["vertex_attributes"]["label"])
    # the rgb attribute is the default colour, as RGBA
    assert kwargs["face_color"].shape == (240, 4)
    assert kwargs["metadata"]["zarr_vectors"]["colour_by"] == "rgb"


def test_point_cloud_without_objects():
    ((_, _, _), (data, kwargs, layer_type)) = read(v07_store("points_binned"))
    assert layer_type == "points" and data.shape == (150, 3)
    assert set(kwargs["features"]) == {"intensity"}
    assert kwargs["face_color"] == "intensity"


def test_lines_as_vectors():
    truth = expected("v07", "lines")
    _, (data, kwargs, layer_type) = read(v07_store("lines"))
    assert layer_type == "vectors"
    assert data.shape == (40, 2, 3)
    starts = world(data[:, 0], kwargs)
    ends = world(data[:, 0] + data[:, 1], kwargs)
    got = {
        tuple(sorted(map(tuple, np.round(f32([s, e]), 4))))
        for s, e in zip(starts, ends, strict=True)
    }
    want = {tuple(sorted(map(tuple, np.round(f32(seg), 4)))) for seg in truth["endpoints"]}
    assert got == want
    features = kwargs["features"]
    assert {"object_id", "length", "kind", "group_id", "direction"} <= set(features)
    assert sorted(features["object_id"].tolist()) == list(range(40))
    np.testing.assert_allclose(
        features["length"], f32(truth["object_attributes"]["length"])[features["object_id"]]
    )
    assert kwargs["edge_color"] == "direction"


@pytest.mark.parametrize("name", ["polylines", "streamlines"])
def test_polylines_and_streamlines_as_tracks(name):
    truth = expected("v07", name)
    _, (data, kwargs, layer_type) = read(v07_store(name))
    assert layer_type == "tracks"
    n_vertices = sum(len(p) for p in truth["polylines"])
    assert data.shape == (n_vertices, 5)
    assert np.all(data[:, 1] == 0), "static display: every vertex at t = 0"
    assert kwargs["axis_labels"] == ("no time", "z", "y", "x")  # no phantom "t"
    features = kwargs["features"]
    assert {"object_id", "radius", "tangent2[0]", "tangent2[1]", "mean_radius", "tract_id"} <= set(
        features
    )
    assert {"group_id", "direction"} <= set(features)
    coords = world(data[:, 2:], kwargs)
    track_ids = data[:, 0].astype(int)
    assert len(np.unique(track_ids)) == len(truth["polylines"])
    for track in np.unique(track_ids):
        rows = track_ids == track
        (object_id,) = set(features["object_id"][rows].tolist())
        np.testing.assert_allclose(f32(coords[rows]), f32(truth["polylines"][object_id]), atol=1e-5)
    # level-of-detail layers colour the same way at every level: radius is stored at level 0
    # only, so the default is the direction; a static read of level 0 uses radius
    assert kwargs["color_by"] == "direction"
    assert "direction" in kwargs["colormaps_dict"]
    _, (_, static, _) = zv_reader.read_zarr_vectors(str(v07_store(name)), level=0)
    assert static["color_by"] == ("direction" if name == "streamlines" else "radius")


@pytest.mark.parametrize("name", ["graph", "skeleton"])
def test_graph_and_skeleton_edges_and_nodes(name):
    truth = expected("v07", name)
    layers = by_role(read(v07_store(name)))
    edges_data, edges_kw, edges_type = layers["edges"]
    nodes_data, nodes_kw, nodes_type = layers["nodes"]
    assert (edges_type, nodes_type) == ("vectors", "points")
    assert edges_kw["name"] == f"{name} edges"
    positions = f32(truth["positions"])
    truth_edges = np.asarray(truth.get("edges") or truth["edges_child_parent"])
    assert nodes_data.shape == (len(positions), 3)
    assert edges_data.shape == (len(truth_edges), 2, 3)
    np.testing.assert_allclose(
        rows_sorted(f32(world(nodes_data, nodes_kw))), rows_sorted(positions), atol=1e-5
    )
    starts = np.round(f32(world(edges_data[:, 0], edges_kw)), 4)
    ends = np.round(f32(world(edges_data[:, 0] + edges_data[:, 1], edges_kw)), 4)
    got = {(tuple(s), tuple(e)) for s, e in zip(starts, ends, strict=True)}
    want = {
        (tuple(np.round(positions[a], 4)), tuple(np.round(positions[b], 4))) for a, b in truth_edges
    }
    if name == "graph":  # undirected
        got = {tuple(sorted(p)) for p in got}
        want = {tuple(sorted(p)) for p in want}
    assert got == want, "skeleton vectors point from child to parent"
    node_attr = "degree" if name == "graph" else "radius"
    edge_attr = "weight" if name == "graph" else "edge_len"
    assert {"object_id", node_attr} <= set(nodes_kw["features"])
    assert {"object_id", edge_attr, node_attr} <= set(edges_kw["features"])
    object_ids = truth.get("object_ids", [0] * len(positions))
    assert sorted(nodes_kw["features"]["object_id"].tolist()) == sorted(object_ids)


def test_mesh_as_surface_with_outward_winding():
    truth = expected("v07", "mesh")
    _, ((vertices, faces, values), kwargs, layer_type) = read(v07_store("mesh"))
    assert layer_type == "surface"
    assert vertices.shape == (50, 3) and faces.shape == (92, 3)
    assert {"object_id", "curv", "area", "group_id"} <= set(kwargs["features"])
    np.testing.assert_allclose(values, kwargs["features"]["curv"])
    # v0.7 mesh manifests cannot separate objects sharing a chunk (FORMAT07): a shared vertex
    # carries the first object's id, so only the set of ids is certain
    assert set(kwargs["features"]["object_id"].tolist()) <= set(truth["object_ids"])

    # every stored face appears, and its normal (back in store order) is unchanged
    v_world = f32(world(vertices, kwargs))  # store (x, y, z) order
    truth_v = f32(truth["vertices"])
    lookup = {tuple(np.round(v, 4)): i for i, v in enumerate(truth_v)}
    mapped = np.array([[lookup[tuple(np.round(v_world[i], 4))] for i in f] for f in faces])

    def normals(v, f):
        return np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])

    truth_faces = np.asarray(truth["faces"])
    by_set = {frozenset(f): normals(truth_v, np.asarray([f]))[0] for f in truth_faces.tolist()}
    assert {frozenset(f) for f in mapped.tolist()} == set(by_set)
    napari_order = vertices * np.asarray(kwargs["scale"])  # (z, y, x) world coordinates
    layer_normals = normals(napari_order, faces)[:, ::-1]  # back to (x, y, z)
    for face, n in zip(mapped.tolist(), layer_normals, strict=True):
        np.testing.assert_allclose(n, by_set[frozenset(face)], rtol=1e-3, atol=1e-3)


ALL_STORES = sorted(
    p.relative_to(DATA).as_posix()
    for p in DATA.glob("**/*.zarrvectors")
    # a store that must be refused (tests/format/test_next_layouts.py)
    if p.is_dir() and p.name != "required_unknown.zarrvectors"
)
LAYER_TYPES = {
    "point_cloud": ["points"],
    "line": ["vectors"],
    "polyline": ["tracks"],
    "streamline": ["tracks"],
    "graph": ["vectors", "points"],
    "skeleton": ["vectors", "points"],
    "mesh": ["surface"],
}


@pytest.mark.parametrize("relpath", ALL_STORES)
def test_every_fixture_store_opens_with_its_layers_and_counts(relpath):
    """v07, v09, the v07 twins and the v09 edge cases: layer types and sizes match the core."""
    path = DATA / relpath
    store = nzv.open_store(path)
    with warnings.catch_warnings():
        if "draco" in relpath:
            warnings.simplefilter("ignore", nzv.ZVChunkWarning)
        else:
            warnings.simplefilter("error", nzv.ZVChunkWarning)
        layers = read(path)
        geometry = store.read(level=0)
    if geometry.vertex_count == 0:  # e.g. a store of parametric objects only: the bounds box
        assert [lt for _, _, lt in layers] == ["tracks"]
        return
    assert [lt for _, _, lt in layers] == ["tracks", *LAYER_TYPES[store.geometry_type]]
    for data, kwargs, layer_type in layers[1:]:
        n = len(data[0]) if layer_type == "surface" else len(data)
        if layer_type == "points":
            assert n == geometry.vertex_count
        elif layer_type == "tracks":
            assert n == sum(len(p) for p in geometry.paths)
        elif layer_type == "vectors":
            assert n == len(geometry.edges) > 0
        else:
            assert n == geometry.vertex_count and len(data[1]) == len(geometry.faces)
        if geometry.vertex_object_ids is not None or geometry.paths:
            assert "object_id" in kwargs["features"]
        for name in geometry.vertex_attributes:
            assert any(c == name or c.startswith(f"{name}[") for c in kwargs["features"]), name
        assert kwargs["metadata"]["zarr_vectors"]["level"] == 0


@pytest.mark.parametrize("name", sorted(p.stem for p in (DATA / "v09" / "expected").glob("*.json")))
def test_v09_vertex_counts_match_the_ground_truth(name):
    truth = json.loads((DATA / "v09" / "expected" / f"{name}.json").read_text())
    layers = by_role(read(DATA / "v09" / f"{name}.zarrvectors"))
    role = {"point_cloud": "points", "graph": "nodes", "skeleton": "nodes", "mesh": "mesh"}.get(
        truth["geometry_type"]
    )
    if role is None:
        pytest.skip("paths and segments are counted per path / edge")
    data = layers[role][0]
    n = len(data[0]) if role == "mesh" else len(data)
    assert n == truth["levels"]["0"]["vertex_count"]


# --------------------------------------------------------------------------------------------
# levels
# --------------------------------------------------------------------------------------------


def test_reader_opens_the_resolution_level_within_the_budget(monkeypatch):
    from napari_zarr_vectors.napari.lod.settings import get_settings

    monkeypatch.setattr(get_settings(), "vertex_budget", 100)
    _, (data, kwargs, _) = read(v07_store("points"))  # 240 / 63 / 8 vertices
    # no camera: the level a 1000-pixel view of the whole store resolves (0 here), thinned
    assert kwargs["metadata"]["zarr_vectors"]["level"] == 0
    # a level-of-detail layer: its level is in the metadata and the status bar, not the name
    assert kwargs["name"] == "points"
    assert 0 < len(data) <= 100
    _, (small, kwargs, _) = zv_reader.read_zarr_vectors(str(v07_store("points")), vertex_budget=10)
    assert kwargs["metadata"]["zarr_vectors"]["level"] == 0
    assert 0 < len(small) <= 10
    # the points of the smaller budget are among those of the larger one (a stable subset)
    assert {tuple(p) for p in np.asarray(small)} <= {tuple(p) for p in np.asarray(data)}


def test_explicit_level():
    _, (data, kwargs, _) = zv_reader.read_zarr_vectors(str(v07_store("streamlines")), level=2)
    assert kwargs["metadata"]["zarr_vectors"]["level"] == 2
    assert kwargs["name"] == "streamlines (level 2)"  # a static layer
    assert len(data) > 0


# --------------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------------


def test_corrupt_chunk_is_skipped_with_a_warning_naming_it(tmp_path):
    store = Path(shutil.copytree(v07_store("streamlines"), tmp_path / "streamlines.zarrvectors"))
    (store / "0" / "vertices" / "0.0.0" / "c" / "0").write_bytes(b"\x01\x02 not a chunk")
    with pytest.warns(nzv.ZVChunkWarning, match=r"chunk 0\.0\.0"):
        _, (data, kwargs, layer_type) = read(store)
    assert layer_type == "tracks"
    assert 0 < len(data) < 159, "the rest of the store loads"


def test_missing_draco_gives_a_clear_notification_and_no_layers(monkeypatch):
    from napari.utils.notifications import NotificationSeverity, notification_manager

    monkeypatch.setitem(sys.modules, "DracoPy", None)  # import DracoPy -> ImportError
    before = len(notification_manager.records)
    result = read(v07_store("mesh_draco"))
    assert result == [(None,)], "npe2's 'read, no layers' sentinel: no reader dialog follows"
    new = notification_manager.records[before:]
    assert [n.severity for n in new] == [NotificationSeverity.ERROR]
    assert "mesh_draco" in new[0].message and "napari-zarr-vectors[draco]" in new[0].message


def test_draco_mesh_with_draco_installed():
    pytest.importorskip("DracoPy")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nzv.ZVChunkWarning)  # core: pre-Draco faces left out
        _, ((vertices, faces, _), _, layer_type) = read(v07_store("mesh_draco"))
    assert layer_type == "surface" and vertices.shape == (50, 3) and len(faces) > 0


# --------------------------------------------------------------------------------------------
# reader preference
# --------------------------------------------------------------------------------------------


def test_reading_registers_the_reader_preference(fresh_napari_settings):
    assert READER_PATTERN not in fresh_napari_settings.plugins.extension2reader
    read(v07_store("points"))
    assert fresh_napari_settings.plugins.extension2reader[READER_PATTERN] == PLUGIN_NAME


def test_on_activate_registers_the_reader_preference(fresh_napari_settings):
    zv_reader.on_activate(None)
    assert fresh_napari_settings.plugins.extension2reader[READER_PATTERN] == PLUGIN_NAME


def test_both_store_suffixes_become_preferences(fresh_napari_settings):
    assert READER_PATTERNS == ("*.zarrvectors/", "*.zv/")
    assert not set(READER_PATTERNS) & set(fresh_napari_settings.plugins.extension2reader)
    read(v07_store("points"))
    prefs = fresh_napari_settings.plugins.extension2reader
    assert {p: prefs[p] for p in READER_PATTERNS} == dict.fromkeys(READER_PATTERNS, PLUGIN_NAME)


def test_a_users_own_choice_is_kept(fresh_napari_settings):
    plugins = fresh_napari_settings.plugins
    plugins.extension2reader = {READER_PATTERN: "napari-ome-zarr", "*.tif": "napari"}
    assert register_reader_preference() is True  # only the pattern the user left open
    assert plugins.extension2reader == {
        READER_PATTERN: "napari-ome-zarr",
        "*.tif": "napari",
        "*.zv/": PLUGIN_NAME,
        "*.nii": PLUGIN_NAME,
        "*.nii.gz": PLUGIN_NAME,
    }
    plugins.extension2reader = {**plugins.extension2reader, "*.zv/": "napari"}
    assert register_reader_preference() is False
    assert plugins.extension2reader["*.zv/"] == "napari"


def test_preference_is_saved_to_the_settings_file(fresh_napari_settings):
    register_reader_preference()
    text = Path(fresh_napari_settings.config_path).read_text()
    assert "zarrvectors" in text and PLUGIN_NAME in text


@pytest.mark.parametrize("suffix", ["", "/"])
def test_a_zv_store_opens_with_this_plugin_once_registered(
    tmp_path, viewer_model, fresh_napari_settings, suffix
):
    """zarr-vectors' short suffix: ``*.zv/`` is a preference too, so a ``.zv`` store opens
    without the reader dialog, with the same layers as the ``.zarrvectors`` original."""
    store = Path(shutil.copytree(v07_store("skeleton"), tmp_path / "skeleton.zv"))
    zv_reader.on_activate(None)
    assert fresh_napari_settings.plugins.extension2reader["*.zv/"] == PLUGIN_NAME
    opened = viewer_model.open(str(store) + suffix, plugin=None)
    assert {layer.source.reader_plugin for layer in opened} == {PLUGIN_NAME}
    reference = by_role(read(v07_store("skeleton")))
    got = {layer.metadata["zarr_vectors"]["role"]: layer for layer in opened}
    assert sorted(got) == sorted(reference) and len(got) == 3
    for role, (data, kwargs, layer_type) in reference.items():
        assert got[role]._type_string == layer_type
        assert got[role].name == kwargs["name"]  # "skeleton bounds": no ".zv" in the name
        np.testing.assert_array_equal(np.asarray(got[role].data), np.asarray(data))


def test_which_names_napari_offers_this_reader_for(tmp_path, mock_app_model):
    """The manifest's filename_patterns, as napari uses them: folders of any name are offered
    (``accepts_directories``); URLs and the Preferences dialog's pattern filter match the
    patterns (the dialog strips the trailing ``/``); other suffixes are not offered."""
    from napari.plugins import _initialize_plugins
    from napari.plugins._npe2 import get_readers

    _initialize_plugins.cache_clear()  # register into the test app (see viewer_model)
    _initialize_plugins()
    folder = tmp_path / "any-name"
    folder.mkdir()
    offered = [
        str(folder),
        "https://example.org/data/a.zarrvectors",
        "https://example.org/data/a.zarrvectors/",
        "https://example.org/data/a.zv",
        "https://example.org/data/a.zv/",
        *READER_PATTERNS,
    ]
    assert {p: PLUGIN_NAME in get_readers(p) for p in offered} == dict.fromkeys(offered, True)
    not_offered = ["https://example.org/a.zarr", str(tmp_path / "scan.zvi"), "*.tif"]
    assert {p: PLUGIN_NAME in get_readers(p) for p in not_offered} == dict.fromkeys(
        not_offered, False
    )
