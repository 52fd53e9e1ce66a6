"""The overview fill (lod/overview_fill.py): the streamlines ranked after the layer's own,
drawn into a picture while the view is still, in the layer's colours and place; and the
loader's split of a view into what the layer holds and what the fill draws."""

from __future__ import annotations

import numpy as np
import pytest
from _zv_viewer import a_turn
from test_line_draw import _swapped
from test_loader import view_3d, write_arcs

from napari_zarr_vectors.format.cache import ChunkCache
from napari_zarr_vectors.napari._napari_compat import (
    tracks_colours,
    tracks_rows_view_positions,
    tracks_view_positions,
)
from napari_zarr_vectors.napari.colour.defaults import direction_feature
from napari_zarr_vectors.napari.lod import line_draw, overview_fill
from napari_zarr_vectors.napari.lod.loader import Loader, LoadRequest
from napari_zarr_vectors.napari.lod.overview_fill import FillRows


@pytest.fixture(scope="module")
def arcs(tmp_path_factory):
    return write_arcs(tmp_path_factory.mktemp("fill") / "arcs.zarrvectors")


BLUE = np.array([0.25, 0.25, 1.0])  # the direction colour of a track along z (lifted)


def _track_rows(ids, starts, step, n=5):
    """Straight tracks (napari order z, y, x) of ``n`` rows from each start along ``step``,
    at t = 0, and their direction feature."""
    rows, tangents = [], []
    for i, start in zip(ids, starts, strict=True):
        zyx = np.asarray(start, float) + np.arange(n)[:, None] * np.asarray(step, float)
        rows.append(np.column_stack([np.full(n, i), np.zeros(n), zyx]))
        tangents.append(np.tile(step, (n, 1)))
    tangent = np.concatenate(tangents).astype(float)
    direction, _ = direction_feature(tangent[:, ::-1])  # store order x, y, z
    rows = np.concatenate(rows)
    return rows, {"object_id": rows[:, 0].astype(np.int64), "direction": direction}


RED = np.array([1.0, 0.25, 0.25])  # the layer's own track along x


def _pixels(viewer, colour) -> int:
    rgb = viewer.screenshot(canvas_only=True)[..., :3].astype(float) / 255
    return int((np.abs(rgb - colour).max(axis=-1) < 0.08).sum())


def _blue_pixels(viewer) -> int:
    return _pixels(viewer, BLUE)


def test_the_fill_draws_its_streamlines_in_the_layer_s_colours_once_the_view_is_still(
    make_napari_viewer, qtbot
):
    viewer = make_napari_viewer(show=True)
    viewer.dims.ndisplay = 3
    layer, _, _ = _swapped(viewer)
    # the fill: eight tracks along z, away from the layer's own two (along x and y)
    rows, features = _track_rows(range(10, 18), [[0, y, 20] for y in range(0, 80, 10)], [10, 0, 0])
    viewer.reset_view()
    viewer.camera.angles = (0.0, 0.0, 90.0)  # z, y, x all spread over the canvas
    a_turn(qtbot)
    assert _blue_pixels(viewer) == 0  # the layer's tracks are red and green
    fill = overview_fill.show(layer, FillRows(rows, features))
    assert fill is not None and fill.tracks == 8 and fill.vertices == len(rows)
    # the fill's tracks, in the layer's direction colours (drawn again if the window resizes)
    qtbot.waitUntil(lambda: fill.complete and _blue_pixels(viewer) > 100, timeout=10_000)
    # the layer's own line is in the picture and not drawn again while it is on screen
    drawing = line_draw.drawing_of(layer)
    assert drawing is not None and drawing.line.covered()
    assert _pixels(viewer, RED) > 20  # the track along x (the one along y is edge-on)
    # the layer still holds only its own rows (what picking and hover see)
    assert sorted(set(layer.data[:, 0].tolist())) == [0, 1]
    # the view moves: the picture no longer matches it and is drawn again once still
    viewer.camera.angles = (0.0, 30.0, 90.0)
    assert not fill.complete
    assert not drawing.line.covered()  # the view moved: the layer's line draws again
    qtbot.waitUntil(lambda: fill.complete, timeout=10_000)
    # opacity and visibility follow the layer
    layer.opacity = 0.0
    assert fill.complete  # opacity is applied over the picture: it is not drawn again
    assert _blue_pixels(viewer) == 0
    layer.opacity = 1.0
    layer.visible = False
    assert _blue_pixels(viewer) == 0
    layer.visible = True
    # no fill: nothing drawn beyond the layer, and the fill no longer follows its events
    listeners = len(layer.events.color_by.callbacks)
    assert overview_fill.show(layer, None) is None
    assert len(layer.events.color_by.callbacks) == listeners - 1
    assert overview_fill.fill_of(layer) is None
    assert _blue_pixels(viewer) == 0


