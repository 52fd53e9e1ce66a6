"""Vlen-bytes chunks read packed: item spans found by one walk, blobs without objects."""

from __future__ import annotations

import numcodecs
import numpy as np
import pytest

from napari_zarr_vectors.format.decode.manifests import (
    Mode0Manifests,
    decode_mode0_manifests,
    join_manifests,
    read_manifests,
)
from napari_zarr_vectors.format.decode.vlen import PackedBlobs, blob_sizes, vlen_spans
from napari_zarr_vectors.format.errors import ZVFormatError


def _items(seed: int, n: int) -> list[bytes]:
    rng = np.random.default_rng(seed)
    return [rng.bytes(int(k)) for k in rng.integers(0, 60, n)]


def _payload(items: list[bytes]) -> bytes:
    return numcodecs.VLenBytes().encode(np.array(items, dtype=object))


def test_vlen_spans_find_the_items_numcodecs_decodes() -> None:
    items = _items(1, 500)
    payload = _payload(items)
    starts, sizes = vlen_spans(payload)
    assert sizes.tolist() == [len(b) for b in items]
    assert [payload[a : a + n] for a, n in zip(starts, sizes, strict=True)] == items
    assert list(PackedBlobs.from_vlen(payload)) == items


def test_vlen_spans_refuse_a_truncated_chunk_and_ignore_trailing_bytes() -> None:
    payload = _payload([b"abc", b"defgh"])
    with pytest.raises(ZVFormatError, match="truncated"):
        vlen_spans(payload[:-1])
    with pytest.raises(ZVFormatError, match="truncated"):
        vlen_spans(payload[:13])  # the second length is cut
    with pytest.raises(ZVFormatError, match="declares"):
        vlen_spans((10**6).to_bytes(4, "little") + payload[4:])
    with pytest.raises(ZVFormatError, match="no item count"):
        vlen_spans(b"\x01")
    # numcodecs reads a chunk with bytes after its last item: so do we
    assert list(PackedBlobs.from_vlen(payload + b"\x00\x07")) == [b"abc", b"defgh"]


def test_packed_blobs_index_slice_and_iterate_like_a_list() -> None:
    a, b = _items(2, 40), _items(3, 25)
    packed = PackedBlobs.concat(
        [
            PackedBlobs.from_vlen(_payload(a)),
            PackedBlobs.from_items([b""] * 3),
            PackedBlobs.from_items(b),
        ]
    )
    whole = a + [b""] * 3 + b
    assert len(packed) == len(whole)
    assert list(packed) == whole
    assert [packed[i] for i in range(-len(whole), len(whole))] == whole + whole
    assert list(packed[35:50]) == whole[35:50]
    assert list(packed[:0]) == []
    assert blob_sizes(packed).tolist() == [len(x) for x in whole]
    assert blob_sizes(whole).tolist() == [len(x) for x in whole]
    with pytest.raises(IndexError):
        packed[len(whole)]


def _manifest(entries: list[tuple[tuple[int, int, int], int]]) -> bytes:
    out = len(entries).to_bytes(4, "little")
    for chunk, frag in entries:
        out += np.array(chunk, "<i8").tobytes() + b"\x00" + np.int64(frag).astype("<i8").tobytes()
    return out


def test_packed_manifests_decode_as_the_list_of_them_does() -> None:
    rng = np.random.default_rng(4)
    manifests = [
        _manifest(
            [(tuple(rng.integers(-3, 9, 3).tolist()), int(rng.integers(0, 99))) for _ in range(k)]
        )
        for k in rng.integers(1, 7, 300)
    ]
    packed = PackedBlobs.concat(
        [PackedBlobs.from_vlen(_payload(manifests[:120])), PackedBlobs.from_items(manifests[120:])]
    )
    want = decode_mode0_manifests(manifests, 3)
    got = decode_mode0_manifests(packed, 3)
    assert want is not None and got is not None
    for w, g in zip(want, got, strict=True):
        np.testing.assert_array_equal(w, g)
    # the first entry: the first record of the first manifest
    assert got[1][0].tolist() == np.frombuffer(manifests[0], "<i8", 3, 4).tolist()
    assert int(got[2][0]) == int(np.frombuffer(manifests[0], "<i8", 1, 4 + 25)[0])
    # a block of another mode: not decoded here (one by one instead)
    odd = bytearray(manifests[5])
    odd[4 + 24] = 1
    assert decode_mode0_manifests(PackedBlobs.from_items([*manifests[:5], bytes(odd)]), 3) is None


def test_manifests_read_from_a_chunk_are_decoded_and_give_their_bytes_back() -> None:
    rng = np.random.default_rng(6)
    manifests = [
        _manifest(
            [(tuple(rng.integers(0, 5, 3).tolist()), int(rng.integers(0, 9))) for _ in range(k)]
        )
        for k in rng.integers(1, 5, 50)
    ]
    manifests[7] = b""  # an object without a manifest (the fill value)
    decoded = read_manifests(_payload(manifests), 3)
    assert isinstance(decoded, Mode0Manifests)
    assert list(decoded) == manifests  # each re-encoded exactly, the empty blob too
    assert decoded[-1] == manifests[-1] and decoded[7] == b""
    assert list(decoded[5:9]) == manifests[5:9]
    assert blob_sizes(decoded).tolist() == [len(m) for m in manifests]
    blocks, chunks, frags = decode_mode0_manifests(decoded, 3)
    assert blocks[7] == 0 and blocks.sum() == len(chunks) == len(frags)
    assert chunks[0].tolist() == np.frombuffer(manifests[0], "<i8", 3, 4).tolist()
    # a chunk holding a block of another mode stays packed: decoded one by one later
    odd = bytearray(manifests[3])
    odd[4 + 24] = 2
    mixed = [*manifests[:3], bytes(odd), *manifests[4:]]
    packed = read_manifests(_payload(mixed), 3)
    assert isinstance(packed, PackedBlobs) and list(packed) == mixed
    joined = join_manifests([decoded, packed, Mode0Manifests.none(2, 3)])
    assert list(joined) == manifests + mixed + [b"", b""]
    whole = join_manifests([decoded, Mode0Manifests.none(2, 3), decoded])
    assert isinstance(whole, Mode0Manifests)
    assert list(whole) == manifests + [b"", b""] + manifests
    with pytest.raises(IndexError):
        whole[len(whole)]
