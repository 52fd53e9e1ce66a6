"""Helpers shared by the napari adapter tests (fixture store paths and ground truth)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[1] / "data"

#: fixture store name -> geometry type (the v07 stores the reader tests run on)
V07_STORES = {
    "points": "point_cloud",
    "points_binned": "point_cloud",
    "lines": "line",
    "polylines": "polyline",
    "streamlines": "streamline",
    "graph": "graph",
    "graph_interleaved": "graph",
    "skeleton": "skeleton",
    "skeleton_root_last_chunk": "skeleton",
    "mesh": "mesh",
    "mesh_draco": "mesh",
}


def v07_store(name: str) -> Path:
    return DATA / "v07" / f"{name}.zarrvectors"


def copy_fixture(name: str, tmp_path: Path, version: str = "v07") -> Path:
    """A copy of a fixture store under ``tmp_path/src`` (tests that write next to it)."""
    dst = tmp_path / "src" / f"{name}.zarrvectors"
    shutil.copytree(DATA / version / f"{name}.zarrvectors", dst)
    return dst


def v07_expected(name: str) -> dict:
    with open(DATA / "v07" / "expected" / f"{name}.json", encoding="utf-8") as fh:
        return json.load(fh)


def f32(values) -> np.ndarray:
    """Ground-truth floats are exact float32 values: compare after casting."""
    return np.asarray(values, dtype=np.float32)
