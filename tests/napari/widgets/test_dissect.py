"""The *Dissect* dock over real data: dipy's tracks300 written by zarr-vectors 0.9.2
(tests/realdata.py), opened as a drop opens it.

The dock's count is compared with :func:`select_objects` for the same regions (built here
from their numbers, not through the dock) and, for a sphere with the ``vertex`` test, with
what was fed to the writer (``truth``). With ``NZV_DOCS_IMAGES=1`` the screenshot test
writes docs/images/dissect.png.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _zv_napari import save_docs_image
from _zv_viewer import a_turn

import napari_zarr_vectors as nzv
from napari_zarr_vectors.napari import controller_for
from napari_zarr_vectors.napari.browse.dissect import (
    FILE_FORMAT,
    ROLE_COLOURS,
    Dissection,
    RegionSpec,
    load_dissection,
    save_dissection,
)
from napari_zarr_vectors.napari.browse.selection import selection_for
from napari_zarr_vectors.napari.colour.bar import bar_spec
from napari_zarr_vectors.napari.npe2.reader import PLUGIN_NAME

TIMEOUT = 30_000


@pytest.fixture
def dissect(make_napari_viewer, qtbot, tracks300_store):
    """tracks300 dropped into a viewer and the Dissect dock following it."""
    from napari_zarr_vectors.napari.widgets.dissect import DissectWidget

    path, truth = tracks300_store
    viewer = make_napari_viewer()
    layers = viewer.open(str(path), plugin=PLUGIN_NAME)
    c = controller_for(layers[-1])
    qtbot.waitUntil(lambda: not c.is_loading, timeout=TIMEOUT)
    widget = DissectWidget(viewer)
    viewer.window.add_dock_widget(widget, area="right", name="Dissect")
    assert widget.dissection is not None
    return viewer, c, widget, truth


def counted(qtbot, widget) -> np.ndarray:
    qtbot.waitUntil(lambda: not widget.dissection.counting, timeout=TIMEOUT)
    assert widget.dissection.result is not None, widget.count_label.text()
    return widget.dissection.result


def add(widget, kind: str, **fields) -> None:
    """Add a region of ``kind`` with the dock and set its ``fields`` in the model."""
    widget.add_region(kind)
    widget.dissection.update(len(widget.dissection.regions) - 1, **fields)


def middle(truth) -> np.ndarray:
    """The median vertex of the streamlines (store order): inside the bundle."""
    return np.median(np.concatenate(truth.objects), axis=0)


def test_the_count_is_select_objects_over_the_whole_store(dissect, qtbot):
    viewer, c, widget, truth = dissect
    centre = middle(truth)
    add(widget, "sphere", center=centre, radius=4.0)
    add(widget, "box", center=centre + [0, 8, 0], size=[30, 6, 30], role="any_of")
    add(widget, "plane", center=centre + [6, 0, 0], normal=[1, 0, 0], role="exclude")
    ids = counted(qtbot, widget)
    store = nzv.open_store(c.store.path)
    want = nzv.select_objects(
        store,
        include=[nzv.Sphere(centre, 4.0)],
        any_of=[nzv.Box(centre + [-15, 5, -15], centre + [15, 11, 15])],
        exclude=[nzv.Plane(centre + [6, 0, 0], [1, 0, 0])],
    )
    assert 0 < len(want) < 300
    np.testing.assert_array_equal(ids, want)
    assert ids.dtype == np.int64
    # the result is the store's one selection (the Object table, show only, dim use it)
    np.testing.assert_array_equal(selection_for(c).ids, want)
    assert widget.count_label.text() == f"{len(want):,} of 300 objects selected (crosses)"


def test_a_big_level_is_counted_coarse_first_then_exactly_off_the_ui_thread(
    dissect, qtbot, monkeypatch
):
    """Past COARSE_FIRST_VERTICES the label says "≈ N (coarse)" (count_reaching, from the
    object index) before the exact count; both run on the background runner's threads."""
    import threading

    from napari_zarr_vectors.napari.browse import dissect as model

    viewer, c, widget, truth = dissect
    monkeypatch.setattr(model, "COARSE_FIRST_VERTICES", 0)  # tracks300 counts as big
    threads: dict[str, threading.Thread] = {}

    def recorded(name, fn):
        def run(*args, **kwargs):
            threads[name] = threading.current_thread()
            return fn(*args, **kwargs)

        return run

    monkeypatch.setattr(model, "count_reaching", recorded("coarse", model.count_reaching))
    monkeypatch.setattr(model, "select_objects", recorded("exact", model.select_objects))
    texts: list[str] = []
    widget.dissection.events.status.connect(lambda e: texts.append(widget.count_label.text()))
    centre = middle(truth)
    add(widget, "box", center=centre, size=[10, 10, 10])
    ids = counted(qtbot, widget)
    store = nzv.open_store(c.store.path)
    box = nzv.Box(centre - 5, centre + 5)
    want = nzv.select_objects(store, include=[box])
    coarse = nzv.count_reaching(store, include=[box])
    np.testing.assert_array_equal(ids, want)
    assert coarse >= len(want) > 0
    first = f"≈ {coarse:,} (coarse) objects selected (crosses), counting exactly …"
    last = f"{len(want):,} of 300 objects selected (crosses)"
    assert first in texts and texts[-1] == last
    assert texts.index(first) < len(texts) - 1
    assert widget.count_label.text() == last
    main = threading.main_thread()
    assert set(threads) == {"coarse", "exact"}
    assert all(t is not main for t in threads.values()), threads


