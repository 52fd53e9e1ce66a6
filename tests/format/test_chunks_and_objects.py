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
def test_entries_by_chunk_equal_a_scan_of_the_whole_index(span) -> None:
    """The entries naming some chunks, found through the index's chunk-sorted entries, are
    those a scan of every entry finds, each with its chunk's position among the chunks
    asked for (16-, 32-, 64-bit and overflowing chunk key spaces)."""
    from napari_zarr_vectors.format.chunks import ChunkTable
    from napari_zarr_vectors.format.objects import ObjectIndex

    rng = np.random.default_rng(3)
    corners = rng.integers(0, 4, (30, 3)) * (span // 4) - (span // 8)
    chunks = corners[rng.integers(0, len(corners), 500)]
    counts = rng.integers(0, 6, 120)
    counts[-1] += 500 - counts.sum()
    offsets = np.r_[0, np.cumsum(counts)]
    index = ObjectIndex(np.arange(120) * 7 + 3, offsets, chunks, rng.integers(0, 4, 500))
    # one chunk no entry names
    wanted = np.unique(np.concatenate([corners[::3], [[span // 2, 1, 1]]]), axis=0)
    found, at = index.entries_by_chunk(wanted)
    expected = np.flatnonzero(ChunkTable(wanted).index_of(chunks) >= 0)
    np.testing.assert_array_equal(np.sort(found), expected)
    np.testing.assert_array_equal(wanted[at], chunks[found])
    assert len(found) > 0
    owner = np.repeat(np.arange(120), counts)
    # a few entries by binary search (the whole level's rows not built), many by a gather
    np.testing.assert_array_equal(index.rows_of_entries(found[:2]), owner[found[:2]])
    assert "entry_rows" not in index.__dict__
    np.testing.assert_array_equal(index.rows_of_entries(found), owner[found])
    np.testing.assert_array_equal(index.entry_rows, owner)


def test_chunk_table_finds_coordinates_near_the_int64_limits() -> None:
    """A bounding grid too large for linear keys (corrupt coordinates) must not make two
    chunks one: every row is found at its own position, absent rows are not found."""
    from napari_zarr_vectors.format.chunks import ChunkTable

    big, small = 2**63 - 1, -(2**63)
    rows = np.array([[big, 0, 0], [small, 1, 0], [0, 0, 0], [2**62, 3, 0], [small, 0, 0]])
    table = ChunkTable(rows)
    assert table.index_of(rows).tolist() == [0, 1, 2, 3, 4]
    # keys that wrap onto a stored one in a linear numbering are still absent
    absent = np.array([[big, 1, 0], [1, 0, 0], [2**61, 3, 0], [small + 1, 0, 0]])
    assert table.index_of(absent).tolist() == [-1] * 4
    assert table.index_of(rows[[4, 2]][None]).tolist() == [[4, 2]]
