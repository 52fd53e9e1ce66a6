"""A scientist's first minutes: real data dropped into an empty viewer shows the whole store.

Real data shipped in packages (tests/realdata.py: dipy's tracks300, navis' example neurons,
written by zarr-vectors 0.9.2) and every fixture store, opened the way a drop opens them
(``viewer.open(path, plugin=...)``), default settings.
"""

from __future__ import annotations

import numpy as np
import pytest
from _zv_napari import V07_STORES, v07_store
from _zv_viewer import a_turn, dropped

from napari_zarr_vectors.napari.lod import settings
from napari_zarr_vectors.napari.npe2.reader import PLUGIN_NAME

pytestmark = pytest.mark.gui
TIMEOUT = 30_000


@pytest.fixture(autouse=True)
def adaptive_budget(monkeypatch):
    """The default: an adaptive budget that has measured nothing yet."""
    monkeypatch.setattr(settings.get_settings(), "vertex_budget", None)
    monkeypatch.setattr(settings.get_settings(), "swap_cost", settings.SwapCost())


def data_layer(c, role):
    return next(layer for layer in c.layers if layer.metadata["zarr_vectors"]["role"] == role)


def track_ids(layer) -> set[int]:
    return set(np.unique(layer.data[:, 0]).astype(int).tolist())


def move_camera(viewer, qtbot, c):
    """Rotate, pan and zoom out, settling after each move; yields after each."""
    cam = viewer.camera
    for step in (
        lambda: setattr(cam, "angles", (10.0, 40.0, 120.0)),
        lambda: setattr(cam, "center", tuple(np.asarray(cam.center) + 15.0)),
        lambda: setattr(cam, "zoom", cam.zoom / 4),
        lambda: setattr(cam, "angles", (-30.0, -20.0, 60.0)),
    ):
        step()  # the controller schedules its refresh at once: is_loading
        qtbot.waitUntil(lambda: not c.is_loading, timeout=TIMEOUT)
        yield


def test_tracks300_opens_whole_in_3d_and_stays_whole(make_napari_viewer, qtbot, tracks300_store):
    path, truth = tracks300_store
    viewer = make_napari_viewer()
    c = dropped(viewer, qtbot, path)
    assert viewer.dims.ndisplay == 3
    lines = data_layer(c, "streamlines")
    assert len(lines.data) == truth.vertex_count == 14_576
    ids = c.store.object_ids(0)
    assert track_ids(lines) == set(range(len(ids))) or len(track_ids(lines)) == 300
    # the camera is fitted to the data: every vertex is inside the visible box
    assert c.view_share.fraction == 1.0 and c.view_share.items_in_view == 300
    key = c._shown.key
    for _ in move_camera(viewer, qtbot, c):
        assert len(lines.data) == 14_576  # never thinned, never cropped
        assert c._shown.key == key  # nothing reloaded while the camera moved
    assert "showing" not in viewer.status  # nothing left out to report


def test_2d_shows_the_whole_depth_and_the_slab_can_be_thinned(
    make_napari_viewer, qtbot, tracks300_store
):
    from napari_zarr_vectors.napari.npe2.first_view import set_slab, space_axes

    path, truth = tracks300_store
    viewer = make_napari_viewer()
    c = dropped(viewer, qtbot, path)
    viewer.dims.ndisplay = 2
    qtbot.waitUntil(lambda: not c.is_loading, timeout=TIMEOUT)
    lines = data_layer(c, "streamlines")
    assert len(lines.data) == truth.vertex_count  # the projection of every streamline
    z = [a for a in space_axes(viewer, c.store) if a not in viewer.dims.displayed]
    assert len(z) == 1
    set_slab(viewer, z, 2.0)  # a 2 mm slab around the slice
    qtbot.waitUntil(lambda: not c.is_loading, timeout=TIMEOUT)
    assert viewer.dims.thickness[z[0]] == pytest.approx(2.0)
    kept = len(lines.data)
    assert 0 < kept < truth.vertex_count  # only the pieces of streamlines crossing the slab


