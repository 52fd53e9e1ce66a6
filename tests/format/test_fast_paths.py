"""The linear-time read paths give exactly what the general ones gave: per-vertex object ids
by fragment owner, range expansion, the dense chunk lookup, path edges from the flat rows,
derived (lazy) geometry fields, and reads by object id that fetch only the object-index
chunks holding the ids."""

from __future__ import annotations

import dataclasses
import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import napari_zarr_vectors as nzv
from data_paths import data_root
from napari_zarr_vectors.format import level_objects
from napari_zarr_vectors.format.assembly import (
    _object_ids_per_row,
    _path_edges,
    _path_object_ids,
    _paths,
    _renumbered,
)
from napari_zarr_vectors.format.chunks import ChunkData, ChunkTable, LoadedChunks
from napari_zarr_vectors.format.decode.fragments import FragmentIndex, expand_ranges
from napari_zarr_vectors.format.geometry import Derived, Geometry
from napari_zarr_vectors.format.objects import ObjectIndex

SETTINGS = settings(max_examples=300, deadline=None)
DATA = data_root()


def _ranges(rng: np.random.Generator, n: int, shape: str) -> tuple[np.ndarray, np.ndarray]:
    """Range fragments over ``n`` rows: tiling in order, with gaps, shuffled, or overlapping."""
    cuts = np.sort(rng.choice(np.arange(1, n), size=min(n - 1, int(rng.integers(0, 5))), replace=False)) if n > 1 else np.empty(0, np.int64)  # fmt: skip
    bounds = np.concatenate([[0], cuts, [n]]).astype(np.int64)
    start, count = bounds[:-1], np.diff(bounds)
    if shape == "gaps" and len(count):
        count = np.maximum(count - rng.integers(0, 2, len(count)), 0)
    elif shape == "shuffled":
        order = rng.permutation(len(start))
        start, count = start[order], count[order]
    elif shape == "overlap" and n:
        s = rng.integers(0, n, 3)
        start = np.concatenate([start, s])
        count = np.concatenate([count, rng.integers(0, n - s + 1)])
    if shape != "tiling" and rng.random() < 0.3:  # an empty fragment somewhere
        at = int(rng.integers(0, len(start) + 1))
        start = np.insert(start, at, int(rng.integers(0, n + 1)))
        count = np.insert(count, at, 0)
    return start.astype(np.int64), count.astype(np.int64)


def _loaded(rng: np.random.Generator, shape: str) -> LoadedChunks:
    chunks = []
    coords = rng.choice(27, size=int(rng.integers(1, 6)), replace=False)
    for c in coords.tolist():
        n = int(rng.integers(0, 12))
        start, count = _ranges(rng, n, shape)
        f = len(start)
        fi = FragmentIndex(
            np.ones(f, bool), start, count, np.full(f, -1, np.int64), np.zeros(1, np.int64),
            np.empty(0, np.int64),
        )  # fmt: skip
        xyz = np.array(np.unravel_index(c, (3, 3, 3)), dtype=np.int64)
        chunks.append(ChunkData(xyz, rng.random((n, 3)).astype(np.float32), fi))
    return LoadedChunks.build(chunks, 3, 3)


def _index(rng: np.random.Generator, loaded: LoadedChunks) -> ObjectIndex:
    n_obj = int(rng.integers(1, 8))
    blocks = rng.integers(0, 6, n_obj)
    e = int(blocks.sum())
    known = loaded.table.chunks
    pick = rng.integers(0, len(known), e)
    chunks = known[pick].copy()
    stray = rng.random(e) < 0.15  # chunks that were not loaded
    chunks[stray] = rng.integers(-1, 5, (int(stray.sum()), 3))
    frags = rng.integers(-1, 7, e)  # some past the chunk's fragments, some negative
    ids = np.sort(rng.choice(1000, n_obj, replace=False)).astype(np.int64)
    return ObjectIndex(
        ids, np.concatenate([[0], np.cumsum(blocks)]).astype(np.int64), chunks, frags
    )


