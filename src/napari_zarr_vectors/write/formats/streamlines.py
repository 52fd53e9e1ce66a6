"""Streamline files: ``.trk`` and ``.tck`` (nibabel), ``.trx`` (trx-python).

The streamlines are written in RAS mm: where the store's ``crs`` places them
(:attr:`~...format.store_metadata.StoreMetadata.placement`, applied by
:func:`..export.export_spec`), in millimetres (a store without a ``crs`` in another length
unit is scaled; its x, y, z axes are taken as R, A, S). The voxel grid of the file's header (``.trk``, ``.trx``) is, in
order: the ``reference`` image given (a NIfTI path or nibabel image), the TrackVis header
of a TRK ingest (so a TRK ingest exported to ``.trk`` holds its source file's voxmm
coordinates again), or a 1 mm grid around the streamlines.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...format.validate import Source, float_list
from ..engine import WriteError
from . import missing

#: millimetres per unit of the length units a store may declare
MM_PER_UNIT = {
    "millimeter": 1.0,
    "mm": 1.0,
    "micrometer": 1e-3,
    "um": 1e-3,
    "nanometer": 1e-6,
    "nm": 1e-6,
    "centimeter": 10.0,
    "meter": 1000.0,
}


@dataclass(frozen=True)
class VoxelGrid:
    """A file header's voxel grid: the voxel -> RAS mm ``affine``, ``dimensions``,
    ``voxel_sizes`` and ``voxel_order`` (``"LAS"`` ...)."""

    affine: np.ndarray
    dimensions: np.ndarray
    voxel_sizes: np.ndarray
    voxel_order: str


def ras_mm(spec: Any, store: Any) -> np.ndarray:
    """The spec's positions (world coordinates) as ``(N, 3)`` float32 RAS mm."""
    space = [i for i, t in enumerate(spec.axis_types) if t == "space"]
    if len(space) != 3:
        raise WriteError(f"{store.name}: streamline files hold 3-D positions, not {len(space)}-D")
    pos = spec.positions[:, space]
    placement = getattr(store, "placement", None)
    if placement is None or placement.is_identity:
        names = [spec.axes[i].lower() for i in space]
        if sorted(names) == ["x", "y", "z"]:
            pos = pos[:, [names.index(a) for a in "xyz"]]
    if placement is None or placement.space != "RASmm":
        units = {spec.units[i] for i in space}
        unit = units.pop() if len(units) == 1 else None
        if unit is None or unit not in MM_PER_UNIT:
            warnings.warn(
                f"{store.name}: positions in {sorted(map(str, units | {unit}))} are written as "
                "millimetres",
                UserWarning,
                stacklevel=4,
            )
        else:
            pos = pos * MM_PER_UNIT[unit]
    return np.ascontiguousarray(pos, dtype=np.float32)


def voxel_grid(store: Any, positions: np.ndarray, reference: Any = None) -> VoxelGrid:
    """The header grid of a file (see the module's docstring)."""
    try:
        import nibabel as nib
    except ImportError as e:
        raise missing("nibabel") from e
    if reference is not None:
        image: Any = (  # (any nibabel image, or what has its header)
            nib.load(os.fspath(reference))
            if isinstance(reference, str | os.PathLike)
            else reference
        )
        header = image.header
        affine = np.asarray(header.get_best_affine(), np.float64)
        return VoxelGrid(
            affine,
            np.asarray(header["dim"][1:4], np.int64),
            np.asarray(header.get_zooms()[:3], np.float64),
            "".join(nib.aff2axcodes(affine)),
        )
    trk = getattr(store, "trk_header", None)
    if trk:
        src = Source(store.path, "headers/trk/zarr.json")
        affine = float_list(trk.get("vox_to_ras"), "vox_to_ras", src, 16).reshape(4, 4)
        order = trk.get("voxel_order") or "".join(nib.aff2axcodes(affine))
        return VoxelGrid(
            affine,
            float_list(trk.get("dimensions"), "dimensions", src, 3).astype(np.int64),
            float_list(trk.get("voxel_size"), "voxel_size", src, 3),
            str(order).upper(),
        )
    lo = np.floor(positions.min(axis=0)) - 1 if len(positions) else np.zeros(3)
    hi = np.ceil(positions.max(axis=0)) + 1 if len(positions) else np.ones(3)
    affine = np.eye(4)
    affine[:3, 3] = lo
    return VoxelGrid(affine, (hi - lo + 1).astype(np.int64), np.ones(3), "RAS")


