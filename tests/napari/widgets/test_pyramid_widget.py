"""The *Pyramid QA* dock widget (napari/widgets/pyramid/) in a real viewer.

Run under Xvfb: ``xvfb-run -a python -m pytest tests/napari/widgets/test_pyramid_widget.py``. With
``NZV_DOCS_IMAGES=1`` the screenshot test writes ``docs/images/pyramid_qa.png``.
"""

from __future__ import annotations

import numpy as np
import pytest
from _zv_napari import save_docs_image, v07_store
from _zv_viewer import a_turn

import napari_zarr_vectors as nzv
from data_paths import data_root
from napari_zarr_vectors.format import pyramid as core
from napari_zarr_vectors.napari.qa import compute as qa_compute

V09 = data_root() / "v09"


def has_controller() -> bool:
    try:
        from napari_zarr_vectors.napari import open_in_viewer  # noqa: F401
    except ImportError:
        return False
    return True


def open_in(viewer, path):
    """Open a store the way scripts do: through the level-of-detail engine when it exists,
    else through the reader."""
    try:
        from napari_zarr_vectors.napari import open_in_viewer
    except ImportError:
        open_in_viewer = None
    if open_in_viewer is not None:
        return open_in_viewer(viewer, str(path), first_view=False)
    viewer.open(str(path), plugin="napari-zarr-vectors")
    return None


def data_layer(viewer):
    from napari_zarr_vectors.napari.browse.targets import is_data_layer

    return next(lyr for lyr in viewer.layers if is_data_layer(lyr))


def run(qtbot, task, timeout=30_000):
    """Wait for a Pyramid QA task (worker read, then layers added on the UI thread) and
    return its result (``None`` when no task was started)."""
    if task is None:
        return None
    qtbot.waitUntil(lambda: task.done, timeout=timeout)
    assert task.error is None, task.error
    return task.result


@pytest.fixture
def qa(make_napari_viewer, zv_reader_preference):
    """``qa(path)`` -> (viewer, widget, store) with the store open and the widget docked."""
    from napari_zarr_vectors.napari.widgets import PyramidQAWidget

    def make(path, show=False):
        viewer = make_napari_viewer(show=show)
        open_in(viewer, path)
        viewer.layers.selection.active = data_layer(viewer)
        widget = PyramidQAWidget(viewer)
        viewer.window.add_dock_widget(widget, name="Pyramid QA")
        widget.confirm = lambda text: True
        return viewer, widget, nzv.open_store(path)

    return make


def rows_of(positions, table):
    """Index of every row of ``positions`` in ``table`` (exact float match), -1 if absent."""
    table = np.ascontiguousarray(table, dtype=np.float64)
    positions = np.ascontiguousarray(positions, dtype=np.float64)
    view = np.dtype((np.void, 8 * table.shape[1]))
    t, p = table.view(view).ravel(), positions.view(view).ravel()
    order = np.argsort(t)
    pos = np.minimum(np.searchsorted(t[order], p), len(t) - 1)
    return np.where(t[order][pos] == p, order[pos], -1)


def vectors_world(layer):
    """A Vectors layer's segments as (starts, ends) in store order, world units."""
    scale = np.asarray(layer.scale, dtype=np.float64)
    data = np.asarray(layer.data, dtype=np.float64)
    starts = data[:, 0] * scale
    ends = (data[:, 0] + data[:, 1]) * scale
    return starts[:, ::-1], ends[:, ::-1]


# --------------------------------------------------------------------------------------------
# overlay geometry (pure functions, no viewer)
# --------------------------------------------------------------------------------------------


