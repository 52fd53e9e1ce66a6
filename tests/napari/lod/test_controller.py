"""View-driven level of detail in a viewer (ZVLayerController): level from the zoom, chunks
from the view, loading off the UI thread, colours and filters through refreshes.

GUI tests: run under Xvfb (``xvfb-run -a python -m pytest tests/napari -m gui``).
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from _zv_napari import DATA, v07_store

import napari_zarr_vectors as nzv
from napari_zarr_vectors.napari import controller_for, open_in_viewer
from napari_zarr_vectors.napari.layerdata.placement import Placement
from napari_zarr_vectors.napari.lod import plan as lod
from napari_zarr_vectors.napari.lod.loader import PREVIEW_CHUNKS
from napari_zarr_vectors.napari.npe2.reader import PLUGIN_NAME

pytestmark = pytest.mark.gui

TIMEOUT = 15_000


def settle(qtbot, c, timeout: int = TIMEOUT) -> None:
    """Wait until no refresh is pending (debounce) or running (worker)."""
    qtbot.waitUntil(lambda: not c.is_loading, timeout=timeout)


def opened(viewer, qtbot, path, **options):
    c = open_in_viewer(viewer, path, first_view=False, **options)
    settle(qtbot, c)
    return c


def keys(chunks) -> set[tuple[int, ...]]:
    return {tuple(int(v) for v in c) for c in np.asarray(chunks).reshape(-1, 3).tolist()}


def expected_2d_chunks(viewer, store, level: int) -> set[tuple[int, ...]]:
    """Chunks of ``level`` intersecting the 2-D view (canvas around the camera centre,
    grown by lod.MARGIN on the displayed axes; the slice +- half its thickness, at least
    one bin, on the other axis), computed from the camera as NAPARI-FACTS describes."""
    lo_s, hi_s = (np.asarray(b, float) for b in store.bounds)
    lo, hi = lo_s[::-1].copy(), hi_s[::-1].copy()  # napari order (z, y, x)
    cam = viewer.scene.camera
    h, w = viewer.canvas.size
    half = np.array([h, w]) / (2 * cam.zoom)
    centre = np.asarray(cam.center[-2:], float)
    for k, axis in enumerate((1, 2)):
        a = max(lo[axis], centre[k] - half[k])
        b = min(hi[axis], centre[k] + half[k])
        pad = lod.MARGIN * (b - a)
        lo[axis], hi[axis] = a - pad, b + pad
    z = viewer.dims.point[-3]
    t = max(viewer.dims.thickness[-3], store.base_bin_shape[2])
    lo[0], hi[0] = max(lo[0], z - t / 2), min(hi[0], z + t / 2)
    edge = store.level(level).chunk_shape
    c_lo = np.floor(lo[::-1] / edge).astype(int)
    c_hi = np.floor(hi[::-1] / edge).astype(int)
    return {
        c for c in keys(store.chunks(level)) if np.all(c_lo <= c) and np.all(np.asarray(c) <= c_hi)
    }


def to_3d(viewer, qtbot, c):
    viewer.dims.ndisplay = 3
    viewer.reset_view()
    settle(qtbot, c)


# --------------------------------------------------------------------------------------------
# level from the zoom, chunks from the view
# --------------------------------------------------------------------------------------------


def test_a_view_over_budget_thins_its_level_and_zooming_in_loads_exactly_the_chunks_in_view(
    make_napari_viewer, qtbot
):
    viewer = make_napari_viewer()
    c = opened(viewer, qtbot, v07_store("points"), vertex_budget=20)  # 240 / 63 / 8 vertices
    store = c.store
    # the slab at level 0 holds more than 20 points: the level stays (the screen resolves
    # its bins) and a stable part of its points is shown instead of a coarser level
    assert c.level == 0 and 0 < c.vertex_count <= 20 and c.view_share.fraction < 1
    assert keys(c.chunks) == expected_2d_chunks(viewer, store, 0)
    layer = c.layers[0]
    overview = {tuple(p) for p in np.asarray(layer.data) * np.asarray(layer.scale)}
    cam = viewer.scene.camera
    overview_zoom = cam.zoom
    levels = []
    c.events.level_changed.connect(levels.append)

    cam.zoom = overview_zoom * 4
    cam.center = (0.0, -15.0, -15.0)
    settle(qtbot, c)
    assert c.level == 0 and c.vertex_count <= 20
    shown = keys(c.chunks)
    assert shown == expected_2d_chunks(viewer, store, 0)
    assert 0 < len(shown) < len(store.chunks(0))
    meta = c.layers[0].metadata["zarr_vectors"]
    assert meta["level"] == 0 and keys(meta["chunks"]) == shown
    assert meta["vertices_shown"] == c.vertex_count
    # every vertex on screen lies in a shown chunk and in the cropped view
    world = np.asarray(layer.data) * np.asarray(layer.scale)
    assert len(world) == c.vertex_count > 0
    assert keys(np.floor(world[:, ::-1] / 10.0)) <= shown
    vis = lod.visible_box(c.view_state(), *c.loader.extent_napari())
    lo, hi = lod.snap_box(lod.grow_box(vis, [1, 2]), [1, 2])  # the loader's crop box
    assert np.all((world >= lo) & (world <= hi))
    # zooming in only adds points: those of the overview inside this view stay
    zoomed = {tuple(p) for p in world}
    assert {p for p in overview if np.all((p >= lo) & (p <= hi))} <= zoomed

    cam.zoom = overview_zoom
    cam.center = (0.0, 0.0, 0.0)
    settle(qtbot, c)
    assert c.level == 0 and keys(c.chunks) == expected_2d_chunks(viewer, store, 0)
    assert {tuple(p) for p in np.asarray(layer.data) * np.asarray(layer.scale)} == overview
    assert levels == []  # the budget never moved the level


def test_zoomed_out_far_enough_the_bins_decide_the_level(make_napari_viewer, qtbot):
    viewer = make_napari_viewer()
    c = opened(viewer, qtbot, v07_store("points"), vertex_budget=10**6)
    assert c.level == 0
    cam = viewer.scene.camera
    # level 2 bins are 20 units: at most 4 px once a pixel spans 5 units
    cam.zoom = 1 / 5.0
    settle(qtbot, c)
    assert c.level == 2
    cam.zoom = 1 / 2.6  # level 1 bins (10 units) span 3.9 px, level 2 bins 7.7 px
    settle(qtbot, c)
    assert c.level == 1


def test_moving_the_2d_slice_loads_the_new_slab_and_drops_the_old(make_napari_viewer, qtbot):
    viewer = make_napari_viewer()
    c = opened(viewer, qtbot, v07_store("points"), vertex_budget=1_000)
    store = c.store
    layer = c.layers[0]
    slabs = {}
    for wanted in (-15.0, 15.0):  # mid-chunk slider steps (bins of 5 from -20)
        viewer.dims.set_point(viewer.dims.ndim - 3, wanted)
        settle(qtbot, c)
        z = viewer.dims.point[-3]
        assert z == wanted
        assert c.level == 0
        slabs[wanted] = keys(c.chunks)
        assert slabs[wanted] == expected_2d_chunks(viewer, store, 0)
        # the layer holds exactly the store's vertices in the slab (one bin = 5 units thick)
        world_z = np.asarray(layer.data)[:, 0] * layer.scale[0]
        assert np.all(np.abs(world_z - z) <= 2.5)
        lo, hi = (np.asarray(b, float) for b in store.bounds)
        inside = store.read(0, bbox=([lo[0], lo[1], z - 2.5], [hi[0], hi[1], z + 2.5]))
        assert len(layer.data) == inside.vertex_count > 0
    assert {k[2] for k in slabs[-15.0]} == {-2}
    assert {k[2] for k in slabs[15.0]} == {1}
    assert not slabs[-15.0] & slabs[15.0], "the old slab's chunks are dropped"


def test_3d_views_load_what_the_camera_sees(make_napari_viewer, qtbot):
    viewer = make_napari_viewer()
    c = opened(viewer, qtbot, v07_store("points"), vertex_budget=100)
    to_3d(viewer, qtbot, c)
    # all of it, at the level the screen resolves, thinned to the budget
    assert c.level == 0 and keys(c.chunks) == keys(c.store.chunks(0))
    assert 0 < c.vertex_count <= 100 and c.view_share.fraction < 1
    viewer.scene.camera.zoom *= 6
    settle(qtbot, c)
    assert c.level == 0
    assert 0 < len(c.chunks) < len(c.store.chunks(0))
    viewer.scene.camera.angles = (30.0, 40.0, 50.0)  # the prism's bounding box grows
    settle(qtbot, c)
    assert c.vertex_count <= 100
    box = lod.visible_box(c.view_state(), *c.loader.extent_napari())
    lo, hi = Placement.of(c.store).to_store_box(*lod.grow_box(box, [0, 1, 2]))
    edge = c.store.level(c.level).chunk_shape
    inside = lod.chunks_in_box(c.store.chunks(c.level), edge, lo, hi)
    inside = lod.chunks_in_prism(inside, edge, lod.Prism.of_view(c.view_state(), lod.MARGIN))
    assert keys(c.chunks) == keys(inside)


def test_resident_vertices_never_exceed_the_budget(make_napari_viewer, qtbot):
    viewer = make_napari_viewer()
    budget = 40
    c = opened(viewer, qtbot, v07_store("points"), vertex_budget=budget)
    seen = []
    c.events.refreshed.connect(lambda: seen.append(len(c.layers[0].data)))
    cam = viewer.scene.camera
    z0 = cam.zoom
    steps = [
        lambda: setattr(cam, "zoom", z0 * 3),
        lambda: setattr(cam, "center", (0.0, 10.0, -10.0)),
        lambda: viewer.dims.set_point(viewer.dims.ndim - 3, 7.0),
        lambda: setattr(cam, "zoom", z0),
        lambda: setattr(viewer.dims, "ndisplay", 3),
        lambda: setattr(cam, "zoom", z0 * 5),
        lambda: c.lock_level(0),
    ]
    for step in steps:
        step()
        settle(qtbot, c)
        assert c.vertex_count <= budget and len(c.layers[0].data) <= budget
    assert seen and max(seen) <= budget


# --------------------------------------------------------------------------------------------
# loading: off the UI thread, cancellable, failures isolated
# --------------------------------------------------------------------------------------------


def slow_prefetch(
    monkeypatch, store, seconds: float, calls: list | None = None, threads: list | None = None
):
    real = store.prefetch

    def prefetch(level, chunks, cache, **kw):
        if calls is not None:
            calls.append(len(chunks))
        if threads is not None:
            threads.append(threading.current_thread())
        time.sleep(seconds)
        return real(level, chunks, cache, **kw)

    monkeypatch.setattr(store, "prefetch", prefetch)


def test_loading_runs_off_the_ui_thread_and_reports_progress(
    make_napari_viewer, qtbot, monkeypatch
):
    viewer = make_napari_viewer()
    c = opened(viewer, qtbot, v07_store("points"), vertex_budget=1_000, lock_level=0)
    c.loader.batch_chunks = 16
    threads: list = []
    slow_prefetch(monkeypatch, c.store, 0.1, threads=threads)
    progress = []
    c.events.loading.connect(lambda done, total: progress.append((done, total)))
    to_3d(viewer, qtbot, c)  # all 63 chunks: 4 batches
    total = len(c.store.chunks(0))
    assert progress == [(0, total), *((d, total) for d in range(16, total, 16)), (total, total)]
    assert c.level == 0 and len(c.chunks) == total
    # every batch was fetched on a worker, none on the UI thread
    assert len(threads) >= 4 and threading.main_thread() not in threads


def test_a_newer_view_cancels_the_running_load(make_napari_viewer, qtbot, monkeypatch):
    viewer = make_napari_viewer()
    c = opened(viewer, qtbot, v07_store("points"), vertex_budget=1_000)
    c.loader.batch_chunks = 4
    calls: list[int] = []
    slow_prefetch(monkeypatch, c.store, 0.1, calls)
    applied = []
    c.events.refreshed.connect(lambda: applied.append(c.level))
    c.refresh()  # level 0 of the slab: a few slow batches
    qtbot.waitUntil(lambda: len(calls) >= 1, timeout=TIMEOUT)
    c.lock_level(2)  # supersedes it
    settle(qtbot, c)
    assert applied == [2], "the superseded load never reached the screen"
    assert c.level == 2 and c.locked_level == 2


def test_a_chunk_that_fails_warns_and_the_rest_stays_on_screen(
    make_napari_viewer, qtbot, monkeypatch
):
    from napari.utils.notifications import NotificationSeverity, notification_manager

    viewer = make_napari_viewer()
    c = opened(viewer, qtbot, v07_store("points"), vertex_budget=1_000)
    to_3d(viewer, qtbot, c)
    assert c.level == 0 and len(c.chunks) == len(c.store.chunks(0))
    full = c.vertex_count
    store = c.store
    bad = (0, 0, 0)
    real = store.prefetch

    def prefetch(level, chunks, cache, **kw):
        if bad in keys(chunks):
            raise OSError("network unreachable")
        return real(level, chunks, cache, **kw)

    monkeypatch.setattr(store, "prefetch", prefetch)
    before = len(notification_manager.records)
    c.loader.cache.shared.clear()
    c.refresh()
    settle(qtbot, c)
    warnings_ = [
        n
        for n in notification_manager.records[before:]
        if n.severity == NotificationSeverity.WARNING
    ]
    assert any("0.0.0" in n.message and "network unreachable" in n.message for n in warnings_)
    rows = store.read(0, chunks=np.array([bad])).vertex_count
    assert rows > 0
    assert bad not in keys(c.chunks)
    assert len(c.chunks) == len(store.chunks(0)) - 1
    assert len(c.layers[0].data) == full - rows


def test_a_corrupt_chunk_is_skipped_with_a_warning(make_napari_viewer, qtbot, tmp_path):
    import shutil

    from napari.utils.notifications import notification_manager

    store_dir = shutil.copytree(v07_store("points"), tmp_path / "points.zarrvectors")
    viewer = make_napari_viewer()
    c = opened(viewer, qtbot, store_dir, vertex_budget=1_000)
    to_3d(viewer, qtbot, c)
    full = len(c.layers[0].data)
    (store_dir / "0" / "vertices" / "0.0.0" / "c" / "0").write_bytes(b"\x01\x02 not a chunk")
    before = len(notification_manager.records)
    c.loader.cache.shared.clear()
    # the core warns on the worker thread; in a napari session (napari.run) the notification
    # manager's hooks turn warnings into notifications
    with notification_manager:
        c.refresh()
        settle(qtbot, c)
    assert any(
        "0.0.0" in n.message and "skipping chunk" in n.message
        for n in notification_manager.records[before:]
    )
    assert 0 < len(c.layers[0].data) < full


# --------------------------------------------------------------------------------------------
# colours, filters, locks through refreshes
# --------------------------------------------------------------------------------------------


def test_a_user_chosen_points_colour_survives_level_changes(make_napari_viewer, qtbot):
    from napari.utils.colormaps import ensure_colormap

    viewer = make_napari_viewer()
    c = opened(viewer, qtbot, v07_store("points"), vertex_budget=10**6)
    to_3d(viewer, qtbot, c)
    layer = c.layers[0]
    layer.face_color = "score"
    layer.face_colormap = "magma"
    layer.face_contrast_limits = (0.2, 0.8)
    for lock in (1, 2, 0):
        c.lock_level(lock)
        settle(qtbot, c)
        assert c.level == lock
        assert layer.face_color_mode == "colormap"
        assert layer._face.color_properties.name == "score"
        assert layer.face_colormap.name == "magma"
        assert tuple(layer.face_contrast_limits) == (0.2, 0.8)
        score = layer.features["score"].to_numpy()
        want = ensure_colormap("magma").map(np.clip((score - 0.2) / 0.6, 0, 1))
        np.testing.assert_allclose(layer.face_color, want, atol=1e-6)
    layer.face_color = "red"
    layer.size = 2.5
    c.lock_level(1)
    settle(qtbot, c)
    np.testing.assert_allclose(layer.face_color, [[1, 0, 0, 1]] * len(layer.data))
    assert np.all(layer.size == 2.5)
    # the marker symbol of every point is still the layer's (one shared value)
    assert {str(s) for s in layer.symbol} == {str(layer.current_symbol)}


def test_a_feature_missing_at_a_coarse_level_comes_back_at_level_0(make_napari_viewer, qtbot):
    viewer = make_napari_viewer()
    c = opened(viewer, qtbot, v07_store("points"), vertex_budget=10**6)
    layer = c.layers[0]
    layer.face_color = "intensity"  # a vertex attribute: level 0 only
    layer.face_colormap = "plasma"
    c.lock_level(1)
    settle(qtbot, c)
    assert "intensity" not in layer.features
    c.lock_level(0)
    settle(qtbot, c)
    assert layer._face.color_properties.name == "intensity"
    assert layer.face_colormap.name == "plasma"


def test_track_colour_by_survives_level_changes(make_napari_viewer, qtbot):
    viewer = make_napari_viewer()
    c = opened(viewer, qtbot, v07_store("streamlines"), vertex_budget=10**6)
    layer = c.layers[0]
    assert type(layer).__name__ == "Tracks"
    layer.color_by = "mean_radius"
    layer.colormap = "magma"
    for lock in (1, 2, 0):
        c.lock_level(lock)
        settle(qtbot, c)
        assert c.level == lock
        assert layer.color_by == "mean_radius" and layer.colormap == "magma"
        values = layer.features["mean_radius"].to_numpy()
        if np.ptp(values) > 0:
            assert len(np.unique(layer.track_colors, axis=0)) > 1


def test_vector_edge_colour_survives_level_changes(make_napari_viewer, qtbot):
    viewer = make_napari_viewer()
    c = opened(viewer, qtbot, v07_store("lines"), vertex_budget=10**6)
    layer = c.layers[0]
    assert type(layer).__name__ == "Vectors"
    layer.edge_color = "length"
    layer.edge_colormap = "magma"
    layer.edge_contrast_limits = (0.0, 10.0)
    for lock in (1, 0):
        c.lock_level(lock)
        settle(qtbot, c)
        assert layer.edge_color_mode == "colormap"
        assert layer._edge.color_properties.name == "length"
        assert layer.edge_colormap.name == "magma"
        assert tuple(layer.edge_contrast_limits) == (0.0, 10.0)


def test_surface_colormap_and_limits_survive_level_changes(make_napari_viewer, qtbot):
    viewer = make_napari_viewer()
    c = opened(viewer, qtbot, DATA / "v09" / "mesh.zarrvectors", vertex_budget=10**6)
    layer = c.layers[0]
    assert type(layer).__name__ == "Surface"
    colour_by = layer.metadata["zarr_vectors"]["colour_by"]
    assert colour_by == "curvature"  # a vertex attribute of level 0 only
    layer.colormap = "magma"
    layer.contrast_limits = (0.0, 0.5)
    c.lock_level(1)
    settle(qtbot, c)
    assert layer.colormap.name == "magma"
    assert len(layer.data[1]) == 0  # level 1 stores no faces: drawn as Points meanwhile
    assert [type(x).__name__ for x in c.layers] == ["Surface", "Points"]
    c.lock_level(0)
    settle(qtbot, c)
    assert layer.colormap.name == "magma"
    assert layer.metadata["zarr_vectors"]["colour_by"] == "curvature"
    assert tuple(layer.contrast_limits) == (0.0, 0.5)
    np.testing.assert_allclose(layer.vertex_values, layer.features["curvature"].to_numpy())


def test_lock_level_metadata_status_and_signals(make_napari_viewer, qtbot):
    viewer = make_napari_viewer()
    c = opened(viewer, qtbot, v07_store("points"), vertex_budget=10**6)
    assert c.level == 0 and c.locked_level is None
    changed = []
    c.events.level_changed.connect(changed.append)
    with qtbot.waitSignal(c.events.refreshed, timeout=TIMEOUT):
        c.lock_level(2)
    settle(qtbot, c)
    assert c.level == 2 and c.locked_level == 2 and changed == [2]
    for layer in c.layers:
        meta = layer.metadata["zarr_vectors"]
        assert meta["level"] == 2 and meta["locked_level"] == 2
        assert keys(meta["chunks"]) == keys(c.chunks)
    assert "level 2 (locked)" in viewer.status
    # the zoom no longer matters while locked
    viewer.scene.camera.zoom *= 8
    settle(qtbot, c)
    assert c.level == 2
    c.lock_level(None)
    settle(qtbot, c)
    assert c.level == 0 and changed == [2, 0]
    with pytest.raises(KeyError, match="levels"):
        c.lock_level(9)


def test_the_object_filter_survives_every_refresh(make_napari_viewer, qtbot):
    viewer = make_napari_viewer()
    c = opened(viewer, qtbot, v07_store("points"), vertex_budget=10**6)
    to_3d(viewer, qtbot, c)
    layer = c.layers[0]
    everything = set(layer.features["object_id"].tolist())
    c.set_object_filter([3, 7])
    settle(qtbot, c)
    assert set(layer.features["object_id"].tolist()) == {3, 7}
    for lock in (1, 2, 0):
        c.lock_level(lock)
        settle(qtbot, c)
        assert set(layer.features["object_id"].tolist()) <= {3, 7}
    viewer.scene.camera.zoom *= 1.5
    settle(qtbot, c)
    assert set(layer.features["object_id"].tolist()) <= {3, 7}
    c.set_object_filter(None)
    settle(qtbot, c)
    assert set(layer.features["object_id"].tolist()) == everything


def test_budget_setting_and_per_store_override(make_napari_viewer, qtbot, monkeypatch):
    from napari_zarr_vectors.napari.lod import settings

    monkeypatch.setattr(settings.get_settings(), "vertex_budget", 20)
    viewer = make_napari_viewer()
    c = opened(viewer, qtbot, v07_store("points"))
    to_3d(viewer, qtbot, c)
    assert c.vertex_budget == 20 and 0 < c.vertex_count <= 20
    before = c.vertex_count
    c.vertex_budget = 100
    settle(qtbot, c)
    assert c.level == 0 and before < c.vertex_count <= 100
    meta = c.layers[0].metadata["zarr_vectors"]
    assert meta["vertex_budget"] == 100 and meta["vertices_shown"] == c.vertex_count
    assert 0 < meta["shown_fraction"] < 1 and meta["items_in_view"] == 240
    assert meta["vertices_left_out"] == 240 - c.vertex_count
    # every point in view was read: the counts are exact, no percentage of a handful
    assert f"showing {c.vertex_count} of 240 points in view" in viewer.status
    assert "%" not in viewer.status


def test_a_big_store_opens_with_its_bounds_and_loads_its_data_in_the_background(
    make_napari_viewer, qtbot, monkeypatch
):
    from napari_zarr_vectors.napari.npe2 import reader

    monkeypatch.setattr(reader, "BACKGROUND_READ_VERTICES", 0)  # every store is "big"
    viewer = make_napari_viewer()
    c = open_in_viewer(viewer, v07_store("streamlines"), first_view=False, vertex_budget=500)
    # at once: the bounds box only, the window stays responsive
    assert [layer.name for layer in viewer.layers] == ["streamlines bounds"]
    assert c.layers == [] and c.bounds_layer is viewer.layers[0]
    settle(qtbot, c)
    # then the controller's worker adds the data layers, within the budget
    assert len(c.layers) == 1 and c.layers[0] in viewer.layers
    tracks = c.layers[0]
    assert 0 < len(tracks.data) == c.vertex_count <= 500
    assert tracks.metadata["zarr_vectors"]["session"]
    assert controller_for(tracks) is c and "level" in viewer.status


def test_a_big_store_shows_a_preview_of_its_central_chunks_first(
    make_napari_viewer, qtbot, monkeypatch, tmp_path
):
    """Issue 15: a first load of many chunks draws its first batch (the chunks nearest the
    centre) at once, then the whole view."""
    import warnings

    zv_polylines = pytest.importorskip("zarr_vectors.types.polylines")
    from napari_zarr_vectors.napari.lod import settings
    from napari_zarr_vectors.napari.npe2 import reader

    rng = np.random.default_rng(0)
    walks = list(rng.uniform(1, 99, (3_000, 1, 3)) + rng.normal(0, 1, (3_000, 2, 3)))
    path = tmp_path / "many.zarrvectors"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zv_polylines.write_polylines(
            str(path),
            [np.clip(w, 0, 99.9).astype(np.float32) for w in walks],
            chunk_shape=(25.0, 25.0, 25.0),
            bounds=([0.0] * 3, [100.0] * 3),
        )
    monkeypatch.setattr(reader, "BACKGROUND_READ_VERTICES", 0)
    # the layers' own subset (an overview fill would draw the rest: test_overview_fill.py)
    monkeypatch.setattr(settings.get_settings(), "overview_vertices", 0)
    viewer = make_napari_viewer()
    c = open_in_viewer(viewer, path, first_view=False, vertex_budget=400)
    seen: list[tuple[int, int, set]] = []
    c.events.refreshed.connect(
        lambda: seen.append(
            (len(c.chunks), c.vertex_count, set(c.layers[0].features["object_id"].tolist()))
        )
    )
    settle(qtbot, c)
    assert len(seen) == 2, seen
    (first_chunks, first_rows, first_ids), (last_chunks, last_rows, last_ids) = seen
    assert first_chunks == PREVIEW_CHUNKS < last_chunks == len(c.chunks)
    # the preview shows path pieces of objects not known yet; then the objects
    assert first_ids == {-1} and min(last_ids) >= 0
    assert 0 < first_rows <= 400 and 0 < last_rows <= 400
    assert len(c.layers[0].data) == last_rows
    meta = c.layers[0].metadata["zarr_vectors"]
    assert meta["shown_fraction"] < 1 and meta["vertices_shown"] == last_rows
    assert meta["items_filled"] == 0


def test_a_mesh_draws_at_every_level(make_napari_viewer, qtbot):
    """Issue 16: a mesh zoomed out to a level with vertices but no faces drew nothing (an
    empty Surface); such a level is drawn as Points, and the Surface returns with faces."""
    viewer = make_napari_viewer()
    c = opened(viewer, qtbot, DATA / "v09" / "mesh.zarrvectors", vertex_budget=10**6)
    surface = c.layers[0]
    assert len(surface.data[1]) > 0
    viewer.dims.ndisplay = 3  # the whole mesh in view (a 2-D slab holds few metavertices)
    settle(qtbot, c)
    c.lock_level(2)
    settle(qtbot, c)
    kinds = {type(layer).__name__: layer for layer in c.layers}
    points = kinds["Points"]
    assert len(points.data) == c.vertex_count == len(c.store.read(2).positions) > 0
    assert len(surface.data[1]) == 0  # the faceless level leaves the Surface empty
    c.lock_level(0)
    settle(qtbot, c)
    assert len(points.data) == 0 and len(surface.data[1]) == len(c.store.read(0).faces)


def test_the_default_colouring_is_the_same_at_every_level(make_napari_viewer, qtbot):
    """Issue 16: polylines defaulted to their vertex attribute at level 0 and to the
    direction at coarse levels (which store no vertex attributes)."""
    viewer = make_napari_viewer()
    c = opened(viewer, qtbot, v07_store("polylines"), vertex_budget=10**6)  # radius at 0 only
    tracks = c.layers[0]
    seen = {}
    for level in (0, 1):
        c.lock_level(level)
        settle(qtbot, c)
        seen[level] = tracks.color_by
    assert seen[0] == seen[1] == "direction", seen


def test_the_default_budget_adapts_to_the_measured_swap_cost(monkeypatch):
    from napari_zarr_vectors.napari.lod import settings

    cost = settings.SwapCost()
    monkeypatch.setattr(settings.get_settings(), "swap_cost", cost)
    monkeypatch.setattr(settings.get_settings(), "vertex_budget", None)  # adaptive
    assert settings.vertex_budget() == settings.DEFAULT_VERTEX_BUDGET  # nothing measured
    cost.observe(0.05, 1_000)  # too small a swap to say anything
    assert settings.vertex_budget() == settings.DEFAULT_VERTEX_BUDGET
    cost.observe(0.2, 200_000)  # 1 us per vertex: the 50 ms target holds 50,000
    assert settings.TARGET_SWAP_SECONDS == 0.05 and settings.vertex_budget() == 50_000
    cost.observe(0.8, 400_000)  # slower swaps lower it (running average)
    assert settings.vertex_budget() < 50_000
    for _ in range(50):
        cost.observe(10.0, 10_000)  # never below the floor
    assert settings.vertex_budget() == settings.MIN_AUTO_BUDGET
    settings.configure(vertex_budget=75_000)
    assert settings.vertex_budget() == 75_000  # a set budget wins
    settings.configure(vertex_budget="auto")
    assert settings.vertex_budget() == settings.MIN_AUTO_BUDGET
    # a swap without a visible stall proves its size: the budget never shrinks below it
    cost.observe(settings.VISIBLE_STALL_SECONDS, 90_000)
    for _ in range(50):
        cost.observe(10.0, 10_000)
    assert cost.proven == 90_000 and settings.vertex_budget() == 90_000


def test_small_stores_get_a_budget_that_shows_them_whole(monkeypatch):
    from napari_zarr_vectors.napari.lod import settings

    monkeypatch.setattr(settings.get_settings(), "swap_cost", settings.SwapCost())
    monkeypatch.setattr(settings.get_settings(), "vertex_budget", None)  # adaptive
    small = settings.SMALL_STORE_ROWS
    assert settings.store_budget(70_000) == small  # the five navis neurons
    assert settings.store_budget(small + 1) == settings.DEFAULT_VERTEX_BUDGET
    assert settings.store_budget(None) == settings.DEFAULT_VERTEX_BUDGET
    settings.configure(vertex_budget=5_000)  # a set budget (Detail) wins
    assert settings.store_budget(70_000) == 5_000
    settings.configure(vertex_budget="auto")


# --------------------------------------------------------------------------------------------
# controllers for layers napari's reader made
# --------------------------------------------------------------------------------------------


def test_viewer_open_gets_a_controller(make_napari_viewer, qtbot):
    viewer = make_napari_viewer()
    layers = viewer.open(str(v07_store("streamlines")), plugin=PLUGIN_NAME)
    c = controller_for(layers[-1])
    assert c is not None and controller_for(layers[0]) is c
    assert c.layers == [layers[1]] and c.bounds_layer is layers[0]
    settle(qtbot, c)
    assert c.level == 0 and len(c.chunks) > 0
    # a second store in the same viewer gets its own controller
    other = viewer.open(str(v07_store("points")), plugin=PLUGIN_NAME)
    assert controller_for(other[-1]) not in (None, c)


def test_samples_and_drag_and_drop_get_a_controller(
    make_napari_viewer, qtbot, zv_reader_preference
):
    from qtpy.QtCore import QUrl

    viewer = make_napari_viewer()
    sample = viewer.open_sample(PLUGIN_NAME, "skeleton")
    c = controller_for(sample[-1])
    assert c is not None and {layer.name for layer in c.layers} == {
        "skeleton edges",
        "skeleton nodes",
    }
    viewer.window._qt_viewer._open_from_list_of_urls_data(
        [QUrl.fromLocalFile(str(v07_store("mesh")))], stack=False, choose_plugin=False
    )
    dropped = controller_for(viewer.layers[-1])
    assert dropped is not None and dropped.store.geometry_type == "mesh"
    settle(qtbot, dropped)
    settle(qtbot, c)


def test_layers_read_outside_a_viewer_stay_static():
    from napari.components import ViewerModel

    model = ViewerModel()
    layers = model.open(str(v07_store("points")), plugin=PLUGIN_NAME)
    assert controller_for(layers[-1]) is None
    assert layers[-1].metadata["zarr_vectors"]["level"] == 0


def test_removing_the_layers_stops_the_controller(make_napari_viewer, qtbot):
    viewer = make_napari_viewer()
    c = opened(viewer, qtbot, v07_store("points"))
    viewer.layers.clear()
    assert c.closed
    viewer.scene.camera.zoom *= 2
    assert not c.is_loading


def test_open_in_viewer_options(make_napari_viewer, qtbot):
    viewer = make_napari_viewer()
    c = opened(viewer, qtbot, v07_store("points"), lock_level=2, object_filter=[1, 2, 3])
    assert c.level == 2 and c.locked_level == 2
    assert set(c.layers[0].features["object_id"].tolist()) <= {1, 2, 3}
    with pytest.raises(TypeError, match="unknown options"):
        open_in_viewer(viewer, v07_store("points"), first_view=False, colour="red")
    assert isinstance(c.store, nzv.Store)
