"""A read geometry cut down to what one view shows: crop to the visible box, a stable object
subset within the vertex budget, the user's object filter, and the count of what the layers
will hold.

Pure numpy over :class:`~napari_zarr_vectors.format.geometry.Geometry` (no napari, no Qt,
no store access); :mod:`.loader` runs it on the worker thread between assembly and the layer
builders. Nothing here loops per vertex, per edge or per face.

What the layers hold (:func:`resident_vertices`)
------------------------------------------------
The vertex budget bounds the rows napari's layers are handed: Tracks rows (one per path
vertex: coarse levels repeat shared metavertices in every path), Vectors segment ends (two per
edge) plus node Points for graphs and skeletons, Points, Surface vertices.

The object subset (:func:`object_rank`, :func:`subset_fraction`)
-----------------------------------------------------------------
Every object has a fixed rank in ``[0, 1)`` (a hash of its id). A view over budget shows the
objects whose rank is below a fraction ``f``; ``f`` is taken from a fixed ladder
(:data:`FRACTION_STEPS` per halving), so small pans keep the same set, zooming in (fewer
vertices in view) only raises ``f`` and so only adds objects, and an object shown at ``f``
is shown at every larger ``f``. Stores without object ids rank their vertices by position.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from napari_zarr_vectors.format.distinct import distinct
from napari_zarr_vectors.format.geometry import (
    GRAPH_TYPES,
    Geometry,
    GeometryType,
    flat_paths,
    split_lengths,
)
from napari_zarr_vectors.format.query import inside_box
from napari_zarr_vectors.format.ranks import object_rank, position_rank

#: ladder of subset fractions: ``2 ** (-k / FRACTION_STEPS)``
FRACTION_STEPS = 4

#: the smallest fraction the ladder goes down to (below it the view shows nothing useful)
MIN_FRACTION = 2.0**-24

Box = tuple[np.ndarray, np.ndarray]


# --------------------------------------------------------------------------------------------
# ranks and the subset fraction
# --------------------------------------------------------------------------------------------


def ladder_floor(fraction: float) -> float:
    """The largest ladder step ``2 ** (-k / FRACTION_STEPS)`` at most ``fraction`` (1 for
    ``fraction >= 1``, 0 below :data:`MIN_FRACTION`)."""
    if fraction >= 1.0:
        return 1.0
    if fraction < MIN_FRACTION:
        return 0.0
    k = int(np.ceil(-np.log2(fraction) * FRACTION_STEPS - 1e-9))
    return float(2.0 ** (-k / FRACTION_STEPS))


def ladder_step(fraction: float, steps: int) -> float:
    """``fraction`` moved ``steps`` ladder steps up (capped at 1)."""
    if fraction <= 0.0:
        return MIN_FRACTION if steps > 0 else 0.0
    return min(1.0, ladder_floor(fraction) * 2.0 ** (steps / FRACTION_STEPS))


def subset_fraction(ranks: np.ndarray, counts: np.ndarray, budget: int) -> float:
    """The largest ladder fraction ``f`` such that the items with ``rank < f`` hold at most
    ``budget`` vertices (``counts`` per item); 1 when everything fits."""
    ranks = np.asarray(ranks, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    if counts.sum() <= budget:
        return 1.0
    order = np.argsort(ranks, kind="stable")
    total = np.cumsum(counts[order])
    fits = np.searchsorted(total, budget, side="right")  # items 0..fits-1 fit
    # any f up to the rank of the first item that does not fit keeps the prefix that fits
    limit = ranks[order[fits]] if fits < len(order) else 1.0
    f = ladder_floor(limit)
    while f > 0.0 and f >= limit:  # strictly below the first item that does not fit
        f = ladder_floor(f * (1.0 - 1e-12))
    return f


# --------------------------------------------------------------------------------------------
# cropping to a box
# --------------------------------------------------------------------------------------------


def segments_meet_box(p0: np.ndarray, p1: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Whether each segment ``p0[i] -> p1[i]`` meets the closed box ``[lo, hi]``
    (Liang-Barsky clipping, vectorised; infinite box sides are fine)."""
    p0 = np.asarray(p0, dtype=np.float64)
    d = np.asarray(p1, dtype=np.float64) - p0
    t0 = np.zeros(len(p0))
    t1 = np.ones(len(p0))
    with np.errstate(divide="ignore", invalid="ignore"):
        for a in range(p0.shape[1]):
            da, pa = d[:, a], p0[:, a]
            ta = (lo[a] - pa) / da
            tb = (hi[a] - pa) / da
            moving = da != 0
            t0 = np.where(moving, np.maximum(t0, np.minimum(ta, tb)), t0)
            t1 = np.where(moving, np.minimum(t1, np.maximum(ta, tb)), t1)
            still_out = ~moving & ((pa < lo[a]) | (pa > hi[a]))
            t1 = np.where(still_out, -1.0, t1)
    return t0 <= t1


