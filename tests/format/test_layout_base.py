"""What every layout shares (layout/base.Layout): array attributes read from ``zarr.json``,
and attribute names that cannot be listed (a warning once per store, the geometry read
without them)."""

from __future__ import annotations

import json
import warnings

import pytest

import napari_zarr_vectors as nzv
from data_paths import data_root
from napari_zarr_vectors.format.errors import ZVListingWarning

DATA = data_root()


@pytest.mark.parametrize("version", ["v07", "v09"])
def test_unlisted_attribute_names_warn_once_and_read_none(version, monkeypatch):
    store = nzv.open_store(DATA / version / "points.zarrvectors")
    layout = store.layout
    assert layout.list_attributes(0, "object")  # listed: the fixture has object attributes
    monkeypatch.setattr(layout.io, "list_dir_known", lambda *args, **kwargs: None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert layout.list_attributes(0, "object") == []
        assert layout.list_attributes(1, "object") == []
        assert layout.list_attributes(0, "vertex") == []
    messages = [str(w.message) for w in caught if issubclass(w.category, ZVListingWarning)]
    assert len(messages) == 2
    assert "object attribute names" in messages[0] and "vertex attribute names" in messages[1]
    assert all(str(store.name) in m or layout.io.name in m for m in messages)


@pytest.mark.parametrize("version", ["v07", "v09"])
def test_array_attributes_are_those_of_the_arrays_zarr_json(version):
    path = DATA / version / "points.zarrvectors"
    store = nzv.open_store(path)
    attrs = store.layout.array_attributes(0, "vertices")
    assert attrs == json.loads((path / "0" / "vertices" / "zarr.json").read_text())["attributes"]
    assert (attrs["zv_array"], attrs["dtype"], attrs["encoding"]) == ("vertices", "float32", "raw")
    assert store.layout.array_attributes(0, "no_such_array") is None
