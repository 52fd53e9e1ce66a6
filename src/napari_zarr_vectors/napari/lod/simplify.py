"""Paths simplified to the screen: fewer vertices per streamline where a pixel cannot tell.

At overview zoom a streamline of 50 stored vertices spans a few hundred screen pixels and
most of its vertices add nothing a pixel can show; each of them still costs the UI thread
a Tracks row (docs/level-of-detail.md). :func:`simplify_rows` keeps, per path, the vertices
a Douglas-Peucker pass keeps at a tolerance of about one screen pixel, so the vertex budget
holds more whole streamlines.

Pure numpy over packed paths (no napari, no Qt, no store access); :mod:`.loader` runs it on
the worker thread between the crop and the object subset. The pass runs over **every path
at once**: each round, every open span (between two kept vertices of one path) finds its
vertex farthest from its chord and keeps it when it lies farther than the tolerance; a span
whose vertices all lie within it is closed. Rounds are as many as the deepest split (a few
for real streamlines), each a handful of array operations over the open vertices: no
Python loop per path or per vertex.

Guarantees (``tests/napari/lod/test_simplify.py``): a path's first and last vertices are kept,
its kept vertices keep their order, every original vertex (and so, by convexity, every
point of the original polyline) lies within the tolerance of the simplified polyline, and
paths keep their object ids. A path is never split or dropped.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from napari_zarr_vectors.format.geometry import PIECE_TYPES, Geometry, flat_paths, split_lengths

#: a vertex is kept where the path deviates from its simplified line by more than this many
#: screen pixels
TOLERANCE_PIXELS = 1.0


def tolerance_band(pixel_size: float, pixels: float = TOLERANCE_PIXELS) -> float:
    """The tolerance for a view whose pixel spans ``pixel_size`` store units: ``pixels``
    pixels rounded down to a power of two of store units (views zoomed a little share
    one band, so the same simplified paths; zooming in by two refines them). 0 for an
    unknown pixel size."""
    value = float(pixel_size) * float(pixels)
    if not math.isfinite(value) or value <= 0.0:
        return 0.0
    return float(2.0 ** math.floor(math.log2(value)))


def simplify_rows(positions: np.ndarray, lengths: np.ndarray, tolerance: float) -> np.ndarray:
    """Which of the packed path vertices ``positions`` (paths one after another, of
    ``lengths``) a simplification to ``tolerance`` keeps: a boolean mask. Endpoints of
    every path are kept; ``tolerance <= 0`` keeps everything."""
    pos = np.asarray(positions, dtype=np.float64)
    lengths = np.asarray(lengths, dtype=np.int64)
    n = len(pos)
    keep = np.ones(n, bool)
    if tolerance <= 0.0 or n == 0:
        return keep
    keep[:] = False
    ends = np.cumsum(lengths)
    starts = ends - lengths
    nonempty = lengths > 0
    keep[starts[nonempty]] = True
    keep[ends[nonempty] - 1] = True
    tol2 = float(tolerance) ** 2
    open_rows = np.flatnonzero(~keep)  # vertices of spans not yet closed
    while len(open_rows):
        kept = np.flatnonzero(keep)
        span = np.searchsorted(kept, open_rows)  # open_rows[i] lies in kept[span-1]..kept[span]
        a = pos[kept[span - 1]]
        d = pos[kept[span]] - a
        p = pos[open_rows] - a
        dd = np.einsum("ij,ij->i", d, d)
        with np.errstate(invalid="ignore", divide="ignore"):
            t = np.where(dd > 0, np.einsum("ij,ij->i", p, d) / dd, 0.0)
        np.clip(t, 0.0, 1.0, out=t)
        off = p - t[:, None] * d
        dist2 = np.einsum("ij,ij->i", off, off)
        # the farthest vertex of each span (spans are runs of equal ``span``)
        first = np.flatnonzero(np.r_[True, span[1:] != span[:-1]])
        worst = np.maximum.reduceat(dist2, first)
        runs = np.diff(np.r_[first, len(span)])
        worst_of = np.repeat(worst, runs)
        split = (dist2 == worst_of) & (worst_of > tol2)
        # one split vertex per span (the first of equal farthest ones)
        at = np.flatnonzero(split)
        at = at[np.r_[True, span[at][1:] != span[at][:-1]]] if len(at) else at
        keep[open_rows[at]] = True
        still = worst_of > tol2
        still[at] = False
        open_rows = open_rows[still]
    return keep


@dataclasses.dataclass(frozen=True)
class Simplified:
    """The outcome of :func:`simplify_geometry`."""

    geometry: Geometry
    #: the tolerance used (store units; 0: not simplified)
    tolerance: float
    #: path rows before / after
    rows_before: int
    rows_after: int


def simplifiable(geometry: Geometry) -> bool:
    """Whether ``geometry`` holds paths this module simplifies (polylines, streamlines)."""
    return geometry.geometry_type in PIECE_TYPES and len(geometry.paths) > 0


def simplify_geometry(geometry: Geometry, tolerance: float) -> Simplified:
    """``geometry`` with each path reduced to the vertices :func:`simplify_rows` keeps (the
    same paths, in the same order, with the same object ids; positions and attributes are
    untouched, the paths only index fewer of their rows)."""
    rows, lengths = flat_paths(geometry.paths)
    before = int(len(rows))
    if not simplifiable(geometry) or tolerance <= 0.0:
        return Simplified(geometry, 0.0, before, before)
    keep = simplify_rows(geometry.positions[rows], lengths, tolerance)
    path_of = np.repeat(np.arange(len(lengths)), lengths)
    new_lengths = np.bincount(path_of[keep], minlength=len(lengths)).astype(np.int64)
    new_rows = rows[keep]
    out = dataclasses.replace(geometry, paths=split_lengths(new_rows, new_lengths))
    return Simplified(out, float(tolerance), before, int(len(new_rows)))
