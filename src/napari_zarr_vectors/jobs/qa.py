"""The whole-store Pyramid QA job: every level read once, block by block, and checked.

:func:`qa_report` runs one task per chunk block of every level (:mod:`.blocks`) and merges
their :class:`LevelPartial` results exactly, in two passes: the first decodes every chunk
once (counts, extremes, images, each chunk's row count and fragments), the second decodes
each level's object index once, in parts of rows (their facts and the ownership of every
block's vertices, from the fragments the first pass sent) and reads the cross-level links
of each block, resolving them against those row counts (:class:`RowCounts`), decoding no
vertex again; the facts that need no chunk (level metadata, object indexes, object
attributes) come from :mod:`napari_zarr_vectors.format.pyramid` and the store. The result
(:class:`QAResult`) holds per level:

* vertex, object, chunk and link counts, the data's extremes;
* a projection image (vertices per pixel over the two widest space axes, one fixed grid for
  every level) and the coverage of level 0 that each coarser level keeps;
* the objects kept and dropped between adjacent levels;
* histograms of the numeric object attributes (fixed bins from level 0's range);
* the cross-level link records and those that do not resolve;
* the chunks that could not be read, by key;

and one :class:`Check` per question with a verdict (``pass``, ``warn``, ``fail``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

import numpy as np

from ..format import pyramid
from ..format.chunks import ChunkTable, LoadedChunks
from ..format.decode.fragments import expand_ranges
from ..format.distinct import distinct
from ..format.errors import ZVError
from ..format.layout import LinkSet
from .blocks import BLOCK_CHUNKS, plan_blocks, read_block
from .runner import Cancel, ChunkFailure, Progress, Shared, Task, run_tasks, scheduler_name

#: pixels along the longer side of the projection images
IMAGE_PIXELS = 256
#: bins of the object attribute histograms
HISTOGRAM_BINS = 20
#: a coarse level covering less of level 0 than this warns
COVERAGE_MIN = 0.95
#: ids listed per problem in the report (the counts are exact)
MAX_EXAMPLES = 20
#: object index rows one task of the QA job decodes (where the layout stores the
#: manifests in chunks of rows): a task's memory is its part's manifests, not the level's
INDEX_PART_ROWS = 20_000
#: blocks of the first pass whose cross-level links one task checks: those checks read
#: no vertex and take about what a cluster spends on running a task (~5 ms)
LINK_BLOCKS = 4


@dataclass(frozen=True)
class Grid:
    """The projection grid: ``axes`` (store columns shown as image columns, rows), the
    world box ``lo``..``hi`` of those axes and the image ``shape`` (rows, columns)."""

    axes: tuple[int, int]
    lo: np.ndarray
    hi: np.ndarray
    shape: tuple[int, int]

    @classmethod
    def of(cls, store: Any, pixels: int = IMAGE_PIXELS) -> Grid:
        lo, hi = (np.asarray(b, np.float64) for b in store.bounds)
        space = [i for i, t in enumerate(store.axis_types) if t == "space"] or list(
            range(store.ndim)
        )
        widest = sorted(space, key=lambda i: -(hi[i] - lo[i]))[:2]
        a, b = sorted(widest) if len(widest) == 2 else (widest[0], widest[0])
        extent = np.maximum(hi[[a, b]] - lo[[a, b]], 1e-12)
        cols = pixels if extent[0] >= extent[1] else max(int(pixels * extent[0] / extent[1]), 1)
        rows = pixels if extent[1] >= extent[0] else max(int(pixels * extent[1] / extent[0]), 1)
        if a == b:
            rows = 1
        return cls((a, b), lo[[a, b]], hi[[a, b]], (rows, cols))

    @property
    def pixel(self) -> np.ndarray:
        """World size of a pixel along (columns, rows)."""
        return np.maximum(self.hi - self.lo, 1e-12) / np.array(self.shape[::-1], np.float64)

    def pixels_of(self, positions: np.ndarray) -> np.ndarray:
        """Flat pixel index of every finite position (clipped to the image): one float64
        column at a time, in place (pixel numbers are clipped before they become integers,
        so that a far vertex lands on the image's edge)."""
        flat = np.zeros(len(positions), np.float64)
        for k, (axis, n) in enumerate(zip(self.axes, self.shape[::-1], strict=True)):
            x = positions[:, axis].astype(np.float64)
            x -= self.lo[k]
            x /= self.pixel[k]
            np.floor(x, out=x)
            np.clip(x, 0, n - 1, out=x)
            if k:  # (rows: the second axis)
                x *= self.shape[1]
            flat += x
        return flat.astype(np.intp)


@dataclass
class LevelPartial:
    """What the blocks of one level add up to (every field merges exactly)."""

    level: int
    ndim: int
    image_shape: tuple[int, int]
    chunks_read: int = 0
    vertices: int = 0
    nonfinite: int = 0
    outside_bounds: int = 0
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None
    #: the merged blocks' projection image (see :meth:`picture`)
    image: np.ndarray | None = None
    #: a block's own image, sparse (what a task sends back): flat pixel indices, counts
    pixels: np.ndarray = field(default_factory=lambda: np.empty(0, np.intp))
    pixel_counts: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    #: the rows (in the level's object index) of the objects with a vertex, one array per
    #: merged block (see :meth:`seen_ids`)
    seen_rows: list[np.ndarray] = field(default_factory=list)
    unowned_vertices: int = 0
    empty_references: int = 0
    #: keys of the chunks holding vertices that are not finite or lie outside the bounds
    bad_vertex_chunks: list[str] = field(default_factory=list)
    #: ``{delta: [records, unresolved]}`` of the cross-level links stored at this level
    links: dict[int, list[int]] = field(default_factory=dict)
    failures: list[ChunkFailure] = field(default_factory=list)
    #: ``(chunks, rows)`` of the chunks read, one pair per merged block (see :meth:`rows`)
    chunk_rows: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    #: the fragments of the blocks whose ownership the level's index tasks find, one per
    #: merged block (blocks of other fragments found theirs themselves)
    fragments: list[BlockFragments] = field(default_factory=list)
    #: the fragments (of the level's :meth:`BlockFragments.joined`) some manifest entry
    #: names, one array per merged index part
    named_fragments: list[np.ndarray] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.lo is None:
            self.lo = np.full(self.ndim, np.inf)
            self.hi = np.full(self.ndim, -np.inf)

    def picture(self) -> np.ndarray:
        """The projection image of the merged blocks (vertices per pixel)."""
        return np.zeros(self.image_shape, np.int64) if self.image is None else self.image

    def seen_ids(self, ids: np.ndarray) -> np.ndarray:
        """The ids (sorted, unique) of the objects with a vertex in the merged blocks (their
        rows in the level's object index, whose ids are ``ids``): the blocks' rows marked
        once, not joined at every merge."""
        seen = np.zeros(len(ids), bool)
        for rows in self.seen_rows:
            seen[rows] = True
        return _sorted_unique(ids[seen])

    def rows(self) -> RowCounts:
        """The row count of every chunk read."""
        knd = next((c.shape[1] for c, _ in self.chunk_rows), 1)
        chunks = np.concatenate([np.empty((0, knd), np.int64), *(c for c, _ in self.chunk_rows)])
        counts = np.concatenate([np.empty(0, np.int64), *(n for _, n in self.chunk_rows)])
        return RowCounts(ChunkTable(chunks), counts)

    def merge_links(self, other: LevelPartial | LinksPartial) -> None:
        for delta, (records, unresolved) in other.links.items():
            mine = self.links.setdefault(delta, [0, 0])
            mine[0] += records
            mine[1] += unresolved
        self.failures.extend(other.failures)

    def merge(self, other: LevelPartial) -> None:
        # (set by __post_init__)
        assert self.lo is not None and self.hi is not None
        assert other.lo is not None and other.hi is not None
        self.chunks_read += other.chunks_read
        self.vertices += other.vertices
        self.nonfinite += other.nonfinite
        self.outside_bounds += other.outside_bounds
        self.lo = np.fmin(self.lo, other.lo)
        self.hi = np.fmax(self.hi, other.hi)
        if len(other.pixels):  # (the pixels of one block are distinct)
            if self.image is None:
                self.image = np.zeros(self.image_shape, np.int64)
            self.image.reshape(-1)[other.pixels] += other.pixel_counts
        self.seen_rows.extend(other.seen_rows)
        self.unowned_vertices += other.unowned_vertices
        self.empty_references += other.empty_references
        self.bad_vertex_chunks = sorted({*self.bad_vertex_chunks, *other.bad_vertex_chunks})
        self.chunk_rows.extend(other.chunk_rows)
        self.fragments.extend(other.fragments)
        self.named_fragments.extend(other.named_fragments)
        self.merge_links(other)


class RowCounts(NamedTuple):
    """The rows of the chunks of a level that were read (``counts[table.index_of(c)]``)."""

    table: ChunkTable
    counts: np.ndarray

    def resolves(self, links: LinkSet, endpoint: int) -> np.ndarray:
        """Whether endpoint ``endpoint`` of each record of ``links`` names a row of a chunk
        that was read. Each combination of endpoint chunks (a link cell's) is looked up
        once."""
        if not len(links) or not len(self.counts):
            return np.zeros(len(links), bool)
        at = self.table.index_of(links.keys[:, endpoint])
        limit = np.where(at >= 0, self.counts[np.maximum(at, 0)], 0)[links.key_of]
        rows = links.rows[:, endpoint]
        ok: np.ndarray = (rows >= 0) & (rows < limit)
        return ok


@dataclass
class BlockFragments:
    """The fragments of one block's chunks, what the ownership of its vertices needs of
    them when every fragment is a range and no two share a row (what writers emit): the
    chunks (``(C, key_ndim)``), their fragment counts and each fragment's rows, chunk by
    chunk (small integers: a task's result and the level task's input)."""

    chunks: np.ndarray
    nfrag: np.ndarray
    counts: np.ndarray
    rows: int

    @classmethod
    def of(cls, loaded: LoadedChunks) -> BlockFragments | None:
        """``loaded``'s fragments, ``None`` unless they are disjoint ranges."""
        ranges = loaded.fragment_ranges() if loaded.disjoint_ranges else None
        if ranges is None:
            return None
        nfrag = np.array([c.fragments.num_fragments for c in loaded.chunks], np.int32)
        counts = ranges[1]
        small = np.uint16 if not len(counts) or int(counts.max()) < 2**16 else counts.dtype
        return cls(loaded.table.chunks, nfrag, counts.astype(small), loaded.n_rows)

    @classmethod
    def joined(cls, blocks: Sequence[BlockFragments]) -> BlockFragments | None:
        """The fragments of ``blocks`` as one block's (``None`` without any)."""
        if not blocks:
            return None
        return cls(
            np.concatenate([b.chunks for b in blocks]),
            np.concatenate([b.nfrag for b in blocks]),
            np.concatenate([b.counts for b in blocks]),
            sum(b.rows for b in blocks),
        )

    def unnamed_rows(self, named: Sequence[np.ndarray]) -> int:
        """The rows of the fragments no manifest entry names (``named``: the fragments
        named, as :func:`_fragment_ownership` finds them, part by part)."""
        mask = np.zeros(len(self.counts), bool)
        for part in named:
            mask[part] = True
        return self.rows - int(self.counts[mask].sum(dtype=np.int64))


@dataclass
class IndexFacts:
    """What the report needs of one level's object index (or of the part of its rows
    from ``start`` that a task decoded: :meth:`merged`), from the tasks that decoded it
    (not decoded again where the job was started): ``None`` fields without an index."""

    level: int
    #: the first index row of the part
    start: int = 0
    #: the id of every index row
    ids: np.ndarray | None = None
    #: the ids (sorted, unique) of the objects with a non-empty manifest
    present: np.ndarray | None = None
    #: index rows with a non-empty manifest
    kept: int = 0
    #: manifest entries naming a chunk the level does not hold
    unlisted: int = 0
    failures: list[ChunkFailure] = field(default_factory=list)

    @classmethod
    def merged(cls, level: int, parts: Sequence[IndexFacts]) -> IndexFacts:
        """The facts of the level's index from those of its parts (in any order)."""
        parts = sorted(parts, key=lambda p: p.start)
        out = cls(level, failures=[f for p in parts for f in p.failures])
        if not parts or any(p.ids is None for p in parts):
            return out
        out.ids = np.concatenate([cast(np.ndarray, p.ids) for p in parts])
        out.present = _sorted_unique(np.concatenate([cast(np.ndarray, p.present) for p in parts]))
        out.kept = sum(p.kept for p in parts)
        out.unlisted = sum(p.unlisted for p in parts)
        return out


def index_facts(
    store: Any,
    level: int,
    chunks: Any = None,
    *,
    rows: tuple[int, int] | None = None,
    fragments: BlockFragments | None = None,
) -> tuple[IndexFacts, LevelPartial]:
    """A task of the second pass: the facts of rows ``rows`` (``(start, stop)``; ``None``:
    every row) of a level's object index for the report (``chunks``: unused), and the
    ownership of the vertices of the blocks whose ``fragments`` (joined) the first pass
    sent. The level's index is decoded once, part by part where the tasks run
    (:meth:`~napari_zarr_vectors.format.store.Store.object_index_part`): a task holds its
    part's manifests, not the level's."""
    start = 0 if rows is None else rows[0]
    out = IndexFacts(level, start)
    owned = LevelPartial(level, store.ndim, (0, 0))
    index = _object_index(store, level, out.failures, rows)
    if index is None:
        return out, owned
    if fragments is not None:
        _fragment_ownership(owned, fragments, index, start)
    out.ids, out.kept = index.ids, int(np.count_nonzero(index.present))
    out.present = _sorted_unique(index.ids[index.present])
    if len(index.chunks):
        listed = np.asarray(store.chunks(level), np.int64)
        named, _ = index.entries_by_chunk(listed.reshape(-1, store.level(level).key_ndim))
        out.unlisted = len(index.chunks) - len(named)
    return out, owned


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)``, without the sort when they already ascend strictly (an index's
    ids as writers store them)."""
    if len(values) < 2 or bool(np.all(values[1:] > values[:-1])):
        return np.asarray(values)
    return distinct(values)


@dataclass
class LinksPartial:
    """What a links task adds up to: ``{delta: [records, unresolved]}`` and failures."""

    level: int
    links: dict[int, list[int]]
    failures: list[ChunkFailure]


def qa_block(store: Any, level: int, chunks: np.ndarray, *, grid: Grid) -> LevelPartial:
    """One task of the first pass: every statistic of one block of ``level`` from one read
    of its chunks (its result is small: sums, extremes, a sparse image, object rows)."""
    block = read_block(store, level, chunks)
    loaded = block.loaded
    out = LevelPartial(level, store.ndim, grid.shape, failures=list(block.failures))
    out.chunks_read = len(loaded.chunks)
    out.vertices = loaded.n_rows
    if loaded.n_rows:
        _vertex_statistics(out, loaded, store.bounds, grid)
        fragments = BlockFragments.of(loaded)
        if fragments is not None:
            out.fragments = [fragments]
        else:  # fragments that share rows or are row lists: their rows, here
            index = _object_index(store, level, [])  # (a broken index: its task says so)
            if index is not None:
                _ownership(out, loaded, index)
    if len(loaded.chunks):
        out.chunk_rows = [(loaded.table.chunks, np.diff(loaded.start))]
    return out


def _vertex_statistics(out: LevelPartial, loaded: LoadedChunks, bounds: Any, grid: Grid) -> None:
    """Extremes, vertices not finite or outside ``bounds`` (and their chunks) and the
    projection image of the block's rows. A chunk whose decoded extent (see
    :func:`~napari_zarr_vectors.format.query.column_extremes`) is finite and inside the
    bounds gives its extremes as they are; only the rows of the others are looked at."""
    p = np.asarray(loaded.positions)
    blo, bhi = (np.asarray(b, np.float64) for b in bounds)
    slack = 1e-6 * (np.abs(blo) + np.abs(bhi)) + 1e-9
    sizes = np.diff(loaded.start)
    nan = np.full(out.ndim, np.nan)
    ext = [c.extent or (nan, nan) for c in loaded.chunks]
    lo = np.array([e[0] for e in ext], np.float64).reshape(-1, out.ndim)
    hi = np.array([e[1] for e in ext], np.float64).reshape(-1, out.ndim)
    with np.errstate(invalid="ignore"):
        clean = np.all((lo >= blo - slack) & (hi <= bhi + slack), axis=1) | (sizes == 0)
    out.lo = np.fmin.reduce(lo[clean], axis=0, initial=np.inf)
    out.hi = np.fmax.reduce(hi[clean], axis=0, initial=-np.inf)
    finite = None
    if not clean.all():  # (a NaN or infinite extent fails the test above)
        rows = expand_ranges(loaded.start[:-1][~clean], sizes[~clean])
        q = p[rows].astype(np.float64)
        ok = np.all(np.isfinite(q), axis=1)
        q = q[ok]
        outside = np.any((q < blo - slack) | (q > bhi + slack), axis=1)
        out.nonfinite = int(np.count_nonzero(~ok))
        out.outside_bounds = int(np.count_nonzero(outside))
        if len(q):
            out.lo = np.fmin(out.lo, q.min(axis=0))
            out.hi = np.fmax(out.hi, q.max(axis=0))
        bad = rows[~ok]
        bad = np.concatenate([bad, rows[ok][outside]])
        if bad.size:  # the chunks holding them, by key
            owner = np.searchsorted(loaded.start, bad, side="right") - 1
            keys = loaded.table.chunks[distinct(owner)]
            out.bad_vertex_chunks = [".".join(str(int(c)) for c in k) for k in keys]
        if not ok.all():
            finite = np.ones(len(p), bool)
            finite[rows[~ok]] = False
    counts = np.bincount(
        grid.pixels_of(p if finite is None else p[finite]), minlength=grid.shape[0] * grid.shape[1]
    )
    out.pixels = np.flatnonzero(counts)
    out.pixel_counts = counts[out.pixels].astype(np.int64)


def _ownership(out: LevelPartial, loaded: LoadedChunks, index: Any) -> None:
    """The objects with a vertex in the block (rows of ``index``), its vertices no manifest
    names and the manifest entries naming an empty or missing fragment, from the rows of
    the fragments the entries name (fragments that are not disjoint ranges)."""
    entries, at = index.entries_by_chunk(loaded.table.chunks)
    if not len(entries):
        out.unowned_vertices += loaded.n_rows
        return
    rows, counts = loaded.fragment_rows(at, index.frags[entries])
    mask = np.zeros(loaded.n_rows, bool)
    mask[rows] = True
    out.unowned_vertices += loaded.n_rows - int(np.count_nonzero(mask))
    _owned(out, index, entries, counts)


def _fragment_ownership(
    out: LevelPartial, block: BlockFragments, index: Any, start: int = 0
) -> None:
    """:func:`_ownership` of the blocks whose fragments (``block``) are disjoint ranges,
    from the fragments the entries of ``index`` (index rows from ``start``) name, not from
    their rows: the fragments named go to ``out.named_fragments``, whose rows the level's
    other parts may name too (:meth:`BlockFragments.unnamed_rows`)."""
    entries, at = index.entries_by_chunk(block.chunks)
    base = np.concatenate([[0], np.cumsum(block.nfrag, dtype=np.int64)])
    frags = np.asarray(index.frags[entries], np.int64)
    valid = (frags >= 0) & (frags < block.nfrag[at])
    gf = base[at][valid] + frags[valid]
    counts = np.zeros(len(entries), np.int64)
    counts[valid] = block.counts[gf]
    out.named_fragments.append(_distinct(gf, len(block.counts)))
    _owned(out, index, entries, counts, start)


def _owned(
    out: LevelPartial, index: Any, entries: np.ndarray, counts: np.ndarray, start: int = 0
) -> None:
    """Add to ``out`` what the manifest ``entries`` (their fragments' rows: ``counts``) say
    of a block: the objects with a vertex in it (their level's index rows: ``index``'s
    from ``start``) and the entries naming an empty or missing fragment."""
    object_rows = index.rows_of_entries(entries[counts > 0])
    out.seen_rows.append(_distinct(object_rows, index.num_objects) + start)
    out.empty_references += int(np.count_nonzero(counts == 0))


def links_block(
    store: Any,
    level: int,
    chunks: np.ndarray,
    *,
    deltas: tuple[int, ...],
    rows: dict[int, RowCounts],
) -> LinksPartial:
    """One task of the second pass: the cross-level links owned by the chunks of one block
    that were read (``rows``: the row counts of every chunk read, per level), checked
    without decoding a vertex again."""
    out = LinksPartial(level, {}, [])
    good = chunks[rows[level].table.index_of(chunks) >= 0]
    for delta in deltas:
        out.links[delta] = _block_links(store, level, delta, good, rows, out.failures)
    return out


def _distinct(rows: np.ndarray, n: int) -> np.ndarray:
    """The distinct values of ``rows`` (each in ``0 .. n - 1``), ascending: marked in a mask
    when they are many, else sorted."""
    if 8 * len(rows) < n:
        return distinct(rows)
    mask = np.zeros(n, bool)
    mask[rows] = True
    return np.flatnonzero(mask)


def _block_links(
    store: Any,
    level: int,
    delta: int,
    chunks: np.ndarray,
    rows: dict[int, RowCounts],
    failures: list,
) -> list[int]:
    """``[records, unresolved]`` of the ``delta`` links owned by ``chunks`` (an endpoint that
    names a row its chunk does not hold, or a chunk that was not read, is unresolved); link
    cells that cannot be read are added to ``failures``."""
    if not len(chunks):
        return [0, 0]
    links = store.links(level, delta, chunks=chunks)
    failures.extend(
        ChunkFailure(level, str(e.chunk or f"links/{delta:+d}"), str(e)) for e in links.errors
    )
    if len(links) == 0 or links.width < 2:
        return [0, 0]
    ok = rows[level].resolves(links, 0)
    ok &= rows[level + delta].resolves(links, 1)
    return [len(links), int(np.count_nonzero(~ok))]


@dataclass(frozen=True)
class Check:
    """One question the report answers, with its verdict."""

    name: str
    status: str  # "pass", "warn" or "fail"
    detail: str
    level: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.name,
            "level": self.level,
            "status": self.status,
            "detail": self.detail,
        }


@dataclass
class QAResult:
    """The whole-store QA report: ``levels`` (one JSON-able dict per level), the projection
    ``images`` per level, ``histograms`` (``{attribute: {"edges": ..., "counts": {level:
    ...}}}``), ``transitions`` between adjacent levels, ``checks`` and ``failures``."""

    store: str
    geometry_type: str
    axes: list[str]
    units: list[str | None]
    grid: Grid
    levels: list[dict[str, Any]]
    images: dict[int, np.ndarray]
    histograms: dict[str, dict[str, Any]]
    transitions: list[dict[str, Any]]
    checks: list[Check]
    failures: list[ChunkFailure]
    scheduler: str = "threads"

    @property
    def verdict(self) -> str:
        """``"fail"`` when a check failed, else ``"warn"`` when one warned, else ``"pass"``."""
        found = {c.status for c in self.checks}
        return "fail" if "fail" in found else "warn" if "warn" in found else "pass"

    def to_json(self) -> dict[str, Any]:
        """Everything but the images (their shape and grid are given) as plain JSON types."""
        return plain(
            {
                "store": self.store,
                "geometry_type": self.geometry_type,
                "axes": self.axes,
                "units": self.units,
                "verdict": self.verdict,
                "scheduler": self.scheduler,
                "projection": {
                    "axes": [self.axes[a] for a in self.grid.axes],
                    "lo": self.grid.lo,
                    "hi": self.grid.hi,
                    "shape": list(self.grid.shape),
                },
                "levels": self.levels,
                "transitions": self.transitions,
                "histograms": self.histograms,
                "checks": [c.to_dict() for c in self.checks],
                "failures": [f.to_dict() for f in self.failures],
            }
        )


def plain(value: Any) -> Any:
    """``value`` with numpy scalars and arrays as Python numbers and lists (NaN, inf as None)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value) if np.isfinite(value) else None
    return value


