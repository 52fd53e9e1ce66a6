"""Colour bars on the canvas, legends that count objects, the default colouring named.

A bar is napari's colour-bar overlay: the layer's own (Points, Surface) or one the plugin adds
(Tracks, Shapes, Vectors); one text overlay titles the bars with the attribute's name and unit.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from _zv_napari import save_docs_image
from _zv_viewer import dock, drawn_on_canvas, dropped, open_zv, opened_3d, settle

from napari_zarr_vectors.napari.colour.bar import (
    bar_label,
    default_colouring_name,
    display_name,
    unit_of,
)
from napari_zarr_vectors.napari.colour.live import apply_colour, feature_values
from napari_zarr_vectors.napari.colour.spec import continuous_colours
from napari_zarr_vectors.napari.widgets.colour_bar import (
    OVERLAY_KEY,
    SOURCE_ATTRIBUTE,
    install_colour_bars,
)

pytestmark = pytest.mark.gui
TIMEOUT = 30_000


def bar_state(layer):
    """``(visible, colormap name, contrast limits)`` of the bar napari draws for ``layer``."""
    own = getattr(layer, "face_colorbar", None) or getattr(layer, "colorbar", None)
    if own is not None:
        if type(layer).__name__ == "Points":
            return own.visible, layer.face_colormap.name, tuple(layer.face_contrast_limits)
        return own.visible, layer.colormap.name, tuple(layer.contrast_limits)
    overlay = layer._overlays.get(OVERLAY_KEY)
    if overlay is None:
        return False, None, None
    source = getattr(layer, SOURCE_ATTRIBUTE)
    return overlay.visible, source.continuous_colormap.name, source.contrast_limits


def test_unit_and_names():
    assert unit_of("length_mm") == "mm"
    assert unit_of("speed [um/s]") == "um/s"
    assert unit_of("time_s") == "s"
    assert unit_of("curv") is None and unit_of("n_s_x") is None and unit_of("mm") is None
    assert bar_label("length_mm") == "length_mm (mm)"
    assert bar_label("depth_um") == "depth_um (µm)"
    assert display_name("group_id") == "group" and display_name("object_id") == "object id"


def test_tracks300_length_bar_follows_the_colour_and_goes_for_categories(
    make_napari_viewer, qtbot, tracks300_store
):
    from napari_zarr_vectors.napari.widgets.colour import ColourByWidget

    path, truth = tracks300_store
    viewer = make_napari_viewer()
    c, lines = opened_3d(viewer, qtbot, path, "Tracks")
    bars = install_colour_bars(viewer)
    # the default colouring (direction) is named, and is no value scale: no bar
    widget = dock(viewer, ColourByWidget)
    assert widget.feature.null_string == "direction (default)"
    assert widget.feature.native.itemText(0) == "direction (default)"
    assert bars.shown == {} and not bars.titles.visible
    qtbot.waitUntil(lambda: tracks_control_colormap(viewer, lines) == "direction", timeout=TIMEOUT)
    # a feature napari colours itself (its own "color by" box) is not drawn in the palette
    lines.color_by = "object_id"
    qtbot.waitUntil(lambda: tracks_control_colormap(viewer, lines) == "viridis", timeout=TIMEOUT)
    lines.color_by = "direction"
    qtbot.waitUntil(lambda: tracks_control_colormap(viewer, lines) == "direction", timeout=TIMEOUT)

    widget.colour_by("length_mm")
    qtbot.waitUntil(lambda: lines in bars.shown, timeout=TIMEOUT)
    length = np.asarray(truth.object_attributes["length_mm"], np.float64)
    limits = (float(length.min()), float(length.max()))
    spec = bars.shown[lines]
    assert spec.label == "length_mm (mm)" and spec.unit == "mm"
    assert spec.contrast_limits == pytest.approx(limits)
    visible, cmap, got = bar_state(lines)
    assert visible and got == pytest.approx(limits)
    assert bars.titles.visible and bars.titles.text.startswith("length_mm (mm)\n")
    assert "24.69" in bars.titles.text and "76.67" in bars.titles.text
    qtbot.waitUntil(lambda: drawn_on_canvas(viewer, lines), timeout=TIMEOUT)
    assert len(bars.shown) == 1  # the bounds layer is not coloured by a value

    # another colormap and other limits: the bar follows
    widget.colour_by("length_mm", colormap="magma", contrast_limits=(30.0, 60.0))
    qtbot.waitUntil(lambda: bar_state(lines)[2] == (30.0, 60.0), timeout=TIMEOUT)
    assert bars.shown[lines].colormap.name == bar_state(lines)[1]
    assert ends_in(bars.shown[lines], "magma")
    assert tracks_control_colormap(viewer, lines) == "magma"

    # another attribute: the object id as a value
    widget.colour_by("object_id", mode="continuous")
    qtbot.waitUntil(
        lambda: bars.shown.get(lines) and bars.shown[lines].label == "object id", timeout=TIMEOUT
    )
    assert bars.shown[lines].contrast_limits == (0.0, float(len(length) - 1))
    assert bars.titles.text == "object id\n0 … 299"

    # categories: no bar, no title
    widget.colour_by("hemisphere")
    qtbot.waitUntil(lambda: not bars.shown, timeout=TIMEOUT)
    assert not bar_state(lines)[0] and not bars.titles.visible

    # back to a value, then the layer hidden and removed: the bar goes with it
    widget.colour_by("length_mm")
    qtbot.waitUntil(lambda: lines in bars.shown, timeout=TIMEOUT)
    lines.visible = False
    qtbot.waitUntil(lambda: not bars.shown, timeout=TIMEOUT)
    assert not bars.titles.visible
    lines.visible = True
    qtbot.waitUntil(lambda: lines in bars.shown, timeout=TIMEOUT)
    viewer.layers.remove(lines)
    qtbot.waitUntil(lambda: not bars.titles.visible, timeout=TIMEOUT)
    assert bars.shown == {}


def tracks_control_colormap(viewer, layer) -> str:
    """The colormap napari's layer controls show for Tracks ``layer``."""
    controls = viewer.window._qt_viewer.controls.widgets[layer]
    return controls._colormap_combobox_control.colormap_combobox.currentText()


