"""The fast draw path (lod/line_draw.py): a Tracks layer's rows drawn by one vispy line
that holds exactly the layer's vertices and colours and follows the layer."""

from __future__ import annotations

import numpy as np
import pytest
from napari.layers import Tracks
from tests.napari._zv_napari import v07_store

from napari_zarr_vectors.napari import open_in_viewer
from napari_zarr_vectors.napari.colour.defaults import direction_colormap, direction_feature
from napari_zarr_vectors.napari.colour.live import ColourMemory, capture
from napari_zarr_vectors.napari.lod import line_draw
from napari_zarr_vectors.napari.lod.settings import configure
from napari_zarr_vectors.napari.lod.swap import batched, swap

pytestmark = pytest.mark.gui


def _rows():
    """Two tracks (napari order z, y, x): id 0 along x, id 1 along y, all at t = 0."""
    zyx = np.array(
        [[1.0, 2.0, 3.0], [1.0, 2.0, 13.0], [1.0, 2.0, 23.0], [5.0, 6.0, 7.0], [5.0, 16.0, 7.0]]
    )
    ids = np.array([0, 0, 0, 1, 1])
    tangent = np.array([[0, 0, 1.0]] * 3 + [[0, 1.0, 0]] * 2)  # (z, y, x)
    direction, _ = direction_feature(tangent[:, ::-1])  # store order x, y, z
    features = {"object_id": np.array([7, 7, 7, 9, 9]), "direction": direction}
    return np.column_stack([ids, np.zeros(5), zyx]), features


def _swapped(viewer):
    layer = viewer.add_layer(Tracks(np.array([[0, 0, 0.0, 0, 0], [0, 1, 0, 0, 1.0]])))
    rows, features = _rows()
    kwargs = {
        "features": features,
        "color_by": "direction",
        "colormaps_dict": {"direction": direction_colormap()},
    }
    with batched(layer):
        swap(layer, rows, kwargs, ColourMemory(applied=capture(layer)))
    return layer, rows, features


def test_the_line_holds_the_layer_s_vertices_breaks_and_direction_colours(make_napari_viewer):
    viewer = make_napari_viewer()
    viewer.dims.ndisplay = 3
    layer, rows, features = _swapped(viewer)
    drawing = line_draw.drawing_of(layer)
    assert drawing is not None and not layer.display_tail  # napari's own tails are off
    line = drawing.line
    # vispy order (x, y, z) of every row, in the layer's row order
    np.testing.assert_allclose(line.pos, rows[:, 2:][:, ::-1])
    # a segment inside each track, none from track 0 to track 1
    np.testing.assert_array_equal(line.connect, [True, True, False, True, False])
    # red for the track along x, green for the one along y (lifted: 0.25 + 0.75 * channel)
    colours = np.asarray(line.color)
    np.testing.assert_allclose(colours[:3], [[1.0, 0.25, 0.25, 1.0]] * 3, atol=1e-6)
    np.testing.assert_allclose(colours[3:], [[0.25, 1.0, 0.25, 1.0]] * 2, atol=1e-6)
    # the colours of the layer's colour-by (what its colour bar describes)
    np.testing.assert_allclose(colours, layer.track_colors, atol=1e-6)
    np.testing.assert_allclose(colours, direction_colormap().map(features["direction"]))
    # the layer itself holds the rows and features (picking, hover, filters use them)
    np.testing.assert_array_equal(layer.data, rows)
    assert layer.features["object_id"].tolist() == [7, 7, 7, 9, 9]
    # the swap kept the thumbnail (napari's method is back for later refreshes)
    assert "_update_thumbnail" not in vars(layer)


