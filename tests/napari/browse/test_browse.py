"""Pure browse logic (napari_zarr_vectors.napari.browse.table): object tables, filters, group labels,
colour tables, picking; and the Qt-free layer glue (browse_layers) on layers built by the
reader, without a viewer."""

from __future__ import annotations

import numpy as np
import pytest
from _zv_napari import DATA, expected, f32, layer_colours, map_categories

import napari_zarr_vectors as nzv
from napari_zarr_vectors.napari.browse.filters import (
    FilterState,
    GroupFilter,
    RangeFilter,
    ValueFilter,
    evaluate_filters,
)
from napari_zarr_vectors.napari.browse.groups import (
    GROUP_ID_LABEL,
    GROUP_NAMES,
    default_group_label,
    group_label_choices,
    group_labels,
)
from napari_zarr_vectors.napari.browse.pick import nearest_row
from napari_zarr_vectors.napari.browse.store_summary import store_summary
from napari_zarr_vectors.napari.browse.table import HISTOGRAM_BINS, ObjectTable, summarise
from napari_zarr_vectors.napari.browse.targets import isolate_layer_data, only_objects
from napari_zarr_vectors.napari.colour.live import apply_colour, napari_colormap
from napari_zarr_vectors.napari.colour.spec import (
    MISSING_COLOUR,
    ColourSpec,
    categorical_colours,
    continuous_colours,
    palette,
    value_counts,
)
from napari_zarr_vectors.napari.values import CATEGORICAL, NUMERIC


def store(version: str, name: str):
    return nzv.open_store(DATA / version / f"{name}.zarrvectors")


# --------------------------------------------------------------------------------------------
# object table
# --------------------------------------------------------------------------------------------


def test_object_table_of_v09_points_matches_the_writer_input():
    truth = expected("v09", "points")["input"]
    table = ObjectTable.from_store(store("v09", "points"))
    assert table.ids.tolist() == list(range(25))
    np.testing.assert_array_equal(table.attributes["label"], truth["object_attributes"]["label"])
    np.testing.assert_array_equal(
        f32(table.attributes["score"]), f32(truth["object_attributes"]["score"])
    )
    assert {g: sorted(m.tolist()) for g, m in table.groups.items()} == {
        int(g): sorted(m) for g, m in truth["groups"].items()
    }
    assert table.group_counts() == {0: 10, 1: 15, 2: 4}


def test_multichannel_object_attributes_become_channel_columns():
    table = ObjectTable.from_store(store("v07", "points"))
    assert {"color[0]", "color[1]", "color[2]", "score"} <= set(table.attributes)
    truth = np.asarray(expected("v07", "points")["object_attributes"]["color"], np.float32)
    np.testing.assert_array_equal(table.attributes["color[1]"], truth[:, 1])


def test_a_store_without_objects_gives_an_empty_table():
    table = ObjectTable.from_store(store("v07", "points_binned"))
    assert table.n_objects == 0
    assert not table.has_groups and not table.attributes
    state = FilterState(table)
    assert state.allowed() is None
    assert state.describe() == "all 0 objects shown"


# --------------------------------------------------------------------------------------------
# filters
# --------------------------------------------------------------------------------------------


def test_group_filter_selects_exactly_the_group_members():
    table = ObjectTable.from_store(store("v07", "points"))
    truth = expected("v07", "points")["groups"]
    for g, members in truth.items():
        allowed = evaluate_filters(table, [GroupFilter((int(g),))])
        assert allowed.tolist() == sorted(members)
    # several groups: the union; overlapping group 3 (objects 0, 5, 10) adds nothing new
    allowed = evaluate_filters(table, [GroupFilter((0, 3))])
    assert allowed.tolist() == sorted(set(truth["0"]) | set(truth["3"]))


def test_group_filter_can_keep_objects_in_no_group():
    ids = np.arange(6)
    table = ObjectTable(ids, groups={0: np.array([0, 1]), 1: np.array([2])})
    assert evaluate_filters(table, [GroupFilter((1,), ungrouped=True)]).tolist() == [
        2,
        3,
        4,
        5,
    ]
    assert evaluate_filters(table, [GroupFilter(())]).tolist() == []


