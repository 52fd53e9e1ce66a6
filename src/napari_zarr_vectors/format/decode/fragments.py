"""The ZVFG v1 fragment index (``vertex_fragments`` / ``link_fragments``), FORMAT07 §5.3."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..errors import ZVFormatError

MAGIC = 0x5A564647  # bytes on disk: b"GFVZ"
_HEADER = np.dtype(
    [("magic", "<u4"), ("version", "<u2"), ("flags", "<u2"), ("F", "<u4"), ("R", "<u4")]
)
_HEAD = struct.Struct("<IHHII")
_RANGE = struct.Struct("<qq")
_EMPTY = np.empty(0, np.int64)
_EMPTY.setflags(write=False)


@dataclass(frozen=True)
class FragmentIndex:
    """Decoded fragment index of one chunk.

    ``start``/``count`` hold the row range of every range fragment (``-1`` for explicit
    ones; int32 or int64); explicit fragment ``f`` owns ``explicit_rows[explicit_offsets[e]:explicit_offsets[e+1]]``
    with ``e = explicit_number[f]``.
    """

    is_range: np.ndarray  # (F,) bool
    start: np.ndarray  # (F,) int32 or int64
    count: np.ndarray  # (F,) int32 or int64
    explicit_number: np.ndarray  # (F,) int64, -1 for range fragments
    explicit_offsets: np.ndarray  # (E+1,) int64
    explicit_rows: np.ndarray  # (T,) int64

    @property
    def num_fragments(self) -> int:
        return int(self.is_range.size)

    @property
    def all_ranges(self) -> bool:
        return bool(self.is_range.all())

    def rows(self, f: int) -> np.ndarray:
        """Row indices (into the chunk's vertex rows) of fragment ``f``."""
        if self.is_range[f]:
            return np.arange(self.start[f], self.start[f] + self.count[f], dtype=np.int64)
        e = self.explicit_number[f]
        return self.explicit_rows[self.explicit_offsets[e] : self.explicit_offsets[e + 1]]


def expand_ranges(
    starts: np.ndarray, counts: np.ndarray, dtype: type[np.signedinteger] = np.int64
) -> np.ndarray:
    """Concatenate ``arange(s, s + c)`` for every pair, vectorised, in ``dtype`` (the
    caller makes sure every value fits)."""
    counts = np.asarray(counts)
    if counts.dtype.kind != "i":
        counts = counts.astype(np.int64)
    total = int(counts.sum(dtype=np.int64))
    if total == 0:
        return np.empty(0, dtype=dtype)
    if counts.min() < 0:
        raise ValueError("expand_ranges: negative count")
    # one array of steps, summed in place: 1 inside a range, the jump to the next range's
    # start at its first element (one allocation of the result and two of one value per
    # range, no repeat), all in ``dtype`` (every start and the total fit it)
    s = np.asarray(starts).astype(dtype, copy=False)
    c = counts.astype(dtype, copy=False)
    if not np.all(c > 0):
        nz = c > 0
        s, c = s[nz], c[nz]
    out = np.ones(total, dtype=dtype)
    at = np.cumsum(c, dtype=dtype)
    at -= c
    jump = s[1:] - s[:-1]
    jump -= c[:-1]
    jump += 1
    out[at[1:]] = jump
    del at, jump
    out[0] = s[0]
    return np.cumsum(out, out=out)


def _ranges_fit(start: np.ndarray, count: np.ndarray, n_rows: int) -> bool:
    """Whether every range ``[start, start + count)`` (non-negative) lies in ``n_rows`` rows,
    checked without forming ``start + count`` (a corrupt count near 2**63 would wrap)."""
    return bool(np.all(start <= n_rows) and np.all(count <= n_rows - start))


def _decode_all_ranges(raw: bytes, F: int, padded: int, n_rows: int | None) -> FragmentIndex | None:
    """Fast path for the common blob whose fragments are all ranges (every 0.9.2 writer);
    ``None`` when the bytes are not exactly that shape, so the general decoder reports."""
    if F == 1:  # one range (a coarse level's metavertex, a chunk of one object): no numpy
        return _decode_one_range(raw, padded, n_rows)
    full, rest = divmod(F, 8)
    bitmap = raw[16 : 16 + (F + 7) // 8]
    if bitmap[:full] != b"\xff" * full or (rest and bitmap[full] != (1 << rest) - 1):
        return None
    if raw[-4:] != b"\x00\x00\x00\x00":  # CSR offsets: a single uint32 0
        return None
    table = np.frombuffer(raw, "<i8", 2 * F, 16 + padded).reshape(F, 2)
    if table.min() < 0:
        return None
    # int32 when the rows are known to fit it (half the memory a whole level keeps):
    # every start and count at most ``n_rows`` (one contiguous pass), then cast and checked
    small = n_rows is not None and n_rows < 2**31 and int(table.max()) <= n_rows
    start = table[:, 0].astype(np.int32 if small else np.int64)
    count = table[:, 1].astype(np.int32 if small else np.int64)
    if n_rows is not None and not _ranges_fit(start, count, n_rows):
        return None
    all_ranges, no_exceptions = _range_constants(F)
    return FragmentIndex(all_ranges, start, count, no_exceptions, np.zeros(1, np.int64), _EMPTY)


def _decode_one_range(raw: bytes, padded: int, n_rows: int | None) -> FragmentIndex | None:
    """:func:`_decode_all_ranges` of a blob of one fragment, with Python integers (a dozen
    numpy calls on one pair cost more than the rest of such a chunk's decoding)."""
    if raw[16] != 1 or raw[-4:] != b"\x00\x00\x00\x00":
        return None
    start, count = _RANGE.unpack_from(raw, 16 + padded)
    if (
        start < 0
        or count < 0
        or (n_rows is not None and (start > n_rows or count > n_rows - start))
    ):
        return None
    dtype = np.int32 if n_rows is not None and n_rows < 2**31 else np.int64
    all_ranges, no_exceptions = _range_constants(1)
    return FragmentIndex(
        all_ranges,
        np.array([start], dtype),
        np.array([count], dtype),
        no_exceptions,
        np.zeros(1, np.int64),
        _EMPTY,
    )


@lru_cache(maxsize=256)
def _range_constants(F: int) -> tuple[np.ndarray, np.ndarray]:
    """The constant fields of ``F`` range fragments (every one a range, no exception rows)
    as read-only broadcasts: no memory per fragment, shared by the chunks of ``F`` fragments
    (a coarse level's chunks hold one or a few)."""
    return np.broadcast_to(np.True_, (F,)), np.broadcast_to(np.int64(-1), (F,))


def _header(raw: bytes) -> tuple[int, int, int]:
    """``(version, fragments, rows)`` of a ZVFG blob's 16-byte header (size and magic checked)."""
    if len(raw) < 16:
        raise ZVFormatError(
            f"fragment index of {len(raw)} bytes is shorter than its 16-byte header"
        )
    magic, version, _flags, F, R = _HEAD.unpack_from(raw)
    if magic != MAGIC:
        raise ZVFormatError(f"bad fragment index magic {raw[:4]!r} (expected b'GFVZ')")
    return version, F, R


def decode_fragment_index(raw: bytes, n_rows: int | None = None) -> FragmentIndex:
    """Decode a ZVFG v1 blob; ``n_rows`` (when known) bounds every row index."""
    size = len(raw)
    version, F, R = _header(raw)
    if version != 1:
        raise ZVFormatError(f"unsupported fragment index version {version}")
    bitmap_len = (F + 7) // 8
    padded = (bitmap_len + 7) // 8 * 8
    if F == 0:
        empty = np.empty(0, np.int64)
        return FragmentIndex(np.empty(0, bool), empty, empty, empty, np.zeros(1, np.int64), empty)
    if R > F or 16 + padded + 16 * R + 4 > size:
        raise ZVFormatError(
            f"fragment index declares {F} fragments / {R} ranges beyond its {size} bytes"
        )
    if R == F and size == 16 + padded + 16 * R + 4:
        fast = _decode_all_ranges(raw, F, padded, n_rows)
        if fast is not None:
            return fast
    bits = np.unpackbits(np.frombuffer(raw, np.uint8, bitmap_len, 16), bitorder="little")[:F]
    is_range = bits.astype(bool)
    if int(is_range.sum()) != R:
        raise ZVFormatError(f"fragment bitmap has {int(is_range.sum())} ranges, header says {R}")
    pos = 16 + padded
    table = np.frombuffer(raw, "<i8", 2 * R, pos).reshape(R, 2).astype(np.int64)
    pos += 16 * R
    E = F - R
    if pos + 4 * (E + 1) > size:
        raise ZVFormatError("fragment index CSR offsets run past the end of the blob")
    csr = np.frombuffer(raw, "<u4", E + 1, pos).astype(np.int64)
    pos += 4 * (E + 1)
    T = int(csr[-1])
    if csr[0] != 0 or np.any(np.diff(csr) < 0) or pos + 8 * T != size:
        raise ZVFormatError("fragment index CSR offsets are inconsistent with the blob length")
    explicit_rows = np.frombuffer(raw, "<i8", T, pos).astype(np.int64)
    start = np.full(F, -1, dtype=np.int64)
    count = np.zeros(F, dtype=np.int64)
    start[is_range] = table[:, 0]
    count[is_range] = table[:, 1]
    number = np.full(F, -1, dtype=np.int64)
    number[~is_range] = np.arange(E)
    if np.any(table[:, 0] < 0) or np.any(table[:, 1] < 0):
        raise ZVFormatError("fragment index has a negative range")
    if n_rows is not None:
        if R and not _ranges_fit(table[:, 0], table[:, 1], n_rows):
            raise ZVFormatError(f"fragment range beyond the chunk's {n_rows} rows")
        if T and (explicit_rows.min() < 0 or explicit_rows.max() >= n_rows):
            raise ZVFormatError(f"explicit fragment row beyond the chunk's {n_rows} rows")
    return FragmentIndex(is_range, start, count, number, csr, explicit_rows)


def fragment_index_length(raw: bytes) -> int:
    """Length in bytes of the ZVFG v1 blob at the start of ``raw`` (which may carry
    padding after it, as in the spec's dense ``vertex_fragments`` grid), from its header."""
    size = len(raw)
    _version, F, R = _header(raw)
    if F == 0:
        return 16
    padded = ((F + 7) // 8 + 7) // 8 * 8
    if R > F:
        raise ZVFormatError(f"fragment index declares {R} ranges for {F} fragments")
    pos = 16 + padded + 16 * R
    E = F - R
    if pos + 4 * (E + 1) > size:
        raise ZVFormatError(f"fragment index declares {F} fragments beyond its {size} bytes")
    total = int(np.frombuffer(raw, "<u4", 1, pos + 4 * E)[0])
    end = pos + 4 * (E + 1) + 8 * total
    if end > size:
        raise ZVFormatError(f"fragment index of {end} bytes runs past its {size}-byte cell")
    return end
