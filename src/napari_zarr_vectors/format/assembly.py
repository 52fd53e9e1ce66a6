"""Decoded chunks + object index + links -> :class:`Geometry`, per geometry type."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, cast

import numpy as np

from .chunks import LoadedChunks
from .decode.fragments import expand_ranges
from .errors import ZVChunkWarning, ZVFormatError, ZVUnknownObjectWarning
from .geometry import PATH_TYPES, Derived, Geometry, GeometryType, flat_paths, split_lengths
from .layout.base import LinkSet
from .loading import AttributeSpec
from .missing import OBJECT_UNKNOWN
from .objects import ObjectIndex, shared_fragments_cause, unattributed_chunks
from .query import inside_box, inside_box_within
from .ranks import position_rank


@dataclass
class Selection:
    """What a read asked for: ``object_rows`` (rows of the object index) or ``None`` = all."""

    object_rows: np.ndarray | None = None
    bbox: tuple[np.ndarray, np.ndarray] | None = None
    #: where the read is (errors name it) and whether damage raises instead of warning
    store: str | None = None
    strict: bool = False
    #: the read loaded every chunk the level lists (a reference to another is damage)
    whole: bool = False


def _entries_in_loaded(loaded: LoadedChunks, index: ObjectIndex, entries: np.ndarray) -> np.ndarray:
    """Chunk index (``-1`` when not loaded) of each entry; every entry of the index is
    mapped once per read when most are asked for (object ids, then paths), only the
    asked ones otherwise."""
    if 4 * entries.size < index.frags.size:
        return loaded.table.index_of(index.chunks[entries])
    cidx: np.ndarray = _entry_chunks(loaded, index)[entries]
    return cidx


@dataclass
class _EntryMap:
    """Where a read's loaded chunks hold every entry of an object index, worked out once
    per read (its arrays are shared: not to be written to)."""

    chunks: np.ndarray  # the index's entry chunks it maps (checked by identity)
    cidx: np.ndarray  # chunk index in the loaded chunks of every entry, -1 when not loaded
    _inside: tuple[np.ndarray, np.ndarray] | None = None

    def inside(self) -> tuple[np.ndarray, np.ndarray]:
        """The entries in loaded chunks and the index of their chunk (a box: a few of
        them; asked for by the reference check, then the paths)."""
        if self._inside is None:
            at = np.flatnonzero(self.cidx >= 0)
            self._inside = (at, self.cidx[at])
        return self._inside


def _entry_map(loaded: LoadedChunks, index: ObjectIndex) -> _EntryMap:
    memo: dict[int, _EntryMap] = loaded.__dict__.setdefault("_entry_maps", {})
    found = memo.get(id(index.chunks))
    if found is None or found.chunks is not index.chunks:
        # the entries naming the loaded chunks, found per chunk: a box's few cost their own
        # number, not a look-up of every entry's chunk
        entries, at = index.entries_by_chunk(loaded.table.chunks)
        cidx = np.full(len(index.frags), -1, np.int32 if len(loaded.chunks) < 2**31 else np.int64)
        cidx[entries] = at
        found = memo[id(index.chunks)] = _EntryMap(index.chunks, cidx)
    return found


def _entry_chunks(loaded: LoadedChunks, index: ObjectIndex) -> np.ndarray:
    """Chunk index (``-1`` when not loaded) of every entry of the index (:class:`_EntryMap`)."""
    return _entry_map(loaded, index).cidx


def _object_ids_per_row(
    loaded: LoadedChunks,
    index: ObjectIndex,
    object_rows: np.ndarray | None = None,
    keep: np.ndarray | None = None,
) -> np.ndarray:
    """Object id of every loaded row (the first object whose manifest names it), -1 if none,
    :data:`~.missing.OBJECT_UNKNOWN` in a fragment several objects name whole (which is
    whose is not stored: :attr:`ObjectIndex.shared_entries`); of the rows ``keep`` (global,
    ascending) only, when given.

    With ``object_rows`` (a selection), only those objects' manifests are looked at: the
    rows a selective read keeps are theirs, and a store of many objects is not scanned
    whole for a few of them."""
    entries, cidx = _loaded_entries(loaded, index, object_rows)
    out = _object_ids_by_fragment(loaded, index, entries, cidx, keep)
    if out is None:
        rows, counts = loaded.fragment_rows(cidx, index.frags[entries])
        owner = np.repeat(index.ids[index.entry_rows[entries]], counts)
        out = np.full(loaded.n_rows if keep is None else keep.size, -1, dtype=np.int64)
        if rows.size:
            uniq, first = np.unique(rows, return_index=True)
            at = uniq if keep is None else _renumbered(keep, uniq)
            out[at[at >= 0]] = owner[first][at >= 0]
    shared = index.shared_entries[entries]
    if shared.any():
        rows, _ = loaded.fragment_rows(cidx[shared], index.frags[entries[shared]])
        at = rows if keep is None else _renumbered(keep, rows)
        out[at[at >= 0]] = OBJECT_UNKNOWN
    return out


def _warn_unknown(
    loaded: LoadedChunks, index: ObjectIndex, selection: Selection, level: int
) -> None:
    """Say which loaded chunks hold vertices of unknown object (:func:`_object_ids_per_row`)
    and which objects each may belong to: the first such chunk named, the others counted."""
    chunks, owners = unattributed_chunks(index)
    if not len(chunks):
        return
    loaded_at = loaded.table.index_of(chunks)
    held = np.flatnonzero(loaded_at >= 0)
    if not held.size:
        return
    first = int(held[0])
    ids = ", ".join(str(int(i)) for i in owners[first])
    more = f" (and {held.size - 1} more chunks like it)" if held.size > 1 else ""
    asked = (
        ""
        if selection.object_rows is None
        else (
            "; the objects read by id come with these chunks' shared vertices, which may be "
            "other objects'"
        )
    )
    error = ZVFormatError(
        f"{int(np.diff(loaded.start)[loaded_at[held]].sum()):,} vertices of unknown object: "
        f"{shared_fragments_cause(index)}, which each of these objects names whole, and the "
        f"store does not record which vertex is whose (object unknown: one of {ids})"
        f"{more}{asked}",
        store=selection.store,
        level=level,
        array="object_index/manifests",
        chunk=chunks[first],
    )
    warnings.warn(str(error), ZVUnknownObjectWarning, stacklevel=4)


def _loaded_entries(
    loaded: LoadedChunks, index: ObjectIndex, object_rows: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """The manifest entries of the objects ``object_rows`` (``None``: all) that name a
    loaded chunk, and the index of that chunk in ``loaded``."""
    if object_rows is None:  # every entry
        entry_map = _entry_map(loaded, index)
        cidx = entry_map.cidx
        if cidx.size == 0 or cidx.min() >= 0:  # all loaded (a whole level): no copies
            return np.arange(cidx.size), cidx
        return entry_map.inside()
    entries = index.entries_of_rows(object_rows)
    cidx = _entries_in_loaded(loaded, index, entries)
    ok = cidx >= 0
    if ok.all():  # (no copies)
        return entries, cidx
    return entries[ok], cidx[ok]


def _derived_object_ids(
    loaded: LoadedChunks,
    index: ObjectIndex | Callable[[], ObjectIndex | None],
    selection: Selection,
    level: int,
    keep: np.ndarray | None,
) -> np.ndarray | None:
    """:func:`_object_ids_per_row`, when asked for (``None`` when the level has no object
    index after all); an index read only now is checked now (:func:`_check_fragment_refs`)."""
    if callable(index):
        found = index()
        if found is not None:
            _check_fragment_refs(loaded, found, selection, level)
    else:
        found = index
    if found is None:
        return None
    _warn_unknown(loaded, found, selection, level)
    return _object_ids_per_row(loaded, found, selection.object_rows, keep)


def _check_fragment_refs(
    loaded: LoadedChunks, index: ObjectIndex, selection: Selection, level: int
) -> bool:
    """Report the manifest entries of the selected objects that name a fragment their
    loaded chunk does not hold or, when the read loaded the whole level, a chunk it does
    not list: the pieces they name are left out (``selection.strict``: raise). Whether
    every selected entry in a loaded chunk names a fragment it holds."""
    entries, cidx = _loaded_entries(loaded, index, selection.object_rows)
    if selection.whole and entries.size < len(index.frags) and loaded.n_rows:
        _report(
            ZVFormatError(
                f"{len(index.frags) - entries.size} manifest entries name chunks the level "
                "does not list (or that could not be read); those pieces are left out",
                store=selection.store,
                level=level,
                array="object_index/manifests",
            ),
            selection.strict,
        )
    if not entries.size:
        return True
    nfrag = np.fromiter(
        (c.fragments.num_fragments for c in loaded.chunks), np.int64, len(loaded.chunks)
    )
    frags = index.frags if entries.size == index.frags.size else index.frags[entries]
    bad = np.flatnonzero((frags < 0) | (frags >= nfrag[cidx]))
    if not bad.size:
        return True
    e, k = entries[bad[0]], cidx[bad[0]]
    obj = int(index.ids[np.searchsorted(index.offsets, e, side="right") - 1])
    error = ZVFormatError(
        f"{bad.size} manifest entries name fragments their chunks do not hold (object {obj}: "
        f"fragment {int(frags[bad[0]])} of a chunk of {int(nfrag[k])}); those pieces are left out",
        store=selection.store,
        level=level,
        array="object_index/manifests",
        chunk=loaded.table.chunks[k],
    )
    _report(error, selection.strict)
    return False


def _report(error: ZVFormatError, strict: bool) -> None:
    if strict:
        raise error
    warnings.warn(str(error), ZVChunkWarning, stacklevel=4)


def _object_ids_by_fragment(
    loaded: LoadedChunks,
    index: ObjectIndex,
    entries: np.ndarray,
    cidx: np.ndarray,
    keep: np.ndarray | None,
) -> np.ndarray | None:
    """:func:`_object_ids_per_row` in time linear in the rows, when the fragments are
    ranges sharing no row (what writers emit): the owner of a fragment (the object of the
    first entry naming it) spread over its rows; ``None`` otherwise."""
    gf = loaded.global_fragments(cidx, index.frags[entries])
    if gf is None or not loaded.disjoint_ranges:
        return None
    named = gf >= 0
    uniq, first = np.unique(gf[named], return_index=True)  # (stable: the first entry)
    owner_entries = entries[named][first]
    owner_rows = np.searchsorted(index.offsets, owner_entries, side="right") - 1
    ranges = loaded.fragment_ranges()
    assert ranges is not None  # (the fragments are ranges: global_fragments gave them)
    owner = np.full(len(ranges[0]), -1, dtype=np.int64)
    owner[uniq] = index.ids[owner_rows]
    return loaded.per_row(owner, -1, keep)


def _paths(
    loaded: LoadedChunks,
    index: ObjectIndex,
    object_rows: np.ndarray | None,
    checked: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ordered global rows per object (of the index rows ``object_rows``, ``None``: every
    object), as ``(rows of every path one after another, in
    :attr:`LoadedChunks.row_dtype`, length of each path, object id of each path)``; an
    object whose manifest leaves the loaded chunks is split into one path per contiguous
    run of loaded entries. ``checked``: every entry in a loaded chunk is known to name a
    fragment it holds (:func:`_check_fragment_refs`)."""
    if object_rows is None:  # every entry: no entry numbers, no gathered copies
        cidx = _entry_chunks(loaded, index)
        frags = index.frags
    else:
        entries = index.entries_of_rows(object_rows)
        cidx = _entries_in_loaded(loaded, index, entries)
        frags = index.frags[entries]
    if object_rows is None and cidx.size and cidx.min() >= 0:
        # every entry loaded (a whole level): one run per object with entries, no gathers
        rows, counts = loaded.fragment_rows(cidx, frags, loaded.row_dtype, checked)
        del cidx, frags
        first = index.offsets[:-1]
        objs = np.flatnonzero(index.offsets[1:] > first)
        run_rows = np.add.reduceat(counts, first[objs])
        keep = run_rows > 0
        return rows, run_rows[keep], index.ids[objs[keep]]
    if object_rows is None:  # the entries in loaded chunks (a box: a few of them)
        at, cidx = _loaded_entries(loaded, index, None)
    else:
        at = np.flatnonzero(cidx >= 0)
        cidx = cidx[at]
    if at.size == 0:
        return np.empty(0, loaded.row_dtype), np.empty(0, np.int64), np.empty(0, np.int64)
    rows, counts = loaded.fragment_rows(cidx, frags[at], loaded.row_dtype, checked)
    del cidx, frags
    if object_rows is None:
        obj = index.entry_rows[at]  # index row of each (a gather: ~3x a binary search)
    else:
        ends = np.cumsum(index.offsets[object_rows + 1] - index.offsets[object_rows])
        obj = object_rows[np.searchsorted(ends, at, side="right")]
    # a run breaks at every new object and after every entry left out
    breaks = np.empty(at.size, dtype=bool)
    breaks[0] = True
    np.not_equal(obj[1:], obj[:-1], out=breaks[1:])
    breaks[1:] |= at[1:] != at[:-1] + 1
    run = np.cumsum(breaks)
    run -= 1
    run_rows = np.bincount(run, weights=counts).astype(np.int64)
    run_obj = obj[breaks]
    keep = run_rows > 0  # runs without loaded rows contribute nothing to ``rows``
    return rows, run_rows[keep], index.ids[run_obj[keep]]


