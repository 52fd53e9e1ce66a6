"""Helpers shared by the napari adapter tests (fixture store paths and ground truth)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np

from data_paths import data_root
from napari_zarr_vectors.napari.colour.live import layer_kind
from napari_zarr_vectors.napari.colour.spec import MISSING_COLOUR, ColourSpec, category_index

DATA = data_root()

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


def expected(version: str, name: str) -> dict:
    with open(DATA / version / "expected" / f"{name}.json", encoding="utf-8") as fh:
        return json.load(fh)


def f32(values) -> np.ndarray:
    """Ground-truth floats are exact float32 values: compare after casting."""
    return np.asarray(values, dtype=np.float32)


def layer_colours(layer) -> np.ndarray:
    """The ``(rows, 4)`` RGBA colours the layer currently draws per feature row (Tracks:
    per vertex; Surface: per vertex, from its colormap)."""
    kind = layer_kind(layer)
    if kind == "points":
        return np.asarray(layer.face_color)
    if kind in ("vectors", "shapes"):
        return np.asarray(layer.edge_color)
    if kind == "tracks":
        return np.asarray(layer.track_colors)
    if kind == "surface":
        lo, hi = layer.contrast_limits
        v = (np.asarray(layer.vertex_values, np.float64) - lo) / max(hi - lo, 1e-300)
        return np.asarray(layer.colormap.map(v))
    return np.empty((0, 4))


def map_categories(spec: ColourSpec, values: np.ndarray) -> np.ndarray:
    """``(N, 4)`` colours of ``values`` under a categorical spec (vectorised lookup)."""
    values = np.asarray(values)
    out = np.tile(np.asarray(MISSING_COLOUR, np.float32), (len(values), 1))
    if not spec.categories:
        return out
    cols = np.asarray(spec.colours, dtype=np.float32)
    index = category_index(spec, values)
    hit = index >= 0
    out[hit] = cols[index[hit]]
    return out


#: Where the docs' screenshots live (written only with ``NZV_DOCS_IMAGES=1``).
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"


def save_docs_image(
    image: np.ndarray, name: str, *, max_bytes: int, thumbnail: tuple[int, int] | None = None
) -> None:
    """With ``NZV_DOCS_IMAGES=1``, save a screenshot as ``docs/images/<name>`` (shrunk to fit
    ``thumbnail`` when given) and check it stays under ``max_bytes``."""
    if os.environ.get("NZV_DOCS_IMAGES") != "1":
        return
    from PIL import Image

    DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
    picture = Image.fromarray(image[..., :3])
    if thumbnail is not None:
        picture.thumbnail(thumbnail, Image.Resampling.LANCZOS)
    target = DOCS_IMAGES / name
    picture.save(target, optimize=True)
    assert target.stat().st_size < max_bytes
