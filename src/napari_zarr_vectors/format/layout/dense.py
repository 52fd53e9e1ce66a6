"""The spec's own physical form: dense grid-shaped Zarr arrays (seed 002, "Chunk arrays").

Seed 002 describes every ZV array of a level as **one** Zarr array whose logical shape is the
chunk grid followed by the payload, padded with the array's fill value, with one Zarr chunk
per spatial chunk::

    vertices/                 (*grid, N_max, D)   float, fill 0       chunk (1, …, 1, N_max, D)
    vertex_fragments/         (*grid, B_max)      uint8, fill 0       one ZVFG blob per cell
    attributes/<name>/        (*grid, N_max[, K]) any numeric dtype   (vertex_attributes/ too)
    links/<delta>/            (*grid, E_max, W)   int, fill -1        chunk-local rows
    cross_chunk_links/<d>/data  flat int64 records (chunk coords + row per endpoint), uint8
    object_index/data, offsets  back-to-back manifests (uint8) + int64 byte offsets
    object_attributes/<name>/ (n_objects[, K])
    groupings/                (n_groups, max_group_size) int64, fill -1
    group_attributes/<name>/  (n_groups[, K])  (not in the seed; read when present)

Neither known writer produces it (FORMAT07 §9 item 4), but a store written from the spec text
is a valid ZV store. Conventions this reader applies (documented in ``docs/format-core.md``):

* **Grid origin.** Cell ``i`` holds the vertices with
  ``floor((p - bounds_min) / chunk_shape) == i`` (seed 000 §6.2): its chunk key is ``i`` and
  the level's :attr:`LevelInfo.grid_origin` is ``bounds_min``, which bbox reads subtract. A
  vertices array that declares ``chunk_grid_origin`` (as 0.9 does) uses the writers' absolute
  grid instead: cell ``i`` is chunk key ``i + origin`` and chunk ``k`` spans
  ``[k * chunk_shape, (k + 1) * chunk_shape)``.
* **Rows per cell.** The cell's fragment index (``vertex_fragments``) gives the number of used
  rows (the largest row it covers); without one, trailing rows equal to the fill value are
  padding. The padded ZVFG blob is cut at the length its header implies.
* **Links.** A link row with any endpoint equal to the fill value (``-1``) is padding.

Reads go through zarr's own array API (``AsyncArray.getitem`` of one cell), so every codec
zarr knows works; the declared ``N_max`` is bounded against the decoded chunk, never trusted for
an allocation on its own (zarr allocates one chunk, the size the array declares).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..decode.fragments import decode_fragment_index, fragment_index_length
from ..decode.links import decode_cross_chunk_records
from ..decode.manifests import split_offset_manifests
from ..errors import ZVFormatError
from ..metadata import LevelInfo
from ..validate import int_field
from .base import (
    GroupTable,
    Layout,
    LinkSet,
    ObjectAttribute,
    ObjectTable,
)
from .dense_arrays import VERTEX_ATTRIBUTE_DIRS, DenseArrays
from .keys import delta_name, sort_chunks
from .v07_links import touches

#: Largest number of grid cells a level may declare (a grid this big cannot be scanned).
MAX_CELLS = 1 << 24

_ATTRIBUTE_DIRS = {
    "object": ("object_attributes",),
    "group": ("group_attributes",),
    "link": (),
    "fragment": (),
}


def is_dense_vertices(doc: dict[str, Any] | None, ndim: int) -> bool:
    """Whether a level's ``vertices/zarr.json`` is a seed-002 dense grid array: a numeric
    Zarr array of rank ``grid + 2`` whose last axis is the vertex width."""
    if not isinstance(doc, dict) or doc.get("node_type") != "array":
        return False
    shape = doc.get("shape")
    dtype = doc.get("data_type")
    return (
        isinstance(shape, list)
        and len(shape) >= 3
        and isinstance(dtype, str)
        and dtype not in ("variable_length_bytes", "bytes", "uint8")
        and shape[-1] == ndim
    )


class DenseLayout(Layout):
    """Reads stores laid out as seed 002 describes (dense grid-shaped arrays)."""

    generation = "dense"

    def __init__(self, io: Any, root: Any, levels: list[LevelInfo]) -> None:
        """``levels`` is refined in place: a level whose ``vertices`` grid declares no
        ``chunk_grid_origin`` counts its cells from ``bounds_min`` (seed 000 §6.2), which
        its :attr:`LevelInfo.grid_origin` records for bbox reads."""
        super().__init__(io, root, levels)
        #: the level's arrays, grid-shaped and plain
        self.arrays = DenseArrays(self)
        self._listings: dict[tuple[int, str], np.ndarray] = {}
        for i, lv in enumerate(levels):
            attrs = self.attrs(f"{lv.path}/vertices") or {}
            if attrs.get("chunk_grid_origin") is None:
                levels[i] = replace(lv, grid_origin=np.asarray(root.bounds[0], np.float64))
        self.levels = {lv.index: lv for lv in levels}

    # -- grid arrays -------------------------------------------------------------------
    def list_chunks(self, level: int, array: str = "vertices") -> np.ndarray:
        key = (level, array)
        with self._lock:
            if key in self._listings:
                return self._listings[key]
        knd = self.key_ndim(level)
        arr = self.arrays.open(level, array)
        if arr is None:
            chunks = np.empty((0, knd), np.int64)
        else:
            grid = [int(n) for n in arr.shape[:knd]]
            count = int(np.prod(grid, dtype=object))
            if count > MAX_CELLS:
                raise self.error(f"a chunk grid of {count} cells", level, array)
            origin = self.arrays.grid_origin(level, array, arr)
            mesh = np.meshgrid(*(np.arange(n, dtype=np.int64) for n in grid), indexing="ij")
            cand = np.stack([m.reshape(-1) for m in mesh], axis=1).reshape(-1, knd) + origin
            stored = self.arrays.stored_cells(level, array, arr, knd)
            if stored is not None:  # a stored chunk that is all padding reads as empty later
                inside = np.all((stored >= 0) & (stored < np.asarray(grid)), axis=1)
                keep = np.isin(_rowkeys(cand - origin, grid), _rowkeys(stored[inside], grid))
            else:  # no listing: read every cell of the grid once
                values = self.read_cells(level, [array], cand)[array]
                keep = np.array([v is not None for v in values], dtype=bool)
            chunks = sort_chunks(cand[keep]) if len(cand) else cand
            if array == "vertices":
                self._check_within_bounds(level, chunks)
        with self._lock:
            self._listings[key] = chunks
        return chunks

    def _check_within_bounds(self, level: int, chunks: np.ndarray) -> None:
        """Every stored vertex cell must meet the store's bounds (which hold every vertex of
        every level): a cell wholly outside them means the root's ``chunk_shape`` or
        ``bounds`` disagree with the level's grid, and a bbox read would miss it."""
        lv = self.levels[level]
        lo, hi = (np.asarray(b, np.float64) for b in self.root.bounds)
        size = np.asarray(lv.chunk_shape, np.float64)
        if not len(chunks) or chunks.shape[1] != size.size or lo.size != size.size:
            return
        origin = np.zeros(size.size) if lv.grid_origin is None else lv.grid_origin
        start = origin + chunks * size
        outside = np.any(start > hi, axis=1) | np.any(start + size < lo, axis=1)
        if outside.any():
            first = chunks[int(np.argmax(outside))]
            raise self.error(
                f"{int(outside.sum())} stored cells lie outside the store's bounds "
                f"{lo.tolist()} .. {hi.tolist()} with chunk_shape {size.tolist()}",
                level,
                "vertices",
                first,
            )

    def knows_chunks(self, level: int) -> bool:
        return True

    def array_attributes(self, level: int, array: str) -> dict[str, Any] | None:
        arr = self.arrays.open(level, array)
        if arr is None:
            return None
        attrs = dict(self.attrs(f"{level}/{self.arrays.physical(level, array)}") or {})
        knd = self.key_ndim(level)
        attrs["dtype"] = str(arr.dtype)
        attrs.setdefault("encoding", "raw")
        if array.startswith("vertex_attributes/") and arr.ndim == knd + 2:
            attrs["row_shape"] = [int(arr.shape[-1])]
        elif array.startswith("vertex_attributes/"):
            attrs.pop("row_shape", None)
        return attrs

    def read_cells(
        self, level: int, arrays: Sequence[str], chunks: np.ndarray
    ) -> dict[str, list[bytes | ZVFormatError | None]]:
        chunks = np.asarray(chunks, dtype=np.int64).reshape(-1, self.key_ndim(level))
        need = list(dict.fromkeys(["vertices", "vertex_fragments", *arrays]))
        raw: dict[str, list[np.ndarray | ZVFormatError | None]] = {}
        for a in need:
            try:
                raw[a] = self.arrays.read(level, a, chunks)
            except ZVFormatError as exc:  # an attribute's metadata costs that attribute
                if a in ("vertices", "vertex_fragments"):
                    raise
                raw[a] = [exc] * len(chunks)
        counts = [self._row_count(level, raw, i) for i in range(len(chunks))]
        out: dict[str, list[bytes | ZVFormatError | None]] = {}
        for a in arrays:
            cells: list[bytes | ZVFormatError | None] = []
            for i, cell in enumerate(raw[a]):
                n = counts[i]
                if isinstance(n, ZVFormatError):
                    cells.append(n.located(store=self.io.name, level=level, chunk=chunks[i]))
                elif isinstance(cell, ZVFormatError) or cell is None or n is None:
                    cells.append(cell if isinstance(cell, ZVFormatError) else None)
                elif a == "vertex_fragments":
                    cells.append(_fragment_blob(cell))
                else:
                    rows = np.ascontiguousarray(cell[:n])
                    cells.append(rows.astype(rows.dtype.newbyteorder("<")).tobytes())
            out[a] = cells
        return out

    def _row_count(
        self, level: int, raw: dict[str, list[np.ndarray | ZVFormatError | None]], i: int
    ) -> int | ZVFormatError | None:
        """Used rows of cell ``i`` (``None`` = empty cell)."""
        verts = raw["vertices"][i]
        if isinstance(verts, ZVFormatError):
            return verts
        if verts is None:
            return None
        if verts.ndim != 2:
            return self.error(f"vertex cell of shape {list(verts.shape)}", level, "vertices")
        frags = raw["vertex_fragments"][i]
        if isinstance(frags, ZVFormatError):
            return frags
        if frags is not None:
            blob = _fragment_blob(frags)
            if isinstance(blob, ZVFormatError):
                return blob.located(array="vertex_fragments")
            if blob is not None:
                try:
                    fi = decode_fragment_index(blob, verts.shape[0])
                except ZVFormatError as exc:
                    return exc.located(array="vertex_fragments")
                ends = [0]
                if fi.count.size:
                    ends.append(int(np.max(np.where(fi.start >= 0, fi.start + fi.count, 0))))
                if fi.explicit_rows.size:
                    ends.append(int(fi.explicit_rows.max()) + 1)
                return max(ends) or None
        vertices = self.arrays.open(level, "vertices")
        assert vertices is not None  # (its cell was read)
        fill = vertices.metadata.fill_value
        pad = np.all(_is_fill(verts, fill), axis=1)
        used = np.flatnonzero(~pad)
        if used.size and frags is not None:  # the index of a chunk with vertices is gone
            return self.error(
                f"the chunk holds {int(used[-1]) + 1} vertex rows and no fragment index",
                level,
                "vertex_fragments",
            )
        return int(used[-1]) + 1 if used.size else None

    def list_attributes(self, level: int, kind: str) -> list[str]:
        folders = VERTEX_ATTRIBUTE_DIRS if kind == "vertex" else _ATTRIBUTE_DIRS[kind]
        names: list[str] = []
        for folder in folders:
            listed = self.io.list_dir_known(f"{level}/{folder}", all_nodes=True) or []
            names += [n for n in listed if n != "zarr.json" and n not in names]
        out = []
        for name in sorted(names):
            folder = _folder(kind, name, self, level)
            if self.doc(f"{level}/{folder}"):
                out.append(name)
            else:
                self.warn_missing(level, folder)
        return out

    # -- links -------------------------------------------------------------------------
    def link_deltas(self, level: int) -> list[int]:
        deltas = set()
        for folder in ("links", "cross_chunk_links"):
            for name in self.io.list_dir_known(f"{level}/{folder}", all_nodes=True) or ():
                try:
                    deltas.add(int(name))
                except ValueError:
                    continue
        return sorted(deltas)

    def link_width(self, level: int, delta: int = 0) -> int | None:
        arr = self.arrays.open(level, f"links/{delta_name(delta)}")
        if arr is not None:
            if arr.ndim != self.key_ndim(level) + 2:
                raise self.error(
                    f"links array of rank {arr.ndim}", level, f"links/{delta_name(delta)}"
                )
            return int(arr.shape[-1])
        prefix = f"{level}/cross_chunk_links/{delta_name(delta)}"
        attrs = self.attrs(prefix)
        if attrs is None:
            return None
        return int_field(attrs, "link_width", self.src(prefix, level), 2, 1, 64)

    def read_links(self, level: int, delta: int = 0, chunks: np.ndarray | None = None) -> LinkSet:
        knd = self.key_ndim(level)
        width = self.link_width(level, delta)
        if width is None:
            return LinkSet.empty(2, knd)
        d = delta_name(delta)
        array = f"links/{d}"
        wanted = self.list_chunks(level) if chunks is None else chunks
        wanted = np.asarray(wanted, np.int64).reshape(-1, knd)
        parts: list[tuple[np.ndarray, np.ndarray]] = []
        parts_r: list[np.ndarray] = []
        gaps: list[tuple[ZVFormatError, np.ndarray | None]] = []  # each costs its own cell
        arr = self.arrays.open(level, array)
        if arr is not None:
            fill = arr.metadata.fill_value
            for chunk, cell in zip(wanted, self.arrays.read(level, array, wanted), strict=True):
                if isinstance(cell, ZVFormatError):
                    gaps.append((cell.located(chunk=chunk), chunk))
                    continue
                if cell is None:
                    continue
                rows = cell.reshape(-1, width)
                # padding rows are all fill; a row with one fill endpoint is a corrupt
                # record, kept for the reader's row check to report
                rows = rows[~np.all(_is_fill(rows, fill), axis=1)].astype(np.int64)
                if delta != 0 and len(rows):
                    raise self.error(
                        "cross-level links need chunk coordinates; store them in cross_chunk_links",
                        level,
                        array,
                    )
                parts_r.append(rows)
                parts.append(LinkSet.cell(chunk, rows))
        try:
            cross = self._cross_chunk(level, delta, width, chunks)
        except ZVFormatError as exc:  # one blob for the level: its records may own any chunk
            gaps.append((exc.located(store=self.io.name, level=level), None))
            cross = None
        if cross is not None:
            parts.append((cross[0], np.ones(len(cross[0]), np.int64)))
            parts_r.append(cross[1])
        return LinkSet.of(parts, parts_r, {}, width, knd, gaps)

    def _cross_chunk(
        self, level: int, delta: int, width: int, chunks: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray] | None:
        d = delta_name(delta)
        prefix = f"{level}/cross_chunk_links/{d}"
        if self.attrs(prefix) is None and self.doc(f"{prefix}/data") is None:
            return None
        (blob,) = self.arrays.whole(level, [f"cross_chunk_links/{d}/data"])
        if blob is None:
            return None
        knd = int_field(self.attrs(prefix) or {}, "sid_ndim", self.src(prefix, level), None, 1, 16)
        try:
            cc, cr = decode_cross_chunk_records(
                np.ascontiguousarray(blob).tobytes(), width, knd or self.key_ndim(level), delta
            )
        except ZVFormatError as exc:
            raise exc.located(
                store=self.io.name, level=level, array=f"cross_chunk_links/{d}"
            ) from None
        if chunks is None:
            return cc, cr
        keep = touches(cc, np.asarray(chunks, np.int64), delta)
        return cc[keep], cr[keep]

    # -- objects and groups -------------------------------------------------------------
    def read_object_table(self, level: int) -> ObjectTable | None:
        where = f"{level}/object_index"
        if self.doc(where) is None and self.doc(f"{where}/data") is None:
            return None
        data, offsets = self.arrays.whole(level, ["object_index/data", "object_index/offsets"])
        if data is None or offsets is None:
            raise self.error("object_index needs data and offsets arrays", level, "object_index")
        if data.dtype != np.uint8 or data.ndim != 1 or offsets.ndim != 1:
            raise self.error(
                f"object_index data {data.dtype} {list(data.shape)} / offsets "
                f"{list(offsets.shape)} are not 1-D bytes and offsets",
                level,
                "object_index",
            )
        attrs = self.attrs(where) or {}
        n = int_field(attrs, "num_objects", self.src(where, level), offsets.size, 0, offsets.size)
        try:
            manifests = split_offset_manifests(data.tobytes(), offsets[:n].astype(np.int64))
        except ZVFormatError as exc:
            raise exc.located(store=self.io.name, level=level, array="object_index") from None
        return ObjectTable(np.arange(n, dtype=np.int64), manifests)

    def read_object_attributes(self, level: int) -> dict[str, ObjectAttribute]:
        names = self.list_attributes(level, "object")
        n_objects = self._declared_objects(level)
        if n_objects is not None:  # rows no object owns are not read (an inflated shape)
            names = [n for n in names if self._rows_fit(level, n, n_objects)]
        values = self.arrays.whole(level, [f"object_attributes/{n}" for n in names])
        out = {}
        for name, vals in zip(names, values, strict=True):
            if vals is None:
                continue
            if vals.ndim == 0:
                raise self.error("a scalar object attribute", level, f"object_attributes/{name}")
            out[name] = ObjectAttribute(
                vals, None, dict(self.array_attributes(level, f"object_attributes/{name}") or {})
            )
        return out

    def _declared_objects(self, level: int) -> int | None:
        """How many objects the level's object index declares (from metadata alone)."""
        where = f"{level}/object_index"
        offsets = self.arrays.open(level, "object_index/offsets")
        if offsets is None or offsets.ndim != 1:
            return None
        attrs = self.attrs(where) or {}
        return int_field(attrs, "num_objects", self.src(where, level), offsets.shape[0], 0)

    def _rows_fit(self, level: int, name: str, n_objects: int) -> bool:
        arr = self.arrays.open(level, f"object_attributes/{name}")
        if arr is None or arr.ndim == 0 or arr.shape[0] == n_objects:
            return True
        self.arrays.check_whole(level, f"object_attributes/{name}", arr)
        self.warn_misaligned(level, name, arr.shape[0], n_objects)
        return False

    def read_groups(self, level: int) -> GroupTable | None:
        (table,) = self.arrays.whole(level, ["groupings"])
        if table is None:
            return None
        if table.ndim != 2 or table.dtype.kind not in "iu":
            raise self.error(f"groupings of {table.dtype} {list(table.shape)}", level, "groupings")
        groupings = self.arrays.open(level, "groupings")
        assert groupings is not None  # (it was read)
        fill = groupings.metadata.fill_value
        members = {}
        for g, row in enumerate(table.astype(np.int64)):
            members[g] = row[~_is_fill(row, fill) & (row >= 0)]
        return GroupTable(members)

    def read_group_attributes(self, level: int) -> dict[str, np.ndarray]:
        names = self.list_attributes(level, "group")
        values = self.arrays.whole(level, [f"group_attributes/{n}" for n in names])
        return {n: v for n, v in zip(names, values, strict=True) if v is not None}


