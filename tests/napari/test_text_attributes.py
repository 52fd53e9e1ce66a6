"""Real data in napari speaks the store's language: text attributes
flow into features, filters and colour-by; hover and Pick show decoded text, group names,
store-order coordinates with units, and none of napari's or the plugin's own columns.

Stores: dipy's tracks300 (named bundles, text object attribute ``hemisphere``) and navis'
five neurons (text vertex attribute ``node_type``), written by zarr-vectors 0.9.2
(``tests/realdata.py``); truth is what the writer was given."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from _zv_viewer import (
    assert_one_colour_per_category,
    cursor_at_row,
    dock,
    hover,
    opened_3d,
    pick_in_3d,
    settle,
)

import napari_zarr_vectors as nzv
from napari_zarr_vectors.napari.colour.live import apply_colour, feature_values
from napari_zarr_vectors.napari.colour.spec import categorical_colours
from writer_dtypes import KINDS, WORDS, write_store

pytestmark = pytest.mark.gui

#: "x 1.00, y 2.00, z 3.00 mm" -> the three numbers, the unit
COORDS = re.compile(r"^x (-?[\d.]+), y (-?[\d.]+), z (-?[\d.]+) (\w+): ")


def pick_and_hover(viewer, layer, row: int):
    """(pick, cursor, hover text) with the cursor on the drawn vertex of feature row ``row``."""
    position = cursor_at_row(viewer, layer, row)
    return (
        pick_in_3d(viewer, layer, position),
        position,
        hover(viewer, layer, position)["coordinates"],
    )


def store_xyz(pick) -> np.ndarray:
    """The picked vertex in store (x, y, z) order."""
    return np.asarray(pick.position)[-3:][::-1]


def assert_vertex_of(truth_nodes: np.ndarray, xyz: np.ndarray) -> int:
    """Index of the truth vertex at ``xyz`` (fails when the object has none there)."""
    d = np.abs(np.asarray(truth_nodes, np.float64) - xyz).max(axis=1)
    assert d.min() < 1e-3, (d.min(), xyz)
    return int(d.argmin())


def test_hover_and_pick_on_tracks300(make_napari_viewer, qtbot, tracks300_store):
    from napari_zarr_vectors.napari.widgets.pick import PickWidget

    path, truth = tracks300_store
    viewer = make_napari_viewer()
    _, layer = opened_3d(viewer, qtbot, path, "Tracks")
    widget = dock(viewer, PickWidget)
    group_of = {oid: g for g, members in truth.groups.items() for oid in members}
    hemisphere = feature_values(layer, "hemisphere")
    seen = set()
    for side in ("right", "left"):
        for row in np.flatnonzero(hemisphere == side)[::97][:5].tolist():
            pick, position, text = pick_and_hover(viewer, layer, row)
            assert pick is not None and pick.object_id is not None
            k = pick.object_id
            want_side = str(truth.object_attributes["hemisphere"][k])
            bundle = truth.group_names[group_of[k]]
            # decoded text and the group's name, not codes and ids
            assert f"object {k} (hemisphere: {want_side}, " in text, text
            assert f"group: {bundle})" in text, text
            seen.add(want_side)
            for internal in ("track_id", "direction", "group_id", "hemisphere: 0", "hemisphere: 1"):
                assert internal not in text, text
            # the cursor in store order (x, y, z) with the store's unit, no time axis
            m = COORDS.match(text)
            assert m is not None, text
            assert m.group(4) == "mm"
            np.testing.assert_allclose(
                [float(v) for v in m.groups()[:3]], position[-3:][::-1], atol=0.006
            )
            # ... which is a vertex of that streamline in dipy's file
            assert_vertex_of(truth.objects[k], store_xyz(pick))

            # Pick says the same
            widget.pick(position, list(viewer.dims.displayed), viewer.scene.camera.view_direction)
            info = widget.info.text()
            assert f"Object {k}" in info and f"hemisphere: {want_side}" in info, info
            assert f"group: {bundle}" in info, info
            assert "direction" not in info and "track_id" not in info, info
            assert re.search(r"at x -?[\d.]+, y -?[\d.]+, z -?[\d.]+ mm", info), info
    assert seen == {"right", "left"}
    # a bundle name of dipy's octants, e.g. "left posterior inferior"
    assert all(len(n.split()) == 3 for n in truth.group_names)


def test_a_text_object_attribute_filters_and_colours(make_napari_viewer, qtbot, tracks300_store):
    from napari_zarr_vectors.napari.widgets.colour import ColourByWidget
    from napari_zarr_vectors.napari.widgets.filters import AttributeFilterWidget

    path, truth = tracks300_store
    viewer = make_napari_viewer()
    c, layer = opened_3d(viewer, qtbot, path, "Tracks")
    filters = dock(viewer, AttributeFilterWidget)
    row = filters.add_filter("hemisphere")
    assert set(row.summary.categories) == {"left", "right"}
    row.set_values(["right"])
    settle(qtbot, c, timeout=30_000)
    right = set(np.flatnonzero(truth.object_attributes["hemisphere"] == "right").tolist())
    assert set(layer.features["object_id"].to_numpy().tolist()) == right
    filters.clear_filters()
    settle(qtbot, c, timeout=30_000)
    spec = dock(viewer, ColourByWidget).colour_by("hemisphere")
    assert spec.categorical and set(spec.categories) == {"left", "right"}
    assert_one_colour_per_category(layer, "hemisphere", spec)


def test_neurons_node_type_in_hover_pick_and_colour(make_napari_viewer, qtbot, neurons_text_store):
    from napari_zarr_vectors.napari.widgets.colour import ColourByWidget

    path, truth = neurons_text_store
    viewer = make_napari_viewer()
    c, nodes = opened_3d(viewer, qtbot, path, "Points")
    edges = next(lyr for lyr in c.layers if type(lyr).__name__ == "Vectors")
    types = truth.vertex_attributes["node_type"]
    checked = 0
    for row in np.linspace(0, len(nodes.features) - 1, 6).astype(int).tolist():
        pick, _, text = pick_and_hover(viewer, nodes, row)
        assert pick is not None and pick.object_id is not None
        k = pick.object_id
        i = assert_vertex_of(truth.objects[k], store_xyz(pick))
        assert f"object {k} (body_id: {truth.object_attributes['body_id'][k]})" in text, text
        assert f"; node_type: {types[k][i]}" in text, text
        assert COORDS.match(text).group(4) == "nm", text
        checked += 1
    assert checked == 6
    spec = dock(viewer, ColourByWidget).colour_by("node_type")
    assert spec.categorical and set(spec.categories) == {"root", "slab", "branch", "end"}
    for layer in (nodes, edges):
        assert_one_colour_per_category(layer, "node_type", spec)


def test_neurons_whose_node_type_the_writer_lost_open_with_a_warning(
    make_napari_viewer, qtbot, neurons_store
):
    path, truth = neurons_store
    viewer = make_napari_viewer()
    with pytest.warns(nzv.ZVAttributeWarning, match=r"'node_type' left out.*level 0"):
        _, nodes = opened_3d(viewer, qtbot, path, "Points")
    assert "node_type" not in nodes.features
    assert set(nodes.features["object_id"].to_numpy().tolist()) == set(range(len(truth.objects)))
    assert len(nodes.features) == truth.vertex_count


@pytest.mark.parametrize("kind", KINDS)
def test_text_and_boolean_attributes_on_every_layer_kind(make_napari_viewer, qtbot, tmp_path, kind):
    """A store with text, boolean and multi-channel attributes opens (napari's Tracks cannot
    colour by booleans: they are codes there), every layer it makes (Points, Vectors,
    Tracks, Surface) has them as feature columns, text read as text, and colours by each
    category, one colour per value."""
    pytest.importorskip("zarr_vectors")
    path = tmp_path / f"{kind}.zarrvectors"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        write_store(kind, path, np.random.default_rng(1))
    viewer = make_napari_viewer()
    c, _ = opened_3d(viewer, qtbot, path, kind=None)
    assert c.layers
    for layer in c.layers:
        for column in ("rgb[0]", "rgb[2]", "xyz[1]"):
            assert column in layer.features, (type(layer).__name__, column)
        for name, want in (
            ("word", set(WORDS.tolist())),
            ("side", {"left", "right"}),
            ("flag", {"False", "True"}),
        ):
            values = feature_values(layer, name)
            # (the segments of lines carry their first endpoint's values: all "True")
            assert set(map(str, values)) <= want and len(values), (type(layer).__name__, name)
            if name != "flag":
                assert set(map(str, values)) == want, (type(layer).__name__, name)
            spec = categorical_colours(values, name)
            apply_colour(layer, spec)
            assert_one_colour_per_category(layer, name, spec)


def test_text_vertex_attribute_chosen_while_no_rows_are_loaded_is_categorical(
    make_napari_viewer, qtbot, neurons_text_store
):
    """Colour by ``node_type`` chosen while the layers hold no rows (a filter that keeps no
    object; or a store opened after another, its first load still running): the mode comes
    from the column's type, not from an empty float array, so the colours stay categories
    when the rows arrive and the swap re-applies them (a colormap over text raised a
    TypeError)."""
    from napari_zarr_vectors.napari.widgets.colour import ColourByWidget

    path, _ = neurons_text_store
    viewer = make_napari_viewer()
    c, nodes = opened_3d(viewer, qtbot, path, "Points")
    edges = next(lyr for lyr in c.layers if type(lyr).__name__ == "Vectors")
    c.set_object_filter([])
    settle(qtbot, c)
    assert len(nodes.features) == 0 and len(edges.features) == 0
    widget = dock(viewer, ColourByWidget)
    widget.colour_by("node_type")
    assert widget.spec is not None and widget.spec.categorical, widget.spec
    c.set_object_filter(None)
    settle(qtbot, c)
    assert len(nodes.features) > 0
    spec = widget.spec
    assert spec.categorical and set(spec.categories) == {"root", "slab", "branch", "end"}
    for layer in (nodes, edges):
        assert_one_colour_per_category(layer, "node_type", spec)
    legend = widget.legend.text()
    for name in ("root", "slab", "branch", "end"):
        assert name in legend, legend


def test_a_colormap_spec_on_a_text_column_draws_its_categories():
    """A continuous spec recorded for a feature that is text on this layer (a choice made
    on another store's layers) colours the categories: napari's colormap takes numbers only
    (it raised a TypeError on the swap that re-applied it)."""
    import napari
    from napari_zarr_vectors.napari.colour.spec import ColourSpec

    kinds = np.array(["soma", "axon", "axon", "dendrite"], object)
    layer = napari.layers.Points(np.zeros((4, 3)), features={"kind": kinds})
    apply_colour(layer, ColourSpec(feature="kind", colormap="viridis", contrast_limits=(0, 1)))
    spec = categorical_colours(kinds, "kind")
    assert spec.categories == ("axon", "dendrite", "soma")
    assert_one_colour_per_category(layer, "kind", spec)
    np.testing.assert_allclose(layer.face_color[1], spec.colours[0], atol=1e-6)
