"""The 0.9 container (zarr-vectors 0.9.2 stores) through the public API.

Ground truth: ``tests/data/v09/expected/<name>.json`` (``input`` = what the writer received,
``levels[L]`` = per-level facts incl. the library's own read), the 0.7.0 twins of the same
inputs, and for the edge-case stores zarr-vectors' own reader (test-only import).
Floats in the JSON are exact float32 values: everything is compared after casting to float32.
"""

from __future__ import annotations

import json
import re
import shutil
import warnings
from collections import Counter
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from data_paths import V09_STORES, data_root, recorded_digests, tree_digest
from napari_zarr_vectors.format import (
    UnsupportedVersionError,
    ZVChunkWarning,
    ZVFormatError,
    loading,
    open_store,
)
from napari_zarr_vectors.format.chunks import LoadedChunks
from napari_zarr_vectors.format.layout.v09 import V09Layout
from napari_zarr_vectors.format.loading import READ_BATCH, load_chunks

DATA = data_root() / "v09"
EDGE = DATA / "edge-cases"
TWINS = DATA / "v07-twins"
STORES = list(V09_STORES)  # the stores zarr-vectors 0.9.2 writes in the run
LEVELS = [0, 1, 2]
PATH_TYPES = ("line", "polyline", "streamline")
INT32_MIN = -(2**31)
#: coarse-level centroids of the 0.7 twins agree with the 0.9 ones to float rounding only
TWIN_COARSE_ATOL = 1e-4


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
@cache
def expected(name: str) -> dict:
    with open(DATA / "expected" / f"{name}.json", encoding="utf-8") as fh:
        return json.load(fh)


@cache
def store(path: str):
    return open_store(path)


def v09(name: str):
    return store(str(DATA / f"{name}.zarrvectors"))


def f32(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float64).astype(np.float32)


def coords(positions) -> list[tuple[float, ...]]:
    return [tuple(float(x) for x in r) for r in np.asarray(positions, dtype=np.float32)]


def key(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("."))


def value(v):
    """Hashable float32-normalised value (NaN -> None, vectors -> tuples)."""
    a = np.asarray(v)
    if a.dtype == object:
        return a.item() if a.ndim == 0 else tuple(a.tolist())
    if a.dtype.kind == "f":
        a = a.astype(np.float32)
        if a.ndim == 0:
            return None if np.isnan(a) else float(a)
        return tuple(None if np.isnan(x) else float(x) for x in a)
    return a.item() if a.ndim == 0 else tuple(int(x) for x in a)


def rotate(face: tuple) -> tuple:
    """Rotate a polygon so its smallest corner comes first (winding kept)."""
    i = min(range(len(face)), key=lambda k: face[k])
    return tuple(face[i:]) + tuple(face[:i])


def edge_pairs(geom) -> Counter:
    c = coords(geom.positions)
    return Counter((c[u], c[v]) for u, v in geom.edges.tolist())


def face_triples(geom) -> Counter:
    c = coords(geom.positions)
    return Counter(rotate(tuple(c[i] for i in f)) for f in geom.faces.tolist())


def read_quiet(s, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ZVChunkWarning)
        return s.read(*args, **kwargs)


def sentinel_to_nan(values) -> np.ndarray:
    """Expected object attribute column: JSON ``null`` -> NaN, integers kept."""
    if any(v is None for v in values) or any(isinstance(v, float) for v in values):
        return np.array([np.nan if v is None else v for v in values], dtype=np.float64).astype(
            np.float32
        )
    return np.asarray(values)


def assert_same_values(actual, expected_values, what: str) -> None:
    a = np.asarray(actual)
    e = np.asarray(expected_values)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != {e.shape}"
    if a.dtype.kind == "f" or e.dtype.kind == "f":
        np.testing.assert_array_equal(a.astype(np.float32), e.astype(np.float32), err_msg=what)
    else:
        np.testing.assert_array_equal(a, e, err_msg=what)


