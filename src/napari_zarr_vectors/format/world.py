"""Where a store's coordinates lie in the world: the root ``crs`` block and
``coordinate_offset`` (FORMAT-NEXT §7, §9.5), as one store -> world affine.

Reads never transform positions: geometry, chunk keys, bboxes and bounds stay in the stored
space. :attr:`.store_metadata.StoreMetadata.placement` says how to place them (the napari
side sets it as the layers' ``affine``).

Rules, in order:

* root ``coordinate_offset`` (streamed skeletons): ``world = stored + offset``, applied
  before any ``crs`` transform;
* ``crs`` whose ``input_space`` equals its ``output_space`` (zarr-vectors-tools with
  ``register_to_rasmm=True``): the positions are already in the output space: identity;
* ``crs.input_space == "voxmm"`` (or ``headers/trk.space == "voxmm"``) with a ``headers/trk``
  group: TrackVis voxmm -> RAS mm, as nibabel's ``get_affine_trackvis_to_rasmm`` builds it
  from the header (``vox_to_ras``, ``voxel_size``, the half-voxel shift, ``voxel_order``
  flips). ``crs.affine`` is the header's voxel-index -> RAS matrix and is **not** used;
* ``voxmm`` without a header: ``crs.affine`` as stored, best effort (``exact`` is ``False``
  and the space is not called RAS);
* any other ``crs`` with a 16-number (``(k + 1)²`` for ``k`` space axes) row-major
  ``affine``: that affine; a ``crs`` without one is opaque: identity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import ZVFormatError
from .validate import Source, float_list

#: anatomical axis labels per RAS output axis (nibabel's default ``labels``)
_AXIS_LABELS = (("L", "R"), ("P", "A"), ("I", "S"))


@dataclass(frozen=True)
class WorldPlacement:
    """How stored coordinates map to world coordinates.

    ``affine`` is ``(ndim + 1, ndim + 1)`` homogeneous, store axis order:
    ``world = affine @ [stored, 1]``. ``space`` names the world space when the store says
    it (``"RASmm"``), ``source`` what the affine was built from (``"identity"``,
    ``"baked"``, ``"trackvis_header"``, ``"crs_affine"``, ``"coordinate_offset"``), and
    ``exact`` is ``False`` for a best-effort placement (a voxmm store without its TRK header).
    """

    affine: np.ndarray
    space: str | None = None
    source: str = "identity"
    exact: bool = True

    @property
    def is_identity(self) -> bool:
        """Whether world coordinates are the stored ones."""
        return bool(np.array_equal(self.affine, np.eye(self.affine.shape[0])))

    def apply(self, positions: np.ndarray) -> np.ndarray:
        """``(N, ndim)`` stored positions in world coordinates (float64)."""
        pos = np.asarray(positions, np.float64)
        world: np.ndarray = pos @ self.affine[:-1, :-1].T + self.affine[:-1, -1]
        return world


def affine_box(
    affine: np.ndarray | None, lo: np.ndarray, hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The axis-aligned box holding the image of the box ``[lo, hi]`` (store order) under
    ``affine`` (exact for axis permutations, flips and scales, the smallest box around a
    rotated one); the box itself when ``affine`` is ``None``."""
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    if affine is None:
        return lo.copy(), hi.copy()
    linear, shift = affine[:-1, :-1], affine[:-1, -1]
    centre, half = (lo + hi) / 2.0, np.maximum(hi - lo, 0.0) / 2.0
    mid = linear @ centre + shift
    reach = np.abs(linear) @ half
    return mid - reach, mid + reach


def _axcodes_ornt(codes: str) -> np.ndarray:
    """``"LSA"`` -> ``[[out axis, flip], ...]`` (nibabel ``axcodes2ornt``)."""
    out = np.zeros((len(codes), 2))
    for i, code in enumerate(codes):
        for axis, (neg, pos) in enumerate(_AXIS_LABELS):
            if code in (neg, pos):
                out[i] = axis, -1 if code == neg else 1
                break
        else:
            raise ValueError(f"unknown voxel order code {code!r}")
    return out


def _affine_ornt(affine: np.ndarray) -> np.ndarray:
    """The axis orientation of a voxel -> RAS affine (nibabel ``io_orientation``): for each
    voxel axis, the RAS axis it changes most and its sign, chosen greedily."""
    rzs = affine[:3, :3]
    zooms = np.sqrt(np.sum(rzs * rzs, axis=0))
    zooms[zooms == 0] = 1
    p, _, qs = np.linalg.svd(rzs / zooms)
    r = p @ qs
    out = np.full((3, 2), np.nan)
    for axis in range(3):
        col = r[:, axis]
        if np.allclose(col, 0):
            continue
        target = int(np.argmax(np.abs(col)))
        out[axis] = target, -1 if col[target] < 0 else 1
        r[target, :] = 0
    return out


