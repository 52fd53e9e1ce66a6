"""Typed, range-checked access to values of ``zarr.json`` documents.

Every value the core reads from metadata goes through one of these helpers, so that a
corrupted document (a number turned into a string, ``null``, a negative or huge value, a
missing key, a list where a mapping belongs) raises :class:`ZVFormatError` naming the store,
the file and the field, never ``TypeError``/``ValueError``/``AttributeError`` from deep inside
the reader.

Each helper takes the mapping, the key, and a :class:`Source` (store name, file, level) used
only to compose the error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np

from .errors import ZVFormatError

#: Marker of a required field (no default).
REQUIRED: Any = object()

#: Upper bound of counts read from metadata when nothing tighter is known (2**40).
MAX_COUNT = 1 << 40

#: Bound of chunk coordinates and grid origins (a chunk grid wider than this cannot exist).
MAX_COORD = 1 << 40


@dataclass(frozen=True)
class Source:
    """Where a document comes from, for error messages."""

    store: str | None
    file: str
    level: int | None = None
    array: str | None = None

    def error(self, field: str, message: str) -> ZVFormatError:
        """A :class:`ZVFormatError` naming this file and ``field``."""
        return ZVFormatError(
            f"{self.file}: field {field!r} {message}",
            store=self.store,
            level=self.level,
            array=self.array,
        )


def _describe(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def as_mapping(value: object, field: str, src: Source) -> dict[str, Any]:
    """``value`` when it is a JSON object (``None`` -> ``{}``)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise src.error(field, f"is {_describe(value)}, expected a JSON object")
    return dict(value)


def mapping_field(doc: Mapping[str, object], key: str, src: Source) -> dict[str, Any]:
    """``doc[key]`` as a JSON object (absent or ``null`` -> ``{}``)."""
    return as_mapping(doc.get(key), key, src)


@overload
def int_field(
    doc: Mapping[str, object],
    key: str,
    src: Source,
    default: None,
    lo: int | None = 0,
    hi: int | None = MAX_COUNT,
) -> int | None: ...
@overload
def int_field(
    doc: Mapping[str, object],
    key: str,
    src: Source,
    default: int = ...,
    lo: int | None = 0,
    hi: int | None = MAX_COUNT,
) -> int: ...
def int_field(
    doc: Mapping[str, object],
    key: str,
    src: Source,
    default: object = REQUIRED,
    lo: int | None = 0,
    hi: int | None = MAX_COUNT,
) -> Any:
    """``doc[key]`` as an ``int`` in ``[lo, hi]``.

    Integral floats (``3.0``) are accepted; booleans, strings and fractions are not. An
    absent key returns ``default``; ``null`` does too when ``default`` is ``None`` (an
    optional field), and is an error otherwise (a count that was there and is gone).
    """
    value = doc.get(key)
    if value is None:
        if default is REQUIRED or (key in doc and default is not None):
            raise src.error(key, "is missing" if key not in doc else "is null")
        return default
    return check_int(value, key, src, lo, hi)


