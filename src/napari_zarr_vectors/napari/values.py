"""Attribute values as the browse and colour controls see them: their kind (numeric or
categorical) and compact text (missing values are the core's markers,
:mod:`napari_zarr_vectors.format.missing`). Pure numpy, no napari."""

from __future__ import annotations

from typing import Any

import numpy as np

from napari_zarr_vectors.format.distinct import distinct

#: Attribute kinds: a range slider for "numeric", a multi-select for "categorical".
NUMERIC = "numeric"
CATEGORICAL = "categorical"

#: An integer attribute with at most this many distinct values is offered as categorical.
MAX_INTEGER_CATEGORIES = 32

#: A categorical control / legend lists at most this many values.
MAX_CATEGORIES = 256


def attribute_kind(values: np.ndarray, n_unique: int | None = None) -> str:
    """``"categorical"`` for strings, booleans and integer codes with few distinct values,
    else ``"numeric"``."""
    values = np.asarray(values)
    if values.dtype.kind not in "iuf":
        return CATEGORICAL
    if values.dtype.kind in "iu":
        if n_unique is None:
            n_unique = len(distinct(values))
        return CATEGORICAL if n_unique <= MAX_INTEGER_CATEGORIES else NUMERIC
    return NUMERIC


def dtype_word(dtype: Any) -> str:
    """A column's type in words for the UI: ``"text"``, ``"integer"``, ``"number"``,
    ``"yes/no"`` (a numpy dtype or its name; anything else is ``"value"``)."""
    try:
        kind = np.dtype(dtype).kind
    except TypeError:
        return "value"
    return {
        "O": "text",
        "U": "text",
        "S": "text",
        "b": "yes/no",
        "i": "integer",
        "u": "integer",
    }.get(kind, "number" if kind in "fc" else "value")


def format_value(value: object) -> str:
    """Compact text for a value: ``1.5``, ``7``, ``"left"``, ``(1, 2)``."""
    if value is None:
        return "—"
    arr = np.asarray(value)
    if arr.ndim >= 1:
        return "(" + ", ".join(format_value(v) for v in arr.ravel().tolist()) + ")"
    v = arr.item() if isinstance(arr, np.ndarray) else value
    if isinstance(v, float):
        return "nan" if not np.isfinite(v) else f"{v:.6g}"
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return str(v)


def unique_counts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values = np.asarray(values)
    if not len(values):
        return np.empty(0), np.empty(0, np.int64)
    if values.dtype.kind == "O":
        values = values.astype(str)
    return np.unique(values, return_counts=True)


def py_scalar(value: object) -> object:
    """numpy scalar -> Python scalar (dict keys, JSON)."""
    return value.item() if isinstance(value, np.generic) else value
