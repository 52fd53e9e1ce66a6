"""Browse widgets in a real viewer (make_napari_viewer, Qt under Xvfb): store panel, group and
attribute filters, colour-by, pick and isolate.

Stores open through the level-of-detail controller (``open_in_viewer``), so filters and
colours go through ``set_object_filter`` and the controller's refreshes. Assertions are on
data: visible vertices against the writer's ground truth (tests/data/*/expected), object id
sets, colours. With ``NZV_DOCS_IMAGES=1`` the screenshot test writes docs/images/browsing.png.
"""

from __future__ import annotations

import numpy as np
import pytest
from _zv_napari import DATA, expected, f32, layer_colours, save_docs_image
from _zv_viewer import a_turn, assert_one_colour_per_category, dock, open_zv, settle

from napari_zarr_vectors.napari.browse.filters import RangeFilter
from napari_zarr_vectors.napari.browse.static_filter import layer_object_ids
from napari_zarr_vectors.napari.browse.targets import StaticTarget, browse_state_of
from napari_zarr_vectors.napari.values import NUMERIC

pytestmark = pytest.mark.gui


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def world_store_coords(layer) -> np.ndarray:
    """Store (x, y, z) coordinates of every vertex the layer draws (shown Points only)."""
    kind = type(layer).__name__.lower()
    scale = np.asarray(layer.scale, np.float64)
    if kind == "points":
        data = np.asarray(layer.data)[np.asarray(layer.shown, bool)]
        world = data * scale
    elif kind == "tracks":
        world = np.asarray(layer.data)[:, 2:] * scale[1:]
    elif kind == "vectors":
        data = np.asarray(layer.data)
        world = np.concatenate([data[:, 0], data[:, 0] + data[:, 1]]) * scale
    else:
        raise AssertionError(kind)
    return world[:, ::-1]


def visible_object_ids(layer) -> set[int]:
    ids = layer_object_ids(layer)
    if type(layer).__name__ == "Points":
        ids = ids[np.asarray(layer.shown, bool)]
    return set(ids.tolist())


def rows(a) -> np.ndarray:
    a = np.asarray(a, np.float64)
    a = np.round(a, 4)
    return np.unique(a, axis=0)


def truth_vertices(version: str, name: str, object_ids) -> np.ndarray:
    """Store coordinates of every vertex of ``object_ids`` (writer input)."""
    t = expected(version, name)
    src = t["input"] if version == "v09" else t
    wanted = set(int(i) for i in object_ids)
    if "polylines" in src:
        parts = [f32(p) for i, p in enumerate(src["polylines"]) if i in wanted]
        return np.concatenate(parts) if parts else np.empty((0, 3), np.float32)
    ids = np.asarray(src["vertex_object_ids"] if version == "v09" else src["object_ids"])
    return f32(src["positions"])[np.isin(ids, list(wanted))]


# --------------------------------------------------------------------------------------------
# store panel
# --------------------------------------------------------------------------------------------


def test_store_panel_describes_the_selected_store_and_follows_selection(make_napari_viewer, qtbot):
    from napari_zarr_vectors.napari.widgets.store_panel import StorePanel

    viewer = make_napari_viewer()
    lines = open_zv(viewer, qtbot, "v09", "polylines")
    panel = dock(viewer, StorePanel)
    qtbot.waitUntil(lambda: "bundle_a" in panel.body.text(), timeout=10_000)
    text = panel.body.text()
    for needle in ("polyline", "x, y, z", "322", "130", "length", "number", "intensity"):
        assert needle in text, needle
    assert [lv.object_count for lv in panel.summary.levels][0] == 16

    points = open_zv(viewer, qtbot, "v07", "points_binned")
    viewer.layers.selection.active = points.layers[0]
    qtbot.waitUntil(lambda: "this store has no groups" in panel.body.text(), timeout=10_000)
    assert "point_cloud" in panel.body.text()
    assert "this store has no objects" in panel.body.text()

    viewer.layers.selection.active = lines.layers[0]
    qtbot.waitUntil(lambda: "bundle_a" in panel.body.text(), timeout=10_000)

    viewer.add_image(np.zeros((4, 4)))  # a non-ZV layer becomes active
    assert "Select a Zarr Vectors layer" in panel.header.text()