def _fill_on_screen(make_napari_viewer, qtbot):
    """A 3-D viewer with the layer of ``_swapped`` and, on screen, a fill of eight blue tracks
    along z: ``(viewer, layer, fill, the fill's rows)``."""
    viewer = make_napari_viewer(show=True)
    viewer.dims.ndisplay = 3
    layer, _, _ = _swapped(viewer)
    rows, features = _track_rows(range(10, 18), [[0, y, 20] for y in range(0, 80, 10)], [10, 0, 0])
    viewer.reset_view()
    viewer.camera.angles = (0.0, 0.0, 90.0)
    fill = overview_fill.show(layer, FillRows(rows, features))
    qtbot.waitUntil(lambda: fill.complete and _blue_pixels(viewer) > 100, timeout=10_000)
    return viewer, layer, fill, rows


def test_a_fill_recolours_with_the_layer_s_colour_by(make_napari_viewer, qtbot):
    # the fill's blue tracks reach the screen (drawn again if the new window resizes)
    viewer, layer, fill, _ = _fill_on_screen(make_napari_viewer, qtbot)
    layer.color_by = "object_id"  # napari's colormap over the layer's own ids: not blue
    qtbot.waitUntil(lambda: fill.complete, timeout=10_000)
    assert _blue_pixels(viewer) == 0


def test_fill_rows_land_where_napari_draws_rows_in_its_colours(make_napari_viewer):
    viewer = make_napari_viewer()
    layer, _, _ = _swapped(viewer)
    for ndisplay in (3, 2):
        viewer.dims.ndisplay = ndisplay
        np.testing.assert_allclose(
            tracks_rows_view_positions(layer, layer.data), tracks_view_positions(layer)
        )
    features = {name: layer.features[name].to_numpy() for name in layer.features.columns}
    np.testing.assert_allclose(
        tracks_colours(layer, features, len(layer.data)), layer.track_colors, atol=1e-6
    )
    layer.color_by = "object_id"  # no colormap of its own: the layer's colormap, scaled
    np.testing.assert_allclose(
        tracks_colours(layer, features, len(layer.data)), layer.track_colors, atol=1e-6
    )


def test_batches_hold_whole_tracks(monkeypatch):
    monkeypatch.setattr(overview_fill, "BATCH_VERTICES", 7)
    lengths = [3, 5, 2, 9, 1, 4]
    ids = np.repeat(np.arange(len(lengths)), lengths)
    rows = np.column_stack([ids, np.zeros(len(ids)), np.arange(len(ids) * 3).reshape(-1, 3)])
    batches = overview_fill._batches(rows)
    assert len(batches) > 1
    np.testing.assert_array_equal(np.concatenate([b[0] for b in batches]), rows)
    for part, connect, index in batches:
        np.testing.assert_array_equal(rows[index], part)
        track = part[:, 0]
        # whole tracks: no track crosses a batch; rows join within a track only
        assert not set(track) & set(rows[: index[0], 0]) and not set(track) & set(
            rows[index[-1] + 1 :, 0]
        )
        np.testing.assert_array_equal(connect, np.r_[track[1:] == track[:-1], False])


def test_the_loader_splits_a_view_into_the_layer_s_objects_and_the_fill(arcs, monkeypatch):
    import napari_zarr_vectors.napari.lod.loader as loader_module

    monkeypatch.setattr(loader_module, "SMALL_STORE_ROWS", 1_000)  # 80,000 rows: "large"
    ld = Loader(arcs, ChunkCache())
    budget = 400
    alone = ld.load(LoadRequest(view=view_3d(), budget=budget))
    filled = ld.load(LoadRequest(view=view_3d(), budget=budget, fill_budget=1_200))
    assert alone.fill is None and alone.share.items_filled == 0
    # the layer holds the objects ranked lowest, within the same budget (at least those a
    # load without a fill shows: that one reads by an estimate, this one all it splits)
    held = set(filled.geometry.path_object_ids.tolist())
    assert held >= set(alone.geometry.path_object_ids.tolist())
    assert alone.vertex_count <= filled.vertex_count <= budget
    # the fill: the objects ranked next, whole, within its own budget, none of the layer's
    data, kwargs, kind = filled.fill
    assert kind == "tracks"
    fill_ids = set(kwargs["features"]["object_id"].tolist())
    assert fill_ids and not fill_ids & held
    assert len(data) <= 1_200 + budget
    share = filled.share
    assert share.items_filled == len(fill_ids)
    assert share.items_shown == len(held) + len(fill_ids)
    assert share.vertices_filled == len(data)
    assert share.fraction > share.layer_fraction >= alone.share.fraction
    meta = share.as_metadata()
    assert meta["items_filled"] == len(fill_ids) and meta["items_shown"] == share.items_shown
    # without a drawn fill the share is what the layer holds
    bare = share.without_fill()
    assert bare.items_shown == len(held) and bare.fraction == share.layer_fraction
    assert bare.items_filled == 0 and bare.vertices_filled == 0
    # whole streamlines: each fill path starts and ends at its stored ends
    whole = arcs.read(0)
    ends = {
        int(o): whole.positions[p[[0, -1]]]
        for o, p in zip(whole.path_object_ids, whole.paths, strict=True)
    }
    ids = data[:, 0].astype(np.int64)
    first = np.r_[True, ids[1:] != ids[:-1]]
    last = np.r_[ids[1:] != ids[:-1], True]
    oid = kwargs["features"]["object_id"]
    scale = np.asarray(kwargs.get("scale", np.ones(data.shape[1] - 1)), float)[-3:]
    shift = np.asarray(kwargs.get("translate", np.zeros(data.shape[1] - 1)), float)[-3:]
    world = data[:, 2:] * scale + shift  # napari order z, y, x
    for a, b, o in zip(world[first], world[last], oid[first], strict=True):
        np.testing.assert_allclose(np.r_[a, b][[2, 1, 0, 5, 4, 3]], ends[int(o)].ravel())
    # a larger fill keeps the same streamlines first (stable ranks)
    more = ld.load(LoadRequest(view=view_3d(), budget=budget, fill_budget=2_400))
    more_ids = set(more.fill[1]["features"]["object_id"].tolist())
    assert fill_ids < more_ids
    # a locked level (Pyramid QA) has no fill
    locked = ld.load(LoadRequest(view=view_3d(), budget=budget, fill_budget=1_200, locked=0))
    assert locked.fill is None and locked.share.items_filled == 0


