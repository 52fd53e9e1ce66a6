"""The spec's own physical form (seed 002 dense grid arrays) is read, for every geometry type.

Stores are written by ``_dense_writer`` (from the seed text) from the ground-truth inputs of the
0.9 fixtures, then read back and compared with those inputs: vertices, attributes, edges,
faces, paths, objects, groups, boxes. The fixture tree's ``dense/`` holds the same stores
(written for the session by :func:`data_paths.write_dense_fixture`), so that the fuzz campaign
mutates them too; they must equal freshly written ones and, byte for byte, the stores that were
once committed (their digests: ``tests/data/generated.json``).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from _dense_writer import write_dense
from _truth import (
    PATH_TYPES,
    StoreTruth,
    assert_attribute_values,
    assert_mapping_of_arrays,
    assert_same_multiset,
    check_level0_vertex_object_ids,
    check_object_selection,
    coords,
    geom_edge_pairs,
    geom_face_triples,
    geom_paths,
    geom_positions,
    in_box,
    load_expected,
    twin_truth,
)

import napari_zarr_vectors as nzv
from data_paths import data_root, recorded_digests, tree_digest, write_dense_fixture
from napari_zarr_vectors.format import ZVChunkWarning

NAMES = ["points", "lines", "polylines", "streamlines", "graph", "skeleton", "mesh"]
DENSE = data_root() / "dense"

_truths: dict[str, StoreTruth] = {}


def truth(name: str) -> StoreTruth:
    if name not in _truths:
        _truths[name] = twin_truth(name, load_expected("v09", name))
    return _truths[name]


def write(path: Path, name: str, **kw) -> Path:
    return write_dense_fixture(path, name, **kw)


_stores: dict[str, nzv.Store] = {}


def store(name: str, tmp_path_factory: pytest.TempPathFactory) -> nzv.Store:
    if name not in _stores:
        path = write(tmp_path_factory.mktemp("dense") / f"{name}.zarrvectors", name)
        _stores[name] = nzv.open_store(path)
    return _stores[name]


def read(s: nzv.Store, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ZVChunkWarning)
        return s.read(*args, **kw)


@pytest.mark.parametrize("name", NAMES)
def test_dense_store_reads_its_input(name: str, tmp_path_factory) -> None:
    t = truth(name)
    s = store(name, tmp_path_factory)
    assert s.generation == "dense" and s.geometry_type == t.geometry_type
    g = read(s, 0)
    pos = geom_positions(g)
    assert_same_multiset(coords(pos), coords(t.positions), "positions")
    index = {c: i for i, c in enumerate(coords(t.positions))}
    rows = np.array([index[c] for c in coords(pos)], np.int64)
    for k, v in t.vertex_attributes.items():
        assert_attribute_values(g.vertex_attributes[k], np.asarray(v)[rows], f"attribute {k}")
    check_level0_vertex_object_ids(g, t)
    if t.edges is not None:
        assert_same_multiset(geom_edge_pairs(g).elements(), t.edge_pairs().elements(), "edges")
    if t.faces is not None:
        assert_same_multiset(geom_face_triples(g).elements(), t.face_triples().elements(), "faces")
    if t.geometry_type in PATH_TYPES:
        paths = geom_paths(g)
        assert sorted(paths) == sorted(t.paths)
        for o, r in t.paths.items():
            np.testing.assert_array_equal(paths[o], t.positions[r], err_msg=f"path {o}")


@pytest.mark.parametrize("name", NAMES)
def test_dense_objects_groups_attributes(name: str, tmp_path_factory) -> None:
    t = truth(name)
    s = store(name, tmp_path_factory)
    np.testing.assert_array_equal(s.object_ids(0), np.arange(t.num_objects))
    assert_mapping_of_arrays(
        s.object_attributes(0),
        {k: v for k, v in t.object_attributes.items() if np.asarray(v).dtype.kind in "biuf"},
        "object attributes",
    )
    assert {g: sorted(m.tolist()) for g, m in s.groups(0).items()} == {
        g: sorted(m) for g, m in t.groups.items()
    }
    for oids in ([0], [1, 3], list(range(t.num_objects))):
        check_object_selection(read(s, 0, object_ids=oids), t, 0, oids)
    g0 = sorted(t.groups)[0]
    check_object_selection(read(s, 0, group_ids=[g0]), t, 0, t.group_members([g0]))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("frac", [(0.3, 0.67), (0.0, 0.5), (0.45, 0.55)])
def test_dense_bbox(name: str, frac, tmp_path_factory) -> None:
    """Boxes on the seed's grid (counted from bounds_min, not aligned with the origin)."""
    t = truth(name)
    s = store(name, tmp_path_factory)
    lo0, hi0 = s.bounds
    lo, hi = lo0 + frac[0] * (hi0 - lo0), lo0 + frac[1] * (hi0 - lo0)
    inside = coords(t.positions[in_box(t.positions, lo, hi)])
    g = read(s, 0, bbox=(lo, hi))
    got = coords(geom_positions(g))
    if t.geometry_type == "point_cloud":
        assert_same_multiset(got, inside, "points in box")
        ids = read(s, 0, bbox=(lo, hi), object_ids=[1, 2])
        want = in_box(t.positions, lo, hi) & np.isin(t.object_ids, [1, 2])
        assert_same_multiset(coords(ids.positions), coords(t.positions[want]), "ids in box")
    else:  # every vertex in the box is there, and only chunks the box touches were read
        assert set(inside) <= set(got)
        cs = s.chunk_shape
        c_lo, c_hi = np.floor((lo - lo0) / cs), np.floor((hi - lo0) / cs)
        cells = np.floor((geom_positions(g) - lo0) / cs)
        assert np.all((cells >= c_lo) & (cells <= c_hi))


