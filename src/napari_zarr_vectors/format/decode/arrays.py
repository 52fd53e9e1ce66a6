"""Row payloads: vertices, vertex/link/fragment attributes, flat link rows."""

from __future__ import annotations

import numpy as np

from ..errors import ZVFormatError


def parse_dtype(name: str) -> np.dtype:
    """A little-endian numpy dtype from a ZV ``dtype`` string (``"float32"``, ``"<i8"`` ...)."""
    try:
        dt = np.dtype(name)
    except TypeError:
        raise ZVFormatError(f"unknown dtype {name!r}") from None
    if dt.kind not in "biuf":
        raise ZVFormatError(f"unsupported dtype {name!r}")
    return dt.newbyteorder("<") if dt.itemsize > 1 else dt


def decode_rows(raw: bytes, dtype: np.dtype, width: int) -> np.ndarray:
    """``(N, width)`` rows of ``dtype`` from a headerless row-major payload."""
    row_bytes = dtype.itemsize * width
    if width <= 0 or len(raw) % row_bytes:
        raise ZVFormatError(
            f"payload of {len(raw)} bytes is not a whole number of {width}-wide {dtype} rows"
        )
    return np.frombuffer(raw, dtype=dtype).reshape(-1, width)


def decode_attribute(raw: bytes, dtype: np.dtype, n_rows: int, width: int | None) -> np.ndarray:
    """Attribute payload aligned with ``n_rows`` rows: ``(n_rows,)`` or ``(n_rows, C)``.

    ``width`` is the declared channel count; ``None`` derives it from the byte length
    (0.7 stores and 0.9 polylines do not record it).
    """
    values = np.frombuffer(raw, dtype=dtype) if len(raw) % dtype.itemsize == 0 else None
    if values is None:
        raise ZVFormatError(f"attribute payload of {len(raw)} bytes is not a multiple of {dtype}")
    if n_rows == 0:
        if values.size:
            raise ZVFormatError("attribute has values but the chunk has no vertices")
        return values.reshape(0) if not width or width == 1 else values.reshape(0, width)
    if width is None:
        if values.size % n_rows:
            raise ZVFormatError(
                f"attribute has {values.size} values, not a multiple of {n_rows} vertices"
            )
        width = values.size // n_rows
    if values.size != n_rows * width:
        raise ZVFormatError(f"attribute has {values.size} values, expected {n_rows} x {width}")
    return values if width == 1 else values.reshape(n_rows, width)
