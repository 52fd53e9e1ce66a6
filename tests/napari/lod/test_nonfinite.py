"""Stores with vertices at NaN or infinite coordinates open in napari: the
core reads them as stored, the napari side drops those vertices with one warning."""

from __future__ import annotations

import shutil
import warnings

import numpy as np
import pytest
from _zv_napari import DATA

from napari_zarr_vectors.format.geometry import Geometry
from napari_zarr_vectors.napari.lod.view_geometry import finite_geometry
from napari_zarr_vectors.napari.npe2.reader import read_zarr_vectors


def _with_nonfinite(tmp_path, name: str):
    dst = tmp_path / f"{name}.zarrvectors"
    shutil.copytree(DATA / "v07" / f"{name}.zarrvectors", dst)
    chunk = sorted(p for p in (dst / "0" / "vertices").iterdir() if p.is_dir())[0]
    f = chunk / "c" / "0"  # uncompressed float32 rows
    values = np.frombuffer(f.read_bytes(), "<f4").copy()
    values[1], values[5] = np.nan, np.inf  # two vertices
    f.write_bytes(values.tobytes())
    return dst


def _arrays(data) -> list[np.ndarray]:
    return [np.asarray(d) for d in (data if isinstance(data, tuple) else (data,))]


@pytest.mark.parametrize("name", ["points", "streamlines", "graph", "mesh", "skeleton"])
def test_nonfinite_vertices_are_dropped_with_one_warning(tmp_path, name):
    path = _with_nonfinite(tmp_path, name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        layers = read_zarr_vectors(str(path))
    said = [str(w.message) for w in caught if "NaN or infinite" in str(w.message)]
    assert len(said) == 1 and "2 vertices of level 0" in said[0], said
    assert layers
    for data, _kwargs, _kind in layers:
        for arr in _arrays(data):
            if arr.dtype.kind == "f":
                assert np.isfinite(arr).all()


def test_finite_geometry_splits_paths_at_a_dropped_vertex():
    pos = np.array([[0, 0], [1, 0], [np.nan, 0], [3, 0], [4, 0], [5, np.inf]], float)
    geom = Geometry(geometry_type="polyline", level=0, positions=pos)
    geom.paths = [np.array([0, 1, 2, 3, 4]), np.array([5])]
    geom.path_object_ids = np.array([7, 8])
    out, dropped = finite_geometry(geom)
    assert dropped == 2
    assert [p.tolist() for p in out.paths] == [[0, 1], [2, 3]]
    assert out.path_object_ids.tolist() == [7, 7]
    assert out.positions[:, 0].tolist() == [0, 1, 3, 4]
