"""Ground truth for the fixture stores, normalised, plus the comparison helpers the tests share.

Two JSON flavours are turned into the same :class:`StoreTruth`:

* ``v07/expected/<name>.json`` (zarr-vectors 0.7.0 stores, FORMAT07.md §11): the writer input
  at the top level and ``reference_readback[L]`` (chunks, manifests, object attributes) for
  every coarse level;
* ``v09/expected/<name>.json`` used for the 0.7.0 *twins* (FORMAT09.md §10): ``input`` for
  level 0 and ``levels[L]`` for per-level facts.

Everything here is derived from the JSON (and from the writer rules of FORMAT07.md where the
JSON leaves a fact implicit, each such place says so); nothing reads the stores themselves.

Conventions: coordinates are compared after casting to float32 (the JSON holds the exact stored
float32 values as doubles). Geometry the writer reorders (points, graph, skeleton, mesh) is
compared as multisets of coordinate tuples; paths are compared in order.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from data_paths import location

#: The fixture tree (:func:`data_paths.location`: ``tests/conftest.py`` builds it before the
#: first test; its place, not :func:`data_paths.data_root`, because building it writes the dense
#: stores with :func:`twin_truth` from this module). Test modules
#: import paths and JSON from here rather than from ``conftest`` (a second ``conftest`` module,
#: e.g. ``tests/napari/conftest.py``, can shadow it in ``sys.modules``), and they need the
#: JSON at import time to build their parametrisations.
DATA_DIR = location()
V07_DIR = DATA_DIR / "v07"
V09_DIR = DATA_DIR / "v09"
TWINS_DIR = V09_DIR / "v07-twins"

PATH_TYPES = ("line", "polyline", "streamline")
EDGE_TYPES = ("graph", "skeleton")
INT32_MIN = -(2**31)

Coord = tuple[float, ...]
ManifestEntry = tuple[tuple[int, ...], int]


@cache
def load_expected(version: str, name: str) -> dict:
    """Parsed ``<version>/expected/<name>.json`` of the fixture tree (cached; treat it as read-only)."""
    with open(DATA_DIR / version / "expected" / f"{name}.json", encoding="utf-8") as fh:
        return json.load(fh)


# ---------------------------------------------------------------------------------------------
# small conversions
# ---------------------------------------------------------------------------------------------
def f32(values) -> np.ndarray:
    """``values`` as a float32 array (how every float in the JSON must be compared)."""
    return np.asarray(values, dtype=np.float64).astype(np.float32)


def rows3(values, ndim: int = 3) -> np.ndarray:
    """An ``(N, ndim)`` float32 array, also for empty input."""
    return f32(values).reshape(-1, ndim)


def coord(row) -> Coord:
    return tuple(float(x) for x in np.asarray(row, dtype=np.float32))


def coords(positions) -> list[Coord]:
    return [coord(r) for r in np.asarray(positions, dtype=np.float32)]


def key_to_tuple(key: str) -> tuple[int, ...]:
    """``"-1.0.2"`` -> ``(-1, 0, 2)``."""
    return tuple(int(x) for x in key.split("."))


def manifest_from_json(entries: Iterable[Sequence]) -> list[ManifestEntry]:
    """``[["0.0.1", 3], ...]`` -> ``[((0, 0, 1), 3), ...]``."""
    return [(key_to_tuple(k), int(f)) for k, f in entries]


def chunk_of(positions, chunk_shape) -> np.ndarray:
    """``floor(p / chunk_shape)`` per row (FORMAT07 §4.3: origin 0, negative keys allowed)."""
    p = np.asarray(positions, dtype=np.float64).reshape(-1, len(chunk_shape))
    return np.floor(p / np.asarray(chunk_shape, dtype=np.float64)).astype(np.int64)


def chunks_intersecting(lo, hi, chunk_shape) -> tuple[np.ndarray, np.ndarray]:
    """Inclusive chunk-coordinate range ``[floor(lo/cs), floor(hi/cs)]`` (FORMAT07 §9.2)."""
    cs = np.asarray(chunk_shape, dtype=np.float64)
    return (
        np.floor(np.asarray(lo, dtype=np.float64) / cs).astype(np.int64),
        np.floor(np.asarray(hi, dtype=np.float64) / cs).astype(np.int64),
    )


def in_chunk_range(chunk_coords: np.ndarray, clo: np.ndarray, chi: np.ndarray) -> np.ndarray:
    return np.all((chunk_coords >= clo) & (chunk_coords <= chi), axis=1)


def in_box(positions, lo, hi) -> np.ndarray:
    """Inclusive ``lo <= p <= hi`` on every axis, evaluated in float32 like the stored values."""
    p = rows3(positions, len(lo))
    return np.all((p >= f32(lo)) & (p <= f32(hi)), axis=1)


def normalise_face(tri: Sequence[Coord]) -> tuple[Coord, ...]:
    """Rotate a polygon so its smallest corner comes first (keeps the winding)."""
    i = min(range(len(tri)), key=lambda k: tri[k])
    return tuple(tri[i:]) + tuple(tri[:i])


def value_key(v):
    """A hashable, float32-normalised attribute value (NaN -> None, vectors -> tuples)."""
    a = np.asarray(v)
    if a.dtype == object:
        return a.item() if a.ndim == 0 else tuple(a.tolist())
    if a.dtype.kind == "f":
        a = a.astype(np.float32)
        if a.ndim == 0:
            return None if np.isnan(a) else float(a)
        return tuple(None if np.isnan(x) else float(x) for x in a)
    return a.item() if a.ndim == 0 else tuple(int(x) for x in a)


def counter_diff(actual: Counter, expected: Counter, limit: int = 5) -> str:
    missing = list((expected - actual).elements())[:limit]
    extra = list((actual - expected).elements())[:limit]
    return (
        f"{sum(actual.values())} actual vs {sum(expected.values())} expected; "
        f"missing (first {limit}): {missing}; unexpected (first {limit}): {extra}"
    )


def assert_same_multiset(actual: Iterable, expected: Iterable, what: str) -> None:
    a, e = Counter(actual), Counter(expected)
    assert a == e, f"{what} differ: {counter_diff(a, e)}"


def assert_rows_equal(actual, expected, what: str) -> None:
    """Exact, ordered float32 row equality."""
    a, e = rows3(actual, np.shape(expected)[-1] if np.size(expected) else 3), rows3(expected)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != expected {e.shape}"
    bad = np.flatnonzero(np.any(a != e, axis=1))
    assert bad.size == 0, (
        f"{what}: {bad.size} rows differ, first at row {bad[0]}: {a[bad[0]]} != {e[bad[0]]}"
    )


def assert_rows_close(actual, expected, atol: float, what: str) -> None:
    """Ordered row equality within ``atol`` (``atol == 0`` means exact float32 equality)."""
    if atol == 0:
        assert_rows_equal(actual, expected, what)
        return
    a, e = rows3(actual), rows3(expected)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != expected {e.shape}"
    err = np.abs(a.astype(np.float64) - e.astype(np.float64))
    assert err.size == 0 or err.max() <= atol, f"{what}: max deviation {err.max()} > {atol}"


def assert_row_sets_close(actual, expected, atol: float, what: str) -> None:
    """The two sets of distinct rows match one-to-one within ``atol``."""
    a = np.unique(rows3(actual), axis=0)
    e = np.unique(rows3(expected), axis=0)
    if atol == 0:
        assert_same_multiset(coords(a), coords(e), what)
        return
    assert a.shape == e.shape, f"{what}: {len(a)} distinct rows != expected {len(e)}"
    if len(a) == 0:
        return
    d = np.abs(a[:, None, :].astype(np.float64) - e[None, :, :]).max(axis=2)
    nearest = d.argmin(axis=1)
    assert d.min(axis=1).max() <= atol, f"{what}: a row has no partner within {atol}"
    assert len(set(nearest.tolist())) == len(e), f"{what}: rows do not match one-to-one"


# ---------------------------------------------------------------------------------------------
# writer rules needed to state what the bytes can tell (FORMAT07 §6.4, §6.5)
# ---------------------------------------------------------------------------------------------
def skeleton_dfs_order(n: int, edges_child_parent: Sequence[Sequence[int]]) -> list[int]:
    """The 0.7.0 skeleton writer's node order (``reorder_map[new] = old``), FORMAT07 §6.5.

    Root = lowest-numbered node that is never a child; children are visited depth-first in
    the order their ``[child, parent]`` edges appear; unreached nodes are appended in input
    order. Checked against ``writer_dfs_order.reorder_map`` of the v07 skeleton JSONs by
    ``test_skeleton_dfs_rule_reproduces_writer``.
    """
    children: dict[int, list[int]] = {}
    is_child = np.zeros(n, dtype=bool)
    for c, p in edges_child_parent:
        children.setdefault(int(p), []).append(int(c))
        is_child[int(c)] = True
    roots = np.flatnonzero(~is_child)
    order: list[int] = []
    seen = np.zeros(n, dtype=bool)
    stack = [int(roots[0])] if roots.size else []
    while stack:
        v = stack.pop()
        if seen[v]:
            continue
        seen[v] = True
        order.append(v)
        stack.extend(reversed(children.get(v, [])))
    order.extend(i for i in range(n) if not seen[i])
    return order


def skeleton_stored_link_mask(positions, edges_child_parent, chunk_shape) -> np.ndarray:
    """Which (child, parent) edges have a link-attribute value on disk (0.7.0 writer).

    The writer stores only "branch" links (parent != child - 1 in its DFS numbering) that lie
    within one chunk in ``links/0``, and link attributes only for those rows (FORMAT07 §6.5).
    """
    n = len(positions)
    order = skeleton_dfs_order(n, edges_child_parent)
    rank = np.empty(n, dtype=np.int64)
    rank[np.asarray(order, dtype=np.int64)] = np.arange(n)
    ch = chunk_of(positions, chunk_shape)
    e = np.asarray(edges_child_parent, dtype=np.int64).reshape(-1, 2)
    same_chunk = np.all(ch[e[:, 0]] == ch[e[:, 1]], axis=1)
    return same_chunk & (rank[e[:, 1]] != rank[e[:, 0]] - 1)


def graph_stored_link_mask(positions, edges, chunk_shape) -> np.ndarray:
    """Graph link attributes exist for intra-chunk edges only (FORMAT07 §6.4)."""
    ch = chunk_of(positions, chunk_shape)
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    return np.all(ch[e[:, 0]] == ch[e[:, 1]], axis=1)


# ---------------------------------------------------------------------------------------------
# normalised truth
# ---------------------------------------------------------------------------------------------
@dataclass
class LevelTruth:
    """What is known about one level of a store.

    ``None`` means "not known from the JSON" and the corresponding check is skipped.
    """

    index: int
    vertex_count: int | None
    chunk_shape: tuple[float, ...]
    bin_shape: tuple[float, ...] | None
    object_sparsity: float | None
    #: all rows in level order (chunks as integer tuples, rows in chunk order), when known
    level_rows: np.ndarray | None = None
    #: chunk coordinates of ``level_rows``
    level_row_chunks: np.ndarray | None = None
    #: object id -> [(chunk, fragment), ...] in manifest order
    manifests: dict[int, list[ManifestEntry]] | None = None
    #: object id -> its vertices following the manifest (with repeats, in order)
    object_vertices: dict[int, np.ndarray] | None = None
    #: bool per object id: non-empty manifest at this level
    presence: np.ndarray | None = None
    #: exact object attributes at this level (0.7 layout: dropped rows zero-filled)
    object_attributes: dict[str, np.ndarray] | None = None
    #: tolerance for coarse-level coordinates (0 = exact float32)
    atol: float = 0.0


@dataclass
class StoreTruth:
    name: str
    geometry_type: str
    chunk_shape: tuple[float, ...] | None
    bounds: tuple[np.ndarray, np.ndarray] | None
    #: (N, ndim) float32, every level-0 vertex; path types: paths concatenated in object order
    positions: np.ndarray
    object_ids: np.ndarray | None = None
    vertex_attributes: dict[str, np.ndarray] = field(default_factory=dict)
    #: (M, 2) rows into ``positions``: graph [u, v], skeleton [child, parent], line [a, b]
    edges: np.ndarray | None = None
    edge_attributes: dict[str, np.ndarray] = field(default_factory=dict)
    #: which edges' attribute values the writer stored (others read back as NaN)
    edge_attribute_stored: np.ndarray | None = None
    faces: np.ndarray | None = None
    #: object id -> row indices into ``positions`` in traversal order (path types)
    paths: dict[int, np.ndarray] = field(default_factory=dict)
    object_attributes: dict[str, np.ndarray] = field(default_factory=dict)
    groups: dict[int, list[int]] = field(default_factory=dict)
    group_attributes: dict[str, np.ndarray] = field(default_factory=dict)
    #: 0.7 meshes store one fragment per chunk shared by every object in it (FORMAT07 §6.6)
    chunk_shared_by_objects: bool = False
    levels: list[LevelTruth] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    # -- derived facts ---------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return int(self.positions.shape[1])

    @property
    def num_objects(self) -> int:
        if self.object_ids is None:
            return 0
        return int(self.object_ids.max()) + 1

    def coord_index(self) -> dict[Coord, int]:
        """Coordinate tuple -> row of ``positions`` (positions are unique in these stores)."""
        index = {c: i for i, c in enumerate(coords(self.positions))}
        assert len(index) == len(self.positions), "truth positions are not unique"
        return index

    def rows_of_objects(self, object_ids: Iterable[int]) -> np.ndarray:
        """Level-0 truth rows a manifest-based object selection must return."""
        wanted = np.isin(self.object_ids, np.asarray(list(object_ids), dtype=np.int64))
        if not self.chunk_shared_by_objects:
            return np.flatnonzero(wanted)
        # manifest entry (K, 0) = the whole chunk, whatever objects share it
        ch = chunk_of(self.positions, self.chunk_shape)
        touched = {tuple(c) for c in ch[wanted]}
        return np.flatnonzero([tuple(c) in touched for c in ch])

    def rows_in_chunks(self, lo, hi, chunk_shape=None) -> np.ndarray:
        """Level-0 truth rows lying in a chunk that intersects the inclusive box."""
        cs = chunk_shape or self.chunk_shape
        clo, chi = chunks_intersecting(lo, hi, cs)
        return np.flatnonzero(in_chunk_range(chunk_of(self.positions, cs), clo, chi))

    def group_members(self, group_ids: Iterable[int]) -> list[int]:
        out: set[int] = set()
        for g in group_ids:
            out.update(self.groups[int(g)])
        return sorted(out)

    def edge_pairs(self, rows: np.ndarray | None = None) -> Counter:
        """Multiset of (coord, coord) edges, restricted to edges with both ends in ``rows``."""
        return Counter(self._simplices(self.edges, rows, normalise=False))

    def face_triples(self, rows: np.ndarray | None = None) -> Counter:
        return Counter(self._simplices(self.faces, rows, normalise=True))

    def _simplices(self, simplices, rows, normalise):
        if simplices is None:
            return []
        keep = np.ones(len(self.positions), dtype=bool)
        if rows is not None:
            keep[:] = False
            keep[rows] = True
        cs = coords(self.positions)
        out = []
        for s in np.asarray(simplices, dtype=np.int64):
            if keep[s].all():
                t = tuple(cs[i] for i in s)
                out.append(normalise_face(t) if normalise else t)
        return out

    def edge_attribute_items(self, name: str) -> Counter:
        """Multiset of (coord_u, coord_v, value-or-None) for edge attribute ``name``."""
        cs = coords(self.positions)
        vals = self.edge_attributes[name]
        out = Counter()
        for (u, v), val, stored in zip(self.edges, vals, self.edge_attribute_stored, strict=True):
            out[(cs[u], cs[v], value_key(val) if stored else None)] += 1
        return out


def _dense_groups(groups: Mapping[str, Sequence[int]] | None) -> dict[int, list[int]]:
    return {int(k): [int(x) for x in v] for k, v in (groups or {}).items()}


def _attr_array(values):
    """JSON attribute values -> numpy (strings become object arrays of str)."""
    a = np.asarray(values)
    if a.dtype.kind in "US":
        return np.asarray(values, dtype=object)
    if a.dtype.kind == "f":
        return a.astype(np.float64).astype(np.float32)
    return a


def _concat_paths(polylines) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    chunks, paths, start = [], {}, 0
    for oid, pl in enumerate(polylines):
        p = rows3(pl)
        chunks.append(p)
        paths[oid] = np.arange(start, start + len(p), dtype=np.int64)
        start += len(p)
    return np.concatenate(chunks), paths


def _level_rows_from_chunks(chunks: Mapping[str, list]) -> tuple[np.ndarray, np.ndarray, dict]:
    """Reference-readback ``chunks`` (key -> fragments -> rows) in level order."""
    rows, row_chunks, frag_rows = [], [], {}
    for key in sorted(chunks, key=key_to_tuple):
        for f, frag in enumerate(chunks[key]):
            r = rows3(frag)
            frag_rows[(key_to_tuple(key), f)] = r
            rows.append(r)
            row_chunks.extend([key_to_tuple(key)] * len(r))
    return np.concatenate(rows), np.asarray(row_chunks, dtype=np.int64), frag_rows


# ---------------------------------------------------------------------------------------------
# v07/expected/<name>.json
# ---------------------------------------------------------------------------------------------
def v07_truth(name: str, d: dict) -> StoreTruth:
    gtype = d["geometry_type"]
    wp = d.get("write_params") or {}
    t = StoreTruth(
        name=name,
        geometry_type=gtype,
        # graph_interleaved has no write_params; FORMAT07 §11: "Chunk 10³ throughout"
        chunk_shape=tuple(wp["chunk_shape"]) if wp else (10.0, 10.0, 10.0),
        bounds=(f32(wp["bounds"][0]), f32(wp["bounds"][1])) if wp else None,
        positions=np.empty((0, 3), np.float32),
        notes=list(d.get("notes") or []) + ([d["purpose"]] if "purpose" in d else []),
    )
    raw_va = d.get("vertex_attributes") or {}
    va = {} if gtype in PATH_TYPES else {k: _attr_array(v) for k, v in raw_va.items()}

    if gtype == "point_cloud":
        t.positions = rows3(d["positions"])
        if "object_ids" in d:
            t.object_ids = np.asarray(d["object_ids"], dtype=np.int64)
        t.vertex_attributes = va
    elif gtype == "line":
        ep = f32(d["endpoints"])  # (L, 2, 3)
        t.positions = ep.reshape(-1, 3)
        n = len(ep)
        t.object_ids = np.repeat(np.arange(n, dtype=np.int64), 2)
        t.paths = {i: np.array([2 * i, 2 * i + 1], dtype=np.int64) for i in range(n)}
        t.edges = np.arange(2 * n, dtype=np.int64).reshape(n, 2)
        # write_lines drops vertex attributes (FORMAT07 §6.2): none are expected
    elif gtype in ("polyline", "streamline"):
        t.positions, t.paths = _concat_paths(d["polylines"])
        t.object_ids = np.concatenate(
            [np.full(len(p), oid, dtype=np.int64) for oid, p in t.paths.items()]
        )
        t.vertex_attributes = {
            k: _attr_array([x for per_line in v for x in per_line]) for k, v in raw_va.items()
        }
    elif gtype in ("graph", "skeleton"):
        t.positions = rows3(d["positions"])
        n = len(t.positions)
        t.object_ids = np.asarray(d.get("object_ids", [0] * n), dtype=np.int64)
        t.vertex_attributes = va
        if gtype == "graph":
            t.edges = np.asarray(d["edges"], dtype=np.int64)
        else:
            t.edges = np.asarray(d["edges_child_parent"], dtype=np.int64)
        if name == "graph_interleaved":
            # The bytes are wrong (FORMAT07 §6.4 writer caveat): links point at rows ordered by
            # input index while rows are stored grouped by object id. A faithful reader returns
            # what the bytes say, i.e. the reference decode, not the input edges.
            ref = d["reference_read_graph_level0"]
            index = t.coord_index()
            ref_rows = np.array([index[c] for c in coords(ref["positions"])], dtype=np.int64)
            t.edges = ref_rows[np.asarray(ref["edges"], dtype=np.int64)]
        la = {k: _attr_array(v) for k, v in (d.get("link_attributes") or {}).items()}
        t.edge_attributes = la
        if la:
            if gtype == "graph":
                t.edge_attribute_stored = graph_stored_link_mask(
                    t.positions, t.edges, t.chunk_shape
                )
            else:
                t.edge_attribute_stored = skeleton_stored_link_mask(
                    t.positions, t.edges, t.chunk_shape
                )
            if "writer_summary" in d:
                assert t.edge_attribute_stored.sum() == d["writer_summary"]["intra_edge_count"]
    elif gtype == "mesh":
        t.positions = rows3(d["vertices"])
        t.object_ids = np.asarray(d["object_ids"], dtype=np.int64)
        t.faces = np.asarray(d["faces"], dtype=np.int64)
        t.vertex_attributes = va
        t.chunk_shared_by_objects = True
    else:  # pragma: no cover - the JSON only holds the seven types
        raise ValueError(gtype)

    t.object_attributes = {k: _attr_array(v) for k, v in (d.get("object_attributes") or {}).items()}
    t.groups = _dense_groups(d.get("groups"))
    t.group_attributes = {k: _attr_array(v) for k, v in (d.get("group_attributes") or {}).items()}

    # ---- level 0
    level0_order = None
    for key, pos_key in (
        ("reference_read_points_level0", "positions"),
        ("reference_read_graph_level0", "positions"),
        ("reference_read_mesh_level0", "vertices"),
    ):
        if key in d and pos_key in d[key]:
            level0_order = rows3(d[key][pos_key])  # chunk-major / fragment order = level order
    root_bin = wp.get("bin_shape") or t.chunk_shape  # no bin given: the bin is the chunk
    presence = None
    if t.object_ids is not None:
        presence = np.zeros(t.num_objects, dtype=bool)
        presence[t.object_ids] = True
    obj_vertices = None
    if t.object_ids is not None:
        obj_vertices = {
            o: t.positions[t.paths[o]] if t.paths else t.positions[t.rows_of_objects([o])]
            for o in range(t.num_objects)
        }
    t.levels.append(
        LevelTruth(
            index=0,
            vertex_count=len(t.positions),
            chunk_shape=t.chunk_shape,
            bin_shape=tuple(root_bin) if root_bin else None,
            object_sparsity=1.0,
            level_rows=level0_order,
            presence=presence,
            object_vertices=obj_vertices,
            object_attributes=t.object_attributes,
        )
    )

    # ---- coarse levels: the reference's own low-level readback (FORMAT07 §11)
    for lkey in sorted((d.get("reference_readback") or {}), key=int):
        rb = d["reference_readback"][lkey]
        meta = rb["level_metadata_as_parsed"]
        rows, row_chunks, frag_rows = _level_rows_from_chunks(rb["chunks"])
        lt = LevelTruth(
            index=int(lkey),
            vertex_count=int(meta["vertex_count"]),
            chunk_shape=tuple(meta["chunk_shape"] or t.chunk_shape),
            bin_shape=tuple(meta["bin_shape"]),
            object_sparsity=float(meta["object_sparsity"]),
            level_rows=rows,
            level_row_chunks=row_chunks,
        )
        if "manifests" in rb:
            lt.manifests = {o: manifest_from_json(m) for o, m in enumerate(rb["manifests"])}
            lt.presence = np.array([len(m) > 0 for m in rb["manifests"]], dtype=bool)
            lt.object_vertices = {
                o: np.concatenate([frag_rows[e] for e in m]) if m else np.empty((0, 3), np.float32)
                for o, m in lt.manifests.items()
            }
        if "object_attributes" in rb:
            lt.object_attributes = {
                k: _attr_array(v["data"]) for k, v in rb["object_attributes"].items()
            }
            for v in rb["object_attributes"].values():
                assert np.array_equal(np.asarray(v["present_mask"], bool), lt.presence)
        t.levels.append(lt)
    return t


# ---------------------------------------------------------------------------------------------
# v09/expected/<name>.json, for the 0.7.0 twins in v09/v07-twins/
# ---------------------------------------------------------------------------------------------
#: coarse-level centroids of the 0.7 twins agree with the 0.9 ones to float rounding only
TWIN_COARSE_ATOL = 1e-4


def twin_truth(name: str, d: dict) -> StoreTruth:
    gtype = d["geometry_type"]
    w = d["writer"]
    inp = d["input"]
    t = StoreTruth(
        name=name,
        geometry_type=gtype,
        chunk_shape=tuple(w["chunk_shape"]),
        bounds=(f32(w["bounds"][0]), f32(w["bounds"][1])),
        positions=np.empty((0, 3), np.float32),
        notes=list(d.get("notes") or []),
    )
    raw_va = inp.get("vertex_attributes") or {}
    va = {} if gtype in PATH_TYPES else {k: _attr_array(v) for k, v in raw_va.items()}
    if gtype == "point_cloud":
        t.positions = rows3(inp["positions"])
        if "vertex_object_ids" in inp:
            t.object_ids = np.asarray(inp["vertex_object_ids"], dtype=np.int64)
        t.vertex_attributes = va
    elif gtype == "line":
        ep = f32(inp["endpoints"])
        n = len(ep)
        t.positions = ep.reshape(-1, 3)
        t.object_ids = np.repeat(np.arange(n, dtype=np.int64), 2)
        t.paths = {i: np.array([2 * i, 2 * i + 1], dtype=np.int64) for i in range(n)}
        t.edges = np.arange(2 * n, dtype=np.int64).reshape(n, 2)
        # the 0.7.0 write_lines drops vertex attributes (FORMAT07 §6.2): none in the twin
    elif gtype in ("polyline", "streamline"):
        t.positions, t.paths = _concat_paths(inp["polylines"])
        t.object_ids = np.concatenate(
            [np.full(len(p), oid, dtype=np.int64) for oid, p in t.paths.items()]
        )
        t.vertex_attributes = {
            k: _attr_array([x for per_line in v for x in per_line]) for k, v in raw_va.items()
        }
    elif gtype in ("graph", "skeleton"):
        t.positions = rows3(inp["positions"])
        t.object_ids = np.asarray(inp["vertex_object_ids"], dtype=np.int64)
        t.vertex_attributes = va
        t.edges = np.asarray(inp["edges"], dtype=np.int64)
        t.edge_attributes = {k: _attr_array(v) for k, v in inp["link_attributes"].items()}
        mask = graph_stored_link_mask if gtype == "graph" else skeleton_stored_link_mask
        t.edge_attribute_stored = mask(t.positions, t.edges, t.chunk_shape)
    elif gtype == "mesh":
        t.positions = rows3(inp["vertices"])
        t.object_ids = np.asarray(inp["vertex_object_ids"], dtype=np.int64)
        t.faces = np.asarray(inp["faces"], dtype=np.int64)
        t.vertex_attributes = va
        t.chunk_shared_by_objects = True
    t.object_attributes = {
        k: _attr_array(v) for k, v in (inp.get("object_attributes") or {}).items()
    }
    t.groups = _dense_groups(inp.get("groups"))
    t.group_attributes = {k: _attr_array(v) for k, v in (inp.get("group_attributes") or {}).items()}

    base_bin = tuple(w.get("bin_shape") or w["chunk_shape"])
    factors = w["pyramid"]["factors"]
    for lkey in sorted(d["levels"], key=int):
        L = int(lkey)
        lv = d["levels"][lkey]
        ovm = lv.get("objects_via_manifests")
        lt = LevelTruth(
            index=L,
            vertex_count=None,
            chunk_shape=tuple(lv["chunk_shape"] or t.chunk_shape),
            # 0.7 multiplies the *root* bin by each factor (FORMAT09 §6.1), 0.9 compounds them
            bin_shape=base_bin if L == 0 else tuple(b * factors[L - 1][0] for b in base_bin),
            object_sparsity=1.0 if L == 0 else 1.0 / factors[L - 1][1],
        )
        if ovm is not None:
            lt.presence = np.array(
                [len(ovm[str(o)]["manifest"]) > 0 for o in range(len(ovm))], dtype=bool
            )
        if L <= 1:
            # levels 0 and 1 are built identically by 0.7 and 0.9 (same bins, no sparsity)
            lt.vertex_count = int(lv["vertex_count"])
            lt.atol = 0.0 if L == 0 else TWIN_COARSE_ATOL
            if gtype not in PATH_TYPES:
                # library_read is chunk-major / fragment order = level order for these types
                # (path types come back per object instead)
                lt.level_rows = rows3(lv["library_read"]["positions"])
            if ovm is not None:
                lt.object_vertices = {int(o): rows3(v["vertices"]) for o, v in ovm.items()}
                # 0.7 polylines split runs at bin boundaries, 0.9 at chunk boundaries: level-0
                # fragment numbering differs; level-1 manifests are byte-identical.
                if not (L == 0 and gtype in ("polyline", "streamline")):
                    lt.manifests = {
                        int(o): manifest_from_json(v["manifest"]) for o, v in ovm.items()
                    }
        if "object_attributes" in lv and (L == 0 or gtype == "point_cloud"):
            # 0.7 copies object attributes to coarse levels only for point clouds, with
            # dropped rows zero-filled where 0.9 writes its absence sentinel.
            lt.object_attributes = {
                k: _zero_fill_sentinels(v) for k, v in lv["object_attributes"].items()
            }
        t.levels.append(lt)
    return t


def _zero_fill_sentinels(values) -> np.ndarray:
    out = []
    for v in values:
        if v is None or v == INT32_MIN:
            out.append(0)
        else:
            out.append(v)
    return _attr_array(out)


# ---------------------------------------------------------------------------------------------
# what a Geometry says, in the same comparable forms
# ---------------------------------------------------------------------------------------------
def geom_positions(g) -> np.ndarray:
    p = np.asarray(g.positions)
    assert p.ndim == 2, f"positions must be 2-D, got shape {p.shape}"
    assert p.dtype.kind == "f", f"positions must be floats, got {p.dtype}"
    return p.astype(np.float32)


def _index_array(a, width: int, what: str) -> np.ndarray:
    a = np.asarray(a)
    if a.size == 0:
        return np.empty((0, width), dtype=np.int64)
    assert a.dtype.kind in "iu", f"{what} must be integer, got {a.dtype}"
    assert a.ndim == 2 and a.shape[1] == width, f"{what} must be (M, {width}), got {a.shape}"
    return a.astype(np.int64)


def geom_edge_pairs(g) -> Counter:
    """Multiset of (coord, coord) per edge row, in the stored orientation."""
    e = _index_array(g.edges, 2, "edges")
    cs = coords(geom_positions(g))
    return Counter((cs[u], cs[v]) for u, v in e)


def geom_face_triples(g) -> Counter:
    f = _index_array(g.faces, 3, "faces")
    cs = coords(geom_positions(g))
    return Counter(normalise_face(tuple(cs[i] for i in tri)) for tri in f)


def geom_edge_attribute_items(g, name: str) -> Counter:
    e = _index_array(g.edges, 2, "edges")
    vals = np.asarray(g.edge_attributes[name])
    assert len(vals) == len(e), f"edge attribute {name!r} has {len(vals)} rows for {len(e)} edges"
    cs = coords(geom_positions(g))
    return Counter((cs[u], cs[v], value_key(val)) for (u, v), val in zip(e, vals, strict=True))


def geom_paths(g) -> dict[int, np.ndarray]:
    """object id -> ordered path coordinates (object ids must be unique)."""
    ids = [int(o) for o in np.asarray(g.path_object_ids).reshape(-1)]
    assert len(ids) == len(g.paths), "path_object_ids is not aligned with paths"
    assert len(set(ids)) == len(ids), f"an object has several paths: {ids}"
    pos = geom_positions(g)
    out = {}
    for oid, rows in zip(ids, g.paths, strict=True):
        rows = np.asarray(rows)
        assert rows.dtype.kind in "iu", f"path rows must be integer, got {rows.dtype}"
        out[oid] = pos[rows.astype(np.int64)]
    return out


def geom_object_rows(g) -> dict[int, list[Coord]]:
    """object id -> coordinates of all its path rows (for crops that may split a path)."""
    ids = [int(o) for o in np.asarray(g.path_object_ids).reshape(-1)]
    pos = geom_positions(g)
    out: dict[int, list[Coord]] = {}
    for oid, rows in zip(ids, g.paths, strict=True):
        out.setdefault(oid, []).extend(coords(pos[np.asarray(rows, dtype=np.int64)]))
    return out


def _any_per_row(mask: np.ndarray) -> np.ndarray:
    return mask.any(axis=tuple(range(1, mask.ndim))) if mask.ndim > 1 else mask


def assert_attribute_values(actual, expected, what: str) -> None:
    """Row-aligned attribute comparison: shape, kind and values (floats after float32 cast)."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if expected.dtype == object:
        assert actual.dtype == object, (
            f"{what}: expected an object array of str, got {actual.dtype}"
        )
        assert all(isinstance(x, str) for x in actual.reshape(-1)), f"{what}: non-str values"
        bad = [i for i, (a, e) in enumerate(zip(actual, expected, strict=True)) if a != e]
    elif expected.dtype.kind == "f":
        a32, e32 = actual.astype(np.float32), expected.astype(np.float32)
        diff = ~((a32 == e32) | (np.isnan(a32) & np.isnan(e32)))
        bad = np.flatnonzero(_any_per_row(diff)).tolist()
    else:
        assert actual.dtype.kind in "iub", f"{what}: expected integers, got {actual.dtype}"
        diff = actual.astype(np.int64) != expected.astype(np.int64)
        bad = np.flatnonzero(_any_per_row(diff)).tolist()
    assert not bad, (
        f"{what}: {len(bad)} rows differ, first row {bad[0]}: {actual[bad[0]]!r} != {expected[bad[0]]!r}"
    )


