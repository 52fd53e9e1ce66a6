"""Apply a Zarr v3 codec chain to stored chunk bytes, through numcodecs.

The 0.7 layout stores every payload as its own 1-D ``uint8`` Zarr array whose codec list
can be ``bytes`` alone or followed by compressors (zstd, blosc, gzip) and checksums.
:func:`decode_bytes_chunk` undoes such a chain and returns the payload bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numcodecs

from .errors import ZVFormatError

# Zarr v3 bytes->bytes codecs and the numcodecs classes that decode them.
_BYTES_CODECS: dict[str, Any] = {
    "zstd": lambda cfg: numcodecs.Zstd(),
    "blosc": lambda cfg: numcodecs.Blosc(),
    "gzip": lambda cfg: numcodecs.GZip(),
}


def _decode_crc32c(data: bytes) -> bytes:
    if len(data) < 4:
        raise ZVFormatError("crc32c chunk shorter than its checksum")
    payload, stored = data[:-4], data[-4:]
    try:
        from numcodecs.checksum32 import CRC32C
    except ImportError:  # pragma: no cover - old numcodecs: skip verification
        return payload
    if CRC32C().encode(payload)[-4:] != stored:
        raise ZVFormatError("crc32c checksum mismatch")
    return payload


def decode_bytes_chunk(raw: bytes, codecs: Sequence[dict[str, Any]]) -> bytes:
    """Undo the codec chain of a ``uint8`` array chunk and return its payload bytes.

    Raises :class:`ZVFormatError` for unknown codecs or undecodable bytes.
    """
    names = [c.get("name") if isinstance(c, dict) else c for c in codecs]
    if not names or names[0] not in ("bytes", "endian"):
        if "vlen-bytes" in names or "sharding_indexed" in names:
            raise ZVFormatError(f"unexpected array-to-bytes codec {names[0]!r} for a byte blob")
    data = raw
    for codec in reversed(list(codecs)[1:]):
        name = codec.get("name") if isinstance(codec, dict) else codec
        cfg = codec.get("configuration", {}) if isinstance(codec, dict) else {}
        if name == "crc32c":
            data = _decode_crc32c(data)
            continue
        factory = _BYTES_CODECS.get(name)
        if factory is None:
            raise ZVFormatError(f"unsupported codec {name!r}")
        try:
            data = bytes(factory(cfg).decode(data))
        except Exception as exc:  # numcodecs raises various types on corrupt input
            raise ZVFormatError(f"{name} decompression failed: {exc}") from None
    return data
