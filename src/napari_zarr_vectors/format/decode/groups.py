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


def repeated_members(groups: dict[int, np.ndarray]) -> list[tuple[int, int, int]]:
    """``(group, object id, times)`` for every object a group lists more than once (a
    group's members are a set: every writer stores each once), in group order."""
    if not groups:
        return []
    ids = np.fromiter(groups, np.int64, len(groups))
    sizes = np.array([len(groups[g]) for g in ids.tolist()], np.int64)
    if not sizes.sum():
        return []
    owner = np.repeat(ids, sizes)
    members = np.concatenate([groups[g] for g in ids.tolist()]).astype(np.int64)
    pairs, counts = np.unique(np.stack([owner, members], axis=1), axis=0, return_counts=True)
    many = counts > 1
    return [(int(g), int(m), int(c)) for (g, m), c in zip(pairs[many], counts[many], strict=True)]