def assert_mapping_of_arrays(actual: Mapping, expected: Mapping, what: str) -> None:
    assert set(actual) == set(expected), f"{what}: names {sorted(actual)} != {sorted(expected)}"
    for k in expected:
        assert_attribute_values(actual[k], expected[k], f"{what}[{k!r}]")


def assert_groups(actual: Mapping, expected: Mapping[int, list[int]], what: str) -> None:
    got = {int(k): [int(x) for x in np.asarray(v).reshape(-1)] for k, v in actual.items()}
    assert got == expected, f"{what}: {got} != {expected}"


def assert_manifest(actual, expected: list[ManifestEntry], what: str) -> None:
    got = [(tuple(int(c) for c in chunk), int(frag)) for chunk, frag in actual]
    assert got == expected, f"{what}: {got} != {expected}"


# ---------------------------------------------------------------------------------------------
# composite checks shared by the v07 and twin test modules
# ---------------------------------------------------------------------------------------------
BOXES = ("middle", "on-vertex", "chunk-aligned", "outside")


def make_box(t: StoreTruth, kind: str, chunk_shape) -> tuple[np.ndarray, np.ndarray]:
    """Inclusive query boxes derived from the store's bounds and data."""
    lo, hi = t.bounds if t.bounds is not None else (t.positions.min(0), t.positions.max(0))
    ext = hi - lo
    if kind == "middle":  # crosses chunk boundaries, unaligned
        a = lo + np.float32(0.3) * ext
        return a, a + np.float32(0.37) * ext
    if kind == "on-vertex":  # lo == hi == a stored vertex, preferably on a chunk boundary
        p = t.positions
        on_edge = np.flatnonzero(np.any(np.mod(p, f32(chunk_shape)) == 0, axis=1))
        v = p[on_edge[0] if on_edge.size else 0]
        return v.copy(), v.copy()
    if kind == "chunk-aligned":  # [0, chunk]: hi lies exactly on a chunk boundary
        return np.zeros(t.ndim, np.float32), f32(chunk_shape)
    if kind == "outside":
        return hi + ext, hi + 2 * ext
    raise ValueError(kind)


