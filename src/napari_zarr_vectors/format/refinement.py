"""Additive pyramid levels (``refinement: "add"``, FORMAT-NEXT §6).

A level whose ``zarr_vectors_level.refinement`` is ``"add"`` stores only what the next
coarser level lacks: its complete content is its own data plus the complete content of
level ``L + 1``. ``chain(L) = [L] + chain(L + 1)`` while level ``L`` adds. A read of the
level concatenates the own reads of its chain, finest first (:func:`concat_geometries`);
chunk lists move between the chain's grids through the cells that overlap
(:func:`map_chunks`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .chunks import unique_rows
from .errors import ZVFormatError
from .geometry import Geometry
from .layout.keys import sort_chunks
from .metadata import LevelInfo, RootMetadata

#: ``refinement`` values a level may declare (absent = ``"replace"``)
REFINEMENTS = ("replace", "add")


def refinement_chains(
    root: RootMetadata, levels: Sequence[LevelInfo], store: str
) -> dict[int, tuple[int, ...]]:
    """``{level: chain}`` of every level (a one-level chain for a level that replaces).

    As upstream, ``refinement`` counts only when the root lists ``additive_levels`` among
    its required or format capabilities. Raises :class:`ZVFormatError` for an unknown
    value, and for an ``"add"`` level with no next coarser level."""
    additive = "additive_levels" in (*root.required_capabilities, *root.format_capabilities)
    by_index = {lv.index: lv for lv in levels}
    chains: dict[int, tuple[int, ...]] = {}
    for lv in sorted(levels, key=lambda x: -x.index):  # coarsest first
        mode = lv.refinement
        if mode not in REFINEMENTS:
            raise ZVFormatError(
                f"{lv.path}/zarr.json: field 'refinement' is {mode!r}, expected one of "
                f"{list(REFINEMENTS)}",
                store=store,
                level=lv.index,
            )
        if not additive or mode != "add":
            chains[lv.index] = (lv.index,)
            continue
        if lv.index + 1 not in by_index:
            raise ZVFormatError(
                f"{lv.path}/zarr.json: level {lv.index} adds to level {lv.index + 1}, which "
                "the store does not have (the coarsest level must not be additive)",
                store=store,
                level=lv.index,
            )
        chains[lv.index] = (lv.index, *chains[lv.index + 1])
    return chains


def map_chunks(chunks: np.ndarray, source: LevelInfo, target: LevelInfo) -> np.ndarray:
    """The chunks of ``target`` that overlap ``chunks`` of ``source`` (spatial keys), in
    level order: each chunk's box ``origin + [k, k + 1) * chunk`` floor/ceil'd onto the
    other grid, so a coarser grid gets the chunks holding it and a finer one every chunk
    inside it. Chunk keys with an attribute axis are returned as they are."""
    chunks = np.asarray(chunks, np.int64).reshape(-1, source.key_ndim)
    if len(chunks) == 0 or source.key_ndim != source.chunk_shape.size:
        return chunks
    lo_w = source.chunk_origin + chunks * source.chunk_shape
    hi_w = lo_w + source.chunk_shape
    rel_lo = (lo_w - target.chunk_origin) / target.chunk_shape
    rel_hi = (hi_w - target.chunk_origin) / target.chunk_shape
    # a hair inside the box: a face on a grid line belongs to one cell only
    eps = 1e-9
    lo = np.floor(rel_lo + eps).astype(np.int64)
    hi = np.ceil(rel_hi - eps).astype(np.int64) - 1
    hi = np.maximum(hi, lo)
    span = int(np.max(hi - lo)) + 1 if len(lo) else 1
    offsets = np.stack(
        np.meshgrid(*[np.arange(span)] * lo.shape[1], indexing="ij"), axis=-1
    ).reshape(-1, lo.shape[1])
    cells = lo[:, None, :] + offsets[None, :, :]
    keep = np.all(cells <= hi[:, None, :], axis=2)
    return sort_chunks(unique_rows(cells[keep]))


def _common(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The attributes every part has, concatenated (same channel width only)."""
    if not parts:
        return {}
    out: dict[str, np.ndarray] = {}
    for name in parts[0]:
        values = [p.get(name) for p in parts]
        present = [v for v in values if v is not None]
        if len(present) != len(values) or len({v.shape[1:] for v in present}) != 1:
            continue
        out[name] = np.concatenate(present)
    return out


def concat_geometries(parts: Sequence[Geometry], level: int) -> Geometry:
    """One :class:`Geometry` of ``level`` from the own reads of its chain, finest first:
    positions concatenated, edges, faces and paths offset by the vertices before them,
    vertex (edge) attributes kept where every part that has vertices (edges) has them,
    ``chunks`` those of the first part (the level's own grid)."""
    first = parts[0]
    if len(parts) == 1:
        return first
    offsets = np.cumsum([0, *(p.vertex_count for p in parts)])[:-1]
    with_vertices = [p for p in parts if p.vertex_count] or [first]
    with_edges = [p for p in parts if len(p.edges)] or [first]
    ids = [p.vertex_object_ids for p in parts]
    if all(i is None for i in ids):
        vertex_ids = None
    else:
        vertex_ids = np.concatenate(
            [
                np.full(p.vertex_count, -1, np.int64) if i is None else np.asarray(i, np.int64)
                for p, i in zip(parts, ids, strict=True)
            ]
        )
    return Geometry(
        geometry_type=first.geometry_type,
        level=level,
        positions=np.concatenate([p.positions for p in parts]),
        vertex_attributes=_common([p.vertex_attributes for p in with_vertices]),
        vertex_object_ids=vertex_ids,
        edges=np.concatenate([p.edges + o for p, o in zip(parts, offsets, strict=True)]),
        edge_attributes=_common([p.edge_attributes for p in with_edges]),
        faces=np.concatenate([p.faces + o for p, o in zip(parts, offsets, strict=True)]),
        paths=[path + o for p, o in zip(parts, offsets, strict=True) for path in p.paths],
        path_object_ids=np.concatenate([p.path_object_ids for p in parts]),
        chunks=first.chunks,
    )
