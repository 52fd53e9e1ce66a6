"""Select a store's objects by regions: :func:`select_objects` (napari-free).

The selection is exact and covers every object of the level, yet reads only what the
regions can reach. It works in three steps per region, none of them a loop over objects:

1. **From the object index alone** (no chunk read): every manifest entry names a chunk, and
   a chunk's cell (its box in the level's grid, :attr:`.metadata.LevelInfo.chunk_origin` +
   key x ``chunk_shape``) holds its vertices. A segment inside one fragment lies in that
   cell; a segment between consecutive entries of a path lies in the box around both
   cells; an edge of a graph or skeleton lies in the box around all the object's cells.
   So the entries whose cell (or pair of cells, or object box) meets the region are the
   only ones that can hold a part that meets it, and the objects owning them are the
   candidates.
2. **One read** of those chunks: for paths, the chunks decoded and their vertices tested
   where they lie, the candidates' fragments gathered as rows (no geometry assembled);
   other kinds through ``Store.read`` with ``chunks``. Each candidate's runs in them,
   cross-chunk segments included wherever both their chunks are read; the steps of a path
   into chunks not read (grouped by pair of cells, :class:`_Steps`) read only the end
   vertices they join, and only where the region can meet them.
3. **The test** of those vertices and segments (:mod:`.regions`), vectorised, gathered
   per object.

An object is in the result when it meets **every** region of ``include``, **at least one**
of ``any_of`` (when any is given) and **none** of ``exclude``; the regions are evaluated in
that order, each over the objects still in the running, so exclusion tests every part of
every surviving object that can reach the region (the object's whole path is considered,
through its manifest).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from threading import Event, Lock
from typing import Any, cast

import numpy as np

from .cache import ChunkCache
from .chunks import ChunkData, ChunkTable, LoadedChunks, unique_rows
from .decode.fragments import FragmentIndex, expand_ranges
from .distinct import distinct
from .errors import ZVCancelledError, ZVError
from .geometry import GRAPH_TYPES, PATH_TYPES, Geometry, Paths
from .loading import load_chunks
from .objects import ObjectIndex
from .regions import Region

#: the tests :func:`select_objects` knows
TESTS = ("crosses", "vertex", "endpoints", "both_endpoints")

#: the decoded chunks one selection keeps for its regions to share
CACHE_BYTES = 256 * 2**20

#: a cell is grown by this share of its edge on every side (vertices a writer binned by a
#: float32 position on a cell's face)
CELL_SLACK = 1e-4

Progress = Callable[[int, int, str], None]


def select_objects(
    store: Any,
    include: Sequence[Region] | Region = (),
    any_of: Sequence[Region] | Region = (),
    exclude: Sequence[Region] | Region = (),
    test: str = "crosses",
    level: int = 0,
    progress: Progress | None = None,
    cancel: Event | None = None,
) -> np.ndarray:
    """The sorted ids (int64) of the objects of ``level`` that meet every region of
    ``include``, at least one of ``any_of`` (when given) and none of ``exclude``.

    ``test`` says what "meets" means:

    * ``"crosses"``: some segment of the object's path (or edge of its graph) meets the
      region, even one with no vertex inside it (a plane: one with ends on both sides);
      points and meshes: a vertex inside;
    * ``"vertex"``: some vertex inside;
    * ``"endpoints"``: the first or the last vertex of a path inside;
      ``"both_endpoints"``: both (lines, polylines and streamlines only).

    Without ``include`` and ``any_of`` every object of the level is in the running (only
    ``exclude`` removes some). ``progress(step, n_steps, text)`` is called before each
    region; once ``cancel`` is set the selection raises
    :class:`~.errors.ZVCancelledError`. Regions with ``space="world"`` are tested where
    :attr:`~.store_metadata.StoreMetadata.placement` puts the store's positions.

    Raises ``ValueError`` for an unknown test, an endpoint test of a store without paths
    or a region of the wrong dimension, and :class:`~.errors.ZVError` for a store or level
    without objects or an additive level.
    """
    include, any_of, exclude = _regions(include), _regions(any_of), _regions(exclude)
    if test not in TESTS:
        raise ValueError(f"test must be one of {TESTS}, not {test!r}")
    kind = store.geometry_type
    if test in ("endpoints", "both_endpoints") and kind not in PATH_TYPES:
        raise ValueError(f"{store.path}: the {test!r} test needs paths, not {kind}")
    for region in (*include, *any_of, *exclude):
        region.check_ndim(store.ndim, store.path)
    if len(store.refinement_chain(level)) > 1:
        raise ZVError(f"{store.path} level {level} is additive: select from level 0 instead")
    index = store.object_index(level)
    if index is None:
        raise ZVError(f"{store.path} level {level} has no objects to select")
    plan = _Plan(store, level, index, test)
    alive = index.present.copy()
    steps = [*(("include", r) for r in include), *(("any_of", r) for r in any_of)]
    steps += [("exclude", r) for r in exclude]
    hit_any = np.zeros_like(alive)
    for step, (role, region) in enumerate(steps):
        if cancel is not None and cancel.is_set():
            raise ZVCancelledError(f"{store.path}: selection cancelled")
        if progress is not None:
            progress(step, len(steps), f"{role} {region!r}")
        rows = alive & ~hit_any if role == "any_of" else alive
        hit = plan.meets(region, rows, cancel)
        if role == "include":
            alive &= hit
        elif role == "any_of":
            hit_any |= hit
            if step + 1 == len(include) + len(any_of):
                alive &= hit_any
        else:
            alive &= ~hit
    if progress is not None:
        progress(len(steps), len(steps), f"{int(alive.sum()):,} objects selected")
    return np.sort(index.ids[alive].astype(np.int64))


def count_reaching(
    store: Any,
    include: Sequence[Region] | Region = (),
    any_of: Sequence[Region] | Region = (),
    level: int = 0,
) -> int:
    """A quick, coarse count for :func:`select_objects`: the objects of ``level`` with a
    manifest entry in a chunk whose cell each region of ``include`` meets (and, when given,
    one of ``any_of``), from the object index alone (no chunk is read). It counts at least
    the objects that meet those regions (exclusion is not looked at): an estimate to show
    while the exact selection runs. Raises as :func:`select_objects`."""
    include, any_of = _regions(include), _regions(any_of)
    index = store.object_index(level)
    if index is None:
        raise ZVError(f"{store.path} level {level} has no objects to select")
    plan = _Plan(store, level, index, "vertex")
    alive = index.present.copy()
    for region in include:
        alive &= plan.reaching(region)
    if any_of:
        alive &= np.logical_or.reduce([plan.reaching(r) for r in any_of])
    return int(alive.sum())


def _regions(value: Sequence[Region] | Region) -> tuple[Region, ...]:
    regions = (value,) if isinstance(value, Region) else tuple(value)
    for r in regions:
        if not isinstance(r, Region):
            raise TypeError(f"expected a Box, Sphere or Plane, not {r!r}")
    return regions


@dataclass(frozen=True)
class _Cells:
    """The cells of a level's object index: its entries' chunks (unique, ``cells``), the
    cell of every entry, each cell's box (grown by :data:`CELL_SLACK`) and the object row of
    every entry. Worked out once per store and level (:func:`_cells_of`)."""

    index: ObjectIndex
    cells: np.ndarray
    cell_of_entry: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    entry_row: np.ndarray

    @cached_property
    def steps(self) -> _Steps:
        """The level's :class:`_Steps` (built on the first ``"crosses"`` of paths)."""
        row, cell = self.entry_row, self.cell_of_entry
        first = np.flatnonzero((row[:-1] == row[1:]) & (cell[:-1] != cell[1:]))
        n = len(self.cells)
        pairs, pair_of = np.unique(cell[first] * n + cell[first + 1], return_inverse=True)
        order = np.argsort(pair_of, kind="stable")
        start = np.zeros(pairs.size + 1, np.int64)
        np.cumsum(np.bincount(pair_of, minlength=pairs.size), out=start[1:])
        return _Steps(first[order], pairs // n, pairs % n, start)


@dataclass(frozen=True)
class _Steps:
    """The segments between two consecutive manifest entries of one object in different
    chunks (its path's steps from a chunk to another), by pair of cells: the first entry of
    each step (``entries``, pair after pair), the two cells of each pair (``a`` then ``b``,
    rows of :attr:`_Cells.cells`) and where each pair's steps start in ``entries``. A region
    tests the few thousand pairs, not the millions of steps."""

    entries: np.ndarray
    a: np.ndarray
    b: np.ndarray
    start: np.ndarray

    def of_pairs(self, pairs: np.ndarray) -> np.ndarray:
        """The first entries (ascending) of the steps of the pairs flagged in ``pairs``."""
        at = np.flatnonzero(pairs)
        first = self.start[at]
        found: np.ndarray = self.entries[expand_ranges(first, self.start[at + 1] - first)]
        found.sort()
        return found


#: the cells of each open store's levels, kept as long as the store (one per level)
_CELLS: weakref.WeakKeyDictionary[Any, dict[int, _Cells]] = weakref.WeakKeyDictionary()
_CELLS_LOCK = Lock()


def _cells_of(store: Any, level: int, index: ObjectIndex) -> _Cells:
    with _CELLS_LOCK:
        found = _CELLS.get(store, {}).get(level)
    if found is not None and found.index is index:
        return found
    info = store.level(level)
    knd = info.key_ndim
    chunks = np.asarray(index.chunks, np.int64).reshape(-1, knd)
    cells = store.chunks(level) if len(store.refinement_chain(level)) == 1 else chunks
    cell_of_entry = ChunkTable(cells).index_of(chunks)
    if np.any(cell_of_entry < 0):  # entries naming chunks the level does not list
        cells = unique_rows(chunks)
        cell_of_entry = ChunkTable(cells).index_of(chunks)
    spatial = cells[:, knd - store.ndim :].astype(np.float64)
    edge = np.asarray(info.chunk_shape, np.float64)[-store.ndim :]
    slack = CELL_SLACK * edge
    lo = info.chunk_origin + spatial * edge - slack
    found = _Cells(index, cells, cell_of_entry, lo, lo + edge + 2 * slack, index.entry_rows)
    with _CELLS_LOCK:
        _CELLS.setdefault(store, {})[level] = found
    return found


class _Plan:
    """One selection: the level's cells, their boxes in the world when a region is given
    there, and a chunk cache shared by the regions' reads."""

    def __init__(self, store: Any, level: int, index: ObjectIndex, test: str) -> None:
        self.store, self.level, self.index, self.test = store, level, index, test
        self.kind = store.geometry_type
        self.cell_table = c = _cells_of(store, level, index)
        self.cells, self.cell_of_entry, self.entry_row = c.cells, c.cell_of_entry, c.entry_row
        self.cell_lo, self.cell_hi = c.lo, c.hi
        self.cache = ChunkCache(CACHE_BYTES)
        self._world: tuple[np.ndarray, np.ndarray] | None = None

    def boxes(self, region: Region) -> tuple[np.ndarray, np.ndarray]:
        """The cells' boxes in the region's space."""
        if region.space == "store" or self.store.placement.is_identity:
            return self.cell_lo, self.cell_hi
        if self._world is None:
            affine = self.store.placement.affine
            linear, shift = affine[:-1, :-1], affine[:-1, -1]
            mid = (self.cell_lo + self.cell_hi) / 2 @ linear.T + shift
            reach = (self.cell_hi - self.cell_lo) / 2 @ np.abs(linear).T
            self._world = (mid - reach, mid + reach)
        return self._world

    def in_space(self, region: Region, positions: np.ndarray) -> np.ndarray:
        """Store ``positions`` in the region's space."""
        if region.space == "store" or self.store.placement.is_identity:
            return positions
        world: np.ndarray = self.store.placement.apply(positions)
        return world

    def reaching(self, region: Region) -> np.ndarray:
        """``(O,)`` bool per object row: an entry of it lies in a cell ``region`` meets."""
        lo, hi = self.boxes(region)
        counts = np.bincount(
            self.entry_row[region.meets_boxes(lo, hi)[self.cell_of_entry]],
            minlength=self.index.num_objects,
        )
        reached: np.ndarray = counts > 0
        return reached

    def meets(self, region: Region, rows: np.ndarray, cancel: Event | None) -> np.ndarray:
        """``(O,)`` bool per object row of the index: among ``rows``, the objects that meet
        ``region`` by the plan's test."""
        index = self.index
        lo, hi = self.boxes(region)
        met = region.meets_boxes(lo, hi)  # per cell: may hold a hit
        if self.kind in PATH_TYPES and self.test == "crosses":
            return self._path_crossings(region, rows, met, cancel)
        if self.kind in PATH_TYPES and self.test == "vertex":
            entries = self._entries_in(met, rows)
            return self._chunk_hits(region, entries, False, cancel)
        reach = met[self.cell_of_entry]  # per entry
        ends = None
        cand: np.ndarray
        if self.test in ("endpoints", "both_endpoints"):
            ends = self._ends(reach)
            cand = ends[0] & ends[1] if self.test == "both_endpoints" else ends[0] | ends[1]
            need = np.zeros_like(reach)
            need[index.offsets[:-1][ends[0]]] = True
            need[index.offsets[1:][ends[1]] - 1] = True
        elif self.test == "crosses" and self.kind in GRAPH_TYPES:
            # an edge may join any two cells of its object: the box around them all
            cand = np.zeros(index.num_objects, bool)
            at = np.flatnonzero(index.present)
            starts = index.offsets[:-1][at]
            obj_lo = np.minimum.reduceat(lo[self.cell_of_entry], starts, axis=0)
            obj_hi = np.maximum.reduceat(hi[self.cell_of_entry], starts, axis=0)
            cand[at] = region.meets_boxes(obj_lo, obj_hi)
            need = cand[self.entry_row]
        else:  # a vertex inside
            need = reach
            cand = self._any_per_row(need)
        cand &= rows
        if not cand.any():
            return cand
        need &= cand[self.entry_row]
        geom = self._read(distinct(self.cell_of_entry[need]), cancel)
        pos = self.in_space(region, geom.positions)
        if ends is None:
            hit_ids = self._hits(region, geom, pos)
        else:
            hit_ids = self._endpoint_hits(region, geom, pos, ends)
        meets: np.ndarray = cand & np.isin(index.ids, hit_ids)
        return meets

    def _any_per_row(self, flags: np.ndarray) -> np.ndarray:
        """Per object row of the index: whether any of its entries is flagged."""
        counts = np.bincount(self.entry_row[flags], minlength=self.index.num_objects)
        return counts > 0

    def _entries_in(self, cells: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The entries (ascending) of the objects ``rows`` in the cells flagged in ``cells``
        (from the index's entries by chunk: their own number, not the level's)."""
        entries = np.sort(self.index.entries_by_chunk(self.cells[cells])[0])
        kept: np.ndarray = entries[rows[self.entry_row[entries]]]
        return kept

    def _cells_holding(self, entries: np.ndarray) -> np.ndarray:
        """The cells (ascending rows of :attr:`cells`) of ``entries``."""
        held: np.ndarray = np.bincount(self.cell_of_entry[entries], minlength=len(self.cells))
        return np.flatnonzero(held)

    def _chunk_of(self, chunks: list[ChunkData], cells: np.ndarray) -> np.ndarray:
        """Per cell of the level, the index in ``chunks`` (loaded for ``cells``, some
        perhaps left out) of its chunk, ``-1`` when none."""
        out = np.full(len(self.cells), -1, np.int64)
        out[cells] = ChunkTable(np.stack([c.coords for c in chunks])).index_of(self.cells[cells])
        return out

    def _read(self, cells: np.ndarray, cancel: Event | None) -> Geometry:
        """The level's geometry in the chunks of ``cells`` (rows of :attr:`cells`): the
        chunks alone, no object ids (their selection costs more than the test of the other
        objects' parts, whose hits are real too and are dropped by the caller; a read of a
        few objects' ids among many took 4x the chunks' read)."""
        geom: Geometry = self.store.read(
            self.level,
            chunks=self.cells[cells],
            attributes=False,
            cache=self.cache,
            cancel=cancel,
        )
        return geom

    def _chunk_hits(
        self, region: Region, entries: np.ndarray, segments: bool, cancel: Event | None
    ) -> np.ndarray:
        """``(O,)`` bool per object row: a vertex of the ``entries`` (ascending) lies inside
        ``region`` or (``segments``) a segment between two consecutive vertices of one
        object among them meets it, tested on the decoded chunks of those entries (no
        geometry assembled: their positions tested chunk by chunk, the entries' fragments
        gathered as rows). Consecutive entries of one object, both in these chunks, join
        as they do in a read's paths (so does an entry naming a fragment its chunk does not
        hold, of no rows); a chunk left out (damaged) breaks them."""
        if cancel is not None and cancel.is_set():
            raise ZVCancelledError(f"{self.store.path}: selection cancelled")
        hit = np.zeros(self.index.num_objects, bool)
        cells = self._cells_holding(entries)
        chunks = load_chunks(self.store.layout, self.level, self.cells[cells], [], cache=self.cache)
        if not chunks:
            return hit
        loaded = LoadedChunks.build(chunks, self.store.ndim, self.cells.shape[1])
        cidx = self._chunk_of(chunks, cells)[self.cell_of_entry[entries]]
        entries, cidx = entries[cidx >= 0], cidx[cidx >= 0]
        rows, counts = loaded.fragment_rows(cidx, self.index.frags[entries], loaded.row_dtype)
        # every loaded row's code and whether it is inside, chunk by chunk (a few dozen)
        code_parts, inside_parts = [], []
        for chunk in chunks:
            pos = self.in_space(region, chunk.positions)
            code_parts.append(region.outcodes(pos))
            inside_parts.append(region.contains_coded(pos, code_parts[-1]))
        inside = np.concatenate(inside_parts)[rows]
        ends = np.cumsum(counts, dtype=np.int64)  # one past each entry's last row
        obj = self.entry_row[entries]
        filled = np.flatnonzero(counts)  # (reduceat needs runs of at least one row)
        if filled.size:
            some = np.logical_or.reduceat(inside, (ends - counts)[filled])
            hit[obj[filled[some]]] = True
        if segments and rows.size > 1:
            cf = np.concatenate(code_parts)[rows]
            # pairs of one run, neither end inside, not both beyond one side
            k = np.flatnonzero(((cf[:-1] & cf[1:]) == 0) & ~inside[:-1] & ~inside[1:])
            breaks = np.r_[True, (obj[1:] != obj[:-1]) | (entries[1:] != entries[:-1] + 1)]
            run_start = np.zeros(rows.size + 1, bool)
            run_start[(ends - counts)[breaks]] = True
            k = k[~run_start[k + 1]]
            owner = obj[np.searchsorted(ends, k, side="right")]
            k, owner = k[~hit[owner]], owner[~hit[owner]]  # (a vertex inside decided those)
            a, b = _taken(loaded, rows[k]), _taken(loaded, rows[k + 1])
            met = region.meets_segments(self.in_space(region, a), self.in_space(region, b))
            hit[owner[met]] = True
        return hit

    def _path_crossings(
        self, region: Region, rows: np.ndarray, met: np.ndarray, cancel: Event | None
    ) -> np.ndarray:
        """``"crosses"`` of paths (``met``: per cell, whether it meets the region), in two
        passes. First the chunks whose cell meets the region are read: the vertices and
        segments in them (:meth:`_chunk_hits`). Then, for the objects still undecided, the
        segments between two consecutive entries in different chunks that the first read
        did not hold (:meth:`_step_hits`: only the fragments' end vertices are read). Paths
        are read from the store's own chunks (no store of paths lacks them: a composite
        store's added geometries are points, graphs, skeletons and meshes)."""
        index, cell_of, steps = self.index, self.cell_of_entry, self.cell_table.steps
        lo, hi = self.boxes(region)
        code = region.box_codes(lo, hi)  # per cell
        # a step between two chunks, neither meeting the region: its sweep may (the codes:
        # one of both cells beyond one side of the region, the box around them misses it)
        pairs = ~met[steps.a] & ~met[steps.b] & ((code[steps.a] & code[steps.b]) == 0)
        pairs[pairs] = _meets_between(region, lo, hi, steps.a[pairs], steps.b[pairs])
        skip = steps.of_pairs(pairs)
        entries = self._entries_in(met, rows)
        cand = np.zeros(index.num_objects, bool)
        cand[self.entry_row[entries]] = True
        cand[self.entry_row[skip]] = True
        cand &= rows
        if not cand.any():
            return cand
        hit = self._chunk_hits(region, entries, True, cancel)
        undecided = cand & ~hit
        if undecided.any():
            first_cells = distinct(cell_of[entries])
            hit[self._step_hits(region, undecided, first_cells, code, cancel)] = True
        return hit

    def _step_hits(
        self,
        region: Region,
        undecided: np.ndarray,
        first_cells: np.ndarray,
        code: np.ndarray,
        cancel: Event | None,
    ) -> np.ndarray:
        """Rows of the ``undecided`` objects (by row) whose segment from one manifest entry
        to the next, in another chunk, meets ``region``, among the segments the first read
        did not hold (not both chunks among ``first_cells``). A chunk whose cell misses the
        region holds no part of a path that meets it but these segments, so only the end
        vertices of the fragments they join are read (their chunks decoded, through the
        plan's cache), not the paths. ``code``: per cell, its
        :meth:`~.regions.Region.box_codes`."""
        cell_of, entry_row, steps = self.cell_of_entry, self.entry_row, self.cell_table.steps
        in_first = np.zeros(len(self.cells), bool)
        in_first[first_cells] = True
        lo, hi = self.boxes(region)
        pa, pb = steps.a, steps.b
        pairs = ~(in_first[pa] & in_first[pb]) & ((code[pa] & code[pb]) == 0)
        pairs[pairs] = _meets_between(region, lo, hi, pa[pairs], pb[pairs])
        e = steps.of_pairs(pairs)
        e = e[undecided[entry_row[e]]]
        if e.size == 0:
            return np.empty(0, np.int64)
        ca, cb = cell_of[e], cell_of[e + 1]
        # one end at most lies in a chunk read (in the plan's cache): from it, the segment
        # runs to some point of the other cell, a cone that rarely meets the region; the
        # far chunks are read for the segments whose cone does
        ka, kb = in_first[ca], in_first[cb]
        a = np.full((e.size, self.store.ndim), np.nan)
        b = a.copy()
        a[ka], b[kb] = self._ends_at(region, np.concatenate([e[ka], e[kb] + 1]), ka.sum(), cancel)
        wanted = ~(ka | kb)
        wanted[ka] = region.meets_sweeps(a[ka], a[ka], lo[cb[ka]], hi[cb[ka]])
        wanted[kb] = region.meets_sweeps(b[kb], b[kb], lo[ca[kb]], hi[ca[kb]])
        fa, fb = wanted & ~ka, wanted & ~kb
        a[fa], b[fb] = self._ends_at(region, np.concatenate([e[fa], e[fb] + 1]), fa.sum(), cancel)
        met = np.flatnonzero(wanted)
        met = met[np.isfinite(a[met]).all(axis=1) & np.isfinite(b[met]).all(axis=1)]
        met = met[region.meets_segments(a[met], b[met])]  # (NaN above: not read)
        found: np.ndarray = entry_row[e[met]]
        return found

    def _ends_at(
        self, region: Region, entries: np.ndarray, n_last: int, cancel: Event | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_fragment_ends` in the region's space."""
        if entries.size == 0:
            empty = np.empty((0, self.store.ndim))
            return empty, empty
        a, b = self._fragment_ends(entries, int(n_last), cancel)
        if region.space != "store" and not self.store.placement.is_identity:
            a, b = self.store.placement.apply(a), self.store.placement.apply(b)
        return a, b

    def _fragment_ends(
        self, entries: np.ndarray, n_last: int, cancel: Event | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The last vertex of the fragments of ``entries[:n_last]`` and the first of the
        others' (``(n, ndim)`` float64, NaN where the chunk or fragment could not be read)."""
        if cancel is not None and cancel.is_set():
            raise ZVCancelledError(f"{self.store.path}: selection cancelled")
        cells = self._cells_holding(entries)
        loaded = load_chunks(self.store.layout, self.level, self.cells[cells], [], cache=self.cache)
        out = np.full((entries.size, self.store.ndim), np.nan)
        if loaded:
            which = self._chunk_of(loaded, cells)[self.cell_of_entry[entries]]
            last = np.arange(entries.size) < n_last
            order = np.argsort(_small(which + 1, len(loaded) + 1), kind="stable")
            bounds = np.searchsorted(which[order], np.arange(len(loaded) + 1))
            for k, chunk in enumerate(loaded):  # a chunk at a time (a few dozen), vectorised
                at = order[bounds[k] : bounds[k + 1]]
                rows = _end_rows(chunk.fragments, self.index.frags[entries[at]], last[at])
                good = (rows >= 0) & (rows < chunk.n_rows)
                out[at[good]] = chunk.positions[rows[good]]
        return out[:n_last], out[n_last:]

    def _ends(self, reach: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """By object row: whether the cell of its first entry, and of its last, meets the
        region (``reach``: per entry)."""
        index = self.index
        has = index.present
        first = np.zeros(index.num_objects, bool)
        last = np.zeros(index.num_objects, bool)
        first[has] = reach[index.offsets[:-1][has]]
        last[has] = reach[index.offsets[1:][has] - 1]
        return first, last

    def _hits(self, region: Region, geom: Geometry, pos: np.ndarray) -> np.ndarray:
        """Object ids of the read ``geom`` (points, meshes, graphs, skeletons; positions
        ``pos`` in the region's space) that meet ``region``: a vertex inside, or
        (``"crosses"`` of graphs and skeletons) an edge. The vertices'
        :meth:`~.regions.Region.outcodes` leave few for the exact tests."""
        vid = geom.vertex_object_ids
        if not len(pos) or vid is None:
            return np.empty(0, np.int64)
        code = region.outcodes(pos)
        parts = [vid[region.contains_coded(pos, code)]]
        segments = self.test == "crosses" and self.kind in GRAPH_TYPES
        edges = np.asarray(geom.edges, np.int64) if segments else np.empty((0, 2), np.int64)
        if len(edges):
            edges = edges[(code[edges[:, 0]] & code[edges[:, 1]]) == 0]
            seg = region.meets_segments(pos[edges[:, 0]], pos[edges[:, 1]])
            parts.append(vid[edges[seg, 0]])
        ids = np.concatenate(parts)
        return distinct(ids[ids >= 0])

    def _endpoint_hits(
        self,
        region: Region,
        geom: Geometry,
        pos: np.ndarray,
        ends: tuple[np.ndarray, np.ndarray],
    ) -> np.ndarray:
        """Objects whose first or last vertex (both: ``both_endpoints``) is inside. The
        paths of an object come in manifest order, so its first path starts at its first
        vertex when the chunk of its first entry was read (``ends[0]``, by object row: read
        when its cell meets the region, and a chunk whose cell does not holds no vertex
        inside), its last path ends at its last vertex when that of its last was
        (``ends[1]``)."""
        ids = np.asarray(geom.path_object_ids, np.int64)
        if ids.size == 0:
            return ids
        paths = cast(Paths, geom.paths)  # (a read's paths)
        offsets, flat = np.asarray(paths.offsets), paths.flat
        new = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
        end = np.r_[new[1:], ids.size]  # one past each object's last path
        obj = ids[new]
        order = np.argsort(self.index.ids, kind="stable")
        rows = order[np.searchsorted(self.index.ids, obj, sorter=order)]
        first_in = ends[0][rows] & region.contains(pos[flat[offsets[new]]])
        last_in = ends[1][rows] & region.contains(pos[flat[offsets[end] - 1]])
        hits: np.ndarray = (
            obj[first_in & last_in] if self.test == "both_endpoints" else obj[first_in | last_in]
        )
        return hits


def _meets_between(
    region: Region, lo: np.ndarray, hi: np.ndarray, ca: np.ndarray, cb: np.ndarray
) -> np.ndarray:
    """Whether a segment from a point of cell ``ca`` to one of cell ``cb`` (boxes ``lo``,
    ``hi``) may meet ``region``: their sweep (:meth:`~.regions.Region.meets_sweeps`) and
    the box around both (exact for a sphere, whose sweep is that of its bounds) meet it."""
    a_lo, a_hi, b_lo, b_hi = lo[ca], hi[ca], lo[cb], hi[cb]
    around = region.meets_boxes(np.minimum(a_lo, b_lo), np.maximum(a_hi, b_hi))
    at = np.flatnonzero(around)
    around[at] = region.meets_sweeps(a_lo[at], a_hi[at], b_lo[at], b_hi[at])
    return around


def _small(values: np.ndarray, bound: int) -> np.ndarray:
    """``values`` (non-negative, below ``bound``) as uint16 when they fit it: what a stable
    argsort sorts by radix."""
    return values.astype(np.uint16) if bound <= 2**16 else values


def _taken(loaded: LoadedChunks, rows: np.ndarray) -> np.ndarray:
    """The positions of the global ``rows`` (in any order) of ``loaded``, gathered chunk by
    chunk (the rows sorted by chunk: a radix sort of small numbers)."""
    chunk = np.searchsorted(loaded.start, rows, side="right") - 1
    order = np.argsort(_small(chunk, len(loaded.chunks)), kind="stable")
    bounds = np.searchsorted(chunk[order], np.arange(len(loaded.chunks) + 1)).tolist()
    first = loaded.chunks[0].positions
    out = np.empty((rows.size, first.shape[1]), first.dtype)
    for k, c in enumerate(loaded.chunks):  # (a few dozen chunks)
        at = order[bounds[k] : bounds[k + 1]]
        if at.size:
            out[at] = np.take(c.positions, rows[at] - loaded.start[k], 0)
    return out


def _end_rows(fi: FragmentIndex, frags: np.ndarray, last: np.ndarray) -> np.ndarray:
    """The row (in its chunk) of the last vertex of each fragment ``frags`` where ``last``,
    else of its first; ``-1`` for an empty fragment or a number the index does not hold."""
    frags = np.asarray(frags, np.int64)
    rows = np.full(frags.size, -1, np.int64)
    ok = np.flatnonzero((frags >= 0) & (frags < fi.num_fragments))
    f = frags[ok]
    ranged = fi.is_range[f]
    start, count = fi.start[f].astype(np.int64), fi.count[f].astype(np.int64)
    filled = ranged & (count > 0)
    rows[ok[filled]] = np.where(last[ok], start + count - 1, start)[filled]
    listed = ok[~ranged]
    if listed.size and fi.explicit_rows.size:
        e = fi.explicit_number[frags[listed]]
        lo, hi = fi.explicit_offsets[e], fi.explicit_offsets[e + 1]
        full = hi > lo
        rows[listed[full]] = fi.explicit_rows[np.where(last[listed], hi - 1, lo)[full]]
    return rows
