"""Pyramid QA, what is computed before anything is drawn: no store reads, no Qt, no layers.

One of the Pyramid QA modules (see :mod:`napari_zarr_vectors.napari.widgets.pyramid` for the
map): the model (:mod:`.model`) and the worker jobs (:mod:`.jobs`, :mod:`.overlays`) call these;
the store reads themselves are in the napari-free :mod:`napari_zarr_vectors.format.pyramid`.

* Statistics as table cells (:data:`STAT_COLUMNS`, :func:`stat_cells`): what each count
  counts (stored vertices, not the rows a layer draws).
* Dropped objects (:class:`DroppedObjects`).
* Capping what is drawn to the vertex budget (:func:`select_within`): links, boxes and
  isolated objects are thinned the way the level of detail thins objects (a fixed rank per
  object id, :func:`~napari_zarr_vectors.napari.lod.view_geometry.object_rank`; by position when
  there are no ids), and the cap is said (:func:`shown_of`).
* Asking before reading most of a store (:func:`reads_most`, :func:`estimate_read`).
* Grid mode (:func:`grid_plan`): which layers get a cell.
* Where the slice is (:func:`slice_of`) from the viewer's dims model (the visible box is
  :func:`..lod.camera.visible_store_box`, the loader's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from napari_zarr_vectors.format.query import chunks_in_bbox
from napari_zarr_vectors.napari.conventions import meta_of
from napari_zarr_vectors.napari.layerdata.placement import Placement
from napari_zarr_vectors.napari.lod.view_geometry import object_rank, position_rank, subset_fraction

if TYPE_CHECKING:
    from napari.layers import Layer
    from napari.viewer import Viewer

    from napari_zarr_vectors.format.api import GeometryStore

#: Role names stored in ``metadata["zarr_vectors"]["role"]`` of QA overlay layers.
QA_ROLES = ("qa_chunks", "qa_bins", "qa_links", "qa_dropped")

#: ``metadata["zarr_vectors"]["qa"]`` of a level added side by side.
SIDE_BY_SIDE = "side_by_side"

#: The dropped-objects list shows at most this many ids.
MAX_LISTED_IDS = 5_000

#: An action asks first when it would read more than this share of a store's vertices
#: (and more than the vertex budget).
MOST_OF_A_STORE = 0.5

#: Statistics table columns (what each counts: see :func:`stat_cells`).
STAT_COLUMNS = (
    "level",
    "stored vertices",
    "objects kept",
    "sparsity",
    "chunks",
    "stored",
    "decoded",
    "bin",
    "chunk",
    "method",
)

#: Tooltip of the statistics table.
STAT_TOOLTIP = (
    "stored vertices: the level's vertex_count (rows of <level>/vertices; a coarse level's "
    "metavertices are shared by the paths through them, so a Tracks layer draws more rows "
    "than this) · objects kept: non-empty manifests / objects · stored: bytes on disk under "
    "the level folder (local stores; '–' remote) · decoded: vertices × ndim × dtype size"
)


class QAProgress(NamedTuple):
    """What a Pyramid QA worker job reports between its steps."""

    done: int
    total: int
    text: str


# --------------------------------------------------------------------------------------------
# statistics
# --------------------------------------------------------------------------------------------


def fmt_bytes(n: int | None) -> str:
    """``1234567`` -> ``"1.2 MB"`` (``None`` -> ``"–"``)."""
    if n is None:
        return "–"
    value = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{n} B"


def fmt_shape(shape: Sequence[float]) -> str:
    """``(5, 5, 5)`` -> ``"5×5×5"``; three significant digits (``3.375`` -> ``3.38``), so
    a level's column stays narrow."""
    return "×".join(f"{v:.3g}" for v in shape)


def stat_cells(row: dict[str, Any]) -> list[str]:
    """One :func:`~napari_zarr_vectors.format.pyramid.level_statistics` row as the texts of
    :data:`STAT_COLUMNS`."""
    kept = f"{row['objects_kept']:,} / {row['objects_total']:,}" if row["objects_total"] else "–"
    return [
        str(row["level"]),
        "?" if row["vertices"] is None else f"{row['vertices']:,}",
        kept,
        "–" if row["sparsity"] is None else f"{row['sparsity']:.3g}",
        f"{row['chunks']:,}",
        fmt_bytes(row["stored_bytes"]),
        fmt_bytes(row["decoded_bytes"]),
        fmt_shape(row["bin_shape"]),
        fmt_shape(row["chunk_shape"]),
        str(row["coarsening_method"]),
    ]