def copy_store(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    return dst


# ---------------------------------------------------------------------------------------------
# detection and metadata
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", STORES)
def test_generated_stores_are_the_bytes_the_truth_describes(name):
    """``v09/<name>`` is written in the run by zarr-vectors 0.9.2 from its ``expected`` JSON
    (``data_paths.write_v09``): file for file and byte for byte the store the JSON was taken
    from, which was tracked in ``tests/data/v09`` before."""
    assert (
        tree_digest(DATA / f"{name}.zarrvectors") == recorded_digests()[f"v09/{name}.zarrvectors"]
    )


@pytest.mark.parametrize("name", STORES)
def test_layout_is_detected(name):
    s = v09(name)
    assert s.generation == "0.9"
    assert isinstance(s.layout, V09Layout)
    assert s.zv_version == "0.9.2"
    assert s.geometry_type == expected(name)["geometry_type"]
    twin = store(str(TWINS / f"{name}.zarrvectors"))
    assert twin.generation == "0.7"


@pytest.mark.parametrize("name", STORES)
@pytest.mark.parametrize("level", LEVELS)
def test_level_metadata_and_listing(name, level):
    s = v09(name)
    lv = expected(name)["levels"][str(level)]
    info = s.level(level)
    assert info.vertex_count == lv["vertex_count"]
    root_chunk = expected(name)["writer"]["chunk_shape"]
    np.testing.assert_array_equal(info.chunk_shape, lv["chunk_shape"] or root_chunk)
    if lv["bin_shape"] is not None:
        np.testing.assert_array_equal(info.bin_shape, lv["bin_shape"])
    listed = [tuple(c) for c in s.chunks(level).tolist()]
    assert listed == sorted(key(k) for k in lv["vertices_nonempty_chunks"])


# ---------------------------------------------------------------------------------------------
# every level against the library's own read (same vertex order: chunk-major, fragment order)
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", STORES)
@pytest.mark.parametrize("level", LEVELS)
def test_level_matches_library_read(name, level):
    s = v09(name)
    lv = expected(name)["levels"][str(level)]
    lr = lv["library_read"]
    g = read_quiet(s, level)
    assert g.vertex_count == lv["vertex_count"]
    lib_pos = f32(lr["positions"]).reshape(-1, 3)
    if g.geometry_type in PATH_TYPES:
        paths = g.paths
        if g.geometry_type == "line":
            # the library builds a line from the first row of its first fragment and the last
            # row of its last fragment and drops lines that collapsed to one row (coarse levels)
            paths = [p[[0, -1]] for p in paths if len(p) >= 2]
        ours = np.concatenate([g.positions[p] for p in paths]) if paths else np.empty((0, 3))
        np.testing.assert_array_equal(ours, lib_pos)
        assert [len(p) for p in paths] == [b - a for a, b in lr["parts"]]
        if "part_objects" in lr:
            assert g.path_object_ids.tolist() == lr["part_objects"]
    else:
        np.testing.assert_array_equal(g.positions, lib_pos)
    if "edges" in lr:
        assert Counter(map(tuple, g.edges.tolist())) == Counter(map(tuple, lr["edges"]))
    if "faces" in lr:
        assert Counter(rotate(tuple(f)) for f in g.faces.tolist()) == Counter(
            rotate(tuple(f)) for f in lr["faces"]
        )
    for attr, values in (lr.get("vertex_attributes") or {}).items():
        ours = g.vertex_attributes[attr]
        if g.geometry_type in PATH_TYPES:
            ours = np.concatenate([ours[p] for p in g.paths])
        assert_same_values(ours, np.asarray(values).reshape(ours.shape), f"{name}/{attr}")


@pytest.mark.parametrize("name", STORES)
@pytest.mark.parametrize("level", LEVELS)
def test_objects_via_manifests(name, level):
    s = v09(name)
    lv = expected(name)["levels"][str(level)]
    ovm = lv.get("objects_via_manifests")
    if ovm is None:
        assert s.object_index(level) is None
        return
    assert sorted(s.object_ids(level).tolist()) == sorted(int(o) for o in ovm)
    presence = s.object_presence(level)
    for oid, obj in ovm.items():
        oid = int(oid)
        manifest = [(key(k), int(f)) for k, f in obj["manifest"]]
        assert s.manifest(level, oid) == manifest, f"object {oid}"
        assert bool(presence[oid]) == bool(manifest)
        g = read_quiet(s, level, object_ids=[oid])
        want = f32(obj["vertices"]).reshape(-1, 3)
        if g.geometry_type in PATH_TYPES:
            got = np.concatenate([g.positions[p] for p in g.paths]) if g.paths else want[:0]
            np.testing.assert_array_equal(got, want, err_msg=f"object {oid}")
            assert set(g.path_object_ids.tolist()) <= {oid}
        else:
            assert set(coords(g.positions)) == set(coords(want)), f"object {oid}"


@pytest.mark.parametrize("name", STORES)
@pytest.mark.parametrize("level", LEVELS)
def test_object_attributes(name, level):
    s = v09(name)
    lv = expected(name)["levels"][str(level)]
    want = lv.get("object_attributes") or {}
    got = s.object_attributes(level)
    assert set(got) == set(want)
    presence = s.object_attribute_presence(level)
    for attr, values in want.items():
        e = sentinel_to_nan(values)
        assert_same_values(got[attr], e, f"{name} level {level} {attr}")
        absent = [v is None or v == INT32_MIN for v in values]
        assert presence[attr].tolist() == [not a for a in absent]
    # the layout reports absence through fill values, NaN-aware
    for attr, oa in s.layout.read_object_attributes(level).items():
        assert oa.present is not None and oa.present.dtype == bool
        assert oa.present.tolist() == presence[attr][s.object_ids(level)].tolist()


@pytest.mark.parametrize("name", STORES)
def test_groups(name):
    s = v09(name)
    inp = expected(name)["input"]
    lv0 = expected(name)["levels"]["0"]
    groups = s.groups(0)
    if "groups" not in lv0:
        assert groups == {}
        return
    assert {g: m.tolist() for g, m in groups.items()} == dict(enumerate(lv0["groups"]))
    assert {int(g): sorted(m) for g, m in inp["groups"].items()} == {
        g: sorted(m.tolist()) for g, m in groups.items()
    }
    assert s.group_names(0) == dict(enumerate(inp.get("group_names") or []))
    ga = s.group_attributes(0)
    assert set(ga) == set(inp.get("group_attributes") or {})
    for attr, values in (inp.get("group_attributes") or {}).items():
        assert_same_values(ga[attr], values, attr)
    for level in (1, 2):  # pyramid levels carry no groups
        assert s.groups(level) == {}


# ---------------------------------------------------------------------------------------------
# level 0 against the writer's input
# ---------------------------------------------------------------------------------------------
def _vertex_records(positions, attrs: dict, ids) -> Counter:
    c = coords(positions)
    names = sorted(attrs)
    return Counter(
        (c[i], *(value(attrs[n][i]) for n in names), None if ids is None else int(ids[i]))
        for i in range(len(c))
    )


@pytest.mark.parametrize("name", STORES)
def test_level0_matches_writer_input(name):
    s = v09(name)
    e = expected(name)
    inp = e["input"]
    g = read_quiet(s, 0)
    gtype = g.geometry_type
    va = {}
    if gtype in ("point_cloud", "graph", "skeleton", "mesh"):
        va = {k: np.asarray(v) for k, v in (inp.get("vertex_attributes") or {}).items()}
        pos = f32(inp["positions"] if "positions" in inp else inp["vertices"]).reshape(-1, 3)
        ids = inp.get("vertex_object_ids")
        want = _vertex_records(pos, va, ids)
        got = _vertex_records(
            g.positions,
            {k: g.vertex_attributes[k] for k in va},
            None if ids is None else g.vertex_object_ids,
        )
        assert got == want
    if gtype == "line":
        ep = f32(inp["endpoints"])
        assert g.path_object_ids.tolist() == list(range(len(ep)))
        for i, p in enumerate(g.paths):
            np.testing.assert_array_equal(g.positions[p], ep[i])
        for attr, per_line in (inp.get("vertex_attributes") or {}).items():
            np.testing.assert_array_equal(
                g.vertex_attributes[attr][np.concatenate(g.paths)], f32(per_line).reshape(-1)
            )
    if gtype in ("polyline", "streamline"):
        assert g.path_object_ids.tolist() == list(range(len(inp["polylines"])))
        for i, p in enumerate(g.paths):
            np.testing.assert_array_equal(g.positions[p], f32(inp["polylines"][i]))
            for attr, per_line in (inp.get("vertex_attributes") or {}).items():
                assert_same_values(g.vertex_attributes[attr][p], per_line[i], attr)
    if gtype in ("graph", "skeleton"):
        pos = coords(f32(inp["positions"]).reshape(-1, 3))
        edges = [(pos[u], pos[v]) for u, v in inp["edges"]]
        assert edge_pairs(g) == Counter(edges)
        weight = f32(inp["link_attributes"]["weight"])
        got_w = g.edge_attributes["weight"]
        c = coords(g.positions)
        got = Counter(
            (c[u], c[v], value(w)) for (u, v), w in zip(g.edges.tolist(), got_w, strict=True)
        )
        if gtype == "graph":
            assert got == Counter((a, b, value(w)) for (a, b), w in zip(edges, weight, strict=True))
        else:
            # the skeleton writer keeps link attributes only for stored edges (FORMAT09 §11.4)
            by_edge = {ab: value(w) for ab, w in zip(edges, weight, strict=True)}
            stored = [k for k in got.elements() if k[2] is not None]
            assert len(stored) == 82
            assert all(by_edge[(a, b)] == w for a, b, w in stored)
    if gtype == "mesh":
        pos = coords(f32(inp["vertices"]).reshape(-1, 3))
        want = Counter(rotate(tuple(pos[i] for i in f)) for f in inp["faces"])
        assert face_triples(g) == want
    oa = s.object_attributes(0)
    for attr, values in (inp.get("object_attributes") or {}).items():
        assert_same_values(oa[attr], values, attr)


def test_point_bbox_is_vertex_exact():
    s = v09("points")
    pos = f32(expected("points")["input"]["positions"]).reshape(-1, 3)
    for lo, hi in [
        ((-40, -40, -40), (60, 60, 60)),
        ((0, -5, 3), (20, 20, 20)),
        ((1, 1, 1), (2, 2, 2)),
    ]:
        g = read_quiet(s, 0, bbox=(lo, hi))
        inside = np.all((pos >= f32(lo)) & (pos <= f32(hi)), axis=1)
        assert Counter(coords(g.positions)) == Counter(coords(pos[inside]))


# ---------------------------------------------------------------------------------------------
# the 0.7 twins give the same geometry
# ---------------------------------------------------------------------------------------------
def _close_rows(a: np.ndarray, b: np.ndarray, atol: float) -> bool:
    a = np.unique(np.asarray(a, np.float64).reshape(-1, 3), axis=0)
    b = np.unique(np.asarray(b, np.float64).reshape(-1, 3), axis=0)
    if a.shape != b.shape:
        return False
    d = np.abs(a[:, None, :] - b[None, :, :]).max(axis=2)
    return bool(d.min(axis=1).max() <= atol) and len(set(d.argmin(axis=1).tolist())) == len(b)


@pytest.mark.parametrize("name", STORES)
def test_twin_level0_same_geometry(name):
    a = read_quiet(v09(name), 0)
    b = read_quiet(store(str(TWINS / f"{name}.zarrvectors")), 0)
    assert Counter(coords(a.positions)) == Counter(coords(b.positions))
    assert [coords(a.positions[p]) for p in a.paths] == [coords(b.positions[p]) for p in b.paths]
    assert a.path_object_ids.tolist() == b.path_object_ids.tolist()
    assert edge_pairs(a) == edge_pairs(b)
    assert face_triples(a) == face_triples(b)
    for attr in set(a.vertex_attributes) & set(b.vertex_attributes):
        assert _vertex_records(a.positions, {attr: a.vertex_attributes[attr]}, None) == (
            _vertex_records(b.positions, {attr: b.vertex_attributes[attr]}, None)
        )
    if name != "lines":  # the 0.7.0 write_lines drops vertex attributes
        assert set(a.vertex_attributes) == set(b.vertex_attributes)
    ca, cb = coords(a.positions), coords(b.positions)
    for attr in set(a.edge_attributes) & set(b.edge_attributes):
        ours = {
            (ca[u], ca[v]): value(w)
            for (u, v), w in zip(a.edges.tolist(), a.edge_attributes[attr], strict=True)
        }
        for (u, v), w in zip(b.edges.tolist(), b.edge_attributes[attr], strict=True):
            # 0.7 wrote values for intra-chunk links only; the 0.9.2 skeleton writer keeps
            # them for stored (non-implied) links only: compare where both hold a value
            if value(w) is not None and ours[(cb[u], cb[v])] is not None:
                assert ours[(cb[u], cb[v])] == value(w)
    for attr, values in b.vertex_attributes.items():
        assert values.shape == a.vertex_attributes[attr].shape
    oa, ob = v09(name).object_attributes(0), store(str(TWINS / f"{name}.zarrvectors"))
    for attr, values in ob.object_attributes(0).items():
        assert_same_values(oa[attr], values, attr)
    assert {k: v.tolist() for k, v in v09(name).groups(0).items()} == {
        k: v.tolist() for k, v in ob.groups(0).items()
    }


@pytest.mark.parametrize("name", STORES)
def test_twin_level1_same_geometry(name):
    a = read_quiet(v09(name), 1)
    b = read_quiet(store(str(TWINS / f"{name}.zarrvectors")), 1)
    assert a.vertex_count == b.vertex_count
    assert _close_rows(a.positions, b.positions, TWIN_COARSE_ATOL)
    assert len(a.paths) == len(b.paths)
    for pa, pb in zip(a.paths, b.paths, strict=True):
        np.testing.assert_allclose(a.positions[pa], b.positions[pb], atol=TWIN_COARSE_ATOL)


# ---------------------------------------------------------------------------------------------
# links
# ---------------------------------------------------------------------------------------------
def _records(ls) -> Counter:
    out = Counter()
    for m in range(len(ls)):
        attrs = tuple(value(v[m]) for _, v in sorted(ls.attributes.items()))
        out[(tuple(map(tuple, ls.chunks[m].tolist())), tuple(ls.rows[m].tolist()), attrs)] += 1
    return out


@pytest.mark.parametrize("name", ["graph", "skeleton", "mesh", "polylines"])
def test_read_links_finds_records_stored_at_neighbours(name):
    s = v09(name)
    full = s.links(0, 0)
    assert len(full) > 0
    chunks = s.chunks(0)
    rng = np.random.default_rng(0)
    for size in (1, 2, 5, len(chunks) // 2):
        pick = chunks[np.sort(rng.choice(len(chunks), size, replace=False))]
        wanted = {tuple(c) for c in pick.tolist()}
        keep = [any(tuple(c) in wanted for c in full.chunks[m].tolist()) for m in range(len(full))]
        want = _records(full.keep(np.asarray(keep, bool)))
        assert _records(s.links(0, 0, pick)) == want


def test_read_links_reads_only_cells_that_can_reach_the_chunks(monkeypatch):
    s = open_store(DATA / "graph.zarrvectors")
    layout = s.layout
    seen: list[int] = []
    original = layout.grids.read

    def spy(level, requests):
        seen.extend(len(c) for _, c in requests)
        return original(level, requests)

    monkeypatch.setattr(layout.grids, "read", spy)
    layout.read_links(0, 0, s.chunks(0)[:1])
    partial = sum(seen)
    seen.clear()
    layout.read_links(0, 0)
    assert 0 < partial < sum(seen) / 4


def _record_set(ls) -> set:
    return {
        (tuple(map(tuple, c)), tuple(r))
        for c, r in zip(ls.chunks.tolist(), ls.rows.tolist(), strict=True)
    }


def test_perm_undo_restores_the_worked_example():
    """FORMAT09 §3.5: graph/0/links/0/+1.0.0 at (-1,-1,-1) holds row [1,0,1]."""
    s = v09("graph")
    ls = s.links(0, 0, np.array([[-1, -1, -1]]))
    recs = _record_set(ls)
    assert (((0, -1, -1), (-1, -1, -1)), (1, 0)) in recs


def test_mesh_perm_undo_restores_winding_example():
    s = v09("mesh")
    ls = s.links(0, 0, np.array([[-1, -1, -1]]))
    recs = _record_set(ls)
    assert (((0, -1, -1), (-1, -1, -1), (-1, -1, -1)), (0, 11, 7)) in recs


CROSS_LEVEL = [str(DATA / f"{n}.zarrvectors") for n in STORES] + [
    str(EDGE / "grid_demo.zarrvectors"),
    str(EDGE / "schema_demo2.zarrvectors"),
]


@pytest.mark.parametrize("path", CROSS_LEVEL, ids=lambda p: Path(p).stem)
def test_cross_level_links_join_vertices_to_their_metavertex(path):
    """Every ±1 record resolves to real rows, and the fine vertex lies in the coarse bin of
    its metavertex (FORMAT09 §5, cross-level; anchors with differing chunk sizes)."""
    s = store(path)
    loaded = {}
    for lv in s.levels:
        decoded = load_chunks(s.layout, lv.index, s.chunks(lv.index), [], strict=True)
        loaded[lv.index] = LoadedChunks.build(decoded, 3, lv.key_ndim)
    checked = 0
    for lv in s.levels:
        for delta in s.layout.link_deltas(lv.index):
            if delta == 0:
                continue
            ls = s.links(lv.index, delta)
            assert ls.width == 2 and len(ls) > 0
            a = loaded[lv.index].global_rows(ls.chunks[:, 0], ls.rows[:, 0])
            b = loaded[lv.index + delta].global_rows(ls.chunks[:, 1], ls.rows[:, 1])
            assert (a >= 0).all() and (b >= 0).all()
            pa = loaded[lv.index].positions[a]
            pb = loaded[lv.index + delta].positions[b]
            fine, coarse = (pa, pb) if delta > 0 else (pb, pa)
            bins = s.level(max(lv.index, lv.index + delta)).bin_shape
            np.testing.assert_array_equal(np.floor(fine / bins), np.floor(coarse / bins))
            checked += len(ls)
    assert checked > 0


# ---------------------------------------------------------------------------------------------
# edge-case stores (checked against zarr-vectors' own reader where it can read them)
# ---------------------------------------------------------------------------------------------
def zv_level(path: Path, level: int = 0):
    """zarr-vectors' own reader (test-only; the plugin never imports it)."""
    zv = pytest.importorskip("zarr_vectors")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zv.open(str(path)).level(level)


def zv_read(path: Path, level: int = 0, **sel):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zv_level(path, level).read(**sel)


def _sorted_rows(pos, *cols) -> np.ndarray:
    table = np.column_stack(
        [np.asarray(pos, np.float64), *[np.asarray(c, np.float64) for c in cols]]
    )
    return table[np.lexsort(table.T[::-1])]


@pytest.mark.parametrize(
    "name", ["grid_demo", "schema_demo2", "shard_zstd", "fa_demo", "sparse_ids"]
)
def test_edge_case_positions_match_library(name):
    path = EDGE / f"{name}.zarrvectors"
    s = store(str(path))
    for lv in s.levels:
        g = read_quiet(s, lv.index)
        r = zv_read(path, lv.index)
        attrs = sorted(r.attributes or {})
        assert sorted(g.vertex_attributes) == attrs
        np.testing.assert_array_equal(
            _sorted_rows(g.positions, *(g.vertex_attributes[a] for a in attrs)),
            _sorted_rows(r.positions, *(np.asarray(r.attributes[a]) for a in attrs)),
        )
        assert g.vertex_count == lv.vertex_count


def test_per_array_grids_differ_within_a_level():
    """schema_demo2: vertices (shape 2³, origin 1) and links/+1 (shape 5³, origin 0)."""
    s = store(str(EDGE / "schema_demo2.zarrvectors"))
    v = s.layout.grids.open(0, "vertices")
    lk = s.layout.grids.open(0, "links/+1/0.0.0")
    assert v.origin.tolist() != lk.origin.tolist() or v.shape.tolist() != lk.shape.tolist()
    # chunks outside an array's own grid hold no data (no error)
    far = np.array([[-5, -5, -5], [50, 50, 50]])
    assert s.layout.read_cells(0, ["vertices", "vertex_fragments"], far) == {
        "vertices": [None, None],
        "vertex_fragments": [None, None],
    }
    assert len(s.links(0, 1)) == s.level(0).vertex_count


def test_chunk_by_attribute_store():
    path = EDGE / "cba_demo.zarrvectors"
    s = store(str(path))
    info = s.level(0)
    assert info.key_ndim == 4
    assert s.chunks(0).shape[1] == 4
    g = read_quiet(s, 0)
    r = zv_read(path)
    np.testing.assert_array_equal(
        _sorted_rows(g.positions, g.vertex_attributes["i"]),
        _sorted_rows(r.positions, np.asarray(r.attributes["i"])),
    )
    genes = g.vertex_attributes["gene"]
    for gene in info.chunk_attribute_values:
        rg = zv_read(path, where={"gene": gene})
        mine = g.positions[genes == gene]
        np.testing.assert_array_equal(_sorted_rows(mine), _sorted_rows(rg.positions))
    # objects resolve through 4-component manifests
    for oid in s.object_ids(0)[:10]:
        go = read_quiet(s, 0, object_ids=[int(oid)])
        ro = zv_level(path).objects[int(oid)]
        assert set(coords(go.positions)) == set(coords(np.asarray(ro.positions)))
    # a bbox read keeps every attribute bin of the spatial chunks
    lo, hi = (0, 0, 0), (15, 15, 15)
    gb = read_quiet(s, 0, bbox=(lo, hi))
    inside = np.all((g.positions >= lo) & (g.positions <= hi), axis=1)
    assert Counter(coords(gb.positions)) == Counter(coords(g.positions[inside]))


def test_explicit_fragments_and_manifest_modes():
    path = EDGE / "explicit_demo.zarrvectors"
    s = store(str(path))
    lib = zv_level(path)
    ids = s.object_ids(0).tolist()
    assert ids == [5, 1000, 70000]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        manifests = lib.objects.manifests(ids)
        for oid in ids:
            assert s.manifest(0, oid) == [(tuple(c), f) for c, f in manifests[oid]]
            g = read_quiet(s, 0, object_ids=[oid])
            # a point cloud is a set: explicit fragments may repeat rows
            assert set(coords(g.positions)) == set(coords(np.asarray(lib.objects[oid].positions)))
    assert {k: v.tolist() for k, v in s.groups(0).items()} == {0: [5, 70000]}
    label = s.object_attributes(0)["label"]
    assert label[[5, 1000, 70000]].tolist() == [10, 20, 30]


def test_sparse_object_ids():
    path = EDGE / "sparse_ids.zarrvectors"
    s = store(str(path))
    assert s.object_ids(0).tolist() == [5, 1000, 70000]
    lib = zv_level(path)
    for oid in (5, 1000, 70000):
        g = read_quiet(s, 0, object_ids=[oid])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = np.asarray(lib.objects[oid].positions)
        assert Counter(coords(g.positions)) == Counter(coords(want))
        assert set(g.vertex_object_ids.tolist()) <= {oid}
    assert read_quiet(s, 0, object_ids=[6]).vertex_count == 0
    presence = s.object_attribute_presence(0)["label"]
    assert np.flatnonzero(presence).tolist() == [5, 1000, 70000]


def test_fragment_attributes_are_listed_and_row_aligned():
    s = store(str(EDGE / "fa_demo.zarrvectors"))
    names = s.layout.list_attributes(0, "fragment")
    assert sorted(names) == ["object_id", "weight"]
    chunks = s.chunks(0)
    arrays = [f"fragment_attributes/{n}" for n in names]
    cells = s.layout.read_cells(0, ["vertex_fragments", *arrays], chunks)
    from napari_zarr_vectors.format.decode.arrays import decode_attribute, parse_dtype
    from napari_zarr_vectors.format.decode.fragments import decode_fragment_index

    index = s.object_index(0)
    for i, c in enumerate(chunks.tolist()):
        frags = decode_fragment_index(cells["vertex_fragments"][i])
        meta = s.layout.array_attributes(0, "fragment_attributes/object_id")
        owner = decode_attribute(
            cells["fragment_attributes/object_id"][i],
            parse_dtype(meta["dtype"]),
            frags.num_fragments,
            None,
        )
        for e in range(len(index.frags)):
            if tuple(index.chunks[e]) == tuple(c):
                row = np.searchsorted(index.offsets, e, side="right") - 1
                assert owner[index.frags[e]] == index.ids[row]


def test_multichannel_polyline_attribute_width_from_bytes():
    s = store(str(EDGE / "poly_mc.zarrvectors"))
    meta = s.layout.array_attributes(0, "vertex_attributes/rgb")
    assert meta.get("row_shape") == []
    g = read_quiet(s, 0)
    rgb = g.vertex_attributes["rgb"]
    assert rgb.shape == (g.vertex_count, 3)


def test_draco_mesh_intra_faces_from_the_draco_blob():
    pytest.importorskip("DracoPy")
    s = store(str(EDGE / "mesh_draco.zarrvectors"))
    with pytest.warns(ZVChunkWarning) as record:
        g = s.read(0)
    messages = " ".join(str(w.message) for w in record)
    assert "pre-Draco" in messages
    inp = expected("mesh")["input"]
    verts = f32(inp["vertices"]).reshape(-1, 3)
    assert g.vertex_count == len(verts)
    # quantised positions: map every decoded point to its input vertex
    d = np.abs(g.positions[:, None, :].astype(np.float64) - verts[None]).max(axis=2)
    nearest = d.argmin(axis=1)
    assert d.min(axis=1).max() < 0.05
    assert len(set(nearest.tolist())) == len(verts)
    faces = {rotate(tuple(f)) for f in inp["faces"]}
    ours = [rotate(tuple(nearest[f].tolist())) for f in g.faces.tolist()]
    assert len(ours) == expected("mesh")["writer"]["write_report"]["intra_face_count"]
    assert set(ours) <= faces


# ---------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------
def test_unknown_version_is_refused(tmp_path):
    path = copy_store(DATA / "points_binned.zarrvectors", tmp_path)
    root = json.loads((path / "zarr.json").read_text())
    root["attributes"]["zarr_vectors"]["zv_version"] = "0.8.1"
    (path / "zarr.json").write_text(json.dumps(root))
    with pytest.raises(UnsupportedVersionError, match=r"0\.8\.1"):
        open_store(path)


def test_unknown_container_is_refused(tmp_path):
    path = copy_store(DATA / "points_binned.zarrvectors", tmp_path)
    meta = json.loads((path / "0" / "vertices" / "zarr.json").read_text())
    meta["data_type"] = "float32"
    meta["fill_value"] = 0.0
    meta["codecs"] = [{"name": "bytes", "configuration": {"endian": "little"}}]
    (path / "0" / "vertices" / "zarr.json").write_text(json.dumps(meta))
    with pytest.raises(UnsupportedVersionError, match=r"0\.9\.2"):
        open_store(path)


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: b"garbage",  # not a vlen frame
        lambda raw: raw[:-5],  # truncated payload
        lambda raw: raw[:8] + raw[9:],  # payload no longer whole float32 rows
    ],
    ids=["garbage", "truncated", "misaligned"],
)
def test_corrupt_cell_becomes_a_warning_and_a_gap(tmp_path, damage):
    path = copy_store(DATA / "points_binned.zarrvectors", tmp_path)
    s0 = open_store(path)
    chunk = s0.chunks(0)[3]
    grid = s0.layout.grids.open(0, "vertices")
    cell_key = grid.keys((chunk - grid.origin)[None])[0]
    full = read_quiet(s0, 0)
    lost = int(np.sum(np.all(np.floor(full.positions / 20.0) == chunk, axis=1)))
    f = path / cell_key
    f.write_bytes(damage(f.read_bytes()))
    s = open_store(path)
    name = ".".join(map(str, chunk.tolist()))
    # the warning names the chunk and its file (the grid origin shifts one from the other)
    where = rf"level 0.*vertices.*chunk {re.escape(name)}, file {re.escape(cell_key)}\)"
    with pytest.warns(ZVChunkWarning, match=where) as rec:
        g = s.read(0)
    assert str(path) in str(rec[0].message)
    assert g.vertex_count == full.vertex_count - lost
    with pytest.raises(ZVFormatError, match=rf"chunk {name}"):
        s.read(0, strict=True)


