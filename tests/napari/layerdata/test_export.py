"""Exporting what the browse widgets selected (filters, isolated objects) into a new store.

The exported objects are read whole at level 0 (all their chunks, not only the ones a view
loaded): the new store must hold exactly those objects, with their geometry, vertex and
object attributes and (the exported members of) their groups.
"""

from __future__ import annotations

import threading
from collections import Counter

import numpy as np
import pytest
from _zv_napari import copy_fixture

import napari_zarr_vectors as nzv
from napari_zarr_vectors.napari.browse.filters import FilterState, GroupFilter, RangeFilter
from napari_zarr_vectors.napari.browse.table import ObjectTable
from napari_zarr_vectors.napari.layerdata.export import (
    EVERYTHING,
    FILTERED,
    ISOLATED,
    export_selection,
    selection_ids,
    widget_selection,
)
from napari_zarr_vectors.napari.npe2.writer import _Activity
from napari_zarr_vectors.write import SameStoreError, TargetExistsError, WriteError, export_objects

zv = pytest.importorskip("zarr_vectors")


def paths_by_id(store, ids) -> dict[int, list]:
    g = store.read(0, object_ids=list(ids))
    return {
        int(o): np.asarray(g.positions[p], np.float32).tolist()
        for o, p in zip(g.path_object_ids, g.paths, strict=True)
    }


def test_selection_prefers_isolated_then_filters_then_everything():
    ids = np.arange(10)
    assert selection_ids(ids, np.array([4, 2]), [7, 3, 7])[1] == ISOLATED
    np.testing.assert_array_equal(selection_ids(ids, np.array([4, 2]), [7, 3])[0], [3, 7])
    got, why = selection_ids(ids, np.array([4, 2]), [])
    assert why == FILTERED and got.tolist() == [2, 4]
    assert selection_ids(ids, None, []) == (None, EVERYTHING)


def test_export_filtered_polylines_reads_whole_objects(tmp_path):
    src = copy_fixture("polylines", tmp_path)
    store = nzv.open_store(src)
    table = ObjectTable.from_store(store)
    state = FilterState(table)
    name = "mean_radius"
    lo = float(np.median(table.attributes[name]))
    state.set_attribute_filter(name, RangeFilter(name, lo, np.inf))
    allowed = state.allowed()
    assert 0 < allowed.size < table.n_objects

    out = export_objects(store, tmp_path / "filtered.zarrvectors", allowed, validate=True)
    new = nzv.open_store(out)
    assert new.geometry_type == "polyline"
    assert new.object_ids(0).size == allowed.size
    # paths are renumbered 0..n-1 in id order; the source ids are an object attribute
    source_ids = new.object_attributes(0)["source_object_id"]
    np.testing.assert_array_equal(source_ids, allowed)
    want = paths_by_id(store, allowed)
    got = paths_by_id(new, new.object_ids(0))
    assert {int(source_ids[k]): v for k, v in got.items()} == want
    radius = new.object_attributes(0)[name]
    np.testing.assert_array_equal(radius, store.object_attributes(0)[name][allowed])
    assert (radius >= lo).all()
    # vertex attributes travel with their vertices
    g_new, g_old = new.read(0), store.read(0, object_ids=allowed)
    for attr in g_old.vertex_attributes:
        a = Counter(
            (tuple(p), float(np.ravel(v)[0]))
            for p, v in zip(
                np.float32(g_old.positions).tolist(), g_old.vertex_attributes[attr], strict=True
            )
        )
        c = Counter(
            (tuple(p), float(np.ravel(v)[0]))
            for p, v in zip(
                np.float32(g_new.positions).tolist(), g_new.vertex_attributes[attr], strict=True
            )
        )
        assert a == c
    # groups keep their ids, with the exported members (renumbered)
    old_groups = store.groups(0)
    for gid, members in new.groups(0).items():
        assert source_ids[members].tolist() == np.intersect1d(old_groups[gid], allowed).tolist()


def test_export_points_by_group_keeps_ids_and_attributes(tmp_path):
    src = copy_fixture("points", tmp_path)
    store = nzv.open_store(src)
    table = ObjectTable.from_store(store)
    state = FilterState(table, group_filter=GroupFilter((1,)))
    allowed = state.allowed()
    out = export_objects(store, tmp_path / "group1.zarrvectors", allowed)
    new = nzv.open_store(out)
    np.testing.assert_array_equal(new.object_ids(0), allowed)  # point ids survive as they are
    g_old, g_new = store.read(0, object_ids=allowed), new.read(0)
    assert g_new.vertex_count == g_old.vertex_count

    def key(g):
        return Counter(
            (tuple(p), int(o), float(i))
            for p, o, i in zip(
                np.float32(g.positions).tolist(),
                g.vertex_object_ids,
                g.vertex_attributes["intensity"],
                strict=True,
            )
        )

    assert key(g_new) == key(g_old)
    assert new.groups(0)[1].tolist() == allowed.tolist()
    for k, v in store.group_attributes(0).items():  # group ids unchanged: same attributes
        np.testing.assert_array_equal(new.group_attributes(0)[k], v)
    for k, v in store.object_attributes(0).items():
        np.testing.assert_array_equal(new.object_attributes(0)[k][allowed], v[allowed])


