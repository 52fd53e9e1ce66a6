"""Ground-truth tests of the format core on the zarr-vectors 0.7.0 fixture stores.

Every store in ``v07/`` (``tests/data/v07.tar.gz``) is checked at every level against
``tests/data/v07/expected/<name>.json`` (see FORMAT07.md §11): level 0 against the exact writer
input, coarse levels against ``reference_readback`` (the reference's own low-level decode of
chunks and manifests). Shared comparison helpers live in ``_truth.py``.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from _truth import (
    BOXES,
    PATH_TYPES,
    V07_DIR,
    StoreTruth,
    assert_attribute_values,
    assert_groups,
    assert_manifest,
    assert_mapping_of_arrays,
    assert_rows_equal,
    assert_same_multiset,
    check_bbox_object_type,
    check_bbox_point_cloud,
    check_group_reads,
    check_level0_vertex_object_ids,
    check_object_attributes,
    check_object_reads,
    chunk_of,
    coord,
    coords,
    geom_edge_attribute_items,
    geom_edge_pairs,
    geom_face_triples,
    geom_paths,
    geom_positions,
    in_box,
    load_expected,
    normalise_face,
    skeleton_dfs_order,
    v07_truth,
)

import napari_zarr_vectors as nzv

#: store name -> number of levels (level 0 + one per ``reference_readback`` entry)
LEVELS = {
    "points": 3,
    "points_binned": 2,
    "lines": 3,
    "polylines": 2,
    "streamlines": 3,
    "graph": 2,
    "skeleton": 2,
    "mesh": 2,
    "mesh_draco": 1,
    "graph_interleaved": 1,
    "skeleton_root_last_chunk": 1,
}
STORES = list(LEVELS)
#: mesh_draco positions are quantized by Draco; it has its own tests at the end
EXACT_STORES = [s for s in STORES if s != "mesh_draco"]
STORE_LEVELS = [pytest.param(s, L, id=f"{s}-L{L}") for s in STORES for L in range(LEVELS[s])]
EXACT_LEVELS = [p for p in STORE_LEVELS if p.values[0] != "mesh_draco"]
COARSE_LEVELS = [p for p in STORE_LEVELS if p.values[1] >= 1]
OBJECT_STORES = [s for s in EXACT_STORES if s != "points_binned"]
OBJECT_LEVELS = [p for p in EXACT_LEVELS if p.values[0] != "points_binned"]
POINT_STORES = ["points", "points_binned"]
POINT_LEVELS = [p for p in STORE_LEVELS if p.values[0] in POINT_STORES]
NON_POINT_LEVELS = [p for p in EXACT_LEVELS if p.values[0] not in POINT_STORES]

_truths: dict[str, StoreTruth] = {}


def truth(name: str) -> StoreTruth:
    if name not in _truths:
        _truths[name] = v07_truth(name, load_expected("v07", name))
    return _truths[name]


def open_store(name: str):
    return nzv.open_store(V07_DIR / f"{name}.zarrvectors")


# ---------------------------------------------------------------------------------------------
# the ground truth itself
# ---------------------------------------------------------------------------------------------
def test_level_table_matches_ground_truth():
    for name, n in LEVELS.items():
        rb = load_expected("v07", name).get("reference_readback") or {}
        assert n == 1 + len(rb), name


@pytest.mark.parametrize("name", ["skeleton", "skeleton_root_last_chunk"])
def test_skeleton_dfs_rule_reproduces_writer(name):
    """The writer rule used to predict which skeleton link attributes exist is right."""
    d = load_expected("v07", name)
    order = skeleton_dfs_order(len(d["positions"]), d["edges_child_parent"])
    assert order == d["writer_dfs_order"]["reorder_map"]


# ---------------------------------------------------------------------------------------------
# store and level metadata
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", STORES)
def test_store_metadata(name):
    t = truth(name)
    store = open_store(name)
    assert store.geometry_type == t.geometry_type
    assert store.ndim == 3
    assert list(store.axes) == ["x", "y", "z"]
    assert len(store.levels) == LEVELS[name]
    assert [lv.index for lv in store.levels] == list(range(LEVELS[name]))
    lo, hi = (np.asarray(b, dtype=np.float64) for b in store.bounds)
    assert lo.shape == hi.shape == (3,)
    np.testing.assert_array_equal(np.asarray(store.chunk_shape, float), t.chunk_shape)
    if t.bounds is not None:
        np.testing.assert_array_equal(lo, t.bounds[0])
        np.testing.assert_array_equal(hi, t.bounds[1])
    else:  # graph_interleaved: no write_params in its JSON
        assert np.all(t.positions >= lo) and np.all(t.positions <= hi)


@pytest.mark.parametrize(("name", "level"), STORE_LEVELS)
def test_level_info(name, level):
    lt = truth(name).levels[level]
    info = open_store(name).levels[level]
    assert info.index == level
    assert info.vertex_count == lt.vertex_count
    if lt.chunk_shape is not None:
        np.testing.assert_array_equal(np.asarray(info.chunk_shape, float), lt.chunk_shape)
    if lt.bin_shape is not None:
        np.testing.assert_array_equal(np.asarray(info.bin_shape, float), lt.bin_shape)
    assert info.object_sparsity == pytest.approx(lt.object_sparsity)


@pytest.mark.parametrize(("name", "level"), STORE_LEVELS)
def test_full_read_vertex_count(name, level):
    store = open_store(name)
    g = store.read(level=level)
    assert (
        len(geom_positions(g))
        == store.levels[level].vertex_count
        == truth(name).levels[level].vertex_count
    )


# ---------------------------------------------------------------------------------------------
# level 0 against the writer input
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", EXACT_STORES)
def test_level0_positions(name):
    t = truth(name)
    g = open_store(name).read(level=0)
    assert geom_positions(g).shape[1] == 3
    assert_same_multiset(coords(geom_positions(g)), coords(t.positions), "level-0 positions")


@pytest.mark.parametrize(
    ("name", "level"),
    [p for p in EXACT_LEVELS if truth(p.values[0]).levels[p.values[1]].level_rows is not None],
)
def test_positions_in_level_order(name, level):
    """Rows come chunk by chunk (chunks sorted as integer tuples), in chunk row order."""
    g = open_store(name).read(level=level)
    assert_rows_equal(geom_positions(g), truth(name).levels[level].level_rows, "level order")


VERTEX_ATTRS = [
    pytest.param(s, a, id=f"{s}-{a}") for s in EXACT_STORES for a in truth(s).vertex_attributes
]


@pytest.mark.parametrize(("name", "attr"), VERTEX_ATTRS)
def test_level0_vertex_attribute(name, attr):
    """Per-vertex values (multi-channel and dictionary-encoded ones too) follow their vertex."""
    t = truth(name)
    g = open_store(name).read(level=0)
    assert attr in g.vertex_attributes, f"missing vertex attribute {attr!r}"
    index = t.coord_index()
    rows = np.array([index[c] for c in coords(geom_positions(g))], dtype=np.int64)
    assert_attribute_values(g.vertex_attributes[attr], t.vertex_attributes[attr][rows], attr)


def test_lines_have_no_vertex_attributes():
    """write_lines silently drops vertex attributes (FORMAT07 §6.2): none may be invented."""
    g = open_store("lines").read(level=0)
    assert dict(g.vertex_attributes) == {}


@pytest.mark.parametrize("name", EXACT_STORES)
def test_level0_vertex_object_ids(name):
    check_level0_vertex_object_ids(open_store(name).read(level=0), truth(name))


@pytest.mark.parametrize("name", [s for s in EXACT_STORES if truth(s).geometry_type in PATH_TYPES])
def test_level0_paths(name):
    """One path per object, vertices exactly in traversal order."""
    t = truth(name)
    g = open_store(name).read(level=0)
    paths = geom_paths(g)
    assert sorted(paths) == sorted(t.paths)
    for oid, rows in t.paths.items():
        assert_rows_equal(paths[oid], t.positions[rows], f"path of object {oid}")
    ids = np.asarray(g.vertex_object_ids)
    for oid, rows in zip(np.asarray(g.path_object_ids), g.paths, strict=True):
        assert np.all(ids[np.asarray(rows)] == oid)


@pytest.mark.parametrize(
    "name", ["graph", "graph_interleaved", "skeleton", "skeleton_root_last_chunk", "lines"]
)
def test_level0_edges(name):
    """Graph [u, v], skeleton (child, parent) and line [start, end] as coordinate pairs.

    For graph_interleaved the truth is what the bytes say (the reference decode), not the
    writer input: see ``v07_truth``.
    """
    t = truth(name)
    g = open_store(name).read(level=0)
    assert_same_multiset(geom_edge_pairs(g).elements(), t.edge_pairs().elements(), "edges")


@pytest.mark.parametrize("name", ["skeleton", "skeleton_root_last_chunk"])
def test_skeleton_is_the_true_tree(name):
    """One root (the writer's), one parent per other node, no spurious root edge."""
    d = load_expected("v07", name)
    t = truth(name)
    g = open_store(name).read(level=0)
    e = np.asarray(g.edges)
    assert e.shape == (len(t.edges), 2)
    children = Counter(e[:, 0].tolist())
    assert max(children.values()) == 1, "a node has two parents"
    roots = set(range(len(g.positions))) - set(children)
    assert len(roots) == 1
    true_root = d["writer_dfs_order"]["reorder_map"][0]
    assert coord(geom_positions(g)[roots.pop()]) == coord(t.positions[true_root])


EDGE_ATTRS = [
    pytest.param(s, a, id=f"{s}-{a}")
    for s in ("graph", "skeleton", "skeleton_root_last_chunk")
    for a in truth(s).edge_attributes
]


@pytest.mark.parametrize(("name", "attr"), EDGE_ATTRS)
def test_level0_edge_attribute(name, attr):
    """Link attributes follow their edge; edges the writer stored no value for read as NaN."""
    t = truth(name)
    g = open_store(name).read(level=0)
    assert attr in g.edge_attributes, f"missing edge attribute {attr!r}"
    assert_same_multiset(
        geom_edge_attribute_items(g, attr).elements(),
        t.edge_attribute_items(attr).elements(),
        f"edge attribute {attr}",
    )


def test_level0_mesh_faces_with_winding():
    t = truth("mesh")
    g = open_store("mesh").read(level=0)
    assert len(np.asarray(g.faces)) == 92
    assert_same_multiset(geom_face_triples(g).elements(), t.face_triples().elements(), "faces")


# ---------------------------------------------------------------------------------------------
# objects, groups and their attributes
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "level"), EXACT_LEVELS)
def test_object_attributes(name, level):
    check_object_attributes(open_store(name).object_attributes(level=level), truth(name), level)