def test_corrupt_cell_in_a_shard(tmp_path):
    path = copy_store(DATA / "points.zarrvectors", tmp_path)
    shard = path / "0" / "vertices" / "c" / "1" / "1" / "1"
    raw = bytearray(shard.read_bytes())
    n = 8
    index = np.frombuffer(bytes(raw[-(16 * n + 4) : -4]), "<u8").reshape(n, 2)
    first = int(np.flatnonzero(index[:, 1] != 2**64 - 1)[0])
    off = int(index[first, 0])
    raw[off : off + 4] = (7).to_bytes(4, "little")  # vlen count 7 in a one-element chunk
    shard.write_bytes(bytes(raw))
    s = open_store(path)
    cell = np.array(np.unravel_index(first, (2, 2, 2))) + 2  # shard (1,1,1) of 2x2x2 cells
    chunk = cell + s.layout.grids.open(0, "vertices").origin
    cells = s.layout.read_cells(0, ["vertices"], np.array([chunk, chunk + 1]))["vertices"]
    assert isinstance(cells[0], ZVFormatError)
    assert "vertices" in str(cells[0]) and ".".join(map(str, chunk)) in str(cells[0])
    with pytest.warns(ZVChunkWarning, match=".".join(map(str, chunk))):
        g = s.read(0)
    assert 0 < g.vertex_count < 400


