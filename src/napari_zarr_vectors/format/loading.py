"""Fetch and decode the per-chunk arrays of a level (vertices, fragments, attributes)."""

from __future__ import annotations

import warnings
from concurrent.futures import Future, wait
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from .cache import EMPTY, ChunkCache, Unreadable
from .chunks import ChunkData
from .decode.arrays import decode_attribute, decode_rows, parse_attribute_dtype, parse_dtype
from .decode.draco import decode_draco
from .decode.fragments import FragmentIndex, decode_fragment_index
from .errors import (
    ZVChunkWarning,
    ZVFetchError,
    ZVFormatError,
    ZVUnsupportedDtypeError,
)
from .layout.base import Layout
from .metadata import LevelInfo
from .query import column_extremes
from .validate import Source, int_field, int_list, list_field, str_field

#: Most values per row a vertex attribute may declare.
MAX_ROW_WIDTH = 1 << 16

#: Marker of a chunk whose bytes could not be fetched: left out and never cached, so that
#: a later read asks for it again.
FAILED = object()

#: Chunks a read of a local store without a cache fetches and decodes at a time: the
#: fetched bytes of one batch are freed once the batch after it is fetched (two batches
#: are held at most, see :func:`_load_packed`).
READ_BATCH = 8
#: The same for a remote store, where a batch is also the concurrency of the fetch.
REMOTE_READ_BATCH = 32

#: Fewest rows of a level (its ``vertex_count``) whose batches are fetched on a side
#: thread while the one before is copied (smaller levels: one after another).
PIPELINE_MIN_ROWS = 1 << 18

#: Most rows a read's packed arrays are allocated for up front (see :func:`_capacity`).
MAX_PACKED_ROWS = 1 << 31

#: Fewest bytes of vertices a read's chunks hold on average for their payloads to be read
#: in place (:func:`_rows_sink`): below, a cell's two more system calls cost more than the
#: copy they save (the coarse levels of a pyramid hold a few rows a chunk)
IN_PLACE_MIN_BYTES = 1 << 16

_NO_ROWS = np.empty(0, np.float32)


@dataclass(frozen=True)
class AttributeSpec:
    """How to decode one vertex attribute: dtype, declared width, dictionary categories."""

    name: str
    array: str
    dtype: np.dtype
    width: int | None
    categories: tuple[Any, ...] | None
    fill: int | None

    @classmethod
    def from_meta(
        cls, name: str, array: str, meta: dict[str, Any], generation: str, src: Source | None = None
    ) -> AttributeSpec:
        """The spec of one vertex attribute from its array's ZV attributes (validated:
        a corrupt field raises :class:`ZVFormatError` naming ``src``)."""
        src = src or Source(None, f"{array}/zarr.json")
        row_shape = meta.get("row_shape")
        width: int | None = None
        if row_shape is not None:
            row_shape = int_list(row_shape, "row_shape", src, None, 0, MAX_ROW_WIDTH)
        channels = list_field(meta, "channel_names", src, None)
        if row_shape is not None and len(row_shape) == 1 and row_shape[0] > 1:
            width = row_shape[0]
        elif channels:
            if len(channels) > MAX_ROW_WIDTH:
                raise src.error("channel_names", f"names {len(channels)} channels")
            width = len(channels)
        # 0.7 records no width at all and 0.9 polylines record row_shape [] for
        # multi-channel data (FORMAT09 §11.5): derive it from the byte length.
        encoding = str_field(meta, "encoding", src, "raw")
        categories = (
            tuple(list_field(meta, "categories", src)) if encoding == "dictionary" else None
        )
        fill = int_field(meta, "_FillValue", src, None, -(1 << 63), (1 << 64) - 1)
        return cls(
            name,
            array,
            parse_attribute_dtype(str_field(meta, "dtype", src, "float32")),
            width,
            categories,
            fill,
        )


