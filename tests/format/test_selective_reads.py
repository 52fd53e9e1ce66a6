"""bbox / object / group reads fetch only the blobs of the chunks they need."""

from __future__ import annotations

import numpy as np
import pytest
from _stores import CountingStore
from zarr.storage import LocalStore

import napari_zarr_vectors as nzv
from data_paths import data_root

V07 = data_root() / "v07"


def _open(name: str) -> tuple[nzv.Store, CountingStore]:
    counting = CountingStore(LocalStore(V07 / f"{name}.zarrvectors", read_only=True))
    return nzv.open_store(counting), counting


def test_bbox_reads_only_intersecting_chunks() -> None:
    store, counting = _open("points")
    counting.keys.clear()
    lo, hi = np.array([-12.0, -12.0, -12.0]), np.array([3.0, 4.0, 5.0])
    g = store.read(0, bbox=(lo, hi))
    read = counting.chunk_keys(0, "vertices")
    all_chunks = store.chunks(0)
    c_lo, c_hi = np.floor(lo / 10), np.floor(hi / 10)
    want = {".".join(map(str, c)) for c in all_chunks if np.all((c >= c_lo) & (c <= c_hi))}
    assert read == want
    assert len(read) < len(all_chunks)
    # exactly the points inside the inclusive box
    full = store.read(0)
    inside = np.all((full.positions >= lo) & (full.positions <= hi), axis=1)
    assert sorted(map(tuple, g.positions.tolist())) == sorted(
        map(tuple, full.positions[inside].tolist())
    )
    assert g.vertex_count == 24  # the reference reader's bin bug gives 17 (FORMAT07 §8.1)


@pytest.mark.parametrize("name", ["polylines", "graph", "mesh", "skeleton"])
def test_object_read_fetches_only_manifest_chunks(name: str) -> None:
    store, counting = _open(name)
    oid = int(store.object_ids(0)[0])
    want = {".".join(map(str, c)) for c, _ in store.manifest(0, oid)}
    counting.keys.clear()
    g = store.read(0, object_ids=[oid])
    assert counting.chunk_keys(0, "vertices") == want
    assert g.vertex_count > 0


def test_group_read_fetches_only_member_chunks() -> None:
    store, counting = _open("polylines")
    groups = store.groups(0)
    gid, members = next((g, m) for g, m in groups.items() if m.size)
    want = {".".join(map(str, c)) for oid in members for c, _ in store.manifest(0, int(oid))}
    counting.keys.clear()
    g = store.read(0, group_ids=[gid])
    assert counting.chunk_keys(0, "vertices") == want
    assert sorted(set(g.path_object_ids.tolist())) == sorted(members.tolist())


def test_polyline_bbox_keeps_whole_fragments_and_splits_paths() -> None:
    store = nzv.open_store(V07 / "polylines.zarrvectors")
    full = store.read(0)
    lo, hi = np.array([0.0, 0.0, 0.0]), np.array([9.0, 9.0, 9.0])
    g = store.read(0, bbox=(lo, hi))
    assert {tuple(c) for c in g.chunks.tolist()} <= {(0, 0, 0)}
    # every returned vertex is in chunk 0.0.0 and every path is a contiguous piece of its object
    assert np.all(np.floor(g.positions / 10) == 0)
    for rows, oid in zip(g.paths, g.path_object_ids, strict=True):
        obj = full.path_positions(int(np.flatnonzero(full.path_object_ids == oid)[0]))
        piece = g.positions[rows]
        starts = [
            i
            for i in range(len(obj) - len(piece) + 1)
            if np.array_equal(obj[i : i + len(piece)], piece)
        ]
        assert starts, f"path of object {oid} is not a contiguous run of the object"
