"""Pyramid QA's whole-store actions (napari/qa/whole_store.py, widgets/pyramid/whole_store.py):
the report of the command line's ``qa`` job written and opened, the density map added as an
Image layer under the store's layers, where the store's vertices are.

Run under Xvfb: ``xvfb-run -a python -m pytest tests/napari/qa/test_whole_store.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _zv_napari import v07_store

import napari_zarr_vectors as nzv
from napari_zarr_vectors.napari.coords import napari_axis_order

pytest.importorskip("dask")


def _run(qtbot, task, timeout=120_000):
    assert task is not None
    qtbot.waitUntil(lambda: task.done, timeout=timeout)
    assert task.error is None, task.error
    return task.result


@pytest.fixture
def qa_of(make_napari_viewer, qtbot):
    """``qa_of(path)`` -> (viewer, controller, Pyramid QA widget) of a store opened through
    the level of detail."""
    from napari_zarr_vectors.napari import open_in_viewer
    from napari_zarr_vectors.napari.widgets.pyramid import PyramidQAWidget

    def make(path):
        viewer = make_napari_viewer()
        controller = open_in_viewer(viewer, str(path))
        qtbot.waitUntil(lambda: not controller.is_loading, timeout=60_000)
        viewer.layers.selection.active = controller.layers[0]
        widget = PyramidQAWidget(viewer)
        qtbot.addWidget(widget)
        assert widget.model is not None
        return viewer, controller, widget

    return make


@pytest.mark.gui
def test_whole_store_report_is_written_and_opened(qa_of, qtbot, tmp_path):
    from napari_zarr_vectors.jobs import qa_report

    path = v07_store("streamlines")
    viewer, controller, widget = qa_of(path)
    model = widget.model
    opened: list[Path] = []
    model.open_report = opened.append
    target = tmp_path / "report.html"
    widget.whole_box.ask_path = lambda section, suggested: str(target)
    assert "report" not in widget.whole_box.note.text()
    progress: list[str] = []
    model.events.task.connect(lambda e: progress.append(e.task.progress.text))
    widget.whole_box.report_btn.click()
    task = model.tasks["whole-store report"]
    written, verdict = _run(qtbot, task)
    expected = qa_report(nzv.open_store(str(path)), scheduler="sync")
    assert written == target and opened == [target]
    assert verdict == expected.verdict
    html = target.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") or "<html" in html[:200]
    assert expected.verdict in html
    for level in expected.levels:  # one row per level, with its vertex count
        assert f"{int(level['vertices']):,}" in html
    assert f"last report: {verdict}" in widget.whole_box.note.text()
    assert any(text.startswith("QA of streamlines") for text in progress), progress
    assert model.status.startswith(f"whole-store report: {verdict}")


@pytest.mark.gui
def test_a_cancelled_report_writes_nothing(qa_of, qtbot, tmp_path):
    viewer, controller, widget = qa_of(v07_store("streamlines"))
    model = widget.model
    model.open_report = lambda p: pytest.fail("a cancelled report was opened")
    target = tmp_path / "cancelled.html"
    task = model.whole_store_report(target)
    model.cancel_tasks()
    assert task.done  # at once, on cancel
    qtbot.waitUntil(lambda: task._job.done, timeout=30_000)  # the job's thread ended
    assert task.cancelled and not target.exists()
    assert model.report is None


@pytest.mark.gui
def test_density_map_lies_under_the_store_where_its_vertices_are(qa_of, qtbot):
    from napari_zarr_vectors.jobs import density_map

    path = v07_store("streamlines")
    viewer, controller, widget = qa_of(path)
    store = nzv.open_store(str(path))
    voxel = widget.whole_box.voxel_spin.value()
    assert voxel > 0
    widget.whole_box.density_btn.click()
    layer = _run(qtbot, widget.model.tasks["density map"])
    expected = density_map(store, voxel, scheduler="sync")
    order = napari_axis_order(("space",) * store.ndim)
    np.testing.assert_array_equal(layer.data, np.transpose(expected.image, order))
    # under every layer of the store
    index = viewer.layers.index(layer)
    assert all(index < viewer.layers.index(lyr) for lyr in controller.layers)
    # every stored vertex falls in a voxel that counts it
    geom = store.read(0)
    world = np.c_[geom.positions, np.ones(len(geom.positions))] @ store.placement.affine.T
    voxels = np.floor(layer.world_to_data(world[:, :-1][:, order]) + 0.5).astype(int)
    inside = np.all((voxels >= 0) & (voxels < layer.data.shape), axis=1)
    assert inside.all()
    assert np.all(layer.data[tuple(voxels.T)] > 0)
    counts = expected.count
    assert widget.model.status.startswith(f"density map of level 0: {counts} per voxel")
    assert layer.metadata["zarr_vectors_density"]["count"] == counts
    # a second map replaces the first
    widget.whole_box.voxel_spin.setValue(voxel * 2)
    widget.whole_box.density_btn.click()
    second = _run(qtbot, widget.model.tasks["density map"])
    assert layer not in viewer.layers and second in viewer.layers
    assert second.data.shape[0] < layer.data.shape[0]


@pytest.mark.gui
def test_density_map_of_a_placed_store_lies_on_its_streamlines(qa_of, qtbot, tmp_path):
    """A TRK ingest (zarr-vectors-tools, a ``crs`` that flips LPS to RAS): the image lies in
    RAS mm where nibabel puts the streamlines, as the store's layers do."""
    pytest.importorskip("zarr_vectors_tools")
    nib = pytest.importorskip("nibabel")
    from zarr_vectors_tools.convert.ingest.trk_parallel import ingest_trk_parallel

    src = Path(nib.__file__).parent / "tests" / "data" / "standard.LPS.trk"
    out = tmp_path / "lps.zarrvectors"
    ingest_trk_parallel(src, out, workers=1, progress=False, build_multiscale=False)
    truth = np.concatenate(list(nib.streamlines.load(str(src)).streamlines))  # RAS mm
    viewer, controller, widget = qa_of(out)
    layer = _run(qtbot, widget.model.density_map(2.0))
    order = napari_axis_order(("space",) * 3)
    voxels = np.floor(layer.world_to_data(truth[:, order]) + 0.5).astype(int)  # (voxel centres)
    assert np.all((voxels >= 0) & (voxels < layer.data.shape))
    assert np.all(layer.data[tuple(voxels.T)] > 0)
    # in the layers' units (napari renders layers of mixed units without any)
    assert tuple(layer.units) == tuple(controller.layers[0].units)[-3:]
    assert str(layer.units[0]) == "millimeter"
    # the image spans the layers' world box (to within a voxel)
    lo, hi = (np.asarray(b) for b in controller.layers[0].extent.world)
    ilo, ihi = (np.asarray(b) for b in layer.extent.world)
    assert np.all(ilo[-3:] <= lo[-3:] + 2.0) and np.all(ihi[-3:] >= hi[-3:] - 2.0)