def drawn_text(level: int, drawn: int, stored: int | None, locked: bool) -> str:
    """The line under the statistics: the shown level's vertices drawn (the layers' rows,
    the number the status bar gives) next to its stored vertices."""
    stored_text = "?" if stored is None else f"{stored:,}"
    return (
        f"shown: level {level}{' (locked)' if locked else ''}: {drawn:,} vertices drawn in view "
        f"· {stored_text} stored vertices in the level"
    )


# --------------------------------------------------------------------------------------------
# dropped objects
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DroppedObjects:
    """Objects present at level ``fine`` and absent at level ``coarse``."""

    ids: np.ndarray
    fine: int
    coarse: int
    has_objects: bool
    #: objects present at the finer level
    n_fine: int = 0

    def describe(self, max_listed: int = MAX_LISTED_IDS) -> str:
        if not self.has_objects:
            return "This store has no objects: nothing can be dropped."
        more = f" (first {max_listed:,} listed)" if len(self.ids) > max_listed else ""
        return (
            f"{len(self.ids):,} object(s) present at level {self.fine} are absent at level "
            f"{self.coarse}{more}."
        )


# --------------------------------------------------------------------------------------------
# capping what is drawn
# --------------------------------------------------------------------------------------------


def select_within(
    cap: int, ids: np.ndarray | None = None, positions: np.ndarray | None = None
) -> np.ndarray:
    """A boolean mask keeping at most ``cap`` items, thinned like the level of detail: by
    object (``ids``: whole objects whose fixed rank is below a ladder fraction, the same
    objects whatever else is drawn), else by position (``positions``: a fixed rank per
    point). When not one object fits, the lowest-ranked object's items are taken evenly."""
    n = len(ids) if ids is not None else len(positions)  # type: ignore[arg-type]
    cap = max(int(cap), 0)
    if n <= cap:
        return np.ones(n, bool)
    if ids is not None:
        uniq, inverse = np.unique(np.asarray(ids, np.int64), return_inverse=True)
        ranks = object_rank(uniq)
        f = subset_fraction(ranks, np.bincount(inverse, minlength=len(uniq)), cap)
        keep = (ranks < f)[inverse]
        if keep.any() or cap == 0:
            return keep
        rows = np.flatnonzero(inverse == int(np.argmin(ranks)))
        keep[rows[:: int(np.ceil(len(rows) / cap))]] = True
        return keep
    ranks = position_rank(np.asarray(positions, np.float64))
    return ranks < subset_fraction(ranks, np.ones(n), cap)


def shown_of(shown: int, total: int, noun: str) -> str:
    """``"showing 30,000 of 780,044 links (vertex budget)"`` or ``"780 links"``."""
    if shown >= total:
        return f"{total:,} {noun}"
    return f"showing {shown:,} of {total:,} {noun} (capped by the vertex budget)"


def side_by_side_note(
    shown: int,
    in_view: int,
    noun: str,
    rows: int,
    stored: int | None,
    *,
    boxed: bool,
    collapsed: int = 0,
) -> str:
    """What a side-by-side level shows, each number named: the objects (or points) drawn of
    those read (the whole level, or the visible box), then the vertices drawn (the layer's
    rows) next to the
    vertices the level stores (the statistics table's *stored vertices*; a Tracks layer
    repeats a coarse metavertex in every path through it, so rows can exceed it).
    ``"3 of 5 objects in the visible box (capped by the vertex budget) · 20 vertices drawn
    (6 stored vertices in the level)"``. ``collapsed`` lines of those shown were coarsened
    to one vertex: stored, but with no segment to draw (the note says so)."""
    where = " in the visible box" if boxed else ""
    if shown < in_view:
        what = f"{shown:,} of {in_view:,} {noun}{where} (capped by the vertex budget)"
    else:
        what = f"{in_view:,} {noun}{where}"
    if collapsed:
        what += f" ({collapsed:,} coarsened to one vertex: no segment drawn)"
    stored_text = "?" if stored is None else f"{int(stored):,}"
    return f"{what} · {rows:,} vertices drawn ({stored_text} stored vertices in the level)"