@pytest.mark.parametrize("name", ["points_binned", "points"])
def test_listing_falls_back_to_scanning(tmp_path, name):
    path = copy_store(DATA / f"{name}.zarrvectors", tmp_path)
    meta_file = path / "0" / "vertices" / "zarr.json"
    meta = json.loads(meta_file.read_text())
    del meta["attributes"]["nonempty_chunks"]
    meta_file.write_text(json.dumps(meta))
    s = open_store(path)
    np.testing.assert_array_equal(s.chunks(0), v09(name).chunks(0))
    assert read_quiet(s, 0).vertex_count == v09(name).level(0).vertex_count


def test_full_level_read_batches_cell_fetches(monkeypatch):
    """A full-level read fetches the cells of every unsharded grid array together, in
    batches of ``READ_BATCH`` chunks (one fetch per batch, not one per cell), but the
    vertices', which a local store's plain cells read from their files in place."""
    monkeypatch.setattr(loading, "IN_PLACE_MIN_BYTES", 0)  # (these cells hold a few rows)
    s = open_store(DATA / "points_binned.zarrvectors")
    calls = []
    original = s.layout.io.fetch_many

    def spy(keys):
        calls.append(len(keys))
        return original(keys)

    monkeypatch.setattr(s.layout.io, "fetch_many", spy)
    s.read(0)
    cell_batches = [n for n in calls if n > 1]
    n = len(s.chunks(0))
    assert n > READ_BATCH  # more than one batch
    # vertex_fragments and one vertex attribute of every chunk of the batch
    assert cell_batches == [2 * min(READ_BATCH, n - lo) for lo in range(0, n, READ_BATCH)]
    monkeypatch.setattr(type(s.layout), "reads_in_place", lambda self, level, array: False)
    calls.clear()
    s.read(0)  # and the vertices too where they cannot be read in place
    assert [n for n in calls if n > 1] == [
        3 * min(READ_BATCH, n - lo) for lo in range(0, n, READ_BATCH)
    ]