def _reference_ids(loaded, index, object_rows, keep):
    """The general algorithm: every row of every named fragment, the first
    entry naming a row owns it."""
    entries = (
        np.arange(index.frags.size) if object_rows is None else index.entries_of_rows(object_rows)
    )
    cidx = loaded.table.index_of(index.chunks[entries])
    ok = cidx >= 0
    entries = entries[ok]
    parts, counts = [], []
    for k, f in zip(cidx[ok].tolist(), index.frags[entries].tolist(), strict=True):
        fi = loaded.chunks[k].fragments
        rows = (
            np.arange(fi.start[f], fi.start[f] + fi.count[f]) + loaded.start[k]
            if 0 <= f < fi.num_fragments
            else np.empty(0, np.int64)
        )
        parts.append(rows)
        counts.append(rows.size)
    rows = np.concatenate(parts).astype(np.int64) if parts else np.empty(0, np.int64)
    owner = np.repeat(index.ids[index.entry_rows[entries]], np.asarray(counts, np.int64))
    out = np.full(loaded.n_rows if keep is None else keep.size, -1, dtype=np.int64)
    if rows.size:
        uniq, first = np.unique(rows, return_index=True)
        at = uniq if keep is None else _renumbered(keep, uniq)
        out[at[at >= 0]] = owner[first][at >= 0]
    return out


@SETTINGS
@given(
    seed=st.integers(0, 2**32 - 1),
    shape=st.sampled_from(["tiling", "gaps", "shuffled", "overlap"]),
    select=st.booleans(),
    subset=st.booleans(),
)
def test_object_ids_by_fragment_owner_equal_the_general_algorithm(seed, shape, select, subset):
    rng = np.random.default_rng(seed)
    loaded = _loaded(rng, shape)
    index = _index(rng, loaded)
    rows = None
    if select:
        rows = np.sort(rng.choice(index.num_objects, int(rng.integers(0, index.num_objects + 1)), replace=False))  # fmt: skip
    keep = None
    if subset:
        keep = np.sort(rng.choice(loaded.n_rows + 1, int(rng.integers(0, loaded.n_rows + 1)), replace=False))  # fmt: skip
        keep = keep[keep < loaded.n_rows]
    want = _reference_ids(loaded, index, rows, keep)
    np.testing.assert_array_equal(_object_ids_per_row(loaded, index, rows, keep), want)
    # the derived ids are computed from a copy without the vertex data
    slim = loaded.fragments_only()
    np.testing.assert_array_equal(_object_ids_per_row(slim, index, rows, keep), want)


def _reference_paths(loaded, index, object_rows):
    """Paths entry by entry: a run of one object's consecutive loaded entries is one path."""
    flat, lengths, ids = [], [], []
    for r in object_rows.tolist():
        run: list[int] = []
        for e in range(index.offsets[r], index.offsets[r + 1]):
            k = int(loaded.table.index_of(index.chunks[e : e + 1])[0])
            if k < 0:  # an entry outside the loaded chunks ends the run
                if run:
                    flat += run
                    lengths.append(len(run))
                    ids.append(index.ids[r])
                run = []
                continue
            fi, f = loaded.chunks[k].fragments, int(index.frags[e])
            if 0 <= f < fi.num_fragments:
                run += (
                    np.arange(fi.start[f], fi.start[f] + fi.count[f]) + loaded.start[k]
                ).tolist()
        if run:
            flat += run
            lengths.append(len(run))
            ids.append(index.ids[r])
    return flat, lengths, ids


