"""Level-of-detail planning: what the camera shows -> pyramid level + chunk set.

Pure functions over numbers (no napari, no Qt, no store access), so they are unit-testable;
:mod:`.controller` turns the viewer's camera and dims into a :class:`ViewState` and
:mod:`.loader` runs :func:`plan_level` on a worker thread.

Axis orders
-----------
A :class:`ViewState` and :func:`visible_box` work in the **store's napari axis order**: the
non-space axes first, then the space axes reversed (``(x, y, z)`` -> ``(z, y, x)``,
``(t, x, y)`` -> ``(t, y, x)``, see docs/coordinates.md), world units,
only the store's own ``ndim`` axes (the viewer's extra leading axes, such as the hidden
``t`` axis of the bounds box, are dropped by the controller).
:meth:`~napari_zarr_vectors.napari.layerdata.placement.Placement.to_store_box` maps such a box
back to store order; :func:`plan_level` and :func:`chunks_in_box` work in store order.

How a view is planned (docs/level-of-detail.md)
-----------------------------------------------
1. **Resolution first**: the coarsest level whose bin edge spans at most
   :data:`MAX_BIN_PIXELS` screen pixels (level 0 when none does), or the locked level.
2. Its chunks meeting the visible box (grown by :data:`MARGIN`) are read, the nearest
   ones up to :data:`READ_CAP_VERTICES`.
3. **Then objects**: when what the layers would hold (the geometry cropped to the box)
   is estimated over the vertex budget, a stable fraction of the objects is read
   (:mod:`.view_geometry`); the loader makes the count exact after reading.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from napari_zarr_vectors.format.geometry import GRAPH_TYPES
from napari_zarr_vectors.napari.coords import napari_axis_order, to_store_order
from napari_zarr_vectors.napari.lod.settings import DEFAULT_VERTEX_BUDGET
from napari_zarr_vectors.napari.lod.view_geometry import ladder_floor

if TYPE_CHECKING:
    from napari_zarr_vectors.format.metadata import LevelInfo

#: A level is "fine enough" when its bin edge spans at most this many screen pixels.
MAX_BIN_PIXELS = 4.0

#: The visible box is grown by this fraction of its size on every side of the displayed axes
#: before chunks are selected, so that small pans need no new chunks.
MARGIN = 0.1

#: The crop box snaps to a grid of about 1/SNAP_STEPS of its size (:func:`snap_box`).
SNAP_STEPS = 8.0

#: A view reads at most about this many vertices (whole chunks, before cropping and the
#: object subset): beyond it, the chunks nearest the view centre (about 250 MB decoded).
READ_CAP_VERTICES = 20_000_000

#: Screen pixels a camera-less overview (the reader's first read) is planned for.
OVERVIEW_PIXELS = 1000.0


class ChunkLists(Protocol):
    """``level_chunks[i]``: the non-empty chunks of the ``i``-th level (a list, or a view
    that lists them on access)."""

    def __getitem__(self, i: int, /) -> np.ndarray: ...


@dataclass(frozen=True)
class ViewState:
    """What the camera shows, in world units and the store's napari axis order.

    ``center`` is the camera centre of the displayed axes (2 or 3 values, in the order of
    ``displayed``), ``canvas_size`` is ``(height, width)`` in screen pixels, ``point`` the
    dims point of every axis, ``displayed`` the displayed axis indices (into the ``ndim``
    axes), ``thickness`` the slab thickness per axis along non-displayed axes (world units).
    ``view_direction`` and ``up_direction`` (displayed-axis order) are used in 3-D; a
    ``perspective`` camera is treated as seeing the whole extent.
    """

    ndisplay: int
    center: tuple[float, ...]
    zoom: float
    canvas_size: tuple[int, ...]
    point: tuple[float, ...]
    displayed: tuple[int, ...]
    thickness: tuple[float, ...]
    view_direction: tuple[float, ...] | None = None
    up_direction: tuple[float, ...] | None = None
    perspective: float = 0.0

    @property
    def pixel_size(self) -> float:
        """World units per screen pixel."""
        return 1.0 / max(float(self.zoom), 1e-12)

    @property
    def is_3d(self) -> bool:
        return self.ndisplay == 3 and len(self.displayed) >= 3


def visible_box(
    view: ViewState, extent_lo: np.ndarray, extent_hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """World box (napari axis order) the view can show, clipped to the data extent.

    2-D: the canvas around the camera centre on the displayed axes. 3-D: the bounding box
    of the part of the extent inside the orthographic view prism (the whole extent when the
    camera shows it all, or with a perspective camera). Both: the current slice +- half the
    thickness on the axes not displayed (e.g. the time slider of a 3-D + t store). A box
    that misses the extent is empty (``lo > hi`` on some axis).
    """
    lo = np.asarray(extent_lo, dtype=np.float64).copy()
    hi = np.asarray(extent_hi, dtype=np.float64).copy()
    ndim = lo.size
    half = np.asarray(view.canvas_size[-2:], dtype=np.float64) / (2.0 * max(view.zoom, 1e-12))
    flat = not view.is_3d or ndim < 3 or view.view_direction is None
    for axis in set(range(ndim)) - set(view.displayed[-2:] if flat else view.displayed[-3:]):
        t = view.thickness[axis] if axis < len(view.thickness) else 0.0  # a slider's slab
        lo[axis] = max(lo[axis], view.point[axis] - t / 2.0)
        hi[axis] = min(hi[axis], view.point[axis] + t / 2.0)
    if flat:
        disp = list(view.displayed[-2:])
        center = np.asarray(view.center[-2:], dtype=np.float64)
        for k, axis in enumerate(disp):
            lo[axis] = max(lo[axis], center[k] - half[k])
            hi[axis] = min(hi[axis], center[k] + half[k])
        return lo, hi
    if view.perspective:
        return lo, hi
    return _visible_box_3d(view, lo, hi, half)


def _visible_box_3d(view: ViewState, lo: np.ndarray, hi: np.ndarray, half: np.ndarray):
    """Bounding box of (extent box) ∩ (view prism), exactly: the intersection is a convex
    polytope whose vertices are meets of three of its ten bounding planes (six box faces,
    four prism sides; the prism is unbounded along the view direction)."""
    disp = list(view.displayed[-3:])
    vd = np.asarray(view.view_direction, dtype=np.float64)
    up = np.asarray(view.up_direction, dtype=np.float64)
    right = np.cross(vd, up)
    center = np.asarray(view.center[-3:], dtype=np.float64)
    b_lo, b_hi = lo[disp], hi[disp]
    # planes n . p <= c
    normals = [*np.eye(3), *(-np.eye(3)), right, -right, up, -up]
    offsets = [
        *b_hi,
        *(-b_lo),
        right @ center + half[1],
        -(right @ center) + half[1],
        up @ center + half[0],
        -(up @ center) + half[0],
    ]
    n = np.asarray(normals)
    c = np.asarray(offsets)
    scale = max(float(np.max(np.abs(b_hi - b_lo))), 1.0)
    corners = []
    for i in range(len(n)):
        for j in range(i + 1, len(n)):
            for k in range(j + 1, len(n)):
                a = n[[i, j, k]]
                if abs(np.linalg.det(a)) < 1e-9:
                    continue
                p = np.linalg.solve(a, c[[i, j, k]])
                if np.all(n @ p <= c + 1e-9 * scale):
                    corners.append(p)
    out_lo, out_hi = lo.copy(), hi.copy()
    if not corners:  # the view misses the extent: an empty box
        out_lo[disp], out_hi[disp] = b_hi, b_lo
        return out_lo, out_hi
    pts = np.asarray(corners)
    out_lo[disp] = np.maximum(b_lo, pts.min(axis=0))
    out_hi[disp] = np.minimum(b_hi, pts.max(axis=0))
    return out_lo, out_hi


def grow_box(
    box: tuple[np.ndarray, np.ndarray], axes: Sequence[int], fraction: float = MARGIN
) -> tuple[np.ndarray, np.ndarray]:
    """``box`` grown by ``fraction`` of its size on both sides of ``axes`` (others unchanged)."""
    lo, hi = (np.asarray(b, dtype=np.float64).copy() for b in box)
    for a in axes:
        pad = fraction * max(hi[a] - lo[a], 0.0)
        lo[a] -= pad
        hi[a] += pad
    return lo, hi


def snap_box(
    box: tuple[np.ndarray, np.ndarray], axes: Sequence[int], steps: float = SNAP_STEPS
) -> tuple[np.ndarray, np.ndarray]:
    """``box`` grown outwards on ``axes`` to a grid whose step is a power of two near
    ``1 / steps`` of the box's largest side there: views that pan or zoom a little get the
    same box (so the same crop, and nothing to reload)."""
    lo, hi = (np.asarray(b, dtype=np.float64).copy() for b in box)
    axes = [a for a in axes if np.isfinite(lo[a]) and np.isfinite(hi[a]) and hi[a] > lo[a]]
    if not axes:
        return lo, hi
    size = max(float(hi[a] - lo[a]) for a in axes)
    step = 2.0 ** np.floor(np.log2(size / steps))
    for a in axes:
        lo[a] = np.floor(lo[a] / step) * step
        hi[a] = np.ceil(hi[a] / step) * step
    return lo, hi


def is_empty(box: tuple[np.ndarray, np.ndarray]) -> bool:
    lo, hi = box
    return bool(np.any(np.asarray(lo) > np.asarray(hi)))


# --------------------------------------------------------------------------------------------
# chunks and levels
# --------------------------------------------------------------------------------------------


def chunks_in_box(
    chunks: np.ndarray, chunk_shape: np.ndarray, lo: np.ndarray, hi: np.ndarray, margin: float = 0.0
) -> np.ndarray:
    """Chunks (store order) whose spatial extent ``[c * edge, (c + 1) * edge)`` intersects
    the inclusive box ``[lo, hi]`` grown by ``margin`` chunk edges. Chunk keys with extra
    leading components (chunked by attribute) are matched on their trailing spatial ones.
    An empty box selects nothing."""
    chunks = np.asarray(chunks, dtype=np.int64)
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    if chunks.size == 0 or np.any(lo > hi):
        return chunks[:0]
    edge = np.asarray(chunk_shape, dtype=np.float64)[-lo.size :]
    c_lo = np.floor(lo / edge - margin).astype(np.int64)
    c_hi = np.floor(hi / edge + margin).astype(np.int64)
    spatial = chunks[:, chunks.shape[1] - lo.size :]
    keep = np.all((spatial >= c_lo) & (spatial <= c_hi), axis=1)
    return chunks[keep]


@dataclass(frozen=True)
class Prism:
    """An orthographic 3-D view in store order: points ``p`` with
    ``|(p - center) . right| <= half_width`` and ``|(p - center) . up| <= half_height``
    (unbounded along the view direction)."""

    center: np.ndarray
    right: np.ndarray
    up: np.ndarray
    half_width: float
    half_height: float

    @classmethod
    def of_view(cls, view: ViewState, margin: float = 0.0) -> Prism | None:
        """The prism of a 3-D orthographic view (store order), grown by ``margin`` of its
        size on every side; ``None`` for 2-D or perspective views."""
        if not view.is_3d or view.view_direction is None or view.perspective:
            return None
        vd = np.asarray(view.view_direction, dtype=np.float64)
        up = np.asarray(view.up_direction, dtype=np.float64)
        right = np.cross(vd, up)
        half = np.asarray(view.canvas_size[-2:], np.float64) / (2.0 * max(view.zoom, 1e-12))
        grow = 1.0 + 2.0 * margin
        # the displayed axes are the last three napari axes: three space axes
        center = np.asarray(view.center[-3:], np.float64)
        center, right, up = to_store_order(np.stack([center, right, up]), _SPACE_3D)
        return cls(center, right, up, float(half[1] * grow), float(half[0] * grow))


#: the store column of each displayed napari axis of a 3-D view
_SPACE_3D = napari_axis_order(("space",) * 3)


def chunks_in_prism(chunks: np.ndarray, chunk_shape: np.ndarray, prism: Prism) -> np.ndarray:
    """The chunks (store order) whose box meets the prism, exactly: along the view
    direction nothing separates them, so they meet when their shadows on the screen plane
    (a rectangle and a hexagon) do, i.e. when no separating axis among the rectangle's two
    sides and the hexagon's three edge normals exists."""
    chunks = np.asarray(chunks, dtype=np.int64)
    if chunks.size == 0:
        return chunks
    edge = np.asarray(chunk_shape, dtype=np.float64)[-3:]
    mid = (chunks[:, chunks.shape[1] - 3 :] + 0.5) * edge - prism.center
    view = np.cross(prism.up, prism.right)
    axes = [prism.right, prism.up]
    for e in np.eye(3):
        normal = np.cross(view, e)
        if np.linalg.norm(normal) > 1e-9:
            axes.append(normal / np.linalg.norm(normal))
    keep = np.ones(len(chunks), bool)
    for axis in axes:
        box_reach = float(np.abs(axis) @ (edge / 2))
        prism_reach = abs(axis @ prism.right) * prism.half_width
        prism_reach += abs(axis @ prism.up) * prism.half_height
        keep &= np.abs(mid @ axis) <= box_reach + prism_reach + 1e-9
    return chunks[keep]