def attribute_specs(layout: Layout, level: int) -> list[AttributeSpec]:
    """Decoding specs of every readable vertex attribute present at ``level``. One whose
    dtype cannot be decoded (``object``: :data:`.decode.arrays.OBJECT_DTYPE_REASON`) is left
    out with a :class:`~.errors.ZVAttributeWarning` naming it, its array and level."""
    specs = []
    for name in layout.list_attributes(level, "vertex"):
        array = f"vertex_attributes/{name}"
        meta = layout.array_attributes(level, array) or {}
        src = Source(layout.io.name, f"{level}/{array}/zarr.json", level, array)
        try:
            specs.append(AttributeSpec.from_meta(name, array, meta, layout.generation, src))
        except ZVUnsupportedDtypeError as exc:
            error = exc.located(store=layout.io.name, level=level, array=array)
            layout.left_out("vertex", name, error)
    return specs


def _single_fragment(n_rows: int) -> FragmentIndex:
    one = np.ones(1, dtype=bool)
    return FragmentIndex(
        one,
        np.zeros(1, np.int64),
        np.array([n_rows], np.int64),
        np.full(1, -1, np.int64),
        np.zeros(1, np.int64),
        np.empty(0, np.int64),
    )


#: Fewest bits a Draco writer quantises positions to that a read takes as plausible: a
#: decoded vertex may lie up to one quantisation step (the blob's extent over ``2**bits - 1``)
#: past its chunk (zarr-vectors writes 11 bits; Draco's own default is 11 or 14).
DRACO_MIN_QUANTIZATION_BITS = 8


@dataclass(frozen=True)
class _FarRows:
    """Rows of a chunk that lie far outside it (:func:`_check_in_chunk`): how many, one of
    them and the box they should lie in, for the warning that says they were left out."""

    count: int
    total: int
    example: list[float]
    lo: list[float]
    hi: list[float]

    def message(self) -> str:
        return (
            f"{self.count} of {self.total} vertices lie far outside the chunk (e.g. "
            f"{self.example}, the chunk spans {self.lo} .. {self.hi})"
        )


#: A chunk's box (:func:`_plausible_boxes`): its bounds ``lo``, ``hi`` and the box its
#: vertices may plausibly lie in, ``below`` .. ``above``, per axis.
_Box = tuple[list[float], list[float], list[float], list[float]]


def _plausible_boxes(chunks: np.ndarray, info: LevelInfo, ndim: int) -> list[_Box] | None:
    """The box of every chunk of ``chunks`` (its bounds and the box its vertices may
    plausibly lie in), computed for all of them at once and handed out as Python floats
    (a few numpy calls on 3-vectors cost more than the extremes of a coarse level's chunk
    of a few rows); ``None`` when the chunks' keys do not give their boxes.

    What real writers put in a chunk, and so what the box allows: each vertex in the chunk
    ``floor((p - origin) / chunk_shape)`` (zarr-vectors 0.7 and 0.9.2 at every level, the
    zarr-vectors-tools ingesters at level 0); a Draco blob's vertices up to one quantisation
    step past it (added by :func:`_check_in_chunk`); on a coarse level whose bins are larger
    than its chunks, zarr-vectors-tools keys each metavertex (the centroid of a bin) by the
    level-0 chunks its source vertices came from, so it lies in a bin that meets the chunk:
    there the box is the chunk grown to the level's bin grid. A slack of a millionth of the
    coordinates' magnitude (and 1e-5 of a chunk) absorbs rounding at chunk edges."""
    edge = np.asarray(info.chunk_shape, np.float64)
    if edge.size != ndim or chunks.ndim != 2 or chunks.shape[1] < ndim:
        return None
    origin = info.chunk_origin
    lo = chunks[:, chunks.shape[1] - ndim :] * edge
    lo += origin
    hi = lo + edge
    low, high = lo, hi
    if info.bin_shape.size == ndim:
        bins = np.asarray(info.bin_shape, np.float64)
        grow = (bins > edge) & (edge > 0)  # bins wider than chunks: the bins that meet it
        if grow.any():
            low, high = lo.copy(), hi.copy()
            o, b = origin[grow], bins[grow]
            low[:, grow] = o + np.floor((lo[:, grow] - o) / b) * b
            high[:, grow] = o + np.ceil((hi[:, grow] - o) / b) * b
    slack = 1e-6 * (np.abs(lo) + np.abs(hi)) + 1e-5 * edge
    return list(
        zip(
            lo.tolist(),
            hi.tolist(),
            (low - slack).tolist(),
            (high + slack).tolist(),
            strict=True,
        )
    )