def test_box_outlines_wireframe_and_slices():
    from napari_zarr_vectors.napari.qa.overlays import box_outline_segments

    lo = np.array([[0.0, 0.0, 0.0], [10.0, 0.0, 10.0]])
    hi = lo + 10.0
    starts, ends, box = box_outline_segments(lo, hi)
    assert starts.shape == (24, 3) and box.tolist() == [0] * 12 + [1] * 12
    # every edge is axis-parallel, of the box's edge length
    np.testing.assert_allclose(np.linalg.norm(ends - starts, axis=1), 10.0)
    # a slab at z = 12 (store axis 2) cuts box 1 only: its x/y rectangle at z = 12
    starts, ends, box = box_outline_segments(lo, hi, [0, 1], np.array([0, 0, 12.0]), np.zeros(3))
    assert box.tolist() == [1] * 4
    np.testing.assert_allclose(starts[:, 2], 12.0)
    np.testing.assert_allclose(np.concatenate([starts, ends])[:, :2].min(0), [10.0, 0.0])
    np.testing.assert_allclose(np.concatenate([starts, ends])[:, :2].max(0), [20.0, 10.0])
    # boxes are half-open: z = 10 belongs to box 1 only; a thick slab touches both
    _, _, box = box_outline_segments(lo, hi, [0, 1], np.array([0, 0, 10.0]), np.zeros(3))
    assert set(box.tolist()) == {1}
    _, _, box = box_outline_segments(lo, hi, [0, 1], np.array([0, 0, 10.0]), np.full(3, 5.0))
    assert set(box.tolist()) == {0, 1}
    # a 2-D store: rectangles
    starts, ends, box = box_outline_segments(lo[:, :2], hi[:, :2])
    assert starts.shape == (8, 2)


def test_segments_layer_is_in_napari_order_and_data_units():
    from napari_zarr_vectors.napari.qa.overlays import overlay_info, segments_layer

    store = nzv.open_store(v07_store("points"))
    info = overlay_info(store, 1)
    starts = np.array([[1.0, 2.0, 3.0]])
    ends = np.array([[4.0, 6.0, 8.0]])
    data, kwargs, kind = segments_layer(starts, ends, info, role="qa_links", label="x")
    assert kind == "vectors"
    scale = np.asarray(kwargs["scale"])
    np.testing.assert_allclose(data[0, 0] * scale, starts[0, ::-1])
    np.testing.assert_allclose((data[0, 0] + data[0, 1]) * scale, ends[0, ::-1])
    assert kwargs["axis_labels"] == ("z", "y", "x")
    assert kwargs["name"] == "points x (level 1)"
    assert kwargs["metadata"]["zarr_vectors"]["role"] == "qa_links"


# --------------------------------------------------------------------------------------------
# level lock (needs the level-of-detail controller)
# --------------------------------------------------------------------------------------------


@pytest.mark.gui
@pytest.mark.skipif(not has_controller(), reason="needs the level-of-detail controller")
def test_lock_level_2_shows_level_2_at_every_zoom_and_unlock_returns_to_automatic(qa, qtbot):
    viewer, widget, store = qa(v07_store("points"))
    controller = widget.model.controller
    assert controller is not None
    camera = viewer.scene.camera

    def settle():
        controller.refresh()
        qtbot.waitUntil(lambda: not controller.is_loading, timeout=20_000)

    # automatic: zooming far in and far out picks different levels
    automatic = {}
    for zoom in (200.0, 0.05):
        camera.zoom = zoom
        settle()
        automatic[zoom] = controller.level
    assert automatic[200.0] < automatic[0.05]

    chunks = run(qtbot, widget.model.show_chunks(True))  # follows the shown level
    widget.model.lock_level(2)
    assert controller.locked_level == 2
    for zoom in (200.0, 20.0, 1.0, 0.05):
        camera.zoom = zoom
        settle()
        assert controller.level == 2
        assert all(lyr.metadata["zarr_vectors"]["level"] == 2 for lyr in controller.layers)
        assert widget.level_box.level_label.text().startswith("shown: level 2 (locked)")
    assert widget.level_box.level_combo.currentText() == "level 2"
    qtbot.waitUntil(lambda: widget.model.tasks["chunks"].done, timeout=10_000)
    chunks = widget.model.chunk_overlay.layer
    assert chunks.metadata["zarr_vectors"]["qa_level"] == 2
    assert chunks.metadata["zarr_vectors"]["boxes"] == len(store.chunks(2))

    widget.model.lock_level(None)
    assert controller.locked_level is None
    for zoom in (200.0, 0.05):
        camera.zoom = zoom
        settle()
        assert controller.level == automatic[zoom]
    assert widget.level_box.level_combo.currentText() == "automatic"

    # the combo, the slider and the step buttons drive the same lock
    widget.level_box.level_combo.setCurrentIndex(2)  # "level 1"
    assert controller.locked_level == 1
    widget.level_box.coarser_btn.click()
    assert controller.locked_level == 2
    widget.level_box.finer_btn.click()
    widget.level_box.finer_btn.click()
    assert controller.locked_level == 0
    widget.level_box.level_slider.setValue(2)
    assert controller.locked_level == 2
    # viewer keys: Alt-Down finer, Alt-Up coarser
    from napari.utils.key_bindings import coerce_keybinding

    viewer.keymap[coerce_keybinding("Alt-Down")](viewer)
    assert controller.locked_level == 1
    viewer.keymap[coerce_keybinding("Alt-Up")](viewer)
    assert controller.locked_level == 2


