"""The arrays of a dense layout (:mod:`.dense`): grid-shaped arrays, one cell per spatial
chunk, opened once each and read cell by cell through zarr's array API, their compressed
frames checked first; and the plain arrays beside them, read whole."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
from zarr.core.array import AsyncArray
from zarr.core.sync import sync
from zarr.storage import StorePath

from ..codecs import check_compressed_frame
from ..errors import ZVFormatError
from ..validate import MAX_COORD, check_whole_read, check_zarr_array_doc, int_list
from .base import Layout, decoded_chunk_shape

#: Largest payload (bytes) one cell may decode to.
MAX_CELL_BYTES = 1 << 30
#: Most Zarr chunks the payload of one cell may span (the seed stores one per cell).
MAX_CELL_CHUNKS = 1 << 8

#: where the seed (``attributes/``) and the writers (``vertex_attributes/``) keep vertex
#: attributes
VERTEX_ATTRIBUTE_DIRS = ("attributes", "vertex_attributes")


class DenseArrays:
    """The arrays of a dense store's levels, by logical name (``vertex_attributes/x`` may
    live in the seed's ``attributes/x``)."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self._lock = threading.Lock()
        self._arrays: dict[str, AsyncArray[Any] | None] = {}
        self._origins: dict[str, np.ndarray] = {}

    def physical(self, level: int, array: str) -> str:
        """Level-relative path of a logical array (``vertex_attributes/x`` may live in the
        seed's ``attributes/x``)."""
        if array.startswith("vertex_attributes/"):
            name = array.split("/", 1)[1]
            for folder in VERTEX_ATTRIBUTE_DIRS:
                if self.layout.doc(f"{level}/{folder}/{name}") is not None:
                    return f"{folder}/{name}"
        return array

    def open(self, level: int, array: str) -> AsyncArray[Any] | None:
        path = f"{level}/{self.physical(level, array)}"
        with self._lock:
            if path in self._arrays:
                return self._arrays[path]
        doc = self.layout.doc(path)
        arr = None
        if doc is not None:
            if doc.get("node_type") != "array":
                raise self.layout.error(f"{path} is not a Zarr array", level, array)
            check_zarr_array_doc(doc, self.layout.src(path, level, array))
            try:
                # (zarr's stubs want its TypedDict; check_zarr_array_doc checked the doc)
                arr = AsyncArray(metadata=doc, store_path=StorePath(self.layout.io.store, path))  # type: ignore[call-overload]
            except Exception as exc:  # zarr raises many types for malformed metadata
                raise self.layout.error(
                    f"cannot open the Zarr array: {exc}", level, array
                ) from None
        with self._lock:
            self._arrays[path] = arr
        return arr

    def grid_origin(self, level: int, array: str, arr: AsyncArray[Any]) -> np.ndarray:
        """Absolute chunk key of grid cell 0 of a grid array."""
        path = f"{level}/{self.physical(level, array)}"
        with self._lock:
            if path in self._origins:
                return self._origins[path]
        knd = self.layout.key_ndim(level)
        src = self.layout.src(path, level, array)
        attrs = self.layout.attrs(path) or {}
        if attrs.get("chunk_grid_origin") is not None:
            origin = np.asarray(
                int_list(attrs["chunk_grid_origin"], "chunk_grid_origin", src, knd, -MAX_COORD),
                np.int64,
            )
        else:  # seed 000 §6.2: cells count from bounds_min (see the level's grid_origin)
            origin = np.zeros(knd, np.int64)
        with self._lock:
            self._origins[path] = origin
        return origin

    def _cells(
        self, level: int, array: str, chunks: np.ndarray
    ) -> tuple[AsyncArray[Any] | None, np.ndarray, np.ndarray]:
        """``(array, cell indices, inside)`` of absolute chunk keys ``chunks``."""
        arr = self.open(level, array)
        knd = self.layout.key_ndim(level)
        if arr is None or len(chunks) == 0:
            return arr, np.empty((0, knd), np.int64), np.zeros(len(chunks), bool)
        if arr.ndim < knd:
            raise self.layout.error(
                f"array of rank {arr.ndim} on a {knd}-D chunk grid", level, array
            )
        grid = np.asarray(arr.shape[:knd], np.int64)
        cells = chunks - self.grid_origin(level, array, arr)
        inside = np.all((cells >= 0) & (cells < grid), axis=1)
        return arr, cells, inside

    def read(
        self, level: int, array: str, chunks: np.ndarray
    ) -> list[np.ndarray | ZVFormatError | None]:
        """The payload slice ``array[cell]`` of every chunk (``None`` outside the grid)."""
        arr, cells, inside = self._cells(level, array, chunks)
        out: list[np.ndarray | ZVFormatError | None] = [None] * len(chunks)
        if arr is None or not inside.any():
            return out
        knd = cells.shape[1]
        payload = int(np.prod(arr.shape[knd:], dtype=object)) * arr.dtype.itemsize
        if payload > MAX_CELL_BYTES:
            raise self.layout.error(f"one cell would hold {payload} bytes", level, array)
        inner = decoded_chunk_shape(arr)
        if inner is not None and len(inner) == arr.ndim:
            spans = np.prod([-(-n // c) for n, c in zip(arr.shape[knd:], inner[knd:], strict=True)])
            if spans > MAX_CELL_CHUNKS:  # zarr would visit every one of them, cell by cell
                raise self.layout.error(
                    f"one cell spans {int(spans)} chunks of the array", level, array
                )
        pos = self._precheck_cells(level, array, arr, cells, np.flatnonzero(inside).tolist(), out)

        async def one(cell: tuple[int, ...]) -> Any:
            return await arr.getitem(cell)

        async def run() -> list[Any]:
            return await asyncio.gather(
                *(one(tuple(int(c) for c in cells[p])) for p in pos), return_exceptions=True
            )

        for p, res in zip(pos, sync(run()), strict=True):
            if isinstance(res, BaseException):
                out[p] = self.layout.error(
                    f"cannot read the cell: {type(res).__name__}: {res}", level, array, chunks[p]
                ).located(key=self._file_of(level, array, arr, cells[p]))
            else:
                out[p] = np.asarray(res)
        return out

    def _file_of(
        self, level: int, array: str, arr: AsyncArray[Any], cell: np.ndarray
    ) -> str | None:
        """Store key of the Zarr chunk file holding ``cell`` (what an error about it names)."""
        chunk_shape = getattr(arr.metadata.chunk_grid, "chunk_shape", None)
        if chunk_shape is None:
            return None
        index = (*(int(x) for x in cell), *(0,) * (arr.ndim - len(cell)))
        chunk = tuple(i // int(c) for i, c in zip(index, chunk_shape, strict=True))
        path = f"{level}/{self.physical(level, array)}"
        return f"{path}/{arr.metadata.encode_chunk_key(chunk)}"

    def _precheck_cells(
        self,
        level: int,
        array: str,
        arr: AsyncArray[Any],
        cells: np.ndarray,
        pos: list[int],
        out: list[np.ndarray | ZVFormatError | None],
    ) -> list[int]:
        """Fetch the Zarr chunks of cells ``pos`` and check their compressed frames before
        zarr decodes them (c-blosc reads out of bounds on a corrupt frame, decompressors
        allocate what a frame declares); failing cells get an error in ``out``. Returns the
        positions left to read. Cells whose chunk is not one per cell are not checked."""
        doc = self.layout.doc(f"{level}/{self.physical(level, array)}") or {}
        codecs = doc.get("codecs")
        chunk_shape = getattr(arr.metadata.chunk_grid, "chunk_shape", None)
        knd = cells.shape[1]
        if not isinstance(codecs, list) or chunk_shape is None or not pos:
            return pos
        if any(int(c) != 1 for c in chunk_shape[:knd]) or any(
            int(c) != int(n) for c, n in zip(chunk_shape[knd:], arr.shape[knd:], strict=True)
        ):
            return pos
        tail = (0,) * (arr.ndim - knd)
        encode = arr.metadata.encode_chunk_key
        path = f"{level}/{self.physical(level, array)}"
        keys = [f"{path}/{encode((*(int(x) for x in cells[p]), *tail))}" for p in pos]
        max_bytes = int(np.prod(chunk_shape, dtype=object)) * arr.dtype.itemsize
        keep = []
        for p, raw, key in zip(pos, self.layout.io.fetch_many(keys), keys, strict=True):
            if raw is None:  # no chunk: all fill
                out[p] = np.full(tuple(arr.shape[knd:]), arr.metadata.fill_value, arr.dtype)
                continue
            try:
                if isinstance(raw, ZVFormatError):
                    raise raw
                check_compressed_frame(raw, codecs, max_bytes)
            except ZVFormatError as exc:
                out[p] = exc.located(store=self.layout.io.name, level=level, array=array, key=key)
                continue
            keep.append(p)
        return keep

    def stored_cells(
        self, level: int, array: str, arr: AsyncArray[Any], knd: int
    ) -> np.ndarray | None:
        """Grid cells that have a stored Zarr chunk (``None`` when the store cannot list):
        zarr does not write chunks that are all fill value, so the others are empty."""
        if not self.layout.io.listable:
            return None
        meta = arr.metadata
        chunk_shape = getattr(meta.chunk_grid, "chunk_shape", None)
        if chunk_shape is None or any(int(c) != 1 for c in chunk_shape[:knd]):
            return None
        enc = meta.chunk_key_encoding
        sep = getattr(enc, "separator", "/")
        prefix = "c" + sep if getattr(enc, "name", "default") == "default" else ""
        path = f"{level}/{self.physical(level, array)}/"

        async def keys() -> list[str]:
            return [k async for k in self.layout.io.store.list_prefix(path)]

        out = []
        for k in sync(keys()):
            rel = k[len(path) :]
            if not rel.startswith(prefix) or rel.endswith("zarr.json"):
                continue
            try:
                parts = [int(p) for p in rel[len(prefix) :].split(sep)]
            except ValueError:
                continue
            if len(parts) == arr.ndim:
                out.append(parts[:knd])
        return np.asarray(out, np.int64).reshape(-1, knd)

    def whole(self, level: int, arrays: Sequence[str]) -> list[np.ndarray | None]:
        """Whole contents of plain (non-grid) arrays, read concurrently."""
        opened = [self.open(level, a) for a in arrays]
        for a, arr in zip(arrays, opened, strict=True):
            if arr is not None:
                self.check_whole(level, a, arr)
        return self.layout.gather_whole(level, list(zip(arrays, opened, strict=True)))

    def check_whole(self, level: int, array: str, arr: AsyncArray[Any]) -> None:
        """Refuse a whole read of ``arr`` whose declared size is beyond what may be read."""
        src = self.layout.src(f"{level}/{self.physical(level, array)}", level, array)
        check_whole_read(arr.shape, arr.dtype.itemsize, src, decoded_chunk_shape(arr))