def crop_geometry(geometry: Geometry, box: Box) -> Geometry:
    """Only what meets ``box`` (store order, inclusive, sides may be infinite).

    Paths keep the segments that meet the box; a path leaving and re-entering the box
    becomes several paths with the same object id (so picking, filters and colours still see
    one object). Graph and skeleton edges are kept when they meet the box, with their two
    vertices; mesh faces when their bounding box meets it; points when inside.
    """
    lo, hi = (np.asarray(b, dtype=np.float64) for b in box)
    pos = geometry.positions
    n = geometry.vertex_count
    if n == 0:
        return geometry
    if geometry.paths:
        return _crop_paths(geometry, lo, hi)
    edges = np.asarray(geometry.edges, dtype=np.int64).reshape(-1, 2)
    faces = np.asarray(geometry.faces, dtype=np.int64).reshape(-1, 3)
    keep = inside_box(pos, lo, hi)
    edge_keep = np.zeros(len(edges), bool)
    face_keep = np.zeros(len(faces), bool)
    if len(edges):
        edge_keep = segments_meet_box(pos[edges[:, 0]], pos[edges[:, 1]], lo, hi)
        keep[edges[edge_keep].ravel()] = True
    if len(faces):
        tri = pos[faces]  # (F, 3, ndim)
        face_keep = np.all((tri.max(axis=1) >= lo) & (tri.min(axis=1) <= hi), axis=1)
        keep[:] = False
        keep[faces[face_keep].ravel()] = True
    if keep.all():
        return geometry
    return _compact(geometry, keep, edge_keep, face_keep, None, None)


def _crop_paths(geometry: Geometry, lo: np.ndarray, hi: np.ndarray) -> Geometry:
    pos = geometry.positions
    rows, lengths = flat_paths(geometry.paths)
    ids = np.asarray(geometry.path_object_ids, dtype=np.int64)
    m = len(rows)
    path_of = np.repeat(np.arange(len(lengths)), lengths)
    # seg[i]: the segment rows[i] -> rows[i + 1] exists (same path) and meets the box
    seg = np.zeros(m, bool)
    if m > 1:
        same = path_of[1:] == path_of[:-1]
        a, b = rows[:-1][same], rows[1:][same]
        seg[:-1][same] = segments_meet_box(pos[a], pos[b], lo, hi)
    prev = np.r_[False, seg[:-1]]
    single = np.repeat(lengths == 1, lengths) & inside_box(pos[rows], lo, hi)
    kept = seg | prev | single
    if kept.all():
        return geometry
    start = kept & ~prev  # a kept row not joined to the row before starts a new path
    run = np.cumsum(start)[kept] - 1
    new_rows = rows[kept]
    run_lengths = np.bincount(run, minlength=int(start.sum()))
    run_ids = (
        ids[path_of[kept][np.r_[0, np.cumsum(run_lengths)[:-1]]]] if len(run_lengths) else ids[:0]
    )
    keep = np.zeros(geometry.vertex_count, bool)
    keep[new_rows] = True
    paths = split_lengths(new_rows, run_lengths)
    return _compact(geometry, keep, None, None, paths, run_ids)