@pytest.mark.parametrize(("name", "level"), EXACT_LEVELS)
def test_object_presence(name, level):
    lt = truth(name).levels[level]
    got = np.asarray(open_store(name).object_presence(level=level))
    if lt.presence is None:  # no objects in this store
        assert got.size == 0
    else:
        np.testing.assert_array_equal(got.astype(bool), lt.presence)


@pytest.mark.parametrize("name", EXACT_STORES)
def test_groups(name):
    t = truth(name)
    store = open_store(name)
    assert_groups(store.groups(level=0), t.groups, "groups")
    assert_mapping_of_arrays(
        store.group_attributes(level=0), t.group_attributes, "group attributes"
    )


@pytest.mark.parametrize(
    ("name", "level"), [p for p in COARSE_LEVELS if p.values[0] != "points_binned"]
)
def test_coarse_manifests(name, level):
    lt = truth(name).levels[level]
    store = open_store(name)
    for oid, entries in lt.manifests.items():
        assert_manifest(store.manifest(level, oid), entries, f"manifest of object {oid}")


@pytest.mark.parametrize(
    ("name", "level"),
    [p for p in COARSE_LEVELS if truth(p.values[0]).geometry_type in PATH_TYPES],
)
def test_coarse_paths_are_manifest_metavertex_sequences(name, level):
    lt = truth(name).levels[level]
    g = open_store(name).read(level=level)
    paths = {o: p for o, p in geom_paths(g).items() if len(p)}
    present = {o for o, m in lt.manifests.items() if m}
    assert set(paths) == present
    for oid in present:
        assert_rows_equal(paths[oid], lt.object_vertices[oid], f"L{level} path of object {oid}")


