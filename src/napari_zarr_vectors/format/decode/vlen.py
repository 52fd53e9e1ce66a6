"""The items of a decompressed vlen-bytes chunk, as Python objects or packed back to back."""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from typing import Protocol, overload, runtime_checkable

import numpy as np

from ..errors import ZVFormatError


def vlen_items(payload: bytes) -> np.ndarray:
    """The items (an object array of ``bytes``) of one decompressed vlen-bytes chunk."""
    from numcodecs.vlen import VLenBytes

    try:
        items: np.ndarray = VLenBytes().decode(payload)
    except Exception as exc:  # noqa: BLE001 - numcodecs raises ValueError on a corrupt buffer
        raise ZVFormatError(f"vlen chunk cannot be decoded: {exc}") from None
    return items


_U32 = struct.Struct("<I").unpack_from


def vlen_spans(payload: bytes) -> tuple[np.ndarray, np.ndarray]:
    """``(start, size)`` (int64) of the bytes of every item of one decompressed vlen-bytes
    chunk (a little-endian ``uint32`` item count, then per item its ``uint32`` length and
    bytes), found by one walk over the lengths: no Python object per item. Bounds are
    checked as numcodecs' decoder checks them (bytes after the last item are ignored)."""
    size = len(payload)
    if size < 4:
        raise ZVFormatError(f"vlen chunk of {size} bytes has no item count")
    (n,) = _U32(payload, 0)
    if n > (size - 4) // 4:
        raise ZVFormatError(f"vlen chunk declares {n} items in {size} bytes")
    heads = [0] * n
    pos = 4
    try:
        for i in range(n):
            heads[i] = pos
            pos += 4 + _U32(payload, pos)[0]
    except struct.error:
        raise ZVFormatError("vlen chunk is truncated: an item length runs past its end") from None
    if pos > size:
        raise ZVFormatError(f"vlen chunk is truncated: its items need {pos} of its {size} bytes")
    starts = np.array(heads, dtype=np.int64)
    sizes = np.diff(starts, append=pos)
    starts += 4
    sizes -= 4
    return starts, sizes


class PackedBlobs(Sequence[bytes]):
    """Byte blobs held in a few buffers (segments, e.g. one decompressed chunk of a
    vlen-bytes array each): blob ``i`` of a segment ``(data, starts, sizes)`` is
    ``data[starts[i]:starts[i] + sizes[i]]`` (an empty blob: the fill value).

    What many small blobs (e.g. the manifests of an object index) are read as, so that
    their sizes and bytes are vectorised passes, not one Python object per blob, and the
    segments are never copied into one; indexing gives ``bytes`` as a list would."""

    __slots__ = ("_bounds", "segments")

    def __init__(self, segments: Sequence[tuple[bytes, np.ndarray, np.ndarray]]) -> None:
        #: ``(data, starts, sizes)`` of every segment (starts and sizes int64)
        self.segments = [
            (d, np.asarray(a, dtype=np.int64), np.asarray(n, dtype=np.int64))
            for d, a, n in segments
        ]
        counts = [len(n) for _, _, n in self.segments]
        self._bounds = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])

    @classmethod
    def from_items(cls, items: Sequence[bytes]) -> PackedBlobs:
        """``items`` (``bytes``) packed into one segment."""
        sizes = np.fromiter(map(len, items), np.int64, len(items))
        return cls([(b"".join(items), np.cumsum(sizes) - sizes, sizes)])

    @classmethod
    def from_vlen(cls, payload: bytes) -> PackedBlobs:
        """The items of one decompressed vlen-bytes chunk, in place (:func:`vlen_spans`)."""
        return cls([(payload, *vlen_spans(payload))])

    @classmethod
    def concat(cls, parts: Sequence[PackedBlobs]) -> PackedBlobs:
        """The blobs of ``parts``, one after another (their segments, not copied)."""
        return cls([seg for p in parts for seg in p.segments])

    @property
    def sizes(self) -> np.ndarray:
        """Byte length of every blob (int64)."""
        return np.concatenate([n for _, _, n in self.segments] or [np.empty(0, np.int64)])

    def buffers(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """``(bytes, starts, sizes)`` of every segment: its buffer (a ``uint8`` view, no
        copy) and where each of its blobs starts in it and how long it is."""
        for data, starts, sizes in self.segments:
            yield np.frombuffer(data, np.uint8), starts, sizes

    def __len__(self) -> int:
        return int(self._bounds[-1])

    @overload
    def __getitem__(self, i: int) -> bytes: ...
    @overload
    def __getitem__(self, i: slice) -> PackedBlobs: ...
    def __getitem__(self, i: int | slice) -> bytes | PackedBlobs:
        n = len(self)
        if isinstance(i, slice):
            start, stop, step = i.indices(n)
            if step != 1:
                raise ValueError("PackedBlobs slices take every blob (step 1)")
            kept = []
            for (data, starts, sizes), lo in zip(
                self.segments, self._bounds[:-1].tolist(), strict=True
            ):
                a, b = max(start - lo, 0), min(stop - lo, len(sizes))
                if b > a:
                    kept.append((data, starts[a:b], sizes[a:b]))
            return PackedBlobs(kept)
        if not -n <= i < n:
            raise IndexError(f"blob {i} of {n}")
        i %= n
        k = int(np.searchsorted(self._bounds, i, side="right")) - 1
        data, starts, sizes = self.segments[k]
        r = i - int(self._bounds[k])
        a = int(starts[r])
        return data[a : a + int(sizes[r])]

    def __iter__(self) -> Iterator[bytes]:
        for data, starts, sizes in self.segments:
            yield from (
                data[a : a + n] for a, n in zip(starts.tolist(), sizes.tolist(), strict=True)
            )


@runtime_checkable
class SizedBlobs(Protocol):
    """Blobs that know their byte lengths without a pass over them
    (:class:`PackedBlobs`, :class:`.manifests.Mode0Manifests`)."""

    @property
    def sizes(self) -> np.ndarray: ...


def blob_sizes(blobs: Sequence[bytes]) -> np.ndarray:
    """Byte length of every blob (int64), without a pass over Python objects when the
    blobs know them (:class:`SizedBlobs`)."""
    if isinstance(blobs, SizedBlobs):
        return blobs.sizes
    return np.fromiter(map(len, blobs), np.int64, len(blobs))
