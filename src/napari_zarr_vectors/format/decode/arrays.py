"""Row payloads: vertices, vertex/link/fragment attributes, flat link rows; the dtypes an
attribute may have (numbers, booleans, fixed-width text) in one place."""

from __future__ import annotations

import numpy as np

from ..errors import ZVFormatError, ZVUnsupportedDtypeError


def parse_dtype(name: str) -> np.dtype:
    """A little-endian numpy dtype from a ZV ``dtype`` string (``"float32"``, ``"<i8"`` ...)."""
    try:
        dt = np.dtype(name)
    except TypeError:
        raise ZVFormatError(f"unknown dtype {name!r}") from None
    if dt.kind not in "biuf":
        raise ZVFormatError(f"unsupported dtype {name!r}")
    return dt.newbyteorder("<") if dt.itemsize > 1 else dt


#: dtype kinds an attribute may have: booleans, integers, floats and fixed-width text
#: (``<U8``: UTF-32, what zarr-vectors writes for a numpy string array; ``|S8``: bytes)
ATTRIBUTE_KINDS = "biufUS"

#: Why an ``object`` attribute cannot be read (zarr-vectors 0.9.2 writes ``tobytes()`` of an
#: object array: the writing process's pointers to its Python objects, not the values)
OBJECT_DTYPE_REASON = (
    "dtype 'object': the writer stored the memory addresses of its Python objects, not the "
    "values (zarr-vectors 0.9.2 writes text given as an object array this way; pass it as a "
    "numpy string array, e.g. values.astype(str), to store the text)"
)


def parse_attribute_dtype(name: str) -> np.dtype:
    """The dtype of an attribute (vertex, edge, object, group) from its ZV ``dtype`` string:
    a number or a boolean as :func:`parse_dtype`, or fixed-width text (``"<U6"``, ``"|S4"``).

    Raises :class:`ZVUnsupportedDtypeError` for ``"object"`` (:data:`OBJECT_DTYPE_REASON`),
    other kinds (datetimes, structured, zero-width) and names numpy does not know.
    """
    try:
        dt = np.dtype(name)
    except TypeError:
        raise ZVUnsupportedDtypeError(f"unknown dtype {name!r}") from None
    if dt.kind == "O":
        raise ZVUnsupportedDtypeError(OBJECT_DTYPE_REASON)
    if dt.kind not in ATTRIBUTE_KINDS or dt.itemsize == 0:
        raise ZVUnsupportedDtypeError(f"unsupported dtype {name!r}")
    return dt.newbyteorder("<") if dt.itemsize > 1 and dt.kind != "S" else dt


def text_values(values: np.ndarray) -> np.ndarray:
    """Attribute values as Python-readable text where they are text: bytes (``S``) decoded
    as UTF-8, numpy variable-width strings (``T``, zarr's ``string`` arrays) as an ``object``
    array of ``str``; numbers, booleans, ``U`` and ``object`` arrays unchanged."""
    kind = values.dtype.kind
    if kind == "S":
        return np.char.decode(values, "utf-8", errors="replace")
    if kind == "T":
        return values.astype(object)
    return values


def decode_rows(raw: bytes | memoryview, dtype: np.dtype, width: int) -> np.ndarray:
    """``(N, width)`` rows of ``dtype`` from a headerless row-major payload."""
    row_bytes = dtype.itemsize * width
    if width <= 0 or len(raw) % row_bytes:
        raise ZVFormatError(
            f"payload of {len(raw)} bytes is not a whole number of {width}-wide {dtype} rows"
        )
    return np.frombuffer(raw, dtype=dtype).reshape(-1, width)


def decode_attribute(
    raw: bytes | memoryview, dtype: np.dtype, n_rows: int, width: int | None
) -> np.ndarray:
    """Attribute payload aligned with ``n_rows`` rows: ``(n_rows,)`` or ``(n_rows, C)``.

    ``width`` is the declared channel count; ``None`` derives it from the byte length
    (0.7 stores and 0.9 polylines do not record it).
    """
    if dtype.itemsize == 0:
        raise ZVFormatError(f"attribute dtype {dtype} has no width")
    values = np.frombuffer(raw, dtype=dtype) if len(raw) % dtype.itemsize == 0 else None
    if values is None:
        raise ZVFormatError(f"attribute payload of {len(raw)} bytes is not a multiple of {dtype}")
    if n_rows == 0:
        if values.size:
            raise ZVFormatError("attribute has values but the chunk has no vertices")
        values = text_values(values)
        return values.reshape(0) if not width or width == 1 else values.reshape(0, width)
    if width is None:
        if values.size % n_rows:
            raise ZVFormatError(
                f"attribute has {values.size} values, not a multiple of {n_rows} vertices"
            )
        width = values.size // n_rows
    if values.size != n_rows * width:
        raise ZVFormatError(f"attribute has {values.size} values, expected {n_rows} x {width}")
    values = text_values(values)
    return values if width == 1 else values.reshape(n_rows, width)