def qa_report(
    store: Any,
    *,
    scheduler: Any = None,
    cancel: Cancel = None,
    progress: Progress | None = None,
    block_chunks: int = BLOCK_CHUNKS,
    num_workers: int | None = None,
) -> QAResult:
    """Check every level of ``store`` (a :class:`~napari_zarr_vectors.format.store.Store`),
    reading each chunk once; see :mod:`.runner` for ``scheduler``, ``cancel`` and
    ``progress``. The result equals a serial run's (``scheduler="sync"``)."""
    grid = Grid.of(store)
    levels = [lv.index for lv in store.levels]
    held = set(levels)
    deltas = {
        lv: tuple(d for d in pyramid.cross_level_deltas(store, lv) if lv + d in held)
        for lv in levels
    }
    partials = {lv: LevelPartial(lv, store.ndim, grid.shape) for lv in levels}
    blocks = {lv: plan_blocks(store, lv, block_chunks) for lv in levels}
    run = functools.partial(
        run_tasks,
        store,
        scheduler=scheduler,
        cancel=cancel,
        progress=progress,
        num_workers=num_workers,
    )
    # first pass: every chunk decoded once; second: each level's object index decoded once
    # (with the ownership of the blocks' fragments) beside the links, checked against the
    # first pass's row counts
    failures = run(
        [
            Task(qa_block, lv, b, {"grid": grid}, name=_block_name(b))
            for lv in levels
            for b in blocks[lv]
        ],
        lambda part: partials[part.level].merge(part),
        text=f"QA of {store.name}: reading {len(levels)} level(s)",
    )
    rows = {lv: part.rows() for lv, part in partials.items()}
    linked = [lv for lv in levels if deltas[lv]]
    fact_parts: dict[int, list[IndexFacts]] = {lv: [] for lv in levels}

    def merge(part: LinksPartial | tuple[IndexFacts, LevelPartial]) -> None:
        if isinstance(part, LinksPartial):
            partials[part.level].merge_links(part)
        else:
            fact_parts[part[0].level].append(part[0])
            partials[part[0].level].merge(part[1])

    # what many tasks of a level take is sent to a cluster's workers once (Shared)
    fragments = {lv: BlockFragments.joined(partials[lv].fragments) for lv in levels}
    sent = {lv: Shared(fragments[lv]) for lv in levels}
    level_rows = {lv: Shared({lv + d: rows[lv + d] for d in (0, *deltas[lv])}) for lv in linked}
    index_tasks = [
        Task(index_facts, lv, None, {"rows": part, "fragments": sent[lv]}, name=_index_name(part))
        for lv in levels
        for part in _index_parts(store, lv)
    ]
    for part in partials.values():
        part.fragments = []
    failures += run(
        index_tasks
        + [
            Task(
                links_block,
                lv,
                b,
                {"deltas": deltas[lv], "rows": level_rows[lv]},
                name=f"links of {_block_name(b)}",
            )
            for lv in linked
            for b in _grouped(blocks[lv], LINK_BLOCKS)
        ],
        merge,
        text=f"QA of {store.name}: checking the object indexes and the links of "
        f"{len(levels)} level(s)",
    )
    del index_tasks, sent, level_rows
    facts = {lv: IndexFacts.merged(lv, fact_parts[lv]) for lv in levels}
    for lv, part in partials.items():
        joined = fragments[lv]
        if joined is not None and facts[lv].ids is not None:
            part.unowned_vertices += joined.unnamed_rows(part.named_fragments)
        failures.extend(part.failures)
    for fact in facts.values():
        failures.extend(fact.failures)
    failures.sort(key=lambda f: (f.level, f.chunk))
    return _assemble(store, grid, partials, facts, failures, scheduler_name(scheduler))