def test_the_header_follows_the_shown_level(make_napari_viewer, qtbot):
    """Issue 16: the header kept "level 0" while another level was shown."""
    from napari_zarr_vectors.napari.widgets.store_panel import StorePanel

    viewer = make_napari_viewer()
    target = open_zv(viewer, qtbot, "v09", "polylines")
    panel = dock(viewer, StorePanel)
    assert "level 0" in panel.header.text()
    target.lock_level(2)
    settle(qtbot, target)
    assert target.level == 2 and "level 2" in panel.header.text()
    target.lock_level(None)
    settle(qtbot, target)
    assert f"level {target.level}" in panel.header.text()


def test_the_colour_list_puts_store_attributes_first_and_hides_napari_track_ids(
    make_napari_viewer, qtbot
):
    """Issue 16: the list mixed the store's attributes with napari's internal ``track_id``
    (which numbers path pieces, not objects) and the computed direction."""
    from napari_zarr_vectors.napari.widgets.colour import ColourByWidget

    viewer = make_napari_viewer()
    open_zv(viewer, qtbot, "v09", "streamlines")
    colour = dock(viewer, ColourByWidget)
    names = list(colour.feature.choices)  # None first: no colouring chosen
    labels = [colour.feature.native.itemText(i) for i in range(len(names))]
    assert "track_id" not in names and "fa" in names and "direction" in names
    own = [names.index(n) for n in ("object_id", "direction") if n in names]
    assert names.index("fa") < min(own)  # store attributes first
    assert "(vertex)" in labels[names.index("fa")]
    assert "computed" in labels[names.index("direction")]


# --------------------------------------------------------------------------------------------
# group filter
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("version", "name"), [("v07", "points"), ("v09", "polylines")])
def test_only_group_1_leaves_exactly_its_objects_vertices_visible(
    make_napari_viewer, qtbot, version, name
):
    from napari_zarr_vectors.napari.widgets.filters import GroupFilterWidget

    viewer = make_napari_viewer()
    target = open_zv(viewer, qtbot, version, name, lock_level=0)
    widget = dock(viewer, GroupFilterWidget)
    assert widget.groups.count() == len(target.store.groups(0))

    unfiltered = target.layers[0].name
    widget.groups.item(1).setSelected(True)  # group 1
    widget.only_selected()
    settle(qtbot, target)

    t = expected(version, name)
    members = (t["input"] if version == "v09" else t)["groups"]["1"]
    layer = target.layers[0]
    assert visible_object_ids(layer) == set(members)
    np.testing.assert_allclose(
        rows(world_store_coords(layer)), rows(truth_vertices(version, name, members)), atol=1e-3
    )
    assert widget.checked_groups() == [1]
    assert (
        widget.count.text() == f"{len(members)} of {target.store.object_ids(0).size} objects pass"
    )
    assert layer.metadata["zarr_vectors"]["filter"]["passing"] == len(members)
    assert layer.name == unfiltered  # the count is in the docks and metadata, not the name

    widget.set_checked(None)  # all groups again
    settle(qtbot, target)
    assert visible_object_ids(layer) == set(target.store.object_ids(0).tolist())
    assert layer.name == unfiltered and layer.metadata["zarr_vectors"]["filter"] is None


def test_group_labels_follow_the_chosen_attribute(make_napari_viewer, qtbot):
    from napari_zarr_vectors.napari.widgets.filters import GroupFilterWidget

    viewer = make_napari_viewer()
    open_zv(viewer, qtbot, "v09", "streamlines")
    widget = dock(viewer, GroupFilterWidget)
    texts = [widget.groups.item(i).text() for i in range(widget.groups.count())]
    assert texts[0].startswith("left") and texts[1].startswith("right")
    assert "6 objects" in texts[0]
    widget.label_by.value = "weight"
    texts = [widget.groups.item(i).text() for i in range(widget.groups.count())]
    assert texts[0].startswith("0.25") and texts[1].startswith("0.75")


# --------------------------------------------------------------------------------------------
# attribute filter
# --------------------------------------------------------------------------------------------