def test_a_sphere_selects_the_streamlines_with_a_vertex_inside(dissect, qtbot):
    viewer, c, widget, truth = dissect
    centre, radius = middle(truth), 3.0
    add(widget, "sphere", center=centre, radius=radius)
    widget.test_combo.setCurrentText("vertex")
    ids = counted(qtbot, widget)
    inside = [
        i
        for i, o in enumerate(truth.objects)
        if (np.linalg.norm(o - centre, axis=1) <= radius).any()
    ]
    assert 0 < len(inside) < 300
    np.testing.assert_array_equal(ids, np.sort(np.asarray(c.store.object_ids(0))[inside]))


def test_exclude_takes_away_what_meets_its_region(dissect, qtbot):
    viewer, c, widget, truth = dissect
    d = widget.dissection
    centre = middle(truth)
    add(widget, "sphere", center=centre, radius=6.0)
    included = counted(qtbot, widget)
    add(widget, "box", center=centre + [10, 0, 0], size=[8, 40, 40], role="exclude")
    left = counted(qtbot, widget)
    store = nzv.open_store(c.store.path)
    meets_box = nzv.select_objects(
        store, include=[nzv.Box(centre + [6, -20, -20], centre + [14, 20, 20])]
    )
    gone = np.intersect1d(included, meets_box)
    assert 0 < len(gone) < len(included)
    np.testing.assert_array_equal(left, np.setdiff1d(included, meets_box))
    # the role is a field of the dock: back to include, the box must be crossed too
    widget.region_list.setCurrentRow(1)
    widget.editor.role_combo.setCurrentIndex(0)
    assert d.regions[1].role == "include"
    np.testing.assert_array_equal(counted(qtbot, widget), gone)


def test_a_new_region_sits_at_the_view_centre_and_its_fields_edit_it(dissect, qtbot):
    viewer, c, widget, truth = dissect
    viewer.dims.ndisplay = 3
    centre = middle(truth)
    viewer.scene.camera.center = tuple(centre[::-1])  # napari order (z, y, x); identity placement
    spec = widget.add_region("box")
    np.testing.assert_allclose(spec.center, centre, atol=1e-9)
    first = counted(qtbot, widget)
    # the size fields (x, y, z) of the box: shrinking it selects fewer
    widget.editor.fields["size"][1].setValue(0.5)
    assert widget.dissection.regions[0].size[1] == pytest.approx(0.5)
    fewer = counted(qtbot, widget)
    assert len(fewer) < len(first)
    lo = centre - widget.dissection.regions[0].size / 2
    hi = centre + widget.dissection.regions[0].size / 2
    np.testing.assert_array_equal(
        fewer, nzv.select_objects(nzv.open_store(c.store.path), include=[nzv.Box(lo, hi)])
    )
    # outlines: a box wireframe (12 edges) in the include colour, where the box is
    layer = widget.outlines.layer
    assert layer in viewer.layers and len(layer.data) == 12
    np.testing.assert_allclose(layer.edge_color[0], ROLE_COLOURS["include"])
    world = layer.data[:, 0] * layer.scale  # napari order
    np.testing.assert_allclose(world.min(axis=0), lo[::-1], atol=1e-6)


