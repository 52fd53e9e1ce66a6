"""Export objects of an opened store into a new store (whole objects, full resolution)."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..format.distinct import distinct
from ..format.errors import ZVError, ZVUnknownObjectWarning
from ..format.missing import OBJECT_UNKNOWN
from ..format.objects import shared_fragments_cause
from ..format.world import affine_box
from .engine import Progress, PyramidPlan, WriteError, check_target, write_store
from .spec import WriteSpec, spec_from_geometry


def export_objects(
    store: Any,
    target: str | os.PathLike[str],
    object_ids: Sequence[int] | np.ndarray | None = None,
    *,
    pyramid: bool | PyramidPlan = True,
    validate: bool = False,
    progress: Progress | None = None,
    reference: Any = None,
) -> Path:
    """Copy objects of ``store`` into a new store at ``target``, or into a file of the
    format its suffix names (:mod:`.formats`: ``.trk``, ``.tck``, ``.trx``, ``.swc``,
    ``.ply``, ``.obj``, ``.stl``, ``.csv``); returns its path.

    The objects are read at level 0 through their manifests, so every chunk they touch is
    read whatever a viewer shows; vertex, object and group attributes, groups (their
    members that are exported) and group names come along (:func:`export_spec`).
    ``object_ids=None`` exports the whole store.

    ``store`` is a :class:`~napari_zarr_vectors.format.store.Store` (or one geometry of a
    composite store) or a path. Writing into the store itself is refused, as is an existing
    target (see :func:`.engine.write_store`). ``progress`` gets a first step for the read,
    then the write's steps. ``reference`` (a NIfTI path or nibabel image) gives a ``.trk`` or
    ``.trx`` file its voxel grid; ``pyramid`` and ``validate`` apply to stores only.
    """
    from ..format.store import open_store
    from .formats import check_format, file_format, write_file

    if isinstance(store, (str, os.PathLike)):
        store = open_store(store)
    path = check_target(target, [store.path])
    fmt = file_format(path)
    if fmt is not None:
        check_format(fmt, store.geometry_type, store.name)
        spec = export_spec(store, object_ids, progress=progress)
        if progress is not None:
            progress(1, 2, f"write {path.name} ({fmt.name})")
        write_file(fmt, spec, path, store, reference=reference)
        if progress is not None:
            progress(2, 2, f"written {path.name}")
        return path
    spec = export_spec(store, object_ids, progress=progress)
    return write_store(
        target,
        spec,
        pyramid=pyramid,
        sources=[store.path],
        validate=validate,
        progress=_after_read(progress),
    )


def export_spec(
    store: Any,
    object_ids: Sequence[int] | np.ndarray | None = None,
    *,
    progress: Progress | None = None,
) -> WriteSpec:
    """The :class:`~.spec.WriteSpec` of objects of ``store`` read whole at level 0, with
    their store's axes, units, axis types, bounds, object attributes, groups, group
    attributes and group names. ``object_ids=None``: the whole store.

    A store whose vertices' objects are not recorded (several objects naming a chunk's one
    fragment whole, as zarr-vectors 0.9.2 writes Draco chunks and 0.7 wrote raw meshes:
    :func:`~..format.objects.shared_fragments_cause`; the read's object ids are
    :data:`~..format.missing.OBJECT_UNKNOWN` there) is written whole without objects (every
    vertex kept, a :class:`~..format.errors.ZVUnknownObjectWarning` says so); some of its
    objects cannot be told from the others: :class:`WriteError`.

    Raises :class:`WriteError` for an empty selection or one holding no vertices.
    """
    if object_ids is not None:
        object_ids = distinct(np.asarray(object_ids, dtype=np.int64).ravel())
        if not object_ids.size:
            raise WriteError(f"no objects of {store.name} selected: nothing to export")
    if progress is not None:
        what = "every object" if object_ids is None else f"{object_ids.size:,} objects"
        progress(0, 0, f"read {what} of {store.name} (full resolution)")
    geometry = store.read(level=0, object_ids=object_ids, strict=True)
    if not geometry.vertex_count:
        raise WriteError(f"the selection of {store.name} holds no vertices: nothing to export")
    vid = geometry.vertex_object_ids
    if vid is not None and np.any(np.asarray(vid) == OBJECT_UNKNOWN):
        every = np.asarray(store.object_ids(0), np.int64)
        index = store.object_index(0)  # (read by the read above: it has one)
        why = "" if index is None else f" ({shared_fragments_cause(index)})"
        if object_ids is not None and not np.isin(every, object_ids).all():
            raise WriteError(
                f"{store.name}: {object_ids.size:,} of its {every.size:,} objects cannot be "
                f"exported: the store does not record which vertex is whose{why}"
            )
        warnings.warn(
            f"{store.name}: written without objects: the store does not record which of its "
            f"{every.size:,} objects each vertex belongs to{why}; every vertex is kept",
            ZVUnknownObjectWarning,
            stacklevel=2,
        )
        geometry.vertex_object_ids = None
    lo, hi = store.bounds
    placement = getattr(store, "placement", None)
    if placement is not None and not placement.is_identity:
        # saved where it is shown: the world placement applied (the saved store has no crs)
        lo, hi = affine_box(placement.affine, lo, hi)
        geometry.positions = placement.apply(geometry.positions).astype(geometry.positions.dtype)
        space = np.arange(geometry.ndim)
        if len(geometry.faces) and np.linalg.det(placement.affine[np.ix_(space, space)]) < 0:
            geometry.faces = geometry.faces[:, [0, 2, 1]]  # a mirror: faces stay outward
    return spec_from_geometry(
        geometry,
        axes=[str(a) for a in store.axes],
        units=list(store.units) if store.units is not None else None,
        axis_types=[str(t) for t in store.axis_types] if store.axis_types else None,
        bounds=(np.asarray(lo, float), np.asarray(hi, float)),
        object_attributes=_optional(store, "object_attributes"),
        groups=_optional(store, "groups"),
        group_attributes=_optional(store, "group_attributes"),
        group_names=_optional(store, "group_names"),
        name=str(store.name),
    )


def _after_read(progress: Progress | None) -> Progress | None:
    """The write's steps numbered after the read step of :func:`export_spec`."""
    if progress is None:
        return None
    return lambda step, n_steps, description: progress(step + 1, n_steps + 1, description)


def _optional(store: Any, getter: str) -> dict[Any, Any]:
    """``store.<getter>(0)``; empty (with a warning) when it cannot be read, and for a
    composite store's added geometry, which keeps none."""
    read = getattr(store, getter, None)
    if read is None:
        return {}
    try:
        return dict(read(0) or {})
    except ZVError as e:
        warnings.warn(f"{getter} left out of the export: {e}", stacklevel=3)
        return {}
