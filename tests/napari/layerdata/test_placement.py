"""A store's placement as one value (napari_zarr_vectors.napari.layerdata.placement): both
directions for points, boxes and layer data on zarr-vectors-tools' TRK ingest (a ``crs``
from voxmm to RAS mm that swaps y and z and flips x), napari axis order with a time axis,
a rotation, and the Store panel's stored-space toggle."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _zv_napari import DATA

import napari_zarr_vectors as nzv
from napari_zarr_vectors.napari.coords import layer_to_world
from napari_zarr_vectors.napari.layerdata.placement import (
    Placement,
    layer_data_to_store,
    layer_data_to_world,
    layer_world_positions,
    show_stored_space,
)
from napari_zarr_vectors.napari.layerdata.store_info import store_info
from napari_zarr_vectors.napari.lod import camera
from napari_zarr_vectors.napari.lod.plan import ViewState

TRK = DATA / "next" / "trk_crs.zarrvectors"


@pytest.fixture(scope="module")
def trk() -> nzv.Store:
    return nzv.open_store(TRK)


def _rasmm() -> np.ndarray:
    truth = json.loads((DATA / "next" / "expected" / "trk_crs.json").read_text(encoding="utf-8"))
    streamlines = truth["levels"]["0"]["streamlines"].values()
    return np.concatenate([np.asarray(s["rasmm_nibabel"]) for s in streamlines])


def _rotation(ndim: int = 3) -> np.ndarray:
    c, s = np.cos(0.3), np.sin(0.3)
    affine = np.eye(ndim + 1)
    affine[-3:-1, -3:-1] = [[c, -s], [s, c]]  # rotate the last two store axes
    affine[:-1, -1] = np.arange(1.0, ndim + 1.0) * 10
    return affine


# -- points ---------------------------------------------------------------------------------


def test_stored_points_land_in_ras_mm_in_napari_order_and_come_back(trk):
    placement = Placement.of(trk)
    assert placement.axis_types == ("space",) * 3 and not placement.stored_space
    np.testing.assert_allclose(placement.affine, trk.world_affine)
    stored = np.asarray(trk.read(0).positions, np.float64)
    world = placement.to_world_points(stored)
    # napari order is z, y, x: nibabel's RAS mm reversed (the same vertices, as rounded sets)
    got = {tuple(p) for p in np.round(world, 2).tolist()}
    assert got == {tuple(p) for p in np.round(_rasmm()[:, ::-1], 2).tolist()}
    np.testing.assert_allclose(placement.to_store_points(world), stored, atol=1e-9)


def test_the_stored_space_toggle_leaves_the_crs_out(trk):
    stored = np.array([[10.0, 20.0, 30.0]])
    assert Placement.of(trk).affine is not None
    show_stored_space(str(trk.path), True)
    try:
        placement = Placement.of(trk)
        assert placement.stored_space and placement.affine is None
        np.testing.assert_array_equal(placement.to_world_points(stored), [[30.0, 20.0, 10.0]])
        np.testing.assert_array_equal(placement.order, [2, 1, 0])
        # the toggle is per store path: the override sees the placement the store has
        assert Placement.of(trk, stored_space=False).affine is not None
    finally:
        show_stored_space(str(trk.path), False)
    assert not Placement.of(trk).stored_space


def test_time_axis_leads_and_space_axes_reverse():
    placement = Placement(("time", "space", "space", "space"), np.array([1.0, 2.0, 3.0, 4.0]))
    np.testing.assert_array_equal(placement.world_order, [0, 3, 2, 1])
    t_xyz = np.array([[5.0, 1.0, 2.0, 3.0]])
    np.testing.assert_array_equal(placement.to_world_points(t_xyz), [[5.0, 3.0, 2.0, 1.0]])
    np.testing.assert_array_equal(placement.to_store_points([[5.0, 3.0, 2.0, 1.0]]), t_xyz)
    np.testing.assert_array_equal(placement.space, [1, 2, 3])


def test_a_rotation_round_trips_points():
    placement = Placement(("space",) * 3, np.ones(3), _rotation())
    stored = np.random.default_rng(1).uniform(-50, 50, size=(20, 3))
    world = placement.to_world_points(stored)
    want = stored @ _rotation()[:3, :3].T + _rotation()[:3, 3]
    np.testing.assert_allclose(world, want[:, ::-1])
    np.testing.assert_allclose(placement.to_store_points(world), stored, atol=1e-9)
    assert placement.world_units_per_store_unit == pytest.approx(1.0)


# -- boxes ----------------------------------------------------------------------------------


def test_store_bounds_become_the_world_box_of_the_vertices_and_come_back(trk):
    placement = Placement.of(trk)
    lo, hi = placement.to_world_box(*trk.bounds)
    world = placement.to_world_points(trk.read(0).positions)
    # a signed permutation with scales: the box of the bounds is the box of the vertices
    np.testing.assert_allclose(lo, world.min(axis=0), atol=1e-4)
    np.testing.assert_allclose(hi, world.max(axis=0), atol=1e-4)
    back_lo, back_hi = placement.to_store_box(lo, hi)
    np.testing.assert_allclose(back_lo, trk.bounds[0], atol=1e-9)
    np.testing.assert_allclose(back_hi, trk.bounds[1], atol=1e-9)


def test_a_rotated_box_holds_its_corners_both_ways():
    placement = Placement(("space",) * 3, np.ones(3), _rotation())
    lo, hi = np.array([0.0, -2.0, 1.0]), np.array([4.0, 3.0, 6.0])
    corners = np.array(np.meshgrid(*zip(lo, hi, strict=True))).reshape(3, -1).T
    w_lo, w_hi = placement.to_world_box(lo, hi)
    world = placement.to_world_points(corners)
    np.testing.assert_allclose(w_lo, world.min(axis=0))  # the smallest box around them
    np.testing.assert_allclose(w_hi, world.max(axis=0))
    s_lo, s_hi = placement.to_store_box(w_lo, w_hi)
    assert np.all(s_lo <= lo + 1e-9) and np.all(s_hi >= hi - 1e-9)
    assert np.all(s_lo[:1] == pytest.approx(lo[:1]))  # the axis the rotation leaves alone


def test_the_visible_store_box_is_the_visible_world_box_taken_back(trk):
    placement = Placement.of(trk)
    w_lo, w_hi = placement.to_world_box(*trk.bounds)
    mid = (w_lo + w_hi) / 2
    view = ViewState(
        ndisplay=2,
        center=(float(mid[1]), float(mid[2])),
        zoom=20.0,
        canvas_size=(200, 300),
        point=tuple(float(m) for m in mid),
        displayed=(1, 2),
        thickness=(4.0, 1.0, 1.0),
    )
    vis = camera.visible_world_box(view, placement, trk.bounds)
    np.testing.assert_allclose(vis[0], [mid[0] - 2, mid[1] - 5, mid[2] - 7.5])
    np.testing.assert_allclose(vis[1], [mid[0] + 2, mid[1] + 5, mid[2] + 7.5])
    lo, hi = camera.visible_store_box(view, trk)
    want_lo, want_hi = placement.to_store_box(*vis)
    np.testing.assert_allclose(lo, want_lo)
    np.testing.assert_allclose(hi, want_hi)
    # world z (napari axis 0, the slab) is store y after the crs swaps y and z
    assert hi[1] - lo[1] == pytest.approx(4.0)


# -- layer data -----------------------------------------------------------------------------


def test_layer_data_is_drawn_where_the_placement_puts_the_points(trk):
    from napari.layers import Points

    placement = Placement.of(trk)
    stored = np.asarray(trk.read(0).positions, np.float64)[:50]
    data = placement.to_layer_data(stored)
    np.testing.assert_allclose(data, (stored / placement.scale)[:, placement.order])
    scale = placement.scale[placement.order]
    layer = Points(data, scale=scale, affine=placement.napari_affine())
    world = placement.to_world_points(stored)
    np.testing.assert_allclose(layer._data_to_world(data), world, atol=1e-9)  # napari agrees
    np.testing.assert_allclose(layer_world_positions(layer)[0], world, atol=1e-9)
    np.testing.assert_allclose(
        layer_to_world(data, scale, affine=layer.affine.affine_matrix), world
    )


def test_saving_a_store_layer_writes_its_world_positions_in_store_order(trk):
    info = store_info(trk, 0, objects=False)
    placement = Placement.of(trk)
    np.testing.assert_array_equal(info.placement.order, placement.order)
    stored = np.asarray(trk.read(0).positions, np.float64)[:50]
    data = placement.to_layer_data(stored)
    attributes = {
        "scale": placement.scale[placement.order],
        "affine": placement.napari_affine(),
        "metadata": {
            "zarr_vectors": {
                "napari_order": placement.order.tolist(),
                "world_order": placement.world_order.tolist(),
                "world_affine": placement.affine.tolist(),
            }
        },
    }
    world = layer_data_to_world(data, attributes)
    np.testing.assert_allclose(world, placement.to_world_points(stored), atol=1e-9)
    np.testing.assert_allclose(
        layer_data_to_store(data, attributes), trk.placement.apply(stored), atol=1e-9
    )
