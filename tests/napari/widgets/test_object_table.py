"""The *Object table* dock on real data (tests/realdata.py: dipy's tracks300, navis' five
neurons, written by zarr-vectors 0.9.2) in a real viewer (make_napari_viewer, Qt under Xvfb).

Assertions are on data: rows against the store's object ids, sort and search against the
values fed to the writer, the selection against the canvas highlight and the layers' object
ids, the CSV against the table. With ``NZV_DOCS_IMAGES=1`` the screenshot test writes
docs/images/object_table.png.
"""

from __future__ import annotations

import csv
import io
import warnings

import numpy as np
import pytest
from _zv_napari import save_docs_image
from _zv_viewer import a_turn

import napari_zarr_vectors as nzv
from napari_zarr_vectors.napari.browse.object_rows import (
    MISSING_TEXT,
    ObjectRows,
    write_csv,
)
from napari_zarr_vectors.napari.browse.selection import SELECTION_META, selection_for
from napari_zarr_vectors.napari.browse.static_filter import layer_object_ids
from napari_zarr_vectors.napari.browse.table import ObjectTable
from napari_zarr_vectors.napari.layerdata.placement import layer_world_positions

pytestmark = pytest.mark.gui

TIMEOUT = 30_000


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def named_neurons_store(tmp_path_factory):
    """``(path, truth)``: the five neurons with their navis names as ``name``."""
    pytest.importorskip("navis")
    pytest.importorskip("zarr_vectors")
    from realdata import write_navis_neurons

    path = tmp_path_factory.mktemp("realdata") / "neurons-named.zarrvectors"
    return path, write_navis_neurons(path, with_names=True)


def open_table(viewer, qtbot, path):
    """Open ``path`` with level of detail (3-D, whole store in view) and dock the table."""
    from napari_zarr_vectors.napari import open_in_viewer
    from napari_zarr_vectors.napari.widgets.object_table import ObjectTableWidget

    target = open_in_viewer(viewer, path, first_view=False)
    viewer.dims.ndisplay = 3
    viewer.reset_view()
    qtbot.waitUntil(lambda: not target.is_loading, timeout=TIMEOUT)
    viewer.layers.selection.active = target.layers[0]
    widget = ObjectTableWidget(viewer)
    viewer.window.add_dock_widget(widget, area="right", name="Object table")
    qtbot.waitUntil(lambda: widget.model.rows is not None, timeout=TIMEOUT)
    return target, widget


def open_table_2d(viewer, qtbot, path):
    """:func:`open_table`, then a 2-D view: the target, the widget, the world positions of
    the first data layer's vertices and the object owning each."""
    target, widget = open_table(viewer, qtbot, path)
    viewer.dims.ndisplay = 2
    qtbot.waitUntil(lambda: not target.is_loading, timeout=TIMEOUT)
    data = target.layers[0]
    pts, rows = layer_world_positions(data)
    return target, widget, pts, layer_object_ids(data)[rows]


def shown_ids(widget) -> np.ndarray:
    return widget.model.object_ids(np.arange(widget.model.rowCount()))


def column(widget, name: str) -> int:
    return next(i for i, c in enumerate(widget.model.rows.columns) if c.name == name)


def select_rows(widget, view_rows) -> None:
    from qtpy.QtCore import QItemSelection, QItemSelectionModel

    chosen = QItemSelection()
    last = widget.model.columnCount() - 1
    for r in view_rows:
        chosen.select(widget.model.index(int(r), 0), widget.model.index(int(r), last))
    flags = QItemSelectionModel.SelectionFlag.ClearAndSelect
    widget.view.selectionModel().select(chosen, flags | QItemSelectionModel.SelectionFlag.Rows)


def group_of(truth) -> dict[int, str]:
    return {int(o): truth.group_names[g] for g, members in truth.groups.items() for o in members}


# --------------------------------------------------------------------------------------------
# rows, sort, search
# --------------------------------------------------------------------------------------------


