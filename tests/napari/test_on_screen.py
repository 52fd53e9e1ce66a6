"""What a user reads on screen at 1280 x 1000: layer names, types, list and dock sizes, labels.

Real data (tests/realdata.py: dipy's tracks300, navis' example neurons) opened as a drop
opens it, the plugin's docks added through napari's plugin menu path; assertions are on the
texts, sizes and values the widgets hold.
"""

from __future__ import annotations

import re
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from _zv_napari import DATA
from _zv_viewer import dropped

from napari_zarr_vectors.napari import controller_for
from napari_zarr_vectors.napari.browse.store_summary import store_summary
from napari_zarr_vectors.napari.browse.table import summarise
from napari_zarr_vectors.napari.layerdata.build import layer_name
from napari_zarr_vectors.napari.npe2 import reader
from napari_zarr_vectors.napari.npe2.reader import PLUGIN_NAME, read_zarr_vectors
from napari_zarr_vectors.napari.values import dtype_word, format_value

pytestmark = pytest.mark.gui
TIMEOUT = 30_000


def opened(viewer, qtbot, path):
    c = dropped(viewer, qtbot, path, timeout=TIMEOUT)
    viewer.layers.selection.active = c.layers[0]
    return c


def plugin_dock(viewer, name):
    dock, widget = viewer.window.add_plugin_dock_widget(PLUGIN_NAME, name)
    return dock, widget


# --------------------------------------------------------------------------------------------
# layer names
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("store", "label", "name"),
    [
        ("mesh", "mesh", "mesh"),
        ("mesh", "bounds", "mesh bounds"),
        ("streamlines", "streamlines", "streamlines"),
        ("skeleton", "skeleton nodes", "skeleton nodes"),
        ("neurons", "skeleton nodes", "neurons skeleton nodes"),
        ("my streamline", "streamlines", "my streamline"),
        ("tracks300", "streamlines", "tracks300 streamlines"),
    ],
)
def test_layer_names_say_a_word_once(store, label, name):
    info = SimpleNamespace(name=store, level=0, lod=True)
    assert layer_name(info, label) == name
    assert layer_name(SimpleNamespace(name=store, level=2, lod=False), label) == (
        f"{name} (level 2)"
    )


def test_real_stores_layer_names(tracks300_store, neurons_store):
    names = [kw["name"] for _, kw, _ in read_zarr_vectors(tracks300_store[0], level=0)]
    assert names == ["tracks300 bounds", "tracks300 streamlines"]
    names = [kw["name"] for _, kw, _ in read_zarr_vectors(neurons_store[0], level=0)]
    assert names == ["neurons bounds", "neurons skeleton edges", "neurons skeleton nodes"]
    names = [kw["name"] for _, kw, _ in read_zarr_vectors(DATA / "v09" / "mesh.zarrvectors")]
    assert names == ["mesh bounds", "mesh"]


# --------------------------------------------------------------------------------------------
# types in words
# --------------------------------------------------------------------------------------------


def test_types_are_said_in_words(tracks300_store, neurons_store):
    import napari_zarr_vectors as nzv

    words = {
        np.dtype("<U5"): "text",
        np.dtype(object): "text",
        np.dtype("S3"): "text",
        np.dtype(np.int64): "integer",
        np.dtype(np.uint8): "integer",
        np.dtype(np.float32): "number",
        np.dtype(bool): "yes/no",
    }
    assert {d: dtype_word(d) for d in words} == words
    tracks = store_summary(nzv.open_store(tracks300_store[0]))
    assert tracks.object_attributes == (("hemisphere", "text"), ("length_mm", "number"))
    neurons = store_summary(nzv.open_store(neurons_store[0]))
    assert neurons.object_attributes == (("body_id", "integer"),)


def test_filter_titles_say_the_type_in_words(make_napari_viewer, qtbot, tracks300_store):
    viewer = make_napari_viewer()
    opened(viewer, qtbot, tracks300_store[0])
    _, widget = plugin_dock(viewer, "Object attribute filter")
    titles = {name: widget.add_filter(name).title() for name in ("hemisphere", "length_mm")}
    assert titles == {"hemisphere": "hemisphere  (text)", "length_mm": "length_mm  (number)"}


# --------------------------------------------------------------------------------------------
# sizes
# --------------------------------------------------------------------------------------------


