"""Selecting objects by a region drawn on the canvas (a box, a lasso), and what a selection
does: show only it, dim the rest, isolate it, export it.

Real data: dipy's tracks300 written by zarr-vectors 0.9.2 (tests/realdata.py), opened as a
drop opens it. The expected objects come from what was fed to the writer (``truth``): a
streamline is inside when one of its vertices is. With ``NZV_DOCS_IMAGES=1`` the screenshot
test writes docs/images/region_selection.png.
"""

from __future__ import annotations

import numpy as np
import pytest
from _zv_napari import save_docs_image
from _zv_viewer import a_turn, dropped

from napari_zarr_vectors.napari import controller_for
from napari_zarr_vectors.napari.browse.region import inside_polygon
from napari_zarr_vectors.napari.browse.selection import DIM_OPACITY, SELECTION_META, selection_for
from napari_zarr_vectors.napari.layerdata.export import SELECTED, widget_selection
from napari_zarr_vectors.napari.npe2.reader import PLUGIN_NAME

TIMEOUT = 30_000


def test_inside_polygon_follows_a_concave_outline():
    # an L: the unit square's upper-right quarter is cut away
    outline = np.array([[0, 0], [2, 0], [2, 1], [1, 1], [1, 2], [0, 2]], float)
    xs, ys = np.meshgrid(np.arange(0.25, 2, 0.5), np.arange(0.25, 2, 0.5))
    points = np.column_stack([xs.ravel(), ys.ravel()])
    want = ~((points[:, 0] > 1) & (points[:, 1] > 1))
    np.testing.assert_array_equal(inside_polygon(points, outline), want)
    assert not inside_polygon(np.array([[3.0, 0.5], [-0.1, 1.0]]), outline).any()


def test_a_box_counts_its_edges_a_lasso_does_not_need_to():
    box = np.array([[0, 0], [4, 0], [4, 2], [0, 2]], float)
    on_edges = np.array([[0, 1], [4, 1], [2, 0], [2, 2], [4.01, 1]])
    np.testing.assert_array_equal(inside_polygon(on_edges, box), [True] * 4 + [False])
    assert not inside_polygon(on_edges, box[:2]).any()  # not a region


# --------------------------------------------------------------------------------------------
# on the canvas
# --------------------------------------------------------------------------------------------


@pytest.fixture
def tracks300_2d(make_napari_viewer, qtbot, tracks300_store):
    """tracks300 dropped into a viewer, shown in 2-D (the whole depth), and the Selection
    dock following it."""
    from napari_zarr_vectors.napari.widgets.region import SelectionWidget

    path, truth = tracks300_store
    viewer = make_napari_viewer()
    c = dropped(viewer, qtbot, path, timeout=TIMEOUT)
    viewer.dims.ndisplay = 2
    qtbot.waitUntil(lambda: not c.is_loading, timeout=TIMEOUT)
    widget = SelectionWidget(viewer)
    viewer.window.add_dock_widget(widget, area="right", name="Select by region")
    return viewer, c, widget, truth


def napari_yx(obj: np.ndarray) -> np.ndarray:
    """A streamline's (y, x) in napari order: the store axes are (x, y, z), reversed."""
    return np.asarray(obj, float)[:, [1, 0]]


def on_canvas(viewer, corners: np.ndarray) -> np.ndarray:
    """``corners`` (M x 2, the displayed axes) as napari's Shapes hold them: one column per
    viewer axis, the others at the slice shown (Tracks add a time axis in front)."""
    out = np.tile(np.asarray(viewer.dims.point, float), (len(corners), 1))
    out[:, list(viewer.dims.displayed)] = corners
    return out


def middle_box(truth, fraction=0.3) -> tuple[np.ndarray, np.ndarray]:
    every = np.concatenate([napari_yx(o) for o in truth.objects])
    lo, hi = every.min(0), every.max(0)
    mid, half = (lo + hi) / 2, (hi - lo) * fraction / 2
    return mid - half, mid + half