# --------------------------------------------------------------------------------------------
# statistics, dropped objects, side by side
# --------------------------------------------------------------------------------------------


@pytest.mark.gui
def test_statistics_table(qa, qtbot):
    viewer, widget, store = qa(v07_store("points"))
    qtbot.waitUntil(lambda: widget.stats_box.stats_table.columnCount() == 3, timeout=10_000)
    rows = core.level_statistics(store)
    table = widget.stats_box.stats_table
    # one column per level, one row per statistic (STAT_COLUMNS after "level")
    heads = [table.horizontalHeaderItem(c).text() for c in range(3)]
    assert heads == ["level 0", "level 1", "level 2"]
    names = [table.verticalHeaderItem(r).text() for r in range(table.rowCount())]
    assert names == list(qa_compute.STAT_COLUMNS[1:])
    cell = [[""] + [table.item(r, c).text() for r in range(table.rowCount())] for c in range(3)]
    assert [c[1] for c in cell] == ["240", "63", "8"]
    assert [c[2] for c in cell] == ["15 / 15", "15 / 15", "8 / 15"]
    assert [c[4] for c in cell] == [str(r["chunks"]) for r in rows]
    assert [c[7] for c in cell] == ["5×5×5", "10×10×10", "20×20×20"]
    assert [c[8] for c in cell] == ["10×10×10", "10×10×10", "20×20×20"]
    assert [c[9] for c in cell] == ["none", "per_object", "per_object"]


@pytest.mark.gui
def test_dropped_objects_listed_and_isolated(qa, qtbot):
    viewer, widget, store = qa(v07_store("points"))
    ids = run(qtbot, widget.model.list_dropped(0, 2))
    np.testing.assert_array_equal(ids, core.dropped_objects(store, 0, 2))
    assert len(ids) == 7
    assert widget.dropped_box.dropped_list.count() == 7
    assert (
        "7 object(s) present at level 0 are absent at level 2"
        in widget.dropped_box.dropped_label.text()
    )
    # isolate two of them: exactly their level-0 vertices, highlighted
    widget.dropped_box.dropped_list.item(0).setSelected(True)
    widget.dropped_box.dropped_list.item(1).setSelected(True)
    widget.dropped_box.isolate_btn.click()
    (layer,) = run(qtbot, widget.model.tasks["isolate"])
    chosen = ids[:2]
    truth = store.read(0, object_ids=chosen)
    world = np.asarray(layer.data) * np.asarray(layer.scale)
    np.testing.assert_allclose(np.sort(world[:, ::-1], axis=0), np.sort(truth.positions, axis=0))
    assert set(np.unique(layer.features["object_id"])) == set(chosen.tolist())
    np.testing.assert_allclose(np.unique(layer.face_color, axis=0), [[1.0, 0.0, 1.0, 1.0]])
    assert layer.metadata["zarr_vectors"]["role"] == "qa_dropped"
    # filter the shown layer to the selection, then clear the filter
    controller = widget.model.controller
    widget.dropped_box.filter_btn.click()
    run(qtbot, widget.model.tasks["filter"])
    np.testing.assert_array_equal(controller.object_filter, np.sort(chosen))
    widget.model.clear_filter()
    assert controller.object_filter is None