@pytest.mark.parametrize(("name", "level"), [("graph", 1), ("skeleton", 1), ("mesh", 1)])
def test_coarse_levels_have_no_connectivity(name, level):
    g = open_store(name).read(level=level)
    assert len(np.asarray(g.edges)) == 0
    assert len(np.asarray(g.faces)) == 0


@pytest.mark.parametrize(
    ("name", "level"), [p for p in COARSE_LEVELS if p.values[0] != "points_binned"]
)
def test_coarse_vertex_object_ids(name, level):
    """A shared metavertex carries one of the objects whose manifest references it."""
    lt = truth(name).levels[level]
    g = open_store(name).read(level=level)
    ids = np.asarray(g.vertex_object_ids)
    assert ids.shape == (len(geom_positions(g)),)
    referencing: dict[tuple, set] = {}
    for oid, verts in lt.object_vertices.items():
        for c in coords(verts):
            referencing.setdefault(c, set()).add(oid)
    for r, c in enumerate(coords(geom_positions(g))):
        assert int(ids[r]) in referencing[c], f"row {r} {c}: {ids[r]} not in {referencing[c]}"


# ---------------------------------------------------------------------------------------------
# selections: object ids, group ids, bounding boxes
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "level"), OBJECT_LEVELS)
def test_read_object_ids(name, level):
    check_object_reads(open_store(name), truth(name), level)