def _compact(
    geometry: Geometry,
    keep: np.ndarray,
    edge_keep: np.ndarray | None,
    face_keep: np.ndarray | None,
    paths: Sequence[np.ndarray] | None,
    path_ids: np.ndarray | None,
) -> Geometry:
    """``geometry`` restricted to the rows ``keep`` (and the given edges, faces or paths),
    rows renumbered."""
    n = geometry.vertex_count
    remap = np.full(n, -1, dtype=np.int64)
    remap[keep] = np.arange(int(keep.sum()))
    edges = np.asarray(geometry.edges, dtype=np.int64).reshape(-1, 2)
    faces = np.asarray(geometry.faces, dtype=np.int64).reshape(-1, 3)
    if paths is not None:
        new_paths = [remap[p] for p in paths]
        if new_paths:
            flat = np.concatenate(new_paths)
            pid = np.repeat(np.arange(len(new_paths)), [len(p) for p in new_paths])
            same = pid[1:] == pid[:-1]
            new_edges = np.stack([flat[:-1][same], flat[1:][same]], axis=1)
        else:
            new_edges = np.empty((0, 2), np.int64)
        edge_attrs = {}
        new_faces = np.empty((0, 3), np.int64)
    else:
        if edge_keep is None:
            edge_keep = np.all(keep[edges], axis=1) if len(edges) else np.zeros(0, bool)
        if face_keep is None:
            face_keep = np.all(keep[faces], axis=1) if len(faces) else np.zeros(0, bool)
        new_edges = remap[edges[edge_keep]]
        edge_attrs = {k: np.asarray(v)[edge_keep] for k, v in geometry.edge_attributes.items()}
        new_faces = remap[faces[face_keep]]
        new_paths = []
        path_ids = np.empty(0, np.int64)
    return Geometry(
        geometry_type=geometry.geometry_type,
        level=geometry.level,
        positions=geometry.positions[keep],
        vertex_attributes={k: np.asarray(v)[keep] for k, v in geometry.vertex_attributes.items()},
        vertex_object_ids=(
            None
            if geometry.vertex_object_ids is None
            else np.asarray(geometry.vertex_object_ids)[keep]
        ),
        edges=new_edges,
        edge_attributes=edge_attrs,
        faces=new_faces,
        paths=new_paths,
        path_object_ids=np.asarray(path_ids, dtype=np.int64),
        chunks=geometry.chunks,
    )


# --------------------------------------------------------------------------------------------
# object filter and subset
# --------------------------------------------------------------------------------------------


def filter_geometry(geometry: Geometry, allowed_ids: np.ndarray) -> Geometry:
    """Only the objects ``allowed_ids``: paths by their object id, vertices by theirs, edges
    and faces whose vertices all stay; rows are compacted. Stores without object ids are
    returned unchanged."""
    allowed = distinct(np.asarray(allowed_ids, dtype=np.int64).ravel())
    if geometry.paths:
        keep_path = np.isin(np.asarray(geometry.path_object_ids, dtype=np.int64), allowed)
        return _keep_paths(geometry, keep_path)
    if geometry.vertex_object_ids is None:
        return geometry
    keep = np.isin(np.asarray(geometry.vertex_object_ids, dtype=np.int64), allowed)
    return _compact(geometry, keep, None, None, None, None)


def _keep_paths(geometry: Geometry, keep_path: np.ndarray) -> Geometry:
    if keep_path.all():
        return geometry
    paths = [np.asarray(p, np.int64) for p, k in zip(geometry.paths, keep_path, strict=True) if k]
    keep = np.zeros(geometry.vertex_count, bool)
    if paths:
        keep[np.concatenate(paths)] = True
    ids = np.asarray(geometry.path_object_ids, dtype=np.int64)[keep_path]
    return _compact(geometry, keep, None, None, paths, ids)


def resident_vertices(geometry: Geometry) -> int:
    """Vertices the layers will hold: path rows for polylines and streamlines (Tracks; coarse
    levels share metavertices between paths, each path holds its own copy), two ends per
    segment for lines (Vectors), two segment ends per edge plus the nodes for graphs and
    skeletons, else the vertices."""
    if (
        geometry.paths and geometry.geometry_type == GeometryType.LINE
    ):  # Vectors: two ends a segment
        return int(sum(2 * max(len(p) - 1, 0) for p in geometry.paths))
    if geometry.paths:
        return int(sum(len(p) for p in geometry.paths))
    if geometry.geometry_type in GRAPH_TYPES:
        return int(2 * len(geometry.edges) + geometry.vertex_count)
    return int(geometry.vertex_count)