def test_a_stale_count_is_cancelled_and_the_last_regions_win(dissect, qtbot):
    viewer, c, widget, truth = dissect
    d = widget.dissection
    centre = middle(truth)
    add(widget, "sphere", center=centre, radius=1.0)
    first = d._job
    d.update(0, radius=8.0)
    assert first.cancelled
    ids = counted(qtbot, widget)
    want = nzv.select_objects(nzv.open_store(c.store.path), include=[nzv.Sphere(centre, 8.0)])
    np.testing.assert_array_equal(ids, want)
    qtbot.waitUntil(lambda: first.done, timeout=TIMEOUT)  # the cancelled run ended ...
    np.testing.assert_array_equal(d.result, want)  # ... and did not overwrite the result


def test_bundles_keep_their_ids_and_colours_and_show_in_them(dissect, qtbot):
    viewer, c, widget, truth = dissect
    d = widget.dissection
    centre = middle(truth)
    add(widget, "sphere", center=centre, radius=3.0)
    small = counted(qtbot, widget)
    widget.bundles.bundle_name.setText("core")
    first = widget.bundles.keep_bundle()
    d.update(0, radius=8.0)
    large = counted(qtbot, widget)
    second = widget.bundles.keep_bundle()
    assert [b.name for b in d.bundles] == ["core", "bundle 2"]
    np.testing.assert_array_equal(first.object_ids, small)
    np.testing.assert_array_equal(second.object_ids, large)
    assert first.colour != second.colour
    assert widget.bundles.bundle_list.item(1).text() == f"bundle 2 · {len(large):,} objects"
    # show: the bundle's streamlines, whole, in the bundle's colour
    widget.bundles.bundle_list.setCurrentRow(0)
    job = widget.bundles.toggle_bundle()
    qtbot.waitUntil(lambda: job.done, timeout=TIMEOUT)
    (layer,) = widget.bundles.bundle_layers["core"]
    assert layer in viewer.layers and layer.name == "tracks300 core"
    assert set(np.unique(layer.features["object_id"]).tolist()) == set(small.tolist())
    index = {int(i): k for k, i in enumerate(np.asarray(c.store.object_ids(0)))}
    assert len(layer.data) == sum(len(truth.objects[index[int(i)]]) for i in small)
    colour = layer.colormaps_dict[layer.color_by].colors[0]
    np.testing.assert_allclose(colour, first.colour, atol=1e-6)
    assert layer.blending == "translucent" and bar_spec(layer) is None  # one colour: no bar
    # select: the bundle becomes the shared selection
    widget.bundles.select_bundle()
    np.testing.assert_array_equal(selection_for(c).ids, small)
    widget.bundles.toggle_bundle()
    assert layer not in viewer.layers


def test_regions_and_bundles_round_trip_through_the_json_file(dissect, qtbot, tmp_path):
    viewer, c, widget, truth = dissect
    d = widget.dissection
    centre = middle(truth)
    for kind in ("box", "sphere", "plane"):
        widget.add_region(kind)
    d.update(0, center=centre, size=[10, 10, 10], role="any_of")
    d.update(1, center=centre, radius=5.0)
    d.update(2, center=centre, normal=[0, 0.6, 0.8], thickness=1.5, role="exclude")
    ids = counted(qtbot, widget)
    d.keep("kept")
    path = widget.save(str(tmp_path / "cut"))
    assert path.name == "cut.json"
    data = json.loads(path.read_text())
    assert data["format"] == FILE_FORMAT and data["space"] == "store"
    assert data["axes"] == ["x", "y", "z"] and data["test"] == "crosses"
    assert data["regions"][2] == {
        "name": "plane 3",
        "kind": "plane",
        "role": "exclude",
        "point": centre.tolist(),
        "normal": [0.0, 0.6, 0.8],
        "thickness": 1.5,
    }
    assert data["bundles"][0]["object_ids"] == ids.tolist()
    # loading into a fresh dissection of the same store gives the same regions, bundles, count
    fresh = Dissection(c.store)
    load_dissection(fresh, path)
    assert fresh.to_json() == d.to_json()
    qtbot.waitUntil(lambda: not fresh.counting, timeout=TIMEOUT)
    np.testing.assert_array_equal(fresh.result, ids)
    # and through the dock: its regions are replaced by the file's
    d.remove(0)
    assert widget.load(str(path))
    assert widget.region_list.count() == 3 and widget.bundles.bundle_list.count() == 1
    np.testing.assert_array_equal(counted(qtbot, widget), ids)


