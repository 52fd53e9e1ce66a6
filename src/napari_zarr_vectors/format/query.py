"""Queries -> chunk sets: which chunks a bbox, object ids or group ids need."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .errors import ZVArgumentError
from .metadata import LevelInfo
from .validate import MAX_COORD


def normalise_bbox(
    bbox: Sequence[Sequence[float] | np.ndarray], ndim: int, store: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)`` as float arrays of length ``ndim``; raises :class:`ZVArgumentError` (a
    ``ValueError``) naming ``store`` when malformed: not a pair, the wrong number of
    coordinates, a NaN corner or ``lo > hi`` on an axis."""
    where = f"{store}: " if store else ""
    if len(bbox) != 2:
        raise ZVArgumentError(f"{where}bbox must be a pair (lo, hi)")
    try:
        lo = np.asarray(bbox[0], dtype=np.float64).reshape(-1)
        hi = np.asarray(bbox[1], dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise ZVArgumentError(f"{where}bbox corners must be numbers: {exc}") from None
    if lo.size != ndim or hi.size != ndim:
        raise ZVArgumentError(f"{where}bbox corners must have {ndim} coordinates")
    if np.isnan(lo).any() or np.isnan(hi).any():
        raise ZVArgumentError(f"{where}bbox {lo.tolist()}, {hi.tolist()} holds NaN")
    if np.any(lo > hi):
        raise ZVArgumentError(f"{where}bbox lo {lo.tolist()} exceeds hi {hi.tolist()}")
    return lo, hi


def inside_box(
    positions: np.ndarray, lo: np.ndarray, hi: np.ndarray, axes: Sequence[int] | None = None
) -> np.ndarray:
    """Whether each row of ``positions`` lies in the inclusive box ``[lo, hi]``, tested
    along ``axes`` only (default: every axis), a column at a time."""
    out = np.ones(len(positions), bool)
    for a in range(positions.shape[1]) if axes is None else axes:
        col = positions[:, a]
        out &= (col >= lo[a]) & (col <= hi[a])
    return out


def inside_box_within(
    positions: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    extent: tuple[np.ndarray, np.ndarray] | None,
) -> np.ndarray | bool:
    """:func:`inside_box` of rows whose ``extent`` (``(min, max)`` of every column, NaN
    where a column holds one; ``None``: unknown) is known: only the sides of the box that
    cut the extent are tested; ``True`` when every row is inside, ``False`` when none is."""
    if extent is None:
        return inside_box(positions, lo, hi)
    low, high = extent
    if np.any(high < lo) or np.any(low > hi):  # (NaN compares False: tested below)
        return False
    out: np.ndarray | None = None
    for a in range(positions.shape[1]):
        col = positions[:, a]
        if not low[a] >= lo[a]:
            out = col >= lo[a] if out is None else np.logical_and(out, col >= lo[a], out=out)
        if not high[a] <= hi[a]:
            out = col <= hi[a] if out is None else np.logical_and(out, col <= hi[a], out=out)
    return True if out is None else out


#: Rows reduced together by :func:`column_extremes` (their values are one SIMD-wide row).
_EXTREME_BLOCK = 256


def column_extremes(positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(min, max)`` of every column of the ``(N, ndim)`` rows (``N > 0``; float64; NaN
    when a column holds one), reducing blocks of :data:`_EXTREME_BLOCK` rows as one long
    row (~30x ``min(axis=0)``, which walks one strided column at a time). The rows past the
    last whole block are taken as one more block ending at the last row (it overlaps the
    one before: the extremes do not change), and both sides are folded to ``ndim`` values
    in one reduction: a chunk of 8,000 rows costs about a third less than with a reduction
    per side and per leftover column."""
    n, ndim = positions.shape
    if n < _EXTREME_BLOCK or not positions.flags.c_contiguous:  # one reduction per side
        return positions.min(axis=0).astype(np.float64), positions.max(axis=0).astype(np.float64)
    full = n - n % _EXTREME_BLOCK
    block = positions[:full].reshape(-1, ndim * _EXTREME_BLOCK)
    low = np.minimum.reduce(block, axis=0)
    high = np.maximum.reduce(block, axis=0)
    if full < n:
        tail = positions[n - _EXTREME_BLOCK :].reshape(-1)
        np.minimum(low, tail, out=low)
        np.maximum(high, tail, out=high)
    np.negative(high, out=high)  # both sides as minima: one reduction folds them
    both = np.minimum.reduce(np.stack([low, high]).reshape(2, _EXTREME_BLOCK, ndim), axis=1)
    both = both.astype(np.float64)
    return both[0], -both[1]


def bbox_chunk_range(
    level: LevelInfo, lo: np.ndarray, hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Inclusive spatial chunk coordinate range ``[floor(lo/cs), floor(hi/cs)]`` (FORMAT07 §9.2),
    counted from the level's ``grid_origin`` when it has one (the spec's dense form). Infinite
    or huge sides end at the widest grid a store can hold (``±MAX_COORD``)."""
    cs = level.chunk_shape
    if level.grid_origin is not None:
        lo, hi = lo - level.grid_origin, hi - level.grid_origin

    def key(x: np.ndarray) -> np.ndarray:
        chunk: np.ndarray = np.clip(np.floor(x / cs), -MAX_COORD, MAX_COORD).astype(np.int64)
        return chunk

    return key(lo), key(hi)


def chunks_in_bbox(
    chunks: np.ndarray, level: LevelInfo, lo: np.ndarray, hi: np.ndarray
) -> np.ndarray:
    """The rows of ``chunks`` whose spatial part intersects the box (any attribute bin)."""
    c_lo, c_hi = bbox_chunk_range(level, lo, hi)
    spatial = chunks[:, chunks.shape[1] - lo.size :]
    keep = np.all((spatial >= c_lo) & (spatial <= c_hi), axis=1)
    return chunks[keep]


def candidate_chunks(
    level: LevelInfo, lo: np.ndarray, hi: np.ndarray, limit: int | None = None
) -> np.ndarray | None:
    """Every spatial chunk coordinate of the box in level order (``None`` when more than
    ``limit``), for reads that should not list the level (small boxes, unlistable stores)."""
    c_lo, c_hi = bbox_chunk_range(level, lo, hi)
    if limit is not None and np.prod((c_hi - c_lo + 1).astype(np.float64)) > limit:
        return None
    axes = [np.arange(a, b + 1) for a, b in zip(c_lo, c_hi, strict=True)]
    grid = np.meshgrid(*axes, indexing="ij")
    return np.stack([g.reshape(-1) for g in grid], axis=1).astype(np.int64)