def check_int(
    value: object, field: str, src: Source, lo: int | None = 0, hi: int | None = MAX_COUNT
) -> int:
    """``value`` as an ``int`` in ``[lo, hi]``."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise src.error(field, f"is {_describe(value)}, expected an integer")
    if isinstance(value, float | np.floating):
        if not np.isfinite(value) or value != int(value):
            raise src.error(field, f"is {_describe(value)}, expected an integer")
        value = int(value)
    value = int(value)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise src.error(field, f"is {value}, expected an integer in [{lo}, {hi}]")
    return value


def float_field(
    doc: Mapping[str, object],
    key: str,
    src: Source,
    default: object = REQUIRED,
    lo: float | None = None,
    hi: float | None = None,
) -> Any:
    """``doc[key]`` as a finite ``float`` in ``[lo, hi]`` (``default`` when absent/null)."""
    value = doc.get(key)
    if value is None:
        if default is REQUIRED:
            raise src.error(key, "is missing")
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise src.error(key, f"is {_describe(value)}, expected a number")
    value = float(value)
    if not np.isfinite(value):
        raise src.error(key, f"is {value}, expected a finite number")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise src.error(key, f"is {value}, expected a number in [{lo}, {hi}]")
    return value


def str_field(doc: Mapping[str, object], key: str, src: Source, default: object = REQUIRED) -> Any:
    """``doc[key]`` as a ``str`` (``default`` when absent or null)."""
    value = doc.get(key)
    if value is None:
        if default is REQUIRED:
            raise src.error(key, "is missing")
        return default
    if not isinstance(value, str):
        raise src.error(key, f"is {_describe(value)}, expected a string")
    return value


def bool_field(doc: Mapping[str, object], key: str, src: Source, default: bool = False) -> bool:
    """``doc[key]`` as a ``bool`` (``default`` when absent or null; 0/1 accepted)."""
    value = doc.get(key)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise src.error(key, f"is {_describe(value)}, expected true or false")


def list_field(doc: Mapping[str, object], key: str, src: Source, default: object = REQUIRED) -> Any:
    """``doc[key]`` as a ``list`` (``default`` when absent or null)."""
    value = doc.get(key)
    if value is None:
        if default is REQUIRED:
            raise src.error(key, "is missing")
        return default
    if not isinstance(value, list | tuple):
        raise src.error(key, f"is {_describe(value)}, expected a list")
    return list(value)


def int_list(
    value: object,
    field: str,
    src: Source,
    n: int | None = None,
    lo: int | None = 0,
    hi: int | None = MAX_COUNT,
) -> list[int]:
    """``value`` as a list of ints in ``[lo, hi]`` (of length ``n`` when given)."""
    if not isinstance(value, list | tuple):
        raise src.error(field, f"is {_describe(value)}, expected a list of integers")
    if n is not None and len(value) != n:
        raise src.error(field, f"has {len(value)} values, expected {n}")
    return [check_int(v, f"{field}[{i}]", src, lo, hi) for i, v in enumerate(value)]


def float_list(value: object, field: str, src: Source, n: int | None = None) -> np.ndarray:
    """``value`` as a float64 array of finite numbers (of length ``n`` when given)."""
    if not isinstance(value, list | tuple) or any(
        isinstance(v, bool) or not isinstance(v, int | float) for v in value
    ):
        raise src.error(field, f"is {_describe(value)}, expected a list of numbers")
    arr = np.asarray(value, dtype=np.float64).reshape(-1)
    if n is not None and arr.size != n:
        raise src.error(field, f"has {arr.size} values, expected {n}")
    if not np.all(np.isfinite(arr)):
        raise src.error(field, f"is {_describe(value)}, expected finite numbers")
    return arr


def str_list(value: object, field: str, src: Source) -> list[str]:
    """``value`` as a list of strings."""
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise src.error(field, f"is {_describe(value)}, expected a list of strings")
    return list(value)


#: Most elements one Zarr chunk (or one inner chunk of a shard) may declare: zarr allocates a
#: whole chunk to decode it, so a hostile ``chunk_shape`` could otherwise claim gigabytes.
MAX_CHUNK_ELEMENTS = 1 << 24


def check_zarr_array_doc(doc: Mapping[str, object], src: Source) -> None:
    """Bound what zarr will allocate for an array: ``shape`` and every (inner) chunk shape
    must be lists of non-negative integers, a chunk at most :data:`MAX_CHUNK_ELEMENTS`."""
    int_list(doc.get("shape"), "shape", src, None, 0, MAX_COORD)
    grid = as_mapping(doc.get("chunk_grid"), "chunk_grid", src)
    config = as_mapping(grid.get("configuration"), "chunk_grid.configuration", src)
    shapes = [("chunk_grid.configuration.chunk_shape", config.get("chunk_shape"))]
    codecs = doc.get("codecs")
    if isinstance(codecs, list):
        for i, codec in enumerate(codecs):
            if isinstance(codec, Mapping) and codec.get("name") == "sharding_indexed":
                inner = as_mapping(codec.get("configuration"), f"codecs[{i}].configuration", src)
                shapes.append((f"codecs[{i}].configuration.chunk_shape", inner.get("chunk_shape")))
    for field, shape in shapes:
        if shape is None:
            continue
        dims = int_list(shape, field, src, None, 1, MAX_COORD)
        total = 1
        for d in dims:
            total *= d
        if total > MAX_CHUNK_ELEMENTS:
            raise src.error(field, f"declares chunks of {total} elements")


#: Largest array (bytes, 8 per element of a vlen array) read whole into memory: metadata,
#: object and group tables. A larger declared shape is corrupt (or hostile) metadata.
MAX_WHOLE_BYTES = 1 << 28

#: Most chunks an array read whole may be cut into (zarr visits each, stored or not: a
#: ``shape`` edited to a million chunks of a few bytes took a read ~40 s).
MAX_WHOLE_CHUNKS = 1 << 14


def check_whole_read(
    shape: Sequence[int],
    itemsize: int,
    src: Source,
    chunk_shape: Sequence[int] | None = None,
) -> None:
    """Refuse reading an array whole, before anything is read, when its declared shape
    exceeds :data:`MAX_WHOLE_BYTES` or, in chunks of ``chunk_shape`` (the chunks zarr
    decodes one by one), :data:`MAX_WHOLE_CHUNKS` chunks."""
    total = max(itemsize, 1)
    for n in shape:
        total *= int(n)
    if total > MAX_WHOLE_BYTES:
        raise src.error("shape", f"{list(shape)} declares {total} bytes to read whole")
    if chunk_shape is None or len(chunk_shape) != len(shape):
        return
    count = 1
    for n, c in zip(shape, chunk_shape, strict=True):
        count *= -(-int(n) // max(int(c), 1))
    if count > MAX_WHOLE_CHUNKS:
        raise src.error(
            "shape", f"{list(shape)} in chunks of {list(chunk_shape)} is {count} chunks to read"
        )