def test_skeleton_nodes_are_beads_on_their_edges_in_their_colours(neurons_store):
    """A skeleton's nodes are drawn a little wider than its edges (visible in 2-D and 3-D),
    in the colour of their skeleton (the edges' colour), with no border (napari's dim-grey
    border greys dense nodes out in 2-D)."""
    from napari_zarr_vectors.napari.colour.defaults import categorical_rgba

    layers = {
        kw["name"]: (data, kw) for data, kw, _ in read_zarr_vectors(neurons_store[0], level=0)
    }
    (_, edges), (_, nodes) = layers["neurons skeleton edges"], layers["neurons skeleton nodes"]
    # both in data units of the same scale
    assert edges["scale"] == nodes["scale"]
    assert nodes["size"] == pytest.approx(1.5 * edges["edge_width"])
    assert nodes["border_width"] == 0 and nodes["border_color"] == "transparent"
    node_ids = np.asarray(nodes["features"]["object_id"])
    edge_ids = np.asarray(edges["features"]["object_id"])
    np.testing.assert_allclose(nodes["face_color"], categorical_rgba(node_ids))
    np.testing.assert_allclose(edges["edge_color"], categorical_rgba(edge_ids))
    assert len(np.unique(node_ids)) == 5
    assert nodes["metadata"]["zarr_vectors"]["colour_by"] == "object_id"


def write_24_groups(path, lines):
    from realdata import _create

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = _create(path, np.concatenate(lines), "millimeter", "streamline", margin=1)
        ds.add_polylines(
            lines, groups={g: list(range(g, len(lines), 24)) for g in range(24)}, streamlines=True
        )
        ds.level(0).groups.name_rows([f"bundle number {g}" for g in range(24)])


def test_the_group_list_shows_its_rows(make_napari_viewer, qtbot, tmp_path, tracks300_store):
    from napari_zarr_vectors.napari.widgets.filters import GROUP_ROWS_SHOWN
    from realdata import tracks300_streamlines

    path = tmp_path / "groups24.zarrvectors"
    write_24_groups(path, tracks300_streamlines())
    viewer = make_napari_viewer(show=True)
    viewer.window.resize(1280, 1000)
    opened(viewer, qtbot, path)
    _, widget = plugin_dock(viewer, "Group filter")
    rows = widget.groups
    assert rows.count() == 24
    assert rows.viewport().height() >= GROUP_ROWS_SHOWN * rows.sizeHintForRow(0)
    # a store with fewer groups shows all of them, without scrolling
    opened(viewer, qtbot, tracks300_store[0])
    qtbot.waitUntil(lambda: widget.groups.count() == 8)
    assert rows.viewport().height() >= 8 * rows.sizeHintForRow(0)
    assert rows.verticalScrollBar().maximum() == 0


def test_docks_are_wide_enough_for_their_titles(make_napari_viewer, qtbot, tracks300_store):
    viewer = make_napari_viewer(show=True)
    viewer.window.resize(1280, 1000)
    opened(viewer, qtbot, tracks300_store[0])
    for name in ("Group filter", "Object attribute filter", "Colour by", "Pick and isolate"):
        dock, _ = plugin_dock(viewer, name)
        qtbot.waitUntil(dock.isVisible)
        bar = dock.titleBarWidget()
        title = dock.fontMetrics().horizontalAdvance(dock.windowTitle())
        assert dock.minimumWidth() >= bar.layout().sizeHint().width() > title
        qtbot.waitUntil(lambda d=dock: d.width() >= d.minimumWidth())


# --------------------------------------------------------------------------------------------
# labels
# --------------------------------------------------------------------------------------------


def test_the_histogram_has_an_axis(make_napari_viewer, qtbot, tracks300_store):
    from napari_zarr_vectors.napari.widgets.filters import histogram_axis

    truth = tracks300_store[1].object_attributes["length_mm"]
    summary = summarise("length_mm", truth)
    axis = histogram_axis(summary)
    assert axis.startswith(format_value(float(truth.min()))) and axis.endswith(
        format_value(float(truth.max()))
    )
    assert len(axis) == len(summary.sparkline())
    viewer = make_napari_viewer()
    opened(viewer, qtbot, tracks300_store[0])
    _, widget = plugin_dock(viewer, "Object attribute filter")
    row = widget.add_filter("length_mm")
    assert row.axis.text() == axis


