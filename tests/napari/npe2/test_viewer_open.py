"""napari integration: opening through napari (scripted, drag and drop, samples), rendering.

Tests marked ``gui`` need a shown viewer: run them under Xvfb,
``xvfb-run -a python -m pytest tests/napari -m gui``. With ``NZV_DOCS_IMAGES=1`` the
screenshot test also writes ``docs/images/<geometry type>.png``.
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest
from _zv_napari import save_docs_image, v07_store

import napari_zarr_vectors as nzv
from napari_zarr_vectors.napari.npe2.reader import PLUGIN_NAME, READER_PATTERN
from napari_zarr_vectors.napari.npe2.samples import SAMPLES

#: geometry type -> fixture store shown on its docs page
DOCS_STORES = {
    "point_cloud": "points",
    "line": "lines",
    "polyline": "polylines",
    "streamline": "streamlines",
    "graph": "graph",
    "skeleton": "skeleton",
    "mesh": "mesh",
}


def zv_layers(layers):
    return [layer for layer in layers if "zarr_vectors" in layer.metadata]


# --------------------------------------------------------------------------------------------
# opening through napari
# --------------------------------------------------------------------------------------------


def test_napari_alone_cannot_choose_a_reader_for_a_zv_folder(viewer_model):
    """Canary: in a profile where the plugin never ran, napari offers every directory reader
    (its builtins, napari-ome-zarr, ...) and opening is ambiguous. If this starts failing,
    napari can pick the plugin itself and the preference step may go (docs/opening.md)."""
    from napari.errors import MultipleReaderError

    with pytest.raises(MultipleReaderError) as info:
        viewer_model.open(str(v07_store("points")), plugin=None)
    assert PLUGIN_NAME in info.value.available_plugins
    assert len(info.value.available_plugins) > 1
    if importlib.util.find_spec("napari_ome_zarr") is not None:
        assert "napari-ome-zarr" in info.value.available_plugins


def test_scripted_open_defaults_to_naparis_builtin_reader():
    """Canary: ``viewer.open(path)`` means ``plugin="napari"`` in napari 0.9, so it never
    consults reader preferences; scripts pass ``plugin="napari-zarr-vectors"`` (or None).
    If this fails, update docs/opening.md and the README."""
    import inspect

    from napari.components import ViewerModel

    assert inspect.signature(ViewerModel.open).parameters["plugin"].default == "napari"


def test_scripted_open_naming_the_plugin_works_in_a_fresh_profile(viewer_model):
    opened = viewer_model.open(str(v07_store("polylines")), plugin=PLUGIN_NAME)
    assert [layer.name for layer in opened] == ["polylines bounds", "polylines"]


def test_open_sample_in_a_fresh_profile_then_any_store_opens_unambiguously(
    viewer_model, fresh_napari_settings
):
    layers = viewer_model.open_sample(PLUGIN_NAME, "points")
    assert {layer.metadata["zarr_vectors"]["geometry_type"] for layer in layers} == {"point_cloud"}
    assert fresh_napari_settings.plugins.extension2reader[READER_PATTERN] == PLUGIN_NAME
    opened = viewer_model.open(str(v07_store("streamlines")), plugin=None)
    assert {layer.source.reader_plugin for layer in opened} == {PLUGIN_NAME}


@pytest.mark.parametrize("suffix", ["", "/"])
def test_open_without_a_plugin_uses_this_one_once_registered(
    viewer_model, zv_reader_preference, suffix
):
    opened = viewer_model.open(str(v07_store("skeleton")) + suffix, plugin=None)
    assert [layer.name for layer in opened] == [
        "skeleton bounds",
        "skeleton edges",
        "skeleton nodes",
    ]
    assert {layer.source.reader_plugin for layer in opened} == {PLUGIN_NAME}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_sample_opens_through_the_reader(viewer_model, name):
    layers = viewer_model.open_sample(PLUGIN_NAME, name)
    assert len(zv_layers(layers)) >= 2  # bounds box + data
    meta = layers[-1].metadata["zarr_vectors"]
    assert meta["geometry_type"] == SAMPLES[name]
    assert meta["path"].endswith(f"{name}.zarrvectors")
    assert meta["level"] == 0


def test_the_required_samples_are_contributed():
    from npe2 import PluginManager

    manifest = PluginManager.instance().get_manifest(PLUGIN_NAME)
    keys = {sample.key for sample in manifest.contributions.sample_data}
    assert {"points", "streamlines", "skeleton", "mesh"} <= keys


# --------------------------------------------------------------------------------------------
# GUI: drag and drop, rendering
# --------------------------------------------------------------------------------------------


def drop(viewer, path: Path) -> None:
    from qtpy.QtCore import QUrl

    viewer.window._qt_viewer._open_from_list_of_urls_data(
        [QUrl.fromLocalFile(str(path))], stack=False, choose_plugin=False
    )


@pytest.mark.gui
def test_drag_and_drop_opens_without_a_dialog_once_registered(
    make_napari_viewer, zv_reader_preference, monkeypatch
):
    import napari._qt.qt_viewer as qt_viewer

    monkeypatch.setattr(
        qt_viewer, "handle_gui_reading", lambda *a, **k: pytest.fail("reader dialog shown")
    )
    viewer = make_napari_viewer()
    drop(viewer, v07_store("mesh"))
    assert [layer.name for layer in viewer.layers] == ["mesh bounds", "mesh"]
    assert viewer.layers[-1].source.reader_plugin == PLUGIN_NAME


@pytest.mark.gui
def test_first_drop_in_a_fresh_profile_asks_once(
    make_napari_viewer, fresh_napari_settings, monkeypatch
):
    """Fresh profile: napari asks which reader to use. Choosing this plugin (even without
    "remember") registers it, so the next drop opens directly."""
    from napari._qt.dialogs.qt_reader_dialog import QtReaderDialog

    asked = []

    def choose(dialog):
        asked.append(dialog)
        return "Zarr Vectors", False

    monkeypatch.setattr(QtReaderDialog, "get_user_choices", choose)
    viewer = make_napari_viewer()
    drop(viewer, v07_store("points"))
    assert len(asked) == 1
    assert fresh_napari_settings.plugins.extension2reader[READER_PATTERN] == PLUGIN_NAME
    drop(viewer, v07_store("graph"))
    assert len(asked) == 1, "second drop opened without asking"
    assert {layer.source.reader_plugin for layer in viewer.layers} == {PLUGIN_NAME}


def screenshot(viewer, ndim: int) -> np.ndarray:
    if ndim == 3:
        viewer.dims.ndisplay = 3
        viewer.scene.camera.angles = (-20.0, 30.0, -60.0)
    viewer.reset_view(reset_camera_angle=False)
    return viewer.screenshot(canvas_only=True, flash=False)


def assert_not_blank(image: np.ndarray) -> None:
    background = image[0, 0]
    differs = np.any(image[..., :3] != background[:3], axis=-1)
    assert differs.mean() > 0.002, f"only {differs.sum()} non-background pixels"
    assert len(np.unique(image[differs][:, :3], axis=0)) > 3


@pytest.mark.gui
@pytest.mark.parametrize("geometry_type", sorted(DOCS_STORES))
def test_each_type_renders_where_the_store_says(
    make_napari_viewer, zv_reader_preference, geometry_type
):
    path = v07_store(DOCS_STORES[geometry_type])
    store = nzv.open_store(path)
    lo, hi = store.bounds
    viewer = make_napari_viewer(show=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", nzv.ZVChunkWarning)
        viewer.open(str(path), plugin=None)

    # the viewer spans exactly the store bounds, in napari (reversed) axis order
    np.testing.assert_allclose(
        viewer.layers.extent.world[:, -store.ndim :], np.stack([lo[::-1], hi[::-1]])
    )
    assert viewer.dims.axis_labels[-3:] == ("z", "y", "x")
    # each data layer's extent is the data's own box, inside the bounds
    positions = store.read().positions[:, ::-1]
    for layer in viewer.layers[1:]:
        extent = layer.extent.world[:, -store.ndim :]
        np.testing.assert_allclose(
            extent, np.stack([positions.min(0), positions.max(0)]), rtol=1e-6, atol=1e-5
        )
        assert np.all(extent[0] >= lo[::-1] - 1e-9) and np.all(extent[1] <= hi[::-1] + 1e-9)

    image = screenshot(viewer, store.ndim)
    assert_not_blank(image)
    save_docs_image(image, f"{geometry_type}.png", max_bytes=200_000, thumbnail=(480, 360))