def _folder(kind: str, name: str, layout: DenseLayout, level: int) -> str:
    if kind == "vertex":
        return layout.arrays.physical(level, f"vertex_attributes/{name}")
    return f"{_ATTRIBUTE_DIRS[kind][0]}/{name}"


def _rowkeys(cells: np.ndarray, grid: list[int]) -> np.ndarray:
    """Flat C-order index of grid cells (for set membership)."""
    if len(cells) == 0:
        return np.empty(0, np.int64)
    keys: np.ndarray = np.ravel_multi_index(tuple(cells.T), grid)
    return keys


def _is_fill(values: np.ndarray, fill: Any) -> np.ndarray:
    """Elementwise ``values == fill`` (NaN-aware)."""
    f = np.asarray(fill if fill is not None else 0)
    if values.dtype.kind == "f" and f.dtype.kind == "f" and np.isnan(f):
        nan: np.ndarray = np.isnan(values)
        return nan
    is_fill: np.ndarray = (
        values == f.astype(values.dtype) if f.dtype.kind in "biuf" else np.zeros_like(values, bool)
    )
    return is_fill


def _fragment_blob(cell: np.ndarray) -> bytes | ZVFormatError | None:
    """A cell of the padded ``vertex_fragments`` byte grid, cut at the length its ZVFG header
    implies (``None`` for an all-fill cell)."""
    raw = np.ascontiguousarray(cell, dtype=np.uint8).tobytes()
    if not raw.strip(b"\x00"):
        return None
    try:
        return raw[: fragment_index_length(raw)]
    except ZVFormatError as exc:
        return exc


__all__ = ["DenseLayout", "is_dense_vertices"]