def test_read_without_cache_packs_rows_into_one_array():
    """Without a cache, every chunk's positions and vertex attributes are consecutive views
    of one array per name, which the read returns as is; the values are those decoded chunk
    by chunk through a cache."""
    from napari_zarr_vectors.format import ChunkCache
    from napari_zarr_vectors.format.loading import attribute_specs

    s = open_store(DATA / "points_binned.zarrvectors")
    specs = attribute_specs(s.layout, 0)
    packed = load_chunks(s.layout, 0, s.chunks(0), specs)
    apart = load_chunks(s.layout, 0, s.chunks(0), specs, cache=ChunkCache())
    assert len(packed) == len(apart) > READ_BATCH
    for name in [None, *(sp.name for sp in specs)]:
        parts = [c.positions if name is None else c.attributes[name] for c in packed]
        base = parts[0].base
        assert all(p.base is base for p in parts) and len(base) == sum(map(len, parts))
        loaded = LoadedChunks.build(packed, s.ndim, s.level(0).key_ndim, owned=True)
        assert loaded.concatenated(list(parts), name) is base
        expect = [c.positions if name is None else c.attributes[name] for c in apart]
        np.testing.assert_array_equal(base, np.concatenate(expect))
    geom = s.read(0)
    np.testing.assert_array_equal(geom.positions, np.concatenate([c.positions for c in apart]))


