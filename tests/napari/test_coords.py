"""Store <-> layer coordinates (napari_zarr_vectors.napari.coords): the forward map the layer
builders use and the inverse saving uses, round trip, with a placement and a mirror."""

from __future__ import annotations

import numpy as np
import pytest

from napari_zarr_vectors.napari.coords import (
    axis_reversal_is_mirror,
    layer_to_world,
    napari_affine,
    napari_axis_order,
    placed_order,
    placement_mirrors,
    store_to_layer,
    to_store_order,
)

POSITIONS = np.array([[1.0, 2.0, 3.0], [10.0, -4.0, 0.5], [0.0, 0.0, 7.0]])  # x, y, z
SCALE = np.array([2.0, 0.5, 4.0])  # store order

#: a placement that flips x, swaps y and z (TrackVis-like; together not a mirror) and
#: translates
MIRROR_SWAP = np.array(
    [
        [-1.0, 0.0, 0.0, 100.0],
        [0.0, 0.0, 3.0, -5.0],
        [0.0, 2.0, 0.0, 1.0],
        [0.0, 0.0, 0.0, 1.0],
    ]
)

#: a mirror: x flipped, y scaled, translated
MIRROR = np.array(
    [
        [-1.0, 0.0, 0.0, 3.0],
        [0.0, 2.0, 0.0, 0.0],
        [0.0, 0.0, 1.0, -2.0],
        [0.0, 0.0, 0.0, 1.0],
    ]
)


def round_trip(positions, scale, axis_types, affine=None):
    world_order = napari_axis_order(axis_types)
    order = placed_order(world_order, affine)
    data = store_to_layer(positions, scale, order)
    layer_affine = None if affine is None else napari_affine(affine, world_order, order)
    world = layer_to_world(data, scale=np.asarray(scale)[order], affine=layer_affine)
    return data, world, to_store_order(world, world_order)


def test_napari_axis_order_leads_with_non_space_axes_then_reverses_space():
    assert napari_axis_order(("space",) * 3).tolist() == [2, 1, 0]
    assert napari_axis_order(("time", "space", "space", "space")).tolist() == [0, 3, 2, 1]
    assert napari_axis_order(("space", "channel", "space")).tolist() == [1, 2, 0]


def test_store_to_layer_divides_by_scale_in_napari_order():
    data = store_to_layer(POSITIONS, SCALE, napari_axis_order(("space",) * 3))
    np.testing.assert_allclose(data[0], [3.0 / 4.0, 2.0 / 0.5, 1.0 / 2.0])  # z, y, x


def test_round_trip_without_placement_gives_the_stored_positions():
    data, world, back = round_trip(POSITIONS, SCALE, ("space",) * 3)
    np.testing.assert_allclose(world, POSITIONS[:, ::-1])  # world = store, napari order
    np.testing.assert_allclose(back, POSITIONS)


def test_round_trip_with_a_time_axis():
    positions = np.column_stack([[0.0, 5.0, 9.0], POSITIONS[:, :2]])  # t, x, y
    _, world, back = round_trip(positions, [1.0, 2.0, 0.5], ("time", "space", "space"))
    np.testing.assert_allclose(world[:, 0], [0.0, 5.0, 9.0])  # the time slider leads
    np.testing.assert_allclose(back, positions)


@pytest.mark.parametrize("affine", [MIRROR_SWAP, MIRROR], ids=["flip-swap", "mirror"])
def test_round_trip_with_a_placement_gives_the_placed_positions(affine):
    _, _, back = round_trip(POSITIONS, SCALE, ("space",) * 3, affine)
    np.testing.assert_allclose(back, POSITIONS @ affine[:3, :3].T + affine[:3, 3])


def test_a_permuting_placement_moves_into_the_data_order():
    data, _, _ = round_trip(POSITIONS, SCALE, ("space",) * 3, MIRROR_SWAP)
    # the permutation is moved into the data order: the layer's napari affine is diagonal
    order = placed_order(napari_axis_order(("space",) * 3), MIRROR_SWAP)
    assert order.tolist() == [1, 2, 0]
    linear = napari_affine(MIRROR_SWAP, napari_axis_order(("space",) * 3), order)[:3, :3]
    np.testing.assert_allclose(linear, np.diag(np.diag(linear)))
    np.testing.assert_allclose(data[:, 2], POSITIONS[:, 0] / SCALE[0])


def test_layer_to_world_matches_napari_for_a_placed_layer():
    napari = pytest.importorskip("napari")
    world_order = napari_axis_order(("space",) * 3)
    order = placed_order(world_order, MIRROR_SWAP)
    data = store_to_layer(POSITIONS, SCALE, order)
    affine = napari_affine(MIRROR_SWAP, world_order, order)
    layer = napari.layers.Points(data, scale=SCALE[order], affine=affine)
    drawn = np.array([layer.data_to_world(p) for p in data])
    np.testing.assert_allclose(layer_to_world(data, SCALE[order], affine=affine), drawn)


def test_mirrors_flip_mesh_winding_only_when_odd():
    assert [axis_reversal_is_mirror(n) for n in (1, 2, 3, 4)] == [False, True, True, False]
    space = np.arange(3)
    assert placement_mirrors(MIRROR, space)
    assert not placement_mirrors(MIRROR_SWAP, space)  # a flip and a swap: a rotation
    assert not placement_mirrors(np.diag([2.0, 3.0, 4.0, 1.0]), space)
    assert not placement_mirrors(None, space)
