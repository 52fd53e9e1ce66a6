"""A read of a few objects decodes only their manifests while the level's full object index
is not decoded (a 200,000-object store's first picture needs a few hundred), and gives
exactly what a read through the full index gives."""

from __future__ import annotations

import numpy as np
import pytest

import napari_zarr_vectors as nzv
from data_paths import data_root
from napari_zarr_vectors.format import level_objects
from napari_zarr_vectors.format.decode.manifests import decode_manifest

DATA = data_root()
CASES = [
    (gen, name)
    for gen in ("v07", "v09")
    for name in ("polylines", "streamlines", "graph", "skeleton", "mesh")
    if (DATA / gen / f"{name}.zarrvectors").is_dir()
]


def _same(a, b) -> None:
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_array_equal(a.vertex_object_ids, b.vertex_object_ids)
    assert len(a.paths) == len(b.paths)
    for p, q in zip(a.paths, b.paths, strict=True):
        np.testing.assert_array_equal(p, q)
    np.testing.assert_array_equal(a.path_object_ids, b.path_object_ids)
    np.testing.assert_array_equal(np.asarray(a.edges), np.asarray(b.edges))


@pytest.mark.parametrize(("gen", "name"), CASES)
def test_a_partial_index_reads_what_the_full_index_reads(gen, name, monkeypatch) -> None:
    path = DATA / gen / f"{name}.zarrvectors"
    full = nzv.open_store(path)
    index = full.object_index(0)
    ids = index.ids[index.present]
    decoded: list[int] = []
    real = level_objects.decode_object_index

    def counting(table, *args, **kwargs):
        decoded.append(len(table.ids))
        return real(table, *args, **kwargs)

    monkeypatch.setattr(level_objects, "decode_object_index", counting)
    monkeypatch.setattr(level_objects, "PARTIAL_INDEX_SHARE", 1)  # always partial
    lo, hi = (np.asarray(b, np.float64) for b in full.bounds)
    box = (lo, lo + (hi - lo) * 0.6)
    picks = [ids[:1], ids[-2:], ids[::3]]
    for pick in picks:
        part = nzv.open_store(path)
        assert np.array_equal(part.object_ids(0), index.ids)  # from the raw table
        decoded.clear()
        _same(part.read(0, object_ids=pick), full.read(0, object_ids=pick))
        _same(part.read(0, bbox=box, object_ids=pick), full.read(0, bbox=box, object_ids=pick))
        # only the picked objects' manifests were decoded, never the whole index
        assert decoded and max(decoded) == len(np.unique(pick))


def test_a_large_selection_decodes_the_full_index_once() -> None:
    path = DATA / "v09" / "polylines.zarrvectors"
    store = nzv.open_store(path)
    ids = store.object_ids(0)
    assert 0 not in store._objects._index  # noqa: SLF001 - nothing decoded yet
    store.read(0, object_ids=ids)  # every object: more than 1/PARTIAL_INDEX_SHARE
    assert store.object_index(0) is store._objects._index[0]  # noqa: SLF001
    assert 0 not in store._objects._rows  # noqa: SLF001 - the ids and raw table are released


@pytest.mark.parametrize(("gen", "name"), CASES)
def test_index_parts_decode_what_the_full_index_holds(gen, name) -> None:
    """The parts a whole-store job decodes one by one (``object_index_part`` of the ranges
    ``object_index_parts`` gives) hold the full index's rows, ids and entries, in order; a
    0.9 index (manifests in chunks of rows) is cut at its chunks, a 0.7 one is one part."""
    path = DATA / gen / f"{name}.zarrvectors"
    full = nzv.open_store(path).object_index(0)
    store = nzv.open_store(path)
    parts = store.object_index_parts(0, 2)
    assert parts[0][0] == 0 and parts[-1][1] == full.num_objects
    assert all(a[1] == b[0] for a, b in zip(parts[:-1], parts[1:], strict=True))
    rows = store._objects.ids_only(0)
    per = getattr(rows, "chunk_rows", full.num_objects)  # (0.7: the manifests whole)
    assert len(parts) == -(-full.num_objects // per)  # whole chunks of stored manifests
    decoded = [store.object_index_part(0, a, b) for a, b in parts]
    np.testing.assert_array_equal(np.concatenate([p.ids for p in decoded]), full.ids)
    np.testing.assert_array_equal(np.concatenate([p.chunks for p in decoded]), full.chunks)
    np.testing.assert_array_equal(np.concatenate([p.frags for p in decoded]), full.frags)
    for (a, b), p in zip(parts, decoded, strict=True):
        np.testing.assert_array_equal(p.offsets + full.offsets[a], full.offsets[a : b + 1])
        sliced = full.part(a, b)
        np.testing.assert_array_equal(sliced.offsets, p.offsets)


def test_parts_of_an_index_in_several_manifest_chunks(tmp_path, monkeypatch) -> None:
    """A 0.9 index whose manifests fill several stored chunks: any run of rows (across
    chunk edges, inside one chunk) and any scattered rows decode as the full index's."""
    pytest.importorskip("zarr_vectors")
    from zarr_vectors.core import arrays
    from zarr_vectors.types.polylines import write_polylines

    monkeypatch.setattr(arrays, "OBJECT_INDEX_MANIFEST_BUCKET", 5)
    rng = np.random.default_rng(3)
    lines = [np.cumsum(rng.normal(0, 4, (int(rng.integers(2, 30)), 3)), 0) + 50 for _ in range(23)]
    path = tmp_path / "lines.zarrvectors"
    write_polylines(str(path), lines, chunk_shape=(20.0, 20.0, 20.0))
    full = nzv.open_store(path).object_index(0)
    store = nzv.open_store(path)
    rows = store._objects.ids_only(0)  # noqa: SLF001
    assert rows.chunk_rows == 5 and full.num_objects == 23
    assert store.object_index_parts(0, 5) == [(0, 5), (5, 10), (10, 15), (15, 20), (20, 23)]
    for a, b in [(0, 23), (3, 12), (5, 10), (7, 8), (19, 23)]:
        part, want = store.object_index_part(0, a, b), full.part(a, b)
        np.testing.assert_array_equal(part.ids, want.ids)
        np.testing.assert_array_equal(part.offsets, want.offsets)
        np.testing.assert_array_equal(part.chunks, want.chunks)
        np.testing.assert_array_equal(part.frags, want.frags)
    scattered = np.array([1, 6, 7, 22])
    table = rows.manifests(scattered)
    np.testing.assert_array_equal(table.ids, full.ids[scattered])
    for blob, r in zip(table.manifests, scattered, strict=True):
        chunks, frags = decode_manifest(blob, full.chunks.shape[1])
        span = slice(full.offsets[r], full.offsets[r + 1])
        np.testing.assert_array_equal(chunks, full.chunks[span])
        np.testing.assert_array_equal(frags, full.frags[span])