def ends_in(spec, name: str) -> bool:
    """Whether bar ``spec`` ends in the top colour of napari colormap ``name``."""
    from napari.utils.colormaps import ensure_colormap

    if spec is None:
        return False
    end = np.asarray(ensure_colormap(name).map(np.array([1.0]))[0])
    return bool(np.allclose(spec.colormap.map(np.array([1.0]))[0], end, atol=1e-3))


@pytest.mark.parametrize(
    ("name", "feature", "kind", "napari_bar"),
    [
        ("points", "intensity", "Points", True),
        ("mesh", "curvature", "Surface", True),
        ("streamlines", "fa", "Tracks", False),
        ("lines", "intensity", "Vectors", False),
    ],
)
def test_every_layer_kind_shows_a_bar_with_the_data_range(
    make_napari_viewer, qtbot, name, feature, kind, napari_bar
):
    from napari_zarr_vectors.napari.widgets.colour import ColourByWidget

    viewer = make_napari_viewer()
    target = open_zv(viewer, qtbot, "v09", name, lock_level=0)
    layer = target.layers[0]
    assert type(layer).__name__ == kind
    bars = install_colour_bars(viewer)
    widget = dock(viewer, ColourByWidget)
    widget.colour_by(feature, colormap="plasma")
    settle(qtbot, target)
    values = np.asarray(widget._values(feature), np.float64)
    limits = (float(np.nanmin(values)), float(np.nanmax(values)))
    assert widget.spec.contrast_limits == pytest.approx(limits)
    qtbot.waitUntil(lambda: ends_in(bars.shown.get(layer), "plasma"), timeout=TIMEOUT)
    assert bars.shown[layer].contrast_limits == pytest.approx(limits)
    assert bars.shown[layer].label == feature
    visible, _, got = bar_state(layer)
    assert visible and got == pytest.approx(limits)
    assert (OVERLAY_KEY in layer._overlays) is not napari_bar  # napari's own where it has one
    qtbot.waitUntil(lambda: drawn_on_canvas(viewer, layer), timeout=TIMEOUT)