def crop_fraction(
    chunks: np.ndarray,
    chunk_shape: np.ndarray,
    crop: tuple[np.ndarray, np.ndarray] | None,
) -> np.ndarray:
    """Per chunk, the fraction of its volume inside ``crop`` (store order; ``None``: 1)."""
    chunks = np.asarray(chunks, dtype=np.int64)
    if crop is None or chunks.size == 0:
        return np.ones(len(chunks))
    lo, hi = (np.asarray(b, dtype=np.float64) for b in crop)
    edge = np.asarray(chunk_shape, dtype=np.float64)[-lo.size :]
    spatial = chunks[:, chunks.shape[1] - lo.size :].astype(np.float64)
    c_lo = spatial * edge
    c_hi = c_lo + edge
    # a crop thinner than a thousandth of a chunk counts as that thin (a plane holds points)
    hi = np.maximum(hi, lo + 1e-3 * edge)
    overlap = np.clip(np.minimum(c_hi, hi) - np.maximum(c_lo, lo), 0.0, None)
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = overlap / edge
    frac = np.where(np.isfinite(frac), frac, 1.0)
    return np.clip(frac.prod(axis=1), 0.0, 1.0)


@dataclass(frozen=True)
class LevelPlan:
    """The outcome of planning: the level to show, the chunks to read there, and the part of
    their objects the vertex budget lets the layers hold."""

    level: int
    chunks: np.ndarray  # (K, key_ndim)
    #: estimated vertices the layers would hold with every object in view (after the crop)
    estimated_vertices: int
    #: chunks of the view left out because reading them all would exceed the read cap
    trimmed: int = 0
    #: per-chunk vertex estimate (whole chunks), aligned with ``chunks``
    estimates: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False)
    #: the object subset to read: objects ranked below it (:mod:`.view_geometry`), 1 = all
    fraction: float = 1.0
    #: the whole level, uncropped, whatever the view (:func:`whole_plan`): nothing to
    #: reload while the camera moves
    whole: bool = False