@pytest.mark.gui
def test_side_by_side_levels_share_colours_and_toggle(qa, qtbot):
    viewer, widget, store = qa(v07_store("points"))
    layers = run(qtbot, widget.model.add_levels([0, 1, 2]))
    assert [lyr.metadata["zarr_vectors"]["level"] for lyr in layers] == [0, 1, 2]
    assert [lyr.name for lyr in layers] == [f"points [level {i}]" for i in (0, 1, 2)]
    for layer, level in zip(layers, (0, 1, 2), strict=True):
        world = np.asarray(layer.data) * np.asarray(layer.scale)
        assert len(world) == store.read(level).vertex_count
    # same colouring: one colour per object id, identical at every level
    colour_of = {}
    for layer in layers:
        for oid, rgba in zip(layer.features["object_id"], layer.face_color, strict=True):
            colour_of.setdefault(int(oid), set()).add(tuple(np.round(rgba, 5)))
    assert all(len(c) == 1 for c in colour_of.values())
    # levels apart without asking: grid mode, one cell per level, every other layer hidden
    others = [lyr for lyr in viewer.layers if lyr not in layers]
    grid = viewer.canvas.grid
    assert widget.model.grid and widget.side_box.grid_check.isChecked()
    assert grid.enabled and grid.stride == 1
    assert not any(lyr.visible for lyr in others)
    assert grid.actual_shape(viewer.layers) == (2, 2)  # 3 cells: the levels only
    cells = {grid.position(i, viewer.layers) for i, lyr in enumerate(viewer.layers)}
    assert len(cells - {(-1, -1)}) == 3
    # the camera fits every cell (napari's fit of the grid: the view does not move)
    centre, zoom = tuple(viewer.camera.center), viewer.camera.zoom
    viewer.reset_view()
    assert np.allclose(viewer.camera.center, centre) and np.isclose(viewer.camera.zoom, zoom)
    widget.side_box.grid_check.setChecked(False)  # overlaid in one canvas
    assert not grid.enabled and not widget.model.grid
    assert all(lyr.visible for lyr in others)
    widget.model.set_grid(True)
    assert grid.enabled and not any(lyr.visible for lyr in others)
    widget.model.set_grid(False)
    assert not grid.enabled
    assert all(lyr.visible for lyr in others)
    shown = widget.model.toggle_side_by_side()
    assert shown is layers[0] and [lyr.visible for lyr in layers] == [True, False, False]
    widget.model.toggle_side_by_side()
    widget.model.toggle_side_by_side()
    assert widget.model.toggle_side_by_side() is None and all(lyr.visible for lyr in layers)
    widget.model.remove_levels()  # one layer per event-loop turn
    qtbot.waitUntil(lambda: not any(lyr in viewer.layers for lyr in layers), timeout=5_000)
    # grid mode with the levels deleted by hand: no empty (black) grid is left
    widget.model.set_grid(True)
    layers = run(qtbot, widget.model.add_levels([0, 2]))
    assert grid.enabled and not any(lyr.visible for lyr in others)
    viewer.layers.remove(layers[0])
    viewer.layers.remove(layers[1])
    assert not grid.enabled and all(lyr.visible for lyr in others)


@pytest.mark.gui
def test_grid_cells_hold_the_layers_of_one_level(qa, qtbot):
    """A skeleton level is two layers (edges, nodes): one cell per level, level 0 first."""
    viewer, widget, store = qa(v07_store("skeleton"))
    layers = run(qtbot, widget.model.add_levels([0, 1]))
    grid = viewer.canvas.grid
    assert grid.enabled and len(layers) == 4
    cell_of = {}
    for i, layer in enumerate(viewer.layers):
        if layer in layers:
            cell_of.setdefault(grid.position(i, viewer.layers), set()).add(
                layer.metadata["zarr_vectors"]["level"]
            )
    assert cell_of == {(0, 0): {0}, (0, 1): {1}}


# --------------------------------------------------------------------------------------------
# chunk and bin outlines
# --------------------------------------------------------------------------------------------