@SETTINGS
@given(
    seed=st.integers(0, 2**32 - 1),
    shape=st.sampled_from(["tiling", "gaps", "shuffled", "overlap"]),
    select=st.booleans(),
    subset=st.booleans(),
)
def test_paths_and_their_object_ids_equal_the_entry_by_entry_algorithm(seed, shape, select, subset):
    rng = np.random.default_rng(seed)
    loaded = _loaded(rng, shape)
    index = _index(rng, loaded)
    rows = None
    if select:
        rows = np.sort(rng.choice(index.num_objects, int(rng.integers(0, index.num_objects + 1)), replace=False))  # fmt: skip
    flat, lengths, ids = _paths(loaded, index, rows)
    want = _reference_paths(loaded, index, np.arange(index.num_objects) if rows is None else rows)
    assert (flat.tolist(), lengths.tolist(), ids.tolist()) == want
    assert flat.dtype == np.int32  # a few rows: numbered in int32
    keep = None
    if subset:
        keep = np.sort(rng.choice(loaded.n_rows + 1, int(rng.integers(0, loaded.n_rows + 1)), replace=False))  # fmt: skip
        keep = keep[keep < loaded.n_rows]
    np.testing.assert_array_equal(
        _path_object_ids(flat, lengths, ids, loaded.n_rows, keep),
        _reference_ids(loaded, index, rows, keep),
    )


@SETTINGS
@given(
    starts=st.lists(st.integers(-(2**40), 2**40), min_size=0, max_size=30),
    seed=st.integers(0, 2**32 - 1),
)
def test_expand_ranges(starts, seed):
    counts = np.random.default_rng(seed).integers(0, 5, len(starts))
    want = [np.arange(s, s + c) for s, c in zip(starts, counts, strict=True)]
    got = expand_ranges(np.array(starts, np.int64), counts)
    np.testing.assert_array_equal(got, np.concatenate(want) if want else np.empty(0, np.int64))
    assert got.dtype == np.int64


@SETTINGS
@given(
    table=st.lists(st.tuples(*[st.integers(-3, 3)] * 2), min_size=1, max_size=12, unique=True),
    queries=st.lists(
        st.tuples(*[st.one_of(st.integers(-5, 5), st.integers(-(2**62), 2**62))] * 2),
        max_size=20,
    ),
)
def test_dense_chunk_lookup(table, queries):
    t = ChunkTable(np.array(table, np.int64))
    assert t._dense is not None
    where = {c: i for i, c in enumerate(table)}
    q = np.array(queries, np.int64).reshape(-1, 2)
    want = [where.get(tuple(c), -1) for c in q.tolist()]
    np.testing.assert_array_equal(t.index_of(q), want)


def test_repeated_chunk_coordinates_keep_the_first():
    t = ChunkTable(np.array([[1, 1], [0, 0], [1, 1]], np.int64))
    assert t._dense is None  # the search answers, as before
    np.testing.assert_array_equal(t.index_of(np.array([[1, 1], [0, 0], [2, 2]])), [0, 1, -1])


@SETTINGS
@given(lengths=st.lists(st.integers(0, 6), max_size=20), seed=st.integers(0, 2**32 - 1))
def test_path_edges_from_flat_rows(lengths, seed):
    flat = np.random.default_rng(seed).permutation(sum(lengths)).astype(np.int64)
    ends = np.cumsum(lengths)
    paths = [flat[e - n : e] for n, e in zip(lengths, ends, strict=True)]
    want = [np.stack([p[:-1], p[1:]], axis=1) for p in paths if len(p) > 1]
    want = np.concatenate(want) if want else np.empty((0, 2), np.int64)
    np.testing.assert_array_equal(_path_edges(flat, np.array(lengths, np.int64)), want)


def test_derived_fields_are_computed_once_and_survive_copies():
    calls = []

    def ids():
        calls.append(1)
        return np.arange(3)

    g = Geometry("point_cloud", 0, np.zeros((3, 3)))
    assert g.vertex_object_ids is None
    assert g.edges.shape == (0, 2) and g.edges.dtype == np.int64
    g.vertex_object_ids = Derived(ids)
    g.edges = Derived(lambda: np.array([[0, 1]]))
    assert pickle.loads(pickle.dumps(g)).vertex_object_ids.tolist() == [0, 1, 2]
    assert dataclasses.replace(g, level=1).edges.tolist() == [[0, 1]]
    assert g.vertex_object_ids.tolist() == [0, 1, 2]
    assert len(calls) == 1


# -- reads by object id through the object-index chunks of the selected rows ----------------

