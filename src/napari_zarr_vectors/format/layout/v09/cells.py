"""One cell of a 0.9 grid array as bytes: the one-element vlen-bytes frame (``uint32``
count, ``uint32`` length, the payload) and the codecs the direct cell path undoes.

A cell whose frame does not parse is reported as that cell's error; it is not handed to
zarr, whose vlen decoder allocates as many elements as a corrupt count claims.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from ...codecs import decode_bytes_chunk
from ...errors import ZVFetchError, ZVFormatError
from ...io import MAX_OBJECT_BYTES, LocalFile
from ..base import PayloadSink

#: bytes-to-bytes codecs the direct cell path can undo (through :mod:`...codecs`).
DIRECT_CODECS = frozenset({"zstd", "blosc", "gzip", "crc32c"})
VLEN_HEAD = struct.Struct("<II")


def unpack_vlen(data: bytes, view: bool = False) -> bytes | memoryview | None:
    """The payload of a one-cell vlen-bytes chunk (``uint32 count``, then ``uint32 length``
    and the bytes of each element); ``None`` for an empty element. ``view``: a
    ``memoryview`` into ``data`` (no copy) instead of ``bytes``."""
    if len(data) < 4:
        raise ZVFormatError(f"vlen-bytes chunk of {len(data)} bytes has no element count")
    if len(data) == 4 and data == b"\x00\x00\x00\x00":
        return None
    if len(data) < 8:
        raise ZVFormatError(f"vlen-bytes chunk of {len(data)} bytes is truncated")
    count, length = VLEN_HEAD.unpack_from(data)
    if count != 1:
        raise ZVFormatError(f"vlen-bytes chunk holds {count} elements, a grid cell holds 1")
    if len(data) != 8 + length:
        raise ZVFormatError(
            f"vlen-bytes element declares {length} bytes, the chunk holds {len(data) - 8}"
        )
    if view:
        return memoryview(data)[8:] if length else None
    return data[8:] or None


def read_payload_into(path: str, i: int, sink: PayloadSink) -> bool:
    """Read the payload of the one-cell vlen-bytes chunk file at ``path`` (a ``uint32``
    count of 1, its ``uint32`` length, its bytes: what :func:`unpack_vlen` accepts, not
    empty) into the memory ``sink`` claims for chunk ``i``; whether it was read so (any
    other file is left to the ordinary read, which reports what is wrong with it)."""
    try:
        file = LocalFile.open(path)
        if file is None:
            return False
        with file:
            head = file.read(0, VLEN_HEAD.size)
            if len(head) < VLEN_HEAD.size:
                return False
            count, length = VLEN_HEAD.unpack_from(head)
            if (
                count != 1
                or not 0 < length <= MAX_OBJECT_BYTES
                or file.size != VLEN_HEAD.size + length
            ):
                return False
            out = sink.claim(i, length)
            if out is None:
                return False
            if file.read_into(VLEN_HEAD.size, out):
                return True
            sink.drop(i)
            return False
    except ZVFetchError:
        return False


def direct_cell(
    raw: bytes | ZVFetchError | None, codecs: tuple[dict[str, Any], ...], view: bool = False
) -> bytes | memoryview | ZVFormatError | None:
    """The payload of one fetched cell file (``None``: no file, the empty fill value) or
    the error that keeps it from being read (unlocated); ``view``: see :func:`unpack_vlen`."""
    if raw is None or isinstance(raw, ZVFetchError):
        return raw
    try:
        return unpack_vlen(
            decode_bytes_chunk(raw, [{"name": "bytes"}, *codecs]) if codecs else raw, view
        )
    except ZVFormatError as exc:
        return exc


def cell_value(value: Any) -> bytes | None:
    """A zarr vlen-bytes element as payload bytes (``None`` for the empty fill value)."""
    if isinstance(value, np.ndarray):
        value = value.item() if value.size == 1 else None
    if value is None:
        return None
    if isinstance(value, str):
        value = value.encode()
    value = bytes(value)
    return value or None