def _check_in_chunk(
    positions: np.ndarray, box: _Box | None, encoding: str = "raw"
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray] | None, _FarRows | None]:
    """Check that the chunk's vertices lie where a writer puts them (``box``, from
    :func:`_plausible_boxes`; ``None``: unchecked); returns the rows, their ``(min, max)``
    per column (:func:`.query.column_extremes`; ``None`` without rows) and what lay far
    outside.

    Raises :class:`ZVFormatError` when every finite vertex lies far outside the chunk: its
    bytes are not its own (another chunk's, zeros). When only some do (a damaged exponent),
    those rows become NaN (missing, as stored NaN is) and the rest of the chunk is read: the
    returned :class:`_FarRows` says how many, for the caller's warning. Non-finite
    coordinates are left as they are."""
    if not len(positions):
        return positions, None, None
    # a NaN extreme fails the tests below and takes the vertex-by-vertex way
    low, high = column_extremes(positions)
    if box is None:
        return positions, (low, high), None
    lo, hi, below, above = box
    if encoding == "draco":  # one quantisation step more
        extent = float(np.nanmax(high - low)) if np.isfinite(high - low).any() else 0.0
        quantum = extent / ((1 << DRACO_MIN_QUANTIZATION_BITS) - 1)
        below = [b - quantum for b in below]
        above = [a + quantum for a in above]
    if all(x >= b for x, b in zip(low.tolist(), below, strict=True)) and all(
        x <= a for x, a in zip(high.tolist(), above, strict=True)
    ):
        return positions, (low, high), None
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(positions)
        beyond = (positions < np.array(below)) | (positions > np.array(above))
        far = np.any(beyond & finite, axis=1)
    if not far.any():
        return positions, (low, high), None
    first = positions[np.flatnonzero(far)[0]].astype(np.float64).tolist()
    rows = _FarRows(int(far.sum()), len(positions), first, lo, hi)
    if far.sum() == np.count_nonzero(finite.all(axis=1) | far):
        raise ZVFormatError(f"{rows.message()}: these bytes are not this chunk's")
    if not positions.flags.writeable:  # a view of fetched bytes (rows read in place: kept)
        positions = np.array(positions)
    positions[far] = np.nan
    return positions, column_extremes(positions), rows


def _attribute(
    raw: bytes | memoryview | ZVFormatError | None, spec: AttributeSpec, n: int
) -> np.ndarray | ZVFormatError | None:
    """One chunk's values of a vertex attribute, or the error that keeps them from being read
    (a chunk with vertices and no values has lost them); ``None`` for an empty chunk."""
    if raw is None:
        if n == 0:
            return None
        return ZVFormatError(f"the chunk holds {n} vertices and no values of this attribute")
    if isinstance(raw, ZVFormatError):
        return raw
    try:
        return decode_attribute(raw, spec.dtype, n, spec.width)
    except ZVFormatError as exc:
        return exc