def test_one_row_per_object_with_decoded_text_and_group_names(
    make_napari_viewer, qtbot, tracks300_store
):
    path, truth = tracks300_store
    viewer = make_napari_viewer()
    target, widget = open_table(viewer, qtbot, path)
    store_ids = np.asarray(nzv.open_store(path).object_ids(0))
    assert widget.model.rowCount() == len(store_ids) == len(truth.objects) == 300
    assert np.array_equal(np.sort(shown_ids(widget)), np.sort(store_ids))
    assert widget.count.text() == "300 of 300 objects"
    rows = widget.model.rows
    assert rows.headers == ["object id", "hemisphere", "length_mm", "group"]
    hemi, length, group = (
        rows.columns[column(widget, n)] for n in ("hemisphere", "length_mm", "group")
    )
    names = group_of(truth)
    for oid in (0, 57, 299):
        row = int(rows.rows_of([oid])[0])
        assert hemi.text(row) == truth.object_attributes["hemisphere"][oid]
        assert group.text(row) == names[oid]
        assert float(length.text(row)) == pytest.approx(
            truth.object_attributes["length_mm"][oid], abs=0.006
        )
    # numbers right-aligned, text left-aligned
    from qtpy.QtCore import Qt

    align = Qt.ItemDataRole.TextAlignmentRole
    assert widget.model.data(widget.model.index(0, column(widget, "length_mm")), align) & int(
        Qt.AlignmentFlag.AlignRight
    )
    assert widget.model.data(widget.model.index(0, column(widget, "group")), align) & int(
        Qt.AlignmentFlag.AlignLeft
    )


def test_sort_by_length_gives_the_order_of_the_data(make_napari_viewer, qtbot, tracks300_store):
    from qtpy.QtCore import Qt

    path, truth = tracks300_store
    viewer = make_napari_viewer()
    _, widget = open_table(viewer, qtbot, path)
    length = truth.object_attributes["length_mm"]
    c = column(widget, "length_mm")
    widget.view.sortByColumn(c, Qt.SortOrder.DescendingOrder)
    assert np.array_equal(shown_ids(widget), np.argsort(-length, kind="stable"))
    widget.view.sortByColumn(c, Qt.SortOrder.AscendingOrder)
    assert np.array_equal(shown_ids(widget), np.argsort(length, kind="stable"))
    # text sorts alphabetically, the object id stays the tie-break (stable)
    widget.view.sortByColumn(column(widget, "group"), Qt.SortOrder.AscendingOrder)
    names = group_of(truth)
    expected = sorted(range(300), key=lambda o: (names[o], o))
    assert shown_ids(widget).tolist() == expected


def test_missing_values_sort_last_both_ways():
    ids = np.arange(6, dtype=np.int64)
    values = np.array([3.0, np.nan, 1.0, 2.0, np.nan, 1.0])
    table = ObjectTable(ids, {"v": values}, {"v": ~np.isnan(values)})
    rows = ObjectRows.from_table(table)
    assert rows.order(1).tolist() == [2, 5, 3, 0, 1, 4]
    assert rows.order(1, descending=True).tolist() == [0, 3, 2, 5, 1, 4]
    assert rows.columns[1].text(1) == MISSING_TEXT


def test_search_finds_exactly_the_matching_objects(make_napari_viewer, qtbot, tracks300_store):
    path, truth = tracks300_store
    viewer = make_napari_viewer()
    _, widget = open_table(viewer, qtbot, path)
    names = group_of(truth)
    widget.search.setText("Anterior superior")
    widget.apply_search()
    wanted = sorted(o for o, n in names.items() if "anterior superior" in n)
    assert sorted(shown_ids(widget).tolist()) == wanted
    assert widget.count.text() == f"{len(wanted)} of 300 objects"
    # every term must match: a text term and a number prefix
    widget.search.setText("left 1")
    widget.apply_search()
    hemi = truth.object_attributes["hemisphere"]
    wanted = [
        o
        for o in range(300)
        if ("left" in hemi[o] or "left" in names[o]) and str(o).startswith("1")
    ]
    assert sorted(shown_ids(widget).tolist()) == wanted
    widget.search.setText("")
    widget.apply_search()
    assert widget.model.rowCount() == 300