def _grouped(blocks: list[np.ndarray], n: int) -> list[np.ndarray]:
    """``blocks`` joined ``n`` at a time (the chunks of one task)."""
    return [np.concatenate(blocks[i : i + n]) for i in range(0, len(blocks), n)]


def _block_name(block: np.ndarray) -> str:
    first, last = (".".join(str(int(c)) for c in k) for k in (block[0], block[-1]))
    return f"block {first}..{last}" if len(block) > 1 else first


def _assemble(
    store: Any,
    grid: Grid,
    partials: dict[int, LevelPartial],
    facts: dict[int, IndexFacts],
    failures: list[ChunkFailure],
    scheduler: str,
) -> QAResult:
    """The report from the merged partials, the object indexes' facts and the store's
    metadata."""
    counts = {lv: (0, 0) if f.ids is None else (len(f.ids), f.kept) for lv, f in facts.items()}
    stats = {row["level"]: row for row in pyramid.level_statistics(store, object_counts=counts)}
    checks: list[Check] = []
    levels, present = [], {}
    for lv, part in partials.items():
        row = stats[lv]
        level_failures = [f for f in failures if f.level == lv]
        fact = facts[lv]
        present[lv] = fact.present
        seen = None if fact.ids is None else part.seen_ids(fact.ids)
        unlisted = fact.unlisted
        info = {
            **row,
            "chunks_read": part.chunks_read,
            "vertices_read": part.vertices,
            "nonfinite_vertices": part.nonfinite,
            "vertices_outside_bounds": part.outside_bounds,
            "chunks_with_bad_vertices": part.bad_vertex_chunks,
            "data_lo": part.lo if part.vertices else None,
            "data_hi": part.hi if part.vertices else None,
            "objects_with_vertices": None if seen is None else int(seen.size),
            "unowned_vertices": None if fact.ids is None else part.unowned_vertices,
            "empty_manifest_references": None if fact.ids is None else part.empty_references,
            "manifest_chunks_not_listed": unlisted,
            "links": {
                f"{d:+d}": {"records": r, "unresolved": u} for d, (r, u) in part.links.items()
            },
            "failed_chunks": [f.chunk for f in level_failures],
        }
        levels.append(info)
        checks += _level_checks(lv, info, part, present[lv], seen, level_failures)
    # what each level shows: an additive level's content is its whole chain's
    content = {
        lv: cast(np.ndarray, sum(partials[c].picture() for c in store.refinement_chain(lv)))
        for lv in partials
    }
    shown = {
        lv: None
        if present[lv] is None
        else _union([p for c in store.refinement_chain(lv) if (p := present[c]) is not None])
        for lv in partials
    }
    transitions = _transitions(partials, shown)
    checks += _coverage_checks(store, grid, content, levels)
    checks += [
        Check(
            "objects kept between levels",
            "warn" if t["appearing"] else "pass",
            f"{t['kept']:,} of {t['fine_objects']:,} objects of level {t['fine']} are kept at "
            f"level {t['coarse']}, {t['dropped']:,} dropped"
            + (f"; {t['appearing']:,} appear only at the coarse level" if t["appearing"] else ""),
            t["coarse"],
        )
        for t in transitions
    ]
    return QAResult(
        store=store.path,
        geometry_type=store.geometry_type,
        axes=list(store.axes),
        units=list(store.units),
        grid=grid,
        levels=levels,
        images=content,
        histograms=_attribute_histograms(store, present, failures),
        transitions=transitions,
        checks=checks,
        failures=failures,
        scheduler=scheduler,
    )


