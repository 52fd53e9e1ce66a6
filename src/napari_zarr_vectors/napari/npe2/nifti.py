"""The NIfTI reader: a ``.nii`` / ``.nii.gz`` image as an Image layer in RAS mm, in the
axis order the plugin gives streamlines, so a TRK ingest and its subject's image line up.

The plugin shows a store's x, y, z (R, A, S for a tractogram) as napari axes z, y, x
(:func:`..coords.napari_axis_order`). The image's voxel -> RAS affine is put in that order
too: the napari world axes are S, A, R, labelled ``z``, ``y``, ``x``, in millimetres. When
the affine is a signed permutation with scales (most scans), the voxel axes are transposed
so the layer's affine is diagonal (napari slices 2-D views only along axes its affine does
not mix); a 4-D image's fourth axis comes first (its slider). Needs nibabel (the ``export``
extra).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, cast

import numpy as np

from napari_zarr_vectors.napari.coords import placed_order

#: the suffixes this reader opens
SUFFIXES = (".nii", ".nii.gz")

#: the reader-preference patterns of those files: napari's builtin reader also claims them
#: (imageio, which has no NIfTI backend: "Could not find a backend to open" on a plain
#: ``viewer.open``), so the plugin registers itself as their reader as it does for stores
READER_PATTERNS = ("*.nii", "*.nii.gz")


def napari_get_nifti_reader(path: Any) -> Any:
    """npe2 ``get_reader``: :func:`read_nifti` for one NIfTI path, else ``None``."""
    if isinstance(path, list | tuple):
        if len(path) != 1:
            return None
        path = path[0]
    name = os.fspath(path).lower()
    return read_nifti if name.endswith(SUFFIXES) else None


def read_nifti(path: Any) -> list[tuple[Any, dict[str, Any], str]]:
    """``[(data, kwargs, "image")]``: the volume in RAS mm, napari axis order."""
    if isinstance(path, list | tuple):
        path = path[0]
    try:
        import nibabel as nib
    except ImportError as e:
        from napari_zarr_vectors.format.errors import MissingDependencyError

        raise MissingDependencyError(
            'opening NIfTI images needs nibabel: pip install "napari-zarr-vectors[export]"'
        ) from e
    # a NIfTI-1 or -2 image: nibabel types load() as the base of every format it reads
    image = cast("nib.spatialimages.SpatialImage", nib.load(os.fspath(path)))
    data = np.asanyarray(image.dataobj)
    if data.ndim not in (3, 4):
        raise ValueError(f"{path}: a NIfTI image of {data.ndim} axes (3 or 4 are read)")
    voxel_to_ras = np.asarray(image.affine, np.float64)
    world_order = np.array([2, 1, 0])  # napari world axes S, A, R
    order = placed_order(world_order, voxel_to_ras)  # the voxel axis of each data axis
    rows, cols = np.r_[world_order, 3], np.r_[order, 3]
    affine = voxel_to_ras[np.ix_(rows, cols)]
    lead = data.ndim - 3
    data = np.transpose(data, (*range(3, data.ndim), *order.tolist()))
    if lead:
        full = np.eye(4 + lead)
        full[lead:, lead:] = affine
        affine = full
    name = Path(os.fspath(path)).name
    for suffix in SUFFIXES[::-1]:
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
            break
    kwargs = {
        "name": name,
        "affine": affine,
        "axis_labels": (*("t",) * lead, "z", "y", "x"),
        "units": (*("pixel",) * lead, "millimeter", "millimeter", "millimeter"),
        "metadata": {
            "nifti": {
                "path": os.fspath(path),
                "voxel_to_ras": voxel_to_ras.tolist(),
                "data_axes": [f"voxel axis {int(v)}" for v in order],
            }
        },
    }
    finite = data[np.isfinite(data)] if data.dtype.kind == "f" else data
    if finite.size:
        lo, hi = float(finite.min()), float(finite.max())
        kwargs["contrast_limits"] = (lo, hi if hi > lo else lo + 1)
    return [(data, kwargs, "image")]