# ---------------------------------------------------------------------------------------------
# link cell decoding
# ---------------------------------------------------------------------------------------------
def _blob(*values) -> bytes:
    return np.asarray(values, dtype="<i8").tobytes()


def test_link_cells_ragged_groups_and_flat_rows():
    from napari_zarr_vectors.format.layout.v09.links import _decode_link_cells

    one = _blob(1, 0, 7, 8, 9)  # K=1, one 3-wide row
    two = _blob(2, 0, 24, 1, 2, 3, 4, 5, 6)  # K=2, two groups of one row each
    empty = _blob(0)  # K=0
    rows, counts = _decode_link_cells([one, two, empty], 3, flat=False)
    assert [r.tolist() for r in rows] == [[[7, 8, 9]], [[1, 2, 3], [4, 5, 6]], []]
    assert counts.tolist() == [1, 2, 0]
    rows, counts = _decode_link_cells([_blob(1, 2), _blob(3, 4, 5, 6)], 2, flat=True)
    assert [r.tolist() for r in rows] == [[[1, 2]], [[3, 4], [5, 6]]]
    assert counts.tolist() == [1, 2]


@pytest.mark.parametrize(
    "blobs, flat",
    [
        ([_blob(1, 0, 7, 8), _blob(1, 5, 1, 2)], False),  # group offset does not start at 0
        ([_blob(1, 0, 7, 8), _blob(9, 0, 1, 2)], False),  # more groups than values
        ([_blob(1, 0, 7, 8), _blob(1, 0, 1, 2, 3)], False),  # not whole rows
        ([_blob(1, 2), b"\x01\x02\x03"], True),  # not whole int64 values
    ],
)
def test_link_cells_locate_the_broken_cell(blobs, flat):
    from napari_zarr_vectors.format.layout.v09.links import _CellError, _decode_link_cells

    with pytest.raises(_CellError) as info:
        _decode_link_cells(blobs, 2, flat=flat)
    assert info.value.index == 1
    assert isinstance(info.value.error, ZVFormatError)