def test_range_filter_keeps_exactly_the_objects_in_range():
    truth = expected("v09", "polylines")["input"]["object_attributes"]["length"]
    table = ObjectTable.from_store(store("v09", "polylines"))
    lo, hi = 40.0, 92.0
    allowed = evaluate_filters(table, [RangeFilter("length", lo, hi)])
    want = [i for i, v in enumerate(f32(truth)) if lo <= v <= hi]
    assert allowed.tolist() == want
    assert 0 < len(want) < len(truth)


def test_filters_combine_with_and():
    table = ObjectTable.from_store(store("v09", "polylines"))
    truth = expected("v09", "polylines")["input"]
    length = f32(truth["object_attributes"]["length"])
    label = np.asarray(truth["object_attributes"]["label"])
    group1 = set(truth["groups"]["1"])
    filters = [
        GroupFilter((1,)),
        RangeFilter("length", 30.0, 120.0),
        ValueFilter("label", (0, 2)),
    ]
    want = [
        i
        for i in range(len(length))
        if i in group1 and 30 <= length[i] <= 120 and label[i] in (0, 2)
    ]
    assert evaluate_filters(table, filters).tolist() == want
    state = FilterState(table, filters[0], {"length": filters[1], "label": filters[2]})
    assert state.allowed().tolist() == want
    assert state.describe() == f"{len(want)} of 16 objects pass"


def test_missing_values_fail_an_active_filter():
    ids = np.arange(4)
    values = np.array([1.0, np.nan, 3.0, 4.0])
    present = np.array([True, True, True, False])
    table = ObjectTable(ids, {"v": values}, {"v": present & ~np.isnan(values)})
    assert evaluate_filters(table, [RangeFilter("v", 0, 10)]).tolist() == [0, 2]
    strings = np.array(["a", None, "b", "a"], dtype=object)
    table = ObjectTable(ids, {"s": strings}, {"s": ~np.equal(strings, None)})
    assert evaluate_filters(table, [ValueFilter("s", ("a",))]).tolist() == [0, 3]


def test_filters_on_a_million_objects_keep_exactly_the_passing_objects():
    rng = np.random.default_rng(0)
    n = 1_000_000
    ids = np.arange(n)
    table = ObjectTable(
        ids,
        {"length": rng.random(n) * 200, "label": rng.integers(0, 10, n)},
        {"length": np.ones(n, bool), "label": np.ones(n, bool)},
        groups={g: ids[g::7] for g in range(7)},
    )
    allowed = evaluate_filters(
        table,
        [
            GroupFilter((1, 3)),
            RangeFilter("length", 50, 150),
            ValueFilter("label", (2, 3, 4)),
        ],
    )
    mask = (
        np.isin(ids % 7, [1, 3])
        & (table.attributes["length"] >= 50)
        & (table.attributes["length"] <= 150)
        & np.isin(table.attributes["label"], [2, 3, 4])
    )
    np.testing.assert_array_equal(allowed, ids[mask])


# --------------------------------------------------------------------------------------------
# summaries and group labels
# --------------------------------------------------------------------------------------------


def test_summaries_pick_sliders_for_numbers_and_lists_for_codes():
    table = ObjectTable.from_store(store("v09", "polylines"))
    length = summarise("length", table.attributes["length"], table.present["length"])
    label = summarise("label", table.attributes["label"], table.present["label"])
    truth = f32(expected("v09", "polylines")["input"]["object_attributes"]["length"])
    assert length.kind == NUMERIC
    assert (length.lo, length.hi) == (float(truth.min()), float(truth.max()))
    assert length.histogram.sum() == 16 and len(length.sparkline()) == HISTOGRAM_BINS
    assert label.kind == CATEGORICAL
    assert label.categories == (0, 1, 2)
    assert sum(label.counts) == 16
    strings = summarise("s", np.array(["x", "y", "x"], dtype=object))
    assert strings.kind == CATEGORICAL and strings.categories == ("x", "y")
    many = summarise("id", np.arange(100))
    assert many.kind == NUMERIC