@pytest.mark.gui
@pytest.mark.parametrize("level", [0, 1, 2])
def test_chunk_overlay_has_exactly_the_non_empty_chunks(qa, qtbot, level):
    viewer, widget, store = qa(v07_store("points"))
    viewer.dims.ndisplay = 3
    layer = run(qtbot, widget.model.show_chunks(True, level=level))
    assert layer.metadata["zarr_vectors"]["role"] == "qa_chunks"
    lo, hi = core.chunk_boxes(store, level)
    assert len(lo) == len(store.chunks(level))
    starts, ends = vectors_world(layer)
    assert len(starts) == 12 * len(lo)
    box = np.asarray(layer.features["box"])
    np.testing.assert_array_equal(box, np.repeat(np.arange(len(lo)), 12))
    # each box's 12 edges span exactly its chunk box, and every edge runs along one axis
    ends_by_box = np.concatenate([starts, ends]).reshape(2, len(lo), 12, 3)
    np.testing.assert_allclose(ends_by_box.min(axis=(0, 2)), lo)
    np.testing.assert_allclose(ends_by_box.max(axis=(0, 2)), hi)
    assert np.all(np.count_nonzero(np.abs(ends - starts) > 1e-9, axis=1) == 1)
    # in 2-D: the chunks the current slab cuts, outlined on the slice (redrawn once napari's
    # dims update is over)
    viewer.dims.ndisplay = 2
    z_scale = store.levels[0].bin_shape[2]
    for wanted in (-7.5, 0.0, 12.5):
        viewer.dims.set_point(viewer.dims.ndim - 3, wanted)
        assert widget.model.overlays_pending
        qtbot.waitUntil(lambda: not widget.model.overlays_pending, timeout=5_000)
        z = viewer.dims.point[-3]  # napari snaps to its slider steps
        starts, ends = vectors_world(layer)
        cut = (lo[:, 2] <= z + z_scale / 2) & (hi[:, 2] > z - z_scale / 2)
        assert len(starts) == 4 * cut.sum()
        np.testing.assert_allclose(starts[:, 2], z)
        drawn = np.unique(np.asarray(layer.features["box"]))
        np.testing.assert_array_equal(drawn, np.flatnonzero(cut))
        seg = np.concatenate([starts, ends]).reshape(2, -1, 4, 3)
        np.testing.assert_allclose(seg.min(axis=(0, 2))[:, :2], lo[cut][:, :2])
        np.testing.assert_allclose(seg.max(axis=(0, 2))[:, :2], hi[cut][:, :2])
    widget.model.show_chunks(False)
    assert layer not in viewer.layers


@pytest.mark.gui
def test_ticking_the_outline_in_3d_adds_one_layer_and_a_removed_outline_stays_removed(qa, qtbot):
    """Issue 16: adding the outline changes napari's dims, whose events redraw the outline;
    the nested redraw used to insert a second layer mid-insert (a Qt abort in 3-D), and a
    removed outline was re-added on every dims event (a hang when the viewer closed)."""
    viewer, widget, store = qa(v07_store("streamlines"))
    viewer.dims.ndisplay = 3
    qtbot.waitUntil(lambda: not widget.model.controller.is_loading, timeout=10_000)
    a_turn(qtbot)  # the outlines' redraw after the dims change
    before = len(viewer.layers)
    widget.outline_box.chunks_check.setChecked(True)  # what the user ticks
    qtbot.waitUntil(lambda: widget.model.tasks["chunks"].done, timeout=10_000)
    a_turn(qtbot)  # a redraw the insertion's dims events posted would have run
    chunk_layers = [
        lyr
        for lyr in viewer.layers
        if lyr.metadata.get("zarr_vectors", {}).get("role") == "qa_chunks"
    ]
    assert len(chunk_layers) == 1 and len(viewer.layers) == before + 1
    assert len(chunk_layers[0].data) == 12 * len(store.chunks(widget.model.level))
    viewer.layers.remove(chunk_layers[0])
    viewer.dims.ndisplay = 2  # dims events: the overlay must not come back
    viewer.dims.set_point(viewer.dims.ndim - 3, 5.0)
    a_turn(qtbot)  # the outlines' redraw after the dims events has run
    assert len(viewer.layers) == before
    assert all(
        lyr.metadata.get("zarr_vectors", {}).get("role") != "qa_chunks" for lyr in viewer.layers
    )


@pytest.mark.gui
def test_chunk_overlay_follows_the_shown_level(qa, qtbot):
    viewer, widget, store = qa(v07_store("points"))
    layer = run(qtbot, widget.model.show_chunks(True))
    shown = widget.model.level
    assert layer.metadata["zarr_vectors"]["qa_level"] == shown
    assert layer.metadata["zarr_vectors"]["boxes"] == len(store.chunks(shown))