@dataclass(frozen=True)
class Subset:
    """The outcome of :func:`subset_to_budget`."""

    geometry: Geometry
    #: the ladder fraction shown (1.0: everything in view)
    fraction: float
    #: what was ranked: ``"objects"``, or ``"vertices"`` (point clouds)
    kind: str
    #: objects (or vertices, for stores without objects) in view before / after the subset
    items_in_view: int
    items_shown: int
    #: vertices the layers would hold without / with the subset
    vertices_in_view: int
    vertices_shown: int


def _items(geometry: Geometry) -> tuple[np.ndarray, np.ndarray, str]:
    """``(item id per counted vertex, weight per counted vertex, kind)``: what the subset
    ranks (object ids, or vertex rows when there are none) and how many layer vertices each
    contributes."""
    if geometry.paths:
        rows, lengths = flat_paths(geometry.paths)
        ids = np.repeat(np.asarray(geometry.path_object_ids, np.int64), lengths)
        weight = np.ones(len(ids))
        if geometry.geometry_type == GeometryType.LINE:  # a path of k vertices is 2 (k - 1) ends
            first = np.cumsum(lengths) - lengths
            weight[:] = 2.0
            weight[first[lengths > 0]] = 0.0
        return ids, weight, "objects"
    if geometry.vertex_object_ids is None or geometry.geometry_type == GeometryType.POINT_CLOUD:
        # points thin evenly by vertex, not by whole objects (clusters would vanish)
        return np.arange(geometry.vertex_count), np.ones(geometry.vertex_count), "vertices"
    vid = np.asarray(geometry.vertex_object_ids, dtype=np.int64)
    weight = np.ones(len(vid))
    if geometry.geometry_type in GRAPH_TYPES and len(geometry.edges):
        e = np.asarray(geometry.edges, np.int64).reshape(-1, 2)
        weight = weight + 2.0 * np.bincount(e[:, 0], minlength=len(vid))
    return vid, weight, "objects"


def subset_to_budget(geometry: Geometry, budget: int) -> Subset:
    """The objects of ``geometry`` whose rank is below the largest ladder fraction that keeps
    :func:`resident_vertices` within ``budget`` (everything when it fits)."""
    total = resident_vertices(geometry)
    ids, weight, kind = _items(geometry)
    if kind == "vertices":
        uniq, counts, ranks = ids, weight, position_rank(geometry.positions)
    else:
        uniq, inverse = np.unique(ids, return_inverse=True)
        counts = np.bincount(inverse, weights=weight, minlength=len(uniq))
        ranks = object_rank(uniq)
    n_items = len(uniq)
    if total <= budget:
        return Subset(geometry, 1.0, kind, n_items, n_items, total, total)
    f = subset_fraction(ranks, counts, budget)
    chosen = ranks < f
    if not chosen.any() and kind == "objects":
        # not even one object fits: the lowest-ranked one, thinned along its length
        first = uniq[np.argmin(ranks)]
        one = filter_geometry(geometry, np.asarray([first]))
        out = thin_vertices(one, budget)
        return Subset(out, 0.0, kind, n_items, 1, total, resident_vertices(out))
    if kind == "vertices":
        out = _compact(geometry, chosen, None, None, None, None)
    elif geometry.paths:
        path_rank = object_rank(np.asarray(geometry.path_object_ids, np.int64))
        out = _keep_paths(geometry, path_rank < f)
    else:
        out = filter_geometry(geometry, uniq[chosen])
    return Subset(out, f, kind, n_items, int(chosen.sum()), total, resident_vertices(out))


