"""Pictures without a plotting library: count images coloured and encoded as PNG (zlib)."""

from __future__ import annotations

import struct
import zlib

import numpy as np

#: anchors of the colour map (viridis' ends and middle), from no count to the most
_ANCHORS = np.array(
    [
        [68, 1, 84],
        [59, 82, 139],
        [33, 145, 140],
        [94, 201, 98],
        [253, 231, 37],
    ],
    np.float64,
)
#: the colour of a pixel holding nothing
EMPTY = (24, 24, 24)


def colour_counts(counts: np.ndarray, top: float | None = None) -> np.ndarray:
    """``(H, W)`` counts as ``(H, W, 3)`` uint8 colours on a log scale up to ``top``
    (default: the image's largest count); zero is :data:`EMPTY`."""
    counts = np.asarray(counts, np.float64)
    top = float(counts.max(initial=0)) if top is None else float(top)
    scale = np.log1p(counts) / np.log1p(top) if top > 0 else np.zeros_like(counts)
    at = np.clip(scale, 0, 1) * (len(_ANCHORS) - 1)
    low = np.minimum(np.floor(at).astype(np.int64), len(_ANCHORS) - 2)
    frac = (at - low)[..., None]
    rgb = _ANCHORS[low] * (1 - frac) + _ANCHORS[low + 1] * frac
    rgb[counts <= 0] = EMPTY
    return np.round(rgb).astype(np.uint8)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def encode_png(rgb: np.ndarray) -> bytes:
    """An ``(H, W, 3)`` uint8 image as PNG bytes (8-bit RGB, no filter)."""
    rgb = np.ascontiguousarray(rgb, np.uint8)
    height, width = rgb.shape[:2]
    rows = np.concatenate([np.zeros((height, 1), np.uint8), rgb.reshape(height, width * 3)], 1)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 9))
        + _chunk(b"IEND", b"")
    )