def load_chunks(
    layout: Layout,
    level: int,
    chunks: np.ndarray,
    specs: list[AttributeSpec],
    strict: bool = False,
    cache: ChunkCache | None = None,
    beside: bool = False,
) -> list[ChunkData]:
    """Fetch and decode ``chunks`` (in the given order); a chunk that fails to decode is
    skipped with a :class:`ZVChunkWarning` (or raises with ``strict=True``). Missing chunks
    are left out. With a ``cache``, only chunks it does not hold are fetched. ``beside``:
    other work of the read (e.g. its object index) runs on a side thread meanwhile, so a
    local read fetches no batch ahead (see :func:`_load_packed`)."""
    chunks = np.asarray(chunks, dtype=np.int64)
    if cache is None:
        return _load_packed(layout, level, chunks, specs, strict, beside)
    names = tuple(s.name for s in specs)
    keys = [(layout.io.name, level, tuple(c), names) for c in chunks.tolist()]
    found: list[object | None] = [cache.get(k) for k in keys]
    missing = [i for i, v in enumerate(found) if v is None]
    if missing:
        fresh = _fetch_and_decode(layout, level, chunks[missing], specs, strict)
        for i, value in zip(missing, fresh, strict=True):
            if value is FAILED:
                continue
            found[i] = EMPTY if value is None else value
            cache.put(keys[i], found[i])
    return [v for v in found if isinstance(v, ChunkData)]


class _Packed:
    """Row-aligned arrays of one dtype and row shape appended one after another into a
    single array allocated once for ``capacity`` rows (rows never written cost no memory:
    the pages of a large allocation are mapped when first written) and grown in place
    (``ndarray.resize``) only past it; :meth:`finish` trims it to the rows appended."""

    def __init__(self, first: np.ndarray, capacity: int) -> None:
        shape = first.shape[1:]
        try:
            self.array: np.ndarray = np.empty((capacity, *shape), dtype=first.dtype)
        except (MemoryError, ValueError):  # a capacity the machine refuses: grown as needed
            self.array = np.empty((0, *shape), dtype=first.dtype)
        self.rows = 0

    def fits(self, part: np.ndarray) -> bool:
        return bool(part.dtype == self.array.dtype and part.shape[1:] == self.array.shape[1:])

    def append(self, part: np.ndarray) -> tuple[int, int]:
        """Copy ``part`` in; its rows' ``(start, end)`` in :attr:`array`."""
        a = self.rows
        b = a + part.shape[0]
        if b > self.array.shape[0]:  # past the capacity (zero-fills the new rows: slower)
            # no view of the array exists until every part is in (see _load_packed)
            self.array.resize((b, *self.array.shape[1:]), refcheck=False)
        self.array[a:b] = part
        self.rows = b
        return a, b

    def finish(self) -> np.ndarray:
        """The array of the rows appended (the unused capacity released, without a copy)."""
        if self.rows < self.array.shape[0]:
            self.array.resize((self.rows, *self.array.shape[1:]), refcheck=False)
        return self.array


class _RowsSink:
    """Where a layout reads raw vertex payloads in place (a :class:`.layout.base.PayloadSink`):
    each chunk's rows at the end of the packed positions, within their capacity (a chunk
    past it, or whose payload is no whole number of rows, is read the ordinary way)."""

    def __init__(self, target: _Packed, row_bytes: int) -> None:
        self.target = target
        self.row_bytes = row_bytes  # (of the target's rows)
        #: ``(start, end)`` rows of every chunk (by its index in the batch) read in place
        self.spans: dict[int, tuple[int, int]] = {}

    def claim(self, i: int, nbytes: int) -> memoryview | None:
        if not self.row_bytes:
            return None
        rows, rest = divmod(nbytes, self.row_bytes)
        a = self.target.rows
        if rest or a + rows > self.target.array.shape[0]:
            return None
        self.target.rows = a + rows
        self.spans[i] = (a, a + rows)
        # (numpy's stubs give ndarray the buffer protocol only on Python >= 3.12)
        return memoryview(self.target.array[a : a + rows]).cast("B")  # type: ignore[arg-type]

    def drop(self, i: int) -> None:
        self.target.rows = self.spans.pop(i)[0]

    def take(self, batch: int) -> tuple[list[np.ndarray | None], dict[int, tuple[int, int]]]:
        """The rows read in place for each chunk of a batch of ``batch`` (``None``: read
        the ordinary way) and their spans; the sink is then empty for the next batch."""
        spans, self.spans = self.spans, {}
        rows: list[np.ndarray | None] = [None] * batch
        for i, (a, b) in spans.items():
            rows[i] = self.target.array[a:b]
        return rows, spans