def test_group_labels_use_names_else_string_attributes_else_ids():
    named = ObjectTable.from_store(store("v09", "polylines"))
    assert group_labels(named) == {0: "bundle_a", 1: "bundle_b", 2: "hand_made"}
    assert group_labels(named, "weight") == {0: "1", 1: "2", 2: "3"}
    assert group_label_choices(named)[0] == GROUP_NAMES
    plain = ObjectTable.from_store(store("v07", "polylines"))
    assert default_group_label(plain) == GROUP_ID_LABEL
    assert group_labels(plain) == {0: "group 0", 1: "group 1", 2: "group 2"}
    assert group_labels(plain, "gcode") == {0: "11", 1: "22", 2: "33"}
    multi = ObjectTable.from_store(store("v07", "points"))
    assert group_labels(multi, "code")[1] == "(3, 4)"
    strings = ObjectTable(
        np.arange(2),
        groups={0: np.array([0]), 1: np.array([1])},
        group_attributes={"side": np.array(["left", "right"], dtype=object), "w": np.ones(2)},
    )
    assert default_group_label(strings) == "side"
    assert group_labels(strings) == {0: "left", 1: "right"}


def test_store_summary_lists_levels_attributes_and_groups():
    s = store_summary(store("v09", "polylines"))
    assert s.geometry_type == "polyline" and s.axes == ("x", "y", "z")
    assert [lv.vertex_count for lv in s.levels] == [322, 130, 36]
    assert [lv.object_count for lv in s.levels][0] == 16
    assert [lv.bin_shape for lv in s.levels][1] == (10.0, 10.0, 10.0)
    assert ("length", "number") in s.object_attributes
    assert ("intensity", "number") in s.vertex_attributes
    assert s.groups == ((0, "bundle_a", 5), (1, "bundle_b", 11), (2, "hand_made", 2))
    empty = store_summary(store("v07", "points_binned"))
    assert empty.n_objects == 0 and empty.groups == () and empty.object_attributes == ()


# --------------------------------------------------------------------------------------------
# colour
# --------------------------------------------------------------------------------------------


def test_categorical_colours_give_one_distinct_colour_per_category():
    values = np.array([3, 1, 3, 7, 1, 1])
    spec = categorical_colours(values, "label")
    assert spec.categories == (1, 3, 7)
    rgba = map_categories(spec, values)
    assert len({tuple(c) for c in rgba}) == 3
    for v in (1, 3, 7):
        assert len({tuple(c) for c in rgba[values == v]}) == 1
    assert spec.legend(value_counts(values)) == [
        ("1", spec.colours[0], 3),
        ("3", spec.colours[1], 2),
        ("7", spec.colours[2], 1),
    ]
    strings = categorical_colours(np.array(["soma", "axon", None], dtype=object), "kind")
    assert strings.categories == ("axon", "soma")
    assert tuple(map_categories(strings, np.array([None], dtype=object))[0]) == pytest.approx(
        MISSING_COLOUR
    )


def test_palette_colours_are_distinct_beyond_the_fixed_palette():
    rgba = palette(300)
    assert rgba.shape == (300, 4)
    assert len({tuple(np.round(c, 4)) for c in rgba}) == 300


def test_step_colormap_puts_each_category_alone_in_its_bin():
    spec = categorical_colours(np.array([0, 5, 6, 100]), "v")
    cmap, (lo, hi) = napari_colormap(spec)
    values = np.array([0, 5, 6, 100], dtype=np.float64)
    rgba = cmap.map((values - lo) / (hi - lo))
    np.testing.assert_allclose(rgba, np.asarray(spec.colours), atol=1e-6)


def test_colour_spec_round_trips_through_layer_metadata():
    spec = categorical_colours(np.array(["a", "b"], dtype=object), "s")
    assert ColourSpec.from_dict(spec.to_dict()) == spec
    cont = continuous_colours(np.array([1.0, 5.0]), "x", "magma").with_contrast(2, 3)
    assert ColourSpec.from_dict(cont.to_dict()) == cont


# --------------------------------------------------------------------------------------------
# picking
# --------------------------------------------------------------------------------------------


