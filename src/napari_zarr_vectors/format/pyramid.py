"""Pyramid QA: compare levels, chunk and bin grids, cross-level links (napari-free).

What a coarsening tool wrote, checked against the store itself (FORMAT07 §7, FORMAT09 §5-6):

* :func:`level_statistics` -- one row per level: vertices, objects kept, chunks, bytes, bin and
  chunk shape, coarsening method.
* :func:`dropped_objects` -- ids present at a fine level and absent at a coarser one.
* :func:`chunk_boxes`, :func:`bin_boxes` -- world boxes of the non-empty chunks of a level and
  of the bins of one chunk.
* :func:`cross_level_segments` -- the stored fine -> coarse links (``links/+1``, 0.7
  ``cross_chunk_links/+1``, 0.9 ``links/+1/<offsets>``) resolved to stored coordinates.

Boxes and positions are in **store axis order** and store units (the stored space, before
any ``crs`` placement), like
:attr:`Geometry.positions <napari_zarr_vectors.format.geometry.Geometry.positions>`. Boxes are
half-open ``[lo, hi)``: a vertex ``v`` lies in chunk ``floor(v / chunk_shape)`` (FORMAT07 §4.3).
Everything is vectorised over chunks, bins and records.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .api import GeometryStore, store_layout
from .chunks import LoadedChunks, unique_rows
from .decode.arrays import parse_dtype
from .distinct import distinct
from .errors import ZVChunkWarning, ZVError, ZVFormatError
from .loading import load_chunks
from .query import chunks_in_bbox, normalise_bbox

if TYPE_CHECKING:
    from .cache import ChunkCache
    from .store import Store

#: :func:`bin_boxes` refuses to enumerate more bins than this for one chunk (use
#: ``occupied=True``, which returns at most one bin per stored vertex).
MAX_BINS_PER_CHUNK = 100_000

__all__ = [
    "MAX_BINS_PER_CHUNK",
    "CrossLevelSegments",
    "bin_boxes",
    "chunk_boxes",
    "cross_level_deltas",
    "cross_level_segments",
    "dropped_objects",
    "level_statistics",
    "load_rows",
    "row_owners",
    "stored_level_bytes",
]


# --------------------------------------------------------------------------------------------
# statistics
# --------------------------------------------------------------------------------------------


def level_statistics(
    store: GeometryStore,
    *,
    stored_bytes: bool | None = None,
    object_counts: Mapping[int, tuple[int, int]] | None = None,
) -> list[dict[str, Any]]:
    """One dict per level, finest first. ``object_counts``: ``{level: (objects_total,
    objects_kept)}`` when the caller has them (a job whose tasks decoded the indexes):
    the object indexes are then not read here.

    Keys
    ----
    ``level``
        Level index.
    ``vertices``
        The level's ``vertex_count`` metadata (``None`` when the writer recorded none).
    ``objects_total``, ``objects_kept``
        Objects in the level's object index, and those with a non-empty manifest (coarsening
        with sparsity keeps the ids of dropped objects with empty manifests). ``0`` / ``0``
        for stores without objects.
    ``sparsity``
        ``objects_kept / objects_total`` measured from the manifests (``None`` without objects).
    ``sparsity_declared``
        The ``object_sparsity`` metadata (kept fraction: 1.0 = nothing dropped).
    ``chunks``
        Number of non-empty chunks (``len(store.chunks(level))``; one listing per level).
    ``decoded_bytes``
        ``vertices x ndim x itemsize`` of the stored vertex dtype: the memory the level's
        positions take once decoded (attributes, indices and manifests not counted). Costs
        nothing: metadata only.
    ``stored_bytes``
        Bytes on disk under the level's folder (every array, compressed, as stored), from
        file sizes (``os.stat``; no blob is read) for local stores. Remote stores: ``None``
        unless ``stored_bytes=True``, which asks fsspec's ``du`` (one recursive listing with
        sizes: cheap on S3/GCS, may be unavailable over plain HTTP -> ``None``).
        ``stored_bytes=False`` skips it everywhere.
    ``bin_shape``, ``chunk_shape``, ``bin_ratio``
        Lists in store axis order.
    ``coarsening_method``, ``parent_level``
        From the level metadata.
    """
    rows = []
    for info in store.levels:
        level = info.index
        if object_counts is not None and level in object_counts:
            total, kept = object_counts[level]
        else:
            index = store.object_index(level)
            total = 0 if index is None else index.num_objects
            kept = 0 if index is None else int(index.present.sum())
        declared_count = "vertex_count" in info.attributes
        vertices = int(info.vertex_count) if declared_count else None
        itemsize = _vertex_itemsize(store, level)
        local = _local_root(store) is not None
        want_stored = stored_bytes if stored_bytes is not None else local
        rows.append(
            {
                "level": level,
                "vertices": vertices,
                "objects_total": total,
                "objects_kept": kept,
                "sparsity": (kept / total) if total else None,
                "sparsity_declared": float(info.object_sparsity),
                "chunks": len(store.chunks(level)),
                "decoded_bytes": None if vertices is None else vertices * store.ndim * itemsize,
                "stored_bytes": stored_level_bytes(store, level) if want_stored else None,
                "bin_shape": np.asarray(info.bin_shape, float).tolist(),
                "chunk_shape": np.asarray(info.chunk_shape, float).tolist(),
                "bin_ratio": np.asarray(info.bin_ratio, float).tolist(),
                "coarsening_method": info.coarsening_method,
                "parent_level": info.parent_level,
            }
        )
    return rows


def _vertex_itemsize(store: GeometryStore, level: int) -> int:
    """Bytes per decoded vertex coordinate (Draco decodes to float32)."""
    layout = store_layout(store)
    meta = (layout.array_attributes(level, "vertices") if layout is not None else None) or {}
    if meta.get("encoding") == "draco":
        return 4
    try:
        return int(parse_dtype(str(meta.get("dtype", "float32"))).itemsize)
    except ZVError:
        return 4


def stored_level_bytes(store: GeometryStore, level: int) -> int | None:
    """Bytes stored under ``<level>/`` (file sizes; no blob is read), ``None`` when the
    storage cannot say cheaply (see :func:`level_statistics`)."""
    path = store.level(level).path
    root = _local_root(store)
    if root is not None:
        return _du_local(os.path.join(root, path))
    layout = store_layout(store)
    if layout is None:
        return None
    zstore = layout.io.store
    fs = getattr(zstore, "fs", None)
    base = getattr(zstore, "path", None)
    if fs is None or base is None:
        return None
    try:
        total = fs.du(f"{str(base).rstrip('/')}/{path}", total=True)
    except Exception:  # noqa: BLE001 - any storage that cannot list sizes: unknown
        return None
    return int(total) if isinstance(total, (int, np.integer)) else None


def _local_root(store: GeometryStore) -> str | None:
    from zarr.storage import LocalStore

    layout = store_layout(store)
    if layout is None:
        return None
    zstore = layout.io.store
    return os.fspath(zstore.root) if isinstance(zstore, LocalStore) else None


def _du_local(folder: str) -> int:
    total = 0
    stack = [folder]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
            elif entry.is_file(follow_symlinks=False):
                total += entry.stat(follow_symlinks=False).st_size
    return total


# --------------------------------------------------------------------------------------------
# objects
# --------------------------------------------------------------------------------------------


def present_objects(store: GeometryStore, level: int) -> np.ndarray:
    """Ids of the objects with a non-empty manifest at ``level`` (sorted; empty without
    objects)."""
    index = store.object_index(level)
    if index is None:
        return np.empty(0, np.int64)
    return distinct(index.ids[index.present])


def dropped_objects(store: GeometryStore, fine: int, coarse: int) -> np.ndarray:
    """Ids present at level ``fine`` and absent at level ``coarse`` (sorted int64).

    Absent = not in the coarse object index, or with an empty manifest there (what sparsity
    does: FORMAT07 §7.1 step 5). Stores without objects drop nothing.
    """
    return np.setdiff1d(present_objects(store, fine), present_objects(store, coarse))


# --------------------------------------------------------------------------------------------
# grids
# --------------------------------------------------------------------------------------------


def chunk_boxes(store: GeometryStore, level: int) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)``, each ``(K, ndim)``: world boxes of the non-empty chunks of ``level``, in
    level order (``lo = chunk * chunk_shape``, ``hi = lo + chunk_shape``).

    One box per ``store.chunks(level)`` row. Chunk-by-attribute stores (a key has an
    attribute bin before the spatial part) give one box per distinct spatial chunk.
    """
    info = store.level(level)
    chunks = store.chunks(level)
    spatial = _spatial(chunks, store.ndim)
    if info.key_ndim != store.ndim and len(spatial):
        _, first = np.unique(spatial, axis=0, return_index=True)
        spatial = spatial[np.sort(first)]
    cs = np.asarray(info.chunk_shape, np.float64)
    lo = spatial.astype(np.float64) * cs
    if info.grid_origin is not None:  # the spec's dense form counts chunks from bounds_min
        lo = lo + info.grid_origin
    return lo, lo + cs