def _capacity(layout: Layout, level: int) -> int:
    """Rows to allocate for a read's packed arrays: the level's ``vertex_count`` (every read
    of the level holds at most that many rows; a wrong count only costs growth), bounded."""
    count = layout.levels[level].vertex_count
    return int(count) if 0 < count <= MAX_PACKED_ROWS else 0


def _load_packed(
    layout: Layout,
    level: int,
    chunks: np.ndarray,
    specs: list[AttributeSpec],
    strict: bool,
    beside: bool = False,
) -> list[ChunkData]:
    """:func:`load_chunks` without a cache: :data:`READ_BATCH` chunks at a time
    (:data:`REMOTE_READ_BATCH` from a remote store), every
    chunk's positions and vertex attributes copied, as soon as they are decoded, into one
    array per name, so that a batch's fetched bytes are freed soon after (a whole read
    holds its rows once, not the fetched and the assembled copies side by side). The next
    batch is fetched on a side thread while one is decoded and copied (two batches at
    most are held), unless the store is local and ``beside`` is set: on 2 cores a third
    stream of work beside the read's two costs more than it overlaps (a whole 10M
    streamline read: ~20% slower, and ~10% more resident memory). The chunks' arrays are
    consecutive views of those arrays, which :meth:`.LoadedChunks.concatenated` returns
    without a copy."""
    out: list[ChunkData] = []
    packed: dict[str | None, _Packed] = {}
    spans: list[dict[str | None, tuple[int, int]]] = []
    capacity = _capacity(layout, level)
    size = REMOTE_READ_BATCH if layout.io.remote else READ_BATCH
    batches = [chunks[lo : lo + size] for lo in range(0, len(chunks), size)]

    sink = _rows_sink(layout, level, packed, capacity, len(chunks))
    fetch = partial(_fetch, layout, level, specs=specs, vertices=sink is None)

    # (small levels: a hand-over costs more than it overlaps)
    pipelined = capacity >= PIPELINE_MIN_ROWS and (layout.io.remote or not beside)
    ahead: Future[dict[str, list[bytes | memoryview | ZVFormatError | None]]] | None = None
    try:
        for k, batch in enumerate(batches):
            cells = fetch(batch) if ahead is None else ahead.result()
            ahead = None
            if pipelined and k + 1 < len(batches):
                ahead = layout.io.in_background(partial(fetch, batches[k + 1]))
            placed: dict[int, tuple[int, int]] = {}
            if sink is not None:  # the vertex rows read in place, the others fetched
                cells["vertices"], placed = _read_vertices(layout, level, batch, sink)
            # decoded here, not beside the fetch: what a chunk keeps (its fragment index)
            # is then never allocated between fetched buffers that are freed (on 2 cores
            # that left ~30% more resident memory)
            decoded = _decode(layout, level, batch, specs, strict, cells)
            del cells
            _append_batch(decoded, packed, capacity, out, spans, placed)
            del decoded
    finally:
        if ahead is not None and not ahead.cancel():  # a read that failed: no work left behind
            wait([ahead])
    arrays = {name: target.finish() for name, target in packed.items()}
    for c, span in zip(out, spans, strict=True):
        for name, (a, b) in span.items():
            if name is None:
                c.positions = arrays[None][a:b]
            else:
                c.attributes[name] = arrays[name][a:b]
    return out