def test_density_map_in_the_stored_space_lies_on_the_stored_positions(tmp_path) -> None:
    """With the Store panel's *stored space* on, the layers show the stored coordinates: the
    density image goes there too (its world placement taken back)."""
    pytest.importorskip("zarr_vectors_tools")
    nib = pytest.importorskip("nibabel")
    from zarr_vectors_tools.convert.ingest.trk_parallel import ingest_trk_parallel

    from napari_zarr_vectors.jobs import density_map
    from napari_zarr_vectors.napari.layerdata.placement import show_stored_space
    from napari_zarr_vectors.napari.qa.whole_store import density_layer_kwargs

    src = Path(nib.__file__).parent / "tests" / "data" / "standard.LPS.trk"
    out = tmp_path / "lps.zarrvectors"
    ingest_trk_parallel(src, out, workers=1, progress=False, build_multiscale=False)
    store = nzv.open_store(str(out))
    assert not store.placement.is_identity
    density = density_map(store, 2.0, scheduler="sync")
    order = napari_axis_order(("space",) * 3)
    stored = store.read(0).positions.astype(np.float64)
    for on, points in ((False, store.placement.apply(stored)), (True, stored)):
        show_stored_space(str(out), on)
        try:
            kwargs = density_layer_kwargs(store, density)
        finally:
            show_stored_space(str(out), False)
        affine = kwargs["affine"]  # voxel (napari order) -> shown coordinates
        shown = points[:, order]
        voxels = (shown - affine[:3, 3]) @ np.linalg.inv(affine[:3, :3]).T
        idx = np.floor(voxels + 0.5).astype(int)
        assert np.all((idx >= 0) & (idx < kwargs["data"].shape)), on
        assert np.all(kwargs["data"][tuple(idx.T)] > 0), on