def test_nearest_row_in_2d_uses_displayed_axes_and_the_slab():
    pts = np.array([[0.0, 10.0, 10.0], [5.0, 10.5, 10.0], [0.0, 30.0, 30.0]])
    # the second point is nearer on screen but outside the slab around z = 0
    assert nearest_row(pts, (0.0, 10.4, 10.0), (1, 2), 2.0, slab=(1.0, 0, 0)) == 0
    assert nearest_row(pts, (5.0, 10.4, 10.0), (1, 2), 2.0, slab=(1.0, 0, 0)) == 1
    assert nearest_row(pts, (0.0, 20.0, 20.0), (1, 2), 2.0, slab=(1.0, 0, 0)) is None
    # leading viewer axes (e.g. Tracks' time) are ignored
    assert nearest_row(pts, (0.0, 0.0, 30.0, 29.0), (2, 3), 2.0) == 2


def test_nearest_row_in_3d_takes_the_hit_nearest_the_camera():
    pts = np.array([[0.0, 0.0, 0.0], [10.0, 0.0, 0.0], [10.0, 5.0, 0.0]])
    # a ray along +z (axis 0) through (y, x) = (0, 0) hits rows 0 and 1; row 0 is nearer
    hit = nearest_row(pts, (-100.0, 0.0, 0.0), (0, 1, 2), 1.0, view_direction=(1.0, 0, 0))
    assert hit == 0
    hit = nearest_row(pts, (100.0, 0.0, 0.0), (0, 1, 2), 1.0, view_direction=(-1.0, 0, 0))
    assert hit == 1


# --------------------------------------------------------------------------------------------
# layer glue without a viewer
# --------------------------------------------------------------------------------------------


def test_only_object_keeps_one_objects_rows_and_remaps_edges():
    s = store("v09", "graph")
    g = s.read(0)
    one = only_objects(g, 2)
    assert set(one.vertex_object_ids.tolist()) == {2}
    assert one.vertex_count == int((g.vertex_object_ids == 2).sum())
    assert one.edges.max() < one.vertex_count
    edges_of_2 = (g.vertex_object_ids[g.edges] == 2).all(1).sum()
    assert len(one.edges) == edges_of_2


@pytest.mark.parametrize(
    ("version", "name", "object_id"),
    [
        ("v07", "points", 7),
        ("v09", "points", 3),
        ("v07", "polylines", 4),
        ("v09", "streamlines", 9),
    ],
)
def test_isolate_reads_exactly_the_whole_object(version, name, object_id):
    s = store(version, name)
    layers = isolate_layer_data(s, object_id)
    data, kwargs, kind = layers[-1]
    meta = kwargs["metadata"]["zarr_vectors"]
    assert meta["role"] == "isolated" and meta["object_id"] == object_id and meta["level"] == 0
    scale = np.asarray(kwargs["scale"])
    coords = np.asarray(data)[:, 2:] * scale[1:] if kind == "tracks" else np.asarray(data) * scale
    got = _rows(coords[:, ::-1])
    np.testing.assert_allclose(got, _rows(object_vertices(version, name, object_id)), atol=1e-4)


def test_isolated_layer_names_say_which_object_and_part_and_fit_the_layer_list():
    from napari_zarr_vectors.napari.browse.targets import MAX_LAYER_NAME, isolated_names

    parts = ["skeleton", "nodes"]
    assert isolated_names(parts, object_id=2, name="DA1") == [
        "DA1 skeleton (isolated)",
        "DA1 nodes (isolated)",
    ]
    # a name too long for every part: the object's id, the same in every part
    assert isolated_names(parts, object_id=2, name="DA1_lPN_R") == [
        "#2 skeleton (isolated)",
        "#2 nodes (isolated)",
    ]
    assert isolated_names(["nodes"], object_id=2) == ["object 2 nodes (isolated)"]
    assert isolated_names(["streamline"], object_id=12) == ["#12 streamline (isolated)"]
    assert isolated_names(["mesh"], n=3) == ["3 objects mesh (isolated)"]
    assert isolated_names(["streamline"], n=249) == ["249× streamline (isolated)"]
    for names in (
        isolated_names(parts, object_id=2, name="Uniglomerular mALT DA1"),
        isolated_names(["streamline"], object_id=299),
        isolated_names(["mesh", "vertices"], object_id=4),
    ):
        assert all(len(n) <= MAX_LAYER_NAME for n in names)


