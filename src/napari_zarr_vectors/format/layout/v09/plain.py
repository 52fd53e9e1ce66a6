"""The plain (non-grid) arrays of a 0.9 level (the object index, object and group
attributes, groups): read whole, their compressed chunks checked before zarr decodes them,
and the 1-D ones this module can decode itself decoded here from the checked chunks."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Literal, cast, overload

import numpy as np
from zarr.core.array import AsyncArray

from ...codecs import check_compressed_frame, decode_bytes_chunk
from ...decode.manifests import Mode0Manifests, join_manifests, read_manifests
from ...decode.vlen import PackedBlobs, vlen_items
from ...discovery import MAX_ENUMERATED_CHUNKS
from ...errors import ZVFetchError, ZVFormatError
from ...io import map_parallel
from ...validate import check_whole_read
from ..base import Layout, decoded_chunk_shape
from .cells import DIRECT_CODECS, cell_value
from .grid import open_array


class PlainArrays:
    """The plain arrays of a 0.9 store's levels, opened once each and read whole
    (:meth:`read`) or chunk by chunk (:meth:`checked_chunks`)."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self._lock = threading.Lock()
        self._plain: dict[str, AsyncArray[Any] | None] = {}

    def open(self, path: str, level: int) -> AsyncArray[Any] | None:
        """The plain array at ``path`` (``"<level>/..."``; ``None`` when there is none)."""
        with self._lock:
            if path in self._plain:
                return self._plain[path]
        arr = open_array(self.layout, path, level)
        with self._lock:
            self._plain[path] = arr
        return arr

    @overload
    def read(
        self, level: int, paths: Sequence[str], manifests: Literal[False] = False
    ) -> list[np.ndarray | None]: ...
    @overload
    def read(
        self, level: int, paths: Sequence[str], manifests: bool
    ) -> list[np.ndarray | Mode0Manifests | PackedBlobs | None]: ...
    def read(
        self, level: int, paths: Sequence[str], manifests: bool = False
    ) -> list[np.ndarray | None] | list[np.ndarray | Mode0Manifests | PackedBlobs | None]:
        """Whole contents of several plain arrays of a level, read concurrently (their
        compressed chunks checked first, see :meth:`_precheck`); ``manifests``: a 1-D
        vlen-bytes array holds object manifests (read as :func:`read_manifests` reads
        them, not as one Python object per item)."""
        arrays = [self.open(f"{level}/{p}", level) for p in paths]
        decoded: dict[str, np.ndarray | Mode0Manifests | PackedBlobs] = {}
        for p, arr in zip(paths, arrays, strict=True):
            if arr is not None:
                src = self.layout.src(f"{level}/{p}", level, p)
                check_whole_read(arr.shape, arr.dtype.itemsize, src, decoded_chunk_shape(arr))
                whole = self._precheck(level, p, arr, manifests)
                if whole is not None:
                    decoded[p] = whole
        rest = [(p, None if p in decoded else a) for p, a in zip(paths, arrays, strict=True)]
        gathered = self.layout.gather_whole(level, rest)
        read: Sequence[np.ndarray | Mode0Manifests | PackedBlobs | None] = gathered
        if manifests:  # what zarr read: 1-D vlen arrays packed
            read = [_packed(r) for r in gathered]
        return [decoded.get(p, r) for p, r in zip(paths, read, strict=True)]

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
        whole = self.vlen_rows_direct(level, path, arr) is not None
        values = not whole and self._values_direct(level, path, arr, chunk_shape)
        items: Literal["objects", "manifests", "values"] | None = (
            ("manifests" if manifests else "objects") if whole else "values" if values else None
        )
        pieces = self.checked_chunks(level, path, arr, chunk_shape, cells, items)
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
        """The chunk shape of a plain array whose chunks :meth:`checked_chunks` can read
        (a regular grid, not sharded); ``None`` otherwise."""
        codecs = (self.layout.doc(f"{level}/{path}") or {}).get("codecs") or []
        if not isinstance(codecs, list) or not codecs:
            return None
        chunk_shape = getattr(arr.metadata.chunk_grid, "chunk_shape", None)
        if chunk_shape is None or any(
            c.get("name") == "sharding_indexed" for c in codecs if isinstance(c, dict)
        ):
            return None
        return tuple(int(c) for c in chunk_shape)

    def vlen_rows_direct(self, level: int, path: str, arr: AsyncArray[Any]) -> int | None:
        """Rows per chunk of a 1-D vlen-bytes plain array decoded here, chunk by chunk
        (:meth:`checked_chunks`); ``None`` when zarr must read it."""
        chunk_shape = self._plain_chunking(level, path, arr)
        codecs = (self.layout.doc(f"{level}/{path}") or {}).get("codecs") or []
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
        codecs = (self.layout.doc(f"{level}/{path}") or {}).get("codecs") or []
        first = codecs[0] if codecs and isinstance(codecs[0], dict) else {}
        endian = (first.get("configuration") or {}).get("endian", "little")
        return (
            len(chunk_shape) == 1
            and len(arr.shape) == 1
            and arr.dtype.kind in "biuf"
            and first.get("name") == "bytes"
            and (endian == "little" or arr.dtype.itemsize == 1)
            and all(isinstance(c, dict) and c.get("name") in DIRECT_CODECS for c in codecs[1:])
        )

    def checked_chunks(
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
        codecs = (self.layout.doc(f"{level}/{path}") or {}).get("codecs") or []
        encode = arr.metadata.encode_chunk_key
        keys = [f"{level}/{path}/{encode(tuple(int(x) for x in c))}" for c in cells]
        count = int(np.prod(chunk_shape, dtype=object)) if chunk_shape else 1
        fixed = arr.dtype.kind in "biuf"
        max_bytes = count * arr.dtype.itemsize if fixed else None
        vlen = not fixed and isinstance(codecs[0], dict) and codecs[0].get("name") == "vlen-bytes"

        key_ndim = self.layout.key_ndim(level)

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
                raise self.layout.error(f"{key}: {exc.reason}", level, path) from None

        raws = self.layout.io.fetch_many(keys)
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
            fill = np.full(count, b"", object)
        return [fill if r is None else decoded[i] for i, r in enumerate(raws)]


def _packed(values: np.ndarray | None) -> np.ndarray | PackedBlobs | None:
    """A 1-D object array of vlen-bytes elements (what zarr reads) as :class:`PackedBlobs`;
    anything else as it is."""
    if values is None or values.dtype != object or values.ndim != 1:
        return values
    return PackedBlobs.from_items([cell_value(v) or b"" for v in values.tolist()])
