"""Hover: napari's status names the store's object id and object attributes
on every layer kind the plugin makes, agrees with Pick, and keeps the level line."""

from __future__ import annotations

import numpy as np
import pytest
from _zv_napari import DATA
from _zv_viewer import cursor_at_row, hover, pick_in_3d
from napari.layers import Layer

import napari_zarr_vectors as nzv
from napari_zarr_vectors.format.geometry import Geometry
from napari_zarr_vectors.napari import open_in_viewer
from napari_zarr_vectors.napari.browse.pick import pick_at, pick_slab
from napari_zarr_vectors.napari.layerdata.build import StoreInfo, layers_from_geometry
from napari_zarr_vectors.napari.npe2.attach import hook_viewer
from napari_zarr_vectors.napari.values import format_value

pytestmark = pytest.mark.gui


def opened(viewer, qtbot, name: str, version: str = "v09"):
    """A store opened with level of detail, locked at level 0, in a 2-D view of the whole
    store (every object is loaded: each vertex is a distinct position)."""
    c = open_in_viewer(
        viewer, DATA / version / f"{name}.zarrvectors", lock_level=0, first_view=False
    )
    viewer.reset_view()
    qtbot.waitUntil(lambda: not c.is_loading, timeout=20_000)
    return c


def object_rows(layer, object_id: int) -> np.ndarray:
    return np.flatnonzero(layer.features["object_id"].to_numpy() == object_id)


def expected_object_text(store, object_id: int, names) -> str:
    """``object <id> (name: value, ...)`` from the store itself (not from the layer)."""
    ids = np.asarray(store.object_ids(0))
    attrs = store.object_attributes(0)
    k = int(np.flatnonzero(ids == object_id)[0])
    parts = [f"{n}: {format_value(np.asarray(attrs[n])[k])}" for n in names]
    return f"object {object_id} ({', '.join(parts)}"


@pytest.mark.parametrize(
    ("name", "kind"),
    [("polylines", "tracks"), ("lines", "vectors"), ("mesh", "surface"), ("points", "points")],
)
def test_hover_names_the_store_object_and_its_attributes(make_napari_viewer, qtbot, name, kind):
    viewer = make_napari_viewer()
    c = opened(viewer, qtbot, name)
    layer = next(lyr for lyr in c.layers if type(lyr).__name__.lower() == kind)
    viewer.layers.selection.active = layer
    store = nzv.open_store(DATA / "v09" / f"{name}.zarrvectors")
    ids = np.unique(layer.features["object_id"].to_numpy())
    assert len(ids)
    attr_names = [n for n in store.object_attributes(0) if n in layer.features]
    assert attr_names
    for object_id in {int(ids[0]), int(ids[-1])}:
        row = int(object_rows(layer, object_id)[0])
        status = hover(viewer, layer, cursor_at_row(viewer, layer, row))
        text = status["coordinates"]
        assert expected_object_text(store, object_id, attr_names) in text, text
        assert "track_id" not in text and "direction" not in text
        # the level line follows the layer name
        assert status["layer_base"].startswith(layer.name)
        assert "level 0 (locked)" in status["layer_base"]
        assert f"{c.vertex_count:,} vertices" in status["layer_base"]
    # far from every vertex: coordinates only
    far = np.asarray(viewer.dims.point, dtype=np.float64).copy()
    far[-3:] = np.asarray(store.bounds[1])[::-1] * 10
    status = hover(viewer, layer, far)
    assert "object" not in status["coordinates"]


def test_hover_on_tracks_agrees_with_pick_not_with_napari_track_id(make_napari_viewer, qtbot):
    viewer = make_napari_viewer()
    c = opened(viewer, qtbot, "streamlines")
    layer = c.layers[0]
    assert type(layer).__name__ == "Tracks"
    viewer.layers.selection.active = layer
    data = np.asarray(layer.data)
    oids = layer.features["object_id"].to_numpy()
    # a vertex whose track number differs from its object id (what napari's hover showed)
    row = int(np.flatnonzero(data[:, 0] != oids)[-1])
    position = cursor_at_row(viewer, layer, row)
    text = hover(viewer, layer, position)["coordinates"]
    pick = pick_at(
        [layer],
        position,
        displayed=list(viewer.dims.displayed),
        zoom=viewer.scene.camera.zoom,
        slab=pick_slab(viewer, [layer]),
    )
    assert pick is not None and pick.object_id == int(oids[row])
    assert f"object {pick.object_id} " in text
    assert f"object {int(data[row, 0])} " not in text


def test_hover_in_3d_names_the_object_nearest_the_camera_as_pick_does(make_napari_viewer, qtbot):
    viewer = make_napari_viewer()
    c = opened(viewer, qtbot, "lines")
    viewer.dims.ndisplay = 3
    viewer.reset_view()
    qtbot.waitUntil(lambda: not c.is_loading, timeout=20_000)
    layer = c.layers[0]
    viewer.layers.selection.active = layer
    row = len(layer.features) // 2
    position = cursor_at_row(viewer, layer, row)
    pick = pick_in_3d(viewer, layer, position)
    assert pick is not None
    assert f"object {pick.object_id} " in hover(viewer, layer, position)["coordinates"]


def test_hover_on_a_shapes_layer_of_a_2d_store(make_napari_viewer):
    positions = np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 1.0], [6.0, 6.0], [7.0, 8.0]])
    geometry = Geometry(
        "polyline",
        0,
        positions,
        paths=[np.arange(3), np.arange(3, 5)],
        path_object_ids=np.array([4, 9]),
    )
    info = StoreInfo(
        path="/data/flat.zarrvectors",
        name="flat",
        geometry_type="polyline",
        axes=("x", "y"),
        units=(None, None),
        bounds=(np.zeros(2), np.full(2, 10.0)),
        object_attributes={"length": np.arange(10, dtype=np.float64) * 1.5},
    )
    (data, kwargs, kind) = layers_from_geometry(geometry, info, bounds_layer=False)[0]
    assert kind == "shapes"
    viewer = make_napari_viewer()
    hook_viewer(viewer)
    layer = viewer.add_layer(Layer.create(data, kwargs, kind))
    text = hover(viewer, layer, np.array([8.0, 7.0]))["coordinates"]  # (y, x) of vertex 4
    assert "object 9 (length: 13.5)" in text
    text = hover(viewer, layer, np.array([1.0, 3.0]))["coordinates"]
    assert "object 4 (length: 6)" in text
    # a static layer: no level line after its name
    assert hover(viewer, layer, np.array([1.0, 3.0]))["layer_base"] == layer.name


def test_static_layers_read_at_a_level_get_the_hover_too(make_napari_viewer):
    from napari_zarr_vectors.napari.npe2.reader import read_zarr_vectors

    viewer = make_napari_viewer()
    layer_data = read_zarr_vectors(DATA / "v09" / "polylines.zarrvectors", level=1)
    layers = [viewer.add_layer(Layer.create(*t)) for t in layer_data]
    tracks = next(
        lyr for lyr in layers if type(lyr).__name__ == "Tracks" and "bounds" not in lyr.name
    )
    viewer.layers.selection.active = tracks
    oids = tracks.features["object_id"].to_numpy()
    row = len(oids) - 1
    status = hover(viewer, tracks, cursor_at_row(viewer, tracks, row))
    assert f"object {int(oids[row])} (" in status["coordinates"]
    assert status["layer_base"] == tracks.name and "(level 1)" in tracks.name