@pytest.mark.gui
def test_bin_overlay_of_one_chunk(qa, qtbot):
    viewer, widget, store = qa(v07_store("points"))
    viewer.dims.ndisplay = 3
    chunk = store.chunks(0)[5]
    layer = run(qtbot, widget.model.show_bins(chunk, occupied=False, level=0))
    lo, hi = core.bin_boxes(store, 0, chunk)
    starts, ends = vectors_world(layer)
    assert len(starts) == 12 * len(lo) == 12 * 8
    seg = np.concatenate([starts, ends]).reshape(2, len(lo), 12, 3)
    np.testing.assert_allclose(seg.min(axis=(0, 2)), lo)
    np.testing.assert_allclose(seg.max(axis=(0, 2)), hi)
    occupied = run(qtbot, widget.model.show_bins(chunk, occupied=True, level=0))
    assert occupied is layer  # one bins layer, redrawn
    lo_o, _ = core.bin_boxes(store, 0, chunk, occupied=True)
    assert len(vectors_world(layer)[0]) == 12 * len(lo_o)
    assert widget.outline_box.chunk_edit.text() == ",".join(str(c) for c in chunk)


# --------------------------------------------------------------------------------------------
# cross-level links
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", [v07_store("points"), v07_store("streamlines"), V09 / "points.zarrvectors"]
)
@pytest.mark.gui
def test_cross_level_link_segments_join_stored_vertices(qa, qtbot, path):
    viewer, widget, store = qa(path)
    qtbot.waitUntil(lambda: widget.model.tasks["statistics"].done, timeout=10_000)
    for fine in range(len(store.levels) - 1):
        layer = run(qtbot, widget.model.show_links(fine, "all"))
        assert layer.metadata["zarr_vectors"]["role"] == "qa_links"
        starts, ends = vectors_world(layer)
        expected = core.cross_level_segments(store, fine, +1)
        assert len(starts) == len(expected) > 0
        fine_pos = store.read(fine, attributes=False).positions
        coarse_pos = store.read(fine + 1, attributes=False).positions
        # endpoints are stored coordinates (float32 stored -> exact after the layer scale)
        i = rows_of(np.float32(starts), np.float32(fine_pos))
        j = rows_of(np.float32(ends), np.float32(coarse_pos))
        assert np.all(i >= 0) and np.all(j >= 0)
        np.testing.assert_allclose(starts, fine_pos[i], atol=1e-5)
        np.testing.assert_allclose(ends, coarse_pos[j], atol=1e-5)
        bins = store.level(fine + 1).bin_shape
        np.testing.assert_array_equal(np.floor(fine_pos[i] / bins), np.floor(coarse_pos[j] / bins))
        assert (
            f"{len(expected):,} link(s) level {fine} → {fine + 1}"
            in widget.links_box.links_label.text()
        )


@pytest.mark.gui
def test_links_of_a_picked_object_and_of_the_visible_box(qa, qtbot):
    viewer, widget, store = qa(v07_store("points"))
    qtbot.waitUntil(lambda: widget.model.tasks["statistics"].done, timeout=10_000)
    full = store.read(0)
    target = full.positions[17]
    # pick at the vertex (napari order), on its slice
    viewer.dims.set_point(viewer.dims.ndim - 3, float(target[2]))
    _, oid = run(qtbot, widget.model.pick(target[::-1]))
    assert oid == int(full.vertex_object_ids[17])
    assert widget.links_box.object_edit.text() == str(oid)
    layer = run(qtbot, widget.model.show_links(0))  # scope: picked objects
    starts, _ = vectors_world(layer)
    mine = full.positions[full.vertex_object_ids == oid]
    assert len(starts) == len(mine)
    assert np.all(rows_of(np.float32(starts), np.float32(mine)) >= 0)
    assert np.all(layer.features["object_id"] == oid)
    # visible box: only links whose fine vertex is inside it
    widget_box = widget.model.visible_box()
    lo, hi = widget_box
    boxed = run(qtbot, widget.model.show_links(0, "box"))
    starts, _ = vectors_world(boxed)
    assert np.all((starts >= lo - 1e-4) & (starts <= hi + 1e-4))
    expected = core.cross_level_segments(store, 0, +1, bbox=widget_box)
    assert len(starts) == len(expected) > 0