#: objects of the store written by zarr-vectors 0.9.2 below: more than two manifest chunks
#: (its writer puts 16,384 manifests in a chunk)
MANY_OBJECTS = 40_000
MANIFESTS_PER_CHUNK = 16_384


@pytest.fixture(scope="module")
def many_objects(tmp_path_factory) -> Path:
    """40,000 polylines of 4 vertices written by zarr-vectors 0.9.2."""
    from zarr_vectors.types.polylines import write_polylines

    rng = np.random.default_rng(5)
    start = rng.uniform(0, 90, (MANY_OBJECTS, 1, 3))
    pts = np.clip(start + rng.normal(0, 3, (MANY_OBJECTS, 4, 3)).cumsum(axis=1), 0, 99.9)
    path = tmp_path_factory.mktemp("many") / "many.zarrvectors"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's warning about the vlen-bytes data type
        write_polylines(
            str(path), list(pts.astype(np.float32)), chunk_shape=(25.0,) * 3,
            bounds=([0.0] * 3, [100.0] * 3),
        )  # fmt: skip
    return path


def _same_geometry(a, b) -> None:
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_array_equal(a.vertex_object_ids, b.vertex_object_ids)
    assert [p.tolist() for p in a.paths] == [p.tolist() for p in b.paths]
    np.testing.assert_array_equal(a.path_object_ids, b.path_object_ids)
    np.testing.assert_array_equal(np.asarray(a.edges), np.asarray(b.edges))
    np.testing.assert_array_equal(a.faces, b.faces)
    assert a.vertex_attributes.keys() == b.vertex_attributes.keys()
    for name, values in a.vertex_attributes.items():
        np.testing.assert_array_equal(values, b.vertex_attributes[name])


def _whole_index_store(path: Path):
    """A store whose whole object index is decoded before it reads by id."""
    store = nzv.open_store(path)
    store.object_index(0)
    return store


STORES_WITH_OBJECTS = [
    f"{gen}/{name}"
    for gen in ("v07", "v09", "dense")
    for name in ("polylines", "streamlines", "skeleton", "mesh", "graph")
    if (DATA / gen / f"{name}.zarrvectors").is_dir()
]


