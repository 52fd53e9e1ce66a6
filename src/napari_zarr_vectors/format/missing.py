"""Values by object id, with one documented marker for "no value" per dtype kind.

=================  =========================================================================
dtype kind         missing marker
=================  =========================================================================
float (``f``)      ``NaN``
signed int (``i``) the dtype's minimum (the format's integer absence sentinel)
unsigned (``u``)   the dtype's maximum (the format's integer absence sentinel; never 0)
anything else      ``None`` (the array becomes ``object``: no boolean or text value is free)
=================  =========================================================================

:func:`take_by_id` looks values up by id; :func:`missing_mask` finds the markers again.

Per-vertex object ids (``Geometry.vertex_object_ids``, int64) have two markers: ``-1``, no
object names the vertex, and :data:`OBJECT_UNKNOWN` (the int64 missing marker), some object
of the store owns the vertex but the store does not record which (a fragment several
objects name whole, as in zarr-vectors 0.9.2's Draco chunks: see
:func:`.objects.unattributed_chunks`). Both are negative: ``ids >= 0`` keeps the known ones.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: per-vertex object id of a vertex whose object the store does not record (see the module)
OBJECT_UNKNOWN: int = int(np.iinfo(np.int64).min)


def missing_value(dtype: np.dtype) -> Any:
    """The missing marker of ``dtype`` (see the module table)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.nan
    if dtype.kind == "i":
        return np.iinfo(dtype).min
    if dtype.kind == "u":
        return np.iinfo(dtype).max
    return None


def take_by_id(
    values: np.ndarray, ids: np.ndarray, *, as_float: bool = False, fill: object = None
) -> np.ndarray:
    """``values[ids]`` (``values`` indexed by object id), with a missing marker where an id is
    outside ``values``.

    The marker is :func:`missing_value` of the dtype; ``as_float`` turns integers and
    booleans into float64 with ``NaN`` instead (what napari colours by); ``fill`` gives an
    explicit marker (e.g. ``-1`` for group ids, ``False`` for presence flags).
    """
    values = np.asarray(values)
    ids = np.asarray(ids, dtype=np.int64)
    ok = (ids >= 0) & (ids < len(values))
    if ok.all():
        taken: np.ndarray = values[ids]
        return taken
    if fill is None:
        if as_float and values.dtype.kind in "biu":
            values = values.astype(np.float64)
        fill = missing_value(values.dtype)
        if fill is None:
            values = values.astype(object)
    out = np.full((len(ids), *values.shape[1:]), fill, dtype=values.dtype)
    out[ok] = values[ids[ok]]
    return out


def missing_mask(values: np.ndarray) -> np.ndarray:
    """Row mask of missing values: the markers of :func:`missing_value` (a row of several
    channels is missing when any channel is)."""
    values = np.asarray(values)
    if values.dtype.kind == "O":
        # (numpy's stubs take no None operand; on an object array it compares item by item)
        m: np.ndarray = np.equal(values, None)  # type: ignore[call-overload]
    else:
        marker = missing_value(values.dtype)
        if marker is None:
            m = np.zeros(values.shape, bool)
        elif values.dtype.kind == "f":
            m = np.isnan(values)
        else:
            m = values == marker
    if m.ndim > 1:
        m = np.any(m.reshape(len(values), -1), axis=1)
    return m
