"""Ground-truth tests on the 0.7.0 twins of the 0.9 fixtures (``v09/v07-twins``,
from ``tests/data/v07.tar.gz``).

The twins were written by zarr-vectors 0.7.0 from exactly the inputs of the 0.9.2 stores, so
their truth is ``tests/data/v09/expected/<name>.json`` (FORMAT09.md §10): ``input`` for level 0
and ``levels[L]`` for per-level facts. What carries over from the 0.9 pyramid to the 0.7 one:

* level 1 (bin 10, no sparsity) is built the same way by both: same manifests, same vertex
  counts, centroids equal up to float rounding (``TWIN_COARSE_ATOL``);
* level 2 differs (0.7 multiplies the *root* bin by each factor, 0.9 compounds them), but the
  seeded object selection is the same: only object presence is compared there;
* 0.7 polylines split runs at bin boundaries, so their level-0 fragment numbers differ from 0.9
  (their vertices per object do not);
* the 0.7 writer drops line vertex attributes and copies object attributes to coarse levels only
  for point clouds (dropped rows zero-filled instead of 0.9's sentinels).
"""

from __future__ import annotations

import numpy as np
import pytest
from _truth import (
    BOXES,
    PATH_TYPES,
    TWINS_DIR,
    StoreTruth,
    assert_attribute_values,
    assert_groups,
    assert_manifest,
    assert_mapping_of_arrays,
    assert_rows_close,
    assert_rows_equal,
    assert_same_multiset,
    check_bbox_object_type,
    check_bbox_point_cloud,
    check_group_reads,
    check_level0_vertex_object_ids,
    check_object_attributes,
    check_object_reads,
    coords,
    geom_edge_attribute_items,
    geom_edge_pairs,
    geom_face_triples,
    geom_paths,
    geom_positions,
    load_expected,
    twin_truth,
)

import napari_zarr_vectors as nzv
from data_paths import V09_STORES

TWINS = list(V09_STORES)  # the 0.7 twins of the stores 0.9.2 writes in the run
NUM_LEVELS = 3
STORE_LEVELS = [pytest.param(s, L, id=f"{s}-L{L}") for s in TWINS for L in range(NUM_LEVELS)]
OBJECT_TWINS = [s for s in TWINS if s != "points_binned"]
OBJECT_LEVELS = [p for p in STORE_LEVELS if p.values[0] != "points_binned"]
#: levels whose manifests/vertex counts are shared with the 0.9 truth (see module docstring)
SHARED_LEVELS = [p for p in OBJECT_LEVELS if p.values[1] <= 1]
POINT_LEVELS = [p for p in STORE_LEVELS if p.values[0] in ("points", "points_binned")]

_truths: dict[str, StoreTruth] = {}


def truth(name: str) -> StoreTruth:
    if name not in _truths:
        _truths[name] = twin_truth(name, load_expected("v09", name))
    return _truths[name]


def open_store(name: str):
    return nzv.open_store(TWINS_DIR / f"{name}.zarrvectors")


def test_twins_have_three_levels_in_the_truth():
    for name in TWINS:
        assert len(load_expected("v09", name)["levels"]) == NUM_LEVELS, name


# ---------------------------------------------------------------------------------------------
# store and level metadata
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", TWINS)
def test_store_metadata(name):
    t = truth(name)
    store = open_store(name)
    assert store.geometry_type == t.geometry_type
    assert store.ndim == 3
    assert list(store.axes) == ["x", "y", "z"]
    np.testing.assert_array_equal(np.asarray(store.bounds[0], float), t.bounds[0])
    np.testing.assert_array_equal(np.asarray(store.bounds[1], float), t.bounds[1])
    np.testing.assert_array_equal(np.asarray(store.chunk_shape, float), t.chunk_shape)
    assert [lv.index for lv in store.levels] == list(range(NUM_LEVELS))


@pytest.mark.parametrize(("name", "level"), STORE_LEVELS)
def test_level_info(name, level):
    lt = truth(name).levels[level]
    info = open_store(name).levels[level]
    assert info.index == level
    np.testing.assert_array_equal(np.asarray(info.chunk_shape, float), lt.chunk_shape)
    np.testing.assert_array_equal(np.asarray(info.bin_shape, float), lt.bin_shape)
    assert info.object_sparsity == pytest.approx(lt.object_sparsity)
    if lt.vertex_count is not None:
        assert info.vertex_count == lt.vertex_count


