"""Sharded 0.9 grid arrays read without zarr: what 0.9 writers produce (one-cell inner
chunks, ``vlen-bytes`` + optional compressors, a little-endian index at the end). Each
shard file is fetched once, its index and inner chunks decoded here with the bounded
decoders."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...codecs import _decode_crc32c, decode_bytes_chunk
from ...errors import ZVFetchError, ZVFormatError
from ...io import StoreIO
from .cells import DIRECT_CODECS, unpack_vlen

if TYPE_CHECKING:
    from .grid import GridArray

#: how a sharded array is read directly: (shard shape, inner bytes-to-bytes codecs,
#: index checksummed)
ShardPlan = tuple[np.ndarray, tuple[dict[str, Any], ...], bool]


def shard_plan(codecs: list[dict[str, Any]], grid_cfg: Any, knd: int) -> ShardPlan | None:
    """How to read a sharded vlen-bytes array directly (what 0.9 writers produce: one-cell
    inner chunks, ``vlen-bytes`` + optional compressors, a little-endian index at the end),
    or ``None`` when zarr must read it."""
    if len(codecs) != 1 or codecs[0].get("name") != "sharding_indexed":
        return None
    cfg = codecs[0].get("configuration")
    shard = grid_cfg.get("chunk_shape") if isinstance(grid_cfg, dict) else None
    if not isinstance(cfg, dict) or not isinstance(shard, list) or len(shard) != knd:
        return None
    inner = [c if isinstance(c, dict) else {"name": c} for c in cfg.get("codecs") or []]
    index = [c if isinstance(c, dict) else {"name": c} for c in cfg.get("index_codecs") or []]
    names = [c.get("name") for c in index]
    little = not index or (index[0].get("configuration") or {}).get("endian", "little") == "little"
    if (
        cfg.get("chunk_shape") != [1] * knd
        or cfg.get("index_location", "end") != "end"
        or not inner
        or inner[0].get("name") != "vlen-bytes"
        or not all(c.get("name") in DIRECT_CODECS for c in inner[1:])
        or names not in (["bytes"], ["bytes", "crc32c"])
        or not little
        or not all(isinstance(n, int) and n >= 1 for n in shard)
    ):
        return None
    return np.asarray(shard, np.int64), tuple(inner[1:]), names == ["bytes", "crc32c"]


def shard_cell(raw: bytes, local: int, n_inner: int, plan: ShardPlan) -> bytes | memoryview | None:
    """One inner one-cell chunk of a shard file (its vlen payload; ``None`` when empty)."""
    _shape, inner, checksummed = plan
    size = 16 * n_inner + (4 if checksummed else 0)
    if len(raw) < size:
        raise ZVFormatError(f"shard of {len(raw)} bytes is shorter than its {size}-byte index")
    index = raw[len(raw) - size :]
    if checksummed:
        index = _decode_crc32c(index)
    offset, nbytes = (int(v) for v in np.frombuffer(index, "<u8", 2, 16 * local))
    if offset == nbytes == 2**64 - 1:
        return None
    if offset + nbytes > len(raw) - size:
        raise ZVFormatError(
            f"shard index points at bytes {offset}..{offset + nbytes} beyond the data"
        )
    chunk = raw[offset : offset + nbytes]
    data = decode_bytes_chunk(chunk, [{"name": "bytes"}, *inner]) if inner else chunk
    return unpack_vlen(data)


def read_sharded(
    io: StoreIO,
    level: int,
    requests: Sequence[tuple[str, np.ndarray]],
    sharded: list[tuple[int, np.ndarray, np.ndarray, GridArray]],
    out: list[list[bytes | memoryview | ZVFormatError | None]],
) -> None:
    """Cells of sharded arrays into ``out`` (``out[r][p]``: request ``r``, position ``p``):
    each shard file fetched once (all arrays in one batch), its index and inner chunks
    decoded here with the bounded decoders. ``sharded``: ``(request, positions, cells,
    array)`` of every request of a sharded array."""
    wanted: dict[str, int] = {}
    plan_rows = []
    for r, pos, cells, grid in sharded:
        assert grid.shard is not None  # (what makes it sharded)
        shape = grid.shard[0]
        keys = grid.keys(cells // shape)
        local = [
            int(np.ravel_multi_index(tuple(c), tuple(shape))) for c in (cells % shape).tolist()
        ]
        for p, key, loc in zip(pos.tolist(), keys, local, strict=True):
            wanted.setdefault(key, len(wanted))
            plan_rows.append((r, p, key, loc, grid))
    raws = io.fetch_many(list(wanted))
    for r, p, key, loc, grid in plan_rows:
        raw = raws[wanted[key]]
        if raw is None:
            continue
        array, chunks = requests[r]
        if isinstance(raw, ZVFetchError):
            out[r][p] = raw.located(
                store=io.name, level=level, array=array, chunk=chunks[p], key=key
            )
            continue
        assert grid.shard is not None  # (what makes it sharded)
        try:
            out[r][p] = shard_cell(raw, loc, int(np.prod(grid.shard[0])), grid.shard)
        except ZVFormatError as exc:
            out[r][p] = exc.located(
                store=io.name, level=level, array=array, chunk=chunks[p], key=key
            )
