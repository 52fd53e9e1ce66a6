"""Object manifests (FORMAT07 §5.7.1): ordered ``(chunk, fragment)`` references per object."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

import numpy as np

from ..errors import ZVFormatError
from .fragments import expand_ranges
from .vlen import PackedBlobs, blob_sizes


def _mode0_dtype(key_ndim: int) -> np.dtype:
    return np.dtype([("chunk", "<i8", (key_ndim,)), ("mode", "u1"), ("frag", "<i8")])


#: Manifests decoded together by :func:`decode_mode0_manifests` (its temporaries, a few
#: copies of their bytes, are bounded by this many manifests, not by the index).
MANIFEST_SLICE = 16384


def decode_mode0_manifests(
    manifests: Sequence[bytes], key_ndim: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Decode many manifests at once when every block of every one is mode 0 (what all
    known writers emit): ``(blocks per manifest, chunks (E, key_ndim), fragments (E,))``,
    chunks and fragments in int32 when every value fits (else int64). ``None`` when any
    manifest has another shape; decode those one by one instead. An empty blob (no
    manifest: the fill value) has no blocks. Packed manifests (:class:`.vlen.PackedBlobs`)
    are decoded from their buffer, without a copy; decoded ones
    (:class:`Mode0Manifests`) are returned as they are."""
    if isinstance(manifests, Mode0Manifests):
        return manifests.blocks, manifests.chunks, manifests.frags
    n = len(manifests)
    sizes = blob_sizes(manifests)
    record = 8 * key_ndim + 9
    stored = sizes > 0
    if n == 0 or np.any(stored & ((sizes < 4) | ((sizes - 4) % record != 0))):
        return None
    blocks = np.where(stored, (sizes - 4) // record, 0)
    # the results allocated once at their size and filled slice by slice
    chunks = np.empty((int(blocks.sum()), key_ndim), np.int32)
    frags = np.empty(len(chunks), np.int32)
    at = 0
    for raw, starts, part in _slices(manifests, sizes):
        decoded = _decode_mode0_slice(raw, starts, part, key_ndim)
        if decoded is None:
            return None
        end = at + len(decoded[1])
        chunks = _put(chunks, at, end, decoded[0])
        frags = _put(frags, at, end, decoded[1])
        at = end
    return blocks, chunks, frags


def _slices(
    manifests: Sequence[bytes], sizes: np.ndarray
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``(bytes, starts, sizes)`` of a few manifests at a time: the segments of packed
    manifests (no copy), else :data:`MANIFEST_SLICE` manifests joined."""
    if isinstance(manifests, PackedBlobs):
        yield from manifests.buffers()
        return
    for lo in range(0, len(manifests), MANIFEST_SLICE):
        part = sizes[lo : lo + MANIFEST_SLICE]
        raw = np.frombuffer(b"".join(manifests[lo : lo + MANIFEST_SLICE]), np.uint8)
        yield raw, np.cumsum(part) - part, part


def _put(out: np.ndarray, a: int, b: int, values: np.ndarray) -> np.ndarray:
    """``out[a:b] = values``, ``out`` widened to int64 first when a value does not fit it."""
    if values.size and out.dtype != values.dtype:
        limits = np.iinfo(out.dtype)
        if values.min() < limits.min or values.max() > limits.max:
            out = out.astype(values.dtype)
    out[a:b] = values
    return out


def _decode_mode0_slice(
    raw: np.ndarray, starts: np.ndarray, sizes: np.ndarray, key_ndim: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """``(chunks, fragments)`` in int64 of a few manifests, ``raw[starts[i]:][:sizes[i]]``
    (``raw``: ``uint8``; each manifest empty, or 4 plus whole mode-0 records); ``None``
    when a block count disagrees with its length or a block is not mode 0."""
    # the 4-byte block counts, then every field of every record, picked out by index: no
    # per-manifest slicing, no mask of every byte, every result contiguous
    record = 8 * key_ndim + 9
    stored = sizes > 0  # (an empty blob: no manifest, no blocks)
    if not stored.all():
        starts, sizes = starts[stored], sizes[stored]
    blocks = raw[(starts[:, None] + np.arange(4)).ravel()].view("<u4").astype(np.int64)
    if not np.array_equal(sizes, 4 + blocks * record):
        return None
    total = int(blocks.sum())
    if total == 0:
        return np.empty((0, key_ndim), np.int64), np.empty(0, np.int64)
    # the first byte of every record: its manifest's first record plus ``record`` per step
    first = np.cumsum(blocks) - blocks
    at = np.arange(total, dtype=np.int64) * record
    at += np.repeat(starts + 4 - first * record, blocks)
    if np.any(raw[at + 8 * key_ndim]):  # the mode byte
        return None
    # the little-endian int64 starting at every byte (an unaligned view, no copy)
    int64_at = np.ndarray((raw.size - 7,), "<i8", raw, 0, (1,))
    chunks = np.empty((total, key_ndim), np.int64)
    for axis in range(key_ndim):
        chunks[:, axis] = int64_at[at + 8 * axis]
    return chunks, int64_at[at + (8 * key_ndim + 1)]


def dense_manifests(spans: np.ndarray, blocks: np.ndarray, key_ndim: int) -> Mode0Manifests:
    """The manifests of a dense object index (``dense_manifests_v1``, FORMAT-NEXT §4), one
    per object row, decoded as they are (:class:`Mode0Manifests`: a row's mode-0 blob is
    made only when one is asked for), chunks and fragments in int32 when every value fits.

    ``spans`` is ``(O, 2)`` ``[start, count]`` into ``blocks``, ``(B, key_ndim + 1)`` rows
    ``[chunk..., fragment]``. Spans need not be contiguous, ascending or cover every block;
    each must satisfy ``0 <= start <= start + count <= B`` (:class:`ZVFormatError` otherwise).
    """
    spans = np.asarray(spans)
    blocks = np.asarray(blocks)
    if spans.ndim != 2 or spans.shape[1] != 2 or spans.dtype.kind not in "iu":
        raise ZVFormatError(f"manifest_spans {spans.dtype} {list(spans.shape)} is not (O, 2) int")
    if blocks.ndim != 2 or blocks.shape[1] != key_ndim + 1 or blocks.dtype.kind not in "iu":
        raise ZVFormatError(
            f"manifest_blocks {blocks.dtype} {list(blocks.shape)} is not (B, {key_ndim + 1}) int"
        )
    start = spans[:, 0].astype(np.int64)
    count = spans[:, 1].astype(np.int64)
    n_blocks = blocks.shape[0]
    # checked without forming start + count (a corrupt value near 2**63 would wrap)
    bad = np.flatnonzero(
        (start < 0) | (count < 0) | (start > n_blocks) | (count > n_blocks - start)
    )
    if bad.size:
        r = int(bad[0])
        raise ZVFormatError(
            f"manifest span {r} [{int(start[r])}, {int(count[r])}] is outside the "
            f"{n_blocks} manifest blocks"
        )
    picked = blocks[expand_ranges(start, count)].astype(np.int64)
    chunks = _put(np.empty((len(picked), key_ndim), np.int32), 0, len(picked), picked[:, :key_ndim])
    frags = _put(np.empty(len(picked), np.int32), 0, len(picked), picked[:, key_ndim])
    return Mode0Manifests(count, chunks, frags)


class Mode0Manifests(Sequence[bytes]):
    """Object manifests every block of which is mode 0 (what every known writer emits),
    decoded: the block count of every manifest and the chunk and fragment of every block,
    manifest after manifest. Indexing gives a manifest's bytes (re-encoded; ``b""`` for an
    empty blob, the fill value of an object without a manifest), as a list of blobs would."""

    __slots__ = ("blocks", "chunks", "empty", "frags", "offsets")

    def __init__(
        self,
        blocks: np.ndarray,
        chunks: np.ndarray,
        frags: np.ndarray,
        empty: np.ndarray | None = None,
    ) -> None:
        self.blocks = np.asarray(blocks, dtype=np.int64)
        self.chunks = np.asarray(chunks)
        self.frags = np.asarray(frags)
        self.empty = np.zeros(len(self.blocks), bool) if empty is None else np.asarray(empty)
        self.offsets = np.zeros(len(self.blocks) + 1, np.int64)
        np.cumsum(self.blocks, out=self.offsets[1:])

    @classmethod
    def none(cls, n: int, key_ndim: int) -> Mode0Manifests:
        """``n`` empty blobs (no manifest: a chunk that is not stored holds the fill value)."""
        return cls(
            np.zeros(n, np.int64),
            np.empty((0, key_ndim), np.int32),
            np.empty(0, np.int32),
            np.ones(n, bool),
        )

    @classmethod
    def concat(cls, parts: Sequence[Mode0Manifests]) -> Mode0Manifests:
        """The manifests of ``parts``, one after another."""
        if len(parts) == 1:
            return parts[0]
        return cls(
            np.concatenate([p.blocks for p in parts]),
            np.concatenate([p.chunks for p in parts]),
            np.concatenate([p.frags for p in parts]),
            np.concatenate([p.empty for p in parts]),
        )

    @property
    def sizes(self) -> np.ndarray:
        """Byte length of every manifest's blob (int64; 0 for an empty one)."""
        record = 8 * self.chunks.shape[1] + 9
        return np.where(self.empty, 0, 4 + record * self.blocks)

    def __len__(self) -> int:
        return len(self.blocks)

    @overload
    def __getitem__(self, i: int) -> bytes: ...
    @overload
    def __getitem__(self, i: slice) -> Mode0Manifests: ...
    def __getitem__(self, i: int | slice) -> bytes | Mode0Manifests:
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step != 1:
                raise ValueError("Mode0Manifests slices take every manifest (step 1)")
            stop = max(start, stop)
            a, b = int(self.offsets[start]), int(self.offsets[stop])
            return Mode0Manifests(
                self.blocks[start:stop],
                self.chunks[a:b],
                self.frags[a:b],
                self.empty[start:stop],
            )
        return self[i : i + 1 if i != -1 else None].packed()[0]

    def packed(self) -> PackedBlobs:
        """Every manifest's bytes (per manifest a ``uint32`` block count, then its
        records; an empty blob where it was one), in one buffer."""
        key_ndim = self.chunks.shape[1]
        rec = np.zeros(len(self.frags), _mode0_dtype(key_ndim))
        rec["chunk"] = self.chunks
        rec["frag"] = self.frags
        sizes = self.sizes
        ends = np.cumsum(sizes)
        heads = (ends - sizes)[~self.empty]
        buf = np.zeros(int(ends[-1]) if ends.size else 0, np.uint8)
        head = (heads[:, None] + np.arange(4)).ravel()
        buf[head] = self.blocks[~self.empty].astype("<u4").view(np.uint8)
        body = np.ones(buf.size, dtype=bool)
        body[head] = False
        buf[body] = rec.view(np.uint8)
        return PackedBlobs([(buf.tobytes(), ends - sizes, sizes)])


def read_manifests(payload: bytes, key_ndim: int) -> Mode0Manifests | PackedBlobs:
    """The manifests of one decompressed vlen-bytes chunk: decoded when every block is mode
    0 (:class:`Mode0Manifests`: what the chunk's bytes held is freed at once), else
    packed (decoded one by one later)."""
    packed = PackedBlobs.from_vlen(payload)
    decoded = decode_mode0_manifests(packed, key_ndim)
    if decoded is None:
        return packed
    return Mode0Manifests(*decoded, empty=packed.sizes == 0)


def join_manifests(parts: Sequence[Mode0Manifests | PackedBlobs]) -> Mode0Manifests | PackedBlobs:
    """The manifests of several chunks (:func:`read_manifests`), one after another: decoded
    when every chunk's are."""
    decoded = [p for p in parts if isinstance(p, Mode0Manifests)]
    if len(decoded) == len(parts):
        return Mode0Manifests.concat(decoded)
    return PackedBlobs.concat([p.packed() if isinstance(p, Mode0Manifests) else p for p in parts])


def decode_manifest(raw: bytes, key_ndim: int) -> tuple[np.ndarray, np.ndarray]:
    """Decode one manifest blob into ``(chunks (E, key_ndim), fragments (E,))``.

    Range (mode 1) and explicit (mode 2) blocks are expanded, so entry ``e`` is one
    fragment reference in traversal order.
    """
    size = len(raw)
    if size == 0:
        return np.empty((0, key_ndim), np.int64), np.empty(0, np.int64)
    if size < 4:
        raise ZVFormatError(f"manifest of {size} bytes has no block count")
    n_blocks = int(np.frombuffer(raw, "<u4", 1)[0])
    block0 = 8 * key_ndim + 9
    if size == 4 + n_blocks * block0:  # fast path: every block is mode 0
        rec = np.frombuffer(raw, _mode0_dtype(key_ndim), n_blocks, 4)
        if n_blocks == 0 or np.all(rec["mode"] == 0):
            return rec["chunk"].astype(np.int64).reshape(n_blocks, key_ndim), rec["frag"].astype(
                np.int64
            )
    if n_blocks > (size - 4) // (8 * key_ndim + 1):
        raise ZVFormatError(f"manifest declares {n_blocks} blocks in {size} bytes")
    chunks: list[np.ndarray] = []
    frags: list[np.ndarray] = []
    pos = 4
    for _ in range(n_blocks):
        if pos + 8 * key_ndim + 1 > size:
            raise ZVFormatError("manifest block runs past the end of the blob")
        chunk = np.frombuffer(raw, "<i8", key_ndim, pos)
        mode = raw[pos + 8 * key_ndim]
        pos += 8 * key_ndim + 1
        if mode == 0:
            if pos + 8 > size:
                raise ZVFormatError("manifest block runs past the end of the blob")
            f = np.frombuffer(raw, "<i8", 1, pos)
            pos += 8
        elif mode == 1:
            if pos + 16 > size:
                raise ZVFormatError("manifest block runs past the end of the blob")
            start, count = (int(v) for v in np.frombuffer(raw, "<i8", 2, pos))
            pos += 16
            if count < 0 or count > size:  # a fragment range cannot outnumber the blob's bytes
                raise ZVFormatError(f"manifest range block has an absurd count {count}")
            f = np.arange(start, start + count, dtype=np.int64)
        elif mode == 2:
            if pos + 4 > size:
                raise ZVFormatError("manifest block runs past the end of the blob")
            n = int(np.frombuffer(raw, "<u4", 1, pos)[0])
            pos += 4
            if pos + 8 * n > size:
                raise ZVFormatError(f"manifest explicit block of {n} fragments runs past the end")
            f = np.frombuffer(raw, "<i8", n, pos)
            pos += 8 * n
        else:
            raise ZVFormatError(f"unknown manifest block mode {mode}")
        frags.append(np.asarray(f, dtype=np.int64))
        chunks.append(np.repeat(chunk[None, :].astype(np.int64), len(f), axis=0))
    if pos != size:
        raise ZVFormatError(f"manifest has {size - pos} trailing bytes")
    if not frags:
        return np.empty((0, key_ndim), np.int64), np.empty(0, np.int64)
    return np.concatenate(chunks), np.concatenate(frags)


def split_flat_manifests(raw: bytes, key_ndim: int, num_objects: int) -> list[bytes]:
    """Split the spec's flat ``object_index/data`` blob (manifests back to back, no offsets)."""
    out: list[bytes] = []
    pos = 0
    size = len(raw)
    for _ in range(num_objects):
        begin = pos
        if pos + 4 > size:
            raise ZVFormatError("flat object index ends before all manifests were read")
        n_blocks = int(np.frombuffer(raw, "<u4", 1, pos)[0])
        pos += 4
        for _ in range(n_blocks):
            pos += 8 * key_ndim
            if pos >= size:
                raise ZVFormatError("flat object index block runs past the end")
            mode = raw[pos]
            pos += 1
            if mode == 0:
                pos += 8
            elif mode == 1:
                pos += 16
            elif mode == 2:
                if pos + 4 > size:
                    raise ZVFormatError("flat object index block runs past the end")
                pos += 4 + 8 * int(np.frombuffer(raw, "<u4", 1, pos)[0])
            else:
                raise ZVFormatError(f"unknown manifest block mode {mode}")
            if pos > size:
                raise ZVFormatError("flat object index block runs past the end")
        out.append(raw[begin:pos])
    return out


def split_offset_manifests(raw: bytes, offsets: Sequence[int] | np.ndarray) -> list[bytes]:
    """Split the legacy ``object_index/data`` blob by its ``offsets`` (int64 byte offsets)."""
    offs = [int(o) for o in offsets] + [len(raw)]
    if any(b < a for a, b in zip(offs[:-1], offs[1:], strict=True)) or offs[0] < 0:
        raise ZVFormatError("object index offsets are not increasing")
    if offs[-2:] and offs[-2] > len(raw):
        raise ZVFormatError("object index offsets point past the data blob")
    return [raw[a:b] for a, b in zip(offs[:-1], offs[1:], strict=True)]
