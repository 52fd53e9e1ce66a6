"""swap_empty: a view with no data empties a layer; a Tracks layer keeps one invisible vertex
at the store's lower corner, in layer coordinates (napari axis order, units of its scale)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from napari.layers import Points, Tracks

from napari_zarr_vectors.napari.lod.swap import swap_empty


def _store(lo, hi, axis_types):
    """A store of no levels or chunk shape and no placement: what swap_empty reads."""
    return SimpleNamespace(
        ndim=len(lo),
        bounds=(np.asarray(lo, float), np.asarray(hi, float)),
        axis_types=axis_types,
        levels=(),
        chunk_shape=None,
    )


def test_empty_tracks_keep_one_vertex_at_the_store_corner_in_layer_units():
    store = _store([10.0, 20.0, 30.0], [50.0, 60.0, 70.0], ["space"] * 3)
    # napari order (z, y, x); scale per napari axis: time, z, y, x
    layer = Tracks(np.array([[0, 0, 1.0, 2.0, 3.0], [0, 1, 1.0, 2.0, 3.0]]), scale=(1, 5, 4, 2))
    swap_empty(layer, store)
    # track id 0, time 0, then z / 5, y / 4, x / 2
    np.testing.assert_allclose(layer.data, [[0.0, 0.0, 6.0, 5.0, 5.0]])


def test_empty_tracks_of_a_store_with_time_put_time_first():
    store = _store([0.0, 8.0, 9.0], [4.0, 16.0, 18.0], ["space", "time", "space"])
    # napari order: the time column, then the space axes reversed (store columns 2, 0)
    layer = Tracks(np.array([[0, 0, 1.0, 2.0], [0, 1, 1.0, 2.0]]), scale=(2, 3, 0.5))
    swap_empty(layer, store)
    np.testing.assert_allclose(layer.data, [[0.0, 4.0, 3.0, 0.0]])


def test_empty_points_hold_no_rows_and_keep_their_feature_columns():
    store = _store([0.0, 0.0], [1.0, 1.0], ["space"] * 2)
    layer = Points(np.ones((4, 2)), features={"speed": np.arange(4.0)})
    swap_empty(layer, store)
    assert layer.data.shape == (0, 2)
    assert list(layer.features.columns) == ["speed"] and len(layer.features) == 0


def test_a_tracks_swap_defers_napari_s_nearest_track_index_to_its_first_hover():
    from napari_zarr_vectors.napari.colour.live import ColourMemory, capture
    from napari_zarr_vectors.napari.lod.swap import batched, swap

    first = np.array([[0, 0, 0.0, 0.0, 0.0], [0, 0, 0.0, 1.0, 0.0]])
    layer = Tracks(first)
    memory = ColourMemory(applied=capture(layer))
    # two tracks: id 0 near the origin, id 1 along x = 50
    data = np.array(
        [[0, 0, 0.0, 0.0, 0.0], [0, 0, 0.0, 5.0, 0.0], [1, 0, 0.0, 0.0, 50.0], [1, 0, 0.0, 5, 50]]
    )
    with batched(layer):
        swap(layer, data, {"features": {"object_id": np.array([7, 7, 9, 9])}}, memory)
    tree = layer._manager._kdtree  # napari's index of the vertices, for its hover lookup
    assert tree._tree is None  # not built by the swap
    assert layer._manager.get_value(np.array([0.0, 0.0, 4.0, 49.0])) == 1
    assert layer._manager.get_value(np.array([0.0, 0.0, 1.0, 1.0])) == 0
    assert tree._tree is not None and tree.n == 4  # built once, on that first lookup
    assert layer.features["object_id"].tolist() == [7, 7, 9, 9]
    import scipy.spatial

    assert scipy.spatial.cKDTree.__name__ == "cKDTree"  # restored after the swap