@pytest.mark.parametrize("name", [s for s in OBJECT_STORES if truth(s).groups])
def test_read_group_ids(name):
    check_group_reads(open_store(name), truth(name))


@pytest.mark.parametrize("box", BOXES)
@pytest.mark.parametrize(("name", "level"), POINT_LEVELS)
def test_bbox_point_cloud(name, level, box):
    check_bbox_point_cloud(open_store(name), truth(name), level, box)


def test_bbox_points_reference_example():
    """FORMAT07 §8.1: the box [-12,-12,-12]-[3,4,5] holds 24 points (the reference says 17)."""
    lo, hi = np.array([-12.0, -12, -12]), np.array([3.0, 4, 5])
    g = open_store("points").read(level=0, bbox=(lo, hi))
    t = truth("points")
    assert len(geom_positions(g)) == 24
    assert_same_multiset(
        coords(geom_positions(g)), coords(t.positions[in_box(t.positions, lo, hi)]), "bbox"
    )


@pytest.mark.parametrize("box", BOXES)
@pytest.mark.parametrize(("name", "level"), NON_POINT_LEVELS)
def test_bbox_object_types(name, level, box):
    check_bbox_object_type(open_store(name), truth(name), level, box)


# ---------------------------------------------------------------------------------------------
def test_graph_interleaved_decodes_what_the_bytes_say():
    """Positions and object membership are right on disk; the edges are not, and must be
    returned as stored: 2->4, 4->1, 1->3, 3->12, 12->13 (by x coordinate), not the input chain
    1->2->3->4->12->13."""
    d = load_expected("v07", "graph_interleaved")
    g = open_store("graph_interleaved").read(level=0)
    x = geom_positions(g)[:, 0]
    got = sorted((float(x[u]), float(x[v])) for u, v in np.asarray(g.edges))
    assert got == sorted([(2.0, 4.0), (4.0, 1.0), (1.0, 3.0), (3.0, 12.0), (12.0, 13.0)])
    input_x = [p[0] for p in d["positions"]]
    assert got != sorted((input_x[u], input_x[v]) for u, v in d["edges"])
    oid_of_x = {float(p[0]): o for p, o in zip(d["positions"], d["object_ids"], strict=True)}
    assert [oid_of_x[float(v)] for v in x] == np.asarray(g.vertex_object_ids).tolist()
    store = open_store("graph_interleaved")
    for oid in (0, 1):
        sel = geom_positions(store.read(level=0, object_ids=[oid]))[:, 0]
        assert sorted(sel.tolist()) == sorted(v for v, o in oid_of_x.items() if o == oid)


