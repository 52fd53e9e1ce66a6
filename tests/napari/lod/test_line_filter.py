"""Object filters on line stores hold at coarse levels, where objects share metavertices."""

from __future__ import annotations

import numpy as np
import pytest

import napari_zarr_vectors as nzv
from data_paths import data_root
from napari_zarr_vectors.napari.layerdata.build import layers_from_geometry
from napari_zarr_vectors.napari.layerdata.store_info import store_info
from napari_zarr_vectors.napari.lod.view_geometry import filter_geometry

DATA = data_root()


@pytest.mark.parametrize(("version", "level"), [("v09", 0), ("v09", 1), ("v07", 1), ("v07", 2)])
def test_line_segments_only_belong_to_allowed_objects(version: str, level: int) -> None:
    store = nzv.open_store(DATA / version / "lines.zarrvectors")
    geometry = store.read(level)
    allowed = np.asarray(sorted(store.groups(0)[1].tolist()))
    kept = filter_geometry(geometry, allowed)
    assert set(kept.path_object_ids.tolist()) <= set(allowed.tolist())
    data_layers = [
        ld for ld in layers_from_geometry(kept, store_info(store, level), bounds_layer=False)
    ]
    assert data_layers
    for _data, kwargs, _kind in data_layers:
        ids = np.asarray(kwargs["features"]["object_id"])
        assert len(ids) and set(ids.tolist()) <= set(allowed.tolist())
    # the segments are exactly the consecutive vertex pairs of the kept paths
    n_segments = sum(max(len(p) - 1, 0) for p in kept.paths)
    assert sum(len(kw["features"]["object_id"]) for _d, kw, _k in data_layers) == n_segments
