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


#: points a :class:`PointGrid` cell holds on average, its cells per axis at most, and its
#: cells at most (keys of 16 bits)
GRID_POINTS = 64
GRID_MAX_CELLS = 40
GRID_MAX_KEYS = 2**16


class PointGrid:
    """``(N, D)`` world points binned into a regular grid of about :data:`GRID_POINTS` points
    a cell, so that :meth:`nearest` tests only the points of the cells a pick can reach: the
    answer of :func:`nearest_row` over every point (non-finite points are never picked), at
    the cost of a few cells (a hover over an overview picture of 1.5 million vertices)."""

    def __init__(self, points: np.ndarray) -> None:
        from napari_zarr_vectors.format.query import column_extremes

        pts = np.asarray(points, dtype=np.float64)
        self.points = pts
        d = pts.shape[1]
        finite = np.isfinite(pts).all(axis=1)
        rows = np.flatnonzero(finite)
        sub = pts if len(rows) == len(pts) else pts[rows]
        lo, hi = column_extremes(sub) if len(sub) else (np.zeros(d), np.zeros(d))
        n = int(np.clip(round((max(len(rows), 1) / GRID_POINTS) ** (1.0 / d)), 1, GRID_MAX_CELLS))
        n = min(n, int(GRID_MAX_KEYS ** (1.0 / d)))
        self._shape = (n,) * d
        self._size = np.where(hi > lo, (hi - lo) / n, 1.0)
        scaled = (sub - lo) / self._size
        np.clip(scaled, 0, n - 1, out=scaled)
        cell = scaled.astype(np.uint16)
        key = np.zeros(len(sub), np.uint16)  # (a 16-bit key: numpy sorts it by radix)
        for a in range(d):
            key = key * np.uint16(n) + cell[:, a]
        order = np.argsort(key, kind="stable")
        #: the finite rows, cell by cell (each cell's in ascending order)
        self._rows = rows[order]
        self._starts = np.searchsorted(key[order], np.arange(n**d + 1))
        index = np.indices(self._shape).reshape(d, -1).T
        self._centres = lo + (index + 0.5) * self._size

    def nearest(
        self,
        position: Sequence[float] | np.ndarray,
        displayed: Sequence[int],
        tolerance: float,
        *,
        view_direction: Sequence[float] | np.ndarray | None = None,
        slab: Sequence[float] | np.ndarray | None = None,
        below: int | None = None,
    ) -> int | None:
        """:func:`nearest_row` of the points (of those before row ``below`` when given)."""
        d = self.points.shape[1]
        pos = np.asarray(position, dtype=np.float64)[-d:]
        disp = [a - (len(position) - d) for a in displayed]
        disp = [a for a in disp if 0 <= a < d]
        if not disp or not len(self._rows):
            return None
        reach = tolerance + float(np.linalg.norm(self._size[disp] / 2))
        off = self._centres[:, disp] - pos[disp]
        if view_direction is None:
            near = (off * off).sum(axis=1) <= reach * reach
            if slab is not None:
                half = np.asarray(slab, dtype=np.float64)[-d:]
                for a in range(d):
                    if a not in disp:
                        gap = np.abs(self._centres[:, a] - pos[a])
                        near &= gap <= half[a] + self._size[a] / 2
        else:
            ray = np.asarray(view_direction, dtype=np.float64)[-len(disp) :]
            ray = ray / max(float(np.linalg.norm(ray)), 1e-12)
            along = off @ ray
            near = (off * off).sum(axis=1) - along**2 <= reach * reach
        cells = np.flatnonzero(near)
        counts = self._starts[cells + 1] - self._starts[cells]
        first = self._starts[cells] - np.r_[0, np.cumsum(counts)[:-1]]
        candidates = self._rows[np.repeat(first, counts) + np.arange(int(counts.sum()))]
        if below is not None:
            candidates = candidates[candidates < below]
        candidates.sort()
        hit = nearest_row(
            self.points[candidates],
            position,
            displayed,
            tolerance,
            view_direction=view_direction,
            slab=slab,
        )
        return None if hit is None else int(candidates[hit])
