"""Finding chunks and names in stores that cannot be listed (plain HTTP).

What is knowable without a listing, and how the layouts use it:

* **levels**: the root ``multiscales`` datasets (always the first source);
* **0.7 chunks**: every key of the level's chunk grid over the root ``bounds``
  (``floor(lo / cs) .. floor(hi / cs)`` per axis at the level's chunk shape, FORMAT07 §4.3;
  the attribute-bin axis in front for ``chunk_by_attribute`` levels) is a candidate; a
  candidate whose blob ``zarr.json`` is missing holds no data (:func:`level_chunk_grid`);
* **0.9 chunks**: ``nonempty_chunks``; without it, every cell of the array's own grid;
* **link deltas**: the differences between level indices (:func:`candidate_deltas`);
* **0.9 link segments**: offset names within a small radius (:func:`candidate_segments`),
  unless consolidated metadata or a directory index names them;
* **attribute names**: not recorded anywhere in 0.7 (its parent folders often have no
  ``zarr.json``, FORMAT07 §1.5), and in 0.9 only when the store was created from a schema
  (root ``attribute_specs``). Without consolidated metadata or a directory index they are
  unknown, and the read goes on without them (:func:`warn_unlisted`).
"""

from __future__ import annotations

import threading
import warnings
from itertools import combinations_with_replacement, product

import numpy as np

from .errors import ZVError, ZVListingWarning
from .metadata import LevelInfo, RootMetadata
from .query import candidate_chunks

#: Most candidate chunk keys a level of an unlistable 0.7 store is probed over; a larger
#: level must be read by bbox (``Store.read(level, bbox=...)``) or from a listable location.
MAX_ENUMERATED_CHUNKS = 1 << 16

#: Offset radius (in chunks, per axis) probed for the segments of 0.9 link families of
#: width 2 (edges); width 3 (faces) probes radius :data:`FACE_PROBE_RADIUS`.
LINK_PROBE_RADIUS = 2
FACE_PROBE_RADIUS = 1


def level_chunk_grid(
    root: RootMetadata, level: LevelInfo, limit: int = MAX_ENUMERATED_CHUNKS
) -> np.ndarray:
    """Every chunk coordinate a level can hold, ``(K, key_ndim)`` in level order.

    Raises
    ------
    ZVError
        More than ``limit`` candidates, or a chunk-by-attribute level without
        ``chunk_attribute_values``.
    """
    lo, hi = root.bounds
    extra = level.key_ndim - root.ndim
    bins = 1
    if extra:
        values = level.chunk_attribute_values
        if extra != 1 or not values:
            raise ZVError(
                f"level {level.index}: chunk-by-attribute keys cannot be enumerated without "
                "chunk_attribute_values; the store must be listable"
            )
        bins = len(values)
    c_lo = np.floor(lo / level.chunk_shape)
    c_hi = np.floor(hi / level.chunk_shape)
    count = float(np.prod(c_hi - c_lo + 1)) * bins  # huge bounds must not overflow
    if count > limit:
        raise ZVError(
            f"level {level.index} spans {count:.0f} candidate chunks over the store bounds; a store "
            f"that cannot be listed is enumerated up to {limit}: read this level by bbox, "
            "or open the store from a listable location (local folder, s3://)"
        )
    spatial = candidate_chunks(level, lo, hi)
    assert spatial is not None
    if not extra:
        return spatial
    bin_axis = np.repeat(np.arange(bins, dtype=np.int64), len(spatial))[:, None]
    return np.concatenate([bin_axis, np.tile(spatial, (bins, 1))], axis=1)


def candidate_deltas(level: int, levels: list[int]) -> list[int]:
    """Level deltas a link family of ``level`` can have: 0 and the distance to every other
    level (a few names to probe)."""
    return sorted({0, *(other - level for other in levels)})


def offset_name(offset: tuple[int, ...] | list[int]) -> str:
    """``(0, 1, -1)`` -> ``"0.+1.-1"`` (FORMAT09 §3.5 naming)."""
    return ".".join("0" if v == 0 else f"{v:+d}" for v in offset)


def candidate_segments(width: int, ndim: int) -> list[str]:
    """Segment names (``links/<d>/<offsets>``) to probe for a link family of ``width``.

    Width 2: every offset within :data:`LINK_PROBE_RADIUS` chunks. Width 3: pairs of offsets
    within :data:`FACE_PROBE_RADIUS`, each lexicographically >= 0 and the pair sorted, which
    is how the canonical writer places a record (endpoints sorted by chunk, the smallest is
    the source). Wider records: the intra-chunk segment only.
    """
    if width <= 1:
        return ["self"]
    zero = (0,) * ndim
    if width == 2:
        r = LINK_PROBE_RADIUS
        return [offset_name(o) for o in product(range(-r, r + 1), repeat=ndim)]
    if width == 3:
        r = FACE_PROBE_RADIUS
        forward = [o for o in product(range(-r, r + 1), repeat=ndim) if o >= zero]
        return [
            f"{offset_name(a)}_{offset_name(b)}"
            for a, b in combinations_with_replacement(forward, 2)
        ]
    return ["_".join([offset_name(zero)] * (width - 1))]


def warn_unlisted(store: str, seen: set[str], what: str, consequence: str) -> None:
    """Warn once per opened store (``seen`` is that store's record) that a name list is
    unknown without a listing."""
    with _WARNED_LOCK:
        if what in seen:
            return
        seen.add(what)
    warnings.warn(
        f"{store} cannot be listed (no directory listing over plain HTTP, no consolidated "
        f"metadata): {what} cannot be discovered; {consequence}. Serve the store with a "
        "directory index, consolidate its metadata, or open it from a listable location "
        "(s3://, a local copy).",
        ZVListingWarning,
        stacklevel=4,
    )


_WARNED_LOCK = threading.Lock()