@pytest.mark.parametrize(("name", "level"), STORE_LEVELS)
def test_full_read_vertex_count(name, level):
    store = open_store(name)
    n = len(geom_positions(store.read(level=level)))
    assert n == store.levels[level].vertex_count
    if truth(name).levels[level].vertex_count is not None:
        assert n == truth(name).levels[level].vertex_count


# ---------------------------------------------------------------------------------------------
# level 0 against ``input``
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", TWINS)
def test_level0_positions(name):
    g = open_store(name).read(level=0)
    assert_same_multiset(coords(geom_positions(g)), coords(truth(name).positions), "positions")


@pytest.mark.parametrize(
    ("name", "level"),
    [p for p in STORE_LEVELS if truth(p.values[0]).levels[p.values[1]].level_rows is not None],
)
def test_positions_in_level_order(name, level):
    """Rows come chunk by chunk (chunks sorted as integer tuples), in chunk row order."""
    lt = truth(name).levels[level]
    g = open_store(name).read(level=level)
    assert_rows_close(geom_positions(g), lt.level_rows, lt.atol, f"L{level} level order")


VERTEX_ATTRS = [
    pytest.param(s, a, id=f"{s}-{a}") for s in TWINS for a in truth(s).vertex_attributes
]


@pytest.mark.parametrize(("name", "attr"), VERTEX_ATTRS)
def test_level0_vertex_attribute(name, attr):
    t = truth(name)
    g = open_store(name).read(level=0)
    assert attr in g.vertex_attributes, f"missing vertex attribute {attr!r}"
    index = t.coord_index()
    rows = np.array([index[c] for c in coords(geom_positions(g))], dtype=np.int64)
    assert_attribute_values(g.vertex_attributes[attr], t.vertex_attributes[attr][rows], attr)


@pytest.mark.parametrize("name", TWINS)
def test_level0_vertex_object_ids(name):
    check_level0_vertex_object_ids(open_store(name).read(level=0), truth(name))


@pytest.mark.parametrize("name", [s for s in TWINS if truth(s).geometry_type in PATH_TYPES])
def test_level0_paths(name):
    t = truth(name)
    paths = geom_paths(open_store(name).read(level=0))
    assert sorted(paths) == sorted(t.paths)
    for oid, rows in t.paths.items():
        assert_rows_equal(paths[oid], t.positions[rows], f"path of object {oid}")


@pytest.mark.parametrize("name", ["graph", "skeleton", "lines"])
def test_level0_edges(name):
    """Graph [u, v] (orientation as written), skeleton (child, parent), line [start, end]."""
    g = open_store(name).read(level=0)
    assert_same_multiset(
        geom_edge_pairs(g).elements(), truth(name).edge_pairs().elements(), "edges"
    )


def test_skeleton_forest_has_one_root_per_tree():
    """Four trees, 124 edges: the 0.7 global parent rule would add 4 spurious root edges."""
    t = truth("skeleton")
    g = open_store("skeleton").read(level=0)
    e = np.asarray(g.edges)
    assert e.shape == (124, 2)
    assert len(np.unique(e[:, 0])) == 124
    roots = sorted(set(range(len(g.positions))) - set(e[:, 0].tolist()))
    true_roots = sorted(set(range(len(t.positions))) - set(t.edges[:, 0].tolist()))
    assert_same_multiset(coords(geom_positions(g)[roots]), coords(t.positions[true_roots]), "roots")


@pytest.mark.parametrize(("name", "attr"), [("graph", "weight"), ("skeleton", "weight")])
def test_level0_edge_attribute(name, attr):
    """Values follow their edge; edges the 0.7 writer stored no value for read as NaN."""
    t = truth(name)
    g = open_store(name).read(level=0)
    assert attr in g.edge_attributes
    assert_same_multiset(
        geom_edge_attribute_items(g, attr).elements(),
        t.edge_attribute_items(attr).elements(),
        f"edge attribute {attr}",
    )


