"""Point reads are exact in the box for every selection.

The matrix: store (0.7 layout, 0.9 layout, the 0.9 input written in the 0.7 layout, a
generated 0.9 store) x level x bbox (none, middle, chunk-aligned, one vertex, outside) x
selection (none, object ids, group ids, both). Ground truth:

* level 0: the writer input (``_truth``): the rows of the selected objects that lie in the box;
* every level: the whole-level read of the selected objects, filtered by the box, and the
  whole-level box read, filtered by object id (both must give the same vertices, each inside
  the box).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from _truth import (
    StoreTruth,
    assert_same_multiset,
    coords,
    in_box,
    load_expected,
    make_box,
    twin_truth,
    v07_truth,
)

import napari_zarr_vectors as nzv
from data_paths import data_root

DATA = data_root()

#: (id, store path, truth loader)
STORES = {
    "v07": (DATA / "v07" / "points.zarrvectors", lambda: v07_truth("points", _exp("v07"))),
    "v09": (DATA / "v09" / "points.zarrvectors", lambda: twin_truth("points", _exp("v09"))),
    "v09-twin": (
        DATA / "v09" / "v07-twins" / "points.zarrvectors",
        lambda: twin_truth("points", _exp("v09")),
    ),
}
BOXES = [None, "middle", "chunk-aligned", "on-vertex", "outside", "tight"]
SELECTIONS = ["none", "objects", "groups", "objects+groups", "missing-id"]


def _exp(version: str) -> dict:
    return load_expected(version, "points")


_cache: dict[str, tuple[nzv.Store, StoreTruth]] = {}


def store_and_truth(name: str) -> tuple[nzv.Store, StoreTruth]:
    if name not in _cache:
        path, load = STORES[name]
        _cache[name] = (nzv.open_store(path), load())
    return _cache[name]


def selection_args(t: StoreTruth, kind: str) -> tuple[dict, set[int] | None]:
    """Read keywords of a selection kind and the object ids it selects (``None`` = all)."""
    groups = sorted(t.groups)
    if kind == "none":
        return {}, None
    if kind == "objects":
        return {"object_ids": [1, 2, 11]}, {1, 2, 11}
    if kind == "groups":
        g = groups[-1]
        return {"group_ids": [g]}, set(t.groups[g])
    if kind == "objects+groups":
        g = groups[0]
        return {"object_ids": [20], "group_ids": [g]}, {20, *t.groups[g]}
    if kind == "missing-id":
        return {"object_ids": [10_000]}, set()
    raise ValueError(kind)


def box_of(t: StoreTruth, kind: str | None, chunk_shape) -> tuple[np.ndarray, np.ndarray] | None:
    if kind is None:
        return None
    if kind == "tight":  # a box around two objects' vertices, cutting through them
        p = t.positions[np.isin(t.object_ids, [1, 2, 11, 3])]
        lo, hi = p.min(0), p.max(0)
        return lo + 0.2 * (hi - lo), lo + 0.8 * (hi - lo)
    return make_box(t, kind, chunk_shape)


def read(s: nzv.Store, level: int, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error", nzv.ZVChunkWarning)
        return s.read(level, **kw)


@pytest.mark.parametrize("selection", SELECTIONS)
@pytest.mark.parametrize("box", BOXES, ids=lambda b: str(b))
@pytest.mark.parametrize("level", [0, 1, 2])
@pytest.mark.parametrize("name", list(STORES))
def test_point_reads_are_exact(name: str, level: int, box: str | None, selection: str) -> None:
    s, t = store_and_truth(name)
    kw, wanted = selection_args(t, selection)
    bbox = box_of(t, box, s.level(level).chunk_shape)
    g = read(s, level, bbox=bbox, **kw)
    pos = np.asarray(g.positions)
    ids = np.asarray(g.vertex_object_ids)
    assert ids.shape == (len(pos),)

    if bbox is not None:  # every vertex returned lies in the box
        assert np.all(in_box(pos, *bbox)), f"{int((~in_box(pos, *bbox)).sum())} outside"
    if wanted is not None and level == 0:  # ... and belongs to a selected object
        assert set(ids.tolist()) <= wanted

    # the same vertices as the read of the selection without a box, filtered by the box
    # (coarse metavertices may be shared by several objects: compare whole rows)
    ref = read(s, level, **kw)
    rpos = np.asarray(ref.positions)
    keep = np.ones(len(rpos), bool) if bbox is None else in_box(rpos, *bbox)
    assert_same_multiset(coords(pos), coords(rpos[keep]), "read vs filtered selection read")
    for k, v in ref.vertex_attributes.items():
        got = sorted(zip(coords(pos), np.asarray(g.vertex_attributes[k]).tolist(), strict=True))
        exp = sorted(zip(coords(rpos[keep]), np.asarray(v)[keep].tolist(), strict=True))
        assert got == exp, f"attribute {k}"
    if wanted is not None and bbox is not None:  # the box read restricted to the objects
        boxed = read(s, level, bbox=bbox)
        rows = np.isin(np.asarray(boxed.vertex_object_ids), sorted(wanted))
        if level == 0:
            assert_same_multiset(
                coords(pos), coords(np.asarray(boxed.positions)[rows]), "vs filtered box read"
            )
        else:  # a selected object's metavertex may be labelled with another object
            assert set(coords(np.asarray(boxed.positions)[rows])) <= set(coords(pos))

    if level == 0:  # the writer input
        rows = np.ones(len(t.positions), bool) if bbox is None else in_box(t.positions, *bbox)
        if wanted is not None:
            rows &= np.isin(t.object_ids, sorted(wanted))
        assert_same_multiset(coords(pos), coords(t.positions[rows]), "read vs truth")
        np.testing.assert_array_equal(
            np.sort(ids), np.sort(t.object_ids[rows]), err_msg="object ids vs truth"
        )
        if box == "on-vertex" and selection in ("none", "objects+groups"):
            assert len(pos) <= 1


def test_matrix_is_not_vacuous() -> None:
    """The boxes and selections above cut both ways: some vertices of the selected objects
    lie outside each finite box, and some inside (so the filter is really exercised)."""
    _, t = store_and_truth("v09")
    for box in ("middle", "tight"):
        lo, hi = box_of(t, box, t.chunk_shape)
        for sel in ("objects", "groups", "objects+groups"):
            _, wanted = selection_args(t, sel)
            sel_rows = np.isin(t.object_ids, sorted(wanted))
            inside = in_box(t.positions, lo, hi)
            assert (sel_rows & inside).any() and (sel_rows & ~inside).any(), (box, sel)


def test_issue_reproduction(tmp_path: Path) -> None:
    """The minimal reproduction of the issue, written by zarr-vectors 0.9.2."""
    zv_points = pytest.importorskip("zarr_vectors.types.points")
    p = str(tmp_path / "p.zarrvectors")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zv_points.write_points(
            p,
            np.array([[0, 0, 0], [5, 5, 5]], np.float32),
            chunk_shape=(10, 10, 10),
            object_ids=np.array([0, 0]),
            groups={0: [0]},
        )
    s = nzv.open_store(p)
    box = ([0, 0, 0], [1, 1, 1])
    for kw in ({}, {"object_ids": [0]}, {"group_ids": [0]}, {"object_ids": [0], "group_ids": [0]}):
        np.testing.assert_array_equal(s.read(bbox=box, **kw).positions, [[0, 0, 0]], str(kw))
    assert len(s.read(bbox=box, object_ids=[1]).positions) == 0
    np.testing.assert_array_equal(s.read(object_ids=[0]).positions, [[0, 0, 0], [5, 5, 5]])