def pieces_to_budget(geometry: Geometry, box: Box | None, budget: int) -> Geometry:
    """Path pieces of unknown objects (:meth:`.Store.read_pieces`) cropped to ``box`` (when
    given) and cut to ``budget``: the pieces ranked lowest by their first vertex
    (:func:`position_rank`, the rank the read kept them by), at a ladder fraction."""
    n = len(geometry.paths)
    if not n:
        return geometry
    firsts = np.fromiter((p[0] if len(p) else 0 for p in geometry.paths), np.int64, n)
    rank = position_rank(geometry.positions[firsts])
    geometry = replace(geometry, path_object_ids=np.arange(n, dtype=np.int64))
    if box is not None:
        geometry = crop_geometry(geometry, box)  # a piece may leave several paths
    piece = np.asarray(geometry.path_object_ids, np.int64)
    lengths = np.fromiter((len(p) for p in geometry.paths), np.float64, len(piece))
    f = subset_fraction(rank, np.bincount(piece, weights=lengths, minlength=n), budget)
    if f < 1.0:
        geometry = _keep_paths(geometry, rank[piece] < f)
    return replace(geometry, path_object_ids=np.full(len(geometry.paths), -1, np.int64))


def thin_vertices(geometry: Geometry, budget: int) -> Geometry:
    """``geometry`` with its vertices thinned to hold at most ``budget`` (for one object too
    large for the budget): paths keep every k-th vertex and their last; other types keep
    the vertices ranked below a fraction by position, with the edges and faces whose
    vertices all stay."""
    total = resident_vertices(geometry)
    if total <= budget or budget <= 0:
        return (
            geometry
            if budget > 0
            else _compact(
                geometry,
                np.zeros(geometry.vertex_count, bool),
                None,
                None,
                [],
                np.empty(0, np.int64),
            )
        )
    if geometry.paths:
        step = int(np.ceil(total / max(budget - len(geometry.paths), 1)))
        paths, ids = [], []
        for p, o in zip(geometry.paths, geometry.path_object_ids, strict=True):
            p = np.asarray(p, np.int64)
            picked = p[::step]
            if picked[-1] != p[-1] and len(picked) > 0:
                picked = np.r_[picked, p[-1]]
            paths.append(picked)
            ids.append(o)
        keep = np.zeros(geometry.vertex_count, bool)
        keep[np.concatenate(paths)] = True
        out = _compact(geometry, keep, None, None, paths, np.asarray(ids, np.int64))
        while resident_vertices(out) > budget and out.paths:  # tiny budgets: drop pieces
            out = _keep_paths(out, np.arange(len(out.paths)) < len(out.paths) - 1)
        return out
    ranks = position_rank(geometry.positions)
    f = budget / total
    while True:
        out = _compact(geometry, ranks < f, None, None, None, None)
        if resident_vertices(out) <= budget or f <= MIN_FRACTION:
            return out
        f /= 2.0


# --------------------------------------------------------------------------------------------
# vertices napari cannot draw
# --------------------------------------------------------------------------------------------


def finite_geometry(geometry: Geometry) -> tuple[Geometry, int]:
    """``geometry`` without its vertices at NaN or infinite coordinates (napari's layers
    cannot hold them), and how many were dropped. Edges and faces through a dropped vertex
    go too; a path is split where one was."""
    finite = np.isfinite(geometry.positions).all(axis=1)
    dropped = int(finite.size - np.count_nonzero(finite))
    if not dropped:
        return geometry, 0
    if not geometry.paths:
        return _compact(geometry, finite, None, None, None, None), dropped
    rows, lengths = flat_paths(geometry.paths)
    ok = finite[rows]
    path_of = np.repeat(np.arange(len(lengths)), lengths)
    # a kept row starts a new path at the start of its path or after a dropped row
    start = ok & np.r_[True, (path_of[1:] != path_of[:-1]) | ~ok[:-1]]
    run_lengths = np.bincount(np.cumsum(start)[ok] - 1, minlength=int(start.sum()))
    ids = np.asarray(geometry.path_object_ids, dtype=np.int64)[path_of[start]]
    paths = split_lengths(rows[ok], run_lengths)
    return _compact(geometry, finite, None, None, paths, ids), dropped


def nonfinite_message(name: str, level: int, dropped: int) -> str:
    """The warning of :func:`finite_geometry`'s dropped vertices."""
    return (
        f"{name}: {dropped} vertices of level {level} lie at NaN or infinite coordinates and "
        "are not shown (edges, faces and path segments through them neither)"
    )