def _tractogram(spec: Any, store: Any) -> Any:
    try:
        import nibabel as nib
    except ImportError as e:
        raise missing("nibabel") from e
    pos = ras_mm(spec, store)
    offsets = np.concatenate([[0], np.cumsum(spec.lengths)[:-1]]).astype(np.int64)
    streamlines = nib.streamlines.ArraySequence()
    streamlines._data = pos
    streamlines._offsets = offsets
    streamlines._lengths = np.asarray(spec.lengths, np.int64)
    return nib.streamlines.Tractogram(streamlines, affine_to_rasmm=np.eye(4))


def write_trk(spec: Any, path: Path, store: Any, reference: Any = None) -> None:
    """A TrackVis ``.trk`` file (nibabel): RAS mm in, the header's voxmm on disk."""
    try:
        import nibabel as nib
    except ImportError as e:
        raise missing("nibabel") from e
    tractogram = _tractogram(spec, store)
    grid = voxel_grid(store, tractogram.streamlines._data, reference)
    Field = nib.streamlines.Field
    header = {
        Field.VOXEL_TO_RASMM: grid.affine.astype(np.float32),
        Field.DIMENSIONS: grid.dimensions.astype(np.int16),
        Field.VOXEL_SIZES: grid.voxel_sizes.astype(np.float32),
        Field.VOXEL_ORDER: grid.voxel_order.encode(),
    }
    nib.streamlines.TrkFile(tractogram, header=header).save(os.fspath(path))


def write_tck(spec: Any, path: Path, store: Any, reference: Any = None) -> None:
    """An MRtrix ``.tck`` file (nibabel): RAS mm."""
    try:
        import nibabel as nib
    except ImportError as e:
        raise missing("nibabel") from e
    nib.streamlines.TckFile(_tractogram(spec, store)).save(os.fspath(path))


def write_trx(spec: Any, path: Path, store: Any, reference: Any = None) -> None:
    """A ``.trx`` file (trx-python): RAS mm, the numeric object attributes as data per
    streamline, the store's groups (their names) as TRX groups."""
    try:
        import nibabel as nib
    except ImportError as e:
        raise missing("nibabel") from e
    try:
        import trx.trx_file_memmap as tmm
    except ImportError as e:
        raise missing("trx-python") from e
    tractogram = _tractogram(spec, store)
    grid = voxel_grid(store, tractogram.streamlines._data, reference)
    header = nib.Nifti1Header()
    header.set_data_shape(tuple(int(d) for d in grid.dimensions))
    header.set_zooms(tuple(float(z) for z in grid.voxel_sizes))
    header.set_sform(grid.affine, code=1)
    header.set_qform(grid.affine, code=1)
    for name, values in spec.object_attributes.items():
        values = np.asarray(values)
        if values.ndim == 1 and values.dtype.kind in "biuf":
            tractogram.data_per_streamline[name] = values.astype(np.float32)[:, None]
    trx = tmm.TrxFile.from_tractogram(tractogram, reference=header)
    ids = np.asarray(spec.object_ids, np.int64)
    for gid, members in spec.groups.items():
        at = np.flatnonzero(np.isin(ids, np.asarray(members, np.int64)))
        name = spec.group_names.get(int(gid), f"group_{int(gid)}")
        trx.groups[name] = at.astype(np.uint32)
    try:
        tmm.save(trx, os.fspath(path))
    finally:
        trx.close()