def check_level0_vertex_object_ids(g, t: StoreTruth) -> None:
    if t.object_ids is None:
        assert g.vertex_object_ids is None
        return
    pos = geom_positions(g)
    got = np.asarray(g.vertex_object_ids)
    assert got.shape == (len(pos),)
    if t.geometry_type in PATH_TYPES:  # positions may repeat (shared line endpoints)
        for oid, rows in zip(np.asarray(g.path_object_ids), g.paths, strict=True):
            assert np.all(got[np.asarray(rows, dtype=np.int64)] == oid), f"rows of path {oid}"
        per_object = {o: sorted(coords(t.positions[r])) for o, r in t.paths.items()}
        for o in np.unique(got):
            assert sorted(coords(pos[got == o])) == per_object[int(o)], f"vertices of {o}"
        return
    index = t.coord_index()
    want = t.object_ids[[index[c] for c in coords(pos)]]
    if not t.chunk_shared_by_objects:
        np.testing.assert_array_equal(got, want)
        return
    # 0.7 meshes: a chunk's single fragment is shared by every object in it, so a row of a
    # shared chunk may carry any of them; rows of single-object chunks are unambiguous.
    owners: dict[tuple, set] = {}
    for c, o in zip(map(tuple, chunk_of(t.positions, t.chunk_shape)), t.object_ids, strict=True):
        owners.setdefault(c, set()).add(int(o))
    for r, c in enumerate(map(tuple, chunk_of(pos, t.chunk_shape))):
        if len(owners[c]) == 1:
            assert got[r] == want[r], f"row {r} in chunk {c}: {got[r]} != {want[r]}"
        else:
            assert int(got[r]) in owners[c], f"row {r} in shared chunk {c}"