def _selected_rows(loaded: LoadedChunks, index: ObjectIndex, object_rows: np.ndarray) -> np.ndarray:
    entries = index.entries_of_rows(object_rows)
    cidx = _entries_in_loaded(loaded, index, entries)
    ok = cidx >= 0
    rows, _ = loaded.fragment_rows(cidx[ok], index.frags[entries][ok])
    mask = np.zeros(loaded.n_rows, dtype=bool)  # sorted and unique in O(rows), no sort
    mask[rows] = True
    return np.flatnonzero(mask)


def _link_rows(loaded: LoadedChunks, links: LinkSet) -> np.ndarray:
    """Global rows of every link endpoint, ``-1`` where not loaded or invalid."""
    return loaded.rows_at(links.chunk_index(loaded.table), links.rows)


def _skeleton_edges(
    loaded: LoadedChunks, links: LinkSet
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(child, parent) edges by the implicit-sequential-with-branches rule (FORMAT07 §6.5)."""
    n = loaded.n_rows
    parent = np.full(n, -1, dtype=np.int64)
    for k, chunk in enumerate(loaded.chunks):
        fi = chunk.fragments
        base = loaded.start[k]
        if fi.all_ranges:
            starts, counts = fi.start + base, fi.count
            inner = counts > 1
            child = expand_ranges(starts[inner] + 1, counts[inner] - 1)
            parent[child] = child - 1
        else:
            for f in range(fi.num_fragments):
                r = fi.rows(f) + base
                parent[r[1:]] = r[:-1]
    # a child in a chunk whose link records were left out may have lost the one that
    # overrides its implicit parent: no implicit edge there (none is invented)
    parent[np.repeat(links.damaged_in(loaded.table), np.diff(loaded.start))] = -1
    g = _link_rows(loaded, links)
    # a stored link overrides the implicit parent of a loaded child, even when the
    # parent lies outside the loaded chunks (the child then has no edge here)
    known = g[:, 0] >= 0
    parent[g[known, 0]] = g[known, 1]
    stored = known & (g[:, 1] >= 0)
    child = g[stored, 0]
    edges_child = np.flatnonzero(parent >= 0)
    edges = np.stack([edges_child, parent[edges_child]], axis=1)
    attrs = {}
    for name, values in links.attributes.items():
        vals = values[stored]
        full = np.full((n, *vals.shape[1:]), np.nan)
        full[child] = vals
        attrs[name] = full[edges_child]
    return edges, attrs


def assemble(
    geometry_type: str,
    level: int,
    loaded: LoadedChunks,
    specs: list[AttributeSpec],
    index: ObjectIndex | Callable[[], ObjectIndex | None] | None,
    links: LinkSet | None,
    selection: Selection,
    chunk_attribute: tuple[str, tuple[Any, ...]] | None = None,
) -> Geometry:
    """Build the :class:`Geometry` of one read from its decoded parts (``index`` may be a
    function reading it: then only when the per-vertex object ids are first asked for)."""
    # a selection keeps a few rows: positions, attributes and object ids are gathered for
    # them alone (no concatenation of every loaded row), row references renumbered after
    # (used for a selection alone, whose index is read before: not a function reading it)
    keep_rows = _kept_rows(geometry_type, loaded, cast("ObjectIndex | None", index), selection)
    attrs = _vertex_attributes(loaded, specs, keep_rows)
    if chunk_attribute is not None:
        name, values = chunk_attribute
        sizes = np.diff(loaded.start)
        bins = np.repeat(loaded.table.chunks[:, 0], sizes)
        bins = bins if keep_rows is None else bins[keep_rows]
        table = np.asarray(values, dtype=object)
        attrs[name] = table[np.clip(bins, 0, len(table) - 1)] if len(table) else bins
    if geometry_type in PATH_TYPES and callable(index):  # paths need the index now
        index = index()
    refs_ok = False
    if index is not None and not callable(index):  # read already: checked with the read
        refs_ok = _check_fragment_refs(loaded, index, selection, level)
    vid = None
    if index is not None and geometry_type not in PATH_TYPES:
        # derived on first use (a callable ``index`` is read then too)
        vid = Derived(
            partial(
                _derived_object_ids, loaded.fragments_only(), index, selection, level, keep_rows
            )
        )

    geom = Geometry(
        geometry_type=geometry_type,
        level=level,
        positions=loaded.positions if keep_rows is None else loaded.take(keep_rows),
        chunks=loaded.table.chunks,
    )

    if geometry_type in PATH_TYPES and index is not None and not callable(index):
        flat, lengths, path_ids = _paths(loaded, index, selection.object_rows, refs_ok)
        geom.paths, geom.path_object_ids = split_lengths(flat, lengths), path_ids.astype(np.int64)
        geom.edges = Derived(partial(_path_edges, flat, lengths))  # type: ignore[assignment]
        # from the paths: the result holds neither the object index nor the chunks
        vid = Derived(partial(_path_object_ids, flat, lengths, path_ids, loaded.n_rows, keep_rows))
    elif geometry_type == GeometryType.SKELETON and links is not None:
        geom.edges, geom.edge_attributes = _skeleton_edges(loaded, links)
    elif (
        geometry_type in (GeometryType.GRAPH, GeometryType.MESH)
        and links is not None
        and len(links)
    ):
        g = _link_rows(loaded, links)
        ok = np.all(g >= 0, axis=1)
        if geometry_type == GeometryType.GRAPH:
            geom.edges = g[ok]
            geom.edge_attributes = {k: v[ok] for k, v in links.attributes.items()}
        else:
            geom.faces = g[ok]
    if geometry_type == GeometryType.MESH:
        draco_faces = [
            c.faces + loaded.start[k] for k, c in enumerate(loaded.chunks) if c.faces is not None
        ]
        if draco_faces:
            geom.faces = np.concatenate([geom.faces, *draco_faces])

    geom.vertex_attributes = attrs
    geom.vertex_object_ids = vid  # type: ignore[assignment]  # (a Derived: see _Derivable)
    if keep_rows is not None:
        _renumber(geom, keep_rows)
    return geom


def _path_object_ids(
    flat: np.ndarray,
    lengths: np.ndarray,
    path_ids: np.ndarray,
    n_rows: int,
    keep: np.ndarray | None,
) -> np.ndarray:
    """Object id of every loaded row (of the rows ``keep`` only, when given) from the
    paths (rows ``flat`` cut by ``lengths``, object ``path_ids``): the object of the
    first path through the row, as :func:`_object_ids_per_row` gives (the paths follow
    the selected objects' manifest entries in order), -1 where none passes."""
    owner = np.repeat(np.asarray(path_ids, np.int64), lengths)
    out = np.full(n_rows, -1, dtype=np.int64)
    seen = np.zeros(n_rows, dtype=bool)
    seen[flat] = True
    if int(np.count_nonzero(seen)) == flat.size:  # no row on two paths (what writers emit)
        out[flat] = owner
    else:
        uniq, first = np.unique(flat, return_index=True)
        out[uniq] = owner[first]
    return out if keep is None else out[keep]


def _path_edges(flat: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``(M, 2)`` rows of the consecutive vertex pairs of every path (the paths' rows
    ``flat``, one path after another, cut by ``lengths``)."""
    n = flat.size
    if n < 2:
        return np.empty((0, 2), np.int64)
    same = np.ones(n - 1, dtype=bool)
    starts = np.cumsum(lengths)[:-1]  # where a path after the first begins
    starts = starts[(starts > 0) & (starts < n)]
    same[starts - 1] = False
    edges = np.empty((int(np.count_nonzero(same)), 2), dtype=np.int64)
    edges[:, 0] = flat[:-1][same]
    edges[:, 1] = flat[1:][same]
    return edges


def assemble_pieces(
    geometry_type: str,
    level: int,
    loaded: LoadedChunks,
    specs: list[AttributeSpec],
    fraction: float = 1.0,
    box: tuple[np.ndarray, np.ndarray] | None = None,
    max_vertices: int | None = None,
) -> Geometry:
    """The path pieces of ``loaded`` without the object index: every fragment (a run of
    one path's consecutive vertices in one chunk) is one path of unknown object (id
    ``-1``). The pieces whose first vertex ranks below ``fraction``
    (:func:`.ranks.position_rank`) are kept: the same pieces whatever else was read with
    them. With ``box`` (inclusive), only pieces with a vertex inside; with ``max_vertices``,
    the lowest-ranked pieces whose vertices (inside ``box``) add up to at most that."""
    ranges = loaded.fragment_ranges()
    if ranges is not None:  # every fragment a range (what writers emit): no row expansion
        firsts, counts = ranges
        rows = None
    else:
        nfrag = np.array([c.fragments.num_fragments for c in loaded.chunks], dtype=np.int64)
        chunk_idx = np.repeat(np.arange(len(nfrag)), nfrag)
        frags = np.arange(int(nfrag.sum())) - np.repeat(np.cumsum(nfrag) - nfrag, nfrag)
        rows, counts = loaded.fragment_rows(chunk_idx, frags)
        at = np.minimum(np.cumsum(counts) - counts, max(len(rows) - 1, 0))
        firsts = rows[at] if len(rows) else np.zeros(len(counts), np.int64)
    weight = counts
    cut: list[int] = []  # the axes the box cuts (a box that cuts nothing keeps every vertex)
    if box is not None:
        lo, hi = (np.asarray(b, np.float64) for b in box)
        cut = [a for a in range(len(lo)) if np.isfinite(lo[a]) or np.isfinite(hi[a])]
    if cut:  # vertices inside the box, per piece
        inside = np.concatenate(
            [inside_box(c.positions, lo, hi, cut) for c in loaded.chunks] or [np.zeros(0, bool)]
        )
        seen = np.concatenate([[0], np.cumsum(inside if rows is None else inside[rows])])
        ends = np.cumsum(counts) if rows is not None else firsts + counts
        weight = seen[ends] - seen[ends - counts]
    # rank the pieces that count (by their first vertex; gathers take ascending rows)
    ranked = np.flatnonzero(weight > 0)
    if np.any(np.diff(firsts[ranked]) < 0):
        ranked = ranked[np.argsort(firsts[ranked], kind="stable")]
    rank = np.full(len(counts), np.inf)
    rank[ranked] = position_rank(loaded.take(firsts[ranked]))
    keep = rank < fraction
    if max_vertices is not None and weight[keep].sum() > max_vertices:
        order = np.flatnonzero(keep)[np.argsort(rank[keep], kind="stable")]
        keep = np.zeros(len(counts), bool)
        keep[order[np.cumsum(weight[order]) <= max_vertices]] = True
    if rows is None:
        kept_rows = expand_ranges(firsts[keep], counts[keep])
    else:
        kept_rows = rows[np.repeat(keep, counts)]
    lengths = counts[keep]
    order = np.argsort(kept_rows, kind="stable")  # ascending rows for the gathers
    geom = Geometry(
        geometry_type=geometry_type,
        level=level,
        positions=loaded.take(kept_rows[order]),
        chunks=loaded.table.chunks,
    )
    values = _vertex_attributes(loaded, specs, kept_rows[order])
    back = np.empty_like(order)
    back[order] = np.arange(len(order))  # the piece order of every gathered row
    geom.paths = split_lengths(back, lengths)
    geom.path_object_ids = np.full(len(lengths), -1, np.int64)
    geom.edges = _path_edges(back, lengths)
    geom.vertex_attributes = values
    return geom


def _kept_rows(
    geometry_type: str,
    loaded: LoadedChunks,
    index: ObjectIndex | None,
    selection: Selection,
) -> np.ndarray | None:
    """Sorted loaded rows a read keeps (``None`` = every loaded row).

    The one place where a selection becomes rows: the fragments of the selected objects
    (when objects or groups were asked for), intersected, for point clouds, with the
    exact box. Every combination of ``bbox`` × ``object_ids`` × ``group_ids`` goes
    through here, so the box filter cannot be skipped by one of them.
    """
    keep: np.ndarray | None = None
    if selection.object_rows is not None:
        keep = (
            np.empty(0, np.int64)
            if index is None
            else _selected_rows(loaded, index, selection.object_rows)
        )
    if geometry_type == "point_cloud" and selection.bbox is not None:
        lo, hi = selection.bbox
        if keep is None:  # chunk by chunk: the rows the box drops are never concatenated
            keep = _rows_inside(loaded, lo, hi)
        else:
            keep = keep[inside_box(loaded.take(keep), lo, hi)]
    return keep


def _rows_inside(loaded: LoadedChunks, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Global rows (ascending) of the loaded vertices inside the inclusive box, testing in
    each chunk only the sides of the box that cut its vertices' extent."""
    start = loaded.start.tolist()
    pieces = []
    for k, c in enumerate(loaded.chunks):
        inside = inside_box_within(c.positions, lo, hi, c.extent)
        if inside is True:
            pieces.append(np.arange(start[k], start[k + 1], dtype=np.int64))
        elif inside is not False:
            pieces.append(np.flatnonzero(inside) + start[k])
    return np.concatenate(pieces) if pieces else np.empty(0, np.int64)


def _renumbered(keep: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Index in ``keep`` (global rows, ascending) of every row of ``rows``; -1 if not kept."""
    rows = np.asarray(rows, dtype=np.int64)
    if keep.size == 0:
        return np.full(rows.shape, -1, dtype=np.int64)
    at = np.searchsorted(keep, rows)
    hit = keep[np.minimum(at, keep.size - 1)] == rows
    return np.where(hit, at, -1)


def _renumber(geom: Geometry, keep_rows: np.ndarray) -> None:
    """Renumber a geometry's row references (global loaded rows) to rows of ``keep_rows``,
    dropping edges and faces that leave them and paths not kept whole."""
    if geom.edges.size:
        e = _renumbered(keep_rows, geom.edges)
        ok = np.all(e >= 0, axis=1)
        geom.edges = e[ok]
        geom.edge_attributes = {k: v[ok] for k, v in geom.edge_attributes.items()}
    if geom.faces.size:
        f = _renumbered(keep_rows, geom.faces)
        geom.faces = f[np.all(f >= 0, axis=1)]
    if geom.paths:
        flat, lengths = flat_paths(geom.paths)
        flat = _renumbered(keep_rows, flat)
        # a path stays when it is non-empty and every one of its rows is kept
        dropped = np.bincount(
            np.repeat(np.arange(len(lengths)), lengths), weights=flat < 0, minlength=len(lengths)
        )
        keep = (lengths > 0) & (dropped == 0)
        geom.paths = split_lengths(flat[np.repeat(keep, lengths)], lengths[keep])
        geom.path_object_ids = geom.path_object_ids[keep]


def _vertex_attributes(
    loaded: LoadedChunks, specs: list[AttributeSpec], rows: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """Vertex attributes of every loaded row, or of ``rows`` (global, ascending) only."""
    out: dict[str, np.ndarray] = {}
    for spec in specs:
        if not loaded.chunks:
            shape = (0, spec.width) if spec.width else (0,)
            out[spec.name] = np.empty(shape, dtype=object if spec.categories else spec.dtype)
            continue
        found = [c.attributes.get(spec.name) for c in loaded.chunks]
        if any(p is None for p in found):
            # chunks whose values were lost (reported when decoded) hold NaN, or no category
            row_shape = next((p.shape[1:] for p in found if p is not None and p.size), None)
            if row_shape is None:
                continue
            absent = (-1, np.int64) if spec.categories is not None else (np.nan, np.float64)
            parts = [
                p if p is not None else np.full((c.n_rows, *row_shape), *absent)
                for p, c in zip(found, loaded.chunks, strict=True)
            ]
        else:
            parts = cast(list[np.ndarray], found)  # (no chunk lost them)
        widths = {p.shape[1:] for p in parts if p.shape[0]}
        if len(widths) > 1:
            warnings.warn(
                f"vertex attribute {spec.name!r} has inconsistent widths; left out",
                ZVChunkWarning,
                stacklevel=4,
            )
            continue
        if rows is not None:
            values = loaded.take_values(parts, rows, (0, *parts[0].shape[1:]))
        else:
            values = loaded.concatenated(parts, spec.name)
        if spec.categories is not None:
            values = _decode_categories(values, spec)
        out[spec.name] = values
    return out


def _decode_categories(codes: np.ndarray, spec: AttributeSpec) -> np.ndarray:
    assert spec.categories is not None  # (a categorical attribute's)
    cats = np.asarray(list(spec.categories) + [None], dtype=np.object_)
    codes = codes.astype(np.int64)
    invalid = (codes < 0) | (codes >= len(spec.categories))
    if spec.fill is not None:
        invalid |= codes == spec.fill
    return cats[np.where(invalid, len(spec.categories), codes)]