def test_isolated_skeletons_keep_their_object_colours(neurons_store):
    from napari_zarr_vectors.napari.colour.defaults import categorical_rgba

    path, _ = neurons_store
    s = nzv.open_store(path)

    def by_part(ids):
        return {
            kw["metadata"]["zarr_vectors"]["source_role"]: kw
            for _, kw, _ in isolate_layer_data(s, ids)
        }

    every = by_part([0, 1, 2, 3, 4])
    for oid in (1, 3):
        built = by_part(oid)
        # the colour the store's layers draw this neuron in (one per neuron), not white
        want = categorical_rgba(np.array([oid]))[0]
        assert np.allclose(np.asarray(built["edges"]["edge_color"]), want)
        assert np.allclose(np.asarray(built["nodes"]["face_color"]), want)
        assert not np.allclose(want[:3], 1.0)
        assert built["edges"]["blending"] == built["nodes"]["blending"] == "translucent"
        # nodes the size the store draws them (its soma a bead among beads, not a blob)
        assert built["nodes"]["size"] == every["nodes"]["size"]
        assert built["edges"]["name"] == f"#{oid} skeleton (isolated)"
        assert built["nodes"]["name"] == f"#{oid} nodes (isolated)"


def test_isolate_an_unknown_object_raises():
    with pytest.raises(KeyError):
        isolate_layer_data(store("v07", "points"), 999)


def test_apply_colour_on_layers_built_by_the_reader():
    from napari.layers import Layer

    from napari_zarr_vectors.napari.npe2.reader import read_zarr_vectors

    for version, name, feature in [
        ("v09", "points", "label"),
        ("v09", "polylines", "label"),
        ("v09", "lines", "label"),
        ("v09", "mesh", "label"),
    ]:
        data, kwargs, kind = read_zarr_vectors(DATA / version / f"{name}.zarrvectors", level=0)[1]
        layer = Layer.create(data, kwargs, kind)
        values = layer.features[feature].to_numpy()
        spec = categorical_colours(values, feature)
        apply_colour(layer, spec)
        colours = layer_colours(layer)
        per_value = {v: np.unique(colours[values == v], axis=0) for v in np.unique(values)}
        assert all(len(c) == 1 for c in per_value.values()), (name, per_value)
        want = map_categories(spec, np.array(list(per_value)))
        np.testing.assert_allclose(
            np.concatenate(list(per_value.values())), want, atol=1e-6, err_msg=name
        )
        assert layer.metadata["zarr_vectors"]["colour"]["feature"] == feature


# --------------------------------------------------------------------------------------------
# ground truth helpers
# --------------------------------------------------------------------------------------------


def object_vertices(version: str, name: str, object_id: int) -> np.ndarray:
    """Store coordinates of every vertex of ``object_id``, from the writer's input."""
    truth = expected(version, name)
    if version == "v09":
        src = truth["input"]
        if "polylines" in src:
            return f32(src["polylines"][object_id])
        pos = f32(src["positions"])
        return pos[np.asarray(src["vertex_object_ids"]) == object_id]
    if "polylines" in truth:
        return f32(truth["polylines"][object_id])
    pos = f32(truth["positions"])
    return pos[np.asarray(truth["object_ids"]) == object_id]


def _rows(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a, np.float64)
    return a[np.lexsort(a.T[::-1])]