@pytest.mark.parametrize("name", sorted(V07_STORES))
def test_every_fixture_first_picture_is_not_empty(make_napari_viewer, qtbot, name):
    viewer = make_napari_viewer()
    c = dropped(viewer, qtbot, v07_store(name))
    assert c.layers, "no data layer"
    held = sum(len(layer.data) for layer in c.layers)
    assert held > 0
    # small stores are shown whole: every object of level 0
    assert c.view_share.fraction == 1.0
    assert viewer.dims.ndisplay == (3 if len(c.store.axes) >= 3 else 2)


def test_the_store_panel_steers_detail_and_the_slab(make_napari_viewer, qtbot, tracks300_store):
    from napari_zarr_vectors.napari.widgets.store_panel import StorePanel
    from napari_zarr_vectors.napari.widgets.view_controls import DETAIL_CHOICES

    path, _ = tracks300_store
    viewer = make_napari_viewer()
    c = dropped(viewer, qtbot, path)
    panel = StorePanel(viewer)
    viewer.layers.selection.active = c.layers[0]
    controls = panel.view_controls
    assert controls.shown.text() == "all 300 streamlines in view"
    assert controls.detail.currentData() is None  # Auto
    # a fixed detail below the store's size thins it, for every open store
    index = next(i for i, (_, b) in enumerate(DETAIL_CHOICES) if b == 50_000)
    monkey_budget = 5_000
    controls.detail.addItem("tiny", monkey_budget)
    controls.detail.setCurrentIndex(controls.detail.count() - 1)
    qtbot.waitUntil(lambda: not c.is_loading, timeout=TIMEOUT)
    assert settings.get_settings().vertex_budget == monkey_budget
    assert c.vertex_count <= monkey_budget
    # the layer holds a part; the overview fill (lod/overview_fill.py) draws the rest
    held = len(set(c.layers[0].data[:, 0].tolist()))
    assert 0 < held < 300
    assert controls.shown.text() == (
        f"showing all 300 streamlines in view ({held:,} of them held by the layer, "
        "the rest drawn once the view is still)"
    )
    controls.detail.setCurrentIndex(index)
    controls.detail.setCurrentIndex(0)  # back to Auto: whole again
    qtbot.waitUntil(lambda: not c.is_loading, timeout=TIMEOUT)
    assert settings.get_settings().vertex_budget is None
    assert c.vertex_count == 14_576
    # the slab: disabled in 3-D, in store units in 2-D
    assert not controls.slab.isEnabled()
    viewer.dims.ndisplay = 2
    assert controls.whole_depth.isChecked() and not controls.slab.isEnabled()
    assert "z = " in controls.slice.text() and "millimeter" in controls.slice.text()
    controls.whole_depth.setChecked(False)
    assert controls.slab.isEnabled()
    controls.slab.setValue(3.0)
    z = viewer.dims.not_displayed[-1]
    assert viewer.dims.thickness[z] == pytest.approx(3.0)
    assert "slab 3 millimeter" in controls.slice.text()


@pytest.mark.parametrize("first_view", [True, False])
def test_open_in_viewer_shows_the_whole_store_on_an_empty_viewer(
    make_napari_viewer, qtbot, tracks300_store, first_view
):
    """A script gets the first picture a drop gets (every streamline whole, in 3-D) unless
    it passes ``first_view=False``, which keeps napari's own 2-D view."""
    from napari_zarr_vectors.napari import open_in_viewer

    path, truth = tracks300_store
    viewer = make_napari_viewer()
    c = (
        open_in_viewer(viewer, path)
        if first_view
        else open_in_viewer(viewer, path, first_view=False)
    )
    a_turn(qtbot)  # the first view is set up in the next event-loop turn
    qtbot.waitUntil(lambda: not c.is_loading, timeout=TIMEOUT)
    if first_view:
        assert viewer.dims.ndisplay == 3
        assert len(data_layer(c, "streamlines").data) == truth.vertex_count == 14_576
        assert c.view_share.fraction == 1.0 and c.view_share.items_in_view == 300
    else:
        assert viewer.dims.ndisplay == 2