def check_object_attributes(got: Mapping, t: StoreTruth, level: int) -> None:
    lt = t.levels[level]
    if lt.object_attributes is not None:
        assert_mapping_of_arrays(got, lt.object_attributes, f"object attributes L{level}")
        return
    # 0.7 coarse levels of non-point stores: the coarsener does not copy object attributes
    # (FORMAT07 §7.1.6). Whatever is reported must agree with level 0 for surviving objects
    # and be zero for dropped ones.
    for k, v in got.items():
        assert k in t.object_attributes, f"unknown object attribute {k!r}"
        exp = t.object_attributes[k].copy()
        exp[~lt.presence] = 0
        assert_attribute_values(v, exp, f"object attribute {k!r} at L{level}")


def check_object_selection(g, t: StoreTruth, level: int, oids: list[int]) -> None:
    """``g`` = read(level, object_ids=oids): exactly those objects' vertices and connectivity."""
    pos = geom_positions(g)
    lt = t.levels[level]
    if level == 0:
        rows = t.rows_of_objects(oids)
        assert_same_multiset(coords(pos), coords(t.positions[rows]), f"vertices of {oids}")
        if t.edges is not None:
            assert_same_multiset(
                geom_edge_pairs(g).elements(), t.edge_pairs(rows).elements(), f"edges of {oids}"
            )
        if t.faces is not None:
            assert_same_multiset(
                geom_face_triples(g).elements(), t.face_triples(rows).elements(), f"faces of {oids}"
            )
        if not t.chunk_shared_by_objects:
            assert set(np.asarray(g.vertex_object_ids).tolist()) <= set(oids)
    else:
        want = [lt.object_vertices[o] for o in oids]
        want = np.concatenate(want) if want else np.empty((0, 3), np.float32)
        # coarse manifests may repeat a metavertex: compare the distinct rows
        assert_row_sets_close(pos, want, lt.atol, f"L{level} vertices of {oids}")
    if t.geometry_type in PATH_TYPES:
        paths = {o: p for o, p in geom_paths(g).items() if len(p)}
        if level == 0:
            expected = {o: t.positions[t.paths[o]] for o in oids}
        else:
            expected = {o: lt.object_vertices[o] for o in oids}
        expected = {o: p for o, p in expected.items() if len(p)}
        assert sorted(paths) == sorted(expected)
        for o, p in expected.items():
            assert_rows_close(paths[o], p, lt.atol, f"L{level} path of object {o}")