def _reorient(start: np.ndarray, end: np.ndarray, shape: np.ndarray) -> np.ndarray:
    """The affine that takes voxel indices of orientation ``start`` to those of ``end``
    (nibabel ``inv_ornt_aff(ornt_transform(start, end), shape)``)."""
    ornt = np.zeros((3, 2))
    for end_axis, (end_out, end_flip) in enumerate(end):
        for start_axis, (start_out, start_flip) in enumerate(start):
            if end_out == start_out:
                ornt[start_axis] = end_axis, 1 if start_flip == end_flip else -1
                break
        else:
            raise ValueError("voxel orders do not share axes")
    order = [int(v) for v in ornt[:, 0]]
    undo_reorder = np.eye(4)[[*order, 3], :]
    undo_flip = np.diag([*ornt[:, 1], 1.0])
    centre = -(np.asarray(shape, np.float64) - 1) / 2.0
    undo_flip[:3, 3] = ornt[:, 1] * centre - centre
    return undo_flip @ undo_reorder


def trackvis_to_rasmm(header: dict[str, Any], src: Source) -> np.ndarray:
    """The 4x4 TrackVis voxmm -> RAS mm affine of a ``headers/trk`` block, as nibabel's
    ``get_affine_trackvis_to_rasmm``: ``vox_to_ras · reorient · (voxmm / voxel_size - 0.5)``.
    """
    vox_to_ras = float_list(header.get("vox_to_ras"), "vox_to_ras", src, 16).reshape(4, 4)
    voxel_size = float_list(header.get("voxel_size"), "voxel_size", src, 3)
    if np.any(voxel_size <= 0):
        raise src.error("voxel_size", f"is {voxel_size.tolist()}, expected positive sizes")
    affine = np.diag([*(1.0 / voxel_size), 1.0])
    affine[:3, 3] -= 0.5
    order = header.get("voxel_order")
    if isinstance(order, str) and order:
        dims = float_list(header.get("dimensions"), "dimensions", src, 3)
        try:
            start = _axcodes_ornt(order.upper())
            end = _affine_ornt(vox_to_ras)
            if not np.isnan(end).any() and not np.array_equal(start, end):
                affine = _reorient(start, end, dims) @ affine
        except ValueError as exc:
            raise src.error("voxel_order", f"is {order!r}: {exc}") from None
    return vox_to_ras @ affine


def world_placement(
    zv: dict[str, Any], headers_trk: dict[str, Any] | None, ndim: int, store: str
) -> tuple[WorldPlacement, str | None]:
    """The placement of a store from its root ``zarr_vectors`` block and its ``headers/trk``
    attributes (``None`` when absent), and a warning to give (``None``: none)."""
    src = Source(store, "zarr.json")
    total = np.eye(ndim + 1)
    source, space, exact, warning = "identity", None, True, None
    offset = zv.get("coordinate_offset")
    if offset is not None:
        shift = float_list(offset, "zarr_vectors.coordinate_offset", src, ndim)
        total[:ndim, ndim] = shift
        source = "coordinate_offset"
    crs = zv.get("crs")
    if not isinstance(crs, dict):
        return WorldPlacement(total, None, source), None
    space_in, space_out = crs.get("input_space"), crs.get("output_space")
    space = space_out if isinstance(space_out, str) else None
    hsrc = Source(store, "headers/trk/zarr.json")
    stored = headers_trk.get("space") if headers_trk else None
    voxmm = (stored or space_in) == "voxmm"
    if isinstance(space_in, str) and space_in == space_out and not voxmm:
        return WorldPlacement(total, space, "baked" if source == "identity" else source), None
    if voxmm and headers_trk is not None:
        if ndim != 3:
            raise ZVFormatError(f"a TrackVis voxmm store must be 3-D, not {ndim}-D", store=store)
        return WorldPlacement(
            trackvis_to_rasmm(headers_trk, hsrc) @ total, space, "trackvis_header"
        ), None
    raw = crs.get("affine")
    if raw is None:
        return WorldPlacement(total, None, source), None  # an opaque crs dict
    k = round(len(raw) ** 0.5) - 1 if isinstance(raw, list) else -1
    if k != ndim:
        raise src.error(
            "zarr_vectors.crs.affine",
            f"holds {len(raw) if isinstance(raw, list) else raw!r} numbers, expected "
            f"{(ndim + 1) ** 2} (a row-major {ndim + 1}x{ndim + 1} matrix)",
        )
    matrix = float_list(raw, "zarr_vectors.crs.affine", src, (ndim + 1) ** 2).reshape(
        ndim + 1, ndim + 1
    )
    if voxmm:
        exact = False
        warning = (
            f"{store}: positions are TrackVis voxmm but the store has no headers/trk; "
            "crs.affine (a voxel-index -> RAS matrix) is applied as is, which misplaces them "
            "by up to a voxel size and a half-voxel shift"
        )
        space = None
    return WorldPlacement(matrix @ total, space, "crs_affine", exact), warning
