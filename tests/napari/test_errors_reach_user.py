"""Errors reach the user: a store the reader claims but cannot open shows
the core's message in napari; a corrupt chunk's warning names its file; the data a corrupt
chunk leaves out is counted in the status on every load, not only the first."""

from __future__ import annotations

import shutil
import warnings

import numpy as np
import pytest
from _zv_napari import DATA

import napari_zarr_vectors as nzv
from napari_zarr_vectors.napari import open_in_viewer
from napari_zarr_vectors.napari.lod.controller import controller_for
from napari_zarr_vectors.napari.npe2.reader import PLUGIN_NAME

#: the v09 streamlines chunk 2.0.1 of level 0 is stored as 0/vertices/c/4/2/3 (grid origin -2)
CHUNK = "2.0.1"
FILE = "0/vertices/c/4/2/3"


def truncated_streamlines(tmp_path):
    """v09 streamlines with level 0's chunk 2.0.1 cut in half (394 vertices -> 373 read)."""
    dst = tmp_path / "cut.zarrvectors"
    shutil.copytree(DATA / "v09" / "streamlines.zarrvectors", dst)
    f = dst / FILE
    raw = f.read_bytes()
    f.write_bytes(raw[: len(raw) // 2])
    return dst


@pytest.fixture
def notifications():
    """Messages of the napari notifications sent during the test."""
    from napari.utils.notifications import notification_manager

    seen: list[str] = []

    def record(event):
        seen.append(str(event.message if hasattr(event, "message") else event))

    notification_manager.notification_ready.connect(record)
    yield seen
    notification_manager.notification_ready.disconnect(record)


@pytest.mark.gui
@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (lambda root: (root / "zarr.json").write_text('{"zarr_format": 3, "attri'), "invalid JSON"),
        (lambda root: (root / "zarr.json").unlink(), "no zarr.json at its root"),
    ],
    ids=["corrupt-root-json", "no-root-json"],
)
def test_a_claimed_store_that_cannot_open_shows_the_core_message(
    make_napari_viewer, zv_reader_preference, notifications, tmp_path, damage, expected
):
    root = tmp_path / "bad.zarrvectors"
    shutil.copytree(DATA / "v09" / "points.zarrvectors", root)
    damage(root)
    with pytest.raises(nzv.ZVError, match=expected):  # the core's own error
        nzv.open_store(root)
    viewer = make_napari_viewer()
    # what drag and drop and File > Open do: napari picks the preferred reader (this one)
    added = viewer.open(str(root), plugin=None)
    assert added == [] and len(viewer.layers) == 0
    shown = [m for m in notifications if expected in m]
    assert shown, notifications
    assert shown[0].startswith("Cannot open bad.zarrvectors: ")
    assert str(root) in shown[0] and "refused" not in shown[0]


@pytest.mark.gui
def test_unreadable_chunk_is_counted_on_every_load_not_only_the_first(
    make_napari_viewer, qtbot, tmp_path
):
    path = truncated_streamlines(tmp_path)
    viewer = make_napari_viewer()
    with pytest.warns(nzv.ZVChunkWarning, match=rf"chunk {CHUNK}, file {FILE}\)"):
        c = open_in_viewer(viewer, path, first_view=False, lock_level=0)
        viewer.dims.ndisplay = 3  # the whole store in view
        viewer.reset_view()
        qtbot.waitUntil(lambda: not c.is_loading, timeout=20_000)

    def check() -> None:
        assert c.level == 0
        assert c.left_out == [FILE]
        assert f"1 unreadable chunk(s) left out ({FILE})" in c.summary()
        assert f"1 unreadable chunk(s) left out ({FILE})" in str(viewer.status)
        for layer in c.layers:
            assert layer.metadata["zarr_vectors"]["chunks_left_out"] == [FILE]

    check()
    assert c.vertex_count == 373
    # later loads read the chunk from the cache: no warning any more, still counted
    with warnings.catch_warnings():
        warnings.simplefilter("error", nzv.ZVChunkWarning)
        for level in (1, 0):
            with qtbot.waitSignal(c.events.refreshed, timeout=20_000):
                c.lock_level(level)
            qtbot.waitUntil(lambda: not c.is_loading, timeout=20_000)
        check()
        c.refresh()  # the same view again: nothing to load, still counted
        qtbot.waitUntil(lambda: not c.is_loading, timeout=20_000)
        check()
    # a coarser level whose chunks all decode: nothing left out
    with qtbot.waitSignal(c.events.refreshed, timeout=20_000):
        c.lock_level(1)
    qtbot.waitUntil(lambda: not c.is_loading, timeout=20_000)
    assert c.left_out == [] and "unreadable" not in c.summary()


@pytest.mark.gui
def test_a_chunk_the_readers_first_load_found_unreadable_stays_counted(
    make_napari_viewer, qtbot, tmp_path, zv_reader_preference
):
    """napari's reader loads the overview itself (and the core warns then); the controller it
    hands over to still counts the chunk when a later view reads it from the cache."""
    path = truncated_streamlines(tmp_path)
    viewer = make_napari_viewer()
    with pytest.warns(nzv.ZVChunkWarning, match=FILE):
        viewer.open(str(path), plugin=PLUGIN_NAME)
    c = controller_for(viewer.layers[-1])
    assert c is not None
    with warnings.catch_warnings():
        warnings.simplefilter("error", nzv.ZVChunkWarning)
        viewer.dims.ndisplay = 3  # the whole store in view
        viewer.reset_view()
        with qtbot.waitSignal(c.events.refreshed, timeout=20_000):
            c.lock_level(0)
        qtbot.waitUntil(lambda: not c.is_loading, timeout=20_000)
    assert CHUNK in {".".join(map(str, k)) for k in np.asarray(c.chunks).tolist()}
    assert c.left_out == [FILE]
    assert f"left out ({FILE})" in str(viewer.status)


def test_dense_layout_warning_names_the_chunk_file(tmp_path):
    dst = tmp_path / "dense.zarrvectors"
    shutil.copytree(DATA / "dense" / "streamlines.zarrvectors", dst)
    store = nzv.open_store(dst)
    chunk = store.chunks(0)[2]
    files = sorted(p for p in (dst / "0" / "vertices" / "c").rglob("*") if p.is_file())
    # the dense grid stores chunk (i, j, k) at c/i/j/k/0/0 (grid origin 0 here)
    target = dst / "0" / "vertices" / "c" / "/".join(map(str, chunk)) / "0" / "0"
    assert target in files
    target.write_bytes(target.read_bytes()[:10])
    key = target.relative_to(dst).as_posix()
    with pytest.warns(nzv.ZVChunkWarning, match=rf"file {key}\)"):
        nzv.open_store(dst).read(0)
