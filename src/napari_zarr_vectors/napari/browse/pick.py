"""Picking: the row of a layer's positions nearest the cursor, in 2-D and 3-D views."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def nearest_row(
    positions: np.ndarray,
    position: Sequence[float] | np.ndarray,
    displayed: Sequence[int],
    tolerance: float,
    *,
    view_direction: Sequence[float] | np.ndarray | None = None,
    slab: Sequence[float] | np.ndarray | None = None,
) -> int | None:
    """Row of ``positions`` (``(N, D)`` world coordinates) nearest the cursor, or ``None``.

    2-D views (``view_direction`` is ``None``): distance on the displayed axes, among rows
    whose non-displayed coordinates lie within ``slab`` (half-thickness per axis) of
    ``position``. 3-D views: distance to the ray through ``position`` along
    ``view_direction`` (displayed axes); among rows within ``tolerance`` of the ray, the one
    nearest the camera wins. Only rows within ``tolerance`` are considered.
    """
    pts = np.asarray(positions, dtype=np.float64)
    if pts.ndim != 2 or not len(pts):
        return None
    pos = np.asarray(position, dtype=np.float64)[-pts.shape[1] :]
    disp = [d - (len(position) - pts.shape[1]) for d in displayed]
    disp = [d for d in disp if 0 <= d < pts.shape[1]]
    if not disp:
        return None
    ok = np.ones(len(pts), bool)
    if view_direction is None and slab is not None:
        slab = np.asarray(slab, dtype=np.float64)[-pts.shape[1] :]
        for ax in range(pts.shape[1]):
            if ax not in disp:
                ok &= np.abs(pts[:, ax] - pos[ax]) <= slab[ax]
    d = pts[:, disp] - pos[disp]
    if view_direction is None:
        dist = np.sqrt((d * d).sum(1))
        dist[~ok] = np.inf
        best = int(np.argmin(dist))
        return best if dist[best] <= tolerance else None
    ray = np.asarray(view_direction, dtype=np.float64)[-len(disp) :]
    ray = ray / max(float(np.linalg.norm(ray)), 1e-12)
    along = d @ ray
    perp = np.sqrt(np.maximum((d * d).sum(1) - along**2, 0.0))
    close = perp <= tolerance
    if not close.any():
        return None
    candidates = np.flatnonzero(close)
    return int(candidates[np.argmin(along[candidates])])
