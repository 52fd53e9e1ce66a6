"""Composite stores written by zarr-vectors (``composite.add_geometry``) for tests: a point
cloud with a graph added (and any further geometries)."""

from __future__ import annotations

import warnings

import numpy as np
import zarr_vectors as zv
from zarr_vectors import Layout, Schema, composite

#: the added graph's nodes and edges
NODES = np.array([[10, 10, 10], [20, 20, 20], [30, 30, 30], [70, 70, 70]], np.float32)
EDGES = np.array([[0, 1], [1, 2], [2, 3]])


def write_composite(path, points, extra=()):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = zv.create(
            str(path),
            schema=Schema(
                3,
                ((0, 0, 0), (100, 100, 100)),
                layout=Layout(cell_size=(50, 50, 50)),
                kind="point_cloud",
            ),
        )
        ds.add_points(points)
        composite.add_geometry(str(path), "graph", positions=NODES, edges=EDGES)
        for kind, kwargs in extra:
            composite.add_geometry(str(path), kind, **kwargs)
