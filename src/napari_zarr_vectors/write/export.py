"""Export objects of an opened store into a new store (whole objects, full resolution)."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..format.errors import ZVError
from .engine import Progress, PyramidPlan, WriteError, check_target, write_store
from .spec import spec_from_geometry


def export_objects(
    store: Any,
    target: str | os.PathLike,
    object_ids: Sequence[int] | np.ndarray | None = None,
    *,
    pyramid: bool | PyramidPlan = True,
    validate: bool = False,
    progress: Progress | None = None,
) -> Path:
    """Copy objects of ``store`` into a new store at ``target``; returns its path.

    The objects are read at level 0 through their manifests, so every chunk they touch is
    read whatever a viewer shows; vertex, object and group attributes and groups (their
    members that are exported) come along. ``object_ids=None`` exports the whole store.

    ``store`` is a :class:`~napari_zarr_vectors.format.store.Store` or a path. Writing into
    the store itself is refused, as is an existing target (see :func:`.engine.write_store`).
    """
    from ..format.store import open_store

    if isinstance(store, (str, os.PathLike)):
        store = open_store(store)
    check_target(target, [store.path])
    if object_ids is not None:
        object_ids = np.unique(np.asarray(object_ids, dtype=np.int64).ravel())
        if not object_ids.size:
            raise WriteError("no objects selected: nothing to export")
    geometry = store.read(level=0, object_ids=object_ids, strict=True)
    if not geometry.vertex_count:
        raise WriteError(f"the selection of {store.name} holds no vertices: nothing to export")
    lo, hi = store.bounds
    spec = spec_from_geometry(
        geometry,
        axes=[str(a) for a in store.axes],
        units=list(store.units) if store.units is not None else None,
        bounds=(np.asarray(lo, float), np.asarray(hi, float)),
        object_attributes=_optional(store.object_attributes),
        groups=_optional(store.groups),
        group_attributes=_optional(store.group_attributes),
        name=str(store.name),
    )
    return write_store(
        target,
        spec,
        pyramid=pyramid,
        sources=[store.path],
        validate=validate,
        progress=progress,
    )


def _optional(getter: Any) -> dict:
    try:
        return dict(getter(0) or {})
    except ZVError as e:
        warnings.warn(f"{getter.__name__} left out of the export: {e}", stacklevel=3)
        return {}