def test_a_shapes_layer_gets_the_plugin_bar(make_napari_viewer, qtbot):
    viewer = make_napari_viewer()
    bars = install_colour_bars(viewer)
    width = np.array([0.5, 2.0, 3.5])
    paths = [np.array([[0.0, 0.0], [1.0, i]]) for i in range(3)]
    layer = viewer.add_shapes(
        paths,
        shape_type="path",
        features={"object_id": np.arange(3), "width_um": width},
        metadata={"zarr_vectors": {"geometry_type": "polyline", "role": "polylines"}},
    )
    apply_colour(layer, continuous_colours(feature_values(layer, "width_um"), "width_um"))
    qtbot.waitUntil(lambda: layer in bars.shown, timeout=TIMEOUT)
    assert bars.shown[layer].label == "width_um (µm)"
    assert bar_state(layer) == (True, bars.shown[layer].colormap.name, (0.5, 3.5))
    qtbot.waitUntil(lambda: drawn_on_canvas(viewer, layer), timeout=TIMEOUT)


def test_categorical_legend_counts_objects(make_napari_viewer, qtbot, tracks300_store):
    from napari_zarr_vectors.napari.widgets.colour import ColourByWidget

    path, truth = tracks300_store
    viewer = make_napari_viewer()
    c, lines = opened_3d(viewer, qtbot, path, "Tracks")
    widget = dock(viewer, ColourByWidget)
    widget.colour_by("hemisphere")
    hemisphere = np.asarray(truth.object_attributes["hemisphere"])
    text = widget.legend.text()
    for side in ("left", "right"):
        n = int((hemisphere == side).sum())
        assert f"{side} <small>({n:,} streamlines loaded)</small>" in text, text
    assert "vertices" not in text

    widget.colour_by("group_id")
    text = widget.legend.text()
    assert text.startswith("<b>group</b>")
    store_groups = c.store.groups(0)
    names = c.store.group_names(0)
    for gid, members in store_groups.items():
        assert f"{names[gid]} <small>({len(members):,} streamlines loaded)</small>" in text


def test_default_colouring_names():
    class Layer:
        def __init__(self, source):
            self.metadata = {"zarr_vectors": {"colour_by": source}}

    assert default_colouring_name(Layer("rgb")) == "stored rgb"
    assert default_colouring_name(Layer("zv_direction")) == "direction"
    assert default_colouring_name(Layer("curv")) == "curv"
    assert default_colouring_name(Layer("length_mm")) == "length_mm (mm)"
    assert default_colouring_name(Layer("object_id")) == "object id"
    assert default_colouring_name(Layer(None)) == "one colour"


def _corner_has(image: np.ndarray, rgb, size: int = 260) -> bool:
    """Whether the canvas's top-right ``size`` px corner has a pixel within 12/255 of ``rgb``."""
    corner = image[:size, -size:, :3].astype(np.int16)
    want = np.round(np.asarray(rgb[:3]) * 255).astype(np.int16)
    return bool((np.abs(corner - want).max(axis=-1) <= 12).any())


def test_screenshot_tracks300_coloured_by_length(make_napari_viewer, qtbot, tracks300_store):
    """tracks300 dropped in a 1280x1000 window and coloured by ``length_mm``: the bar's two
    ends (Colour by's default colormap, viridis lifted) are in the canvas's top-right corner, gone there for categories. With
    ``NZV_DOCS_IMAGES=1`` the window is saved as docs/images/colour_bar.png."""
    from napari.utils.colormaps import ensure_colormap

    from napari_zarr_vectors.napari.widgets.colour import ColourByWidget

    path, _ = tracks300_store
    viewer = make_napari_viewer(show=True)
    viewer.window.resize(1280, 1000)
    c = dropped(viewer, qtbot, path)
    viewer.layers.selection.active = c.layers[-1]
    widget = dock(viewer, ColourByWidget)
    widget.colour_by("length_mm")
    bars = install_colour_bars(viewer)
    qtbot.waitUntil(lambda: bool(bars.shown), timeout=TIMEOUT)
    qtbot.waitUntil(lambda: any(drawn_on_canvas(viewer, x) for x in c.layers), timeout=TIMEOUT)
    ends = ensure_colormap("viridis (lifted)").map(np.array([0.0, 1.0]))
    canvas = viewer.screenshot(canvas_only=True, flash=False)
    assert all(_corner_has(canvas, rgb) for rgb in ends)
    if os.environ.get("NZV_DOCS_IMAGES") == "1":
        window = viewer.screenshot(canvas_only=False, flash=False)
        save_docs_image(window, "colour_bar.png", max_bytes=600_000)
    widget.colour_by("hemisphere")
    qtbot.waitUntil(lambda: not bars.shown, timeout=TIMEOUT)
    qtbot.waitUntil(lambda: not any(drawn_on_canvas(viewer, x) for x in c.layers), timeout=TIMEOUT)
    canvas = viewer.screenshot(canvas_only=True, flash=False)
    assert not any(_corner_has(canvas, rgb) for rgb in ends)