def bin_boxes(
    store: Store,
    level: int,
    chunk: Sequence[int] | np.ndarray,
    *,
    occupied: bool = False,
    cache: ChunkCache | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)``, each ``(B, ndim)``: the bins of one chunk of ``level``.

    Bins are cells of the level's bin grid (``floor(v / bin_shape)``, the grid the coarsener
    averaged over), clipped to the chunk box. ``chunk`` is a chunk key (its spatial part is
    used). ``occupied=True`` returns only the bins holding at least one stored vertex of that
    chunk (reads the chunk). Without it, at most :data:`MAX_BINS_PER_CHUNK` bins are
    enumerated (``ValueError`` beyond).
    """
    info = store.level(level)
    ndim = store.ndim
    key = np.asarray(chunk, dtype=np.int64).reshape(-1)
    spatial = key[key.size - ndim :]
    cs = np.asarray(info.chunk_shape, np.float64)
    bs = np.asarray(info.bin_shape, np.float64)
    c_lo = spatial * cs
    if info.grid_origin is not None:
        c_lo = c_lo + info.grid_origin
    c_hi = c_lo + cs
    if occupied:
        keys = _chunk_keys_of(store, level, key)
        loaded = load_rows(store, level, keys, cache)
        cells = np.unique(np.floor(loaded.positions.astype(np.float64) / bs), axis=0)
        cells = cells.reshape(-1, ndim)
    else:
        first = np.floor(c_lo / bs)
        last = np.ceil(c_hi / bs) - 1
        counts = (last - first + 1).astype(np.int64)
        total = int(np.prod(counts))
        if total > MAX_BINS_PER_CHUNK:
            raise ValueError(
                f"chunk {spatial.tolist()} of level {level} has {total:,} bins "
                f"(more than {MAX_BINS_PER_CHUNK:,}); ask for occupied bins only"
            )
        axes = [np.arange(a, a + n) for a, n in zip(first, counts, strict=True)]
        cells = np.stack([g.reshape(-1) for g in np.meshgrid(*axes, indexing="ij")], axis=1)
        cells = cells.astype(np.float64).reshape(-1, ndim)
    lo = np.maximum(cells * bs, c_lo)
    hi = np.minimum((cells + 1) * bs, c_hi)
    return lo, hi


def _chunk_keys_of(store: GeometryStore, level: int, key: np.ndarray) -> np.ndarray:
    """Every key of ``level`` with the spatial part of ``key`` (all attribute bins of a
    chunk-by-attribute store when ``key`` is spatial only)."""
    info = store.level(level)
    if key.size == info.key_ndim:
        return key.reshape(1, -1)
    chunks = store.chunks(level)
    return chunks[np.all(_spatial(chunks, store.ndim) == key[-store.ndim :], axis=1)]


def _spatial(chunks: np.ndarray, ndim: int) -> np.ndarray:
    chunks = np.asarray(chunks, dtype=np.int64)
    return chunks[:, chunks.shape[1] - ndim :]


# --------------------------------------------------------------------------------------------
# cross-level links
# --------------------------------------------------------------------------------------------


class CrossLevelSegments(NamedTuple):
    """Stored fine -> coarse links resolved to coordinates (store axis order).

    ``fine[m]`` is a stored vertex of level ``fine_level`` and ``coarse[m]`` the stored
    metavertex of level ``coarse_level`` the link names as its parent. ``fine_object_ids[m]``
    is the object owning the fine vertex (the first whose manifest names it; ``-1`` when none
    does), ``None`` for stores without objects. ``n_missing`` counts the selected records an
    endpoint of which could not be resolved (chunk absent, row out of range): they are left
    out. ``n_records`` = ``len(fine) + n_missing``.
    """

    fine: np.ndarray
    coarse: np.ndarray
    fine_object_ids: np.ndarray | None
    n_missing: int
    fine_level: int
    coarse_level: int

    @property
    def n_records(self) -> int:
        return int(self.fine.shape[0]) + int(self.n_missing)

    def __len__(self) -> int:
        return int(self.fine.shape[0])


def cross_level_deltas(store: GeometryStore, level: int) -> list[int]:
    """The non-zero link deltas stored at ``level`` (e.g. ``[-1, 1]``)."""
    store.level(level)
    layout = store_layout(store)
    if layout is None:
        return []
    return [d for d in layout.link_deltas(level) if d != 0]


def cross_level_segments(
    store: Store,
    level: int,
    delta: int = 1,
    object_ids: Sequence[int] | np.ndarray | None = None,
    bbox: Sequence[Sequence[float]] | None = None,
    *,
    cache: ChunkCache | None = None,
) -> CrossLevelSegments:
    """Resolve the cross-level links of ``level`` toward ``level + delta`` to coordinates.

    ``delta > 0`` reads the ``+delta`` family stored at the fine level ``level``;
    ``delta < 0`` reads the mirrored ``-delta`` family stored at the coarse level ``level``
    (then the fine level is ``level + delta``). Either way ``fine`` holds the finer endpoint.

    ``object_ids`` keeps the links whose fine vertex belongs to one of those objects at the
    fine level (their manifests); ``bbox`` (``(lo, hi)`` inclusive, store coordinates) keeps the
    links whose fine vertex lies inside. Only the chunks these selections need are read
    (with ``delta > 0``). A store with no such family gives empty arrays.
    """
    if delta == 0:
        raise ValueError("cross-level links need delta != 0")
    ndim = store.ndim
    fine_level, coarse_level = sorted((level, level + delta))
    fe, ce = (0, 1) if delta > 0 else (1, 0)
    store.level(level)
    if level + delta not in {lv.index for lv in store.levels}:
        if delta not in cross_level_deltas(store, level):
            store.level(level + delta)  # a level the caller asked for: KeyError
        raise ZVFormatError(
            f"links toward level {level + delta}, which the store does not hold",
            store=store.path,
            level=level,
        )

    def empty(missing: int = 0) -> CrossLevelSegments:
        z = np.empty((0, ndim), np.float64)
        ids = None if store.object_index(fine_level) is None else np.empty(0, np.int64)
        return CrossLevelSegments(z, z.copy(), ids, missing, fine_level, coarse_level)

    if delta not in cross_level_deltas(store, level):
        return empty()
    if _is_draco(store, fine_level) or _is_draco(store, coarse_level):
        warnings.warn(
            f"{store.path}: cross-level links of Draco levels refer to the pre-Draco vertex "
            "order, which the store does not record; not shown",
            ZVChunkWarning,
            stacklevel=2,
        )
        return empty()

    fine_info = store.level(fine_level)
    box = None if bbox is None else normalise_bbox(bbox, ndim, store.path)
    index = store.object_index(fine_level)
    obj_entries = None
    restrict = None  # fine-level chunks that may hold selected vertices
    if object_ids is not None:
        if index is None:
            return empty()
        rows = index.rows_of_ids(np.asarray(object_ids, dtype=np.int64).ravel())
        obj_entries = index.entries_of_rows(rows)
        restrict = unique_rows(index.chunks[obj_entries].reshape(-1, fine_info.key_ndim))
    if box is not None:
        listed = store.chunks(fine_level) if restrict is None else restrict
        restrict = chunks_in_bbox(listed, fine_info, *box)
    if restrict is not None and len(restrict) == 0:
        return empty()

    # always name the owning chunks: ``store.links(level, d)`` without ``chunks`` lists only
    # the ``links/<d>`` cells, and a 0.7 store keeps the records whose fine and coarse chunk
    # tuples differ in ``cross_chunk_links/<d>`` owned by chunks that may have no such cell
    owners = restrict if (delta > 0 and restrict is not None) else store.chunks(level)
    links = store.links(level, delta, chunks=owners)
    if len(links) == 0 or links.width < 2:
        return empty()
    # each record's fine and coarse chunk, as the link set holds them: a combination of
    # chunks per link cell (``f_keys``, ``c_keys``) and each record's (``key_of``)
    f_keys, c_keys, key_of = links.keys[:, fe], links.keys[:, ce], links.key_of
    f_rows, c_rows = links.rows[:, fe], links.rows[:, ce]

    # records whose fine chunk cannot hold a selected vertex are not selected (not missing)
    if restrict is not None:
        from .chunks import ChunkTable

        sel = (ChunkTable(restrict).index_of(f_keys) >= 0)[key_of]
        key_of, f_rows, c_rows = key_of[sel], f_rows[sel], c_rows[sel]
    if len(f_rows) == 0:
        return empty()

    fine = load_rows(store, fine_level, _keys_used(f_keys, key_of), cache)
    g_fine = fine.rows_at(fine.table.index_of(f_keys)[key_of], f_rows)
    ok_fine = g_fine >= 0
    keep = np.ones(len(g_fine), dtype=bool)
    if obj_entries is not None and index is not None:
        cidx = fine.table.index_of(index.chunks[obj_entries])
        ok = cidx >= 0
        selected, _ = fine.fragment_rows(cidx[ok], index.frags[obj_entries][ok])
        keep &= np.isin(g_fine, selected)
    if box is not None and fine.n_rows:
        p = fine.positions[np.where(ok_fine, g_fine, 0)].astype(np.float64)
        keep &= np.all((p >= box[0]) & (p <= box[1]), axis=1)
    # a record with an unresolvable fine endpoint cannot be tested against the selection:
    # it counts as missing (its fine chunk was selected)
    missing = int(np.count_nonzero(~ok_fine))
    keep &= ok_fine

    coarse = load_rows(store, coarse_level, _keys_used(c_keys, key_of[keep]), cache)
    g_coarse = coarse.rows_at(coarse.table.index_of(c_keys)[key_of[keep]], c_rows[keep])
    ok_coarse = g_coarse >= 0
    missing += int(np.count_nonzero(~ok_coarse))
    g_f = g_fine[keep][ok_coarse]
    g_c = g_coarse[ok_coarse]

    ids = None
    if index is not None:
        ids = row_owners(fine, index)[g_f]
    if missing:
        warnings.warn(
            f"{store.path}: {missing} cross-level links of level {level} toward level "
            f"{level + delta} point at vertices the levels do not hold; they are left out",
            ZVChunkWarning,
            stacklevel=2,
        )
    return CrossLevelSegments(
        fine.positions[g_f].astype(np.float64),
        coarse.positions[g_c].astype(np.float64),
        ids,
        missing,
        fine_level,
        coarse_level,
    )


def _keys_used(keys: np.ndarray, key_of: np.ndarray) -> np.ndarray:
    """The distinct chunks among ``keys[key_of]`` (``(K, key_ndim)`` keys, ``(M,)``
    records), marked per key instead of sorting the records."""
    used = np.zeros(len(keys), bool)
    used[key_of] = True
    return unique_rows(keys[used])


def row_owners(loaded: LoadedChunks, index: Any) -> np.ndarray:
    """Object id of every loaded row: the first object whose manifest names it, else -1."""
    from .assembly import _object_ids_per_row

    return _object_ids_per_row(loaded, index)


def load_rows(
    store: Store,
    level: int,
    chunks: np.ndarray,
    cache: ChunkCache | None = None,
    *,
    strict: bool = False,
) -> LoadedChunks:
    """Stored vertex rows of ``chunks`` of ``level``'s own data, in the given order (no
    attributes), addressed by chunk and row (:meth:`.chunks.LoadedChunks.global_rows`);
    ``strict`` raises on a chunk that cannot be decoded instead of leaving it out."""
    info = store.level(level)
    chunks = np.asarray(chunks, dtype=np.int64).reshape(-1, info.key_ndim)
    decoded = load_chunks(store.layout, level, chunks, [], strict=strict, cache=cache)
    return LoadedChunks.build(decoded, store.ndim, info.key_ndim)


def _is_draco(store: Store, level: int) -> bool:
    meta = store.layout.array_attributes(level, "vertices") or {}
    return meta.get("encoding") == "draco"