def _object_index(
    store: Any, level: int, failures: list[ChunkFailure], rows: tuple[int, int] | None = None
) -> Any:
    """The level's object index (``rows``: the part of those rows alone), ``None`` when it
    does not read (a failure named :func:`_index_name`)."""
    try:
        return store.object_index(level) if rows is None else store.object_index_part(level, *rows)
    except ZVError as exc:
        failures.append(ChunkFailure(level, _index_name(rows), str(exc)))
        return None


def _index_name(rows: tuple[int, int] | None) -> str:
    return "object_index" if rows is None else f"object_index rows {rows[0]}:{rows[1]}"


def _index_parts(store: Any, level: int) -> list[tuple[int, int] | None]:
    """The row ranges of the level's index tasks (``None``: the whole index, when its
    object ids cannot be read: that task reports why)."""
    try:
        return list(store.object_index_parts(level, INDEX_PART_ROWS))
    except ZVError:
        return [None]


def _verdict(bad: bool, worse: bool = True) -> str:
    return "pass" if not bad else ("fail" if worse else "warn")


def _level_checks(
    lv: int,
    info: dict[str, Any],
    part: LevelPartial,
    present: np.ndarray | None,
    seen: np.ndarray | None,
    level_failures: list[ChunkFailure],
) -> list[Check]:
    keys = ", ".join(f.chunk for f in level_failures[:MAX_EXAMPLES])
    more = (
        f" (+{len(level_failures) - MAX_EXAMPLES} more)"
        if len(level_failures) > MAX_EXAMPLES
        else ""
    )
    out = [
        Check(
            "every chunk reads",
            _verdict(bool(level_failures)),
            f"{len(level_failures)} chunk(s) could not be read: {keys}{more}"
            if level_failures
            else f"{part.chunks_read:,} chunks read",
            lv,
        )
    ]
    declared = info["vertices"]
    if declared is not None:
        out.append(
            Check(
                "vertex count matches the metadata",
                _verdict(declared != part.vertices),
                f"{part.vertices:,} vertices read, vertex_count says {declared:,}",
                lv,
            )
        )
    bad = part.nonfinite + part.outside_bounds
    out.append(
        Check(
            "vertices lie inside the store's bounds",
            _verdict(bad > 0),
            f"{part.outside_bounds:,} outside the bounds, {part.nonfinite:,} not finite, in "
            f"chunk(s) {', '.join(part.bad_vertex_chunks[:MAX_EXAMPLES])}"
            if bad
            else "all finite and inside the bounds",
            lv,
        )
    )
    if present is not None and seen is not None:
        missing = np.setdiff1d(present, seen, assume_unique=True)
        text = f"{seen.size:,} of {present.size:,} objects with a manifest have vertices"
        if missing.size:
            text += f"; without: {missing[:MAX_EXAMPLES].tolist()}"
        if info["manifest_chunks_not_listed"]:
            text += (
                f"; {info['manifest_chunks_not_listed']:,} manifest entries name unlisted chunks"
            )
        out.append(
            Check(
                "manifests resolve to vertices",
                _verdict(bool(missing.size or info["manifest_chunks_not_listed"])),
                text,
                lv,
            )
        )
        out.append(
            Check(
                "every vertex belongs to an object",
                _verdict(part.unowned_vertices > 0, worse=False),
                f"{part.unowned_vertices:,} vertices no manifest names",
                lv,
            )
        )
    for delta, (records, unresolved) in part.links.items():
        out.append(
            Check(
                f"cross-level links {delta:+d} resolve",
                _verdict(unresolved > 0),
                f"{unresolved:,} of {records:,} link records toward level {lv + delta} "
                "do not resolve",
                lv,
            )
        )
    return out


