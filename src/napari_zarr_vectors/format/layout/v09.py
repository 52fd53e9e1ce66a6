"""The 0.9 container: one vlen-bytes Zarr array per logical array (FORMAT09 §2-§3).

Every grid array (``vertices``, ``vertex_fragments``, ``link_fragments``,
``vertex_attributes/<n>``, ``fragment_attributes/<n>``, ``links/<d>/<offsets>``,
``link_attributes/<n>/<d>/<offsets>``) is one Zarr v3 array with one element per spatial
chunk, addressed through that array's own ``chunk_grid_origin`` and bounds-checked against
its own shape (FORMAT09 §2.5). The payload bytes inside a cell are those of 0.7, so the
shared decoders apply unchanged.

Reading cells
-------------
zarr opens every array (metadata, chunk key encoding, codecs) and reads every array that is
sharded or otherwise non-trivial, with one coordinate selection per array, all arrays of a
request gathered on zarr's event loop. Arrays whose chunks hold exactly one cell and whose
codec chain is ``vlen-bytes`` followed only by bytes-to-bytes codecs (what the 0.9.2 type
writers produce) take a direct path: their chunk keys (from zarr's own key encoding) are
fetched in one batch through :class:`~napari_zarr_vectors.format.io.StoreIO` and the
one-element vlen frame is unpacked here: through zarr's per-chunk pipeline a full read of a
1000-cell, 2M-point level took ~0.9 s, this way ~0.09 s. A cell whose frame does not parse is
reported as that cell's error; it is not handed to zarr, whose vlen decoder allocates as
many elements as a corrupt count claims.
"""

from __future__ import annotations

import asyncio
import math
import struct
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import permutations
from typing import Any, Literal, cast, overload

import numpy as np
from zarr.core.array import AsyncArray
from zarr.core.sync import sync
from zarr.storage import StorePath

from ..chunks import ChunkTable
from ..codecs import _decode_crc32c, check_compressed_frame, decode_bytes_chunk
from ..decode.arrays import decode_attribute, parse_attribute_dtype, text_values
from ..decode.fragments import expand_ranges
from ..decode.links import decode_ragged_links
from ..decode.manifests import (
    Mode0Manifests,
    dense_manifests,
    join_manifests,
    read_manifests,
)
from ..decode.vlen import PackedBlobs, blob_sizes, vlen_items
from ..discovery import (
    MAX_ENUMERATED_CHUNKS,
    candidate_deltas,
    candidate_segments,
    warn_unlisted,
)
from ..errors import ZVChunkWarning, ZVFetchError, ZVFormatError
from ..io import MAX_OBJECT_BYTES, LocalFile, map_parallel
from ..validate import (
    MAX_COORD,
    bool_field,
    check_whole_read,
    check_zarr_array_doc,
    int_field,
    int_list,
    list_field,
    mapping_field,
    str_field,
)
from .base import (
    GroupTable,
    Layout,
    LinkSet,
    ObjectAttribute,
    ObjectRows,
    ObjectTable,
    PayloadSink,
    decoded_chunk_shape,
)
from .keys import delta_name, parse_chunk_keys, sort_chunks
from .v07 import _ATTRIBUTE_DIRS, _concat_attr, _missing

#: bytes-to-bytes codecs the direct cell path can undo (through :mod:`..codecs`).
#: Most object ids one ``group_ranges`` entry may span.
MAX_GROUP_RANGE = 1 << 26

_DIRECT_CODECS = frozenset({"zstd", "blosc", "gzip", "crc32c"})
_VLEN_HEAD = struct.Struct("<II")