def test_a_body_id_and_a_name_find_their_neurons(make_napari_viewer, qtbot, named_neurons_store):
    path, truth = named_neurons_store
    viewer = make_napari_viewer()
    _, widget = open_table(viewer, qtbot, path)
    body = truth.object_attributes["body_id"]
    assert widget.model.rows.headers == ["object id", "body_id", "name"]
    assert widget.model.rowCount() == 5
    for k, b in enumerate(body):
        widget.search.setText(str(b))
        widget.apply_search()
        assert shown_ids(widget).tolist() == [k]
    widget.search.setText(str(body[2])[:4])  # leading digits
    widget.apply_search()
    assert shown_ids(widget).tolist() == [
        k for k, b in enumerate(body) if str(b).startswith(str(body[2])[:4])
    ]
    widget.search.setText("da1_lpn")  # every neuron named DA1_lPN_R
    widget.apply_search()
    assert sorted(shown_ids(widget).tolist()) == [
        k for k, n in enumerate(truth.object_attributes["name"]) if "da1_lpn" in n.lower()
    ]
    # a body id is an id: shown bare, not as 722,817,260
    row = int(widget.model.rows.rows_of([2])[0])
    assert widget.model.rows.columns[1].text(row) == str(body[2])


def test_units_declared_by_the_store_are_in_the_headers(tmp_path):
    zv = pytest.importorskip("zarr_vectors")
    lines = [
        np.array([[0, 0, 0], [1, 1, 1], [2, 2, 3]], np.float32),
        np.array([[5, 5, 5], [6, 6, 6]], np.float32),
    ]
    schema = zv.Schema(
        ndim=3,
        bounds=((0, 0, 0), (8, 8, 8)),
        axes=tuple(zv.Axis(name=n, unit="millimeter") for n in "xyz"),
        kind="polyline",
        layout=zv.Layout(cells=(4, 4, 4)),
        object_attributes={
            "length": zv.AttributeSpec(dtype="float32", unit="millimeter"),
            "rgb": zv.AttributeSpec(dtype="uint8", channels=3),
        },
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = zv.create(str(tmp_path / "u.zarrvectors"), schema=schema)
        ds.add_polylines(
            lines,
            object_attributes={
                "length": np.array([3.5, 1.75], np.float32),
                "rgb": np.array([[200, 10, 20], [10, 200, 30]], np.uint8),
            },
        )
    from napari_zarr_vectors.napari.browse.object_rows import store_rows

    store = nzv.open_store(tmp_path / "u.zarrvectors")
    rows = store_rows(store, ObjectTable.from_store(store))
    assert rows.headers == ["object id", "length (mm)", "rgb[0]", "rgb[1]", "rgb[2]"]
    assert [c.text(1) for c in rows.columns] == ["1", "1.750", "10", "200", "30"]


# --------------------------------------------------------------------------------------------
# selection <-> pick
# --------------------------------------------------------------------------------------------


def test_selected_rows_are_the_highlighted_objects(make_napari_viewer, qtbot, tracks300_store):
    path, _ = tracks300_store
    viewer = make_napari_viewer()
    target, widget = open_table(viewer, qtbot, path)
    select_rows(widget, [3, 4, 10])
    wanted = shown_ids(widget)[[3, 4, 10]]
    assert np.array_equal(selection_for(target).ids, np.sort(wanted))
    highlight = widget.highlight.layer
    assert highlight in viewer.layers
    assert highlight.metadata[SELECTION_META]["object_ids"] == sorted(wanted.tolist())
    # the highlight holds exactly the vertices the store's layers draw for those objects
    drawn = np.concatenate([layer_object_ids(lay) for lay in target.layers])
    assert set(np.unique(highlight.features["object_id"]).tolist()) == set(wanted.tolist())
    data = target.layers[0]
    pts, rows = layer_world_positions(data)
    mine = np.isin(layer_object_ids(data)[rows], wanted)
    assert np.allclose(np.sort(highlight.data, axis=0), np.sort(pts[mine], axis=0))
    assert np.isin(wanted, drawn).all()
    assert "3 selected" in widget.count.text()
    # the store's layer stays the active one
    assert viewer.layers.selection.active is target.layers[0]
    # an empty selection removes the highlight
    widget.view.clearSelection()
    assert selection_for(target).ids.size == 0
    assert highlight not in viewer.layers


def test_a_selection_of_many_runs_of_rows_is_drawn_by_the_model(
    make_napari_viewer, qtbot, tracks300_store, monkeypatch
):
    """A Dissect result of 66,000 of 200,000 objects is ~44,000 runs of rows: Qt's selection
    model takes 7 s to hold them, so past MIRRORED_RUNS the model draws them."""
    from qtpy.QtCore import Qt

    import napari_zarr_vectors.napari.widgets.object_table as table_module

    monkeypatch.setattr(table_module, "MIRRORED_RUNS", 2)
    path, _ = tracks300_store
    viewer = make_napari_viewer()
    target, widget = open_table(viewer, qtbot, path)
    ids = shown_ids(widget)
    wanted = np.sort(ids[[1, 5, 9, 20]])  # four runs of one row
    selection_for(target).set(wanted)
    model = widget.model
    assert not widget.view.selectionModel().selectedRows()  # Qt holds none of them
    assert np.array_equal(np.flatnonzero(model.marked), [1, 5, 9, 20])
    role = Qt.ItemDataRole.BackgroundRole
    assert model.data(model.index(5, 0), role) is not None
    assert model.data(model.index(6, 0), role) is None
    assert np.array_equal(np.sort(widget.selected_ids()), wanted)
    assert "4 selected" in widget.count.text()
    # a sort keeps them marked, in their new rows
    model.sort(0, Qt.SortOrder.DescendingOrder)
    assert np.array_equal(np.sort(model.object_ids(np.flatnonzero(model.marked))), wanted)
    # two runs: Qt's selection again; a row the user selects replaces the marks
    selection_for(target).set(np.sort(ids[[0, 1]]))
    assert model.marked is None and len(widget.view.selectionModel().selectedRows()) == 2
    selection_for(target).set(wanted)
    select_rows(widget, [7])
    assert model.marked is None
    assert np.array_equal(selection_for(target).ids, shown_ids(widget)[[7]])


def test_the_highlight_follows_the_level_shown(make_napari_viewer, qtbot, tracks300_store):
    path, _ = tracks300_store
    viewer = make_napari_viewer()
    target, widget = open_table(viewer, qtbot, path)
    widget.select_ids([40, 41])

    def drawn_for_selection():
        data = target.layers[0]
        pts, rows = layer_world_positions(data)
        return pts[np.isin(layer_object_ids(data)[rows], [40, 41])]

    fine = drawn_for_selection()
    assert np.allclose(np.sort(widget.highlight.layer.data, axis=0), np.sort(fine, axis=0))
    target.lock_level(1)
    qtbot.waitUntil(lambda: target.level == 1 and not target.is_loading, timeout=TIMEOUT)
    coarse = drawn_for_selection()
    assert 0 < len(coarse) < len(fine)
    assert np.allclose(np.sort(widget.highlight.layer.data, axis=0), np.sort(coarse, axis=0))


def test_a_pick_on_the_canvas_selects_and_shows_its_row(make_napari_viewer, qtbot, tracks300_store):
    from qtpy.QtCore import Qt

    path, _ = tracks300_store
    viewer = make_napari_viewer()
    target, widget, pts, owners = open_table_2d(viewer, qtbot, path)
    # the vertex of object 250 farthest from every other object's vertices (on screen)
    displayed = list(viewer.dims.displayed)
    mine = np.flatnonzero(owners == 250)
    others = pts[owners != 250][:, [d - (viewer.dims.ndim - pts.shape[1]) for d in displayed]]
    gaps = [np.min(np.linalg.norm(others - pts[i, -2:], axis=1)) for i in mine]
    vertex = pts[mine[int(np.argmax(gaps))]]
    position = np.asarray(viewer.dims.point, np.float64)
    position[-len(vertex) :] = vertex
    assert widget.pick(position, displayed) == 250
    assert selection_for(target).ids.tolist() == [250]
    assert widget.selected_ids().tolist() == [250]
    index = widget.model.index(int(widget.model.view_rows([250])[0]), 0)
    assert widget.view.viewport().rect().intersects(widget.view.visualRect(index))
    # the row stays selected after a sort and a search that keeps it
    widget.view.sortByColumn(column(widget, "length_mm"), Qt.SortOrder.DescendingOrder)
    assert widget.selected_ids().tolist() == [250]
    widget.search.setText("25")
    widget.apply_search()
    assert widget.selected_ids().tolist() == [250]


def object_box(viewer, truth_vertices) -> tuple[np.ndarray, np.ndarray]:
    """The world box (every viewer axis, napari order) of one object's vertices as fed to
    the writer (x y z: napari shows z y x)."""
    v = np.asarray(truth_vertices, np.float64)
    lead = np.zeros(viewer.dims.ndim - 3)
    return np.r_[lead, v.min(0)[::-1]], np.r_[lead, v.max(0)[::-1]]


def assert_fitted(viewer, lo, hi):
    """The camera is centred on the box lo-hi, shows all of it, and fills the canvas with it
    (a canvas 15% smaller would cut it off: zoom to does not zoom out past the object)."""
    from napari_zarr_vectors.napari.lod.camera import shows_box

    displayed = list(viewer.dims.displayed)
    centre = np.asarray(viewer.scene.camera.center)[-len(displayed) :]
    assert np.allclose(centre, ((lo + hi) / 2)[displayed], atol=1e-3)
    assert shows_box(viewer, lo, hi)
    smaller = tuple(int(0.85 * s) for s in viewer.canvas.size)
    assert not shows_box(viewer, lo, hi, smaller)


def test_zoom_to_fits_a_small_streamline(make_napari_viewer, qtbot, tracks300_store):
    path, truth = tracks300_store
    viewer = make_napari_viewer()
    target, widget = open_table(viewer, qtbot, path)
    whole = viewer.scene.camera.zoom
    widget.select_ids([12])
    job = widget.zoom_to()
    qtbot.waitUntil(lambda: job.done, timeout=TIMEOUT)
    lo, hi = object_box(viewer, truth.objects[12])
    assert_fitted(viewer, lo, hi)
    assert viewer.scene.camera.zoom > 2 * whole  # a small streamline: zoomed in
    assert widget.status.text() == "framed 1 object"
    # in 2-D too (the slice moves to the streamline's middle)
    viewer.dims.ndisplay = 2
    job = widget.zoom_to()
    qtbot.waitUntil(lambda: job.done, timeout=TIMEOUT)
    assert_fitted(viewer, lo, hi)


def test_zoom_to_fits_one_neuron_of_a_skeleton_store(
    make_napari_viewer, qtbot, named_neurons_store
):
    path, truth = named_neurons_store
    viewer = make_napari_viewer()
    target, widget = open_table(viewer, qtbot, path)
    whole = viewer.scene.camera.zoom  # reset_view: the whole store fills the canvas
    # the neuron with the smallest box on screen
    sizes = [np.ptp(np.asarray(o, np.float64), axis=0)[::-1][1:].max() for o in truth.objects]
    oid = int(np.argmin(sizes))
    widget.select_ids([oid])
    job = widget.zoom_to()
    qtbot.waitUntil(lambda: job.done, timeout=TIMEOUT)
    lo, hi = object_box(viewer, truth.objects[oid])
    assert_fitted(viewer, lo, hi)
    # one neuron lies inside the store: fitting it never zooms out past the whole store
    assert viewer.scene.camera.zoom >= whole * 0.9 / 0.95


def test_isolate_and_export_act_on_the_selection(
    make_napari_viewer, qtbot, tracks300_store, tmp_path
):
    path, truth = tracks300_store
    viewer = make_napari_viewer()
    target, widget = open_table(viewer, qtbot, path)
    widget.select_ids([5, 77])
    jobs = widget.isolate()
    assert len(jobs) == 2
    for job in jobs:
        qtbot.waitUntil(lambda job=job: job.done, timeout=TIMEOUT)
    qtbot.waitUntil(
        lambda: len([lay for lay in viewer.layers if "(isolated)" in lay.name]) == 2,
        timeout=TIMEOUT,
    )
    isolated = sorted(
        int(lay.metadata["zarr_vectors"]["object_id"])
        for lay in viewer.layers
        if "(isolated)" in lay.name
    )
    assert isolated == [5, 77]
    names = sorted(lay.name for lay in viewer.layers if "(isolated)" in lay.name)
    assert names == ["#5 streamline (isolated)", "#77 streamline (isolated)"]
    # the status ends when the last isolation is in
    n = len(truth.objects[5]) + len(truth.objects[77])
    qtbot.waitUntil(lambda: "isolating" not in widget.status.text(), timeout=TIMEOUT)
    assert widget.status.text() == f"isolated 2 objects: {n:,} vertices at full resolution"
    from napari_zarr_vectors.napari.layerdata.export import export_selection

    job = export_selection(
        widget, tmp_path / "two.zarrvectors", ids=selection_for(target).ids, pyramid=False
    )
    qtbot.waitUntil(lambda: job.done, timeout=TIMEOUT)
    out = nzv.open_store(tmp_path / "two.zarrvectors")
    assert len(out.object_ids(0)) == 2
    lengths = sorted(np.asarray(out.object_attributes(0)["length_mm"]).tolist())
    assert lengths == pytest.approx(sorted(truth.object_attributes["length_mm"][[5, 77]].tolist()))
    assert widget.status.text().startswith("exported 2 selected objects")


def test_an_isolated_neuron_keeps_its_colour_and_says_which_it_is(
    make_napari_viewer, qtbot, named_neurons_store
):
    path, truth = named_neurons_store
    viewer = make_napari_viewer()
    target, widget = open_table(viewer, qtbot, path)
    oid = 3
    widget.select_ids([oid])
    jobs = widget.isolate()
    assert widget.status.text() == "isolating 1 object …"
    qtbot.waitUntil(lambda: all(job.done for job in jobs), timeout=TIMEOUT)
    qtbot.waitUntil(lambda: "isolating" not in widget.status.text(), timeout=TIMEOUT)
    n = len(truth.objects[oid])
    assert widget.status.text() == f"isolated 1 object: {n:,} vertices at full resolution"
    isolated = {
        lay.metadata["zarr_vectors"]["source_role"]: lay
        for lay in viewer.layers
        if lay.metadata.get("zarr_vectors", {}).get("role") == "isolated"
    }
    # every neuron is called DA1_lPN_R: the id says which; each layer says which part
    assert isolated["edges"].name == f"#{oid} skeleton (isolated)"
    assert isolated["nodes"].name == f"#{oid} nodes (isolated)"
    # drawn in the colour the store's layers give that neuron, opaque (not white)
    data = {lay.metadata["zarr_vectors"]["role"]: lay for lay in target.layers}
    mine = layer_object_ids(data["edges"]) == oid
    store_colour = np.unique(np.asarray(data["edges"].edge_color)[mine], axis=0)
    assert len(store_colour) == 1 and not np.allclose(store_colour[0][:3], 1.0)
    assert np.allclose(isolated["edges"].edge_color, store_colour[0])
    assert np.allclose(isolated["nodes"].face_color, store_colour[0])
    assert {lay.blending for lay in isolated.values()} == {"translucent"}
    # the nodes as big as the store's (the soma is not a blob)
    assert np.allclose(isolated["nodes"].size, np.asarray(data["nodes"].size).max())
    # the selection highlight is not additive either (dense highlights turned white)
    highlight = next(lay for lay in viewer.layers if SELECTION_META in lay.metadata)
    assert highlight.blending == "translucent"


def test_canvas_clicks_select_and_shift_clicks_add(make_napari_viewer, qtbot, tracks300_store):
    from types import SimpleNamespace

    path, _ = tracks300_store
    viewer = make_napari_viewer()
    target, widget, pts, owners = open_table_2d(viewer, qtbot, path)

    def click(oid, modifiers=()):
        vertex = pts[np.flatnonzero(owners == oid)[0]]
        position = np.asarray(viewer.dims.point, np.float64)
        position[-len(vertex) :] = vertex
        event = SimpleNamespace(
            type="mouse_press",
            position=position,
            dims_displayed=list(viewer.dims.displayed),
            view_direction=None,
            modifiers=modifiers,
        )
        gesture = widget._on_drag(viewer, event)
        next(gesture)
        event.type = "mouse_release"
        with pytest.raises(StopIteration):
            next(gesture)

    first = int(owners[0])
    click(first)
    picked = selection_for(target).ids.tolist()
    assert len(picked) == 1 and widget.selected_ids().tolist() == picked
    other = int(owners[owners != picked[0]][-1])
    click(other, modifiers=("Shift",))
    both = selection_for(target).ids.tolist()
    assert len(both) == 2 and picked[0] in both
    assert widget.selected_ids().tolist() == both
    # a drag (rotate, pan) selects nothing
    event = SimpleNamespace(type="mouse_press")
    gesture = widget._on_drag(viewer, event)
    next(gesture)
    event.type = "mouse_move"
    next(gesture)
    event.type = "mouse_release"
    with pytest.raises(StopIteration):
        next(gesture)
    assert selection_for(target).ids.tolist() == both


def test_docked_from_the_plugins_menu_on_a_fixture_store(make_napari_viewer, qtbot):
    """v09 polylines: 16 objects, ``length`` and ``label``, objects 14 and 15 in two groups."""
    from _zv_napari import DATA

    from napari_zarr_vectors.napari import open_in_viewer
    from napari_zarr_vectors.napari.widgets.object_table import ObjectTableWidget

    viewer = make_napari_viewer()
    target = open_in_viewer(viewer, DATA / "v09" / "polylines.zarrvectors", first_view=False)
    qtbot.waitUntil(lambda: not target.is_loading, timeout=TIMEOUT)
    viewer.layers.selection.active = target.layers[0]
    _, widget = viewer.window.add_plugin_dock_widget("napari-zarr-vectors", "Object table")
    assert isinstance(widget, ObjectTableWidget)
    qtbot.waitUntil(lambda: widget.model.rows is not None, timeout=TIMEOUT)
    truth = json_input("polylines")
    assert widget.model.rowCount() == len(truth["polylines"]) == 16
    rows = widget.model.rows
    assert sorted(rows.headers) == ["groups", "label", "length", "object id"]
    names = truth["group_names"]
    groups = rows.columns[column(widget, "groups")]
    for oid in range(16):
        member = [names[int(g)] for g, m in truth["groups"].items() if oid in m]
        assert groups.text(int(rows.rows_of([oid])[0])) == ", ".join(member)
    widget.search.setText("hand")
    widget.apply_search()
    assert sorted(shown_ids(widget).tolist()) == [14, 15]


def json_input(name: str) -> dict:
    import json

    from _zv_napari import DATA

    with open(DATA / "v09" / "expected" / f"{name}.json", encoding="utf-8") as fh:
        return json.load(fh)["input"]


def test_a_store_without_objects_says_so(make_napari_viewer, qtbot):
    from _zv_napari import DATA

    from napari_zarr_vectors.napari import open_in_viewer
    from napari_zarr_vectors.napari.widgets.object_table import NO_OBJECTS, ObjectTableWidget

    viewer = make_napari_viewer()
    target = open_in_viewer(viewer, DATA / "v09" / "points_binned.zarrvectors", first_view=False)
    qtbot.waitUntil(lambda: not target.is_loading, timeout=TIMEOUT)
    viewer.layers.selection.active = target.layers[0]
    widget = ObjectTableWidget(viewer)
    assert widget.message.text() == NO_OBJECTS
    assert widget.controls.isHidden()
    assert widget.model.rowCount() == 0


def test_the_table_follows_the_selected_store(make_napari_viewer, qtbot, tracks300_store):
    from _zv_napari import DATA

    from napari_zarr_vectors.napari import open_in_viewer

    path, _ = tracks300_store
    viewer = make_napari_viewer()
    tracks, widget = open_table(viewer, qtbot, path)
    widget.select_ids([7])
    lines = open_in_viewer(viewer, DATA / "v09" / "polylines.zarrvectors", first_view=False)
    qtbot.waitUntil(lambda: not lines.is_loading, timeout=TIMEOUT)
    viewer.layers.selection.active = lines.layers[0]
    qtbot.waitUntil(lambda: widget.model.rowCount() == 16, timeout=TIMEOUT)
    assert widget.selected_ids().size == 0  # the selection is per store
    viewer.layers.selection.active = tracks.layers[0]
    qtbot.waitUntil(lambda: widget.model.rowCount() == 300, timeout=TIMEOUT)
    assert widget.selected_ids().tolist() == [7]


# --------------------------------------------------------------------------------------------
# CSV
# --------------------------------------------------------------------------------------------


def test_csv_holds_the_rows_and_columns_shown(make_napari_viewer, qtbot, tracks300_store, tmp_path):
    from qtpy.QtCore import Qt

    path, truth = tracks300_store
    viewer = make_napari_viewer()
    _, widget = open_table(viewer, qtbot, path)
    widget.search.setText("right")
    widget.apply_search()
    widget.view.sortByColumn(column(widget, "length_mm"), Qt.SortOrder.DescendingOrder)
    widget.view.setColumnHidden(column(widget, "hemisphere"), True)
    n = widget.save_csv(str(tmp_path / "t.csv"))
    with open(tmp_path / "t.csv", newline="", encoding="utf-8") as fh:
        lines = list(csv.reader(fh))
    assert lines[0] == ["object id", "length_mm", "group"]
    assert n == len(lines) - 1 == widget.model.rowCount()
    ids = [int(line[0]) for line in lines[1:]]
    assert ids == shown_ids(widget).tolist()
    names = group_of(truth)
    length = truth.object_attributes["length_mm"]
    for line in lines[1:]:
        oid = int(line[0])
        assert np.float32(line[1]) == length[oid]  # as stored, not as shown
        assert line[2] == names[oid]
        assert truth.object_attributes["hemisphere"][oid] == "right" or "right" in names[oid]


def test_csv_of_rows_without_values_and_text_with_commas():
    ids = np.array([4, 9], np.int64)
    table = ObjectTable(
        ids,
        {"label": np.array(["a, b", ""], dtype=object), "n": np.array([7, 0])},
        {"label": np.array([True, False]), "n": np.array([True, True])},
    )
    out = io.StringIO()
    write_csv(out, ObjectRows.from_table(table))
    assert list(csv.reader(io.StringIO(out.getvalue()))) == [
        ["object id", "label", "n"],
        ["4", "a, b", "7"],
        ["9", "", "0"],
    ]


# --------------------------------------------------------------------------------------------
# docs screenshot
# --------------------------------------------------------------------------------------------


def test_object_table_screenshot(make_napari_viewer, qtbot, tracks300_store):
    """The dock at 1280 x 1000 on tracks300, the longest streamlines selected (docs image)."""
    from qtpy.QtCore import Qt

    path, _ = tracks300_store
    viewer = make_napari_viewer(show=True)
    viewer.window.resize(1280, 1000)
    target, widget = open_table(viewer, qtbot, path)
    widget.view.sortByColumn(column(widget, "length_mm"), Qt.SortOrder.DescendingOrder)
    select_rows(widget, range(5))
    viewer.reset_view()  # the canvas is narrower with the dock
    qtbot.waitUntil(lambda: not target.is_loading, timeout=TIMEOUT)
    a_turn(qtbot)  # the frame of the last swap is drawn in a turn of its own
    image = viewer.screenshot(canvas_only=False, flash=False)
    assert image.shape[0] >= 900
    save_docs_image(image, "object_table.png", max_bytes=800_000)


def test_the_table_fills_its_dock(make_napari_viewer, qtbot, tracks300_store):
    """Docked from the Plugins menu, above Colour by, the rows take the dock's height:
    napari adds no stretch below the table, and another dock never squeezes it below
    ``MIN_ROWS`` rows."""
    from napari_zarr_vectors.napari import open_in_viewer
    from napari_zarr_vectors.napari.widgets.object_table import MIN_ROWS

    path, _ = tracks300_store
    viewer = make_napari_viewer(show=True)
    viewer.window._qt_window.resize(1280, 1000)
    target = open_in_viewer(viewer, path, first_view=False)
    qtbot.waitUntil(lambda: not target.is_loading, timeout=TIMEOUT)
    _, widget = viewer.window.add_plugin_dock_widget("napari-zarr-vectors", "Object table")
    viewer.window.add_plugin_dock_widget("napari-zarr-vectors", "Colour by")
    qtbot.waitUntil(lambda: widget.model.rows is not None, timeout=TIMEOUT)
    a_turn(qtbot)  # Qt lays the docks out
    layout = widget.layout()
    stretches = [i for i in range(layout.count()) if layout.itemAt(i).spacerItem() is not None]
    assert stretches == []  # with a stretch the table can shrink to a few rows
    rows_shown = widget.view.height() // widget.view.verticalHeader().defaultSectionSize()
    assert widget.view.height() > 0.6 * widget.height()
    assert rows_shown >= MIN_ROWS