def _union(ids: list[np.ndarray]) -> np.ndarray:
    """The union of sorted unique id arrays (one array: itself)."""
    return ids[0] if len(ids) == 1 else distinct(np.concatenate(ids))


def _transitions(
    partials: dict[int, LevelPartial], present: dict[int, np.ndarray | None]
) -> list[dict[str, Any]]:
    """Objects kept and dropped between adjacent levels (by their manifests; an additive
    level's objects are those of its chain)."""
    out = []
    levels = sorted(partials)
    for fine, coarse in zip(levels[:-1], levels[1:], strict=False):
        a, b = present[fine], present[coarse]
        if a is None or b is None:
            continue
        dropped = np.setdiff1d(a, b, assume_unique=True)
        appearing = np.setdiff1d(b, a, assume_unique=True)
        out.append(
            {
                "fine": fine,
                "coarse": coarse,
                "fine_objects": int(a.size),
                "kept": int(a.size - dropped.size),
                "dropped": int(dropped.size),
                "dropped_examples": dropped[:MAX_EXAMPLES].tolist(),
                "appearing": int(appearing.size),
            }
        )
    return out


def occupancy(image: np.ndarray, pixel: np.ndarray, cell: float) -> np.ndarray:
    """Which cells of edge ``cell`` (world units) of the projection hold a vertex."""
    rows, cols = image.shape
    r = np.floor(np.arange(rows) * pixel[1] / cell).astype(np.int64)
    c = np.floor(np.arange(cols) * pixel[0] / cell).astype(np.int64)
    out = np.zeros((r[-1] + 1, c[-1] + 1), bool)
    hit = np.nonzero(image)
    out[r[hit[0]], c[hit[1]]] = True
    return out


