"""Pyramid QA actions in a real viewer: every action in 2-D and 3-D leaves exactly
the layers it should; actions mean what they say; one filter state with the browse widgets;
questions before reading most of a store; cancelling.

Run under Xvfb: ``xvfb-run -a python -m pytest tests/napari/widgets/test_pyramid_actions.py``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from _zv_napari import DATA, v07_store

from napari_zarr_vectors.format import pyramid as core
from napari_zarr_vectors.napari.browse.static_filter import layer_object_ids
from napari_zarr_vectors.napari.browse.targets import is_data_layer

pytestmark = pytest.mark.gui


@pytest.fixture
def qa(make_napari_viewer, qtbot):
    """``qa(path, **open_options)`` -> (viewer, widget, controller) with the store open
    through the level of detail, the whole store in a 3-D view, the widget docked."""
    from napari_zarr_vectors.napari import open_in_viewer
    from napari_zarr_vectors.napari.widgets import PyramidQAWidget

    def make(path, **options):
        viewer = make_napari_viewer()
        controller = open_in_viewer(viewer, str(path), first_view=False, **options)
        viewer.dims.ndisplay = 3
        viewer.reset_view()
        settle(qtbot, controller)
        viewer.layers.selection.active = controller.layers[0]
        widget = PyramidQAWidget(viewer)
        viewer.window.add_dock_widget(widget, name="Pyramid QA")
        widget.asked = []
        widget.confirm = lambda text: widget.asked.append(text) or True
        run(qtbot, widget.model.tasks["statistics"])
        return viewer, widget, controller

    return make


def settle(qtbot, controller, timeout=20_000):
    qtbot.waitUntil(lambda: not controller.is_loading, timeout=timeout)


def run(qtbot, task, timeout=30_000):
    if task is None:
        return None
    qtbot.waitUntil(lambda: task.done, timeout=timeout)
    assert task.error is None, task.error
    return task.result


def roles(viewer):
    """(role or qa tag, name) of every layer, in order."""
    out = []
    for lyr in viewer.layers:
        meta = lyr.metadata.get("zarr_vectors", {})
        out.append(meta.get("qa") or meta.get("role"))
    return out


def drawn_ids(controller) -> set[int]:
    out: set[int] = set()
    for layer in controller.layers:
        ids = layer_object_ids(layer)
        if ids is None:
            continue
        if type(layer).__name__ == "Points":
            ids = ids[np.asarray(layer.shown, bool)]
        out |= set(np.unique(ids).tolist())
    return out


# --------------------------------------------------------------------------------------------
# every action, 2-D and 3-D: the process survives, the layer list is what it should be
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ndisplay", [2, 3])
def test_every_action_leaves_exactly_the_layers_it_should(qa, qtbot, ndisplay):
    viewer, widget, controller = qa(v07_store("streamlines"))
    viewer.dims.ndisplay = ndisplay
    settle(qtbot, controller)
    base = roles(viewer)
    assert base == ["bounds", "streamlines"]

    rows = run(qtbot, widget.model.refresh_statistics())
    assert len(rows) == 3 and roles(viewer) == base
    ids = run(qtbot, widget.model.list_dropped(0, 2))
    assert ids.tolist() == [0, 1, 6, 8, 9] and roles(viewer) == base

    isolated = run(qtbot, widget.model.isolate_dropped())
    assert roles(viewer) == [*base, "qa_dropped"]
    assert set(np.unique(isolated[0].features["object_id"])) == set(ids.tolist())

    run(qtbot, widget.model.filter_to_dropped())
    settle(qtbot, controller)
    assert drawn_ids(controller) <= set(ids.tolist()) and drawn_ids(controller)
    widget.model.clear_filter()
    settle(qtbot, controller)
    assert roles(viewer) == [*base, "qa_dropped"]

    side = run(qtbot, widget.model.add_levels([0, 1]))
    assert roles(viewer) == [*base, "qa_dropped", "side_by_side", "side_by_side"]
    assert [lyr.metadata["zarr_vectors"]["level"] for lyr in side] == [0, 1]
    widget.model.set_grid(True)  # only the side-by-side levels are visible (get grid cells)
    assert [lyr for lyr in viewer.layers if lyr.visible] == side
    widget.model.set_grid(False)
    assert all(lyr.visible for lyr in viewer.layers)
    assert widget.model.toggle_side_by_side() is side[0]
    assert [lyr.visible for lyr in side] == [True, False]
    widget.model.toggle_side_by_side()
    assert widget.model.toggle_side_by_side() is None
    widget.model.remove_levels()  # one layer per event-loop turn
    qtbot.waitUntil(lambda: not any(lyr in viewer.layers for lyr in side), timeout=5_000)
    assert roles(viewer) == [*base, "qa_dropped"]

    chunks = run(qtbot, widget.model.show_chunks(True))
    assert roles(viewer) == [*base, "qa_dropped", "qa_chunks"]
    assert chunks.metadata["zarr_vectors"]["qa_level"] == controller.level
    widget.model.lock_level(2)
    settle(qtbot, controller)
    qtbot.waitUntil(lambda: widget.model.tasks["chunks"].done, timeout=10_000)
    assert roles(viewer) == [*base, "qa_dropped", "qa_chunks"]
    assert widget.model.chunk_overlay.layer.metadata["zarr_vectors"]["qa_level"] == 2
    widget.outline_box.chunks_check.setChecked(False)  # outline off: no chunk layer
    assert roles(viewer) == [*base, "qa_dropped"]
    widget.model.lock_level(None)
    settle(qtbot, controller)

    run(qtbot, widget.model.show_bins(widget.store.chunks(0)[0], occupied=False, level=0))
    assert roles(viewer) == [*base, "qa_dropped", "qa_bins"]
    full = widget.store.read(0)
    key, oid = run(qtbot, widget.model.pick(full.positions[3][::-1]))
    assert roles(viewer) == [*base, "qa_dropped", "qa_bins"]

    links = run(qtbot, widget.model.show_links(0, "all"))
    again = run(qtbot, widget.model.show_links(0, "all"))
    assert links not in viewer.layers and again in viewer.layers
    assert roles(viewer) == [*base, "qa_dropped", "qa_bins", "qa_links"]
    assert len(again.data) == len(core.cross_level_segments(widget.store, 0, +1))
    assert not widget.model.busy and widget.progress_bar.isHidden()


# --------------------------------------------------------------------------------------------
# actions mean what they say
# --------------------------------------------------------------------------------------------


def test_filter_to_dropped_objects_locks_the_level_holding_them(qa, qtbot):
    viewer, widget, controller = qa(v07_store("points"))
    widget.model.lock_level(2)
    settle(qtbot, controller)
    ids = run(qtbot, widget.model.list_dropped(0, 2))  # absent at level 2 by definition
    text = run(qtbot, widget.model.filter_to_dropped())
    assert "locked level 0, where they exist" in text
    assert controller.locked_level == 0
    settle(qtbot, controller)
    assert controller.level == 0
    assert drawn_ids(controller) == set(ids.tolist())
    widget.model.clear_filter()  # the lock it made goes too
    settle(qtbot, controller)
    assert controller.locked_level == 2 and controller.object_filter is None


def test_isolate_with_nothing_listed_does_nothing_and_says_why(qa):
    viewer, widget, controller = qa(v07_store("points"))
    before = list(viewer.layers)
    assert widget.model.isolate_dropped() is None
    assert "press List" in widget.status.text()
    assert list(viewer.layers) == before


def test_statistics_count_stored_vertices_and_the_status_bar_count_agrees(qa, qtbot):
    viewer, widget, controller = qa(v07_store("streamlines"))
    table = widget.stats_box.stats_table
    assert table.verticalHeaderItem(0).text() == "stored vertices"
    assert [table.item(0, c).text() for c in range(3)] == ["159", "22", "6"]
    widget.model.lock_level(1)
    settle(qtbot, controller)
    drawn = controller.vertex_count
    assert f"{drawn:,} vertices drawn" in widget.stats_box.drawn_label.text()
    assert "22 stored vertices" in widget.stats_box.drawn_label.text()
    assert f"{drawn:,} vertices" in viewer.status


def test_side_by_side_counts_agree_with_the_table_and_the_status_bar(qa, qtbot):
    """streamlines: 10 objects; levels store 159 / 22 / 6 vertices and keep 10 / 10 / 5
    objects. Side by side names each number the way the table and the status bar do."""
    viewer, widget, controller = qa(v07_store("streamlines"))
    table = widget.stats_box.stats_table
    stored = [table.item(0, c).text() for c in range(3)]
    kept = [table.item(1, c).text().split(" / ")[0] for c in range(3)]
    assert stored == ["159", "22", "6"] and kept == ["10", "10", "5"]
    layers = run(qtbot, widget.model.add_levels([0, 1, 2]))
    notes = widget.status.text().split("(", 1)[1]
    for level, layer in enumerate(layers):
        rows = len(layer.data)
        assert (
            f"level {level}: {kept[level]} objects · {rows:,} vertices drawn "
            f"({stored[level]} stored vertices in the level)" in notes
        )
        # what the table counts as kept is what the layer draws
        assert len(np.unique(layer.features["object_id"])) == int(kept[level])
    widget.model.remove_levels()
    # the status bar counts the vertices drawn: at level 1 the same number side by side gave
    widget.model.lock_level(1)
    settle(qtbot, controller)
    assert controller.vertex_count == len(layers[1].data) == 65
    assert f"{controller.vertex_count:,} vertices drawn" in viewer.status


def test_bins_in_2d_draw_what_they_report(qa, qtbot):
    viewer, widget, controller = qa(v07_store("points"))
    viewer.dims.ndisplay = 2
    store = widget.store
    chunk = store.chunks(0)[-1]
    lo, hi = core.bin_boxes(store, 0, chunk)
    viewer.dims.set_point(viewer.dims.ndim - 3, float(lo[:, 2].min()) - 40.0)  # elsewhere
    layer = run(qtbot, widget.model.show_bins(chunk, occupied=False, level=0))
    z = viewer.dims.point[-3]
    assert lo[:, 2].min() <= z < hi[:, 2].max()  # the slice moved into the chunk
    drawn = layer.metadata["zarr_vectors"]["boxes_drawn"]
    assert drawn > 0 and len(layer.data) == 4 * drawn
    assert f"{drawn} outlined" in widget.status.text()
    assert "slice moved into the chunk" in widget.status.text()


# --------------------------------------------------------------------------------------------
# one filter state with the browse widgets
# --------------------------------------------------------------------------------------------


def test_qa_filter_and_group_filter_are_one_state(qa, qtbot):
    from napari_zarr_vectors.napari.widgets.filters import GroupFilterWidget

    viewer, widget, controller = qa(v07_store("points"), lock_level=0)
    groups = GroupFilterWidget(viewer)
    viewer.window.add_dock_widget(groups)
    with open(DATA / "v07" / "expected" / "points.json", encoding="utf-8") as fh:
        members = {int(k): set(v) for k, v in json.load(fh)["groups"].items()}
    groups.set_checked([0, 1, 3])  # untick group 2
    settle(qtbot, controller)
    dropped = run(qtbot, widget.model.list_dropped(0, 2))
    run(qtbot, widget.model.filter_to_dropped())  # QA filter, ANDed with the group filter
    settle(qtbot, controller)
    both = (members[0] | members[1] | members[3]) & set(dropped.tolist())
    assert drawn_ids(controller) == both
    groups.set_checked([0, 3])  # untick another group
    settle(qtbot, controller)
    assert drawn_ids(controller) == (members[0] | members[3]) & set(dropped.tolist())
    widget.model.clear_filter()  # QA clear: exactly the group filter's objects
    settle(qtbot, controller)
    want = members[0] | members[3]
    assert drawn_ids(controller) == want
    assert groups.count.text() == f"{len(want)} of 15 objects pass"
    assert controller.layers[0].metadata["zarr_vectors"]["filter"] == {
        "passing": len(want),
        "total": 15,
    }


# --------------------------------------------------------------------------------------------
# asking first, capping, cancelling
# --------------------------------------------------------------------------------------------


def test_whole_level_links_ask_first_and_are_capped(qa, qtbot):
    viewer, widget, controller = qa(v07_store("points"))
    controller.vertex_budget = 40  # a store 'large' against the budget
    settle(qtbot, controller)
    widget.confirm = lambda text: widget.asked.append(text) or False
    before = list(viewer.layers)
    assert widget.model.show_links(0, "all") is None  # declined: nothing read, nothing drawn
    assert "reads about 240 of the 311 vertices" in widget.asked[-1]
    assert list(viewer.layers) == before and "not started" in widget.status.text()
    widget.confirm = lambda text: True
    layer = run(qtbot, widget.model.show_links(0, "all"))
    total = len(core.cross_level_segments(widget.store, 0, +1))
    cap = widget.model.layer_budget() // 2
    assert 0 < len(layer.data) <= cap
    assert widget.links_box.links_label.text().startswith(
        f"showing {len(layer.data):,} of {total:,}"
    )


def test_cancel_drops_the_result(qa, qtbot):
    viewer, widget, controller = qa(v07_store("streamlines"))
    before = list(viewer.layers)
    task = widget.model.show_links(0, "all")
    assert not widget.progress_bar.isHidden() and not widget.cancel_btn.isHidden()
    widget.cancel_btn.click()
    assert task.done and task.cancelled
    # the worker's end reached the UI thread: its result arrived and was dropped
    qtbot.waitUntil(lambda: task._job.done, timeout=30_000)
    assert list(viewer.layers) == before
    assert widget.progress_bar.isHidden()
    assert "cancelled" in widget.status.text()


def test_store_layers_are_the_data_layers_not_the_qa_layers(qa, qtbot):
    viewer, widget, controller = qa(v07_store("points"))
    run(qtbot, widget.model.add_levels([1]))
    run(qtbot, widget.model.show_chunks(True))
    data = [lyr for lyr in viewer.layers if is_data_layer(lyr)]
    assert data == controller.layers
    viewer.layers.selection.active = widget.model.chunk_overlay.layer
    assert widget.target is controller and widget.layer is controller.layers[0]


# --------------------------------------------------------------------------------------------
# stores with a time axis: napari's axis order is not the store's reversed
# --------------------------------------------------------------------------------------------


def test_outlines_of_a_time_lapse_store_follow_its_axis_order(make_napari_viewer, qtbot, tmp_path):
    import warnings

    zv = pytest.importorskip("zarr_vectors")
    from napari_zarr_vectors.napari import open_in_viewer
    from napari_zarr_vectors.napari.widgets import PyramidQAWidget

    rng = np.random.default_rng(0)
    pos = np.column_stack([rng.integers(0, 5, 500), rng.uniform(0, 100, (500, 3))])
    path = tmp_path / "detections.zarrvectors"
    axes = (
        zv.Axis("t", "second", "time"),
        zv.Axis("x", "micrometer"),
        zv.Axis("y", "micrometer"),
        zv.Axis("z", "micrometer"),
    )
    schema = zv.Schema(
        4,
        ((0, 0, 0, 0), (4, 100, 100, 100)),
        axes=axes,
        layout=zv.Layout(cell_size=(1, 50, 50, 50)),
        kind="point_cloud",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zv.create(str(path), schema=schema).add_points(pos.astype(np.float32))
    viewer = make_napari_viewer()
    controller = open_in_viewer(viewer, str(path), first_view=False)
    viewer.dims.ndisplay = 3
    settle(qtbot, controller)
    widget = PyramidQAWidget(viewer)
    layer = run(qtbot, widget.model.show_chunks(True))
    store = widget.store
    lo, hi = core.chunk_boxes(store, 0)
    t = viewer.dims.point[0]  # napari axis 0 is the time slider
    half = np.asarray(layer.scale)[0] / 2
    cut = (lo[:, 0] <= t + half) & (hi[:, 0] > t - half)
    assert 0 < cut.sum() < len(lo)
    data = np.asarray(layer.data)
    scale = np.asarray(layer.scale)
    starts = data[:, 0] * scale  # napari order (t, z, y, x)
    ends = (data[:, 0] + data[:, 1]) * scale
    assert len(data) == 12 * cut.sum()
    np.testing.assert_allclose(starts[:, 0], t)
    # each wireframe spans its chunk box in x, y, z (store columns 1, 2, 3)
    seg = np.concatenate([starts, ends]).reshape(2, -1, 12, 4)[..., [3, 2, 1]]
    box = np.asarray(layer.features["box"]).reshape(-1, 12)[:, 0]
    np.testing.assert_allclose(seg.min(axis=(0, 2)), lo[box][:, 1:])
    np.testing.assert_allclose(seg.max(axis=(0, 2)), hi[box][:, 1:])
    assert set(box.tolist()) == set(np.flatnonzero(cut).tolist())