def test_default_colouring_by_a_value_has_a_bar_and_layers_coloured_alike_share_one(
    make_napari_viewer, qtbot
):
    """The v09 graph: nodes (Points) drawn by ``intensity`` by default show napari's bar over
    the contrast limits they are drawn with (the builder's, kept from the first load); both
    layers coloured by ``score`` show one bar over the data's range. (A skeleton's nodes are
    drawn in the colours of their skeletons instead.)"""
    from napari_zarr_vectors.napari.widgets.colour import ColourByWidget

    viewer = make_napari_viewer()
    target = open_zv(viewer, qtbot, "v09", "graph", lock_level=0)
    edges, nodes = target.layers
    assert (type(edges).__name__, type(nodes).__name__) == ("Vectors", "Points")
    bars = install_colour_bars(viewer)
    qtbot.waitUntil(lambda: nodes in bars.shown, timeout=TIMEOUT)
    assert list(bars.shown) == [nodes] and nodes.face_colorbar.visible
    assert bars.shown[nodes].label == "intensity"
    assert bars.shown[nodes].contrast_limits == pytest.approx(nodes.face_contrast_limits)
    viewer.layers.selection.active = nodes
    widget = dock(viewer, ColourByWidget)
    assert widget.feature.null_string == "intensity (default)"

    widget.colour_by("score")
    score = np.concatenate([lay.features["score"].to_numpy() for lay in (edges, nodes)])
    qtbot.waitUntil(lambda: [s.label for s in bars.shown.values()] == ["score"], timeout=TIMEOUT)
    (spec,) = bars.shown.values()
    assert spec.contrast_limits == pytest.approx((np.nanmin(score), np.nanmax(score)))
    assert bars.titles.text == f"score\n{spec.range_text}"


def test_object_counts_count_each_object_once_per_category():
    """Objects split into non-adjacent runs count once; an object with rows in two
    categories counts in both; rows without an object id count one each; an object without
    a value (4) is in no legend row."""
    import pandas as pd

    from napari_zarr_vectors.napari.colour.bar import object_counts
    from napari_zarr_vectors.napari.colour.spec import categorical_colours

    class Layer:
        metadata: dict = {"zarr_vectors": {}}

        def __init__(self, features):
            self.features = pd.DataFrame(features)

    ids = np.array([0, 0, 1, 1, 0, 2, 2, 3, -1, -1, 4])
    side = np.array(["l", "l", "r", "r", "l", "l", "r", "r", "l", "l", None], object)
    layer = Layer({"object_id": ids, "side": side})
    spec = categorical_colours(side, "side")
    assert object_counts(layer, spec) == {"l": 4, "r": 3}  # l: 0, 2 and two id-less rows
    counts = object_counts(layer, spec, ids != 0)
    assert counts == {"l": 3, "r": 3}
    assert [n for label, _, n in spec.legend(counts)] == [3, 3]


def test_object_counts_join_the_other_layers_of_the_same_objects():
    """A skeleton's edges (a row per child node) hold no root: the legend counts the nodes
    layer too, each object once per category over both; id-less rows of two layers stay
    distinct."""
    import pandas as pd

    from napari_zarr_vectors.napari.colour.bar import object_counts
    from napari_zarr_vectors.napari.colour.spec import categorical_colours

    class Layer:
        metadata: dict = {"zarr_vectors": {}}

        def __init__(self, features):
            self.features = pd.DataFrame(features)

    kinds = np.array(["root", "slab", "end", "root", "slab", "slab"], object)
    nodes = Layer({"object_id": [7, 7, 7, 9, 9, -1], "node_type": kinds})
    edges = Layer({"object_id": [7, 7, 9, -1], "node_type": kinds[[1, 2, 4, 5]]})
    spec = categorical_colours(kinds, "node_type")
    assert "root" not in object_counts(edges, spec)
    both = object_counts(edges, spec, also=[(nodes, None)])
    assert both == {"root": 2, "slab": 4, "end": 1}  # slab: 7, 9 and two id-less rows
    shown = np.array([True, True, True, False, False, False])
    assert object_counts(edges, spec, also=[(nodes, shown)])["root"] == 1