@pytest.mark.parametrize("draw_path", ["fast", "napari"])
def test_a_shown_store_counts_the_fill_only_where_it_is_drawn(
    make_napari_viewer,
    qtbot,
    arcs,
    monkeypatch,
    draw_path,
):
    import napari_zarr_vectors.napari.lod.loader as loader_module
    from napari_zarr_vectors.napari import open_in_viewer
    from napari_zarr_vectors.napari.lod.settings import get_settings

    monkeypatch.setattr(loader_module, "SMALL_STORE_ROWS", 1_000)
    monkeypatch.setattr(get_settings(), "draw_path", draw_path)
    monkeypatch.setattr(get_settings(), "overview_vertices", 20_000)
    viewer = make_napari_viewer(show=True)
    c = open_in_viewer(viewer, arcs.path, vertex_budget=2_000)
    qtbot.waitUntil(lambda: c.vertex_count > 0 and not c.is_loading, timeout=30_000)
    meta = c.layers[0].metadata["zarr_vectors"]
    held = len(set(c.layers[0].data[:, 0].tolist()))
    if draw_path == "fast":
        fill = overview_fill.fill_of(c.layers[0])
        assert fill is not None and meta["items_filled"] == fill.tracks > 0
        assert meta["items_shown"] == held + fill.tracks
        assert f"{held:,} of them held by the layer" in viewer.status
    else:
        assert overview_fill.fill_of(c.layers[0]) is None
        assert meta["items_filled"] == 0 and meta["items_shown"] == held


def test_a_streamline_in_the_picture_on_screen_is_picked_as_the_layer_s_own_are(
    make_napari_viewer, qtbot
):
    from napari_zarr_vectors.napari.browse.pick import pick_at

    viewer, layer, fill, rows = _fill_on_screen(make_napari_viewer, qtbot)

    def pick(row: int):
        world = layer.data_to_world(rows[row, 1:])
        return pick_at(
            [layer],
            world,
            displayed=list(viewer.dims.displayed),
            zoom=float(viewer.camera.zoom),
            view_direction=(0.0, 0.0, 1.0),  # a ray along x: it meets one of the tracks
        )

    # the third vertex of track 13 (z=20, y=30, x=20): not a row of the layer; the fill's
    # rows are placed in a grid on a worker the first time they are picked at
    assert pick(3 * 5 + 2) is None
    qtbot.waitUntil(lambda: pick(3 * 5 + 2) is not None, timeout=10_000)
    hit = pick(3 * 5 + 2)
    assert hit.in_fill and hit.object_id == 13
    assert hit.features["object_id"] == 13 and hit.row == 3 * 5 + 2
    np.testing.assert_allclose(hit.position, [20, 30, 20])
    # the picture is not on screen while the view moves: only the layer's rows are picked
    viewer.camera.angles = (0.0, 30.0, 90.0)
    assert overview_fill.rows_on_screen(layer) is None
    assert pick(3 * 5 + 2) is None or not pick(3 * 5 + 2).in_fill
    qtbot.waitUntil(lambda: fill.complete, timeout=10_000)
    on_screen = overview_fill.rows_on_screen(layer)
    assert on_screen is not None and len(on_screen.rows) == len(rows)