def check_object_reads(store, t: StoreTruth, level: int) -> None:
    """Every single object, two objects, all present objects; dropped objects read empty."""
    lt = t.levels[level]
    present = np.flatnonzero(lt.presence).tolist()
    selections = [[o] for o in present] + [present[:2], present]
    for oids in selections:
        check_object_selection(store.read(level=level, object_ids=oids), t, level, oids)
    for o in np.flatnonzero(~lt.presence).tolist()[:3]:
        assert len(geom_positions(store.read(level=level, object_ids=[o]))) == 0, o


def check_group_reads(store, t: StoreTruth) -> None:
    for gid in t.groups:
        members = t.group_members([gid])
        check_object_selection(store.read(level=0, group_ids=[gid]), t, 0, members)
    all_groups = list(t.groups)
    check_object_selection(
        store.read(level=0, group_ids=all_groups), t, 0, t.group_members(all_groups)
    )


def check_bbox_point_cloud(store, t: StoreTruth, level: int, box: str) -> None:
    """Exactly the vertices with lo <= p <= hi (inclusive), attributes and ids aligned."""
    lo, hi = make_box(t, box, t.levels[level].chunk_shape)
    full = store.read(level=level)
    fpos = geom_positions(full)
    g = store.read(level=level, bbox=(lo, hi))
    pos = geom_positions(g)
    assert_same_multiset(
        coords(pos), coords(fpos[in_box(fpos, lo, hi)]), f"bbox {box} vs full read"
    )
    if box == "outside":
        assert len(pos) == 0
    if level != 0:
        return
    truth_rows = in_box(t.positions, lo, hi)
    assert_same_multiset(coords(pos), coords(t.positions[truth_rows]), f"bbox {box} vs truth")
    if box == "on-vertex":
        assert len(pos) == 1
    index = {c: i for i, c in enumerate(coords(fpos))}
    rows = np.array([index[c] for c in coords(pos)], dtype=np.int64)
    assert set(g.vertex_attributes) == set(full.vertex_attributes)
    for k, v in full.vertex_attributes.items():
        assert_attribute_values(g.vertex_attributes[k], np.asarray(v)[rows], f"bbox attribute {k}")
    if full.vertex_object_ids is None:
        assert g.vertex_object_ids is None
    else:
        np.testing.assert_array_equal(
            np.asarray(g.vertex_object_ids), np.asarray(full.vertex_object_ids)[rows]
        )