def test_level0_mesh_faces_with_winding():
    t = truth("mesh")
    g = open_store("mesh").read(level=0)
    assert len(np.asarray(g.faces)) == 720
    assert_same_multiset(geom_face_triples(g).elements(), t.face_triples().elements(), "faces")


# ---------------------------------------------------------------------------------------------
# per-level facts: objects, manifests, attributes, groups
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "level"), OBJECT_LEVELS)
def test_object_presence(name, level):
    got = np.asarray(open_store(name).object_presence(level=level), dtype=bool)
    np.testing.assert_array_equal(got, truth(name).levels[level].presence)


def test_points_binned_has_no_objects():
    store = open_store("points_binned")
    for level in range(NUM_LEVELS):
        assert np.asarray(store.object_presence(level=level)).size == 0
        assert dict(store.object_attributes(level=level)) == {}
        assert store.read(level=level).vertex_object_ids is None
    assert dict(store.groups(level=0)) == {}


@pytest.mark.parametrize(
    ("name", "level"),
    [p for p in SHARED_LEVELS if truth(p.values[0]).levels[p.values[1]].manifests],
)
def test_manifests(name, level):
    store = open_store(name)
    for oid, entries in truth(name).levels[level].manifests.items():
        assert_manifest(store.manifest(level, oid), entries, f"L{level} manifest of object {oid}")


@pytest.mark.parametrize(("name", "level"), OBJECT_LEVELS)
def test_object_attributes(name, level):
    check_object_attributes(open_store(name).object_attributes(level=level), truth(name), level)


@pytest.mark.parametrize("name", OBJECT_TWINS)
def test_groups(name):
    t = truth(name)
    store = open_store(name)
    assert_groups(store.groups(level=0), t.groups, "groups")
    assert_mapping_of_arrays(
        store.group_attributes(level=0), t.group_attributes, "group attributes"
    )


@pytest.mark.parametrize(
    ("name", "level"),
    [
        p
        for p in SHARED_LEVELS
        if p.values[1] == 1 and truth(p.values[0]).geometry_type in PATH_TYPES
    ],
)
def test_level1_paths_are_manifest_metavertex_sequences(name, level):
    lt = truth(name).levels[level]
    paths = {o: p for o, p in geom_paths(open_store(name).read(level=level)).items() if len(p)}
    present = {o for o, v in lt.object_vertices.items() if len(v)}
    assert set(paths) == present
    for oid in present:
        assert_rows_close(paths[oid], lt.object_vertices[oid], lt.atol, f"L1 path of {oid}")


@pytest.mark.parametrize("name", ["graph", "skeleton", "mesh"])
def test_coarse_levels_have_no_connectivity(name):
    store = open_store(name)
    for level in (1, 2):
        g = store.read(level=level)
        assert len(np.asarray(g.edges)) == 0
        assert len(np.asarray(g.faces)) == 0


# ---------------------------------------------------------------------------------------------
# selections
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "level"), SHARED_LEVELS)
def test_read_object_ids(name, level):
    """Object reads follow the manifests: the objects' vertices (exact at level 0)."""
    check_object_reads(open_store(name), truth(name), level)


@pytest.mark.parametrize("name", OBJECT_TWINS)
def test_read_dropped_objects_at_level2(name):
    store = open_store(name)
    presence = truth(name).levels[2].presence
    for o in np.flatnonzero(~presence).tolist():
        assert len(geom_positions(store.read(level=2, object_ids=[o]))) == 0, o
    kept = np.flatnonzero(presence).tolist()
    assert len(geom_positions(store.read(level=2, object_ids=kept))) > 0


@pytest.mark.parametrize("name", OBJECT_TWINS)
def test_read_group_ids(name):
    check_group_reads(open_store(name), truth(name))


@pytest.mark.parametrize("box", BOXES)
@pytest.mark.parametrize(("name", "level"), POINT_LEVELS)
def test_bbox_point_cloud(name, level, box):
    check_bbox_point_cloud(open_store(name), truth(name), level, box)


@pytest.mark.parametrize("box", BOXES)
@pytest.mark.parametrize("name", [s for s in TWINS if s not in ("points", "points_binned")])
def test_bbox_object_types(name, box):
    check_bbox_object_type(open_store(name), truth(name), 0, box)