def test_the_file_is_never_written_into_the_store_and_bad_files_are_refused(dissect, tmp_path):
    viewer, c, widget, truth = dissect
    inside = Path(str(c.store.path)) / "regions.json"
    with pytest.raises(ValueError, match="inside the store"):
        save_dissection(widget.dissection, inside)
    assert widget.save(str(inside)) is None and "not saved" in widget.status.text()
    assert not inside.exists()
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"format": "something else"}))
    assert not widget.load(str(other)) and "not a dissection file" in widget.status.text()
    two_d = tmp_path / "flat.json"
    flat = {
        "format": FILE_FORMAT,
        "version": 1,
        "regions": [{"kind": "sphere", "center": [1, 2], "radius": 1}],
    }
    two_d.write_text(json.dumps(flat))
    assert not widget.load(str(two_d)) and "3 axes" in widget.status.text()


def test_a_region_without_numbers_that_make_one_is_not_counted(dissect, qtbot):
    viewer, c, widget, truth = dissect
    d = widget.dissection
    d.add(RegionSpec("plane", middle(truth), normal=[0, 0, 0]))
    assert d.result is None and "normal must not be zero" in widget.count_label.text()


def test_the_dock_is_registered(make_napari_viewer):
    from npe2 import PluginManager

    manifest = PluginManager.instance().get_manifest(PLUGIN_NAME)
    widgets = {w.display_name: w.command for w in manifest.contributions.widgets}
    assert widgets["Dissect"] == "napari-zarr-vectors.dissect"
    (command,) = [
        x for x in manifest.contributions.commands if x.id == "napari-zarr-vectors.dissect"
    ]
    assert command.python_name.endswith("widgets.dissect:DissectWidget")


def test_screenshot_of_the_dock(dissect, qtbot):
    """The dock on tracks300 in a shown window: two regions, their count, a bundle."""
    viewer, c, widget, truth = dissect
    viewer.window._qt_window.resize(1280, 1000)
    centre = middle(truth)
    add(widget, "sphere", center=centre, radius=5.0)
    add(widget, "box", center=centre + [12, 0, 0], size=[10, 50, 40], role="exclude")
    ids = counted(qtbot, widget)
    widget.bundles.bundle_name.setText("stem, left")
    widget.bundles.keep_bundle()
    job = widget.bundles.toggle_bundle()
    qtbot.waitUntil(lambda: job.done, timeout=TIMEOUT)
    a_turn(qtbot)  # the bundle's layer is drawn
    image = viewer.screenshot(canvas_only=False, flash=False)
    assert image.shape[0] > 500 and len(ids) > 0
    save_docs_image(image, "dissect.png", max_bytes=400_000, thumbnail=(1100, 900))


def test_export_offers_the_field_formats_and_a_bundle_goes_to_the_suffixs(
    dissect, qtbot, tmp_path, monkeypatch
):
    """Export… of a bundle: the dialog offers the formats a streamline store fits, and the
    file (suffix from the chosen filter when none is typed) is read back by nibabel."""
    nib = pytest.importorskip("nibabel")
    from qtpy.QtWidgets import QFileDialog

    from napari_zarr_vectors.napari.layerdata.export import export_filters, export_target

    viewer, c, widget, truth = dissect
    assert export_filters("streamline") == [
        "Zarr Vectors (*.zarrvectors)",
        "TrackVis (*.trk)",
        "MRtrix tracks (*.tck)",
        "TRX (*.trx)",
        "CSV (*.csv)",
    ]
    assert "SWC (*.swc)" in export_filters("skeleton") and "STL (*.stl)" in export_filters("mesh")
    assert export_target(tmp_path / "a.tck").name == "a.tck"
    assert export_target(tmp_path / "a", "TRX (*.trx)").name == "a.trx"
    assert export_target(tmp_path / "a", "Zarr Vectors (*.zarrvectors)").name == "a.zarrvectors"
    d = widget.dissection
    add(widget, "sphere", center=middle(truth), radius=2.0)
    ids = counted(qtbot, widget)
    assert 0 < len(ids) < 300
    d.keep("core")
    widget.bundles.bundle_list.setCurrentRow(0)
    asked = {}

    def answer(parent, title, start, filters):
        asked.update(title=title, filters=filters.split(";;"))
        return str(tmp_path / "core"), "TrackVis (*.trk)"

    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(answer))
    job = widget.bundles.export_bundle()
    assert asked["filters"] == export_filters("streamline")
    assert asked["title"] == f"Export {len(ids):,} selected objects (the suffix picks the format)"
    qtbot.waitUntil(lambda: job.done, timeout=TIMEOUT)
    trk = nib.streamlines.load(str(tmp_path / "core.trk"))
    index = {int(i): k for k, i in enumerate(np.asarray(c.store.object_ids(0)))}
    assert len(trk.streamlines) == len(ids)
    for got, i in zip(trk.streamlines, ids, strict=True):
        np.testing.assert_allclose(got, truth.objects[index[int(i)]], atol=1e-3)