# --------------------------------------------------------------------------------------------
# single-level stores, selection, npe2 wiring
# --------------------------------------------------------------------------------------------


@pytest.mark.gui
@pytest.mark.parametrize("name", ["graph_interleaved", "mesh_draco"])
def test_single_level_store_says_so_and_stays_usable(qa, qtbot, name):
    viewer, widget, store = qa(v07_store(name))
    assert len(store.levels) == 1
    assert "single level" in widget.info_label.text()
    assert not widget.dropped_box.isEnabled()
    assert not widget.side_box.isEnabled()
    assert not widget.links_box.isEnabled()
    assert not widget.level_box.level_combo.isEnabled()
    qtbot.waitUntil(lambda: widget.stats_box.stats_table.columnCount() == 1, timeout=10_000)
    assert widget.model.show_links(0, "all") is None
    assert "no cross-level links" in widget.status.text()
    widget.model.step_level(+1)  # a no-op, not an error
    assert widget.model.list_dropped() is None
    # what does not need two levels works
    viewer.dims.ndisplay = 3
    layer = run(qtbot, widget.model.show_chunks(True))
    assert len(layer.data) == 12 * len(store.chunks(0))
    bins = run(qtbot, widget.model.show_bins(store.chunks(0)[0], occupied=True))
    assert len(bins.data) > 0


@pytest.mark.gui
def test_dock_fits_a_1280x1000_screen_next_to_the_other_docks(qa, qtbot):
    """Every section is reachable in a vertical scroll area: the dock's own minimum is
    small, it stays <= 1000 px tall at 1280 x 1000 with the plugin's other docks open, and
    neither the statistics table nor the dock scrolls sideways."""
    from napari_zarr_vectors.napari.widgets.colour import ColourByWidget
    from napari_zarr_vectors.napari.widgets.pick import PickWidget
    from napari_zarr_vectors.napari.widgets.store_panel import StorePanel

    viewer, widget, store = qa(v07_store("streamlines"), show=True)
    viewer.window._qt_window.resize(1280, 1000)
    qtbot.waitUntil(lambda: widget.stats_box.stats_table.columnCount() == 3, timeout=10_000)
    a_turn(qtbot)  # Qt lays the window out
    assert widget.height() <= 1000
    assert viewer.window._qt_window.height() <= 1000
    for cls, name in ((StorePanel, "Store"), (ColourByWidget, "Colour by"), (PickWidget, "Pick")):
        viewer.window.add_dock_widget(cls(viewer), name=name)
    a_turn(qtbot)  # Qt lays the docks out
    assert widget.minimumSizeHint().height() <= 400
    assert widget.height() <= 1000
    table = widget.stats_box.stats_table
    assert table.horizontalScrollBar().maximum() == 0
    assert widget.scroll_area.horizontalScrollBar().maximum() == 0
    assert widget.scroll_area.widget().width() <= widget.scroll_area.viewport().width()
    # every level's column is wide enough for its texts (nothing elided)
    metrics = table.fontMetrics()
    for c in range(table.columnCount()):
        texts = [table.item(r, c).text() for r in range(table.rowCount())]
        assert table.columnWidth(c) >= max(metrics.horizontalAdvance(t) for t in texts)


@pytest.mark.gui
def test_widget_follows_layer_selection(qa, qtbot):
    viewer, widget, store = qa(v07_store("points"))
    assert widget.store.name == "points"
    open_in(viewer, v07_store("streamlines"))
    streamlines = next(
        lyr
        for lyr in viewer.layers
        if lyr.metadata.get("zarr_vectors", {}).get("name") == "streamlines"
        and lyr.metadata["zarr_vectors"]["role"] != "bounds"
    )
    viewer.layers.selection.active = streamlines
    assert widget.store.name == "streamlines"
    assert "streamlines" in widget.header.text()
    # selecting an overlay keeps the target
    run(qtbot, widget.model.show_chunks(True))
    viewer.layers.selection.active = widget.model.chunk_overlay.layer
    assert widget.store.name == "streamlines"
    # removing the target's layers falls back to the other store
    mine = [
        lyr
        for lyr in viewer.layers
        if lyr.metadata.get("zarr_vectors", {}).get("qa") is None
        and lyr.metadata.get("zarr_vectors", {}).get("name") == "streamlines"
        and lyr.metadata["zarr_vectors"].get("role") != "qa_chunks"
    ]
    for lyr in mine:
        viewer.layers.remove(lyr)
    assert widget.store.name == "points"
    # the chunk outlines stay on and now outline the points store
    qtbot.waitUntil(lambda: widget.model.tasks["chunks"].done, timeout=10_000)
    assert widget.model.chunk_overlay.layer.name.startswith("points chunks")