def test_numeric_range_filter_keeps_exactly_the_objects_in_range(make_napari_viewer, qtbot):
    from napari_zarr_vectors.napari.widgets.filters import AttributeFilterWidget

    viewer = make_napari_viewer()
    target = open_zv(viewer, qtbot, "v09", "polylines", lock_level=0)
    widget = dock(viewer, AttributeFilterWidget)
    row = widget.add_filter("length")
    assert row.slider is not None and row.summary.kind == NUMERIC
    length = f32(expected("v09", "polylines")["input"]["object_attributes"]["length"])
    assert row.slider.min == pytest.approx(float(length.min()))
    assert row.slider.max == pytest.approx(float(length.max()))

    row.set_range(40.0, 92.0)
    settle(qtbot, target)
    want = {i for i, v in enumerate(length) if 40.0 <= v <= 92.0}
    assert 0 < len(want) < len(length)
    layer = target.layers[0]
    assert visible_object_ids(layer) == want
    np.testing.assert_allclose(
        rows(world_store_coords(layer)), rows(truth_vertices("v09", "polylines", want)), atol=1e-3
    )
    assert widget.count.text() == f"{len(want)} of 16 objects pass"

    # a categorical filter ANDs with it
    labels = np.asarray(expected("v09", "polylines")["input"]["object_attributes"]["label"])
    cat = widget.add_filter("label")
    assert cat.values is not None and cat.summary.categories == (0, 1, 2)
    cat.set_values([1])
    settle(qtbot, target)
    assert visible_object_ids(layer) == {i for i in want if labels[i] == 1}

    widget.clear_filters()
    settle(qtbot, target)
    assert visible_object_ids(layer) == set(range(16))

    # dragging the slider applies once it rests (debounced), with its last position
    row = widget.add_filter("length")
    for hi in (150.0, 120.0, 92.0):
        row.slider.value = (40.0, hi)
    qtbot.waitUntil(lambda: widget.count.text() == f"{len(want)} of 16 objects pass")
    settle(qtbot, target)
    assert visible_object_ids(layer) == want


def test_group_and_attribute_filters_combine(make_napari_viewer, qtbot):
    from napari_zarr_vectors.napari.widgets.filters import (
        AttributeFilterWidget,
        GroupFilterWidget,
    )

    viewer = make_napari_viewer()
    target = open_zv(viewer, qtbot, "v07", "points", lock_level=0)
    groups = dock(viewer, GroupFilterWidget)
    attrs = dock(viewer, AttributeFilterWidget)
    groups.set_checked([0, 1])
    attrs.add_filter("score").set_range(-0.5, 10.0)
    settle(qtbot, target)
    t = expected("v07", "points")
    score = np.asarray(t["object_attributes"]["score"])
    members = set(t["groups"]["0"]) | set(t["groups"]["1"])
    want = {i for i in members if score[i] >= -0.5}
    layer = target.layers[0]
    assert visible_object_ids(layer) == want
    assert groups.count.text() == attrs.count.text() == f"{len(want)} of 15 objects pass"


def test_stores_without_groups_or_attributes_say_so(make_napari_viewer, qtbot):
    from napari_zarr_vectors.napari.widgets import filters
    from napari_zarr_vectors.napari.widgets.colour import ColourByWidget
    from napari_zarr_vectors.napari.widgets.pick import NO_OBJECTS, PickWidget

    viewer = make_napari_viewer()
    binned = open_zv(viewer, qtbot, "v07", "points_binned")
    groups = dock(viewer, filters.GroupFilterWidget)
    attrs = dock(viewer, filters.AttributeFilterWidget)
    colour = dock(viewer, ColourByWidget)
    pick = dock(viewer, PickWidget)
    assert groups.message.text() == filters.NO_OBJECTS and not groups.controls.isVisibleTo(groups)
    assert attrs.message.text() == filters.NO_OBJECTS and not attrs.controls.isVisibleTo(attrs)
    assert pick.status.text() == NO_OBJECTS and not pick.isolate_button.isEnabled()
    assert len([c for c in colour.feature.choices if c is not None]) >= 1  # vertex attributes

    no_groups = open_zv(viewer, qtbot, "v09/edge-cases", "cba_demo")
    viewer.layers.selection.active = no_groups.layers[0]
    assert groups.message.text() == filters.NO_GROUPS
    assert attrs.message.text() == filters.NO_ATTRIBUTES
    viewer.layers.selection.active = binned.layers[0]
    assert groups.message.text() == filters.NO_OBJECTS


