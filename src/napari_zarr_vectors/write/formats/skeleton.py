"""Skeleton files: ``.swc``, in navis' layout (``node_id label x y z radius parent_id``,
space-separated, ``#`` comments), written with pandas.

Node ids are 1-based, object after object (ascending ids); a node without a parent has ``parent_id`` ``-1`` (one per tree:
several skeletons make one file with several roots, each skeleton's object id in a comment).
``radius`` is the vertex attribute ``radius`` when the store has one (else 0), ``label`` the
integer vertex attribute ``label`` or ``type`` when it has one (else 0, undefined).
Positions are where the store's ``crs`` places them, in the store's units.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from . import missing


def write_swc(spec: Any, path: Path, store: Any, reference: Any = None) -> None:
    try:
        import pandas as pd
    except ImportError as e:
        raise missing("pandas") from e
    n = spec.vertex_count
    ids = None if spec.object_ids is None else np.asarray(spec.object_ids, np.int64)
    order = np.arange(n) if ids is None else np.argsort(ids, kind="stable")  # by object
    node = np.empty(n, np.int64)
    node[order] = np.arange(1, n + 1)
    parent_row = np.full(n, -1, np.int64)
    edges = np.asarray(spec.edges, np.int64).reshape(-1, 2)
    parent_row[edges[:, 0]] = edges[:, 1]
    parent = np.where(parent_row >= 0, node[np.maximum(parent_row, 0)], -1)[order]
    attrs = {k: np.asarray(v)[order] for k, v in spec.vertex_attributes.items()}
    radius = np.asarray(attrs.get("radius", np.zeros(n)), np.float64).reshape(n, -1)[:, 0]
    label = np.zeros(n, np.int64)
    for name in ("label", "type"):
        values = np.asarray(attrs.get(name, []))
        if values.shape[:1] == (n,) and values.dtype.kind in "iu":
            label = values.astype(np.int64).reshape(n, -1)[:, 0]
            break
    space = [i for i, t in enumerate(spec.axis_types) if t == "space"][:3]
    xyz = spec.positions[order][:, space]
    table = pd.DataFrame(
        {
            "node_id": np.arange(1, n + 1),
            "label": label,
            "x": xyz[:, 0],
            "y": xyz[:, 1],
            "z": xyz[:, 2],
            "radius": radius,
            "parent_id": parent,
        }
    )
    units = ", ".join(str(spec.units[i]) for i in space)
    lines = [
        f"# SWC exported by napari-zarr-vectors from {store.name}",
        f"# units: {units}",
    ]
    if ids is not None:
        sorted_ids = ids[order]
        first = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
        last = np.r_[first[1:], n] - 1
        for a, b in zip(first.tolist(), last.tolist(), strict=True):
            lines.append(f"# object {int(sorted_ids[a])}: nodes {a + 1}-{b + 1}")
    lines.append("# " + " ".join(table.columns))
    with open(os.fspath(path), "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
        table.to_csv(f, sep=" ", header=False, index=False, float_format="%.9g")
