"""Apply a Zarr v3 codec chain to stored chunk bytes, through numcodecs.

The 0.7 layout stores every payload as its own 1-D ``uint8`` Zarr array whose codec list
can be ``bytes`` alone or followed by compressors (zstd, blosc, gzip) and checksums.
:func:`decode_bytes_chunk` undoes such a chain and returns the payload bytes. The size the
array's metadata declares bounds every allocation: a corrupt frame header that claims a
huge payload is rejected before anything is decompressed.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import numcodecs
import numpy as np

from .errors import ZVFormatError
from .validate import Source, int_list, list_field

#: Largest payload a compressed frame may declare when the array gives no size of its own.
MAX_PAYLOAD_BYTES = 1 << 31

#: Largest expansion a compressed frame can physically reach (zstd's best case, an RLE block
#: of 128 KiB in 4 bytes, is 32 768; blosc and gzip stay below): a frame that declares more
#: than this times its own length is corrupt, and nothing is allocated for it.
MAX_RATIO = 1 << 16

_COMPRESSORS: dict[str, Any] = {
    "zstd": numcodecs.Zstd,
    "blosc": numcodecs.Blosc,
    "gzip": numcodecs.GZip,
}


def _zstd_content_size(data: bytes) -> int | None:
    """Frame_Content_Size of a zstd frame header (RFC 8878 §3.1.1.1), ``None`` if absent."""
    if len(data) < 6 or data[:4] != b"\x28\xb5\x2f\xfd":
        raise ZVFormatError("not a zstd frame (bad magic)")
    desc = data[4]
    fcs_flag, single, dict_flag = desc >> 6, (desc >> 5) & 1, desc & 3
    pos = 5 + (0 if single else 1) + (0, 1, 2, 4)[dict_flag]
    size = (1 if single else 0, 2, 4, 8)[fcs_flag]
    if size == 0:
        return None
    if pos + size > len(data):
        raise ZVFormatError("truncated zstd frame header")
    value = int.from_bytes(data[pos : pos + size], "little")
    return value + 256 if size == 2 else value


def _declared_size(name: str, data: bytes) -> int | None:
    if name == "zstd":
        return _zstd_content_size(data)
    if name == "blosc":
        return _check_blosc(data)
    return None


def _check_blosc(data: bytes) -> int:
    """Validate a blosc 1 frame's header, block offsets and stream sizes against its length,
    and return its declared payload size. c-blosc trusts them and reads out of bounds (a
    segfault) on a corrupt frame, so nothing reaches it that does not walk in bounds."""
    if len(data) < 16:
        raise ZVFormatError("truncated blosc header")
    _version, _vlz, flags, typesize, nbytes, blocksize, cbytes = struct.unpack_from(
        "<BBBBIII", data
    )
    if cbytes != len(data):
        raise ZVFormatError(f"blosc frame says {cbytes} bytes, holds {len(data)}")
    if nbytes == 0:
        return 0
    if flags & 0x2:  # memcpyed: the payload follows the header as is
        if cbytes != 16 + nbytes:
            raise ZVFormatError("blosc memcpyed frame length does not match its payload")
        return int(nbytes)
    if blocksize == 0 or typesize == 0 or blocksize > nbytes + blocksize:
        raise ZVFormatError(f"blosc frame with block size {blocksize}, type size {typesize}")
    nblocks = -(-nbytes // blocksize)
    first = 16 + 4 * nblocks
    if first > cbytes:
        raise ZVFormatError("blosc block offsets run past the frame")
    starts = np.frombuffer(data, "<i4", nblocks, 16).astype(np.int64)
    if np.any(starts < first) or np.any(starts >= cbytes):
        raise ZVFormatError("blosc block offsets point outside the frame")
    split = not (flags & 0x10) and typesize <= 16 and blocksize // typesize >= 128
    leftover = nbytes % blocksize
    for b, pos in enumerate(starts.tolist()):
        last = b == nblocks - 1 and leftover
        streams = 1 if (last or not split) else typesize
        for _ in range(streams):
            if pos + 4 > cbytes:
                raise ZVFormatError("blosc stream header runs past the frame")
            csize = int.from_bytes(data[pos : pos + 4], "little", signed=True)
            pos += 4
            if csize < 0 or pos + csize > cbytes:
                raise ZVFormatError("blosc stream runs past the frame")
            pos += csize
    return int(nbytes)


def _decode_crc32c(data: bytes) -> bytes:
    if len(data) < 4:
        raise ZVFormatError("crc32c chunk shorter than its checksum")
    payload, stored = data[:-4], data[-4:]
    from numcodecs.checksum32 import CRC32C

    if bytes(np.asarray(CRC32C().encode(payload), np.uint8)[-4:]) != bytes(stored):
        raise ZVFormatError("crc32c checksum mismatch")
    return payload


def decode_bytes_chunk(
    raw: bytes, codecs: Sequence[dict[str, Any]], expected_size: int | None = None
) -> bytes:
    """Undo the codec chain of a ``uint8`` array chunk and return its payload bytes.

    ``expected_size`` (the array's declared byte length) bounds the decompressed size.
    Raises :class:`ZVFormatError` for unknown codecs or undecodable bytes.
    """
    if not isinstance(codecs, list | tuple):
        raise ZVFormatError(f"codecs {codecs!r} are not a list")
    chain = [c if isinstance(c, dict) else {"name": c} for c in codecs]
    for c in chain:
        if not isinstance(c.get("name"), str):
            raise ZVFormatError(f"codec {c!r} has no name")
    if chain and chain[0].get("name") not in ("bytes", "endian"):
        raise ZVFormatError(
            f"unexpected array-to-bytes codec {chain[0].get('name')!r} for a byte blob"
        )
    data = raw
    steps = chain[1:]
    for i, codec in enumerate(reversed(steps)):
        name = codec.get("name")
        last = i == len(steps) - 1
        if name == "crc32c":
            data = _decode_crc32c(data)
            continue
        factory = _COMPRESSORS.get(name)
        if factory is None:
            raise ZVFormatError(f"unsupported codec {name!r}")
        declared = _declared_size(name, data)
        if declared is not None and declared > MAX_PAYLOAD_BYTES:
            raise ZVFormatError(f"{name} frame declares an absurd payload of {declared} bytes")
        if declared is not None and declared > max(len(data), 64) * MAX_RATIO:
            raise ZVFormatError(
                f"{name} frame of {len(data)} bytes declares {declared} bytes, more than "
                "its bytes can hold"
            )
        if (
            last
            and expected_size is not None
            and declared is not None
            and declared != expected_size
        ):
            raise ZVFormatError(
                f"{name} frame holds {declared} bytes, the array declares {expected_size}"
            )
        try:
            if last and expected_size is not None and declared is not None:
                out = np.empty(expected_size, dtype=np.uint8)
                data = bytes(factory().decode(data, out=out))
            else:
                data = bytes(factory().decode(data))
        except ZVFormatError:
            raise
        except Exception as exc:  # numcodecs raises various types on corrupt input
            raise ZVFormatError(f"{name} decompression failed: {exc}") from None
    return data


#: Largest all-zero blob materialised when a blob has no ``c/0`` (zarr's fill elision);
#: a larger declared length with no bytes behind it is treated as corrupt metadata.
MAX_FILL_BYTES = 1 << 26

#: Largest blob length (bytes) a blob's ``zarr.json`` may declare.
MAX_BLOB_BYTES = 1 << 40


def decode_blob(meta: dict[str, Any], data_raw: bytes | None, src: Source) -> bytes:
    """Payload of one 1-D ``uint8`` blob array (0.7 layout) from its parsed ``zarr.json``
    and its ``c/0`` bytes (``None`` when zarr elided an all-zero chunk).

    The declared ``shape`` and ``codecs`` are validated; the declared length bounds the
    decompression, and an elided chunk larger than :data:`MAX_FILL_BYTES` is refused.
    """
    if meta.get("node_type") != "array":
        raise src.error("node_type", "is not 'array'")
    shape = int_list(meta.get("shape") or [0], "shape", src, None, 0, MAX_BLOB_BYTES)
    n = shape[0] if shape else 0
    codecs = list_field(meta, "codecs", src, None) or [{"name": "bytes"}]
    if data_raw is None:  # zarr does not store an all-fill chunk: n zero bytes
        if n > MAX_FILL_BYTES:
            raise src.error("shape", f"declares {n} bytes that the store does not hold")
        return bytes(n)
    payload = decode_bytes_chunk(data_raw, codecs, n)
    if len(payload) != n:
        raise ZVFormatError(f"blob decodes to {len(payload)} bytes, its shape says {n}")
    return payload


def check_compressed_frame(raw: bytes, codecs: Sequence[Any], max_bytes: int | None) -> None:
    """Check the outermost compressed frame of a chunk that zarr will decode (its codecs'
    bytes-to-bytes tail: ``zstd``/``blosc``/``gzip``, optionally ``crc32c``) before zarr sees
    it: a frame that declares more than its bytes can hold (:data:`MAX_RATIO`) or more than
    ``max_bytes``, or a blosc frame that would read out of bounds, raises
    :class:`ZVFormatError`. Chunks without such a tail pass unchecked."""
    chain = [c.get("name") if isinstance(c, dict) else c for c in codecs]
    data = raw
    if chain and chain[-1] == "crc32c":
        data = _decode_crc32c(data)
        chain = chain[:-1]
    if not chain or chain[-1] not in ("zstd", "blosc"):
        return
    declared = _declared_size(chain[-1], data)
    if declared is None:  # zarr's zstd would grow its output without bound
        raise ZVFormatError("zstd frame declares no content size, so its size cannot be bounded")
    limit = max(len(data), 64) * MAX_RATIO
    if max_bytes is not None:
        limit = min(limit, max_bytes)
    if declared > limit:
        raise ZVFormatError(f"{chain[-1]} frame of {len(data)} bytes declares {declared} bytes")