def chunk_batches(
    chunks: np.ndarray, ndim: int, per_batch: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Group the chunks of a level into boxes of whole chunks holding about ``per_batch``
    chunks each: runs of consecutive keys along the second spatial axis within one key of
    the first (every key of the other axes). Returns ``(lo key, hi key)`` pairs (inclusive,
    spatial axes; the axes after the second span the level's keys).

    Resolving a level's links one batch at a time keeps each step short: a step's sort of
    chunk keys holds the GIL, so one sort over a whole level stalled the UI thread."""
    spatial = np.asarray(chunks, np.int64)[:, np.asarray(chunks).shape[1] - ndim :]
    if not len(spatial):
        return []
    kmin, kmax = spatial.min(0), spatial.max(0)
    if ndim < 2:
        return [(kmin, kmax)]
    pairs, counts = np.unique(spatial[:, :2], axis=0, return_counts=True)
    out: list[tuple[np.ndarray, np.ndarray]] = []
    start, total = 0, 0
    for i in range(len(pairs)):
        total += int(counts[i])
        last = i + 1 == len(pairs) or pairs[i + 1, 0] != pairs[i, 0]
        if total >= per_batch or last:
            lo, hi = kmin.copy(), kmax.copy()
            lo[:2] = pairs[start]
            hi[:2] = pairs[i]
            out.append((lo, hi))
            start, total = i + 1, 0
    return out


# --------------------------------------------------------------------------------------------
# asking first
# --------------------------------------------------------------------------------------------


def store_vertices(store: GeometryStore) -> int:
    """Stored vertices over every level (levels without a count count 0)."""
    return int(sum(int(lv.vertex_count or 0) for lv in store.levels))


def estimate_read(
    store: GeometryStore, level: int, bbox: tuple | None = None, share: float = 1.0
) -> int:
    """Vertices a read of ``level`` would decode: its vertex count, times the share of its
    chunks inside ``bbox`` (when given), times ``share`` (e.g. the share of its objects)."""
    info = store.level(int(level))
    total = int(info.vertex_count or 0)
    if bbox is not None:
        chunks = store.chunks(int(level))
        if len(chunks):
            inside = chunks_in_bbox(chunks, info, np.asarray(bbox[0]), np.asarray(bbox[1]))
            total = int(round(total * len(inside) / len(chunks)))
    return int(round(total * float(share)))


def reads_most(to_read: int, store: GeometryStore, budget: int) -> bool:
    """Whether reading ``to_read`` vertices is reading most of ``store``: more than
    :data:`MOST_OF_A_STORE` of its stored vertices and more than the vertex budget."""
    return to_read > budget and to_read > MOST_OF_A_STORE * store_vertices(store)


# --------------------------------------------------------------------------------------------
# grid mode
# --------------------------------------------------------------------------------------------


def grid_plan(layers: Sequence[Layer], side: Sequence[Layer]) -> tuple[list[Layer], int]:
    """napari's grid mode gives a cell to every visible layer: the layers to hide so that
    only the side-by-side ones get cells, and the stride (the layers of one level share a
    cell when every level has the same number of layers)."""
    side_ids = {id(layer) for layer in side}
    hide = [lyr for lyr in layers if id(lyr) not in side_ids and getattr(lyr, "visible", False)]
    per_level: dict[Any, int] = {}
    for layer in side:
        level = (meta_of(layer) or {}).get("level")
        per_level[level] = per_level.get(level, 0) + 1
    counts = set(per_level.values())
    return hide, counts.pop() if len(counts) == 1 else 1


# --------------------------------------------------------------------------------------------
# where the view is (viewer models only)
# --------------------------------------------------------------------------------------------


def slice_of(
    viewer: Viewer, order: np.ndarray | None, store: GeometryStore | None = None
) -> tuple[list[int], np.ndarray]:
    """Displayed store columns and the dims point in store order, for a layer whose napari
    axis ``k`` is store column ``order[k]``, aligned with the viewer's trailing axes. With
    ``store``, the point is taken back through its world placement (the stored space)."""
    placement = None if store is None else Placement.of(store)
    if placement is not None:
        order = placement.order
    order = np.asarray(order, np.int64)
    ndim = len(order)
    offset = viewer.dims.ndim - ndim
    displayed = sorted(int(order[a - offset]) for a in viewer.dims.displayed if a >= offset)
    napari_point = np.asarray(viewer.dims.point[max(offset, 0) :], dtype=np.float64)
    if len(napari_point) < ndim:  # viewer with fewer axes than the store (no layer yet)
        napari_point = np.concatenate([np.zeros(ndim - len(napari_point)), napari_point])
    point = np.empty(ndim)
    point[order] = napari_point
    if placement is not None:
        point = placement.to_store_points(napari_point)[0]
    return displayed, point


def parse_ids(text: str) -> list[int]:
    """``"3, 5 7"`` -> ``[3, 5, 7]`` (anything else is ignored)."""
    out = []
    for part in text.replace(";", ",").replace(" ", ",").split(","):
        part = part.strip()
        if part.lstrip("-").isdigit():
            out.append(int(part))
    return out