def test_the_line_follows_visibility_opacity_scale_and_removal(make_napari_viewer):
    viewer = make_napari_viewer()
    viewer.dims.ndisplay = 3
    layer, rows, _ = _swapped(viewer)
    line = line_draw.drawing_of(layer).line
    node = line.parent  # the layer's node in napari's scene: its transform is the layer's
    assert node is viewer.window._qt_viewer.canvas.layer_to_visual[layer].node
    layer.scale = (1, 2, 3, 4)
    world = node.transform.map(line.pos[1])[:3]  # vispy (x, y, z) world position
    np.testing.assert_allclose(world, [13.0 * 4, 2.0 * 3, 1.0 * 2])
    layer.visible = False
    assert not line.visible
    layer.visible = True
    layer.opacity = 0.3
    assert line.visible and line.opacity == pytest.approx(0.3)
    layer.blending = "additive"
    assert line._vshare.gl_state.get("blend_func") == node._subvisuals[0]._vshare.gl_state.get(
        "blend_func"
    )
    layer.color_by = "object_id"  # a colour-by chosen in napari's controls
    np.testing.assert_allclose(np.asarray(line.color), layer.track_colors, atol=1e-6)
    viewer.layers.remove(layer)
    assert node.parent is None  # gone from the scene, and the line with it
    assert line.parent is node


def test_2d_view_draws_the_displayed_axes(make_napari_viewer):
    viewer = make_napari_viewer()
    viewer.dims.ndisplay = 3
    layer, rows, _ = _swapped(viewer)
    viewer.dims.ndisplay = 2
    line = line_draw.drawing_of(layer).line
    # napari's 2-D tracks: (x, y) of the rows, zero depth
    np.testing.assert_allclose(line.pos, np.column_stack([rows[:, 4], rows[:, 3], np.zeros(5)]))


def test_the_napari_draw_path_hands_drawing_back_to_napari(make_napari_viewer):
    viewer = make_napari_viewer()
    layer, rows, features = _swapped(viewer)
    drawing = line_draw.drawing_of(layer)
    configure(draw_path="napari")
    try:
        with batched(layer):
            swap(layer, rows, {"features": features}, ColourMemory(applied=capture(layer)))
    finally:
        configure(draw_path="fast")
    assert line_draw.drawing_of(layer) is None and drawing.line.parent is None
    assert layer.display_tail
    np.testing.assert_array_equal(layer.data, rows)


def test_a_store_s_streamlines_are_drawn_by_the_line_with_their_counts(make_napari_viewer, qtbot):
    viewer = make_napari_viewer()
    viewer.dims.ndisplay = 3
    c = open_in_viewer(viewer, v07_store("streamlines"), first_view=False, vertex_budget=500)
    qtbot.waitUntil(lambda: not c.is_loading, timeout=15_000)
    c.refresh()  # a level-of-detail swap
    qtbot.waitUntil(lambda: not c.is_loading, timeout=15_000)
    layer = c.layers[0]
    line = line_draw.drawing_of(layer).line
    assert len(line.pos) == len(layer.data) == c.vertex_count <= 500
    np.testing.assert_allclose(line.pos, np.asarray(layer.data)[:, 2:][:, ::-1], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(line.color), layer.track_colors, atol=1e-6)
    meta = layer.metadata["zarr_vectors"]
    paths = len(np.unique(layer.features["object_id"]))
    assert meta["items_shown"] == paths and meta["vertices_shown"] == len(layer.data)
    assert meta["items_shown"] <= meta["items_in_view"] and meta["level"] == c.level


def test_the_budget_counts_the_layer_swaps_apart_from_fixed_costs(monkeypatch):
    from napari_zarr_vectors.napari.lod import settings

    cost = settings.SwapCost()
    monkeypatch.setattr(settings.get_settings(), "swap_cost", cost)
    monkeypatch.setattr(settings.get_settings(), "vertex_budget", None)  # adaptive
    # 0.21 s, of which 0.01 s fixed: 0.2 s for 200,000 vertices, 1 us each
    cost.observe(0.21, 200_000, fixed_seconds=0.01)
    assert cost.seconds_per_vertex == pytest.approx(1e-6)
    # the 50 ms target less the fixed 10 ms: 40 ms of vertices
    assert settings.vertex_budget() == 40_000
    # a draw path twice as cheap per vertex: the budget grows by itself
    cheap = settings.SwapCost()
    cheap.observe(0.11, 200_000, fixed_seconds=0.01)
    assert cheap.budget() == 80_000
    # fixed costs over half the target leave the vertices half of it
    slow = settings.SwapCost()
    slow.observe(0.2, 100_000, fixed_seconds=0.15)
    assert slow.budget() == round(0.025 / 0.5e-6, -3)
