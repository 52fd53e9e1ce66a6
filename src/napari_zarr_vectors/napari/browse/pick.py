"""Picking: the object under the cursor (:func:`pick_at`) among the vertices of layers and of
an overview picture on screen; the row of positions nearest the cursor, in 2-D and 3-D views
(:func:`nearest_row`, :class:`PointGrid`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from napari_zarr_vectors.napari.colour.live import layer_kind
from napari_zarr_vectors.napari.layerdata.build import OBJECT_ID
from napari_zarr_vectors.napari.layerdata.placement import (
    layer_placement,
    layer_world_positions,
    tracks_rows_world,
)
from napari_zarr_vectors.napari.lod.overview_fill import fill_of

if TYPE_CHECKING:
    from napari.layers import Layer

    from napari import Viewer

#: Pick tolerance in screen pixels.
PICK_PIXELS = 8.0


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
    disp = _columns(displayed, len(position), pts.shape[1])
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
    ray = _unit_ray(view_direction, len(disp))
    along = d @ ray
    perp = np.sqrt(np.maximum((d * d).sum(1) - along**2, 0.0))
    close = perp <= tolerance
    if not close.any():
        return None
    candidates = np.flatnonzero(close)
    return int(candidates[np.argmin(along[candidates])])


def _columns(displayed: Sequence[int], n_position: int, d: int) -> list[int]:
    """The columns of ``d``-column points (a viewer's last axes) that the viewer's displayed
    axes ``displayed`` (of a position of ``n_position`` axes) are."""
    columns = [a - (n_position - d) for a in displayed]
    return [a for a in columns if 0 <= a < d]


def _unit_ray(view_direction: Sequence[float] | np.ndarray, n: int) -> np.ndarray:
    """The last ``n`` axes of ``view_direction``, of unit length."""
    ray = np.asarray(view_direction, dtype=np.float64)[-n:]
    return ray / max(float(np.linalg.norm(ray)), 1e-12)


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
        disp = _columns(displayed, len(position), d)
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
            along = off @ _unit_ray(view_direction, len(disp))
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


@dataclass(frozen=True)
class Pick:
    """What is under the cursor: a layer, the feature row, and the object id (if any)."""

    layer: Layer
    #: the row of the layer's features (of its overview fill's rows when ``in_fill``)
    row: int
    object_id: int | None
    #: the row's feature values, each of its column's own type
    features: dict
    #: world position of the picked vertex (the layer's axes, napari order)
    position: np.ndarray | None = None
    #: a streamline of the layer's overview fill (drawn in its picture, not held by the layer)
    in_fill: bool = False


def pick_slab(viewer: Viewer, layers: list[Layer]) -> np.ndarray:
    """Half-thickness per world axis of what a 2-D slice shows: half the dims thickness, at
    least half a data unit of the coarsest of ``layers`` (right-aligned to the viewer's axes)."""
    thickness = np.asarray(viewer.dims.thickness, np.float64)
    ndim = len(thickness)
    half = np.zeros(ndim)
    for layer in layers:
        scale = np.abs(np.asarray(layer.scale, np.float64))[-ndim:]
        half[ndim - len(scale) :] = np.maximum(half[ndim - len(scale) :], 0.5 * scale)
    return np.maximum(thickness / 2.0, half)


@dataclass(frozen=True)
class _Pickable:
    """What :func:`pick_at` searches in a layer: world positions (napari order, spatial
    axes), a finder of the nearest (:func:`.pick.nearest_row`'s signature without the
    positions), the feature row of each position, the features of a row, and whether they
    are an overview fill's."""

    points: np.ndarray
    find: Callable[..., int | None]
    rows: np.ndarray
    features_of: Callable[[int], dict]
    in_fill: bool


def _pickable(layer: Layer) -> list[_Pickable]:
    """The layer's own vertices and, for a Tracks layer whose overview picture is on screen,
    the fill's streamlines in it (their world positions in a :class:`.pick.PointGrid`, made
    once for the fill's rows and the layer's placement)."""

    def own(row: int) -> dict:
        # column by column: a row of a mixed table (``iloc``) would turn codes into floats
        table = layer.features
        return {str(c): table[c].iat[row] for c in table.columns} if len(table) else {}

    pts, rows = layer_world_positions(layer)
    out = [_Pickable(pts, partial(nearest_row, pts), rows, own, False)]
    fill = fill_of(layer)
    on_screen = None if fill is None else fill.rows_on_screen()
    if fill is not None and on_screen is not None:
        features = on_screen.features

        def filled(row: int) -> dict:
            return {str(k): np.asarray(v)[row].item() for k, v in features.items()}

        placement = layer_placement(layer)
        grid = fill.derived(("pick grid", placement), partial(_placed_grid, placement))
        if grid is not None:  # (else made on a worker: picked once it is)
            n = len(on_screen.rows)
            find = partial(grid.nearest, below=n)
            out.append(_Pickable(grid.points, find, np.arange(n), filled, True))
    return out


def _pick_distance(
    point: np.ndarray,
    position: Sequence[float] | np.ndarray,
    displayed: Sequence[int],
    view_direction: Sequence[float] | np.ndarray | None,
) -> float:
    """How near a hit is, as :func:`.pick.nearest_row` ranks hits: in 3-D its depth along the
    ray (the one nearest the camera wins), in 2-D its distance to ``position``."""
    d = len(point)
    off = np.asarray(point, dtype=np.float64) - np.asarray(position, dtype=np.float64)[-d:]
    if view_direction is None:
        return float(np.linalg.norm(off))
    disp = _columns(displayed, len(position), d)
    return float(off[disp] @ _unit_ray(view_direction, len(disp)))


def _placed_grid(placement: tuple, rows: np.ndarray) -> PointGrid:
    """The world positions of Tracks ``rows`` placed by ``placement``, in a grid."""
    return PointGrid(tracks_rows_world(placement, rows))


def pick_at(
    layers: Sequence[Layer],
    position: Sequence[float] | np.ndarray,
    *,
    displayed: Sequence[int],
    zoom: float,
    view_direction: Sequence[float] | np.ndarray | None = None,
    slab: Sequence[float] | np.ndarray | None = None,
    pixels: float = PICK_PIXELS,
) -> Pick | None:
    """The object nearest ``position`` (world coordinates, viewer axis order) among the
    vertices of ``layers`` within ``pixels`` screen pixels (``zoom`` = pixels per world unit),
    the streamlines of an overview picture on screen included."""
    tolerance = pixels / max(float(zoom), 1e-12)
    best: tuple[float, Pick] | None = None
    for layer in layers:
        if not getattr(layer, "visible", True):
            continue
        for source in _pickable(layer):
            pts = source.points
            if not len(pts):
                continue
            d = pts.shape[1]
            layer_slab = None if layer_kind(layer) == "tracks" else slab
            hit = source.find(
                position,
                displayed,
                tolerance,
                view_direction=view_direction,
                slab=None if layer_slab is None else np.asarray(layer_slab)[-d:],
            )
            if hit is None:
                continue
            dist = _pick_distance(pts[hit], position, displayed, view_direction)
            row = int(source.rows[hit])
            features = source.features_of(row)
            oid = features.get(OBJECT_ID)
            # a negative id: an object not known yet (a preview's path pieces)
            oid = None if oid is None or int(oid) < 0 else int(oid)
            point = np.asarray(pts[hit], dtype=np.float64)
            pick = Pick(layer, row, oid, features, point, source.in_fill)
            if best is None or dist < best[0]:
                best = (dist, pick)
    return None if best is None else best[1]
