"""A minimal writer of 0.7-layout point clouds, for benchmarks only (the plugin never writes).

It reproduces what the 0.7.0 reference writer puts on disk for an object-less point cloud
(FORMAT07 §1, §5, §6.1b): one ``uint8`` Zarr array per chunk and per logical array, with
``[bytes]`` codecs, one range fragment per chunk.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def _blob(path: Path, payload: bytes) -> None:
    path.mkdir(parents=True, exist_ok=True)
    meta = {
        "shape": [len(payload)],
        "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [max(len(payload), 1)]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes"}],
        "attributes": {},
        "zarr_format": 3,
        "node_type": "array",
    }
    (path / "zarr.json").write_text(json.dumps(meta))
    (path / "c").mkdir(exist_ok=True)
    (path / "c" / "0").write_bytes(payload)


def _group(path: Path, attrs: dict) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / "zarr.json").write_text(
        json.dumps({"zarr_format": 3, "node_type": "group", "attributes": attrs})
    )


def _fragments(n: int) -> bytes:
    head = np.array([0x5A564647], "<u4").tobytes() + np.array([1, 0], "<u2").tobytes()
    head += np.array([1, 1], "<u4").tobytes() + b"\x01" + bytes(7)
    return head + np.array([0, n], "<i8").tobytes() + np.zeros(1, "<u4").tobytes()


def write_points_v07(
    root: Path, positions: np.ndarray, intensity: np.ndarray, chunk: float
) -> None:
    """Write ``positions`` (N, 3) float32 with one float32 attribute as a 0.7 store at ``root``."""
    lo, hi = positions.min(axis=0), positions.max(axis=0)
    _group(
        root,
        {
            "zarr_vectors": {
                "zv_version": "0.7.0",
                "format_capabilities": [],
                "chunk_shape": [chunk] * 3,
                "bounds": [lo.tolist(), hi.tolist()],
                "geometry_types": ["point_cloud"],
                "links_convention": "implicit_sequential",
            },
            "multiscales": [
                {
                    "version": "0.4",
                    "name": "default",
                    "axes": [{"name": a, "type": "space"} for a in "xyz"],
                    "datasets": [
                        {
                            "path": "0",
                            "coordinateTransformations": [{"type": "scale", "scale": [1.0] * 3}],
                        }
                    ],
                    "metadata": {"format": "zarr_vectors"},
                }
            ],
        },
    )
    _group(
        root / "0",
        {
            "zarr_vectors_level": {
                "level": 0,
                "vertex_count": int(len(positions)),
                "object_sparsity": 1.0,
                "coarsening_method": "none",
                "parent_level": None,
                "arrays_present": ["vertices"],
            }
        },
    )
    _group(root / "0" / "vertices", {"zv_array": "vertices", "dtype": "float32", "encoding": "raw"})
    _group(
        root / "0" / "vertex_fragments",
        {"zv_array": "vertex_fragments", "encoding": "fragment_index_v1"},
    )
    _group(
        root / "0" / "vertex_attributes" / "intensity",
        {"zv_array": "attribute", "name": "intensity", "dtype": "float32"},
    )
    keys = np.floor(positions / chunk).astype(np.int64)
    order = np.lexsort(keys.T[::-1])
    keys, pos, val = keys[order], positions[order], intensity[order]
    bounds = np.flatnonzero(np.any(np.diff(keys, axis=0) != 0, axis=1)) + 1
    for a, b in zip(np.r_[0, bounds], np.r_[bounds, len(keys)], strict=True):
        key = ".".join(str(int(c)) for c in keys[a])
        _blob(root / "0" / "vertices" / key, pos[a:b].astype("<f4").tobytes())
        _blob(root / "0" / "vertex_fragments" / key, _fragments(int(b - a)))
        _blob(
            root / "0" / "vertex_attributes" / "intensity" / key, val[a:b].astype("<f4").tobytes()
        )