def _dilate(mask: np.ndarray) -> np.ndarray:
    """``mask`` grown by one cell in each direction (eight neighbours)."""
    padded = np.pad(mask, 1)
    out = np.zeros_like(mask)
    for dr in (0, 1, 2):
        for dc in (0, 1, 2):
            out |= padded[dr : dr + mask.shape[0], dc : dc + mask.shape[1]]
    return out


def coverage(fine: np.ndarray, coarse: np.ndarray, pixel: np.ndarray, cell: float) -> float:
    """The share of the cells ``fine`` occupies that ``coarse`` occupies or neighbours (a
    metavertex lies in the bin of the vertices it stands for: within one cell of edge at
    least a bin and a pixel)."""
    a, b = occupancy(fine, pixel, cell), occupancy(coarse, pixel, cell)
    return float(np.count_nonzero(a & _dilate(b)) / max(int(np.count_nonzero(a)), 1))


def _coverage_checks(
    store: Any, grid: Grid, images: dict[int, np.ndarray], levels: list[dict[str, Any]]
) -> list[Check]:
    """Per coarse level, the share of level 0's cells its content (an additive level's
    chain) covers."""
    out = []
    base = min(images)
    for info in levels:
        lv = info["level"]
        if lv == base:
            info["coverage_of_level_0"] = 1.0
            continue
        bins = np.asarray(store.level(lv).bin_shape, np.float64)[list(grid.axes)]
        cell = float(bins.max() + grid.pixel.max())
        share = coverage(images[base], images[lv], grid.pixel, cell)
        info["coverage_of_level_0"] = share
        info["coverage_cell"] = cell
        out.append(
            Check(
                "coverage of level 0",
                "warn" if share < COVERAGE_MIN else "pass",
                f"{share:.1%} of the cells level {base} occupies (cells of {cell:.3g}) are "
                f"covered at level {lv}",
                lv,
            )
        )
    return out


