"""The links of a 0.9 level: one family per level delta (``links/<d>/``), one segment per
offsets array (``links/<d>/<offsets>``), each a grid array of link records, and their
attributes (``link_attributes/<n>/<d>/<offsets>``) cell for cell beside them (FORMAT09
§3.5-§3.6)."""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from functools import lru_cache
from itertools import permutations

import numpy as np

from ...chunks import ChunkTable
from ...decode.arrays import decode_attribute, parse_attribute_dtype
from ...decode.links import decode_ragged_links
from ...discovery import candidate_deltas, candidate_segments, warn_unlisted
from ...errors import ZVFormatError
from ...validate import MAX_COORD, bool_field, int_field, int_list, str_field
from ..base import Layout, LinkSet
from ..keys import delta_name
from ..v07_links import concat_attribute, missing_values
from .grid import GridArray, GridArrays


@dataclass(frozen=True)
class _Segment:
    """One offsets array of a link family (``links/<d>/<offsets>``)."""

    name: str
    grid: GridArray
    offsets: np.ndarray  # (width - 1, key_ndim) int64
    has_perm: bool
    intra: bool  # flat rows (delta 0, all offsets zero) instead of a ragged blob


@lru_cache(maxsize=8)
def _inverse_permutations(width: int) -> np.ndarray:
    """``inv[code]`` undoes the Lehmer-coded endpoint permutation ``code`` (FORMAT09 §3.5).

    ``itertools.permutations`` enumerates in lexicographic order, which is Lehmer-code order.
    """
    perms = np.array(list(permutations(range(width))), dtype=np.int64).reshape(-1, width)
    return np.argsort(perms, axis=1)


def _lehmer_inverse(code: int, width: int) -> np.ndarray:
    """The inverse of permutation ``code`` for one code (wide records)."""
    pool = list(range(width))
    sigma = []
    for k in range(width - 1, -1, -1):
        digit, code = divmod(code, math.factorial(k))
        sigma.append(pool.pop(digit))
    return np.argsort(np.asarray(sigma, dtype=np.int64))


def _undo_permutations(codes: np.ndarray, width: int) -> np.ndarray:
    """``(M, width)`` inverse permutation of every perm code."""
    if width <= 6:
        inverse: np.ndarray = _inverse_permutations(width)[codes]
        return inverse
    uniq, which = np.unique(codes, return_inverse=True)
    table = np.stack([_lehmer_inverse(int(c), width) for c in uniq])
    return table[which.reshape(-1)]


class _CellError(Exception):
    """A link cell that does not decode: its position among the decoded cells + the error."""

    def __init__(self, index: int, error: ZVFormatError) -> None:
        super().__init__(str(error))
        self.index = index
        self.error = error


def _decode_link_cells(
    blobs: list[bytes], row_width: int, flat: bool
) -> tuple[list[np.ndarray], np.ndarray]:
    """The rows of several link cells (``(n_i, row_width)`` read-only views of ``blobs``)
    and the row count of each cell.

    Flat cells are headerless rows; the others are ragged blobs ``[K, off[K], data]``
    (FORMAT09 §3.5). The common ragged cell (``K == 1``) is decoded for all cells at once;
    any other cell goes through :func:`decode_ragged_links`, which validates it.
    """
    sizes = np.array([len(b) for b in blobs], dtype=np.int64)
    bad = np.flatnonzero(sizes % 8)
    if bad.size:
        raise _CellError(
            int(bad[0]),
            ZVFormatError(f"link cell of {sizes[bad[0]]} bytes is not whole int64 values"),
        )
    # each cell read in place: the rows are copied once, when the link set is made
    cells = [np.frombuffer(b, dtype="<i8") for b in blobs]
    n_vals = sizes // 8
    if flat:
        data_start, data_len = np.zeros_like(n_vals), n_vals
    else:
        heads = np.array([c[:2] if c.size >= 2 else (-1, -1) for c in cells], np.int64)
        simple = (heads[:, 0] == 1) & (heads[:, 1] == 0)
        data_start, data_len = np.full_like(n_vals, 2), n_vals - 2
        for i in np.flatnonzero(~simple).tolist():  # K != 1 (or broken): validated
            try:
                rows = decode_ragged_links(blobs[i], row_width)
            except ZVFormatError as exc:
                raise _CellError(i, exc) from None
            data_len[i] = rows.size
            data_start[i] = n_vals[i] - rows.size
    bad = np.flatnonzero(data_len % row_width)
    if bad.size:
        i = int(bad[0])
        raise _CellError(
            i, ZVFormatError(f"link data of {int(data_len[i])} values is not {row_width}-wide rows")
        )
    bounds = zip(cells, data_start.tolist(), data_len.tolist(), strict=True)
    return [c[a : a + n].reshape(-1, row_width) for c, a, n in bounds], data_len // row_width


