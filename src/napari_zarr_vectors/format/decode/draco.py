"""Draco-encoded ``vertices`` blobs (FORMAT07 §5.11), through the optional DracoPy."""

from __future__ import annotations

import numpy as np

from ..errors import MissingDependencyError, ZVFormatError

INSTALL_HINT = "pip install 'napari-zarr-vectors[draco]'"


def decode_draco(raw: bytes, ndim: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Decode one Draco bitstream into ``(points (n, ndim) float32, faces (m, 3) int64 | None)``."""
    try:
        import DracoPy
    except ImportError:
        raise MissingDependencyError(
            f"this store's mesh vertices are Draco-compressed and DracoPy is not installed: "
            f"{INSTALL_HINT}"
        ) from None
    if not raw.startswith(b"DRACO"):
        raise ZVFormatError("vertex blob is not a Draco bitstream (no DRACO magic)")
    try:
        decoded = DracoPy.decode(raw)
    except Exception as exc:  # DracoPy raises its own types on corrupt input
        raise ZVFormatError(f"Draco decoding failed: {exc}") from None
    points = np.asarray(decoded.points, dtype=np.float32)
    if points.size % ndim:
        raise ZVFormatError(f"Draco blob decodes to {points.size} values, not {ndim}-D points")
    points = points.reshape(-1, ndim)
    faces = getattr(decoded, "faces", None)
    faces_arr = None if faces is None else np.asarray(faces, dtype=np.int64)
    if faces_arr is not None and faces_arr.size % 3:
        raise ZVFormatError(f"Draco blob decodes to {faces_arr.size} face indices")
    faces_arr = None if faces_arr is None else faces_arr.reshape(-1, 3)
    if (
        faces_arr is not None
        and faces_arr.size
        and (faces_arr.min() < 0 or faces_arr.max() >= len(points))
    ):
        raise ZVFormatError("Draco faces reference points that do not exist")
    return points, faces_arr