def layer_rows(geometry_type: str, vertex_count: int | None) -> int | None:
    """Estimated layer rows of ``vertex_count`` stored vertices at level 0 (what the budget
    counts, :func:`.view_geometry.resident_vertices`): about three per node for graphs and
    skeletons (the node and two segment ends per edge), one per vertex otherwise."""
    if vertex_count is None:
        return None
    return int(vertex_count) * (3 if geometry_type in GRAPH_TYPES else 1)


def whole_plan(level: LevelInfo, chunks: np.ndarray) -> LevelPlan:
    """Every non-empty chunk of ``level``, uncropped and without a subset: the plan of a
    store small enough to show whole in every view."""
    chunks = np.asarray(chunks, dtype=np.int64)
    total = int(getattr(level, "vertex_count", 0) or 0)
    estimates = np.full(len(chunks), total / max(len(chunks), 1))
    return LevelPlan(int(level.index), chunks, total, estimates=estimates, whole=True)


def chunk_estimates(
    level: LevelInfo,
    chunks: np.ndarray,
    n_level_chunks: int,
    counts: Mapping[tuple[int, ...], float] | None = None,
    crop: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Estimated vertices each of ``chunks`` contributes: its known row count (``counts``:
    chunk key -> rows, learnt from earlier reads) else the level's vertex count spread
    evenly over its ``n_level_chunks`` non-empty chunks; times the fraction of the chunk
    inside ``crop``."""
    chunks = np.asarray(chunks, dtype=np.int64)
    total = getattr(level, "vertex_count", None)
    mean = (float(total) / max(n_level_chunks, 1)) if total is not None else 0.0
    est = np.full(len(chunks), mean)
    if counts:
        for i, key in enumerate(map(tuple, chunks.tolist())):
            known = counts.get(key)
            if known is not None:
                est[i] = known
    return est * crop_fraction(chunks, np.asarray(level.chunk_shape), crop)


def nearest_first(chunks: np.ndarray, chunk_shape: np.ndarray, center: np.ndarray) -> np.ndarray:
    """Rows of ``chunks`` ordered by the distance, in chunk edges, of their centres from
    ``center`` (chunk-grid coordinates: store order, any grid origin subtracted; its values
    are the last ``len(center)`` axes), nearest first; ties keep their order."""
    chunks = np.asarray(chunks, dtype=np.int64)
    center = np.asarray(center, dtype=np.float64)
    edge = np.asarray(chunk_shape, dtype=np.float64)[-center.size :]
    mid = (chunks[:, chunks.shape[1] - center.size :] + 0.5) * edge
    return np.argsort(np.linalg.norm((mid - center) / edge, axis=1), kind="stable")


def trim_to_budget(
    chunks: np.ndarray,
    estimates: np.ndarray,
    chunk_shape: np.ndarray,
    center: np.ndarray | None,
    budget: float,
) -> tuple[np.ndarray, np.ndarray]:
    """The chunks nearest ``center`` (store order) whose estimates add up to at most
    ``budget``, in their original order; returns ``(chunks, estimates)``."""
    chunks = np.asarray(chunks, dtype=np.int64)
    estimates = np.asarray(estimates, dtype=np.float64)
    if estimates.sum() <= budget or len(chunks) == 0:
        return chunks, estimates
    order = np.arange(len(chunks)) if center is None else nearest_first(chunks, chunk_shape, center)
    keep = order[np.cumsum(estimates[order]) <= budget]
    keep = np.sort(keep)
    return chunks[keep], estimates[keep]


def resolution_level(
    levels: Sequence, pixel_size: float, max_bin_pixels: float = MAX_BIN_PIXELS
) -> int:
    """The index of the coarsest level whose bin edge spans at most ``max_bin_pixels``
    screen pixels (the finest level when none does)."""
    fine = [lv.index for lv in levels if float(np.max(lv.bin_shape)) <= max_bin_pixels * pixel_size]
    return int(max(fine)) if fine else int(min(lv.index for lv in levels))


def plan_level(
    levels: Sequence,
    level_chunks: ChunkLists,
    box: tuple[np.ndarray, np.ndarray],
    pixel_size: float,
    budget: int = DEFAULT_VERTEX_BUDGET,
    margin: float = 0.0,
    max_bin_pixels: float = MAX_BIN_PIXELS,
    locked: int | None = None,
    *,
    counts: Mapping[tuple[int, tuple[int, ...]], float] | None = None,
    crop: tuple[np.ndarray, np.ndarray] | None = None,
    center: np.ndarray | None = None,
    prism: Prism | None = None,
    read_cap: float = READ_CAP_VERTICES,
    share: float = 1.0,
) -> LevelPlan:
    """Pick the level for a view, the chunks to read and the object fraction to show.

    **Resolution first** (:func:`resolution_level`): the coarsest level whose bin edge spans
    at most ``max_bin_pixels`` screen pixels, level 0 when none does; ``locked`` forces a
    level. Its chunks intersecting ``box`` (store order, world units, grown by ``margin``
    chunk edges; ``prism``, a 3-D view, drops the box's chunks outside it) are read.

    **Then objects**: when the vertices the layers would hold (:func:`chunk_estimates`,
    ``crop`` being the part of the box the layers keep, times ``share``, the part of the
    objects an object filter lets through) exceed ``budget``, only a ladder fraction of the
    objects is read (:func:`.view_geometry.ladder_floor`), never a coarser level.

    Chunks nearest ``center`` are kept up to ``read_cap`` estimated vertices (whole chunks):
    a view whose chunks would hold more is read in part (:attr:`LevelPlan.trimmed`).

    ``levels`` are objects with ``index``, ``bin_shape``, ``chunk_shape`` and
    ``vertex_count``; ``level_chunks[i]`` are the non-empty chunks of ``levels[i]``
    (indexed only for the level the plan uses, so it may list lazily); ``counts`` maps
    ``(level index, chunk key)`` to known row counts.
    """
    if not levels:
        raise ValueError("a store without levels cannot be planned")
    if locked is not None:
        matches = [k for k, lv in enumerate(levels) if lv.index == locked]
        if not matches:
            raise KeyError(f"no level {locked} (levels: {sorted(lv.index for lv in levels)})")
        k = matches[0]
    else:
        target = resolution_level(levels, pixel_size, max_bin_pixels)
        k = next(j for j, lv in enumerate(levels) if lv.index == target)
    lv = levels[k]
    all_chunks = np.asarray(level_chunks[k], dtype=np.int64)
    lo, hi = (np.asarray(b, dtype=np.float64) for b in box)
    edge = np.asarray(lv.chunk_shape)
    origin = getattr(lv, "grid_origin", None)
    if origin is not None:  # chunk keys counted from a grid origin (the spec's dense form)
        origin = np.asarray(origin, dtype=np.float64)
        lo, hi = lo - origin, hi - origin
        crop = None if crop is None else (crop[0] - origin, crop[1] - origin)
        center = None if center is None else np.asarray(center, np.float64) - origin
        if prism is not None:
            prism = dataclasses.replace(prism, center=prism.center - origin)
    visible = chunks_in_box(all_chunks, edge, lo, hi, margin)
    if prism is not None and len(lo) == 3:
        visible = chunks_in_prism(visible, edge, prism)
    known = None
    if counts:
        known = {key[1]: v for key, v in counts.items() if key[0] == lv.index}
    whole = chunk_estimates(lv, visible, len(all_chunks), known)
    kept, kept_whole = trim_to_budget(visible, whole, edge, center, read_cap)
    in_view = float((kept_whole * crop_fraction(kept, edge, crop)).sum()) * float(share)
    fraction = 1.0 if in_view <= budget else ladder_floor(budget / in_view)
    return LevelPlan(
        int(lv.index),
        kept,
        int(round(in_view)),
        trimmed=len(visible) - len(kept),
        estimates=kept_whole,
        fraction=fraction,
    )


def initial_level(levels: Sequence, budget: int = DEFAULT_VERTEX_BUDGET) -> int:
    """The level to show first: the finest whose whole vertex count fits ``budget``, else the
    coarsest known one.

    Levels with an unknown (``None``) vertex count never fit; when no count is known at all,
    level 0 is used.
    """
    ordered = sorted(levels, key=lambda lv: lv.index)
    known = [lv for lv in ordered if lv.vertex_count is not None]
    for lv in known:
        if lv.vertex_count <= budget:
            return int(lv.index)
    if not known:
        return int(ordered[0].index) if ordered else 0
    return int(min(known, key=lambda lv: (lv.vertex_count, -lv.index)).index)