def _attribute_histograms(
    store: Any, present: dict[int, np.ndarray | None], failures: list[ChunkFailure]
) -> dict[str, dict[str, Any]]:
    """Numeric object attributes per level, over the objects present there, in fixed bins
    from the first level's range (values beyond it counted apart)."""
    out: dict[str, dict[str, Any]] = {}
    levels = sorted(present)
    for lv in levels:
        ids = present[lv]
        if ids is None or not ids.size:
            continue
        try:
            attrs = store.object_attributes(lv)
            has = store.object_attribute_presence(lv)
        except ZVError as exc:
            failures.append(ChunkFailure(lv, "object_attributes", str(exc)))
            continue
        for name, values in attrs.items():
            if values.ndim != 1 or values.dtype.kind not in "iuf" or not len(values):
                continue
            sel = ids[ids < len(values)]
            sel = sel[has[name][sel]] if name in has else sel
            v = values[sel].astype(np.float64)
            v = v[np.isfinite(v)]
            entry = out.get(name)
            if entry is None:
                if not v.size:
                    continue
                lo, hi = float(v.min()), float(v.max())
                hi = hi if hi > lo else lo + 1.0
                entry = out[name] = {
                    "edges": np.linspace(lo, hi, HISTOGRAM_BINS + 1).tolist(),
                    "counts": {},
                    "beyond": {},
                }
            edges = np.asarray(entry["edges"])
            inside = (v >= edges[0]) & (v <= edges[-1])
            entry["counts"][lv] = np.histogram(v[inside], bins=edges)[0].tolist()
            entry["beyond"][lv] = int(np.count_nonzero(~inside))
    return out
