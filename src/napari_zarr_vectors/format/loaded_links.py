"""The links a :meth:`~.store.Store.read` assembles with: a level's intra-level link records
touching the chunks it loaded, checked against the rows those chunks hold, every gap
reported."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

from .chunks import ChunkTable, LoadedChunks, unique_rows
from .errors import ZVChunkWarning, ZVFormatError, chunk_key
from .geometry import GRAPH_TYPES, GeometryType
from .layout import Layout, LinkSet


def links_of_loaded(
    layout: Layout,
    geometry_type: str,
    store: str,
    level: int,
    loaded: LoadedChunks,
    strict: bool,
    draco: bool = False,
    listed: Callable[[], np.ndarray] | None = None,
) -> LinkSet | None:
    """The level's links touching ``loaded`` (``None`` for a geometry without links);
    records pointing at rows the loaded chunks do not hold (a read of the whole level,
    ``listed`` giving the chunks the level lists: or at chunks it does not list) are left
    out as gaps. Every gap is reported (``strict``: the first raised). A Draco store's
    (``draco``) faces spanning chunks refer to the pre-Draco vertex order: they are not
    checked but left out, with a warning. ``store`` names the store in errors."""
    if geometry_type not in (*GRAPH_TYPES, GeometryType.MESH) or loaded.n_rows == 0:
        return None
    try:
        if 0 not in layout.link_deltas(level):
            return None
        links = layout.read_links(level, 0, loaded.table.chunks)
    except ZVFormatError as exc:
        if strict:
            raise
        warnings.warn(f"links left out: {exc}", ZVChunkWarning, stacklevel=3)
        return None
    if not draco:
        whole = None if listed is None else listed()
        links = _impossible_records(links, loaded, store, level, whole)
    report_gaps(links, strict)
    if draco:
        if len(links):
            warnings.warn(
                f"{store} level {level}: {len(links)} faces spanning Draco chunks "
                "refer to the pre-Draco vertex order and are left out (intra-chunk faces "
                "are shown)",
                ZVChunkWarning,
                stacklevel=3,
            )
        return None
    return links


def _impossible_records(
    links: LinkSet,
    loaded: LoadedChunks,
    store: str,
    level: int,
    whole: np.ndarray | None = None,
) -> LinkSet:
    """``links`` without the records that have an endpoint in a loaded chunk at a row that
    chunk does not hold (a corrupt index: read as is it would drop an edge silently or, in
    a skeleton, leave an implicit parent in place), or, when the read was of the whole level
    (``whole``: its listed chunks), in a chunk the level does not list; each chunk owning
    such records is reported as a gap."""
    if not len(links):
        return links
    at = links.chunk_index(loaded.table)
    bad_ep = (at >= 0) & (loaded.rows_at(at.copy(), links.rows) < 0)
    if whole is not None:  # the read loaded the level: an endpoint must be in a listed chunk
        bad_ep |= links.chunk_index(ChunkTable(whole)) < 0
    bad = np.flatnonzero(bad_ep.any(axis=1))
    if bad.size == 0:
        return links
    bad_chunks = links.keys[links.key_of[bad]]  # (B, W, key_ndim)
    owners = bad_chunks[:, 0]
    sizes = np.diff(loaded.start)
    for chunk in unique_rows(owners):
        hits = np.flatnonzero(np.all(owners == chunk, axis=1))
        first = bad[hits]
        m, k = first[0], int(np.flatnonzero(bad_ep[first[0]])[0])
        held = f"holds {int(sizes[at[m, k]])}" if at[m, k] >= 0 else "the level does not list"
        error = ZVFormatError(
            f"{first.size} link record(s) point at rows their chunks do not hold (row "
            f"{int(links.rows[m, k])} of chunk {chunk_key(bad_chunks[hits[0], k])}, which {held})",
            store=store,
            level=level,
            array="links/0",
            chunk=chunk,
        )
        links.lose(error, chunk)
    keep = np.ones(len(links), bool)
    keep[bad] = False
    return links.keep(keep)


def report_gaps(links: LinkSet, strict: bool) -> None:
    """Warn about every gap of ``links`` (``strict``: raise the first)."""
    for error in links.errors:
        if strict:
            raise error
        warnings.warn(f"links left out: {error}", ZVChunkWarning, stacklevel=4)
