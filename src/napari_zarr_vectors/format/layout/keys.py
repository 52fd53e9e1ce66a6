"""Chunk keys (``"-1.0.2"``) <-> integer coordinates, and link delta names."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


def parse_chunk_keys(names: Iterable[str], key_ndim: int) -> np.ndarray:
    """Parse dot-joined keys, skip names that are not keys, sort as integer tuples."""
    names = list(names)
    dots = key_ndim - 1
    if names and key_ndim > 0 and all(n.count(".") == dots for n in names):
        try:  # every name a key (a listing's usual case): one split, one conversion
            values = [int(p) for p in ".".join(names).split(".")]
        except ValueError:  # some name is no key: the names one by one
            pass
        else:
            return sort_chunks(np.array(values, dtype=np.int64).reshape(-1, key_ndim))
    coords = []
    for name in names:
        parts = name.split(".")
        if len(parts) != key_ndim:
            continue
        try:
            coords.append([int(p) for p in parts])
        except ValueError:
            continue
    arr = np.array(coords, dtype=np.int64).reshape(-1, key_ndim)
    return sort_chunks(arr)


def sort_chunks(chunks: np.ndarray) -> np.ndarray:
    """Sort chunk coordinates lexicographically as integer tuples (first axis slowest)."""
    if len(chunks) <= 1:
        return chunks
    order = np.lexsort(chunks.T[::-1])
    return chunks[order]


def delta_name(delta: int) -> str:
    """``0`` -> ``"0"``, ``1`` -> ``"+1"``, ``-1`` -> ``"-1"``."""
    return "0" if delta == 0 else f"{delta:+d}"
