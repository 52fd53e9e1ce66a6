"""Vertex tables: ``.csv``, written with pandas: one row per vertex, a column per axis
(named as the store names them), ``object_id`` when the store has objects, and one column
per vertex attribute (``name[k]`` per channel of a multi-channel one). Positions are where
the store's ``crs`` places them, in the store's units.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ...format.geometry import PATH_TYPES
from . import missing


def write_csv(spec: Any, path: Path, store: Any, reference: Any = None) -> None:
    try:
        import pandas as pd
    except ImportError as e:
        raise missing("pandas") from e
    columns: dict[str, np.ndarray] = {str(a): spec.positions[:, k] for k, a in enumerate(spec.axes)}
    if spec.object_ids is not None:
        ids = np.asarray(spec.object_ids, np.int64)
        if spec.geometry_type in PATH_TYPES:
            ids = np.repeat(ids, spec.lengths)
        columns["object_id"] = ids
    for name, values in spec.vertex_attributes.items():
        values = np.asarray(values)
        if values.ndim == 1:
            columns[name] = values
        else:
            flat = values.reshape(len(values), -1)
            for k in range(flat.shape[1]):
                columns[f"{name}[{k}]"] = flat[:, k]
    pd.DataFrame(columns).to_csv(os.fspath(path), index=False)