def _segment_records(
    blobs: list[bytes], seg: _Segment, width: int, src: np.ndarray, anchor: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], np.ndarray, list[tuple[int, ZVFormatError]]]:
    """Endpoint chunks as ``(keys, runs)`` (a part of :meth:`LinkSet.of`) and rows, in parts
    (:func:`_endpoints`), of the records of several cells of one segment, the record count
    of each cell, and ``(cell, error)`` for every cell that does not decode (its count
    ``-1``, its records left out). Cells are decoded all at once; when one fails, one by
    one, so that it costs only itself."""
    row_width = width + (1 if seg.has_perm else 0)
    try:
        rows, counts = _decode_link_cells(blobs, row_width, seg.intra)
        return (*_endpoints(rows, seg, width, src, anchor, counts), counts, [])
    except (_CellError, ZVFormatError):
        pass
    parts: list[tuple[np.ndarray, np.ndarray]] = []
    parts_r: list[np.ndarray] = []
    failed = []
    counts = np.full(len(blobs), -1, np.int64)
    for i, blob in enumerate(blobs):
        try:
            rows, n = _decode_link_cells([blob], row_width, seg.intra)
            keys, runs, r = _endpoints(rows, seg, width, src[i : i + 1], anchor[i : i + 1], n)
        except _CellError as exc:
            failed.append((i, exc.error))
            continue
        except ZVFormatError as exc:
            failed.append((i, exc))
            continue
        parts.append((keys, runs))
        parts_r += r
        counts[i] = n[0]
    if not parts:
        return np.empty((0, width, src.shape[1]), np.int64), counts[:0], [], counts, failed
    keys = np.concatenate([k for k, _ in parts])
    return keys, np.concatenate([r for _, r in parts]), parts_r, counts, failed