@pytest.mark.parametrize("name", STORES_WITH_OBJECTS)
def test_a_read_by_id_before_the_index_is_read_equals_one_through_the_whole_index(
    name, monkeypatch
):
    monkeypatch.setattr(level_objects, "PARTIAL_INDEX_SHARE", 1)  # always a partial read
    path = DATA / f"{name}.zarrvectors"
    whole = _whole_index_store(path)
    index = whole.object_index(0)
    ids = index.ids[index.present]
    assert ids.size
    lo, hi = (np.asarray(b, np.float64) for b in whole.bounds)
    for pick in (ids[:1], ids[-1:], ids[: max(1, ids.size // 8)]):
        fresh = nzv.open_store(path)
        got = fresh.read(0, object_ids=pick)
        assert 0 not in fresh._objects._index  # noqa: SLF001 - the whole index stays unread
        want = whole.read(0, object_ids=pick)
        assert want.vertex_count > 0
        assert set(np.unique(want.vertex_object_ids)) <= {*pick.tolist(), -1}
        _same_geometry(got, want)
        box = (lo, lo + (hi - lo) * 0.6)
        _same_geometry(
            nzv.open_store(path).read(0, bbox=box, object_ids=pick),
            whole.read(0, bbox=box, object_ids=pick),
        )


def _fetched_keys(store, monkeypatch) -> list[str]:
    """Every key the store fetches from now on through its IO layer."""
    keys: list[str] = []
    io = store._io  # noqa: SLF001 - counting the fetches
    real = io.fetch_many

    def counting(wanted):
        keys.extend(wanted)
        return real(wanted)

    monkeypatch.setattr(io, "fetch_many", counting)
    return keys


def test_a_read_by_id_fetches_only_the_manifest_chunks_holding_the_ids(many_objects, monkeypatch):
    whole = _whole_index_store(many_objects)
    ids = whole.object_ids(0)
    assert ids.size == MANY_OBJECTS
    for rows, chunks in (([5], {0}), ([MANY_OBJECTS - 3], {2}), ([7, 20_000, 20_001], {0, 1})):
        store = nzv.open_store(many_objects)
        keys = _fetched_keys(store, monkeypatch)
        pick = ids[rows]
        got = store.read(0, object_ids=pick)
        manifests = sorted(k for k in keys if k.startswith("0/object_index/manifests/c/"))
        assert manifests == sorted(f"0/object_index/manifests/c/{c}" for c in chunks)
        assert all(r // MANIFESTS_PER_CHUNK in chunks for r in rows)
        want = whole.read(0, object_ids=pick)
        assert sorted(np.unique(got.path_object_ids).tolist()) == sorted(pick.tolist())
        assert got.vertex_count == 4 * len(rows)
        _same_geometry(got, want)


def test_a_large_selection_of_many_objects_equals_the_whole_index_read(many_objects):
    whole = _whole_index_store(many_objects)
    ids = whole.object_ids(0)
    pick = ids[MANIFESTS_PER_CHUNK - 50 : MANIFESTS_PER_CHUNK + 50]  # across a chunk boundary
    fresh = nzv.open_store(many_objects)
    got = fresh.read(0, object_ids=pick)
    _same_geometry(got, whole.read(0, object_ids=pick))
    assert got.vertex_count == 4 * pick.size
    np.testing.assert_array_equal(np.unique(got.vertex_object_ids), np.sort(pick))


@pytest.mark.parametrize("name", ["v09/points", "v09/graph", "v07/points"])
def test_a_point_cloud_read_fetches_its_manifests_only_when_the_ids_are_asked_for(
    name, monkeypatch
):
    """Its object ids and metadata are read (and checked) with the read; the manifests,
    the costly part of a large index, when the per-vertex object ids are first used."""
    expected = nzv.open_store(DATA / f"{name}.zarrvectors").read(0, strict=True)
    store = nzv.open_store(DATA / f"{name}.zarrvectors")
    keys = _fetched_keys(store, monkeypatch)
    g = store.read(0)
    manifests = [k for k in keys if "object_index/manifests/c" in k]
    if name.startswith("v09"):
        assert manifests == []
        assert len(store._objects._rows) == 1  # noqa: SLF001 - the ids read, not the table
    np.testing.assert_array_equal(g.vertex_object_ids, expected.vertex_object_ids)
    assert g.vertex_object_ids is not None and (g.vertex_object_ids >= 0).any()


def test_chunk_keys_parse_alike_with_and_without_names_that_are_no_keys():
    """A listing of keys only is parsed in one split; any other name takes the name-by-name
    way, which skips it: both give the keys sorted as integer tuples."""
    from napari_zarr_vectors.format.layout.keys import parse_chunk_keys

    keys = ["1.0.2", "0.10.-1", "0.2.3"]
    got = parse_chunk_keys(keys, 3)
    assert got.tolist() == [[0, 2, 3], [0, 10, -1], [1, 0, 2]]
    for extra in (["zarr.json"], ["1.x.2"], ["1.2"], ["1.2.3.4"]):
        assert parse_chunk_keys([*keys, *extra], 3).tolist() == got.tolist()


@pytest.mark.parametrize("rel", ["v09/points.zarrvectors", "v09/edge-cases/sparse_ids.zarrvectors"])
def test_numbers_decoded_from_their_checked_chunks_equal_zarrs(rel):
    """``object_index/object_ids`` (a 1-D array of numbers) is decoded from the chunks its
    frame check fetched, not read again by zarr: the same values."""
    import zarr

    path = data_root() / rel
    store = nzv.open_store(path)
    for level in range(len(store.levels)):
        ids = store.object_ids(level)
        want = zarr.open_array(path / f"{level}/object_index/object_ids", mode="r")[:]
        np.testing.assert_array_equal(ids, want)
        assert ids.flags.writeable