# --------------------------------------------------------------------------------------------
# colour by
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "name", "feature"),
    [
        ("v09", "points", "label"),  # integer-coded object attribute on Points
        ("v07", "points", "label"),  # string vertex attribute on Points
        ("v09", "polylines", "label"),  # object attribute on Tracks
        ("v09", "lines", "group_id"),  # group on Vectors
        ("v09", "mesh", "label"),  # object attribute on Surface
    ],
)
def test_colour_by_a_categorical_attribute_gives_one_colour_per_category(
    make_napari_viewer, qtbot, version, name, feature
):
    from napari_zarr_vectors.napari.widgets.colour import ColourByWidget

    viewer = make_napari_viewer()
    target = open_zv(viewer, qtbot, version, name, lock_level=0)
    widget = dock(viewer, ColourByWidget)
    spec = widget.colour_by(feature)
    assert spec.categorical
    layer = target.layers[0]
    assert_one_colour_per_category(layer, feature, spec)
    assert "■" in widget.legend.text()
    assert widget.legend.text().count("■") == len(spec.categories)


def test_colour_by_continuous_attribute_with_colormap_and_contrast(make_napari_viewer, qtbot):
    from napari.utils.colormaps import ensure_colormap

    from napari_zarr_vectors.napari.widgets.colour import ColourByWidget

    viewer = make_napari_viewer()
    target = open_zv(viewer, qtbot, "v09", "points", lock_level=0)
    widget = dock(viewer, ColourByWidget)
    spec = widget.colour_by("intensity", colormap="magma", contrast_limits=(0.2, 0.6))
    assert not spec.categorical and spec.contrast_limits == (0.2, 0.6)
    layer = target.layers[0]
    values = layer.features["intensity"].to_numpy()
    want = ensure_colormap("magma").map(np.clip((values - 0.2) / 0.4, 0, 1))
    np.testing.assert_allclose(layer_colours(layer), want, atol=2e-3)
    assert "magma" in widget.legend.text()


# --------------------------------------------------------------------------------------------
# persistence across level changes
# --------------------------------------------------------------------------------------------


def test_filters_and_colours_persist_across_a_zoom_that_changes_level(make_napari_viewer, qtbot):
    from napari_zarr_vectors.napari.widgets.colour import ColourByWidget
    from napari_zarr_vectors.napari.widgets.filters import GroupFilterWidget

    viewer = make_napari_viewer()
    target = open_zv(viewer, qtbot, "v09", "points", vertex_budget=150)
    if isinstance(target, StaticTarget):
        pytest.skip("needs the level-of-detail controller")
    # zoomed out until level-1 bins span 3 screen pixels: a coarse level resolves the view;
    # a 4x zoom from there makes level-1 bins 12 px wide and level-0 bins 6 px: level 0
    viewer.scene.camera.zoom = 3.0 / float(np.max(target.store.level(1).bin_shape))
    settle(qtbot, target)
    groups = dock(viewer, GroupFilterWidget)
    colour = dock(viewer, ColourByWidget)
    groups.set_checked([1])
    spec = colour.colour_by("label")
    settle(qtbot, target)
    members = set(expected("v09", "points")["input"]["groups"]["1"])
    layer = target.layers[0]
    coarse = target.level
    assert coarse > 0
    assert visible_object_ids(layer) <= members and visible_object_ids(layer)
    assert_one_colour_per_category(layer, "label", spec)

    levels = []
    target.events.level_changed.connect(levels.append)
    zoom = viewer.scene.camera.zoom
    viewer.scene.camera.zoom = zoom * 4
    qtbot.waitUntil(lambda: bool(levels) and not target.is_loading, timeout=10_000)
    assert target.level == 0 and levels[-1] == 0
    assert visible_object_ids(layer) <= members and visible_object_ids(layer)
    assert_one_colour_per_category(layer, "label", spec)
    assert layer.metadata["zarr_vectors"]["colour"]["feature"] == "label"

    viewer.scene.camera.zoom = zoom  # back out: the coarse level again
    qtbot.waitUntil(lambda: levels[-1] == coarse and not target.is_loading, timeout=10_000)
    assert visible_object_ids(layer) <= members and visible_object_ids(layer)
    assert_one_colour_per_category(layer, "label", spec)
    assert groups.count.text() == f"{len(members)} of 25 objects pass"