def test_a_viewer_with_layers_keeps_its_view(make_napari_viewer, qtbot, tracks300_store):
    path, _ = tracks300_store
    viewer = make_napari_viewer()
    viewer.add_points(np.zeros((1, 3)))
    dropped(viewer, qtbot, path)
    assert viewer.dims.ndisplay == 2  # the user's view, not ours


def test_the_slider_shows_the_slice_in_world_units(make_napari_viewer, qtbot, tracks300_store):
    from napari_zarr_vectors.napari._napari_compat import slider_total_label

    path, _ = tracks300_store
    viewer = make_napari_viewer()
    c = dropped(viewer, qtbot, path)
    viewer.dims.ndisplay = 2
    z = viewer.dims.not_displayed[-1]
    label = slider_total_label(viewer, z)
    assert label is not None
    viewer.dims.set_point(z, 80.0)
    assert viewer.dims.point[z] == pytest.approx(80.0, abs=1.0)
    expected = f"z {viewer.dims.point[z]:.6g} mm"
    assert label.text().endswith(expected)
    assert label.text().startswith(f"{viewer.dims.nsteps[z] - 1} · ")
    assert c.store.units[2] == "millimeter"


def test_the_five_navis_neurons_are_all_drawn_through_rotations(
    make_napari_viewer, qtbot, neurons_store
):
    path, truth = neurons_store
    viewer = make_napari_viewer()
    c = dropped(viewer, qtbot, path)
    assert viewer.dims.ndisplay == 3
    nodes = data_layer(c, "nodes")
    edges = data_layer(c, "edges")

    def drawn() -> tuple[int, int, set[int]]:
        ids = set(np.unique(nodes.features["object_id"]).astype(int).tolist())
        return len(nodes.data), len(edges.data), ids

    n_edges = sum(len(e) for e in truth.edges)
    assert drawn() == (truth.vertex_count, n_edges, {0, 1, 2, 3, 4})
    assert c.view_share.fraction == 1.0 and c.view_share.items_in_view == 5
    for _ in move_camera(viewer, qtbot, c):
        assert drawn() == (truth.vertex_count, n_edges, {0, 1, 2, 3, 4})
    assert "showing" not in viewer.status


def test_a_dock_narrowing_the_canvas_keeps_the_data_in_the_picture(
    make_napari_viewer, qtbot, neurons_store
):
    from napari_zarr_vectors.napari.lod.camera import shows_box

    path, _ = neurons_store
    viewer = make_napari_viewer(show=True)
    window = viewer.window._qt_window
    window.resize(1280, 1000)
    qtbot.waitUntil(lambda: (window.width(), window.height()) == (1280, 1000), timeout=TIMEOUT)
    c = dropped(viewer, qtbot, path)
    lo, hi = viewer.layers.extent.world
    assert shows_box(viewer, lo, hi)
    before = tuple(viewer.canvas.size)
    viewer.window.add_plugin_dock_widget(PLUGIN_NAME, "Object table")
    qtbot.waitUntil(lambda: viewer.canvas.size[1] < before[1] - 100, timeout=TIMEOUT)
    qtbot.waitUntil(lambda: not c.is_loading, timeout=TIMEOUT)
    # the whole store is still in view on the narrower canvas, and fills it
    assert shows_box(viewer, lo, hi)
    smaller = tuple(int(0.9 * s) for s in viewer.canvas.size)
    assert not shows_box(viewer, lo, hi, smaller)
    # a view the user zoomed into keeps its zoom and centre when the canvas changes size
    viewer.scene.camera.zoom *= 4
    zoom, centre = viewer.scene.camera.zoom, viewer.scene.camera.center
    narrow = tuple(viewer.canvas.size)
    viewer.window._qt_window.resize(1100, 1000)
    qtbot.waitUntil(lambda: tuple(viewer.canvas.size) != narrow, timeout=TIMEOUT)
    assert viewer.scene.camera.zoom == pytest.approx(zoom)
    assert np.allclose(viewer.scene.camera.center, centre)