def test_lehmer_codes_for_three_endpoints():
    """FORMAT09 §3.5: code -> σ is 0:[0,1,2] 1:[0,2,1] 2:[1,0,2] 3:[1,2,0] 4:[2,0,1]
    5:[2,1,0], and ``out[σ[i]] = stored[i]``."""
    from napari_zarr_vectors.format.layout.v09.links import _endpoints, _Segment

    sigma = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]]
    seg = _Segment("0.0.0_+1.0.0", None, np.array([[0, 0, 0], [1, 0, 0]]), True, False)
    rows = np.array([[code, 10, 11, 12] for code in range(6)])
    src = np.zeros((2, 3), np.int64)  # two cells of 3 records
    keys, runs, (out,) = _endpoints([rows[:3], rows[3:]], seg, 3, src, src, np.array([3, 3]))
    assert runs.tolist() == [1] * 6  # reordered records have chunks of their own
    chunks = keys
    for code, s in enumerate(sigma):
        want = [None] * 3
        stored_rows = [10, 11, 12]
        stored_chunks = [(0, 0, 0), (0, 0, 0), (1, 0, 0)]
        for i in range(3):
            want[s[i]] = (stored_chunks[i], stored_rows[i])
        got = [(tuple(chunks[code, k].tolist()), int(out[code, k])) for k in range(3)]
        assert got == want, code