@dataclass(frozen=True)
class _Grid:
    """One opened grid array: zarr handle, grid placement and how its cells are read."""

    path: str
    array: AsyncArray[Any]
    origin: np.ndarray  # (key_ndim,) chunk coordinate of cell 0
    shape: np.ndarray  # (key_ndim,)
    attrs: dict[str, Any]
    direct: tuple[dict[str, Any], ...] | None  # bytes-to-bytes codecs, None = read via zarr
    #: sharded arrays of one-cell inner chunks read without zarr: (shard shape, inner
    #: bytes-to-bytes codecs, index checksummed); None = not such an array
    shard: tuple[np.ndarray, tuple[dict[str, Any], ...], bool] | None = None
    #: the chunks ``nonempty_chunks`` lists, parsed and sorted (``None``: no such list)
    listed: np.ndarray | None = None

    def locate(self, chunks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cell index of every chunk and whether it lies inside this array's grid."""
        if chunks.shape[1] != self.shape.size:
            return chunks, np.zeros(len(chunks), dtype=bool)
        cells = chunks - self.origin
        inside = np.all((cells >= 0) & (cells < self.shape), axis=1)
        return cells, inside

    def keys(self, cells: np.ndarray) -> list[str]:
        """Store keys of the chunks holding ``cells`` (one cell per chunk), as zarr names them."""
        enc = self.array.metadata.chunk_key_encoding
        sep = getattr(enc, "separator", None)
        if getattr(enc, "name", None) == "default" and sep in ("/", ".") and cells.shape[1]:
            prefix = f"{self.path}/c{sep}"
            return [prefix + sep.join(map(str, c)) for c in cells.tolist()]
        encode = self.array.metadata.encode_chunk_key
        return [f"{self.path}/{encode(tuple(c))}" for c in cells.tolist()]

    def files(self, cells: np.ndarray) -> Sequence[str | None]:
        """Store keys of the chunk files holding ``cells`` whatever the chunk shape (what an
        error about a cell names); ``None`` for a grid without a regular chunk shape."""
        shape = getattr(self.array.metadata.chunk_grid, "chunk_shape", None)
        if shape is None:
            return [None] * len(cells)
        return self.keys(np.asarray(cells, np.int64) // np.asarray(shape, np.int64))


@dataclass(frozen=True)
class _Segment:
    """One offsets array of a link family (``links/<d>/<offsets>``)."""

    name: str
    grid: _Grid
    offsets: np.ndarray  # (width - 1, key_ndim) int64
    has_perm: bool
    intra: bool  # flat rows (delta 0, all offsets zero) instead of a ragged blob


def _shard_plan(
    codecs: list[dict[str, Any]], grid_cfg: Any, knd: int
) -> tuple[np.ndarray, tuple[dict[str, Any], ...], bool] | None:
    """How to read a sharded vlen-bytes array directly (what 0.9 writers produce: one-cell
    inner chunks, ``vlen-bytes`` + optional compressors, a little-endian index at the end),
    or ``None`` when zarr must read it."""
    if len(codecs) != 1 or codecs[0].get("name") != "sharding_indexed":
        return None
    cfg = codecs[0].get("configuration")
    shard = grid_cfg.get("chunk_shape") if isinstance(grid_cfg, dict) else None
    if not isinstance(cfg, dict) or not isinstance(shard, list) or len(shard) != knd:
        return None
    inner = [c if isinstance(c, dict) else {"name": c} for c in cfg.get("codecs") or []]
    index = [c if isinstance(c, dict) else {"name": c} for c in cfg.get("index_codecs") or []]
    names = [c.get("name") for c in index]
    little = not index or (index[0].get("configuration") or {}).get("endian", "little") == "little"
    if (
        cfg.get("chunk_shape") != [1] * knd
        or cfg.get("index_location", "end") != "end"
        or not inner
        or inner[0].get("name") != "vlen-bytes"
        or not all(c.get("name") in _DIRECT_CODECS for c in inner[1:])
        or names not in (["bytes"], ["bytes", "crc32c"])
        or not little
        or not all(isinstance(n, int) and n >= 1 for n in shard)
    ):
        return None
    return np.asarray(shard, np.int64), tuple(inner[1:]), names == ["bytes", "crc32c"]


def _shard_cell(
    raw: bytes, local: int, n_inner: int, plan: tuple[np.ndarray, tuple[dict[str, Any], ...], bool]
) -> bytes | memoryview | None:
    """One inner one-cell chunk of a shard file (its vlen payload; ``None`` when empty)."""
    _shape, inner, checksummed = plan
    size = 16 * n_inner + (4 if checksummed else 0)
    if len(raw) < size:
        raise ZVFormatError(f"shard of {len(raw)} bytes is shorter than its {size}-byte index")
    index = raw[len(raw) - size :]
    if checksummed:
        index = _decode_crc32c(index)
    offset, nbytes = (int(v) for v in np.frombuffer(index, "<u8", 2, 16 * local))
    if offset == nbytes == 2**64 - 1:
        return None
    if offset + nbytes > len(raw) - size:
        raise ZVFormatError(
            f"shard index points at bytes {offset}..{offset + nbytes} beyond the data"
        )
    chunk = raw[offset : offset + nbytes]
    data = decode_bytes_chunk(chunk, [{"name": "bytes"}, *inner]) if inner else chunk
    return _unpack_vlen(data)


def _unpack_vlen(data: bytes, view: bool = False) -> bytes | memoryview | None:
    """The payload of a one-cell vlen-bytes chunk (``uint32 count``, then ``uint32 length``
    and the bytes of each element); ``None`` for an empty element. ``view``: a
    ``memoryview`` into ``data`` (no copy) instead of ``bytes``."""
    if len(data) < 4:
        raise ZVFormatError(f"vlen-bytes chunk of {len(data)} bytes has no element count")
    if len(data) == 4 and data == b"\x00\x00\x00\x00":
        return None
    if len(data) < 8:
        raise ZVFormatError(f"vlen-bytes chunk of {len(data)} bytes is truncated")
    count, length = _VLEN_HEAD.unpack_from(data)
    if count != 1:
        raise ZVFormatError(f"vlen-bytes chunk holds {count} elements, a grid cell holds 1")
    if len(data) != 8 + length:
        raise ZVFormatError(
            f"vlen-bytes element declares {length} bytes, the chunk holds {len(data) - 8}"
        )
    if view:
        return memoryview(data)[8:] if length else None
    return data[8:] or None


def _read_payload_into(path: str, i: int, sink: PayloadSink) -> bool:
    """Read the payload of the one-cell vlen-bytes chunk file at ``path`` (a ``uint32``
    count of 1, its ``uint32`` length, its bytes: what :func:`_unpack_vlen` accepts, not
    empty) into the memory ``sink`` claims for chunk ``i``; whether it was read so (any
    other file is left to the ordinary read, which reports what is wrong with it)."""
    try:
        file = LocalFile.open(path)
        if file is None:
            return False
        with file:
            head = file.read(0, _VLEN_HEAD.size)
            if len(head) < _VLEN_HEAD.size:
                return False
            count, length = _VLEN_HEAD.unpack_from(head)
            if (
                count != 1
                or not 0 < length <= MAX_OBJECT_BYTES
                or file.size != _VLEN_HEAD.size + length
            ):
                return False
            out = sink.claim(i, length)
            if out is None:
                return False
            if file.read_into(_VLEN_HEAD.size, out):
                return True
            sink.drop(i)
            return False
    except ZVFetchError:
        return False


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
) -> tuple[np.ndarray, np.ndarray]:
    """Rows of several link cells, concatenated, and the row count of each cell.

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
    values = np.frombuffer(b"".join(blobs), dtype="<i8")
    n_vals = sizes // 8
    starts = np.concatenate([[0], np.cumsum(n_vals)[:-1]]).astype(np.int64)
    if flat:
        data_start, data_len = starts, n_vals
    else:
        head_ok = n_vals >= 2
        k = np.where(head_ok, values[np.minimum(starts, max(values.size - 1, 0))], -1)
        first_off = np.where(head_ok, values[np.minimum(starts + 1, max(values.size - 1, 0))], -1)
        simple = head_ok & (k == 1) & (first_off == 0)
        data_start, data_len = starts + 2, n_vals - 2
        if not simple.all():  # K != 1 (or broken): validate and locate cell by cell
            data_start, data_len = data_start.copy(), data_len.copy()
            for i in np.flatnonzero(~simple).tolist():
                try:
                    rows = decode_ragged_links(blobs[i], row_width)
                except ZVFormatError as exc:
                    raise _CellError(i, exc) from None
                data_len[i] = rows.size
                data_start[i] = starts[i] + n_vals[i] - rows.size
    bad = np.flatnonzero(data_len % row_width)
    if bad.size:
        i = int(bad[0])
        raise _CellError(
            i, ZVFormatError(f"link data of {int(data_len[i])} values is not {row_width}-wide rows")
        )
    rows = values[expand_ranges(data_start, data_len)].reshape(-1, row_width)
    return rows.astype(np.int64, copy=False), data_len // row_width


def _segment_records(
    blobs: list[bytes], seg: _Segment, width: int, src: np.ndarray, anchor: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[tuple[int, ZVFormatError]]]:
    """Endpoint chunks and rows (:func:`_endpoints`) of the records of several cells of one
    segment, the record count of each cell, and ``(cell, error)`` for every cell that does
    not decode (its count ``-1``, its records left out). Cells are decoded all at once;
    when one fails, one by one, so that it costs only itself."""
    row_width = width + (1 if seg.has_perm else 0)
    try:
        rows, counts = _decode_link_cells(blobs, row_width, seg.intra)
        src, anchor = np.repeat(src, counts, axis=0), np.repeat(anchor, counts, axis=0)
        return (*_endpoints(rows, seg, width, src, anchor), counts, [])
    except (_CellError, ZVFormatError):
        pass
    parts_c, parts_r, failed = [], [], []
    counts = np.full(len(blobs), -1, np.int64)
    for i, blob in enumerate(blobs):
        try:
            rows, (n,) = _decode_link_cells([blob], row_width, seg.intra)
            c, r = _endpoints(rows, seg, width, np.repeat(src[i : i + 1], n, 0), anchor[[i] * n])
        except _CellError as exc:
            failed.append((i, exc.error))
            continue
        except ZVFormatError as exc:
            failed.append((i, exc))
            continue
        parts_c.append(c)
        parts_r.append(r)
        counts[i] = n
    knd = src.shape[1]
    return (
        np.concatenate(parts_c) if parts_c else np.empty((0, width, knd), np.int64),
        np.concatenate(parts_r) if parts_r else np.empty((0, width), np.int64),
        counts,
        failed,
    )


def _endpoints(
    rows: np.ndarray, seg: _Segment, width: int, src: np.ndarray, anchor: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Endpoint chunks ``(M, width, key_ndim)`` and rows ``(M, width)`` of decoded link rows:
    endpoint 0 in the source cell, the others at ``anchor + offset``, input order restored
    from the Lehmer-coded ``perm_idx`` column when the segment has one."""
    m = rows.shape[0]
    ep_chunks = np.empty((m, width, src.shape[1]), dtype=np.int64)
    ep_chunks[:, 0] = src
    if width > 1:
        ep_chunks[:, 1:] = anchor[:, None, :] + seg.offsets[None]
    ep_rows = rows[:, 1:] if seg.has_perm else rows
    if seg.has_perm and m:
        codes = rows[:, 0]
        n_perm = math.factorial(width)
        if codes.min() < 0 or codes.max() >= n_perm:
            raise ZVFormatError(f"link permutation code outside 0..{n_perm - 1}")
        undo = _undo_permutations(codes, width)
        ep_rows = np.take_along_axis(ep_rows, undo, axis=1)
        ep_chunks = np.take_along_axis(ep_chunks, undo[:, :, None], axis=1)
    return ep_chunks, np.ascontiguousarray(ep_rows, dtype=np.int64)


def _parse_offsets(name: str) -> list[list[int]] | None:
    if name == "self":
        return []
    try:
        return [[int(c) for c in part.split(".")] for part in name.split("_")]
    except ValueError:
        return None


def _direct_cell(
    raw: bytes | ZVFetchError | None, codecs: tuple[dict[str, Any], ...], view: bool = False
) -> bytes | memoryview | ZVFormatError | None:
    """The payload of one fetched cell file (``None``: no file, the empty fill value) or
    the error that keeps it from being read (unlocated); ``view``: see :func:`_unpack_vlen`."""
    if raw is None or isinstance(raw, ZVFetchError):
        return raw
    try:
        return _unpack_vlen(
            decode_bytes_chunk(raw, [{"name": "bytes"}, *codecs]) if codecs else raw, view
        )
    except ZVFormatError as exc:
        return exc


def _packed(values: np.ndarray | None) -> np.ndarray | PackedBlobs | None:
    """A 1-D object array of vlen-bytes elements (what zarr reads) as :class:`PackedBlobs`;
    anything else as it is."""
    if values is None or values.dtype != object or values.ndim != 1:
        return values
    return PackedBlobs.from_items([_cell_value(v) or b"" for v in values.tolist()])


def _cell_value(value: Any) -> bytes | None:
    """A zarr vlen-bytes element as payload bytes (``None`` for the empty fill value)."""
    if isinstance(value, np.ndarray):
        value = value.item() if value.size == 1 else None
    if value is None:
        return None
    if isinstance(value, str):
        value = value.encode()
    value = bytes(value)
    return value or None


class V09Layout(Layout):
    """Reads stores written in the 0.9 layout (zarr-vectors 0.9.x)."""

    generation = "0.9"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._grids: dict[str, _Grid | None] = {}
        self._plain: dict[str, AsyncArray[Any] | None] = {}
        self._listings: dict[str, np.ndarray] = {}
        self._segments: dict[tuple[int, int], list[_Segment]] = {}
        self._listed: dict[str, ChunkTable] = {}  # nonempty_chunks lookups
        #: segments listed without an array or with offsets that differ from their name:
        #: the error and the chunks that own their records (``None``: any)
        self._lost_segments: dict[
            tuple[int, int], list[tuple[ZVFormatError, np.ndarray | None]]
        ] = {}

    # -- metadata ----------------------------------------------------------------------
    def _open(self, path: str, level: int | None) -> AsyncArray[Any] | None:
        """The zarr array at ``path`` (``None`` when there is no node), built from the
        cached ``zarr.json`` so that metadata is fetched once per array."""
        doc = self._doc(path)
        if doc is None:
            return None
        if doc.get("node_type") != "array":
            raise self.error(f"{path} is a Zarr {doc.get('node_type')}, not an array", level)
        check_zarr_array_doc(doc, self.src(path, level))
        try:
            # (zarr's stubs want its TypedDict; check_zarr_array_doc checked the doc)
            arr: AsyncArray[Any] = AsyncArray(
                metadata=doc, store_path=StorePath(self.io.store, path)
            )  # type: ignore[call-overload]
        except Exception as exc:  # zarr raises many types for malformed metadata
            raise self.error(f"cannot open the Zarr array: {exc}", level, path) from None
        return arr

    def _open_plain(self, path: str, level: int) -> AsyncArray[Any] | None:
        with self._lock:
            if path in self._plain:
                return self._plain[path]
        arr = self._open(path, level)
        with self._lock:
            self._plain[path] = arr
        return arr

    def _grid(self, level: int, array: str) -> _Grid | None:
        path = f"{level}/{array}"
        with self._lock:
            if path in self._grids:
                return self._grids[path]
        arr = self._open(path, level)
        grid = None
        if arr is not None:
            grid = self._make_grid(level, array, path, arr)
        with self._lock:
            self._grids[path] = grid
        return grid

    def _make_grid(self, level: int, array: str, path: str, arr: AsyncArray[Any]) -> _Grid:
        knd = self.key_ndim(level)
        attrs = self._attrs(path) or {}
        src = self.src(path, level, array)
        shape = np.asarray(int_list(list(arr.shape), "shape", src, None, 0, MAX_COORD), np.int64)
        if shape.size != knd:
            raise self.error(
                f"grid array of rank {shape.size}, the level's chunk keys have {knd} axes",
                level,
                array,
            )
        origin_raw = attrs.get("chunk_grid_origin")
        origin = np.asarray(
            [0] * knd
            if origin_raw is None
            else int_list(origin_raw, "chunk_grid_origin", src, None, -MAX_COORD, MAX_COORD),
            dtype=np.int64,
        )
        if origin.shape != (knd,):
            raise self.error(
                f"chunk_grid_origin {origin.tolist()} has the wrong rank", level, array
            )
        nonempty = attrs.get("nonempty_chunks")
        if nonempty is not None and not (
            isinstance(nonempty, list) and all(isinstance(k, str) for k in nonempty)
        ):
            raise src.error("nonempty_chunks", "is not a list of chunk key strings")
        listed = None if nonempty is None else parse_chunk_keys(nonempty, knd)
        if nonempty is not None and listed is not None and len(listed) != len(nonempty):
            raise src.error("nonempty_chunks", f"lists entries that are not {knd}-d chunk keys")
        doc = self._doc(path) or {}
        codecs = [c if isinstance(c, dict) else {"name": c} for c in doc.get("codecs") or []]
        grid_doc = doc.get("chunk_grid")
        grid_cfg = (grid_doc.get("configuration") if isinstance(grid_doc, dict) else None) or {}
        one_cell = isinstance(grid_cfg, dict) and grid_cfg.get("chunk_shape") == [1] * knd
        direct = None
        if (
            one_cell
            and codecs
            and codecs[0].get("name") == "vlen-bytes"
            and all(c.get("name") in _DIRECT_CODECS for c in codecs[1:])
        ):
            direct = tuple(codecs[1:])
        return _Grid(
            path, arr, origin, shape, attrs, direct, _shard_plan(codecs, grid_cfg, knd), listed
        )

    # -- grid arrays -------------------------------------------------------------------
    def list_chunks(self, level: int, array: str = "vertices") -> np.ndarray:
        path = f"{level}/{array}"
        with self._lock:
            if path in self._listings:
                return self._listings[path]
        knd = self.key_ndim(level)
        grid = self._grid(level, array)
        if grid is None and array == "vertices" and self.levels[level].vertex_count > 0:
            raise self.error(
                f"the level declares {self.levels[level].vertex_count} vertices and has no "
                "vertices array",
                level,
                array,
            )
        if grid is None:
            chunks = np.empty((0, knd), np.int64)
        elif grid.listed is not None:
            # string-sorted on disk (FORMAT09 §2.6); parse_chunk_keys sorted it numerically
            chunks = grid.listed
        else:
            chunks = self._scan(level, array, grid)
        with self._lock:
            self._listings[path] = chunks
        return chunks

    def _scan(self, level: int, array: str, grid: _Grid) -> np.ndarray:
        """Non-empty cells of an array that has no ``nonempty_chunks`` attribute: list its
        chunk (or shard) files, then read the cells they cover and keep the non-empty ones."""
        if not self.io.listable:
            return self._scan_grid(level, array, grid)
        meta = grid.array.metadata
        enc = meta.chunk_key_encoding
        sep = getattr(enc, "separator", "/")
        prefix = "c" + sep if getattr(enc, "name", "default") == "default" else ""
        chunk_shape = np.asarray(meta.chunk_grid.chunk_shape, dtype=np.int64)

        async def keys() -> list[str]:
            return [k async for k in self.io.store.list_prefix(grid.path + "/")]

        blocks = []
        for key in sync(keys()):
            rel = key[len(grid.path) + 1 :]
            if not rel.startswith(prefix) or rel.endswith("zarr.json"):
                continue
            try:
                block = [int(p) for p in rel[len(prefix) :].split(sep)]
            except ValueError:
                continue
            if len(block) == chunk_shape.size:
                blocks.append(block)
        knd = self.key_ndim(level)
        if not blocks:
            return np.empty((0, knd), np.int64)
        cells = []
        for block in blocks:
            lo = np.asarray(block, dtype=np.int64) * chunk_shape
            hi = np.minimum(lo + chunk_shape, grid.shape)
            axes = [np.arange(a, b) for a, b in zip(lo, hi, strict=True)]
            mesh = np.meshgrid(*axes, indexing="ij")
            cells.append(np.stack([m.reshape(-1) for m in mesh], axis=1))
        candidates = np.concatenate(cells).astype(np.int64) + grid.origin
        values = self._read_grid_cells(level, [(array, candidates)])[0]
        # a cell that cannot be read is not empty: listed, its read reports it
        keep = np.array([v is not None for v in values], dtype=bool)
        return sort_chunks(candidates[keep])

    def _scan_grid(self, level: int, array: str, grid: _Grid) -> np.ndarray:
        """Non-empty cells of an array without ``nonempty_chunks`` in a store that cannot be
        listed: read every cell of the array's grid (absent cells are empty)."""
        count = int(np.prod(grid.shape))
        if count > MAX_ENUMERATED_CHUNKS:
            raise self.error(
                f"the array has no nonempty_chunks and its grid of {count} cells is too large "
                "to scan without a listing; read by bbox or from a listable location",
                level,
                array,
            )
        axes = [np.arange(n, dtype=np.int64) for n in grid.shape.tolist()]
        mesh = np.meshgrid(*axes, indexing="ij")
        candidates = np.stack([m.reshape(-1) for m in mesh], axis=1) + grid.origin
        values = self._read_grid_cells(level, [(array, candidates)])[0]
        keep = np.array([v is not None for v in values], dtype=bool)
        return sort_chunks(candidates[keep])

    def prefetch_metadata(self, level: int) -> None:
        names = [
            n
            for n in self.io.list_dir_known(f"{level}/vertex_attributes", all_nodes=True) or ()
            if n != "zarr.json"
        ]
        nodes = [*self.LEVEL_NODES, *(f"vertex_attributes/{n}" for n in names)]
        self._prefetch([f"{level}/{n}" for n in nodes])

    def knows_chunks(self, level: int) -> bool:
        """Whether the level's ``vertices`` array lists its non-empty chunks
        (``nonempty_chunks``), so that a bbox read needs no probing."""
        grid = self._grid(level, "vertices")
        return grid is not None and isinstance(grid.attrs.get("nonempty_chunks"), list)

    def read_cells(
        self, level: int, arrays: Sequence[str], chunks: np.ndarray
    ) -> dict[str, list[bytes | ZVFormatError | None]]:
        chunks = np.asarray(chunks, dtype=np.int64).reshape(-1, self.key_ndim(level))
        values = self._read_grid_cells(level, [(a, chunks) for a in arrays])
        return dict(zip(arrays, values, strict=True))

    def read_cell_views(
        self, level: int, arrays: Sequence[str], chunks: np.ndarray
    ) -> dict[str, list[bytes | memoryview | ZVFormatError | None]]:
        chunks = np.asarray(chunks, dtype=np.int64).reshape(-1, self.key_ndim(level))
        values = self._read_grid_cells(level, [(a, chunks) for a in arrays], view=True)
        return dict(zip(arrays, values, strict=True))

    def reads_in_place(self, level: int, array: str) -> bool:
        """Cells of a local array stored as plain vlen-bytes files (no compressor, not
        sharded) are read from their files straight into the sink's memory."""
        grid = self._grid(level, array)
        return grid is not None and grid.direct == () and self.io.local_path("") is not None

    def read_payloads_into(
        self, level: int, array: str, chunks: np.ndarray, sink: PayloadSink
    ) -> np.ndarray:
        done = np.zeros(len(chunks), dtype=bool)
        grid = self._grid(level, array)
        if grid is None or not self.reads_in_place(level, array):
            return done
        chunks = np.asarray(chunks, dtype=np.int64).reshape(-1, self.key_ndim(level))
        cells, inside = grid.locate(chunks)
        pos = np.flatnonzero(inside)
        for i, key in zip(pos.tolist(), grid.keys(cells[pos]), strict=True):
            path = self.io.local_path(key)
            done[i] = path is not None and _read_payload_into(path, i, sink)
        return done

    @overload
    def _read_grid_cells(
        self,
        level: int,
        requests: Sequence[tuple[str, np.ndarray]],
        view: Literal[False] = False,
    ) -> list[list[bytes | ZVFormatError | None]]: ...
    @overload
    def _read_grid_cells(
        self, level: int, requests: Sequence[tuple[str, np.ndarray]], view: bool
    ) -> list[list[bytes | memoryview | ZVFormatError | None]]: ...
    def _read_grid_cells(
        self, level: int, requests: Sequence[tuple[str, np.ndarray]], view: bool = False
    ) -> (
        list[list[bytes | ZVFormatError | None]]
        | list[list[bytes | memoryview | ZVFormatError | None]]
    ):
        """Cells of several (array, chunks) requests: one batched key fetch for the arrays
        read directly, one gathered zarr coordinate selection per other array."""
        out: list[list[bytes | memoryview | ZVFormatError | None]] = [
            [None] * len(c) for _, c in requests
        ]
        direct: list[tuple[int, int, _Grid]] = []  # (request, position, grid) per key
        keys: list[str] = []
        via_zarr: dict[int, tuple[_Grid, np.ndarray, np.ndarray]] = {}
        sharded: list[tuple[int, np.ndarray, np.ndarray, _Grid]] = []
        for r, (array, chunks) in enumerate(requests):
            grid = self._grid(level, array)
            if grid is None or len(chunks) == 0:
                continue
            cells, inside = grid.locate(chunks)
            pos = np.flatnonzero(inside)
            if grid.direct is None and grid.shard is not None:
                sharded.append((r, pos, cells[pos], grid))
            elif grid.direct is None:
                via_zarr[r] = (grid, pos, cells[pos])
            else:
                direct.extend((r, p, grid) for p in pos.tolist())
                keys.extend(grid.keys(cells[pos]))

        if direct:
            raws = self.io.fetch_many(keys)
            codecs = [g.direct for _, _, g in direct]
            if any(codecs):  # decompression releases the GIL: the cells decode in parallel
                nbytes = sum(len(r) for r in raws if isinstance(r, bytes))
                cell_values = map_parallel(
                    _direct_cell, raws, codecs, [view] * len(raws), nbytes=nbytes
                )
            else:  # plain vlen cells are views of their bytes: threads would only cost
                cell_values = [_direct_cell(r, (), view) for r in raws]
            for (r, p, _), value, key in zip(direct, cell_values, keys, strict=True):
                if isinstance(value, ZVFormatError):  # (a failed fetch is one too)
                    array, chunks = requests[r]
                    value = value.located(
                        store=self.io.name, level=level, array=array, chunk=chunks[p], key=key
                    )
                out[r][p] = value

        if sharded:
            self._read_sharded(level, requests, sharded, out)

        if via_zarr:
            order = list(via_zarr)

            async def run() -> list[Any]:
                return await asyncio.gather(
                    *(self._zarr_cells(via_zarr[r][0], via_zarr[r][2]) for r in order)
                )

            results = sync(run())
            for r, values in zip(order, results, strict=True):
                grid, pos, cells = via_zarr[r]
                array, chunks = requests[r]
                for p, value, cell in zip(pos.tolist(), values, cells, strict=True):
                    if not isinstance(value, BaseException):
                        out[r][p] = value
                        continue
                    file = grid.files(cell[None, :])[0]
                    if isinstance(value, ZVFetchError):
                        out[r][p] = value.located(
                            store=self.io.name, level=level, array=array, chunk=chunks[p], key=file
                        )
                    else:
                        out[r][p] = ZVFormatError(
                            f"cannot read the cell: {type(value).__name__}: {value}",
                            store=self.io.name,
                            level=level,
                            array=array,
                            chunk=chunks[p],
                            key=file,
                        )
        for r, (array, chunks) in enumerate(requests):
            self._missing_listed(level, array, chunks, out[r])
        return out

    def _missing_listed(
        self,
        level: int,
        array: str,
        chunks: np.ndarray,
        cells: list[bytes | memoryview | ZVFormatError | None],
    ) -> None:
        """Turn every empty cell that the array's ``nonempty_chunks`` lists into an error
        naming its file: the store says it holds data, so a missing file (or an HTTP 404)
        is damage, not an empty chunk."""
        empty = [p for p, c in enumerate(cells) if c is None]
        grid = self._grid(level, array) if empty else None
        if grid is None or not isinstance(grid.attrs.get("nonempty_chunks"), list):
            return
        path = f"{level}/{array}"
        with self._lock:
            table = self._listed.get(path)
        if table is None:
            table = ChunkTable(self.list_chunks(level, array))
            with self._lock:
                self._listed[path] = table
        pos = np.asarray(empty)[table.index_of(chunks[empty]) >= 0]
        files = grid.files(chunks[pos] - grid.origin)
        for p, key in zip(pos.tolist(), files, strict=True):
            cells[p] = ZVFormatError(
                "the chunk file is missing, but the array's nonempty_chunks lists the chunk",
                store=self.io.name,
                level=level,
                array=array,
                chunk=chunks[p],
                key=key,
            )

    def _read_sharded(
        self,
        level: int,
        requests: Sequence[tuple[str, np.ndarray]],
        sharded: list[tuple[int, np.ndarray, np.ndarray, _Grid]],
        out: list[list[bytes | memoryview | ZVFormatError | None]],
    ) -> None:
        """Cells of sharded arrays: each shard file fetched once (all arrays in one batch),
        its index and inner chunks decoded here with the bounded decoders."""
        wanted: dict[str, int] = {}
        plan_rows = []
        for r, pos, cells, grid in sharded:
            assert grid.shard is not None  # (what makes it sharded)
            shape = grid.shard[0]
            keys = grid.keys(cells // shape)
            local = [
                int(np.ravel_multi_index(tuple(c), tuple(shape))) for c in (cells % shape).tolist()
            ]
            for p, key, loc in zip(pos.tolist(), keys, local, strict=True):
                wanted.setdefault(key, len(wanted))
                plan_rows.append((r, p, key, loc, grid))
        raws = self.io.fetch_many(list(wanted))
        for r, p, key, loc, grid in plan_rows:
            raw = raws[wanted[key]]
            if raw is None:
                continue
            array, chunks = requests[r]
            if isinstance(raw, ZVFetchError):
                out[r][p] = raw.located(
                    store=self.io.name, level=level, array=array, chunk=chunks[p], key=key
                )
                continue
            assert grid.shard is not None  # (what makes it sharded)
            try:
                out[r][p] = _shard_cell(raw, loc, int(np.prod(grid.shard[0])), grid.shard)
            except ZVFormatError as exc:
                out[r][p] = exc.located(
                    store=self.io.name, level=level, array=array, chunk=chunks[p], key=key
                )

    def _precheck(
        self, level: int, path: str, arr: AsyncArray[Any], manifests: bool = False
    ) -> np.ndarray | Mode0Manifests | PackedBlobs | None:
        """Plain arrays are decoded by zarr, whose decompressors allocate whatever a frame
        declares: fetch their chunks first and refuse frames that declare more than a chunk
        of the array can hold (or, for vlen arrays, than their bytes can).

        A 1-D vlen-bytes array (e.g. the object manifests) is decoded here from the checked
        chunks and returned (an object array; ``manifests``: the object manifests, read
        chunk after chunk by :func:`read_manifests`), so its chunks are fetched and
        decompressed once; ``None``: let zarr read the array."""
        chunk_shape = self._plain_chunking(level, path, arr)
        if chunk_shape is None:
            return None
        grid = [-(-int(n) // int(c)) for n, c in zip(arr.shape, chunk_shape, strict=True)]
        count = int(np.prod(grid, dtype=object)) if grid else 1
        if count > MAX_ENUMERATED_CHUNKS:
            return None
        cells = (
            np.stack(np.meshgrid(*(np.arange(g) for g in grid), indexing="ij"), -1).reshape(
                -1, len(grid)
            )
            if grid
            else np.zeros((1, 0), np.int64)
        )
        whole = self._vlen_rows_direct(level, path, arr) is not None
        values = not whole and self._values_direct(level, path, arr, chunk_shape)
        items: Literal["objects", "manifests", "values"] | None = (
            ("manifests" if manifests else "objects") if whole else "values" if values else None
        )
        pieces = self._checked_chunks(level, path, arr, chunk_shape, cells, items)
        if not (whole or values) or not len(cells) or pieces is None:
            return None  # (a failed fetch: zarr reads the array and reports it)
        if values:  # (each cell's values, decoded here: zarr would fetch them again)
            if any(p is None for p in pieces):  # (a chunk of the wrong length: zarr reports)
                return None
            return np.concatenate(cast(list[np.ndarray], pieces))[: int(arr.shape[0])]
        if manifests:  # (each cell's object manifests)
            return join_manifests(cast(list[Mode0Manifests | PackedBlobs], pieces))[
                : int(arr.shape[0])
            ]
        # (each cell's items, an object array)
        objects: np.ndarray = np.concatenate(cast(list[np.ndarray], pieces))
        return objects[: int(arr.shape[0])]

    def _plain_chunking(
        self, level: int, path: str, arr: AsyncArray[Any]
    ) -> tuple[int, ...] | None:
        """The chunk shape of a plain array whose chunks :meth:`_checked_chunks` can read
        (a regular grid, not sharded); ``None`` otherwise."""
        codecs = (self._doc(f"{level}/{path}") or {}).get("codecs") or []
        if not isinstance(codecs, list) or not codecs:
            return None
        chunk_shape = getattr(arr.metadata.chunk_grid, "chunk_shape", None)
        if chunk_shape is None or any(
            c.get("name") == "sharding_indexed" for c in codecs if isinstance(c, dict)
        ):
            return None
        return tuple(int(c) for c in chunk_shape)

    def _vlen_rows_direct(self, level: int, path: str, arr: AsyncArray[Any]) -> int | None:
        """Rows per chunk of a 1-D vlen-bytes plain array decoded here, chunk by chunk
        (:meth:`_checked_chunks`); ``None`` when zarr must read it."""
        chunk_shape = self._plain_chunking(level, path, arr)
        codecs = (self._doc(f"{level}/{path}") or {}).get("codecs") or []
        if (
            chunk_shape is None
            or len(chunk_shape) != 1
            or arr.dtype.kind in "biuf"
            or not isinstance(codecs[0], dict)
            or codecs[0].get("name") != "vlen-bytes"
        ):
            return None
        return chunk_shape[0]

    def _values_direct(
        self, level: int, path: str, arr: AsyncArray[Any], chunk_shape: tuple[int, ...]
    ) -> bool:
        """Whether a 1-D array of numbers is decoded here from its checked chunks
        (``bytes`` in little-endian order, then compressors :func:`.decode_bytes_chunk`
        undoes), not by zarr: e.g. ``object_index/object_ids``, read with every read of
        a level with objects."""
        codecs = (self._doc(f"{level}/{path}") or {}).get("codecs") or []
        first = codecs[0] if codecs and isinstance(codecs[0], dict) else {}
        endian = (first.get("configuration") or {}).get("endian", "little")
        return (
            len(chunk_shape) == 1
            and len(arr.shape) == 1
            and arr.dtype.kind in "biuf"
            and first.get("name") == "bytes"
            and (endian == "little" or arr.dtype.itemsize == 1)
            and all(isinstance(c, dict) and c.get("name") in _DIRECT_CODECS for c in codecs[1:])
        )

    def _checked_chunks(
        self,
        level: int,
        path: str,
        arr: AsyncArray[Any],
        chunk_shape: tuple[int, ...],
        cells: np.ndarray,
        items: Literal["objects", "manifests", "values"] | None,
    ) -> list[np.ndarray | Mode0Manifests | PackedBlobs | None] | None:
        """Fetch the chunks ``cells`` (``(K, ndim)`` chunk coordinates) of plain array
        ``path`` and refuse any whose frame declares more than the chunk can hold; with
        ``items`` (1-D vlen-bytes arrays), their items, one object array (``"objects"``)
        or the object manifests they hold (``"manifests"``: :func:`read_manifests`, one
        chunk after another) per cell (a chunk not stored: the fill value, empty items);
        ``"values"`` (:meth:`_values_direct`): the numbers of each chunk (``None`` for one
        whose payload is not a whole chunk). ``None`` when a fetch failed."""
        codecs = (self._doc(f"{level}/{path}") or {}).get("codecs") or []
        encode = arr.metadata.encode_chunk_key
        keys = [f"{level}/{path}/{encode(tuple(int(x) for x in c))}" for c in cells]
        count = int(np.prod(chunk_shape, dtype=object)) if chunk_shape else 1
        fixed = arr.dtype.kind in "biuf"
        max_bytes = count * arr.dtype.itemsize if fixed else None
        vlen = not fixed and isinstance(codecs[0], dict) and codecs[0].get("name") == "vlen-bytes"

        key_ndim = self.key_ndim(level)

        def check(key: str, raw: bytes) -> np.ndarray | Mode0Manifests | PackedBlobs | None:
            try:
                check_compressed_frame(raw, codecs, max_bytes)
                if items == "values":
                    payload = decode_bytes_chunk(raw, codecs)
                    if len(payload) != max_bytes:
                        return None
                    return np.frombuffer(payload, arr.dtype.newbyteorder("<"))
                if not vlen:
                    return None
                # zarr's vlen decoder allocates the item count the chunk declares
                payload = decode_bytes_chunk(raw, [{"name": "bytes"}, *codecs[1:]])
                n = int.from_bytes(payload[:4], "little") if len(payload) >= 4 else -1
                if n != count:
                    raise ZVFormatError(f"vlen chunk declares {n} items, not {count}")
                if items == "manifests":
                    return read_manifests(payload, key_ndim)
                return vlen_items(payload) if items == "objects" else None
            except ZVFormatError as exc:
                raise self.error(f"{key}: {exc.reason}", level, path) from None

        raws = self.io.fetch_many(keys)
        fetched = [
            (i, r) for i, r in enumerate(raws) if r is not None and not isinstance(r, ZVFetchError)
        ]
        stored = [i for i, _ in fetched]
        # decompression releases the GIL: a large index's chunks decode in parallel, but
        # manifests one after another (read beside a level's chunks: one chunk's bytes
        # and temporaries held at a time, in this thread's memory)
        run = map if items == "manifests" else map_parallel
        checked = list(run(check, [keys[i] for i in stored], [r for _, r in fetched]))
        if len(stored) + raws.count(None) < len(raws):
            return None
        decoded = dict(zip(stored, checked, strict=True))
        # a chunk not stored: the fill value
        fill: np.ndarray | Mode0Manifests
        if items == "manifests":
            fill = Mode0Manifests.none(count, key_ndim)
        elif items == "values":
            fill = np.full(count, arr.metadata.fill_value, arr.dtype)
        else:
            fill = np.full(count, b"", object)
        return [fill if r is None else decoded[i] for i, r in enumerate(raws)]

    @staticmethod
    async def _zarr_cells(grid: _Grid, cells: np.ndarray) -> list[bytes | BaseException | None]:
        """Read ``cells`` of one array with a single coordinate selection; when that fails,
        cell by cell so that only the broken cells report an error."""
        if len(cells) == 0:
            return []
        try:
            values = await grid.array.get_coordinate_selection(tuple(cells.T))
            return [_cell_value(v) for v in np.asarray(values, dtype=object).reshape(-1)]
        except Exception:  # noqa: BLE001 - isolate the failing cells below
            pass
        singles = await asyncio.gather(
            *(grid.array.getitem(tuple(int(x) for x in c)) for c in cells),
            return_exceptions=True,
        )
        return [s if isinstance(s, BaseException) else _cell_value(s) for s in singles]

    def list_attributes(self, level: int, kind: str) -> list[str]:
        folder = _ATTRIBUTE_DIRS[kind]
        names = self.io.list_dir_known(f"{level}/{folder}", all_nodes=True)
        if names is not None:
            return [n for n in names if n != "zarr.json"]
        # no listing: the names a schema-created store declares (FORMAT09 §1.2), if present
        specs = (self.root.raw.get("zarr_vectors") or {}).get("attribute_specs") or {}
        declared = list(specs.get(kind) or {}) if isinstance(specs, dict) else []
        if not declared:
            return self._unlisted_attributes(kind)
        paths = [f"{level}/{folder}/{n}" for n in declared]
        self._prefetch(paths)
        return [n for n, p in zip(declared, paths, strict=True) if self._doc(p) is not None]

    # -- links -------------------------------------------------------------------------
    def link_deltas(self, level: int) -> list[int]:
        names = self.io.list_dir_known(f"{level}/links", all_nodes=True)
        listed = names is not None
        if names is None:  # no listing: probe every delta the levels allow
            names = [delta_name(d) for d in candidate_deltas(level, list(self.levels))]
            self._prefetch([f"{level}/links/{n}" for n in names])
        deltas = set()
        for name in names:
            try:
                delta = int(name)
            except ValueError:
                continue
            if self._attrs(f"{level}/links/{name}") is not None:
                deltas.add(delta)
            elif listed:
                self._warn_missing(level, f"links/{name}", "links")
        return sorted(deltas)

    def _family_lost(self, level: int, delta: int) -> bool:
        """Whether the level lists a folder for the links of ``delta`` that holds no group."""
        d = delta_name(delta)
        names = self.io.list_dir_known(f"{level}/links", all_nodes=True)
        return bool(names and d in names and self._attrs(f"{level}/links/{d}") is None)

    def link_width(self, level: int, delta: int = 0) -> int | None:
        d = delta_name(delta)
        attrs = self._attrs(f"{level}/links/{d}")
        if attrs is None:
            return None
        if "link_width" not in attrs:
            # a family group without its width cannot hold records: one that lists
            # segments lost its attributes (or its document is another node's)
            listed = self.io.list_dir_known(f"{level}/links/{d}", all_nodes=True) or ()
            if any(n != "zarr.json" for n in listed):
                raise self.error(
                    "the link family lists segments but gives no link_width", level, f"links/{d}"
                )
            return None
        return int_field(
            attrs, "link_width", self.src(f"{level}/links/{delta_name(delta)}"), lo=1, hi=64
        )

    def _link_segments(self, level: int, delta: int, width: int) -> list[_Segment]:
        with self._lock:
            if (level, delta) in self._segments:
                return self._segments[(level, delta)]
        d = delta_name(delta)
        knd = self.key_ndim(level)
        listed = self.io.list_dir_known(f"{level}/links/{d}", all_nodes=True)
        if listed is None:  # no listing: probe the offsets a record can plausibly have
            listed = candidate_segments(width, self.root.ndim)
            warn_unlisted(
                self.io.name,
                self.io.warned,
                f"the link segments of level {level} delta {d}",
                "segments are probed within a few chunks of their source, so links spanning "
                "farther are left out",
            )
            self._prefetch([f"{level}/links/{d}/{n}" for n in listed])
            listed = [n for n in listed if self._doc(f"{level}/links/{d}/{n}") is not None]
        names = sorted(n for n in listed if n != "zarr.json")
        attr_names = self.list_attributes(level, "link")
        self._prefetch(
            [f"{level}/links/{d}/{n}" for n in names]
            + [f"{level}/link_attributes/{a}/{d}" for a in attr_names]
            + [f"{level}/link_attributes/{a}/{d}/{n}" for a in attr_names for n in names]
        )
        segments = []
        lost: list[tuple[ZVFormatError, np.ndarray | None]] = []
        for name in names:
            array = f"links/{d}/{name}"
            grid = self._grid(level, array)
            if grid is None:  # listed, but no array: its records are gone
                lost.append(
                    (self.error("the segment is listed but holds no array", level, array), None)
                )
                continue
            raw = grid.attrs.get("offsets")
            offsets = raw if isinstance(raw, list) else _parse_offsets(name)
            src = self.src(f"{level}/{array}", level, array)
            if offsets is None:  # neither listed nor in the segment's name
                raise self.error(f"unreadable link offsets {raw!r}", level, array)
            try:
                off = np.asarray(
                    [int_list(o, "offsets", src, None, -MAX_COORD, MAX_COORD) for o in offsets],
                    dtype=np.int64,
                ).reshape(-1, len(offsets[0]) if offsets else knd)
            except (TypeError, ValueError, IndexError):
                raise self.error(f"unreadable link offsets {raw!r}", level, array) from None
            has_perm = bool_field(grid.attrs, "has_perm", src)
            named = _parse_offsets(name)
            if named is not None and off.tolist() != named:  # FORMAT09 §3.5: they repeat it
                error = self.error(
                    f"offsets {off.tolist()} differ from the segment's name {name}", level, array
                )
                # the records' endpoint 0 is their cell (with a perm column, any endpoint)
                owners = None if has_perm and delta == 0 else self.list_chunks(level, array)
                lost.append((error, owners))
                continue
            if off.shape[1] < knd:  # spatial offsets on a chunk-by-attribute grid
                off = np.concatenate([np.zeros((len(off), knd - off.shape[1]), np.int64), off], 1)
            seg_width = int_field(grid.attrs, "link_width", src, width, 1, 64)
            if off.shape != (seg_width - 1, knd) or seg_width != width:
                raise self.error(
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
        knd = self.key_ndim(level)
        base = self.root.chunk_shape

        def ratio(lv: int) -> np.ndarray:
            info = self.levels.get(lv)
            r = np.ones(base.size) if info is None else info.chunk_shape / base
            r = np.maximum(np.round(r), 1).astype(np.int64)
            return np.concatenate([np.ones(knd - r.size, np.int64), r])

        return ratio(level), ratio(level + delta)

    def read_links(self, level: int, delta: int = 0, chunks: np.ndarray | None = None) -> LinkSet:
        knd = self.key_ndim(level)
        width = self.link_width(level, delta)
        if width is None:
            if self._family_lost(level, delta):
                self._warn_missing(level, f"links/{delta_name(delta)}", "links")
            return LinkSet.empty(2, knd)
        d = delta_name(delta)
        segments = self._link_segments(level, delta, width)
        r_src, r_trg = self._anchor(level, delta)
        wanted = None if chunks is None else np.asarray(chunks, np.int64).reshape(-1, knd)
        table = None if wanted is None or len(wanted) == 0 else ChunkTable(wanted)

        # source cells per segment: the listed cells, narrowed to those whose records can
        # reach ``chunks`` (source in chunks, or source + offset in chunks at delta 0)
        sources = []
        for seg in segments:
            listed = self.list_chunks(level, f"links/{d}/{seg.name}")
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
        for n in self.list_attributes(level, "link"):
            if self._attrs(f"{level}/link_attributes/{n}/{d}") is None:
                folder = self.io.list_dir_known(f"{level}/link_attributes/{n}", all_nodes=True)
                if d in (folder or ()):  # its folder is there, its group document is gone
                    self._warn_missing(level, f"link_attributes/{n}/{d}")
            elif (
                not segments
                or self.attribute_dtype(
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
        cells = self._read_grid_cells(level, requests)

        parts_c: list[np.ndarray] = []
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
            ep_chunks, ep_rows, counts, failed = _segment_records(
                [b for b in cells[s] if isinstance(b, bytes)],
                seg,
                width,
                src[at],
                (src * r_src // r_trg)[at],
            )
            for i, exc in failed:
                chunk = src[at[i]]
                error = exc.located(store=self.io.name, level=level, array=array, chunk=chunk)
                gaps.append((error, chunk + reach))
            ok = counts >= 0
            at, counts = at[ok], counts[ok]
            parts_c.append(ep_chunks)
            parts_r.append(ep_rows)
            for a, n in enumerate(attr_names):
                r = (a + 1) * len(segments) + s
                blobs = [cells[r][i] for i in at]
                try:
                    values = self._link_attributes(level, requests[r][0], blobs, counts, src[at])
                except ZVFormatError as exc:  # the records stand, without these values
                    gaps.append((exc.located(store=self.io.name, level=level), src[:0]))
                    values = _missing(int(counts.sum()))
                attr_parts[n].append(values)
        attrs = {n: _concat_attr(p) for n, p in attr_parts.items() if p}
        return LinkSet.of(parts_c, parts_r, attrs, width, knd, gaps)

    def _link_attributes(
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
            return _missing(0)
        grid = self._grid(level, array)
        if counts.sum() and grid is None:
            raise self.error("the attribute has no array for these link records", level, array)
        records = self._grid(level, "links/" + array.split("/", 2)[2])
        if (
            grid is not None
            and records is not None
            and not (
                np.array_equal(grid.origin, records.origin)
                and np.array_equal(grid.shape, records.shape)
            )
        ):  # link attributes mirror their records cell for cell (FORMAT09 §3.6)
            raise self.error(
                f"the attribute's grid (origin {grid.origin.tolist()}, shape "
                f"{grid.shape.tolist()}) does not mirror its link records' (origin "
                f"{records.origin.tolist()}, shape {records.shape.tolist()})",
                level,
                array,
            )
        meta = self.array_attributes(level, array) or {}
        src = self.src(f"{level}/{array}", level, array)
        row_shape = int_list(meta.get("row_shape") or [], "row_shape", src, None, 1, 1 << 16)
        width = int(np.prod(row_shape)) if row_shape else None
        if width is not None and width > 1 << 16:
            raise src.error("row_shape", f"declares {width} values per row")
        try:
            dtype = parse_attribute_dtype(str_field(meta, "dtype", src, "float32"))
        except ZVFormatError as exc:
            raise exc.located(store=self.io.name, level=level, array=array) from None
        for blob, chunk in zip(blobs, chunks, strict=True):
            if isinstance(blob, ZVFormatError):
                raise blob.located(store=self.io.name, level=level, array=array, chunk=chunk)
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
                parts.append(_missing(n))
                continue
            assert not isinstance(blob, ZVFormatError)  # (raised above)
            try:
                parts.append(decode_attribute(blob, dtype, n, width))
            except ZVFormatError as exc:
                raise exc.located(
                    store=self.io.name, level=level, array=array, chunk=chunk
                ) from None
        return _concat_attr(parts)

    # -- plain (non-grid) arrays -----------------------------------------------------------
    def read_whole(self, level: int, path: str) -> np.ndarray | None:
        """Whole contents of one plain array of a level (``None`` when absent), e.g. the
        links of a composite store's added geometry (:mod:`..composite`)."""
        return self._read_whole(level, [path])[0]

    @overload
    def _read_whole(
        self, level: int, paths: Sequence[str], manifests: Literal[False] = False
    ) -> list[np.ndarray | None]: ...
    @overload
    def _read_whole(
        self, level: int, paths: Sequence[str], manifests: bool
    ) -> list[np.ndarray | Mode0Manifests | PackedBlobs | None]: ...
    def _read_whole(
        self, level: int, paths: Sequence[str], manifests: bool = False
    ) -> list[np.ndarray | None] | list[np.ndarray | Mode0Manifests | PackedBlobs | None]:
        """Whole contents of several plain arrays of a level, read concurrently (their
        compressed chunks checked first, see :meth:`_precheck`); ``manifests``: a 1-D
        vlen-bytes array holds object manifests (read as :func:`read_manifests` reads
        them, not as one Python object per item)."""
        arrays = [self._open_plain(f"{level}/{p}", level) for p in paths]
        decoded: dict[str, np.ndarray | Mode0Manifests | PackedBlobs] = {}
        for p, arr in zip(paths, arrays, strict=True):
            if arr is not None:
                src = self.src(f"{level}/{p}", level, p)
                check_whole_read(arr.shape, arr.dtype.itemsize, src, decoded_chunk_shape(arr))
                whole = self._precheck(level, p, arr, manifests)
                if whole is not None:
                    decoded[p] = whole
        rest = [(p, None if p in decoded else a) for p, a in zip(paths, arrays, strict=True)]
        gathered = self._gather_whole(level, rest)
        read: Sequence[np.ndarray | Mode0Manifests | PackedBlobs | None] = gathered
        if manifests:  # what zarr read: 1-D vlen arrays packed
            read = [_packed(r) for r in gathered]
        return [decoded.get(p, r) for p, r in zip(paths, read, strict=True)]

    # -- objects and groups -------------------------------------------------------------
    def read_object_table(self, level: int) -> ObjectTable | None:
        attrs = self._attrs(f"{level}/object_index")
        if attrs is None:
            if "object_index" in (self.io.list_dir_known(f"{level}", all_nodes=True) or ()):
                self._warn_missing(level, "object_index", "object index")
            return None
        if self._dense_index(level, attrs):
            return self._read_dense_object_table(level, attrs)
        manifests, ids = self._read_whole(
            level, ["object_index/manifests", "object_index/object_ids"], manifests=True
        )
        if manifests is None:
            raise self.error("the object index has no manifests array", level, "object_index")
        shape = manifests.shape if isinstance(manifests, np.ndarray) else (len(manifests),)
        n = self._manifest_count(level, attrs, shape)
        # (1-D: the manifests, packed or as an object array of bytes)
        blobs = cast(Sequence[bytes], manifests[:n])
        self._check_unwritten_rows(level, attrs, n, np.arange(n), blobs)
        ids = cast(np.ndarray | None, ids)  # (int64 ids: not packed)
        return ObjectTable(self._row_ids(level, ids, n, attrs), blobs)

    def read_object_rows(self, level: int) -> ObjectRows | ObjectTable | None:
        """A vlen index read in chunks of rows (what 0.9 writers produce): ``object_ids``
        whole (checked as the whole table's are), the manifests chunk by chunk later."""
        attrs = self._attrs(f"{level}/object_index")
        if attrs is None or self._dense_index(level, attrs):
            return self.read_object_table(level)
        path = "object_index/manifests"
        arr = self._open_plain(f"{level}/{path}", level)
        if arr is None:
            raise self.error("the object index has no manifests array", level, "object_index")
        n = self._manifest_count(level, attrs, arr.shape)
        per_chunk = self._vlen_rows_direct(level, path, arr)
        if per_chunk is None or per_chunk < 1:
            return self.read_object_table(level)
        (ids,) = self._read_whole(level, ["object_index/object_ids"])
        row_ids = self._row_ids(level, ids, n, attrs)

        def manifests(rows: np.ndarray) -> ObjectTable:
            rows = np.asarray(rows, np.int64)
            cells = np.unique(rows // per_chunk)
            pieces = self._checked_chunks(level, path, arr, (per_chunk,), cells[:, None], "objects")
            if pieces is None:  # a fetch that kept failing: reported as a whole read does
                whole = self.read_object_table(level)
                assert whole is not None  # (the index's attributes were read)
                return ObjectTable(row_ids[rows], [whole.manifests[r] for r in rows.tolist()])
            at = np.searchsorted(cells, rows // per_chunk).tolist()
            local = (rows % per_chunk).tolist()
            blobs = [_cell_value(pieces[c][r]) or b"" for c, r in zip(at, local, strict=True)]
            self._check_unwritten_rows(level, attrs, n, rows, blobs)
            return ObjectTable(row_ids[rows], blobs)

        return ObjectRows(row_ids, manifests)

    def _manifest_count(self, level: int, attrs: dict[str, Any], shape: Sequence[int]) -> int:
        """``num_objects`` of a vlen index, checked against its manifests array's shape."""
        if len(shape) != 1:
            raise self.error(
                f"manifests array has shape {list(shape)}", level, "object_index/manifests"
            )
        src = self.src(f"{level}/object_index", level, "object_index")
        n = int_field(attrs, "num_objects", src, shape[0])
        if shape[0] < n:
            raise self.error(
                f"object index holds {shape[0]} manifests, expected {n}",
                level,
                "object_index/manifests",
            )
        return n

    def _check_unwritten_rows(
        self, level: int, attrs: dict[str, Any], n: int, rows: np.ndarray, blobs: Sequence[bytes]
    ) -> None:
        """Warn when the manifests ``blobs`` of index rows ``rows`` that read as the fill
        value (no bytes: their chunk is not stored) are more than ``num_present`` allows:
        a manifest holds at least its block count, so at most ``n`` minus those rows hold
        one, and ``num_present`` counts the rows that do. Their objects read as objects
        without geometry (the gap); the geometry itself is read."""
        empty = blob_sizes(blobs) == 0
        lost = int(np.count_nonzero(empty))
        if not lost:
            return
        src = self.src(f"{level}/object_index", level, "object_index")
        present = int_field(attrs, "num_present", src, None, 0, None)
        if present is None or n - lost >= present:
            return
        path = "object_index/manifests"
        arr = self._open_plain(f"{level}/{path}", level)
        per_chunk = getattr(arr.metadata.chunk_grid, "chunk_shape", None) if arr else None
        chunk = key = None
        if per_chunk and arr is not None:  # (a chunk shape is read from the array)
            chunk = (int(np.asarray(rows)[empty][0]) // int(per_chunk[0]),)
            key = f"{level}/{path}/{arr.metadata.encode_chunk_key(chunk)}"
        error = ZVFormatError(
            f"{lost} manifest rows read as the fill value (their chunk is not stored), but "
            f"num_present says {present} of the {n} objects hold a manifest",
            store=self.io.name,
            level=level,
            array=path,
            chunk=chunk,
            key=key,
        )
        warnings.warn(f"objects left without geometry: {error}", ZVChunkWarning, stacklevel=3)

    def _row_ids(
        self, level: int, ids: np.ndarray | None, n: int, attrs: dict[str, Any]
    ) -> np.ndarray:
        """Object id of each of ``n`` index rows: the ``object_ids`` array whenever it
        exists, whatever the index's ``layout`` label says (tools' coarse levels label it
        ``vlen_manifests_v1``, FORMAT-NEXT §9.4), else the row number. Ids the index
        (``attrs``) says are sorted must ascend."""
        if ids is None:  # 0.7-style identity rows
            return np.arange(n, dtype=np.int64)
        if ids.ndim != 1 or ids.shape[0] < n or ids.dtype.kind not in "iu":
            raise self.error(
                f"object_ids {ids.dtype} {list(ids.shape)} do not cover {n} manifests",
                level,
                "object_index/object_ids",
            )
        row_ids = ids[:n].astype(np.int64)
        if n and row_ids.min() < 0:  # -1 means "no object" wherever ids are read
            raise self.error(
                f"object_ids holds the negative id {int(row_ids.min())}",
                level,
                "object_index/object_ids",
            )
        if not np.all(row_ids[1:] > row_ids[:-1]):
            if np.unique(row_ids).size != n:
                raise self.error("object_ids repeat an id", level, "object_index/object_ids")
            if attrs.get("object_ids_sorted") is True:
                raise self.error(
                    "object_ids do not ascend, but the index says object_ids_sorted",
                    level,
                    "object_index/object_ids",
                )
        return row_ids

    def _dense_index(self, level: int, attrs: dict[str, Any]) -> bool:
        """Whether the level's object index is ``dense_manifests_v1`` (FORMAT-NEXT §4,
        upstream ``is_dense``): the label says so, else the arrays present decide (a vlen
        ``manifests`` array wins over ``manifest_spans``). Decided per level: one store
        may mix the two."""
        if attrs.get("layout") == "dense_manifests_v1":
            return True
        self._prefetch([f"{level}/object_index/{n}" for n in ("manifests", "manifest_spans")])
        return (
            self._doc(f"{level}/object_index/manifests") is None
            and self._doc(f"{level}/object_index/manifest_spans") is not None
        )

    def _read_dense_object_table(self, level: int, attrs: dict[str, Any]) -> ObjectTable:
        """A dense object index (``manifest_spans`` + ``manifest_blocks`` + ``object_ids``)
        as the same :class:`ObjectTable` a vlen index gives."""
        names = ["manifest_spans", "manifest_blocks", "object_ids"]
        spans, blocks, ids = self._read_whole(level, [f"object_index/{n}" for n in names])
        if spans is None or blocks is None:
            name = names[0] if spans is None else names[1]
            raise self.error(f"the dense object index has no {name} array", level, "object_index")
        src = self.src(f"{level}/object_index", level, "object_index")
        n = int_field(attrs, "num_objects", src, spans.shape[0] if spans.ndim else 0)
        if spans.ndim != 2 or spans.shape[0] < n:
            raise self.error(
                f"manifest_spans of shape {list(spans.shape)} do not cover {n} objects",
                level,
                "object_index/manifest_spans",
            )
        try:
            blobs = dense_manifests(spans[:n], blocks, self.key_ndim(level))
        except ZVFormatError as exc:
            raise exc.located(store=self.io.name, level=level, array="object_index") from None
        return ObjectTable(self._row_ids(level, ids, n, attrs), blobs)

    def read_object_attributes(self, level: int) -> dict[str, ObjectAttribute]:
        names = self.list_attributes(level, "object")
        paths = [f"object_attributes/{n}" for n in names]
        index = self._attrs(f"{level}/object_index") or {}
        rows = int_field(index, "num_objects", self.src(f"{level}/object_index", level), None)

        def check(shape: Sequence[int], path: str) -> None:
            if not len(shape) or (rows is not None and shape[0] != rows):
                raise self.error(
                    f"object attribute of shape {list(shape)} for {rows} object rows", level, path
                )

        for path in paths:  # refused before anything is read
            arr = self._open_plain(f"{level}/{path}", level)
            if arr is not None:
                check(arr.shape, path)
        values = self._read_whole(level, paths)
        out: dict[str, ObjectAttribute] = {}
        for name, path, vals in zip(names, paths, values, strict=True):
            if vals is None:
                self._warn_missing(level, path)
                continue
            check(vals.shape, path)
            arr = self._open_plain(f"{level}/{path}", level)
            assert arr is not None
            vals = text_values(vals)
            out[name] = ObjectAttribute(
                vals, _present(vals, arr.metadata.fill_value), self._attrs(f"{level}/{path}") or {}
            )
        return out

    def read_groups(self, level: int) -> GroupTable | None:
        doc = self._doc(f"{level}/groups")
        if doc is None:
            if "groups" in (self.io.list_dir_known(f"{level}", all_nodes=True) or ()):
                self._warn_missing(level, "groups", "groups")
            return None
        if doc.get("node_type") != "array":
            raise self.error("groups is not a Zarr array", level, "groups")
        attrs = self._attrs(f"{level}/groups") or {}
        src = self.src(f"{level}/groups", level, "groups")
        ranges = mapping_field(attrs, "group_ranges", src)
        (rows,) = self._read_whole(level, ["groups"])
        rows = np.asarray(rows, dtype=object).reshape(-1)
        n_groups = int_field(attrs, "num_groups", src, rows.size, 0, rows.size + len(ranges))
        members: dict[int, np.ndarray] = {}
        for g in range(n_groups):
            raw = _cell_value(rows[g]) if g < rows.size else None
            raw = raw or b""
            if len(raw) % 8:
                raise self.error(
                    f"group {g} holds {len(raw)} bytes, not whole int64 ids", level, "groups"
                )
            members[g] = np.frombuffer(raw, "<i8").astype(np.int64)
        for key, bounds in ranges.items():
            try:
                g = int(key)
                lo, hi = int_list(bounds, f"group_ranges.{key}", src, None, 0, MAX_COORD)[:2]
            except (TypeError, ValueError):
                raise self.error(
                    f"unreadable group range {key!r}: {bounds!r}", level, "groups"
                ) from None
            if hi < lo:
                raise self.error(f"group {g} range {lo}..{hi} is reversed", level, "groups")
            if hi - lo > MAX_GROUP_RANGE:
                raise src.error(f"group_ranges.{key}", f"spans {hi - lo} ids")
            extra = np.arange(lo, hi, dtype=np.int64)
            members[g] = np.concatenate([members.get(g, np.empty(0, np.int64)), extra])
        listed = list_field(attrs, "group_names", src, [])
        if not all(n is None or isinstance(n, str) for n in listed):
            raise src.error("group_names", "is not a list of names (strings or null)")
        names = {g: n for g, n in enumerate(listed) if n is not None}
        return GroupTable(members, names)

    def read_group_attributes(self, level: int) -> dict[str, np.ndarray]:
        names = self.list_attributes(level, "group")
        values = self._read_whole(level, [f"group_attributes/{n}" for n in names])
        for n, v in zip(names, values, strict=True):
            if v is None:
                self._warn_missing(level, f"group_attributes/{n}")
        return {n: text_values(v) for n, v in zip(names, values, strict=True) if v is not None}


def _present(values: np.ndarray, fill: Any) -> np.ndarray:
    """Rows that hold a value: not equal to the fill sentinel in every channel (NaN-aware)."""
    flat = values.reshape(values.shape[0], -1) if values.ndim else values.reshape(1, 1)
    fill_arr = np.asarray(fill)
    if values.dtype.kind == "f" and fill_arr.dtype.kind == "f" and np.isnan(fill_arr):
        absent = np.isnan(flat)
    else:
        absent = (
            flat == fill_arr.astype(values.dtype) if fill is not None else np.zeros_like(flat, bool)
        )
    present: np.ndarray = ~np.all(absent, axis=1)
    return present