@pytest.mark.parametrize(
    ("version", "name", "allowed"),
    [("v09", "lines", [20, 21, 40]), ("v09", "mesh", [1, 2]), ("v09", "graph", [0, 3])],
)
def test_static_target_slices_layers_without_shown(version, name, allowed):
    """Layers without a controller: Vectors and Surface are filtered by slicing their data,
    restored when the filter clears; the colour choice is re-applied after slicing."""
    from napari.layers import Layer

    from napari_zarr_vectors.napari.browse.static_filter import layer_object_ids
    from napari_zarr_vectors.napari.browse.targets import StaticTarget
    from napari_zarr_vectors.napari.npe2.reader import read_zarr_vectors

    path = DATA / version / f"{name}.zarrvectors"
    layers = [Layer.create(*t) for t in read_zarr_vectors(path, level=0)[1:]]
    before = [len(layer_object_ids(layer)) for layer in layers]
    target = StaticTarget(str(path), layers)
    for layer in layers:
        apply_colour(layer, categorical_colours(layer.features["label"].to_numpy(), "label"))
    target.set_object_filter(np.array(allowed))
    for layer in layers:
        ids = layer_object_ids(layer)
        if type(layer).__name__ == "Points":
            ids = ids[layer.shown]
        assert set(ids.tolist()) == set(allowed)
        colours = layer_colours(layer)
        labels = layer.features["label"].to_numpy()
        for v in np.unique(labels):
            assert len(np.unique(colours[labels == v], axis=0)) == 1
    target.set_object_filter(None)
    assert [len(layer_object_ids(layer)) for layer in layers] == before


def test_static_target_filters_2d_shapes():
    from napari.layers import Layer

    from napari_zarr_vectors.format.geometry import Geometry
    from napari_zarr_vectors.napari.browse.static_filter import layer_object_ids
    from napari_zarr_vectors.napari.browse.targets import StaticTarget
    from napari_zarr_vectors.napari.layerdata.build import StoreInfo, layers_from_geometry

    pos = np.random.default_rng(0).random((30, 2)) * 10
    geometry = Geometry(
        "polyline",
        0,
        pos,
        vertex_object_ids=np.repeat(np.arange(6), 5),
        paths=[np.arange(i * 5, i * 5 + 5) for i in range(6)],
        path_object_ids=np.arange(6),
    )
    info = StoreInfo(
        path="/x.zarrvectors",
        name="x",
        geometry_type="polyline",
        axes=("x", "y"),
        units=(None, None),
        bounds=(np.zeros(2), np.full(2, 10.0)),
        object_attributes={"kind": np.array([0, 1, 0, 1, 2, 2])},
    )
    ((data, kwargs, kind),) = layers_from_geometry(geometry, info, bounds_layer=False)
    layer = Layer.create(data, kwargs, kind)
    assert kind == "shapes"
    spec = categorical_colours(np.array([0, 1, 2]), "kind")
    apply_colour(layer, spec)
    target = StaticTarget("/x.zarrvectors", [layer])
    target.set_object_filter(np.array([1, 4, 5]))
    assert layer_object_ids(layer).tolist() == [1, 4, 5]
    assert set(layer.shape_type) == {"path"}
    np.testing.assert_allclose(
        layer_colours(layer), map_categories(spec, np.array([1, 2, 2])), atol=1e-6
    )
    np.testing.assert_allclose(layer.data[1], pos[20:25][:, ::-1] * 1.0 / layer.scale)
    target.set_object_filter(None)
    assert layer_object_ids(layer).tolist() == list(range(6))


def test_a_point_grid_finds_what_nearest_row_finds_among_every_point():
    from napari_zarr_vectors.napari.browse.pick import PointGrid

    rng = np.random.default_rng(7)
    pts = rng.normal(50, 20, size=(20_000, 3))
    pts[:100] = pts[100:200] + 0.01  # near-duplicates: ties resolved alike
    grid = PointGrid(pts)
    found = 0
    for _ in range(200):
        position = np.r_[0.0, rng.uniform(0, 100, 3)]  # a leading time axis, as a viewer has
        ray = rng.normal(size=3)
        for kwargs, displayed in (
            ({"view_direction": ray}, (1, 2, 3)),
            ({"slab": (0.0, 1.5, 0.0, 0.0)}, (2, 3)),
            ({"slab": None}, (1, 3)),
        ):
            want = nearest_row(pts, position, displayed, 2.0, **kwargs)
            assert grid.nearest(position, displayed, 2.0, **kwargs) == want
            found += want is not None
            below = 10_000
            first = nearest_row(pts[:below], position, displayed, 2.0, **kwargs)
            assert grid.nearest(position, displayed, 2.0, below=below, **kwargs) == first
    assert found > 100  # the queries do find points