def test_corrupt_link_cell_leaves_links_out_with_a_warning(tmp_path):
    path = copy_store(DATA / "skeleton.zarrvectors", tmp_path)
    s0 = open_store(path)
    grid = s0.layout.grids.open(0, "links/0/+1.0.0")
    chunk = s0.layout.list_chunks(0, "links/0/+1.0.0")[0]
    f = path / grid.keys((chunk - grid.origin)[None])[0]
    raw = f.read_bytes()
    f.write_bytes(raw[:8] + _blob(3) + raw[16:])  # the group count now exceeds the values
    s = open_store(path)
    name = ".".join(map(str, chunk.tolist()))
    with pytest.warns(ZVChunkWarning, match=rf"links left out.*links/0/\+1\.0\.0.*chunk {name}"):
        g = s.read(0)
    assert g.vertex_count == 128
    with pytest.raises(ZVFormatError, match=rf"chunk {name}"):
        s.read(0, strict=True)


def test_wide_records_decode_lehmer_codes_one_by_one():
    from napari_zarr_vectors.format.layout.v09.links import (
        _inverse_permutations,
        _lehmer_inverse,
        _undo_permutations,
    )

    for width in (2, 3, 4, 5):
        table = _inverse_permutations(width)
        for code in range(len(table)):
            np.testing.assert_array_equal(table[code], _lehmer_inverse(code, width))
    codes = np.array([0, 5039, 17, 5039])
    undo = _undo_permutations(codes, 7)
    assert undo.shape == (4, 7)
    np.testing.assert_array_equal(undo[1], np.arange(7)[::-1])  # the last code reverses
    np.testing.assert_array_equal(undo[0], np.arange(7))