@pytest.mark.parametrize(
    ("version", "name", "feature"),
    [
        ("v09", "polylines", "label"),
        ("v09", "lines", "label"),
        ("v09", "mesh", "label"),
        ("v09", "points", "group_id"),
        ("v09", "streamlines", "group_id"),
    ],
)
def test_colour_and_filter_survive_a_reload_on_every_layer_type(
    make_napari_viewer, qtbot, version, name, feature
):
    from napari_zarr_vectors.napari.widgets.colour import ColourByWidget
    from napari_zarr_vectors.napari.widgets.filters import GroupFilterWidget

    viewer = make_napari_viewer()
    target = open_zv(viewer, qtbot, version, name, lock_level=0)
    colour = dock(viewer, ColourByWidget)
    groups = dock(viewer, GroupFilterWidget)
    spec = colour.colour_by(feature)
    groups.set_checked([1])
    settle(qtbot, target)
    members = set((expected(version, name)["input"])["groups"]["1"])
    for lock in (1, 0):  # a reload at another level and back
        target.lock_level(lock)
        settle(qtbot, target)
        # the layers drawing this level (a mesh level without faces: a points layer)
        drawn = [lay for lay in target.layers if len(lay.features)]
        assert drawn
        for layer in drawn:
            assert visible_object_ids(layer)
            if lock == 0 or name != "lines":
                # coarse `line` levels share metavertices between objects, and a segment
                # takes the object id of its first vertex: it can name an object outside
                # the filter
                assert visible_object_ids(layer) <= members
            assert_one_colour_per_category(layer, feature, spec)


# --------------------------------------------------------------------------------------------
# pick and isolate
# --------------------------------------------------------------------------------------------


def pick_in_2d(viewer, qtbot):
    """The v09 polylines at level 0 in a 2-D view with *Pick and isolate* docked: the target,
    the widget and the first data layer."""
    from napari_zarr_vectors.napari.widgets.pick import PickWidget

    target = open_zv(viewer, qtbot, "v09", "polylines", lock_level=0)
    widget = dock(viewer, PickWidget)
    viewer.dims.ndisplay = 2
    viewer.reset_view()
    return target, widget, target.layers[0]


def test_pick_shows_the_object_under_the_cursor(make_napari_viewer, qtbot):
    viewer = make_napari_viewer()
    target, widget, layer = pick_in_2d(viewer, qtbot)
    # a vertex of object 7, in world coordinates (viewer order: t, z, y, x)
    k = 7
    i = int(np.flatnonzero(layer_object_ids(layer) == k)[0])
    position = np.asarray(layer.data[i, 1:]) * np.asarray(layer.scale)
    hit = widget.pick(position, displayed=list(viewer.dims.displayed))
    assert hit is not None and hit.object_id == k
    assert widget.object_id.value() == k
    text = widget.info.text()
    assert f"Object {k}" in text and "bundle_b" in text and "length" in text

    # a click through the viewer's mouse callback does the same
    class Event:
        type = "mouse_press"
        dims_displayed = list(viewer.dims.displayed)
        view_direction = None

    event = Event()
    event.position = position
    gen = widget._on_drag(viewer, event)
    next(gen)
    event.type = "mouse_release"
    with pytest.raises(StopIteration):
        next(gen)
    assert widget.last_pick is not None and widget.last_pick.object_id == k
    assert widget.pick(position + 1e6) is None
    assert widget.info.text() == "Nothing under the cursor."

    # hovering picks only when asked to
    event.type = "mouse_move"
    widget._on_move(viewer, event)
    assert widget.last_pick is None
    widget.on_hover.setChecked(True)
    widget._last_hover = 0.0
    widget._on_move(viewer, event)
    assert widget.last_pick is not None and widget.last_pick.object_id == k


def test_the_pick_spin_box_names_no_object_before_a_pick(make_napari_viewer, qtbot):
    from napari_zarr_vectors.napari.widgets.pick import NO_OBJECT_CHOSEN, PickWidget

    viewer = make_napari_viewer()
    target = open_zv(viewer, qtbot, "v09", "polylines", lock_level=0)
    widget = dock(viewer, PickWidget)
    ids = browse_state_of(target).table.ids
    assert widget.object_id.text() == NO_OBJECT_CHOSEN and widget.object_chosen() is None
    assert not widget.isolate_button.isEnabled()
    assert widget.object_id.minimum() == int(ids.min()) - 1
    layer = target.layers[0]
    viewer.dims.ndisplay = 2
    viewer.reset_view()
    i = int(np.flatnonzero(layer_object_ids(layer) == 7)[0])
    widget.pick(np.asarray(layer.data[i, 1:]) * np.asarray(layer.scale))
    assert widget.object_chosen() == 7 and widget.object_id.text() == "object 7"
    assert widget.isolate_button.isEnabled()
    widget.object_id.setValue(int(ids.min()))  # the smallest id is an object, not "none"
    assert widget.object_chosen() == int(ids.min())


