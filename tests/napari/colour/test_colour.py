"""Colour state a user can trust, in a real viewer.

* Colour by a vertex attribute, then show a level that does not store it: the layer is drawn
  in the one fallback grey and the legend says the attribute is missing there; back at a
  level with the attribute, the colours *and the contrast limits* return.
* Colour by group with overlapping groups: every group gets its colour (an object in several
  groups takes the smallest of them) and the legend states that rule.
"""

from __future__ import annotations

import numpy as np
import pytest
from _zv_napari import expected, layer_colours
from _zv_viewer import dock, open_zv, opened_3d, settle

from napari_zarr_vectors.napari.colour.live import (
    FALLBACK_COLOUR,
    colour_spec_of,
    colourable_features,
    feature_values,
)

pytestmark = pytest.mark.gui


def colormap_colours(values: np.ndarray, name: str, lo: float, hi: float) -> np.ndarray:
    from napari.utils.colormaps import ensure_colormap

    v = np.clip((np.asarray(values, np.float64) - lo) / (hi - lo), 0.0, 1.0)
    return np.asarray(ensure_colormap(name).map(v))


@pytest.mark.parametrize(
    ("name", "feature", "kind"),
    [
        ("streamlines", "fa", "Tracks"),
        ("points", "intensity", "Points"),
        ("lines", "intensity", "Vectors"),
        ("mesh", "curvature", "Surface"),
    ],
)
def test_an_attribute_missing_at_a_level_is_said_and_its_colour_and_contrast_return(
    make_napari_viewer, qtbot, name, feature, kind
):
    from napari_zarr_vectors.napari.widgets.colour import ColourByWidget

    viewer = make_napari_viewer()
    target = open_zv(viewer, qtbot, "v09", name, lock_level=0)
    layer = target.layers[0]
    assert type(layer).__name__ == kind
    widget = dock(viewer, ColourByWidget)
    limits = (0.3, 0.6) if feature != "curvature" else (-0.2, 0.4)
    widget.colour_by(feature, colormap="magma", contrast_limits=limits)
    want = colormap_colours(feature_values(layer, feature), "magma", *limits)
    np.testing.assert_allclose(layer_colours(layer), want, atol=2e-3)

    target.lock_level(1)  # level 1 of these stores keeps no vertex attributes
    settle(qtbot, target)
    assert target.level == 1
    # what draws level 1 (a mesh level without faces is drawn as points, a new layer): every
    # such layer lacks the attribute and is drawn in the one fallback grey
    drawn_layers = [lay for lay in target.layers if len(lay.features)]
    assert drawn_layers
    for lay in drawn_layers:
        assert feature not in colourable_features(lay)
        assert colour_spec_of(lay).feature == feature
        assert lay.metadata["zarr_vectors"]["colour_by"] is None  # what is drawn: no feature
        drawn = np.asarray(layer_colours(lay))
        assert len(drawn)
        np.testing.assert_allclose(drawn, np.tile(FALLBACK_COLOUR, (len(drawn), 1)), atol=1e-6)
    legend = widget.legend.text()
    assert f"<b>{feature}</b>: not stored at level 1" in legend and "grey" in legend
    assert "magma" not in legend
    # the choice is still shown (and marked), with its contrast
    assert widget.spec_feature() == feature
    assert "not stored at level 1" in widget.feature.native.currentText()
    assert widget.contrast.value == pytest.approx(limits)
    # selecting the layer again at this level keeps showing the choice
    viewer.layers.selection.active = target.bounds_layer
    viewer.layers.selection.active = layer
    assert widget.spec_feature() == feature and widget.spec.contrast_limits == limits
    # changes made here (no values to take a range from) keep the contrast
    widget.colormap.value = "viridis"
    widget.mode.value = "continuous"
    assert widget.spec.colormap == "viridis" and widget.spec.contrast_limits == limits
    for lay in drawn_layers:
        drawn = np.asarray(layer_colours(lay))
        np.testing.assert_allclose(drawn, np.tile(FALLBACK_COLOUR, (len(drawn), 1)))

    target.lock_level(0)
    settle(qtbot, target)
    assert layer.metadata["zarr_vectors"]["colour_by"] == feature
    want = colormap_colours(feature_values(layer, feature), "viridis", *limits)
    np.testing.assert_allclose(layer_colours(layer), want, atol=2e-3)
    assert widget.legend.text() == f"<b>{feature}</b>: viridis, {limits[0]:g} … {limits[1]:g}"
    assert widget.contrast.value == pytest.approx(limits)
    assert "not stored" not in widget.feature.native.currentText()


