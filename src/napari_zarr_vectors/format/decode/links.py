"""Link payloads: flat intra-chunk rows, ragged blobs and 0.7 cross-chunk records."""

from __future__ import annotations

import numpy as np

from ..errors import ZVFormatError
from .arrays import decode_rows


def decode_flat_links(raw: bytes, width: int) -> np.ndarray:
    """``(M, width)`` int64 rows of an intra-chunk link blob."""
    return decode_rows(raw, np.dtype("<i8"), width).astype(np.int64, copy=False)


def decode_ragged_links(raw: bytes, width: int) -> np.ndarray:
    """Rows of an inline ragged blob ``[K, off[K], data]`` (all groups concatenated)."""
    if len(raw) % 8 or len(raw) < 8:
        raise ZVFormatError(f"ragged link blob of {len(raw)} bytes is not whole int64 values")
    values = np.frombuffer(raw, "<i8")
    k = int(values[0])
    if k < 0 or 1 + k > values.size:
        raise ZVFormatError(f"ragged link blob declares {k} groups in {values.size} values")
    data = values[1 + k :]
    offs = values[1 : 1 + k]
    if k and (offs[0] != 0 or np.any(np.diff(offs) < 0) or offs[-1] > data.size * 8):
        raise ZVFormatError("ragged link blob has inconsistent group offsets")
    if data.size % width:
        raise ZVFormatError(f"ragged link data of {data.size} values is not {width}-wide rows")
    return data.reshape(-1, width).astype(np.int64, copy=False)


def decode_cross_chunk_records(
    raw: bytes, width: int, key_ndim: int, delta: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """0.7 ``cross_chunk_links/<d>/data``: ``(chunks (M, width, key_ndim), rows (M, width))``.

    A record of a level's own links (``delta`` 0) joins rows of different chunks (the links
    within a chunk are stored with that chunk): records whose endpoints all lie in one chunk
    are refused (zeroed bytes read as links of chunk 0's row 0 to itself)."""
    rec = decode_rows(raw, np.dtype("<i8"), width * (key_ndim + 1)).reshape(-1, width, key_ndim + 1)
    chunks, rows = rec[:, :, :key_ndim].astype(np.int64), rec[:, :, key_ndim].astype(np.int64)
    if delta == 0 and len(chunks):
        same = np.all(chunks == chunks[:, :1], axis=(1, 2))
        if same.any():
            first = chunks[np.flatnonzero(same)[0], 0].tolist()
            raise ZVFormatError(
                f"{int(same.sum())} of {len(chunks)} cross-chunk records join rows of one chunk "
                f"(e.g. chunk {first}): these bytes are not cross-chunk links"
            )
    return chunks, rows