def test_hover_picks_where_the_cursor_stops(make_napari_viewer, qtbot):
    """Moves faster than the hover interval are not all picked, but the last one is."""
    viewer = make_napari_viewer()
    target, widget, layer = pick_in_2d(viewer, qtbot)
    widget.on_hover.setChecked(True)

    class Move:
        type = "mouse_move"
        dims_displayed = list(viewer.dims.displayed)
        view_direction = None

    def at(k):
        event = Move()
        i = int(np.flatnonzero(layer_object_ids(layer) == k)[0])
        event.position = np.asarray(layer.data[i, 1:]) * np.asarray(layer.scale)
        return event

    widget._on_move(viewer, at(7))
    assert widget.last_pick.object_id == 7
    widget._on_move(viewer, at(3))  # within the interval: not picked at once
    assert widget.last_pick.object_id == 7
    qtbot.waitUntil(lambda: widget.last_pick.object_id == 3, timeout=2_000)
    assert "Object 3" in widget.info.text() and widget.object_chosen() == 3


def test_isolate_loads_the_whole_object_at_full_resolution_even_outside_the_view(
    make_napari_viewer, qtbot
):
    from napari_zarr_vectors.napari.widgets.pick import PickWidget

    viewer = make_napari_viewer()
    target = open_zv(viewer, qtbot, "v09", "polylines")
    widget = dock(viewer, PickWidget)
    k = 3
    want = truth_vertices("v09", "polylines", [k])
    if not isinstance(target, StaticTarget):
        # full resolution, but zoomed into a corner of a 2-D slice: only part of object k
        # (if any) is loaded
        target.lock_level(0)
        viewer.dims.ndisplay = 2
        viewer.reset_view()
        camera = viewer.scene.camera
        lo = np.asarray(target.store.bounds[0])[::-1]
        camera.center = tuple(lo[-2:] + 5.0)
        camera.zoom = camera.zoom * 8  # the controller schedules its refresh at once
        settle(qtbot, target)
        ids = layer_object_ids(target.layers[0])
        loaded = 0 if ids is None else int((ids == k).sum())
        assert loaded < len(want)
    before = len(viewer.layers)
    # isolate starts its worker itself: wait for the layer it adds (a wait on the worker's
    # finished signal, connected after the start, can miss a fast worker)
    assert widget.isolate(k) is not None
    qtbot.waitUntil(lambda: len(viewer.layers) == before + 1, timeout=15_000)
    isolated = widget.isolated_layers()
    assert len(isolated) == 1
    layer = isolated[0]
    assert layer.metadata["zarr_vectors"]["role"] == "isolated"
    assert layer.metadata["zarr_vectors"]["level"] == 0
    assert set(layer_object_ids(layer).tolist()) == {k}
    np.testing.assert_allclose(rows(world_store_coords(layer)), rows(want), atol=1e-3)
    assert len(world_store_coords(layer)) == len(want)
    # the isolated layer is highlighted and does not take over the browse widgets
    assert viewer.layers.selection.active in target.layers
    widget.clear()
    assert widget.isolated_layers() == []
    assert len(viewer.layers) == before


def test_isolate_a_point_cloud_object(make_napari_viewer, qtbot):
    from napari_zarr_vectors.napari.widgets.pick import PickWidget

    viewer = make_napari_viewer()
    open_zv(viewer, qtbot, "v07", "points")
    widget = dock(viewer, PickWidget)
    assert widget.isolate(11) is not None  # its worker starts at once: wait for the layer
    qtbot.waitUntil(lambda: len(widget.isolated_layers()) == 1, timeout=15_000)
    layer = widget.isolated_layers()[0]
    np.testing.assert_allclose(
        rows(world_store_coords(layer)), rows(truth_vertices("v07", "points", [11])), atol=1e-3
    )


# --------------------------------------------------------------------------------------------
# docs screenshot
# --------------------------------------------------------------------------------------------


