"""Fixtures for the napari adapter tests.

Every test here runs with a fresh napari settings profile stored under its ``tmp_path``: the
plugin writes a reader preference into napari's settings, and a test run must neither read
nor change the developer's own napari configuration.
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def fresh_napari_settings(tmp_path, monkeypatch):
    """A fresh napari settings profile (no reader preferences) saved under ``tmp_path``."""
    import napari.settings as napari_settings

    monkeypatch.setattr(napari_settings, "_SETTINGS", None)
    return napari_settings.get_settings(tmp_path / "napari-settings.yaml")


@pytest.fixture(scope="session")
def _sample_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("zv-samples")


@pytest.fixture(autouse=True)
def sample_cache(_sample_cache, monkeypatch) -> Path:
    """Unpack sample stores under the test session's tmp dir, not the user cache."""
    from napari_zarr_vectors.napari.npe2 import samples as _sample_data

    monkeypatch.setattr(_sample_data, "_cache_dir", lambda: _sample_cache)
    return _sample_cache


@pytest.fixture
def zv_reader_preference(fresh_napari_settings):
    """The state after the plugin ran once: ``*.zarrvectors/`` -> this plugin."""
    from napari_zarr_vectors.napari.npe2.reader import register_reader_preference

    register_reader_preference()
    return fresh_napari_settings


@pytest.fixture
def viewer_model(mock_app_model):
    """A napari ``ViewerModel`` (no Qt) with the plugins registered into a fresh test app
    model (napari's ``mock_app_model``), never into napari's own: registering them there a
    second time, once a ``make_napari_viewer`` test cleared napari's registration cache, fails
    with "already registered"."""
    from napari.components import ViewerModel
    from napari.plugins import _initialize_plugins

    _initialize_plugins.cache_clear()
    _initialize_plugins()
    return ViewerModel()
