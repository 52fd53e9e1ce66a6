"""Group labels: what a group is called in legends and filter lists (its name, a string
group attribute, or its id)."""

from __future__ import annotations

import numpy as np

from napari_zarr_vectors.napari.browse.table import ObjectTable
from napari_zarr_vectors.napari.values import format_value

#: Label choice meaning "the store's group names".
GROUP_NAMES = "name"
#: Label choice meaning "just the group id".
GROUP_ID_LABEL = "group id"


def group_label_choices(table: ObjectTable) -> list[str]:
    """What group labels can be made of: names (when the store has them), string
    attributes, the bare id, then the other group attributes."""
    choices = [GROUP_NAMES] if table.group_names else []
    strings = [k for k, v in table.group_attributes.items() if np.asarray(v).dtype.kind in "OUS"]
    others = [k for k in table.group_attributes if k not in strings]
    return choices + strings + [GROUP_ID_LABEL] + others


def default_group_label(table: ObjectTable) -> str:
    """Names when the store has them, else a string attribute, else the bare id."""
    return group_label_choices(table)[0]


def group_labels(table: ObjectTable, by: str | None = None) -> dict[int, str]:
    """``{group id: label}``; ``by`` is one of :func:`group_label_choices` (default
    :func:`default_group_label`). Groups without a value fall back to ``"group <id>"``."""
    by = default_group_label(table) if by is None else by
    out: dict[int, str] = {}
    values = table.group_attributes.get(by) if by not in (GROUP_NAMES, GROUP_ID_LABEL) else None
    for g in table.group_ids():
        label = None
        if by == GROUP_NAMES:
            label = table.group_names.get(g)
        elif values is not None and 0 <= g < len(values):
            label = format_value(values[g])
        out[g] = label if label not in (None, "") else f"group {g}"
    return out