@pytest.mark.parametrize(
    ("name", "nested", "outer"),
    [
        ("polylines", 2, 1),  # hand_made (14, 15) lies wholly inside bundle_b
        ("points", 2, 0),  # group 2 (3, 7, 11, 24) overlaps groups 0 and 1
    ],
)
def test_overlapping_groups_each_get_a_colour_by_the_stated_rule(
    make_napari_viewer, qtbot, name, nested, outer
):
    from napari_zarr_vectors.napari.widgets.colour import SEVERAL_GROUPS, ColourByWidget

    viewer = make_napari_viewer()
    target = open_zv(viewer, qtbot, "v09", name, lock_level=0)
    layer = target.layers[0]
    widget = dock(viewer, ColourByWidget)
    spec = widget.colour_by("group_id")
    groups = {int(g): set(m) for g, m in expected("v09", name)["input"]["groups"].items()}
    mapping = spec.mapping()
    colours = np.round(layer_colours(layer), 5)
    ids = feature_values(layer, "object_id")
    if type(layer).__name__ == "Points":
        ids, colours = ids[np.asarray(layer.shown, bool)], colours[np.asarray(layer.shown, bool)]
    # each object is drawn in the colour of the smallest group holding it
    for oid in np.unique(ids):
        holding = [g for g, m in groups.items() if oid in m]
        smallest = min(holding, key=lambda g: (len(groups[g]), g)) if holding else -1
        drawn = np.unique(colours[ids == oid], axis=0)
        np.testing.assert_allclose(drawn, [mapping[smallest]], atol=1e-4)
    # every group is drawn, the nested one included
    drawn_groups = {
        g for g, c in mapping.items() if np.any(np.all(np.isclose(colours, c, atol=1e-4), axis=1))
    }
    assert set(groups) <= drawn_groups
    assert nested in drawn_groups and outer in drawn_groups
    assert SEVERAL_GROUPS in widget.legend.text()


def test_the_legend_states_no_rule_when_groups_do_not_overlap(make_napari_viewer, qtbot):
    from napari_zarr_vectors.napari.widgets.colour import SEVERAL_GROUPS, ColourByWidget

    viewer = make_napari_viewer()
    open_zv(viewer, qtbot, "v09", "streamlines", lock_level=0)
    widget = dock(viewer, ColourByWidget)
    widget.colour_by("group_id")
    assert "■" in widget.legend.text() and SEVERAL_GROUPS not in widget.legend.text()


def test_moving_the_contrast_slider_recolours_once_it_rests(make_napari_viewer, qtbot):
    """The magicgui range slider drives the colouring through a debounce (qdebounced): the
    layer follows the last position."""
    from napari_zarr_vectors.napari.widgets.colour import ColourByWidget

    viewer = make_napari_viewer()
    target = open_zv(viewer, qtbot, "v09", "points", lock_level=0)
    layer = target.layers[0]
    widget = dock(viewer, ColourByWidget)
    widget.colour_by("intensity", colormap="viridis")
    for lo in (0.1, 0.2, 0.25):  # a drag: several positions in quick succession
        widget.contrast.value = (lo, 0.7)
    qtbot.waitUntil(lambda: widget.spec.contrast_limits == pytest.approx((0.25, 0.7)))
    want = colormap_colours(feature_values(layer, "intensity"), "viridis", 0.25, 0.7)
    np.testing.assert_allclose(layer_colours(layer), want, atol=2e-3)
    assert layer.metadata["zarr_vectors"]["colour"]["contrast_limits"] == pytest.approx([0.25, 0.7])


# --------------------------------------------------------------------------------------------
# real data: navis' neurons as skeletons and meshes (tests/realdata.py)
# --------------------------------------------------------------------------------------------


def test_skeletons_are_drawn_one_colour_per_neuron_and_the_legend_says_so(
    make_napari_viewer, qtbot, neurons_radius_store
):

    from napari_zarr_vectors.napari.colour.defaults import categorical_rgba
    from napari_zarr_vectors.napari.widgets.colour import ColourByWidget, _hex

    viewer = make_napari_viewer()
    c, nodes = opened_3d(viewer, qtbot, neurons_radius_store[0], "Points")
    edges = next(lyr for lyr in c.layers if type(lyr).__name__ == "Vectors")
    for layer in (nodes, edges):  # nodes and edges alike: each neuron in its own colour
        ids = layer.features["object_id"].to_numpy()
        np.testing.assert_allclose(layer_colours(layer), categorical_rgba(ids), atol=1e-6)
    widget = dock(viewer, ColourByWidget)
    assert widget.feature.null_string == "object id (default)"
    text = widget.legend.text()
    assert "each of the 5 skeletons loaded in its own colour" in text
    for i, rgba in zip(range(5), categorical_rgba(np.arange(5)), strict=True):
        assert f"<span style='color:{_hex(rgba)}'>■</span> {i}" in text
    assert nodes.face_colorbar.visible is False  # no value scale for a colour per neuron


