"""Store.read_pieces: path pieces read without the object index (a first look at a view)."""

from __future__ import annotations

import numpy as np
import pytest

import napari_zarr_vectors as nzv
from data_paths import data_root
from napari_zarr_vectors.format.ranks import position_rank

DATA = data_root()
PATH_STORES = [
    f"{gen}/{name}.zarrvectors" for gen in ("v07", "v09") for name in ("polylines", "streamlines")
]


def rows_of(positions: np.ndarray) -> list[tuple]:
    return sorted(map(tuple, np.round(np.asarray(positions, np.float64), 5).tolist()))


def firsts(g: nzv.Geometry) -> np.ndarray:
    return g.positions[[int(p[0]) for p in g.paths]]


@pytest.mark.parametrize("name", PATH_STORES)
def test_every_piece_is_a_run_of_one_stored_path(name):
    store = nzv.open_store(DATA / name)
    chunks = store.chunks(0)
    whole = store.read(0)
    pieces = store.read_pieces(0, chunks)
    # all the vertices, once each, in pieces of unknown object
    assert rows_of(pieces.positions) == rows_of(whole.positions)
    assert pieces.vertex_object_ids is None
    assert np.all(pieces.path_object_ids == -1) and len(pieces.paths) >= len(whole.paths)
    # each piece is consecutive vertices of one stored path
    stored = [whole.positions[p] for p in whole.paths]
    for path in pieces.paths:
        run = pieces.positions[path]
        assert any(
            any(
                np.allclose(s[i : i + len(run)], run)
                for i in np.flatnonzero(np.all(np.isclose(s, run[0]), axis=1))
            )
            for s in stored
        )
    # edges join consecutive vertices of a piece
    pid = np.repeat(np.arange(len(pieces.paths)), [len(p) for p in pieces.paths])
    starts = np.concatenate(pieces.paths)
    assert len(pieces.edges) == len(starts) - len(pieces.paths)
    assert np.all(pid[np.searchsorted(starts, pieces.edges[:, 0])] >= 0)


@pytest.mark.parametrize("name", PATH_STORES)
def test_a_fraction_keeps_the_pieces_ranked_below_it_and_grows_with_it(name):
    store = nzv.open_store(DATA / name)
    chunks = store.chunks(0)
    every = store.read_pieces(0, chunks)
    rank = position_rank(firsts(every))
    for f in (0.25, 0.5):
        some = store.read_pieces(0, chunks, fraction=f)
        assert np.all(position_rank(firsts(some)) < f)
        assert len(some.paths) == int(np.sum(rank < f))
    small = set(rows_of(firsts(store.read_pieces(0, chunks, fraction=0.25))))
    large = set(rows_of(firsts(store.read_pieces(0, chunks, fraction=0.5))))
    assert small <= large
    # the same pieces whatever other chunks are read with them
    one = chunks[np.argmax([len(store.read_pieces(0, c[None]).paths) for c in chunks])][None]
    alone = set(rows_of(firsts(store.read_pieces(0, one, fraction=0.5))))
    assert len(alone) > 0 and alone <= large


@pytest.mark.parametrize("name", PATH_STORES)
def test_a_box_and_a_vertex_cap(name):
    store = nzv.open_store(DATA / name)
    chunks = store.chunks(0)
    lo, hi = np.asarray(store.bounds[0], float), np.asarray(store.bounds[1], float)
    box = (lo, lo + (hi - lo) * 0.6)
    every = store.read_pieces(0, chunks)
    inside = [
        np.all((every.positions[p] >= box[0]) & (every.positions[p] <= box[1]), axis=1)
        for p in every.paths
    ]
    boxed = store.read_pieces(0, chunks, bbox=box)
    assert len(boxed.paths) == sum(bool(m.any()) for m in inside) > 0
    for p in boxed.paths:  # kept whole, with a vertex inside
        q = boxed.positions[p]
        assert np.any(np.all((q >= box[0]) & (q <= box[1]), axis=1))
    cap = max(int(sum(m.sum() for m in inside)) // 3, 1)
    capped = store.read_pieces(0, chunks, bbox=box, max_vertices=cap)
    held = sum(
        int(np.all((capped.positions[p] >= box[0]) & (capped.positions[p] <= box[1]), axis=1).sum())
        for p in capped.paths
    )
    assert 0 < held <= cap
    # the lowest-ranked pieces: none left out ranks below one kept
    kept = position_rank(firsts(capped))
    all_ranks = position_rank(firsts(boxed))
    assert np.sum(all_ranks < kept.max()) <= len(capped.paths)


def test_other_geometry_types_are_refused():
    store = nzv.open_store(DATA / "v09" / "points.zarrvectors")
    with pytest.raises(ValueError, match="polylines and streamlines"):
        store.read_pieces(0, store.chunks(0))