def test_export_refusals(tmp_path):
    src = copy_fixture("points", tmp_path)
    store = nzv.open_store(src)
    with pytest.raises(SameStoreError):
        export_objects(store, src, [1])
    taken = tmp_path / "taken.zarrvectors"
    taken.mkdir()
    with pytest.raises(TargetExistsError):
        export_objects(store, taken, [1])
    assert list(taken.iterdir()) == []
    with pytest.raises(WriteError, match="no objects"):
        export_objects(store, tmp_path / "none.zarrvectors", [])
    assert not (tmp_path / "none.zarrvectors").exists()


# --------------------------------------------------------------------------------------------
# from the Pick and isolate widget
# --------------------------------------------------------------------------------------------


def _open(viewer, qtbot, path):
    from napari_zarr_vectors.napari import open_in_viewer

    target = open_in_viewer(viewer, path, first_view=False)
    viewer.dims.ndisplay = 3
    viewer.reset_view()
    qtbot.waitUntil(lambda: not target.is_loading, timeout=10_000)
    viewer.layers.selection.active = target.layers[0]
    return target


@pytest.mark.gui
def test_widget_exports_filtered_then_isolated_objects(
    make_napari_viewer, qtbot, tmp_path, monkeypatch
):
    from napari_zarr_vectors.napari.browse.targets import browse_state_of
    from napari_zarr_vectors.napari.widgets.pick import PickWidget

    viewer = make_napari_viewer()
    src = copy_fixture("polylines", tmp_path)
    target = _open(viewer, qtbot, src)
    widget = PickWidget(viewer)
    viewer.window.add_dock_widget(widget, area="right")
    assert widget.export_button.text().startswith("Export")

    session = browse_state_of(target)
    session.filters.group_filter = GroupFilter((1,))
    session.apply()
    ids, why = widget_selection(widget)
    assert why == FILTERED and ids[0] > 0
    np.testing.assert_array_equal(ids, session.filters.allowed())
    # zoomed into a corner of a 2-D slice at full resolution: the layers hold only part of
    # the selected objects, the export still reads them whole
    target.lock_level(0)
    viewer.dims.ndisplay = 2
    viewer.reset_view()
    camera = viewer.scene.camera
    camera.center = tuple(np.asarray(target.store.bounds[0])[::-1][-2:] + 5.0)
    camera.zoom = camera.zoom * 8  # the controller schedules its refresh at once
    qtbot.waitUntil(lambda: not target.is_loading, timeout=10_000)
    store = nzv.open_store(src)
    whole = sum(len(p) for p in paths_by_id(store, ids).values())
    assert len(target.layers[0].data) < whole

    steps = []
    call = _Activity.__call__

    def record(self, step, n_steps, description):
        steps.append((step, description, threading.current_thread() is threading.main_thread()))
        call(self, step, n_steps, description)

    monkeypatch.setattr(_Activity, "__call__", record)
    job = export_selection(widget, tmp_path / "filtered")
    qtbot.waitUntil(lambda: job.done, timeout=20_000)
    qtbot.waitUntil(lambda: any("move into place" in d for _, d, _ in steps), timeout=5_000)
    # the activity panel is updated on the UI thread, step by step
    assert [s for s, _, _ in steps] == sorted(s for s, _, _ in steps)
    assert all(main for _, _, main in steps)
    filtered = nzv.open_store(tmp_path / "filtered.zarrvectors")
    source_ids = filtered.object_attributes(0)["source_object_id"]
    np.testing.assert_array_equal(source_ids, ids)
    got = paths_by_id(filtered, filtered.object_ids(0))
    assert {int(source_ids[k]): v for k, v in got.items()} == paths_by_id(store, ids)
    assert "exported" in widget.status.text()

    # isolate starts its worker itself: wait for the layer it adds (a wait on the worker's
    # finished signal, connected after the start, can miss a fast worker)
    assert widget.isolate(int(ids[-1])) is not None
    qtbot.waitUntil(lambda: len(widget.isolated_layers()) == 1, timeout=15_000)
    ids2, why2 = widget_selection(widget)
    assert why2 == ISOLATED and ids2.tolist() == [int(ids[-1])]
    job = export_selection(widget, tmp_path / "one.zarrvectors")
    qtbot.waitUntil(lambda: job.done, timeout=20_000)
    one = nzv.open_store(tmp_path / "one.zarrvectors")
    assert list(paths_by_id(one, [0]).values()) == list(paths_by_id(store, ids2).values())

    # the store being browsed is never the target
    with pytest.raises(SameStoreError):
        export_selection(widget, src)
    assert nzv.open_store(src).read(0).vertex_count == store.read(0).vertex_count