def test_radius_on_skeletons_is_not_squeezed_to_the_dark_end_by_the_soma(
    make_napari_viewer, qtbot, neurons_radius_store
):
    """navis radii: 10 .. 375 nm, 98 % of the nodes under 90 (the somata are the rest), a
    third at the 10 nm floor. Over the full range most nodes took viridis' darkest purple,
    invisible on black: the contrast range is the 1st .. 99th percentile, and the default
    colormap viridis without its darkest fifth."""

    from napari_zarr_vectors.napari.widgets.colour import ColourByWidget

    viewer = make_napari_viewer()
    c, nodes = opened_3d(viewer, qtbot, neurons_radius_store[0], "Points")
    widget = dock(viewer, ColourByWidget)
    spec = widget.colour_by("radius")
    radius = nodes.features["radius"].to_numpy()
    assert spec.contrast_limits == pytest.approx(tuple(np.percentile(radius, [1, 99])), rel=1e-3)
    assert spec.colormap == "viridis (lifted)"
    assert widget.legend.text().startswith("<b>radius</b>: viridis (lifted), 10 … 88.5")
    drawn = layer_colours(nodes)
    luminance = drawn[:, :3] @ np.array([0.2126, 0.7152, 0.0722])
    assert luminance.min() > 0.2  # viridis' own darkest purple: 0.08


def test_meshes_default_to_bright_colours_per_object(make_napari_viewer, qtbot, meshes_store):

    from napari_zarr_vectors.napari.colour.defaults import categorical_rgba

    viewer = make_napari_viewer()
    c, mesh = opened_3d(viewer, qtbot, meshes_store[0], "Surface")
    ids = mesh.features["object_id"].to_numpy()
    drawn = layer_colours(mesh)
    np.testing.assert_allclose(drawn, categorical_rgba(ids), atol=0.02)
    per_object = np.stack([drawn[ids == i][0] for i in np.unique(ids)])
    assert len({tuple(np.round(x, 2)) for x in per_object}) == 5  # five distinct colours
    assert (per_object[:, :3].max(axis=1) > 0.99).all()  # each at full value: seen on black


def test_colour_by_a_text_attribute_with_one_value_draws_that_colour(
    make_napari_viewer, qtbot, meshes_store
):
    """navis' five example meshes share one name: one category (vispy refuses a colormap
    of one colour)."""

    from napari_zarr_vectors.napari.widgets.colour import ColourByWidget, _hex

    viewer = make_napari_viewer(show=True)
    c, mesh = opened_3d(viewer, qtbot, meshes_store[0], "Surface")
    widget = dock(viewer, ColourByWidget)
    spec = widget.colour_by("object_name" if "object_name" in mesh.features else "name")
    assert spec.categorical and len(spec.categories) == 1
    (colour,) = spec.colours
    np.testing.assert_allclose(layer_colours(mesh), np.tile(colour, (len(mesh.data[0]), 1)))
    assert f"<span style='color:{_hex(colour)}'>■</span> DA1_lPN_R" in widget.legend.text()
    shot = viewer.screenshot(canvas_only=True)  # draws: vispy took the colormap
    blue = (shot[..., 2].astype(int) - shot[..., 0].astype(int)) > 60
    assert blue.sum() > 1000  # the meshes in the category's blue, not black


@pytest.mark.parametrize("kind", ["Points", "Vectors"])
def test_a_missing_value_by_number_is_drawn_grey_not_invisible(kind):
    """Colour by a number draws a vertex whose value is missing (NaN: an object unknown or
    without the value) in the legend's missing grey; napari's named colormaps drew it
    transparent black, so such vertices vanished from Points and Vectors."""
    import napari.layers

    from napari_zarr_vectors.napari.colour.live import apply_colour
    from napari_zarr_vectors.napari.colour.spec import MISSING_COLOUR, ColourSpec

    values = np.array([1.0, np.nan, 3.0, 2.0])
    data = np.zeros((4, 2, 3)) if kind == "Vectors" else np.zeros((4, 3))
    layer = getattr(napari.layers, kind)(data, features={"v": values})
    apply_colour(layer, ColourSpec("v", colormap="viridis", contrast_limits=(1.0, 3.0)))
    drawn = np.asarray(layer.edge_color if kind == "Vectors" else layer.face_color)
    np.testing.assert_allclose(drawn[1], MISSING_COLOUR)
    known = [0, 2, 3]
    np.testing.assert_allclose(drawn[known], colormap_colours(values[known], "viridis", 1, 3))


@pytest.mark.parametrize(
    ("n", "noun", "text"),
    [
        (1, "meshes", "1 mesh"),
        (1, "point clouds", "1 point cloud"),
        (1, "streamlines", "1 streamline"),
        (1, "rows", "1 row"),
        (0, "skeletons", "0 skeletons"),
        (12_345, "objects", "12,345 objects"),
    ],
)
def test_legend_counts_say_one_in_the_singular(n, noun, text):
    from napari_zarr_vectors.napari.colour.bar import counted

    assert counted(n, noun) == text