def check_bbox_object_type(store, t: StoreTruth, level: int, box: str) -> None:
    """Every fragment of every chunk intersecting the box, and nothing else.

    Level 0 is checked against the writer input (rows whose chunk is in range, the objects
    they belong to, the edges/faces among them); coarse levels against the level-order rows
    and manifests of the ground truth, when the JSON has them.
    """
    lt = t.levels[level]
    lo, hi = make_box(t, box, lt.chunk_shape)
    g = store.read(level=level, bbox=(lo, hi))
    pos = geom_positions(g)
    clo, chi = chunks_intersecting(lo, hi, lt.chunk_shape)
    if box == "outside":
        assert len(pos) == 0
    if level == 0:
        rows = t.rows_in_chunks(lo, hi, lt.chunk_shape)
        expected = t.positions[rows]
        objects = set(t.object_ids[rows].tolist())
    elif lt.level_rows is not None:
        rows = None
        expected = lt.level_rows[in_chunk_range(lt.level_row_chunks, clo, chi)]
        objects = {
            o
            for o, m in lt.manifests.items()
            if any(in_chunk_range(np.array([c]), clo, chi)[0] for c, _ in m)
        }
    else:
        return
    assert_same_multiset(coords(pos), coords(expected), f"bbox {box} vertices")
    if t.geometry_type in PATH_TYPES:
        got = {o: r for o, r in geom_object_rows(g).items() if r}
        assert set(got) == objects
        if level == 0:
            for o, rows_o in got.items():
                # an object's rows are its truth vertices in the box's chunks, in path order
                truth_path = coords(t.positions[t.paths[o]])
                kept = in_chunk_range(chunk_of(t.positions[t.paths[o]], lt.chunk_shape), clo, chi)
                want = [c for c, k in zip(truth_path, kept, strict=True) if k]
                assert_same_multiset(rows_o, want, f"bbox rows of object {o}")
            # a crop may keep an object whole or split it where it leaves the chunks
            pos_all = geom_positions(g)
            for oid, prow in zip(np.asarray(g.path_object_ids), g.paths, strict=True):
                truth_path = coords(t.positions[t.paths[int(oid)]])
                order = [truth_path.index(c) for c in coords(pos_all[np.asarray(prow)])]
                assert order == sorted(order), f"a path of object {oid} is out of order"
    elif level == 0 and t.object_ids is not None and not t.chunk_shared_by_objects:
        assert set(np.asarray(g.vertex_object_ids).tolist()) == objects
    if level == 0 and t.edges is not None:
        assert_same_multiset(
            geom_edge_pairs(g).elements(), t.edge_pairs(rows).elements(), f"bbox {box} edges"
        )
    if level == 0 and t.faces is not None:
        assert_same_multiset(
            geom_face_triples(g).elements(), t.face_triples(rows).elements(), f"bbox {box} faces"
        )