def test_in_2d_the_outlines_sit_at_the_slice_and_show_only_hides_the_rest(dissect, qtbot):
    viewer, c, widget, truth = dissect
    viewer.dims.ndisplay = 2  # napari shows (y, x); the slice is along z
    qtbot.waitUntil(lambda: not c.is_loading, timeout=TIMEOUT)
    centre = middle(truth)
    add(widget, "sphere", center=centre, radius=4.0)
    add(widget, "plane", center=centre + [5, 0, 0], normal=[1, 0, 0], role="exclude")
    ids = counted(qtbot, widget)
    layer = widget.outlines.layer
    world = layer.data[:, 0] * layer.scale  # napari order (z, y, x)
    tips = world + layer.data[:, 1] * layer.scale
    z = viewer.dims.point[-3]
    np.testing.assert_allclose(world[:, 0], z)  # every outline at the slice
    circle, line = world[:64], (world[64:], tips[64:])
    np.testing.assert_allclose(np.hypot(circle[:, 1] - centre[1], circle[:, 2] - centre[0]), 4.0)
    assert len(line[0]) == 1
    np.testing.assert_allclose([line[0][0, 2], line[1][0, 2]], centre[0] + 5)  # the plane x = const
    np.testing.assert_allclose(layer.edge_color[64], ROLE_COLOURS["exclude"])
    # show only the selection: the store's layer draws exactly the selected streamlines
    widget.show_only.setChecked(True)
    qtbot.waitUntil(lambda: not c.is_loading, timeout=TIMEOUT)
    shown = np.unique(c.layers[0].features["object_id"].to_numpy())
    np.testing.assert_array_equal(shown, ids)
    widget.show_only.setChecked(False)
    qtbot.waitUntil(lambda: not c.is_loading, timeout=TIMEOUT)
    assert len(np.unique(c.layers[0].features["object_id"].to_numpy())) == 300


def test_dragging_a_handle_moves_its_region_and_the_count_follows(dissect, qtbot):
    viewer, c, widget, truth = dissect
    d = widget.dissection
    centre = middle(truth)
    add(widget, "sphere", center=centre + [0, 0, 30], radius=4.0)  # above the bundle: nothing
    assert len(counted(qtbot, widget)) == 0
    handles = widget.outlines.handles
    assert handles in viewer.layers
    np.testing.assert_allclose(handles.data[0], (centre + [0, 0, 30])[::-1])  # napari (z, y, x)
    np.testing.assert_allclose(handles.face_color[0], ROLE_COLOURS["include"])
    handles.data = centre[::-1][None]  # what napari's select mode sets when a drag ends
    np.testing.assert_allclose(d.regions[0].center, centre)
    assert widget.editor.fields["center"][2].value() == pytest.approx(centre[2], abs=1e-3)
    want = nzv.select_objects(nzv.open_store(c.store.path), include=[nzv.Sphere(centre, 4.0)])
    assert len(want)
    np.testing.assert_array_equal(counted(qtbot, widget), want)


def test_in_2d_a_handle_sits_at_the_slice_and_a_drag_keeps_the_depth(dissect, qtbot):
    viewer, c, widget, truth = dissect
    viewer.dims.ndisplay = 2
    qtbot.waitUntil(lambda: not c.is_loading, timeout=TIMEOUT)
    d = widget.dissection
    centre = middle(truth)
    add(widget, "box", center=centre + [0, 0, 20], size=[4, 4, 4])
    handles = widget.outlines.handles
    z = viewer.dims.point[-3]
    np.testing.assert_allclose(handles.data[0], [z, centre[1], centre[0]])  # (z, y, x)
    handles.data = np.array([[z, centre[1] + 3, centre[0] - 2]])
    np.testing.assert_allclose(d.regions[0].center, centre + [-2, 3, 20])
