"""Container layouts (0.7: per-chunk arrays; 0.9: vlen grid arrays) and their detection."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import UnsupportedVersionError
from ..io import StoreIO
from ..metadata import LevelInfo, RootMetadata
from .base import GroupTable, Layout, LinkSet, ObjectAttribute, ObjectTable
from .v07 import V07Layout

__all__ = [
    "GroupTable",
    "Layout",
    "LinkSet",
    "ObjectAttribute",
    "ObjectTable",
    "detect_layout",
]


def detect_layout(io: StoreIO, root: RootMetadata, levels: Sequence[LevelInfo]) -> Layout:
    """Pick the container implementation for a store (FORMAT09 §1.1).

    The structure of ``<level>/vertices`` decides (a vlen-bytes array = 0.9, a group of
    per-chunk arrays = 0.7); the declared version decides when that node is absent.
    """
    first = levels[0].path if levels else "0"
    doc = io.get_json(f"{first}/vertices/zarr.json")
    if doc is not None:
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
