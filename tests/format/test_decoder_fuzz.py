"""Mutated real blobs fed to every decoder: only ZVFormatError may escape."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import napari_zarr_vectors as nzv
from data_paths import data_root
from napari_zarr_vectors.format.codecs import decode_bytes_chunk
from napari_zarr_vectors.format.decode.arrays import decode_attribute, decode_rows
from napari_zarr_vectors.format.decode.fragments import decode_fragment_index
from napari_zarr_vectors.format.decode.links import (
    decode_cross_chunk_records,
    decode_flat_links,
    decode_ragged_links,
)
from napari_zarr_vectors.format.decode.manifests import decode_manifest, split_flat_manifests

V07 = data_root() / "v07"


def _payload(blob_dir: Path) -> tuple[bytes, list, int]:
    meta = json.loads((blob_dir / "zarr.json").read_text())
    raw = (blob_dir / "c" / "0").read_bytes()
    return raw, meta["codecs"], int(meta["shape"][0])


def _decoded(blob_dir: Path) -> bytes:
    raw, codecs, n = _payload(blob_dir)
    return decode_bytes_chunk(raw, codecs, n)


@cache
def real_blobs() -> dict[str, list[bytes]]:
    """A few real payloads of every kind, from the 0.7 fixtures."""
    mesh, graph, points = (V07 / f"{n}.zarrvectors" for n in ("mesh", "graph", "points"))
    manifests = zarr.open_array(
        store=str(V07 / "polylines.zarrvectors"), path="0/object_index/manifests", mode="r"
    )[:]
    return {
        "fragments": [
            _decoded(p) for p in sorted((points / "0/vertex_fragments").glob("*.*.*"))[:4]
        ],
        "vertices": [_decoded(p) for p in sorted((points / "0/vertices").glob("*.*.*"))[:4]],
        "manifests": [bytes(m) for m in manifests[:4]],
        "flat_links": [_decoded(p) for p in sorted((mesh / "0/links/0").glob("*.*.*"))[:3]],
        "ragged_links": [_decoded(p) for p in sorted((points / "0/links/+1").glob("*.*.*"))[:3]],
        "cross_chunk": [_decoded(graph / "0/cross_chunk_links/0/data")],
        "zstd": [(points / "1/vertices/0.0.0/c/0").read_bytes()],
    }


def _decode(kind: str, blob: bytes) -> object:
    if kind == "fragments":
        return decode_fragment_index(blob, 64)
    if kind == "vertices":
        rows = decode_rows(blob, np.dtype("<f4"), 3)
        return decode_attribute(blob, np.dtype("<f4"), max(len(rows), 1), None)
    if kind == "manifests":
        decode_manifest(blob, 3)
        return split_flat_manifests(blob, 3, 1)
    if kind == "flat_links":
        return decode_flat_links(blob, 3)
    if kind == "ragged_links":
        return decode_ragged_links(blob, 2)
    if kind == "cross_chunk":
        return decode_cross_chunk_records(blob, 2, 3)
    if kind == "zstd":
        return decode_bytes_chunk(blob, [{"name": "bytes"}, {"name": "zstd"}], 12)
    raise AssertionError(kind)


KINDS = ["fragments", "vertices", "manifests", "flat_links", "ragged_links", "cross_chunk", "zstd"]

mutation = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 10_000), st.integers(0, 255)),
    st.tuples(st.just("truncate"), st.integers(0, 10_000), st.just(0)),
    st.tuples(st.just("extend"), st.integers(1, 40), st.integers(0, 255)),
    st.tuples(
        st.just("int32"), st.integers(0, 10_000), st.sampled_from([0, 1, 2**31 - 1, 2**32 - 1])
    ),
    st.tuples(st.just("int64"), st.integers(0, 10_000), st.sampled_from([-1, 2**62, -(2**62)])),
)


def _mutate(blob: bytes, op: tuple[str, int, int]) -> bytes:
    kind, at, value = op
    data = bytearray(blob)
    if not data:
        return bytes([value & 0xFF])
    at %= len(data)
    if kind == "flip":
        data[at] = value
    elif kind == "truncate":
        del data[at:]
    elif kind == "extend":
        data += bytes([value]) * at
    elif kind == "int32":
        data[at : at + 4] = value.to_bytes(4, "little")
    else:
        data[at : at + 8] = value.to_bytes(8, "little", signed=True)
    return bytes(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(KINDS),
    which=st.integers(0, 3),
    ops=st.lists(mutation, min_size=1, max_size=3),
)
def test_mutated_blobs_raise_only_format_errors(kind: str, which: int, ops: list) -> None:
    blobs = real_blobs()[kind]
    blob = blobs[which % len(blobs)]
    for op in ops:
        blob = _mutate(blob, op)
    try:
        _decode(kind, blob)
    except nzv.ZVFormatError as exc:
        assert str(exc)  # a message, never an empty error


def test_real_blobs_decode_unmutated() -> None:
    for kind in KINDS:
        for blob in real_blobs()[kind]:
            assert _decode(kind, blob) is not None


def _ranges_blob(start: int, count: int) -> bytes:
    """A ZVFG v1 blob of one range fragment ``[start, start + count)``."""
    import struct

    head = struct.pack("<IHHII", 0x5A564647, 1, 0, 1, 1)
    return head + bytes([1]) + bytes(7) + struct.pack("<qq", start, count) + bytes(4)


def test_a_range_count_near_2_63_is_a_format_error_not_an_overflow() -> None:
    """Found by the 100,000-case fuzz run: a flipped bit made a range count so large that
    ``start + count`` wrapped negative, passed the row check, and numpy failed allocating."""
    import pytest

    from napari_zarr_vectors.format.errors import ZVFormatError

    ok = decode_fragment_index(_ranges_blob(5, 3), n_rows=8)
    assert ok.start.tolist() == [5] and ok.count.tolist() == [3]
    for start, count in ((5, 2**63 - 3), (2**62, 2**62), (9, 0)):
        with pytest.raises(ZVFormatError, match="beyond the chunk's 8 rows"):
            decode_fragment_index(_ranges_blob(start, count), n_rows=8)
