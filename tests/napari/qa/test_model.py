"""The Pyramid QA model (napari/qa/model.py) without its widget: actions reached from a
layer, the events a widget listens to, the layer menu's actions (with and without a store),
the visible box QA reads in (the loader's), and Cancel reaching the reads.

Run under Xvfb: ``xvfb-run -a python -m pytest tests/napari/qa/test_model.py``.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from _zv_napari import v07_store
from test_compute import run_job

from napari_zarr_vectors.format import pyramid as core
from napari_zarr_vectors.napari.qa import jobs


def settle(qtbot, controller, timeout=20_000):
    qtbot.waitUntil(lambda: not controller.is_loading, timeout=timeout)


def run(qtbot, task, timeout=30_000):
    qtbot.waitUntil(lambda: task.done, timeout=timeout)
    assert task.error is None, task.error
    return task.result


@pytest.fixture
def opened(make_napari_viewer, qtbot):
    """``opened(name)`` -> (viewer, controller): a v0.7 store open through the level of
    detail, the whole store in view, no Pyramid QA widget."""
    from napari_zarr_vectors.napari import open_in_viewer

    def make(name, ndisplay=3):
        viewer = make_napari_viewer()
        controller = open_in_viewer(viewer, str(v07_store(name)), first_view=False)
        viewer.dims.ndisplay = ndisplay
        viewer.reset_view()
        settle(qtbot, controller)
        viewer.layers.selection.active = controller.layers[0]
        return viewer, controller

    return make


def qa_docked(viewer) -> bool:
    return any("Pyramid QA" in name for name in viewer.window.dock_widgets)


def messages(before: int) -> list[str]:
    from napari.utils.notifications import notification_manager

    return [n.message for n in notification_manager.records[before:]]


def n_records() -> int:
    from napari.utils.notifications import notification_manager

    return len(notification_manager.records)


# --------------------------------------------------------------------------------------------
# the model, no widget
# --------------------------------------------------------------------------------------------


@pytest.mark.gui
def test_model_actions_without_a_widget(opened, qtbot):
    from napari_zarr_vectors.napari.qa.model import qa_model_for

    viewer, controller = opened("points")
    store = controller.store
    model = qa_model_for(viewer, controller.layers[0])
    # one model per store, from any of its layers
    assert qa_model_for(viewer, controller.bounds_layer) is model
    heard: dict[str, int] = {}
    for name in ("level", "statistics", "outlines", "status", "task"):
        getattr(model.events, name).connect(
            lambda _e=None, n=name: heard.__setitem__(n, heard.get(n, 0) + 1)
        )

    model.lock_level(2)
    assert controller.locked_level == 2 and model.status == "locked at level 2"
    model.step_level(-1)
    assert controller.locked_level == 1
    settle(qtbot, controller)
    assert controller.level == 1 and heard["level"] >= 2

    rows = run(qtbot, model.refresh_statistics())
    assert (
        [r["vertices"] for r in rows]
        == [240, 63, 8]
        == [r["vertices"] for r in core.level_statistics(store)]
    )
    assert heard["statistics"] == 1 and model.families == [(0, 1), (1, 1)]

    layer = run(qtbot, model.show_chunks(True))  # the shown (locked) level: 1
    lo, hi = core.chunk_boxes(store, 1)
    meta = layer.metadata["zarr_vectors"]
    assert meta["role"] == "qa_chunks" and meta["qa_level"] == 1
    assert meta["boxes"] == meta["boxes_drawn"] == len(lo) == len(store.chunks(1))
    assert len(layer.data) == 12 * len(lo)
    np.testing.assert_array_equal(layer.features["box"], np.repeat(np.arange(len(lo)), 12))
    assert model.chunks_on and heard["outlines"] >= 2 and heard["task"] >= 2
    assert f"{len(lo):,} non-empty chunks at level 1" in model.status

    model.lock_level(None)
    assert controller.locked_level is None
    model.show_chunks(False)
    assert layer not in viewer.layers and not model.chunks_on
    assert not qa_docked(viewer)


@pytest.mark.gui
def test_the_widget_renders_the_model_the_actions_changed(opened, qtbot):
    from napari_zarr_vectors.napari.qa.model import qa_model_for
    from napari_zarr_vectors.napari.widgets import PyramidQAWidget

    viewer, controller = opened("points")
    model = qa_model_for(viewer, controller.layers[0])
    model.lock_level(2)
    run(qtbot, model.list_dropped(0, 2))
    widget = PyramidQAWidget(viewer)
    assert widget.model is model
    assert widget.level_box.level_combo.currentText() == "level 2"
    assert widget.dropped_box.dropped_list.count() == len(core.dropped_objects(model.store, 0, 2))
    model.lock_level(1)  # an action elsewhere: the widget follows
    assert widget.level_box.level_combo.currentText() == "level 1"
    assert widget.status.text() == "locked at level 1"


# --------------------------------------------------------------------------------------------
# the layer menu's actions
# --------------------------------------------------------------------------------------------


ACTIONS = (
    "open_pyramid_qa",
    "lock_shown_level",
    "unlock_level",
    "finer_level",
    "coarser_level",
    "outline_chunks",
)


@pytest.mark.gui
def test_menu_actions_lock_and_outline_without_docking_the_widget(opened, qtbot):
    from napari._app_model import get_app_model
    from napari.plugins import _initialize_plugins

    from napari_zarr_vectors.napari.qa.model import qa_model_for

    _initialize_plugins()
    app = get_app_model()
    viewer, controller = opened("streamlines")
    shown = controller.level
    app.commands.execute_command("napari-zarr-vectors.lock_shown_level").result()
    assert controller.locked_level == shown
    app.commands.execute_command("napari-zarr-vectors.coarser_level").result()
    assert controller.locked_level == min(shown + 1, 2)
    app.commands.execute_command("napari-zarr-vectors.unlock_level").result()
    assert controller.locked_level is None
    app.commands.execute_command("napari-zarr-vectors.outline_chunks").result()
    model = qa_model_for(viewer, controller.layers[0])
    layer = run(qtbot, model.tasks["chunks"])
    assert len(layer.data) == 12 * len(controller.store.chunks(controller.level))
    assert not qa_docked(viewer)
    app.commands.execute_command("napari-zarr-vectors.open_pyramid_qa").result()
    assert qa_docked(viewer)


@pytest.mark.gui
@pytest.mark.parametrize("with_image", [False, True])
def test_menu_actions_without_a_store_say_open_one_first(make_napari_viewer, with_image):
    from napari._app_model import get_app_model
    from napari.plugins import _initialize_plugins

    from napari_zarr_vectors.napari.widgets.actions import NO_STORE

    _initialize_plugins()
    app = get_app_model()
    viewer = make_napari_viewer()
    if with_image:  # a layer, of no store
        viewer.add_image(np.zeros((4, 4)))
    for action in ACTIONS:
        before = n_records()
        app.commands.execute_command(f"napari-zarr-vectors.{action}").result()
        assert messages(before) == [NO_STORE] == ["Open a Zarr Vectors store first."]
    assert not qa_docked(viewer)


@pytest.mark.gui
def test_menu_action_on_a_layer_of_no_store_says_select_one(opened):
    from napari_zarr_vectors.napari.widgets import actions

    viewer, controller = opened("points")
    image = viewer.add_image(np.zeros((4, 4, 4)))
    before = n_records()
    actions.lock_shown_level(image, viewer)
    assert messages(before) == [actions.NOT_A_STORE_LAYER]
    assert controller.locked_level is None


# --------------------------------------------------------------------------------------------
# one view box
# --------------------------------------------------------------------------------------------


@pytest.mark.gui
@pytest.mark.parametrize("ndisplay", [2, 3])
def test_the_box_qa_reads_in_is_the_box_the_loader_plans(opened, qtbot, ndisplay):
    from napari_zarr_vectors.napari.layerdata.placement import Placement
    from napari_zarr_vectors.napari.lod import plan
    from napari_zarr_vectors.napari.qa.model import qa_model_for

    viewer, controller = opened("points", ndisplay=ndisplay)
    store = controller.store
    viewer.scene.camera.zoom *= 4  # a quarter of the store across
    z_axis = viewer.dims.ndim - 3
    if ndisplay == 2:  # a slab thicker than one layer data unit
        viewer.dims.set_point(z_axis, 0.0)
        thickness = list(viewer.dims.thickness)
        thickness[z_axis] = 30.0
        viewer.dims.thickness = tuple(thickness)
    settle(qtbot, controller)
    model = qa_model_for(viewer, controller.layers[0])
    lo, hi = model.visible_box()
    # what the loader plans for the same camera: the controller's view, the loader's extent
    view = controller.request().view
    vis = plan.visible_box(view, *controller.loader.extent_napari())
    want_lo, want_hi = Placement.of(store).to_store_box(*vis)
    s_lo, s_hi = (np.asarray(b, float) for b in store.bounds)
    np.testing.assert_allclose(lo, np.maximum(want_lo, s_lo))
    np.testing.assert_allclose(hi, np.minimum(want_hi, s_hi))
    assert np.all((hi - lo)[:2] < (s_hi - s_lo)[:2])  # the zoom cuts x and y
    if ndisplay == 2:  # the slab is the dims thickness (store axis z = 2), not one data unit
        np.testing.assert_allclose([lo[2], hi[2]], [-15.0, 15.0])


# --------------------------------------------------------------------------------------------
# Cancel reaches the reads
# --------------------------------------------------------------------------------------------


def test_every_qa_job_takes_the_cancel_event_and_stops_before_a_read():
    import napari_zarr_vectors as nzv

    store = nzv.open_store(v07_store("points"))
    cancelled = threading.Event()
    cancelled.set()
    calls = []
    _, result = run_job(jobs.call_job("a read", lambda: calls.append(1) or 1, cancelled))
    assert result is None and calls == []
    # multi-read jobs yield between their reads (where a cancelled task's job is closed)
    reports, _ = run_job(jobs.store_facts(store, threading.Event()))
    assert len(reports) == len(store.levels)
    reports, _ = run_job(jobs.levels_holding_job(store, [0], threading.Event()))
    assert len(reports) == len(store.levels)


@pytest.mark.gui
def test_cancel_sets_the_event_the_running_read_holds(opened, qtbot):
    from napari_zarr_vectors.napari.qa.model import qa_model_for

    viewer, controller = opened("streamlines")
    model = qa_model_for(viewer, controller.layers[0])
    run(qtbot, model.refresh_statistics())
    before = list(viewer.layers)
    task = model.add_levels([0, 1])
    model.cancel_tasks()
    assert task.done and task.cancelled and task.cancel_event.is_set()
    assert model.status == "side by side: cancelled" and not model.busy
    # the worker's end reached the UI thread: whatever it still delivered was dropped
    qtbot.waitUntil(lambda: task._job.done, timeout=30_000)
    assert list(viewer.layers) == before and model.side_layers == []