def test_range_sliders_say_their_values_at_their_ends_only(make_napari_viewer, tracks300_store):
    from superqt import QLabeledRangeSlider

    viewer = make_napari_viewer()
    _, colour = plugin_dock(viewer, "Colour by")
    # an empty viewer: the header only, no controls
    assert colour.controls.native.isHidden() and colour.layer is None
    slider = colour.contrast.native
    assert slider.handleLabelPosition() == QLabeledRangeSlider.LabelPosition.NoLabel
    assert slider.edgeLabelMode() == QLabeledRangeSlider.EdgeLabelMode.LabelIsValue


def test_the_default_colouring_shows_no_colormap_of_its_own(
    make_napari_viewer, qtbot, tracks300_store
):
    """Lines coloured by direction (the default) show no viridis colormap and no 0..1
    contrast range in Colour by: only the attribute choice, named; choosing an attribute
    brings the colormap and range back, choosing the default again hides them."""
    path, truth = tracks300_store
    viewer = make_napari_viewer()
    opened(viewer, qtbot, path)
    _, colour = plugin_dock(viewer, "Colour by")
    hidden = lambda: [w.native.isHidden() for w in (colour.mode, colour.colormap, colour.contrast)]  # noqa: E731
    assert colour.feature.value is None
    assert colour.feature.null_string == "direction (default)"
    assert hidden() == [True, True, True]
    colour.feature.value = "length_mm"
    assert hidden() == [False, False, False]
    lengths = truth.object_attributes["length_mm"]
    assert colour.contrast.value == pytest.approx((lengths.min(), lengths.max()), rel=1e-5)
    colour.feature.value = None
    assert hidden() == [True, True, True]


def test_a_large_store_reports_its_loading_in_the_status_bar_not_a_toast(
    make_napari_viewer, qtbot, monkeypatch, tracks300_store
):
    toasts: list[str] = []
    monkeypatch.setattr(reader, "_notify_info", toasts.append)
    monkeypatch.setattr(reader, "BACKGROUND_READ_VERTICES", 0)  # every store is "big"
    viewer = make_napari_viewer()
    layers = viewer.open(str(tracks300_store[0]), plugin=PLUGIN_NAME)
    c = controller_for(layers[0])
    statuses: list[str] = []
    c.events.loading.connect(lambda *_: statuses.append(str(viewer.status)))
    qtbot.waitUntil(lambda: bool(c.layers) and not c.is_loading, timeout=TIMEOUT)
    assert toasts == []
    assert any(re.fullmatch(r"tracks300: loading level 0, \d+/\d+ chunks", s) for s in statuses)
    assert str(viewer.status).startswith("tracks300: level")


# --------------------------------------------------------------------------------------------
# napari's controls of a static Tracks layer
# --------------------------------------------------------------------------------------------


def test_static_streamlines_show_no_time_controls_and_no_phantom_t(
    make_napari_viewer, qtbot, tracks300_store
):
    """tracks300 has no time: napari's Tracks need a time column (every vertex at t = 0),
    whose axis says *no time*, and the controls that act on time (tail and head length,
    tail, show ID, graph, hide completed) are hidden; colour and width stay."""
    viewer = make_napari_viewer(show=True)
    c = opened(viewer, qtbot, tracks300_store[0])
    assert viewer.dims.axis_labels == ("no time", "z", "y", "x")
    controls = viewer.window._qt_viewer.controls

    def shown(layer, name):
        panel = controls.widgets[layer]
        rows = getattr(panel, name).get_widget_controls()
        return [w.isVisibleTo(panel) for row in rows for w in row]

    for layer in viewer.layers:  # the streamlines and the bounds box
        assert type(layer).__name__ == "Tracks"
        qtbot.waitUntil(lambda lay=layer: not any(shown(lay, "_tail_length_slider_control")))
        for name in (
            "_tail_length_slider_control",
            "_head_length_slider_control",
            "_tail_display_checkbox_control",
            "_id_checkbox_control",
            "_graph_checkbox_control",
            "_hide_completed_tracks_checkbox_control",
        ):
            assert not any(shown(layer, name)), name
        for name in ("_color_properties_combobox_control", "_tail_width_slider_control"):
            assert all(shown(layer, name)), name
    assert c.layers[0].name == "tracks300 streamlines"