@pytest.mark.gui
def test_manifest_contributes_the_dock_widget_and_layer_actions(make_napari_viewer, qa, qtbot):
    import npe2
    from napari.plugins import _initialize_plugins

    from napari_zarr_vectors.napari.widgets import PyramidQAWidget, actions

    _initialize_plugins()
    manifest = npe2.PluginManager.instance().get_manifest("napari-zarr-vectors")
    assert "Pyramid QA" in [w.display_name for w in manifest.contributions.widgets]
    commands = {c.id for c in manifest.contributions.commands}
    assert {
        "napari-zarr-vectors.pyramid_qa",
        "napari-zarr-vectors.lock_shown_level",
        "napari-zarr-vectors.unlock_level",
        "napari-zarr-vectors.outline_chunks",
    } <= commands
    viewer, _, store = qa(v07_store("points"))
    _, docked = viewer.window.add_plugin_dock_widget("napari-zarr-vectors", "Pyramid QA")
    assert isinstance(docked, PyramidQAWidget)
    layer = data_layer(viewer)
    actions.outline_chunks(layer, viewer)
    qtbot.waitUntil(lambda: docked.model.tasks["chunks"].done, timeout=10_000)
    assert docked.model.chunk_overlay.layer in viewer.layers
    docked.model.show_chunks(False)
    # the same action through napari's menu (Layers > Visualize > Zarr Vectors pyramid),
    # napari injecting the active layer and the viewer
    from napari._app_model import get_app_model

    app = get_app_model()
    submenus = [
        str(getattr(i, "submenu", "")) for i in app.menus.get_menu("napari/layers/visualize")
    ]
    assert "napari-zarr-vectors.pyramid_menu" in submenus
    viewer.layers.selection.active = layer
    app.commands.execute_command("napari-zarr-vectors.outline_chunks").result()
    qtbot.waitUntil(lambda: docked.model.tasks["chunks"].done, timeout=10_000)
    assert docked.model.chunk_overlay.layer in viewer.layers
    shown = docked.model.level
    assert docked.model.chunk_overlay.layer.metadata["zarr_vectors"]["boxes"] == len(
        store.chunks(shown)
    )


@pytest.mark.gui
def test_docs_screenshot(qa, qtbot):
    """The docs picture: a 2-D slice of level 0 with the level-1 chunk outlines and the
    level 0 -> 1 links, next to the widget."""
    viewer, widget, store = qa(v07_store("points"), show=True)
    viewer.window._qt_window.resize(1280, 1000)
    qtbot.waitUntil(lambda: widget.stats_box.stats_table.columnCount() == 3, timeout=10_000)
    widget.model.lock_level(0)
    controller = widget.model.controller
    qtbot.waitUntil(lambda: not controller.is_loading and controller.level == 0, timeout=20_000)
    viewer.dims.set_point(viewer.dims.ndim - 3, 5.0)
    run(qtbot, widget.model.show_chunks(True, level=1))
    run(qtbot, widget.model.show_links(0, "all"))
    run(qtbot, widget.model.list_dropped(0, 2))
    viewer.reset_view()
    qtbot.waitUntil(lambda: not controller.is_loading, timeout=20_000)
    a_turn(qtbot)  # the frame of the last swap is drawn in a turn of its own
    image = viewer.screenshot(canvas_only=False, flash=False)
    assert image.shape[0] > 200
    save_docs_image(image, "pyramid_qa.png", max_bytes=400_000, thumbnail=(1024, 720))