def test_dense_grid_is_the_seed_grid(tmp_path: Path) -> None:
    """Chunk keys are cell indices counted from bounds_min; the level records the origin."""
    t = truth("points")
    s = nzv.open_store(write(tmp_path / "p.zarrvectors", "points"))
    np.testing.assert_array_equal(s.level(0).grid_origin, t.positions.min(0))
    cells = np.unique(np.floor((t.positions - t.positions.min(0)) / t.chunk_shape), axis=0)
    np.testing.assert_array_equal(s.chunks(0), cells.astype(np.int64))


def test_padding_is_not_data(tmp_path: Path) -> None:
    """N_max far above the used rows: the fill rows never come back, even where a real
    vertex equals the fill value (0, 0, 0)."""
    pos = np.array([[0, 0, 0], [1, 1, 1], [12, 3, 3], [0, 0, 0.5]], np.float32)
    p = write_dense(tmp_path / "z.zarrvectors", "point_cloud", pos, (10, 10, 10), n_max_slack=50)
    s = nzv.open_store(p)
    assert_same_multiset(coords(read(s, 0).positions), coords(pos), "positions")
    box = read(s, 0, bbox=([0, 0, 0], [0, 0, 0])).positions
    np.testing.assert_array_equal(box, [[0, 0, 0]])


def test_fragment_grid_without_fragments_trims_fill_rows(tmp_path: Path) -> None:
    """Without vertex_fragments, trailing fill rows are padding."""
    import shutil

    pos = np.array([[1, 1, 1], [2, 2, 2], [15, 1, 1]], np.float32)
    p = write_dense(tmp_path / "nf.zarrvectors", "point_cloud", pos, (10, 10, 10))
    shutil.rmtree(p / "0" / "vertex_fragments")
    assert_same_multiset(coords(read(nzv.open_store(p), 0).positions), coords(pos), "positions")


@pytest.mark.parametrize("name", NAMES)
def test_committed_dense_stores_match_the_writer(name: str, tmp_path_factory) -> None:
    """The tree's ``dense/`` (mutated by the fuzz campaign) holds what the writer writes."""
    path = DENSE / f"{name}.zarrvectors"
    a, b = read(nzv.open_store(path), 0), read(store(name, tmp_path_factory), 0)
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_array_equal(a.edges, b.edges)
    np.testing.assert_array_equal(a.faces, b.faces)


@pytest.mark.parametrize("name", NAMES)
def test_dense_stores_are_the_bytes_once_committed(name: str) -> None:
    """The session's ``dense/<name>`` is, file for file and byte for byte, the store that was
    tracked in ``tests/data/dense`` before it was generated in the run."""
    rel = f"dense/{name}.zarrvectors"
    assert tree_digest(DENSE / f"{name}.zarrvectors") == recorded_digests()[rel]


def test_chunk_boxes_follow_the_seed_grid(tmp_path_factory) -> None:
    """Pyramid QA chunk boxes of a dense store hold exactly their cells' vertices."""
    from napari_zarr_vectors.format.pyramid import chunk_boxes

    s = store("points", tmp_path_factory)
    lo, hi = chunk_boxes(s, 0)
    pos = read(s, 0).positions
    inside = np.zeros(len(pos), int)
    for a, b in zip(lo, hi, strict=True):
        inside += np.all((pos >= a) & (pos < b), axis=1) | np.all(pos == b, axis=1)
    assert np.all(inside >= 1)
    np.testing.assert_allclose(lo.min(0), truth("points").positions.min(0), atol=1e-4)