def _rows_sink(
    layout: Layout, level: int, packed: dict[str | None, _Packed], capacity: int, n_chunks: int
) -> _RowsSink | None:
    """A sink for the level's vertex payloads read in place into the packed positions,
    when they are raw rows, there is a capacity to read them into and the ``n_chunks``
    chunks read hold :data:`IN_PLACE_MIN_BYTES` a chunk on average (``None``: they are
    fetched and copied)."""
    encoding, dtype = _vertex_encoding(layout, level)
    row_bytes = dtype.itemsize * layout.root.ndim
    if (
        encoding != "raw"
        or capacity * row_bytes < IN_PLACE_MIN_BYTES * n_chunks
        or not layout.reads_in_place(level, "vertices")
    ):
        return None
    packed[None] = _Packed(np.empty((0, layout.root.ndim), dtype), capacity)
    return _RowsSink(packed[None], row_bytes)


def _read_vertices(
    layout: Layout, level: int, batch: np.ndarray, sink: _RowsSink
) -> tuple[list[Any], dict[int, tuple[int, int]]]:
    """The ``vertices`` cells of a batch for :func:`_decode`: rows read in place where the
    layout can (:meth:`.Layout.read_payloads_into`), the others' payloads fetched; and the
    spans of the rows read in place (by index in the batch)."""
    done = layout.read_payloads_into(level, "vertices", batch, sink)
    in_place, placed = sink.take(len(batch))
    cells: list[Any] = in_place
    rest = np.flatnonzero(~done)
    if rest.size:
        fetched = layout.read_cell_views(level, ["vertices"], batch[rest])["vertices"]
        for i, raw in zip(rest.tolist(), fetched, strict=True):
            cells[i] = raw
    return cells, placed


def _append_batch(
    decoded: list[ChunkData | object | None],
    packed: dict[str | None, _Packed],
    capacity: int,
    out: list[ChunkData],
    spans: list[dict[str | None, tuple[int, int]]],
    placed: dict[int, tuple[int, int]],
) -> None:
    """Copy the rows of a batch's decoded chunks into ``packed`` (one array per name, see
    :func:`_load_packed`), the chunks to ``out`` and their rows' spans to ``spans``;
    ``placed``: the spans of positions read in place (by index in the batch)."""
    for i, c in enumerate(decoded):
        if not isinstance(c, ChunkData):
            continue
        span: dict[str | None, tuple[int, int]] = {}
        if i in placed:
            span[None] = placed[i]
        for name, part in [(None, c.positions), *c.attributes.items()]:
            if name in span:
                continue
            if name not in packed:
                packed[name] = _Packed(part, capacity)
            target = packed[name]
            if target.fits(part):
                span[name] = target.append(part)
        for name in span:  # the fetched bytes are freed now
            if name is None:
                c.positions = _NO_ROWS
            else:
                c.attributes[name] = _NO_ROWS
        out.append(c)
        spans.append(span)


def _fetch_and_decode(
    layout: Layout,
    level: int,
    chunks: np.ndarray,
    specs: list[AttributeSpec],
    strict: bool,
) -> list[ChunkData | object | None]:
    """Decoded chunks aligned with ``chunks``: ``None`` where empty, an :class:`Unreadable`
    where undecodable, :data:`FAILED` where the bytes could not be fetched."""
    return _decode(layout, level, chunks, specs, strict, _fetch(layout, level, chunks, specs))


def _fetch(
    layout: Layout,
    level: int,
    chunks: np.ndarray,
    specs: list[AttributeSpec],
    vertices: bool = True,
) -> dict[str, list[bytes | memoryview | ZVFormatError | None]]:
    """The payloads of ``chunks``' cells of every array :func:`_decode` decodes (those of
    ``vertices`` only with ``vertices``: else they are read in place)."""
    arrays = ["vertex_fragments", *(s.array for s in specs)]
    if vertices:
        arrays.insert(0, "vertices")
    return layout.read_cell_views(level, arrays, chunks)  # payloads decoded without a copy