def test_browsing_screenshot(make_napari_viewer, qtbot):
    """Filter streamlines by group and length, colour by group, isolate one (docs image)."""
    from napari_zarr_vectors.napari.widgets.colour import ColourByWidget
    from napari_zarr_vectors.napari.widgets.filters import (
        AttributeFilterWidget,
        GroupFilterWidget,
    )
    from napari_zarr_vectors.napari.widgets.pick import PickWidget

    viewer = make_napari_viewer(show=True)
    target = open_zv(viewer, qtbot, "v09", "polylines", lock_level=0)
    groups = dock(viewer, GroupFilterWidget)
    attrs = dock(viewer, AttributeFilterWidget)
    colour = dock(viewer, ColourByWidget)
    pick = dock(viewer, PickWidget)
    groups.set_checked([0, 1])
    attrs.add_filter("length").set_range(30.0, 160.0)
    colour.colour_by("group_id")
    settle(qtbot, target)
    assert pick.isolate(2) is not None  # its worker starts at once: wait for the layer
    qtbot.waitUntil(lambda: len(pick.isolated_layers()) == 1, timeout=15_000)
    # the isolated object takes the store's Colour-by choice: its group's colour
    from napari_zarr_vectors.napari.colour.live import colour_spec_of

    isolated = pick.isolated_layers()[0]
    assert colour_spec_of(isolated) == colour_spec_of(target.layers[0])
    assert colour_spec_of(isolated).feature == "group_id"
    viewer.dims.ndisplay = 3
    viewer.scene.camera.angles = (-20.0, 30.0, -60.0)
    viewer.reset_view(reset_camera_angle=False)
    viewer.layers.selection.active = pick.isolated_layers()[0]  # widgets stay on the store
    assert groups.target is target and attrs.filter_rows
    settle(qtbot, target)
    a_turn(qtbot)  # the frame of the last swap is drawn in a turn of its own
    image = viewer.screenshot(canvas_only=False, flash=False)
    assert image.shape[0] > 100
    save_docs_image(image, "browsing.png", max_bytes=400_000, thumbnail=(960, 720))


def test_session_is_shared_between_widgets(make_napari_viewer, qtbot):
    from napari_zarr_vectors.napari.widgets.filters import (
        AttributeFilterWidget,
        GroupFilterWidget,
    )

    viewer = make_napari_viewer()
    target = open_zv(viewer, qtbot, "v09", "points")
    g = dock(viewer, GroupFilterWidget)
    a = dock(viewer, AttributeFilterWidget)
    assert g.session is a.session is browse_state_of(target)


def test_layers_without_a_controller_are_filtered_and_coloured_directly(make_napari_viewer, qtbot):
    """Layers made from reader tuples without a controller get a StaticTarget: Points are
    filtered through ``shown``, Tracks by slicing their loaded data."""
    from napari.layers import Layer

    from napari_zarr_vectors.napari.npe2.reader import read_zarr_vectors
    from napari_zarr_vectors.napari.widgets.colour import ColourByWidget
    from napari_zarr_vectors.napari.widgets.filters import GroupFilterWidget

    viewer = make_napari_viewer()
    for version, name in (("v07", "points"), ("v09", "polylines")):
        for data, kwargs, kind in read_zarr_vectors(
            DATA / version / f"{name}.zarrvectors", level=0
        ):
            kwargs["metadata"]["zarr_vectors"].pop("session", None)
            viewer.add_layer(Layer.create(data, kwargs, kind))
    points, tracks = viewer.layers[1], viewer.layers[3]
    groups = dock(viewer, GroupFilterWidget)
    colour = dock(viewer, ColourByWidget)
    for layer, version, name in ((points, "v07", "points"), (tracks, "v09", "polylines")):
        viewer.layers.selection.active = layer
        assert isinstance(groups.target, StaticTarget)
        spec = colour.colour_by("group_id")
        groups.set_checked([1])
        t = expected(version, name)
        members = (t["input"] if version == "v09" else t)["groups"]["1"]
        assert visible_object_ids(layer) == set(members)
        np.testing.assert_allclose(
            rows(world_store_coords(layer)),
            rows(truth_vertices(version, name, members)),
            atol=1e-3,
        )
        assert_one_colour_per_category(layer, "group_id", spec)
        groups.set_checked(None)
        assert len(world_store_coords(layer)) == len(truth_vertices(version, name, range(99)))


