"""0.7 group membership: ``data`` (int64 ids) + ``offsets`` (int64 byte offsets), FORMAT07 §5.9."""

from __future__ import annotations

import numpy as np

from ..errors import ZVFormatError


def decode_csr_groups(data: bytes, offsets: bytes, num_groups: int) -> dict[int, np.ndarray]:
    """``{group id: int64 member ids}``; group ``g`` spans from its byte offset to the next
    offset (or the end of ``data``)."""
    if len(data) % 8 or len(offsets) % 8:
        raise ZVFormatError("group data or offsets are not whole int64 values")
    members = np.frombuffer(data, "<i8").astype(np.int64)
    offs = np.frombuffer(offsets, "<i8").astype(np.int64)
    if offs.size != num_groups:
        raise ZVFormatError(f"group offsets hold {offs.size} values for {num_groups} groups")
    bounds = np.append(offs, len(data))
    if np.any(bounds % 8) or np.any(np.diff(bounds) < 0) or (bounds.size and bounds[0] < 0):
        raise ZVFormatError("group byte offsets are not increasing multiples of 8")
    bounds //= 8
    return {g: members[bounds[g] : bounds[g + 1]] for g in range(num_groups)}
