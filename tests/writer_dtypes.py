"""Small stores written by zarr-vectors 0.9.2 with every attribute dtype its writers take:
text (``<U``), booleans and multi-channel vertex attributes, text and multi-channel object
attributes, for each geometry type. Shared by the format and napari
tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: geometry types, one writer call each
KINDS = ("point_cloud", "polyline", "streamline", "line", "graph", "skeleton", "mesh")

#: text of vertex row i (three categories of different lengths)
WORDS = np.array(["a", "bb", "ccc"])


def schema(kind: str):
    """A 3-D schema of ``kind`` over [0, 100]^3 in 2 x 2 x 2 cells."""
    zv = _zv()
    return zv.Schema(
        ndim=3,
        bounds=((0.0, 0.0, 0.0), (100.0, 100.0, 100.0)),
        axes=tuple(zv.Axis(name=n) for n in "xyz"),
        kind=kind,
        layout=zv.Layout(cells=(2, 2, 2)),
    )


def vertex_truth(n: int) -> dict[str, np.ndarray]:
    i = np.arange(n)
    return {
        "word": WORDS[i % 3],
        "flag": i % 2 == 0,
        "rgb": np.stack([i % 256, (3 * i) % 256, (7 * i) % 256], 1).astype(np.uint8),
        "xyz": np.stack([i, -i, 0.5 * i], 1).astype(np.float32),
    }


def object_truth(n: int) -> dict[str, np.ndarray]:
    i = np.arange(n)
    return {
        "side": np.where(i % 2 == 0, "left", "right"),
        "box": np.stack([i, i + 0.5, i + 0.25], 1).astype(np.float32),
    }


def write_store(kind: str, path: Path, rng: np.random.Generator):
    """A store of ``kind`` with the attributes above; returns (positions, object ids) per
    vertex in writer order (positions are distinct)."""
    zv = _zv()
    ds = zv.create(str(path), schema=schema(kind))
    if kind in ("polyline", "streamline"):
        lines = [rng.random((7, 3)).astype(np.float32) * 100 for _ in range(6)]
        va = vertex_truth(42)
        ds.add_polylines(
            lines,
            attributes={k: [v[7 * j : 7 * j + 7] for j in range(6)] for k, v in va.items()},
            object_attributes=object_truth(6),
            streamlines=kind == "streamline",
        )
        return np.concatenate(lines), np.repeat(np.arange(6), 7)
    if kind == "line":
        ends = (rng.random((8, 2, 3)) * 100).astype(np.float32)
        va = {k: v.reshape(8, 2, *v.shape[1:]) for k, v in vertex_truth(16).items()}
        ds.add_lines(ends, attributes=va, object_attributes=object_truth(8))
        return ends.reshape(16, 3), np.repeat(np.arange(8), 2)
    n = 30
    pos = (rng.random((n, 3)) * 100).astype(np.float32)
    oid = np.arange(n) // 10
    if kind == "point_cloud":
        ds.add_points(
            pos, attributes=vertex_truth(n), object_ids=oid, object_attributes=object_truth(3)
        )
    elif kind == "mesh":
        faces = np.array([[0, 1, 2], [2, 3, 0]]) + 10 * np.arange(3)[:, None, None]
        ds.add_mesh(
            pos,
            faces.reshape(-1, 3),
            attributes=vertex_truth(n),
            object_ids=oid,
            object_attributes=object_truth(3),
        )
    else:
        edges = np.array([[i, i - 1] for i in range(n) if i % 10])
        ds.add_graph(
            pos,
            edges,
            attributes=vertex_truth(n),
            object_ids=oid,
            object_attributes=object_truth(3),
            tree=kind == "skeleton",
        )
    return pos, oid


def _zv():
    """zarr-vectors, imported when a store is written (tests skip without it)."""
    import zarr_vectors

    return zarr_vectors