@pytest.mark.parametrize(
    ("version", "name"),
    [("v07", "points"), ("v09", "polylines"), ("v07", "mesh"), ("v09", "lines")],
)
def test_default_restores_the_opening_colours_without_a_controller(
    make_napari_viewer, qtbot, version, name
):
    """Layers without a controller (a StaticTarget): an attribute chosen in Colour by, then
    "(default)", draws the colours the layer opened with again (every row), with its
    default legend and colour_by, also after a filter came and went."""
    from napari.layers import Layer

    from napari_zarr_vectors.napari.colour.live import colour_spec_of
    from napari_zarr_vectors.napari.npe2.reader import read_zarr_vectors
    from napari_zarr_vectors.napari.widgets.colour import ColourByWidget
    from napari_zarr_vectors.napari.widgets.filters import GroupFilterWidget

    viewer = make_napari_viewer()
    for data, kwargs, kind in read_zarr_vectors(DATA / version / f"{name}.zarrvectors", level=0):
        kwargs["metadata"]["zarr_vectors"].pop("session", None)
        viewer.add_layer(Layer.create(data, kwargs, kind))
    layer = next(
        lay for lay in viewer.layers if lay.metadata["zarr_vectors"].get("role") != "bounds"
    )
    viewer.layers.selection.active = layer
    colour = dock(viewer, ColourByWidget)
    groups = dock(viewer, GroupFilterWidget)
    assert isinstance(colour.target, StaticTarget)
    opened, legend = layer_colours(layer).copy(), colour.legend.text()
    default = layer.metadata["zarr_vectors"].get("colour_by")
    offered = [c for c in colour.feature.choices if c is not None and c != default]
    spec = colour.colour_by(offered[0], mode="continuous")
    assert spec is not None
    assert not np.allclose(layer_colours(layer), opened, atol=1e-3)  # a change to undo
    if groups.session.table.groups:  # a filter while coloured, then none
        groups.set_checked([sorted(groups.session.table.groups)[0]])
        groups.set_checked(None)
    colour.feature.value = None
    np.testing.assert_allclose(layer_colours(layer), opened, atol=1e-6)
    assert colour.legend.text() == legend
    assert layer.metadata["zarr_vectors"].get("colour_by") == default
    assert colour_spec_of(layer) is None


def test_widgets_are_contributed_to_the_plugins_menu(make_napari_viewer, qtbot):
    from napari_zarr_vectors.napari.widgets import colour, filters, pick, store_panel

    viewer = make_napari_viewer()
    open_zv(viewer, qtbot, "v09", "points")
    classes = {
        "Store panel": store_panel.StorePanel,
        "Group filter": filters.GroupFilterWidget,
        "Object attribute filter": filters.AttributeFilterWidget,
        "Colour by": colour.ColourByWidget,
        "Pick and isolate": pick.PickWidget,
    }
    for name, cls in classes.items():
        _, widget = viewer.window.add_plugin_dock_widget("napari-zarr-vectors", name)
        assert isinstance(widget, cls)
        active = viewer.layers.selection.active
        assert widget.layer is active  # not napari's proxy of it
        assert not isinstance(widget.target, StaticTarget)  # the store's controller


def test_filters_are_kept_per_store_when_the_selection_moves(make_napari_viewer, qtbot):
    from napari_zarr_vectors.napari.widgets.filters import (
        AttributeFilterWidget,
        GroupFilterWidget,
    )

    viewer = make_napari_viewer()
    first = open_zv(viewer, qtbot, "v09", "polylines")
    groups = dock(viewer, GroupFilterWidget)
    attrs = dock(viewer, AttributeFilterWidget)
    groups.set_checked([0])
    attrs.add_filter("length").set_range(40.0, 200.0)
    first_count = attrs.count.text()
    assert first_count.endswith("of 16 objects pass")
    second = open_zv(viewer, qtbot, "v09", "streamlines")
    viewer.layers.selection.active = second.layers[0]
    assert groups.checked_groups() == [0, 1] and not attrs.filter_rows
    assert groups.count.text() == "all 12 objects shown"
    viewer.layers.selection.active = first.layers[0]
    assert groups.checked_groups() == [0]
    assert list(attrs.filter_rows) == ["length"]
    restored = attrs.filter_rows["length"].current()
    assert isinstance(restored, RangeFilter) and restored.lo == pytest.approx(40.0)
    assert attrs.count.text() == first_count
