"""World placement on the napari side: a store's ``crs`` becomes its layers' ``affine``, so
what is drawn, picked, planned by level of detail and saved lies in the world (RAS mm for
zarr-vectors-tools' TRK stores), not in the stored voxmm space (FORMAT-NEXT §7)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _zv_napari import DATA

import napari_zarr_vectors as nzv
from napari_zarr_vectors.format.cache import ChunkCache
from napari_zarr_vectors.napari.layerdata.placement import layer_world_positions
from napari_zarr_vectors.napari.lod import plan as lod
from napari_zarr_vectors.napari.lod.loader import Loader, LoadRequest
from napari_zarr_vectors.napari.npe2.reader import read_zarr_vectors

NEXT = DATA / "next"


def _truth() -> dict:
    return json.loads((NEXT / "expected" / "trk_crs.json").read_text(encoding="utf-8"))


def _data_layer(name: str):
    from napari.layers import Layer

    layers = [Layer.create(*t) for t in read_zarr_vectors(NEXT / f"{name}.zarrvectors")]
    (layer,) = [ly for ly in layers if len(ly.data) > 100]  # not the bounds box
    return layer


def _rounded(points: np.ndarray) -> set[tuple[float, ...]]:
    return {tuple(p) for p in np.round(np.asarray(points, float), 2).tolist()}


def test_voxmm_tractogram_is_drawn_in_ras_like_the_registered_one():
    placed, registered = _data_layer("trk_crs"), _data_layer("trk_rasmm")
    assert not np.allclose(placed.affine.affine_matrix, np.eye(5))
    assert np.allclose(registered.affine.affine_matrix, np.eye(5))
    a, _ = layer_world_positions(placed)
    b, _ = layer_world_positions(registered)
    truth = np.concatenate(
        [np.asarray(s["rasmm_nibabel"]) for s in _truth()["levels"]["0"]["streamlines"].values()]
    )
    # napari order is z, y, x: the truth reversed
    assert _rounded(a) == _rounded(b) == _rounded(truth[:, ::-1])
    # napari's own transform agrees (what it draws and hovers)
    np.testing.assert_allclose(
        placed._data_to_world(np.asarray(placed.data)[:5, 1:])[:, 1:],
        a[:5],
        atol=1e-4,
    )


def test_the_bounds_box_is_placed_too():
    from napari.layers import Layer

    boxes = [
        Layer.create(*t) for t in read_zarr_vectors(NEXT / "trk_crs.zarrvectors") if len(t[0]) < 100
    ]
    assert boxes and all(not np.allclose(b.affine.affine_matrix, np.eye(5)) for b in boxes)


@pytest.mark.parametrize("name", ["trk_crs", "trk_rasmm"])
def test_level_of_detail_plans_the_world_view_in_stored_space(name):
    """A 2-D view centred on one streamline's RAS position loads that streamline."""
    store = nzv.open_store(NEXT / f"{name}.zarrvectors")
    target = np.asarray(_truth()["levels"]["0"]["streamlines"]["7"]["rasmm_nibabel"])
    mid = target[len(target) // 2]  # RAS x, y, z
    view = lod.ViewState(
        ndisplay=2,
        center=(float(mid[1]), float(mid[0])),  # napari y, x
        zoom=50.0,  # a 1000-px canvas shows 20 mm
        canvas_size=(1000, 1000),
        point=(float(mid[2]), float(mid[1]), float(mid[0])),
        displayed=(1, 2),
        thickness=(2.0, 0.0, 0.0),
    )
    loader = Loader(store, ChunkCache())
    result = loader.load(LoadRequest(view=view, budget=10**6, locked=0))
    assert result is not None and result.level == 0
    geometry = result.geometry
    assert 7 in set(geometry.path_object_ids.tolist())
    world = store.placement.apply(geometry.positions)
    # everything loaded lies near the view (the crop is the world view's box, in stored space)
    assert np.all(np.abs(world[:, 2] - mid[2]) <= 20 + 1e-6)


def test_saving_a_placed_layer_writes_what_is_shown(tmp_path):
    from napari_zarr_vectors.napari.npe2.writer import save_layers

    out = save_layers(
        tmp_path / "saved", [_data_layer("trk_crs")], pyramid=False, show_progress=False
    )
    saved = nzv.open_store(out)
    assert saved.placement.is_identity
    got = saved.read(0).positions
    truth = np.concatenate(
        [np.asarray(s["rasmm_nibabel"]) for s in _truth()["levels"]["0"]["streamlines"].values()]
    )
    assert _rounded(got) == _rounded(truth)
    lo, hi = saved.bounds
    assert np.all(got >= lo - 1e-3) and np.all(got <= hi + 1e-3)


def test_store_panel_toggles_the_stored_space(make_napari_viewer, qtbot):
    """The Store panel names the placement and its checkbox shows the stored (voxmm) space:
    layers lose the affine and level of detail re-plans there; unchecking places them again."""
    from napari_zarr_vectors.napari import open_in_viewer
    from napari_zarr_vectors.napari.widgets.store_panel import StorePanel

    viewer = make_napari_viewer()
    path = NEXT / "trk_crs.zarrvectors"
    target = open_in_viewer(viewer, path, first_view=False)
    viewer.dims.ndisplay = 3
    viewer.reset_view()
    qtbot.waitUntil(lambda: not target.is_loading, timeout=20_000)
    layer = target.layers[0]
    viewer.layers.selection.active = layer
    panel = StorePanel(viewer)
    viewer.window.add_dock_widget(panel)
    qtbot.waitUntil(lambda: "World placement" in panel.body.text(), timeout=10_000)
    assert "RASmm" in panel.body.text() and panel.stored_space.isVisibleTo(panel)
    placed = _rounded(layer_world_positions(layer)[0])
    truth = np.concatenate(
        [np.asarray(s["rasmm_nibabel"]) for s in _truth()["levels"]["0"]["streamlines"].values()]
    )
    assert placed <= _rounded(truth[:, ::-1]) and placed
    from napari_zarr_vectors.napari.browse.targets import controller_of, store_layers

    def shown() -> tuple:
        (data,) = [ly for ly in store_layers(viewer, str(path)) if len(ly.data) > 100]
        return data, controller_of(data)

    try:
        panel.stored_space.setChecked(True)
        layer, controller = shown()
        assert layer is not target.layers[0]
        assert all(
            np.allclose(ly.affine.affine_matrix, np.eye(ly.ndim + 1)) for ly in viewer.layers
        )
        qtbot.waitUntil(lambda: not controller.is_loading, timeout=20_000)
        stored = nzv.open_store(path).read(controller.level).positions
        got = _rounded(layer_world_positions(layer)[0])
        assert got and got <= _rounded(stored[:, ::-1])
    finally:
        panel.stored_space.setChecked(False)
    layer, controller = shown()
    assert not np.allclose(layer.affine.affine_matrix, np.eye(5))
    qtbot.waitUntil(lambda: not controller.is_loading, timeout=20_000)
    assert _rounded(layer_world_positions(layer)[0]) <= _rounded(truth[:, ::-1])


@pytest.mark.parametrize("flip", [1.0, -1.0])
def test_mesh_faces_stay_outward_under_a_mirroring_placement(tmp_path, flip):
    """A crs affine with a negative determinant mirrors the mesh in the world: the winding
    is flipped with it, so the icospheres' faces still point outward as napari draws them."""
    import shutil

    from napari.layers import Layer

    path = tmp_path / "mesh.zarrvectors"
    shutil.copytree(NEXT / "mesh_flg.zarrvectors", path)
    doc = json.loads((path / "zarr.json").read_text())
    matrix = np.diag([flip, 1.0, 1.0, 1.0])
    matrix[:3, 3] = [10.0, -5.0, 2.0]
    doc["attributes"]["zarr_vectors"]["crs"] = {"affine": matrix.ravel().tolist()}
    (path / "zarr.json").write_text(json.dumps(doc))
    (surface,) = [Layer.create(*t) for t in read_zarr_vectors(path, level=0) if t[2] == "surface"]
    vertices, faces = np.asarray(surface.data[0], float), np.asarray(surface.data[1])
    world = surface._data_to_world(vertices)  # napari order (z, y, x)
    ids = surface.features["object_id"].to_numpy()
    centres = {o: world[ids == o].mean(axis=0) for o in np.unique(ids)}
    tri = world[faces]
    normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    # the reader's winding makes normals computed in napari's world order outward
    outward = np.einsum(
        "ij,ij->i", normal, tri.mean(axis=1) - np.array([centres[o] for o in ids[faces[:, 0]]])
    )
    assert np.mean(outward > 0) > 0.95
