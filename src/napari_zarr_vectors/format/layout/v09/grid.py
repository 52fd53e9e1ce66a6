"""The grid arrays of a 0.9 level: one vlen-bytes Zarr array per logical array, one
element per spatial chunk (FORMAT09 §2-§3), each placed by its own ``chunk_grid_origin``
and bounds-checked against its own shape (FORMAT09 §2.5); which of their cells hold data,
and reading those cells.

Reading cells
-------------
zarr opens every array (metadata, chunk key encoding, codecs) and reads every array that is
sharded or otherwise non-trivial, with one coordinate selection per array, all arrays of a
request gathered on zarr's event loop. Arrays whose chunks hold exactly one cell and whose
codec chain is ``vlen-bytes`` followed only by bytes-to-bytes codecs (what the 0.9.2 type
writers produce) take a direct path: their chunk keys (from zarr's own key encoding) are
fetched in one batch through :class:`~napari_zarr_vectors.format.io.StoreIO` and the
one-element vlen frame is unpacked in :mod:`.cells`: through zarr's per-chunk pipeline a
full read of a 1000-cell, 2M-point level took ~0.9 s, this way ~0.09 s. Sharded arrays of
one-cell inner chunks are read without zarr too (:mod:`.shards`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, overload

import numpy as np
from zarr.core.array import AsyncArray
from zarr.core.sync import sync
from zarr.storage import StorePath

from ...chunks import ChunkTable
from ...discovery import MAX_ENUMERATED_CHUNKS
from ...errors import ZVFetchError, ZVFormatError
from ...io import map_parallel
from ...validate import MAX_COORD, check_zarr_array_doc, int_list
from ..base import Layout, PayloadSink
from ..keys import parse_chunk_keys, sort_chunks
from .cells import DIRECT_CODECS, cell_value, direct_cell, read_payload_into
from .shards import ShardPlan, read_sharded, shard_plan


@dataclass(frozen=True)
class GridArray:
    """One opened grid array: zarr handle, grid placement and how its cells are read."""

    path: str
    array: AsyncArray[Any]
    origin: np.ndarray  # (key_ndim,) chunk coordinate of cell 0
    shape: np.ndarray  # (key_ndim,)
    attrs: dict[str, Any]
    direct: tuple[dict[str, Any], ...] | None  # bytes-to-bytes codecs, None = read via zarr
    #: sharded arrays of one-cell inner chunks read without zarr (:mod:`.shards`); None =
    #: not such an array
    shard: ShardPlan | None = None
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


def open_array(layout: Layout, path: str, level: int | None) -> AsyncArray[Any] | None:
    """The zarr array at ``path`` of ``layout``'s store (``None`` when there is no node),
    built from the layout's cached ``zarr.json`` so that metadata is fetched once per
    array."""
    doc = layout.doc(path)
    if doc is None:
        return None
    if doc.get("node_type") != "array":
        raise layout.error(f"{path} is a Zarr {doc.get('node_type')}, not an array", level)
    check_zarr_array_doc(doc, layout.src(path, level))
    try:
        # (zarr's stubs want its TypedDict; check_zarr_array_doc checked the doc)
        arr: AsyncArray[Any] = AsyncArray(metadata=doc, store_path=StorePath(layout.io.store, path))  # type: ignore[call-overload]
    except Exception as exc:  # zarr raises many types for malformed metadata
        raise layout.error(f"cannot open the Zarr array: {exc}", level, path) from None
    return arr


class GridArrays:
    """The grid arrays of a 0.9 store's levels, opened once each: which of their cells hold
    data (:meth:`list_chunks`) and their cells' payloads (:meth:`read`)."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self._lock = threading.Lock()
        self._grids: dict[str, GridArray | None] = {}
        self._listings: dict[str, np.ndarray] = {}
        self._listed: dict[str, ChunkTable] = {}  # nonempty_chunks lookups

    # -- opening -----------------------------------------------------------------------
    def open(self, level: int, array: str) -> GridArray | None:
        """The grid array ``array`` of ``level`` (``None`` when the level has none)."""
        path = f"{level}/{array}"
        with self._lock:
            if path in self._grids:
                return self._grids[path]
        arr = open_array(self.layout, path, level)
        grid = None
        if arr is not None:
            grid = self._make(level, array, path, arr)
        with self._lock:
            self._grids[path] = grid
        return grid

    def _make(self, level: int, array: str, path: str, arr: AsyncArray[Any]) -> GridArray:
        knd = self.layout.key_ndim(level)
        attrs = self.layout.attrs(path) or {}
        src = self.layout.src(path, level, array)
        shape = np.asarray(int_list(list(arr.shape), "shape", src, None, 0, MAX_COORD), np.int64)
        if shape.size != knd:
            raise self.layout.error(
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
            raise self.layout.error(
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
        doc = self.layout.doc(path) or {}
        codecs = [c if isinstance(c, dict) else {"name": c} for c in doc.get("codecs") or []]
        grid_doc = doc.get("chunk_grid")
        grid_cfg = (grid_doc.get("configuration") if isinstance(grid_doc, dict) else None) or {}
        one_cell = isinstance(grid_cfg, dict) and grid_cfg.get("chunk_shape") == [1] * knd
        direct = None
        if (
            one_cell
            and codecs
            and codecs[0].get("name") == "vlen-bytes"
            and all(c.get("name") in DIRECT_CODECS for c in codecs[1:])
        ):
            direct = tuple(codecs[1:])
        return GridArray(
            path, arr, origin, shape, attrs, direct, shard_plan(codecs, grid_cfg, knd), listed
        )

    # -- which cells hold data ---------------------------------------------------------
    def list_chunks(self, level: int, array: str = "vertices") -> np.ndarray:
        path = f"{level}/{array}"
        with self._lock:
            if path in self._listings:
                return self._listings[path]
        knd = self.layout.key_ndim(level)
        grid = self.open(level, array)
        if grid is None and array == "vertices" and self.layout.levels[level].vertex_count > 0:
            raise self.layout.error(
                f"the level declares {self.layout.levels[level].vertex_count} vertices and has no "
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

    def _scan(self, level: int, array: str, grid: GridArray) -> np.ndarray:
        """Non-empty cells of an array that has no ``nonempty_chunks`` attribute: list its
        chunk (or shard) files, then read the cells they cover and keep the non-empty ones."""
        if not self.layout.io.listable:
            return self._scan_grid(level, array, grid)
        meta = grid.array.metadata
        enc = meta.chunk_key_encoding
        sep = getattr(enc, "separator", "/")
        prefix = "c" + sep if getattr(enc, "name", "default") == "default" else ""
        chunk_shape = np.asarray(meta.chunk_grid.chunk_shape, dtype=np.int64)

        async def keys() -> list[str]:
            return [k async for k in self.layout.io.store.list_prefix(grid.path + "/")]

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
        knd = self.layout.key_ndim(level)
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
        values = self.read(level, [(array, candidates)])[0]
        # a cell that cannot be read is not empty: listed, its read reports it
        keep = np.array([v is not None for v in values], dtype=bool)
        return sort_chunks(candidates[keep])

    def _scan_grid(self, level: int, array: str, grid: GridArray) -> np.ndarray:
        """Non-empty cells of an array without ``nonempty_chunks`` in a store that cannot be
        listed: read every cell of the array's grid (absent cells are empty)."""
        count = int(np.prod(grid.shape))
        if count > MAX_ENUMERATED_CHUNKS:
            raise self.layout.error(
                f"the array has no nonempty_chunks and its grid of {count} cells is too large "
                "to scan without a listing; read by bbox or from a listable location",
                level,
                array,
            )
        axes = [np.arange(n, dtype=np.int64) for n in grid.shape.tolist()]
        mesh = np.meshgrid(*axes, indexing="ij")
        candidates = np.stack([m.reshape(-1) for m in mesh], axis=1) + grid.origin
        values = self.read(level, [(array, candidates)])[0]
        keep = np.array([v is not None for v in values], dtype=bool)
        return sort_chunks(candidates[keep])

    # -- reading cells -----------------------------------------------------------------
    def in_place(self, level: int, array: str) -> bool:
        """Whether the cells of ``array`` are local plain vlen-bytes files (no compressor,
        not sharded), read from their files straight into a sink's memory."""
        grid = self.open(level, array)
        return grid is not None and grid.direct == () and self.layout.io.local_path("") is not None

    def read_payloads_into(
        self, level: int, array: str, chunks: np.ndarray, sink: PayloadSink
    ) -> np.ndarray:
        """:meth:`~napari_zarr_vectors.format.layout.base.Layout.read_payloads_into` of
        an array whose cells are read :meth:`in_place`."""
        done = np.zeros(len(chunks), dtype=bool)
        grid = self.open(level, array)
        if grid is None:
            return done
        chunks = np.asarray(chunks, dtype=np.int64).reshape(-1, self.layout.key_ndim(level))
        cells, inside = grid.locate(chunks)
        pos = np.flatnonzero(inside)
        for i, key in zip(pos.tolist(), grid.keys(cells[pos]), strict=True):
            path = self.layout.io.local_path(key)
            done[i] = path is not None and read_payload_into(path, i, sink)
        return done

    @overload
    def read(
        self,
        level: int,
        requests: Sequence[tuple[str, np.ndarray]],
        view: Literal[False] = False,
    ) -> list[list[bytes | ZVFormatError | None]]: ...
    @overload
    def read(
        self, level: int, requests: Sequence[tuple[str, np.ndarray]], view: bool
    ) -> list[list[bytes | memoryview | ZVFormatError | None]]: ...
    def read(
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
        direct: list[tuple[int, int, GridArray]] = []  # (request, position, grid) per key
        keys: list[str] = []
        via_zarr: dict[int, tuple[GridArray, np.ndarray, np.ndarray]] = {}
        sharded: list[tuple[int, np.ndarray, np.ndarray, GridArray]] = []
        for r, (array, chunks) in enumerate(requests):
            grid = self.open(level, array)
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
            raws = self.layout.io.fetch_many(keys)
            codecs = [g.direct for _, _, g in direct]
            if any(codecs):  # decompression releases the GIL: the cells decode in parallel
                nbytes = sum(len(r) for r in raws if isinstance(r, bytes))
                cell_values = map_parallel(
                    direct_cell, raws, codecs, [view] * len(raws), nbytes=nbytes
                )
            else:  # plain vlen cells are views of their bytes: threads would only cost
                cell_values = [direct_cell(r, (), view) for r in raws]
            for (r, p, _), value, key in zip(direct, cell_values, keys, strict=True):
                if isinstance(value, ZVFormatError):  # (a failed fetch is one too)
                    array, chunks = requests[r]
                    value = value.located(
                        store=self.layout.io.name,
                        level=level,
                        array=array,
                        chunk=chunks[p],
                        key=key,
                    )
                out[r][p] = value

        if sharded:
            read_sharded(self.layout.io, level, requests, sharded, out)

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
                            store=self.layout.io.name,
                            level=level,
                            array=array,
                            chunk=chunks[p],
                            key=file,
                        )
                    else:
                        out[r][p] = ZVFormatError(
                            f"cannot read the cell: {type(value).__name__}: {value}",
                            store=self.layout.io.name,
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
        grid = self.open(level, array) if empty else None
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
                store=self.layout.io.name,
                level=level,
                array=array,
                chunk=chunks[p],
                key=key,
            )

    @staticmethod
    async def _zarr_cells(grid: GridArray, cells: np.ndarray) -> list[bytes | BaseException | None]:
        """Read ``cells`` of one array with a single coordinate selection; when that fails,
        cell by cell so that only the broken cells report an error."""
        if len(cells) == 0:
            return []
        try:
            values = await grid.array.get_coordinate_selection(tuple(cells.T))
            return [cell_value(v) for v in np.asarray(values, dtype=object).reshape(-1)]
        except Exception:  # noqa: BLE001 - isolate the failing cells below
            pass
        singles = await asyncio.gather(
            *(grid.array.getitem(tuple(int(x) for x in c)) for c in cells),
            return_exceptions=True,
        )
        return [s if isinstance(s, BaseException) else cell_value(s) for s in singles]
