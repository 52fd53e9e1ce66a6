"""Container layouts (0.7: per-chunk arrays; 0.9: vlen grid arrays; the spec's dense
grid-shaped arrays of seed 002) and their detection."""

from __future__ import annotations

from ..errors import UnsupportedVersionError
from ..io import StoreIO
from ..metadata import LevelInfo, RootMetadata
from .base import GroupTable, Layout, LinkSet, ObjectAttribute, ObjectRows, ObjectTable
from .dense import DenseLayout, is_dense_vertices
from .v07 import V07Layout

__all__ = [
    "GroupTable",
    "Layout",
    "LinkSet",
    "ObjectAttribute",
    "ObjectRows",
    "ObjectTable",
    "detect_layout",
]


def detect_layout(io: StoreIO, root: RootMetadata, levels: list[LevelInfo]) -> Layout:
    """Pick the container implementation for a store (FORMAT09 §1.1).

    The dense layout refines ``levels`` in place (their ``grid_origin``, see
    :mod:`.dense`); the others leave it as it is.

    The structure of ``<level>/vertices`` decides (a numeric array of shape
    ``(*grid, N_max, D)`` = the spec's dense form, a vlen-bytes array = 0.9, a group of
    per-chunk arrays = 0.7); the declared version decides when that node is absent.
    """
    first = levels[0].path if levels else "0"
    doc = io.get_json(f"{first}/vertices/zarr.json")
    if doc is not None:
        if is_dense_vertices(doc, root.ndim):
            return DenseLayout(io, root, levels)
        if doc.get("node_type") == "array" and doc.get("data_type") in (
            "variable_length_bytes",
            "bytes",
        ):
            generation = "0.9"
        elif doc.get("node_type") == "group":
            generation = "0.7"
        else:
            raise UnsupportedVersionError(
                f"{io.name}: unknown container layout for ZV version {root.zv_version} "
                f"({first}/vertices is a {doc.get('node_type')} of {doc.get('data_type')})"
            )
    else:
        generation = "0.9" if root.version_tuple[:2] >= (0, 9) else "0.7"
    if generation == "0.9":
        from .v09 import V09Layout

        return V09Layout(io, root, levels)
    return V07Layout(io, root, levels)