def _vertex_encoding(layout: Layout, level: int) -> tuple[str, np.dtype]:
    """The encoding (``"raw"``, ``"draco"``) and dtype of the level's vertex payloads."""
    vmeta = layout.array_attributes(level, "vertices") or {}
    vsrc = Source(layout.io.name, f"{level}/vertices/zarr.json", level, "vertices")
    encoding = str_field(vmeta, "encoding", vsrc, "raw")
    try:
        return encoding, parse_dtype(str_field(vmeta, "dtype", vsrc, "float32"))
    except ZVFormatError as exc:
        raise exc.located(store=layout.io.name, level=level, array="vertices") from None


def _decode(
    layout: Layout,
    level: int,
    chunks: np.ndarray,
    specs: list[AttributeSpec],
    strict: bool,
    cells: dict[str, list[bytes | memoryview | ZVFormatError | None]],
) -> list[ChunkData | object | None]:
    """:func:`_fetch_and_decode` of the fetched ``cells``."""
    ndim = layout.root.ndim
    encoding, vdtype = _vertex_encoding(layout, level)
    boxes = _plausible_boxes(chunks, layout.levels[level], ndim)

    def decode(i: int) -> ChunkData | object | None:
        coords = chunks[i]
        array = "vertices"
        try:
            raw = cells["vertices"][i]
            if raw is None:
                return None
            if isinstance(raw, ZVFormatError):
                raise raw
            faces = None
            if isinstance(raw, np.ndarray):  # rows read in place (see _RowsSink)
                positions = raw
            elif encoding == "draco":
                positions, faces = decode_draco(bytes(raw), ndim)
            elif encoding == "raw":
                positions = decode_rows(raw, vdtype, ndim)
            else:
                raise ZVFormatError(f"unsupported vertex encoding {encoding!r}")
            box = None if boxes is None else boxes[i]
            positions, extent, far = _check_in_chunk(positions, box, encoding)
            if far is not None:
                err = ZVFormatError(f"{far.message()}: they are read as missing (NaN)")
                err = err.located(store=layout.io.name, level=level, array=array, chunk=coords)
                if strict:
                    raise err from None
                warnings.warn(str(err), ZVChunkWarning, stacklevel=4)
            n = positions.shape[0]
            array = "vertex_fragments"
            fraw = cells["vertex_fragments"][i]
            if isinstance(fraw, ZVFormatError):
                raise fraw
            if fraw is None or encoding == "draco":
                frags = _single_fragment(n)
            else:
                frags = decode_fragment_index(bytes(fraw), n)
            attrs: dict[str, np.ndarray] = {}
            if encoding != "draco":  # Draco reorders rows: raw attributes cannot be joined
                for spec in specs:
                    array = spec.array
                    araw = cells[spec.array][i]
                    if isinstance(araw, ZVFetchError):  # the whole chunk is asked for again
                        raise araw
                    value = _attribute(araw, spec, n)
                    if isinstance(value, ZVFormatError):  # only this chunk's values are lost
                        err = value.located(
                            store=layout.io.name, level=level, array=array, chunk=coords
                        )
                        if strict:
                            raise err from None
                        warnings.warn(
                            f"vertex attribute {spec.name!r} left out of one chunk: {err}",
                            ZVChunkWarning,
                            stacklevel=5,
                        )
                    elif value is not None:
                        attrs[spec.name] = value
            return ChunkData(
                np.asarray(coords, dtype=np.int64), positions, frags, attrs, faces, extent
            )
        except ZVFormatError as exc:
            err = exc.located(store=layout.io.name, level=level, array=array, chunk=coords)
            if strict:
                raise err from None
            warnings.warn(f"skipping chunk: {err}", ZVChunkWarning, stacklevel=5)
            return FAILED if isinstance(err, ZVFetchError) else Unreadable(str(err), err.key)

    # in this thread: the rows are views of the fetched bytes and their checks are a few
    # numpy passes; on the read threads (measured on 2 cores, beside the side thread that
    # fetches the next batch) they took 20-30% longer
    return [decode(i) for i in range(len(chunks))]