def test_a_box_drawn_on_the_canvas_selects_exactly_the_streamlines_inside(tracks300_2d, qtbot):
    viewer, c, widget, truth = tracks300_2d
    (y0, x0), (y1, x1) = middle_box(truth)
    want = [
        i
        for i, o in enumerate(truth.objects)
        if (
            (napari_yx(o)[:, 0] >= y0)
            & (napari_yx(o)[:, 0] <= y1)
            & (napari_yx(o)[:, 1] >= x0)
            & (napari_yx(o)[:, 1] <= x1)
        ).any()
    ]
    assert 0 < len(want) < len(truth.objects)
    region = widget.draw("box")
    assert region.mode == "add_rectangle" and region in viewer.layers
    region.add_rectangles(on_canvas(viewer, np.array([[y0, x0], [y0, x1], [y1, x1], [y1, x0]])))
    ids = widget.selection.ids
    object_ids = np.asarray(c.store.object_ids(0))
    np.testing.assert_array_equal(ids, np.sort(object_ids[want]))
    assert region not in viewer.layers  # the drawing goes once drawn
    assert widget.summary.text() == f"{len(want):,} of 300 objects selected"
    # the store's one selection: the Object table's, highlighted once on the canvas
    assert selection_for(c).ids.tolist() == ids.tolist()
    (highlight,) = [x for x in viewer.layers if SELECTION_META in x.metadata]
    assert set(highlight.features["object_id"].tolist()) == set(ids.tolist())
    # Export takes the selection
    chosen, why = widget_selection(widget, widget.selection.ids)
    assert why == SELECTED and chosen.tolist() == ids.tolist()


@pytest.mark.parametrize("store", ["neurons_store", "synapses_store"])
def test_a_box_selects_skeletons_and_points_under_a_4d_bounds_box(
    make_napari_viewer, qtbot, request, store
):
    """Skeleton and point stores draw 3-D layers under the bounds box's hidden time axis
    (a 4-D viewer): the box tool still opens and selects the objects inside."""
    from napari_zarr_vectors.napari.widgets.region import SelectionWidget

    path, truth = request.getfixturevalue(store)
    viewer = make_napari_viewer()
    layers = viewer.open(str(path), plugin=PLUGIN_NAME)
    c = controller_for(layers[-1])
    qtbot.waitUntil(lambda: not c.is_loading, timeout=TIMEOUT)
    viewer.dims.ndisplay = 2
    qtbot.waitUntil(lambda: not c.is_loading, timeout=TIMEOUT)
    assert viewer.dims.ndim == 4 and c.layers[0].ndim == 3
    widget = SelectionWidget(viewer)
    viewer.window.add_dock_widget(widget, area="right", name="Select by region")
    (y0, x0), (y1, x1) = middle_box(truth, 0.5)
    want = [
        i
        for i, o in enumerate(truth.objects)
        if inside_polygon(napari_yx(o), np.array([[y0, x0], [y0, x1], [y1, x1], [y1, x0]])).any()
    ]
    region = widget.draw("box")
    assert region is not None and region.mode == "add_rectangle" and region.ndim == 4
    region.add_rectangles(on_canvas(viewer, np.array([[y0, x0], [y0, x1], [y1, x1], [y1, x0]])))
    object_ids = np.asarray(c.store.object_ids(0))
    np.testing.assert_array_equal(widget.selection.ids, np.sort(object_ids[want]))
    assert widget.summary.text() == f"{len(want):,} of 5 objects selected"


def test_the_region_and_the_object_table_share_one_selection(tracks300_2d, qtbot):
    from napari_zarr_vectors.napari.widgets.object_table import ObjectTableWidget

    viewer, c, widget, truth = tracks300_2d
    table = ObjectTableWidget(viewer)
    qtbot.waitUntil(lambda: table.model.rows is not None, timeout=TIMEOUT)
    (y0, x0), (y1, x1) = middle_box(truth)
    box = np.array([[y0, x0], [y0, x1], [y1, x1], [y1, x0]])
    ids = widget.select_region(on_canvas(viewer, box), "box")
    assert 0 < len(ids) < 300
    assert table.selected_ids().tolist() == ids.tolist()  # the region selects the rows
    table.select_ids(ids[:2])  # and the rows select for the region
    assert widget.selection.ids.tolist() == ids[:2].tolist()
    assert widget.summary.text() == "2 of 300 objects selected"


def test_a_lasso_selects_what_it_encloses_and_nothing_outside(tracks300_2d):
    viewer, c, widget, truth = tracks300_2d
    (y0, x0), (y1, x1) = middle_box(truth, 0.6)
    triangle = np.array([[y0, x0], [y0, x1], [y1, (x0 + x1) / 2]])
    ids = widget.select_region(on_canvas(viewer, triangle), "lasso")
    want = [i for i, o in enumerate(truth.objects) if inside_polygon(napari_yx(o), triangle).any()]
    np.testing.assert_array_equal(ids, np.sort(np.asarray(c.store.object_ids(0))[want]))
    assert widget.summary.text() == f"{len(want):,} of 300 objects selected"


