"""Mesh files: ``.ply``, ``.obj``, ``.stl``, written with trimesh.

Every exported object goes into one mesh (the faces as stored, outward when the ``crs``
mirrors); positions are where the store's ``crs`` places them, in the store's units.
Vertices are kept as they are (``process=False``: none merged or dropped), so a file's
vertex ``k`` is the export's vertex ``k`` (``.stl`` stores triangles only: its readers
merge the corners back).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from . import missing


def write_mesh(spec: Any, path: Path, store: Any, reference: Any = None) -> None:
    try:
        import trimesh
    except ImportError as e:
        raise missing("trimesh") from e
    space = [i for i, t in enumerate(spec.axis_types) if t == "space"][:3]
    mesh = trimesh.Trimesh(
        vertices=np.asarray(spec.positions[:, space], np.float64),
        faces=np.asarray(spec.faces, np.int64).reshape(-1, 3),
        process=False,
    )
    mesh.export(os.fspath(path), file_type=Path(path).suffix.lstrip(".").lower())
