"""Fixed pseudo-random ranks in ``[0, 1)``: of objects by id, of vertices by position.

A subset "everything ranked below ``f``" is stable (the same items whatever else was read
with them) and nested (what ``f`` keeps, every larger ``f`` keeps too): the level of detail
thins objects this way, and a read of path pieces (:meth:`.Store.read_pieces`) its pieces.
"""

from __future__ import annotations

import numpy as np


def object_rank(ids: np.ndarray) -> np.ndarray:
    """A fixed pseudo-random rank in ``[0, 1)`` per integer id (splitmix64 finaliser):
    the same id always gets the same rank, ranks are uniform over any set of ids."""
    x = np.asarray(ids).astype(np.int64).view(np.uint64)
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    return (x >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def position_rank(positions: np.ndarray) -> np.ndarray:
    """A fixed rank per vertex from its coordinates (for stores without object ids): the
    same point gets the same rank whichever chunks were loaded with it."""
    p = np.ascontiguousarray(np.asarray(positions, dtype=np.float64))
    if p.ndim != 2 or not len(p):
        return np.zeros(len(p))
    bits = p.view(np.int64).reshape(len(p), -1)
    key = np.zeros(len(p), dtype=np.int64)
    with np.errstate(over="ignore"):
        for col in bits.T:
            key = (object_rank(key) * float(1 << 53)).astype(np.int64) ^ col
    return object_rank(key)