def test_show_only_dim_and_isolate_act_on_the_selection(tracks300_2d, qtbot):
    viewer, c, widget, truth = tracks300_2d
    lines = c.layers[0]
    (y0, x0), (y1, x1) = middle_box(truth)
    box = np.array([[y0, x0], [y0, x1], [y1, x1], [y1, x0]])
    ids = widget.select_region(on_canvas(viewer, box), "box")
    assert len(ids)
    # show only: the store's layer draws exactly the selected streamlines
    widget.show_only.setChecked(True)
    qtbot.waitUntil(lambda: not c.is_loading, timeout=TIMEOUT)
    shown = np.unique(lines.features["object_id"].to_numpy())
    np.testing.assert_array_equal(shown, ids)
    widget.show_only.setChecked(False)
    qtbot.waitUntil(lambda: not c.is_loading, timeout=TIMEOUT)
    assert len(np.unique(lines.features["object_id"].to_numpy())) == 300
    # dim the rest: the store fades, the selection is drawn whole over it
    opacity = lines.opacity
    widget.dim_rest.setChecked(True)
    assert lines.opacity == pytest.approx(opacity * DIM_OPACITY)
    qtbot.waitUntil(lambda: widget._worker.done, timeout=TIMEOUT)
    over = [
        x for x in viewer.layers if x.metadata.get("zarr_vectors", {}).get("role") == "selected"
    ]
    index = {int(i): k for k, i in enumerate(np.asarray(c.store.object_ids(0)))}
    n_vertices = sum(len(truth.objects[index[int(i)]]) for i in ids)
    assert len(over) == 1 and len(over[0].data) == n_vertices
    widget.dim_rest.setChecked(False)
    assert lines.opacity == pytest.approx(opacity)
    assert not any(
        x.metadata.get("zarr_vectors", {}).get("role") == "selected" for x in viewer.layers
    )
    # isolate: the selection whole at full resolution
    job = widget.isolate()
    qtbot.waitUntil(lambda: job.done, timeout=TIMEOUT)
    isolated = [
        x for x in viewer.layers if x.metadata.get("zarr_vectors", {}).get("role") == "isolated"
    ]
    assert len(isolated) == 1 and len(isolated[0].data) == n_vertices
    # named by count and part, short enough for napari's layer list
    assert isolated[0].name == f"{len(ids):,}× streamline (isolated)"


def test_region_selection_screenshot(make_napari_viewer, qtbot, tracks300_store):
    """The dock at 1280 x 1000 on tracks300: a box in the middle selected, the rest dimmed
    (docs image)."""
    from napari_zarr_vectors.napari.widgets.region import SelectionWidget

    path, truth = tracks300_store
    viewer = make_napari_viewer(show=True)
    viewer.window.resize(1280, 1000)
    layers = viewer.open(str(path), plugin=PLUGIN_NAME)
    c = controller_for(layers[-1])
    qtbot.waitUntil(lambda: not c.is_loading, timeout=TIMEOUT)
    viewer.dims.ndisplay = 2
    qtbot.waitUntil(lambda: not c.is_loading, timeout=TIMEOUT)
    widget = SelectionWidget(viewer)
    viewer.window.add_dock_widget(widget, area="right", name="Select by region")
    (y0, x0), (y1, x1) = middle_box(truth, 0.1)
    box = np.array([[y0, x0], [y0, x1], [y1, x1], [y1, x0]])
    ids = widget.select_region(on_canvas(viewer, box), "box")
    widget.dim_rest.setChecked(True)
    qtbot.waitUntil(lambda: widget._worker.done, timeout=TIMEOUT)
    (over,) = [
        x for x in viewer.layers if x.metadata.get("zarr_vectors", {}).get("role") == "selected"
    ]
    index = {int(i): k for k, i in enumerate(np.asarray(c.store.object_ids(0)))}
    assert len(over.data) == sum(len(truth.objects[index[int(i)]]) for i in ids)
    viewer.reset_view()  # the canvas is narrower with the dock
    qtbot.waitUntil(lambda: not c.is_loading, timeout=TIMEOUT)
    a_turn(qtbot)  # the frame of the last swap is drawn in a turn of its own
    image = viewer.screenshot(canvas_only=False, flash=False)
    assert image.shape[0] >= 900
    save_docs_image(image, "region_selection.png", max_bytes=800_000)
