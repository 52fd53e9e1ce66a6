"""``Store.read(level, chunks=..., object_ids=...)``: the objects' fragments inside the named
chunks only (what the level-of-detail loader reads for an object subset of a view)."""

from __future__ import annotations

import numpy as np
import pytest

from data_paths import data_root
from napari_zarr_vectors.format import open_store

DATA = data_root()


def _rows_by_object(g) -> dict[int, list[tuple]]:
    """Object id -> sorted vertex coordinates of its paths (or vertices)."""
    out: dict[int, list[tuple]] = {}
    if g.paths:
        for p, o in zip(g.paths, g.path_object_ids, strict=True):
            out.setdefault(int(o), []).extend(map(tuple, g.positions[p].tolist()))
    else:
        for o, xyz in zip(g.vertex_object_ids, g.positions.tolist(), strict=True):
            out.setdefault(int(o), []).append(tuple(xyz))
    return {k: sorted(v) for k, v in out.items()}


@pytest.mark.parametrize(
    "relpath",
    ["v07/streamlines", "v09/streamlines", "v09/polylines", "v07/skeleton", "v09/graph"],
)
def test_named_chunks_and_objects_read_their_intersection(relpath):
    store = open_store(DATA / f"{relpath}.zarrvectors")
    chunks = store.chunks(0)
    half = chunks[: max(len(chunks) // 2, 1)]
    ids = store.object_ids(0)
    wanted = ids[::2]
    got = store.read(0, chunks=half, object_ids=wanted)
    # the same as reading those chunks whole and keeping the wanted objects
    whole = store.read(0, chunks=half)
    expected = {k: v for k, v in _rows_by_object(whole).items() if k in set(wanted.tolist())}
    assert _rows_by_object(got) == expected
    assert expected, "the fixture should have wanted objects in half of its chunks"
    # only named chunks were read
    named = {tuple(c) for c in half.tolist()}
    assert {tuple(c) for c in np.asarray(got.chunks).tolist()} <= named
    if got.paths:  # every path is one object's, in its manifest order
        assert set(got.path_object_ids.tolist()) <= set(wanted.tolist())


def test_unique_rows_equals_numpy_row_unique() -> None:
    """The linear-key row unique (no row-wise void sort holding the GIL) gives exactly
    ``np.unique(..., axis=0)``: sorted rows, negatives, one row, none, and keys too wide for
    one int64 (the row-wise fallback)."""
    from napari_zarr_vectors.format.chunks import unique_rows

    rng = np.random.default_rng(5)
    cases = [
        rng.integers(-5, 9, (2_000, 3)),
        rng.integers(0, 3, (50, 2)),
        np.array([[4, -1, 7]]),
        np.empty((0, 3), np.int64),
        np.array([[0, 2**40, 1], [2**40, 0, 1], [0, 2**40, 1]]),
        np.array([[2**63 - 1, 0], [-(2**63), 1], [2**63 - 1, 0]]),  # would wrap around
        # a span a float rounds one short (2**60 + 2 -> 2**60): a corrupt manifest's chunk
        np.array([[0, 0], [2**60 + 1, 0], [0, 0]]),
    ]
    for coords in cases:
        np.testing.assert_array_equal(unique_rows(coords), np.unique(coords, axis=0))


@pytest.mark.parametrize("span", [4, 2**10, 2**18, 2**62])
def test_entries_in_chunks_equal_a_scan_of_the_whole_index(span) -> None:
    """The entries naming some chunks, found through the index's chunk-sorted entries, are
    those a scan of every entry finds (16-, 32-, 64-bit and overflowing chunk key spaces)."""
    from napari_zarr_vectors.format.chunks import ChunkTable
    from napari_zarr_vectors.format.objects import ObjectIndex

    rng = np.random.default_rng(3)
    corners = rng.integers(0, 4, (30, 3)) * (span // 4) - (span // 8)
    chunks = corners[rng.integers(0, len(corners), 500)]
    counts = rng.integers(0, 6, 120)
    counts[-1] += 500 - counts.sum()
    offsets = np.r_[0, np.cumsum(counts)]
    index = ObjectIndex(np.arange(120) * 7 + 3, offsets, chunks, rng.integers(0, 4, 500))
    wanted = np.concatenate([corners[::3], [[span // 2, 1, 1]]])  # one chunk no entry names
    found = index.entries_in_chunks(wanted)
    expected = np.flatnonzero(ChunkTable(np.unique(wanted, axis=0)).index_of(chunks) >= 0)
    np.testing.assert_array_equal(found, expected)
    assert len(found) > 0
    np.testing.assert_array_equal(index.rows_of_entries(found), index.entry_rows[found])