# ---------------------------------------------------------------------------------------------
# mesh_draco (FORMAT07 §5.11)
# ---------------------------------------------------------------------------------------------
DRACO_TOL = 0.01  # quantization_bits=11 over a 10-unit chunk: max error 0.0026 here


def _draco_match(g, t):
    pos = geom_positions(g).astype(np.float64)
    dist = np.linalg.norm(pos[:, None, :] - t.positions[None, :, :].astype(np.float64), axis=2)
    return dist.argmin(axis=1), dist.min(axis=1)


def test_mesh_draco_positions():
    pytest.importorskip("DracoPy")
    t = truth("mesh_draco")
    g = open_store("mesh_draco").read(level=0)
    nearest, err = _draco_match(g, t)
    assert len(nearest) == len(t.positions) == 50
    assert err.max() <= DRACO_TOL
    assert sorted(nearest.tolist()) == list(range(50)), "decoded vertices do not match 1:1"


def test_mesh_draco_faces():
    """Intra-chunk faces come out of the Draco blobs with their winding; cross-chunk faces
    (stored against the pre-encode order) may be dropped but never mis-joined."""
    pytest.importorskip("DracoPy")
    t = truth("mesh_draco")
    g = open_store("mesh_draco").read(level=0)
    nearest, _ = _draco_match(g, t)
    cs = coords(t.positions)
    got = Counter(normalise_face(tuple(cs[nearest[i]] for i in f)) for f in np.asarray(g.faces))
    truth_faces = t.face_triples()
    assert not (got - truth_faces), f"faces not in the mesh: {list(got - truth_faces)[:3]}"
    ch = chunk_of(t.positions, t.chunk_shape)
    intra = [f for f in t.faces if (ch[f] == ch[f[0]]).all()]
    assert len(intra) == 38
    intra_faces = Counter(normalise_face(tuple(cs[i] for i in f)) for f in intra)
    assert intra_faces <= got, "an intra-chunk face is missing"


def test_mesh_draco_vertex_attributes_not_misaligned():
    """vertex_attributes are stored in pre-encode order and cannot be joined to the decoded
    vertices; if a reader reports them anyway they must be right."""
    pytest.importorskip("DracoPy")
    t = truth("mesh_draco")
    g = open_store("mesh_draco").read(level=0)
    nearest, _ = _draco_match(g, t)
    for k, v in g.vertex_attributes.items():
        assert_attribute_values(v, t.vertex_attributes[k][nearest], f"draco attribute {k}")


def test_mesh_draco_objects():
    pytest.importorskip("DracoPy")
    store = open_store("mesh_draco")
    t = truth("mesh_draco")
    assert_mapping_of_arrays(
        store.object_attributes(level=0), t.object_attributes, "object attributes"
    )
    assert_groups(store.groups(level=0), t.groups, "groups")
    np.testing.assert_array_equal(np.asarray(store.object_presence(level=0)), [True, True])


# ---------------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------------
def test_not_a_store(tmp_path):
    with pytest.raises(nzv.NotAZVStoreError):
        nzv.open_store(tmp_path)
    with pytest.raises(nzv.ZVError):
        nzv.open_store(tmp_path / "missing.zarrvectors")
    assert issubclass(nzv.NotAZVStoreError, nzv.ZVError)
    assert issubclass(nzv.UnsupportedVersionError, nzv.ZVError)
    assert issubclass(nzv.ZVFormatError, nzv.ZVError)
    assert issubclass(nzv.MissingDependencyError, nzv.ZVError)