def _endpoints(
    rows: list[np.ndarray],
    seg: _Segment,
    width: int,
    src: np.ndarray,
    anchor: np.ndarray,
    counts: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Endpoint chunks ``(keys, runs)`` (a part of :meth:`LinkSet.of`) and rows (``(n_i, width)``
    parts) of decoded link rows (parts), ``counts[i]`` of them from the cell at ``src[i]``:
    endpoint 0 in the source cell, the others at ``anchor + offset``, input order restored
    from the Lehmer-coded ``perm_idx`` column when the segment has one (the records of a
    cell then have chunks of their own)."""
    keys = np.empty((len(src), width, src.shape[1]), dtype=np.int64)
    keys[:, 0] = src
    if width > 1:
        keys[:, 1:] = anchor[:, None, :] + seg.offsets[None]
    if not seg.has_perm:
        return keys, counts, rows
    coded = np.concatenate(rows) if rows else np.empty((0, width + 1), np.int64)
    ep_rows = coded[:, 1:]
    if len(coded):
        codes = coded[:, 0]
        n_perm = math.factorial(width)
        if codes.min() < 0 or codes.max() >= n_perm:
            raise ZVFormatError(f"link permutation code outside 0..{n_perm - 1}")
        undo = _undo_permutations(codes, width)
        ep_rows = np.take_along_axis(ep_rows, undo, axis=1)
        keys = np.take_along_axis(np.repeat(keys, counts, axis=0), undo[:, :, None], axis=1)
        counts = np.ones(len(coded), np.int64)
    return keys, counts, [ep_rows]


def _parse_offsets(name: str) -> list[list[int]] | None:
    if name == "self":
        return []
    try:
        return [[int(c) for c in part.split(".")] for part in name.split("_")]
    except ValueError:
        return None


class LinkFamilies:
    """The link families of a 0.9 store's levels: their deltas, widths and records."""

    def __init__(self, layout: Layout, grids: GridArrays) -> None:
        self.layout = layout
        self.grids = grids
        self._lock = threading.Lock()
        self._segments: dict[tuple[int, int], list[_Segment]] = {}
        #: segments listed without an array or with offsets that differ from their name:
        #: the error and the chunks that own their records (``None``: any)
        self._lost_segments: dict[
            tuple[int, int], list[tuple[ZVFormatError, np.ndarray | None]]
        ] = {}

    def deltas(self, level: int) -> list[int]:
        """Level deltas that have link records at ``level`` (0 = intra-level)."""
        names = self.layout.io.list_dir_known(f"{level}/links", all_nodes=True)
        listed = names is not None
        if names is None:  # no listing: probe every delta the levels allow
            names = [delta_name(d) for d in candidate_deltas(level, list(self.layout.levels))]
            self.layout.prefetch_docs([f"{level}/links/{n}" for n in names])
        deltas = set()
        for name in names:
            try:
                delta = int(name)
            except ValueError:
                continue
            if self.layout.attrs(f"{level}/links/{name}") is not None:
                deltas.add(delta)
            elif listed:
                self.layout.warn_missing(level, f"links/{name}", "links")
        return sorted(deltas)

    def _family_lost(self, level: int, delta: int) -> bool:
        """Whether the level lists a folder for the links of ``delta`` that holds no group."""
        d = delta_name(delta)
        names = self.layout.io.list_dir_known(f"{level}/links", all_nodes=True)
        return bool(names and d in names and self.layout.attrs(f"{level}/links/{d}") is None)

    def width(self, level: int, delta: int = 0) -> int | None:
        d = delta_name(delta)
        attrs = self.layout.attrs(f"{level}/links/{d}")
        if attrs is None:
            return None
        if "link_width" not in attrs:
            # a family group without its width cannot hold records: one that lists
            # segments lost its attributes (or its document is another node's)
            listed = self.layout.io.list_dir_known(f"{level}/links/{d}", all_nodes=True) or ()
            if any(n != "zarr.json" for n in listed):
                raise self.layout.error(
                    "the link family lists segments but gives no link_width", level, f"links/{d}"
                )
            return None
        return int_field(
            attrs, "link_width", self.layout.src(f"{level}/links/{delta_name(delta)}"), lo=1, hi=64
        )

    def _segments_of(self, level: int, delta: int, width: int) -> list[_Segment]:
        with self._lock:
            if (level, delta) in self._segments:
                return self._segments[(level, delta)]
        d = delta_name(delta)
        knd = self.layout.key_ndim(level)
        listed = self.layout.io.list_dir_known(f"{level}/links/{d}", all_nodes=True)
        if listed is None:  # no listing: probe the offsets a record can plausibly have
            listed = candidate_segments(width, self.layout.root.ndim)
            warn_unlisted(
                self.layout.io.name,
                self.layout.io.warned,
                f"the link segments of level {level} delta {d}",
                "segments are probed within a few chunks of their source, so links spanning "
                "farther are left out",
            )
            self.layout.prefetch_docs([f"{level}/links/{d}/{n}" for n in listed])
            listed = [n for n in listed if self.layout.doc(f"{level}/links/{d}/{n}") is not None]
        names = sorted(n for n in listed if n != "zarr.json")
        attr_names = self.layout.list_attributes(level, "link")
        self.layout.prefetch_docs(
            [f"{level}/links/{d}/{n}" for n in names]
            + [f"{level}/link_attributes/{a}/{d}" for a in attr_names]
            + [f"{level}/link_attributes/{a}/{d}/{n}" for a in attr_names for n in names]
        )
        segments = []
        lost: list[tuple[ZVFormatError, np.ndarray | None]] = []
        for name in names:
            array = f"links/{d}/{name}"
            grid = self.grids.open(level, array)
            if grid is None:  # listed, but no array: its records are gone
                lost.append(
                    (
                        self.layout.error("the segment is listed but holds no array", level, array),
                        None,
                    )
                )
                continue
            raw = grid.attrs.get("offsets")
            offsets = raw if isinstance(raw, list) else _parse_offsets(name)
            src = self.layout.src(f"{level}/{array}", level, array)
            if offsets is None:  # neither listed nor in the segment's name
                raise self.layout.error(f"unreadable link offsets {raw!r}", level, array)
            try:
                off = np.asarray(
                    [int_list(o, "offsets", src, None, -MAX_COORD, MAX_COORD) for o in offsets],
                    dtype=np.int64,
                ).reshape(-1, len(offsets[0]) if offsets else knd)
            except (TypeError, ValueError, IndexError):
                raise self.layout.error(f"unreadable link offsets {raw!r}", level, array) from None
            has_perm = bool_field(grid.attrs, "has_perm", src)
            named = _parse_offsets(name)
            if named is not None and off.tolist() != named:  # FORMAT09 §3.5: they repeat it
                error = self.layout.error(
                    f"offsets {off.tolist()} differ from the segment's name {name}", level, array
                )
                # the records' endpoint 0 is their cell (with a perm column, any endpoint)
                owners = None if has_perm and delta == 0 else self.grids.list_chunks(level, array)
                lost.append((error, owners))
                continue
            if off.shape[1] < knd:  # spatial offsets on a chunk-by-attribute grid
                off = np.concatenate([np.zeros((len(off), knd - off.shape[1]), np.int64), off], 1)
            seg_width = int_field(grid.attrs, "link_width", src, width, 1, 64)
            if off.shape != (seg_width - 1, knd) or seg_width != width:
                raise self.layout.error(
                    f"offsets {off.tolist()} do not fit link width {width}", level, array
                )
            intra = delta == 0 and not off.any()
            segments.append(_Segment(name, grid, off, has_perm, intra))
        with self._lock:
            self._segments[(level, delta)] = segments
            self._lost_segments[(level, delta)] = lost
        return segments

    def _anchor(self, level: int, delta: int) -> tuple[np.ndarray, np.ndarray]:
        """Integer chunk-size ratios ``(r_src, r_trg)`` of a family: the other endpoints of
        a record at ``src`` live at ``floor(src * r_src / r_trg) + offset`` (FORMAT09 §3.5)."""
        knd = self.layout.key_ndim(level)
        base = self.layout.root.chunk_shape

        def ratio(lv: int) -> np.ndarray:
            info = self.layout.levels.get(lv)
            r = np.ones(base.size) if info is None else info.chunk_shape / base
            r = np.maximum(np.round(r), 1).astype(np.int64)
            return np.concatenate([np.ones(knd - r.size, np.int64), r])

        return ratio(level), ratio(level + delta)

    def read(self, level: int, delta: int = 0, chunks: np.ndarray | None = None) -> LinkSet:
        knd = self.layout.key_ndim(level)
        width = self.width(level, delta)
        if width is None:
            if self._family_lost(level, delta):
                self.layout.warn_missing(level, f"links/{delta_name(delta)}", "links")
            return LinkSet.empty(2, knd)
        d = delta_name(delta)
        segments = self._segments_of(level, delta, width)
        r_src, r_trg = self._anchor(level, delta)
        wanted = None if chunks is None else np.asarray(chunks, np.int64).reshape(-1, knd)
        table = None if wanted is None or len(wanted) == 0 else ChunkTable(wanted)

        # source cells per segment: the listed cells, narrowed to those whose records can
        # reach ``chunks`` (source in chunks, or source + offset in chunks at delta 0)
        sources = []
        for seg in segments:
            listed = self.grids.list_chunks(level, f"links/{d}/{seg.name}")
            if wanted is not None:
                if table is None:
                    listed = listed[:0]
                else:
                    hit = table.index_of(listed) >= 0
                    if delta == 0:
                        for o in seg.offsets:
                            hit |= table.index_of(listed + o) >= 0
                    listed = listed[hit]
            sources.append(listed)

        attr_names = []
        for n in self.layout.list_attributes(level, "link"):
            if self.layout.attrs(f"{level}/link_attributes/{n}/{d}") is None:
                folder = self.layout.io.list_dir_known(
                    f"{level}/link_attributes/{n}", all_nodes=True
                )
                if d in (folder or ()):  # its folder is there, its group document is gone
                    self.layout.warn_missing(level, f"link_attributes/{n}/{d}")
            elif (
                not segments
                or self.layout.attribute_dtype(
                    level, "edge", n, f"link_attributes/{n}/{d}/{segments[0].name}"
                )
                is not None
            ):
                attr_names.append(n)
        requests = [
            (f"links/{d}/{seg.name}", src) for seg, src in zip(segments, sources, strict=True)
        ]
        for n in attr_names:
            requests += [
                (f"link_attributes/{n}/{d}/{seg.name}", src)
                for seg, src in zip(segments, sources, strict=True)
            ]
        cells = self.grids.read(level, requests)

        parts: list[tuple[np.ndarray, np.ndarray]] = []
        parts_r: list[np.ndarray] = []
        attr_parts: dict[str, list[np.ndarray]] = {n: [] for n in attr_names}
        # each gap costs its own cell (a segment that cannot be read: its cells)
        gaps = list(self._lost_segments.get((level, delta), ()))
        for s, (seg, src) in enumerate(zip(segments, sources, strict=True)):
            array = requests[s][0]
            # a lost cell's records own its chunk, or (reordered by the perm column) any
            # of their endpoints' chunks
            reach = np.concatenate([np.zeros((1, knd), np.int64), seg.offsets])
            reach = reach if seg.has_perm and delta == 0 else reach[:1]
            for i, blob in enumerate(cells[s]):
                if isinstance(blob, ZVFormatError):
                    gaps.append((blob, src[i] + reach))
            at = np.flatnonzero([isinstance(b, bytes) for b in cells[s]])
            if at.size == 0:
                continue
            keys, runs, ep_rows, counts, failed = _segment_records(
                [b for b in cells[s] if isinstance(b, bytes)],
                seg,
                width,
                src[at],
                (src * r_src // r_trg)[at],
            )
            for i, exc in failed:
                chunk = src[at[i]]
                error = exc.located(
                    store=self.layout.io.name, level=level, array=array, chunk=chunk
                )
                gaps.append((error, chunk + reach))
            ok = counts >= 0
            at, counts = at[ok], counts[ok]
            parts.append((keys, runs))
            parts_r += ep_rows
            for a, n in enumerate(attr_names):
                r = (a + 1) * len(segments) + s
                blobs = [cells[r][i] for i in at]
                try:
                    values = self._attribute(level, requests[r][0], blobs, counts, src[at])
                except ZVFormatError as exc:  # the records stand, without these values
                    gaps.append((exc.located(store=self.layout.io.name, level=level), src[:0]))
                    values = missing_values(int(counts.sum()))
                attr_parts[n].append(values)
        attrs = {n: concat_attribute(p) for n, p in attr_parts.items() if p}
        return LinkSet.of(parts, parts_r, attrs, width, knd, gaps)

    def _attribute(
        self,
        level: int,
        array: str,
        blobs: list[bytes | ZVFormatError | None],
        counts: np.ndarray,
        chunks: np.ndarray,
    ) -> np.ndarray:
        """One link attribute for the rows of several cells (NaN where a cell has none).
        Raises :class:`ZVFormatError` when a cell's values cannot be read, or when the
        attribute has no array for this segment of records."""
        if not blobs:
            return missing_values(0)
        grid = self.grids.open(level, array)
        if counts.sum() and grid is None:
            raise self.layout.error(
                "the attribute has no array for these link records", level, array
            )
        records = self.grids.open(level, "links/" + array.split("/", 2)[2])
        if (
            grid is not None
            and records is not None
            and not (
                np.array_equal(grid.origin, records.origin)
                and np.array_equal(grid.shape, records.shape)
            )
        ):  # link attributes mirror their records cell for cell (FORMAT09 §3.6)
            raise self.layout.error(
                f"the attribute's grid (origin {grid.origin.tolist()}, shape "
                f"{grid.shape.tolist()}) does not mirror its link records' (origin "
                f"{records.origin.tolist()}, shape {records.shape.tolist()})",
                level,
                array,
            )
        meta = self.layout.array_attributes(level, array) or {}
        src = self.layout.src(f"{level}/{array}", level, array)
        row_shape = int_list(meta.get("row_shape") or [], "row_shape", src, None, 1, 1 << 16)
        width = int(np.prod(row_shape)) if row_shape else None
        if width is not None and width > 1 << 16:
            raise src.error("row_shape", f"declares {width} values per row")
        try:
            dtype = parse_attribute_dtype(str_field(meta, "dtype", src, "float32"))
        except ZVFormatError as exc:
            raise exc.located(store=self.layout.io.name, level=level, array=array) from None
        for blob, chunk in zip(blobs, chunks, strict=True):
            if isinstance(blob, ZVFormatError):
                raise blob.located(store=self.layout.io.name, level=level, array=array, chunk=chunk)
        payloads = [b for b in blobs if isinstance(b, bytes)]
        if len(payloads) == len(blobs) and counts.sum():
            sizes = np.array([len(b) for b in payloads], dtype=np.int64)
            total = int(counts.sum())
            w = width or (int(sizes.sum()) // dtype.itemsize // total)
            if w and np.array_equal(sizes, counts * w * dtype.itemsize):
                return decode_attribute(b"".join(payloads), dtype, total, w)
        parts = []
        for blob, n, chunk in zip(blobs, counts.tolist(), chunks, strict=True):
            if blob is None:
                parts.append(missing_values(n))
                continue
            assert not isinstance(blob, ZVFormatError)  # (raised above)
            try:
                parts.append(decode_attribute(blob, dtype, n, width))
            except ZVFormatError as exc:
                raise exc.located(
                    store=self.layout.io.name, level=level, array=array, chunk=chunk
                ) from None
        return concat_attribute(parts)
