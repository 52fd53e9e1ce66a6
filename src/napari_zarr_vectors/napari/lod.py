"""Level-of-detail planning: visible world box + zoom -> pyramid level + chunk set.

Pure functions over numbers (no napari, no Qt), so they are unit-testable; the loader feeds
them the camera state. Boxes here are in **store axis order** unless a name says otherwise;
``to_store`` maps napari world order (reversed store axes, see docs/coordinates.md) back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: Default number of vertices a view may hold (NAPARI-FACTS: ~1e5 points, ~5e5 track
#: vertices, ~1e5 vector segments per update on a 2-core software-rendered machine).
DEFAULT_VERTEX_BUDGET = 200_000

#: A level is "fine enough" when its bin edge spans at most this many screen pixels.
MAX_BIN_PIXELS = 4.0


@dataclass(frozen=True)
class ViewState:
    """What the camera shows, in napari world coordinates (napari axis order).

    ``center`` is the camera centre of the displayed axes (2 or 3 values), ``canvas_size``
    is ``(height, width)`` in screen pixels, ``point`` the current dims point of every axis,
    ``displayed`` the displayed axis indices, ``thickness`` the slab thickness per axis.
    ``view_direction`` and ``up_direction`` are used in 3-D.
    """

    ndisplay: int
    center: tuple[float, ...]
    zoom: float
    canvas_size: tuple[int, int]
    point: tuple[float, ...]
    displayed: tuple[int, ...]
    thickness: tuple[float, ...]
    view_direction: tuple[float, float, float] | None = None
    up_direction: tuple[float, float, float] | None = None

    @property
    def pixel_size(self) -> float:
        """World units per screen pixel."""
        return 1.0 / max(self.zoom, 1e-12)


def visible_box(
    view: ViewState, extent_lo: np.ndarray, extent_hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """World box (napari axis order) the view can show, clipped to the data extent.

    2-D: the canvas around the camera centre on the displayed axes, and the current slice
    +- half the thickness on the others. 3-D: the bounding box of the part of the extent
    inside the orthographic view prism (the whole extent when the camera shows it all).
    """
    lo = np.asarray(extent_lo, dtype=np.float64).copy()
    hi = np.asarray(extent_hi, dtype=np.float64).copy()
    ndim = lo.size
    half = np.asarray(view.canvas_size[-2:], dtype=np.float64) / (2.0 * max(view.zoom, 1e-12))
    if view.ndisplay == 2 or ndim < 3 or view.view_direction is None:
        disp = list(view.displayed[-2:])
        center = np.asarray(view.center[-2:], dtype=np.float64)
        for axis in range(ndim):
            if axis in disp:
                k = disp.index(axis)
                lo[axis] = max(lo[axis], center[k] - half[k])
                hi[axis] = min(hi[axis], center[k] + half[k])
            else:
                t = view.thickness[axis] if axis < len(view.thickness) else 1.0
                p = view.point[axis]
                lo[axis] = max(lo[axis], p - t / 2.0)
                hi[axis] = min(hi[axis], p + t / 2.0)
        return lo, np.maximum(hi, lo)
    return _visible_box_3d(view, lo, hi, half)


def _visible_box_3d(view: ViewState, lo: np.ndarray, hi: np.ndarray, half: np.ndarray):
    disp = list(view.displayed[-3:])
    vd = np.asarray(view.view_direction, dtype=np.float64)
    up = np.asarray(view.up_direction, dtype=np.float64)
    right = np.cross(vd, up)
    center = np.asarray(view.center[-3:], dtype=np.float64)
    # sample the displayed part of the extent on a grid and keep the samples in the prism
    n = 24
    axes = [np.linspace(lo[a], hi[a], n) for a in disp]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    d = grid - center
    inside = (np.abs(d @ right) <= half[1]) & (np.abs(d @ up) <= half[0])
    if inside.all():
        return lo, hi
    out_lo, out_hi = lo.copy(), hi.copy()
    if not inside.any():
        # nothing of the extent is in view: an empty box at the centre
        for k, a in enumerate(disp):
            out_lo[a] = out_hi[a] = float(np.clip(center[k], lo[a], hi[a]))
        return out_lo, out_hi
    step = (hi[disp] - lo[disp]) / (n - 1)
    pts = grid[inside]
    for k, a in enumerate(disp):
        out_lo[a] = max(lo[a], pts[:, k].min() - step[k])
        out_hi[a] = min(hi[a], pts[:, k].max() + step[k])
    return out_lo, out_hi


def to_store(
    box: tuple[np.ndarray, np.ndarray], order: Sequence[int]
) -> tuple[np.ndarray, np.ndarray]:
    """A napari-order box -> store order; ``order[i]`` is the napari axis of store axis ``i``."""
    lo, hi = box
    idx = np.asarray(order, dtype=np.int64)
    return np.asarray(lo)[idx], np.asarray(hi)[idx]


@dataclass(frozen=True)
class LevelPlan:
    """The outcome of planning: the level to show and the chunks to load there."""

    level: int
    chunks: np.ndarray  # (K, key_ndim)
    estimated_vertices: int


def chunks_in_box(
    chunks: np.ndarray, chunk_shape: np.ndarray, lo: np.ndarray, hi: np.ndarray, margin: float = 0.0
) -> np.ndarray:
    """Chunks (store order) whose spatial extent intersects the box grown by ``margin`` chunks."""
    c_lo = np.floor(lo / chunk_shape - margin).astype(np.int64)
    c_hi = np.floor(hi / chunk_shape + margin).astype(np.int64)
    spatial = chunks[:, chunks.shape[1] - lo.size :]
    keep = np.all((spatial >= c_lo) & (spatial <= c_hi), axis=1)
    return chunks[keep]


def plan_level(
    levels: Sequence,
    level_chunks: Sequence[np.ndarray],
    box: tuple[np.ndarray, np.ndarray],
    pixel_size: float,
    budget: int = DEFAULT_VERTEX_BUDGET,
    margin: float = 0.5,
    max_bin_pixels: float = MAX_BIN_PIXELS,
    locked: int | None = None,
) -> LevelPlan:
    """Pick the level for a view and the chunks to load (FORMAT07 §7.5, issue 4).

    Start from the coarsest level whose bin edge spans at most ``max_bin_pixels`` screen
    pixels (level 0 when none does), then go coarser while the visible chunks of that level
    are estimated to hold more than ``budget`` vertices (a level's vertex count spread evenly
    over its non-empty chunks). ``locked`` forces a level. ``levels`` are objects with
    ``index``, ``bin_shape``, ``chunk_shape`` and ``vertex_count``; ``level_chunks[i]`` are
    the non-empty chunks of ``levels[i]``.
    """
    lo, hi = (np.asarray(b, dtype=np.float64) for b in box)

    def estimate(i: int) -> tuple[np.ndarray, int]:
        lv = levels[i]
        all_chunks = level_chunks[i]
        visible = chunks_in_box(all_chunks, np.asarray(lv.chunk_shape), lo, hi, margin)
        per_chunk = lv.vertex_count / max(len(all_chunks), 1)
        return visible, int(round(per_chunk * len(visible)))

    if locked is not None:
        i = next(k for k, lv in enumerate(levels) if lv.index == locked)
        visible, est = estimate(i)
        return LevelPlan(levels[i].index, visible, est)
    fine = [
        k
        for k, lv in enumerate(levels)
        if float(np.max(lv.bin_shape)) <= max_bin_pixels * pixel_size
    ]
    i = max(fine) if fine else 0
    visible, est = estimate(i)
    while est > budget and i + 1 < len(levels):
        i += 1
        visible, est = estimate(i)
    return LevelPlan(levels[i].index, visible, est)


def initial_level(levels: Sequence, budget: int = DEFAULT_VERTEX_BUDGET) -> int:
    """The level to show first: the finest whose whole vertex count fits the budget,
    else the coarsest."""
    fitting = [lv.index for lv in levels if lv.vertex_count <= budget]
    return min(fitting) if fitting else max(lv.index for lv in levels)
