"""Damaged, missing and hostile input: every read either returns exact data, or
warns naming store, level, array and chunk while leaving a gap that costs only what is damaged,
or (``strict=True``) raises a ``ZVError``. Never an invented edge, a moved vertex, or a silently
missing chunk the store says holds data.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
import zarr
from _damage import name_a_missing_fragment

import napari_zarr_vectors as nzv
from data_paths import data_root
from napari_zarr_vectors.format import ZVChunkWarning, ZVFormatError

DATA = data_root()


def copy_store(rel: str, tmp_path: Path) -> Path:
    dst = tmp_path / rel.replace("/", "_")
    shutil.copytree(DATA / rel, dst)
    return dst


def read_quietly(path: Path, level: int = 0, **kwargs):
    """``(geometry, [warning messages])`` of one read of a freshly opened store."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        geom = nzv.open_store(path).read(level, **kwargs)
    return geom, [str(w.message) for w in caught if issubclass(w.category, ZVChunkWarning)]


def edge_set(geom) -> set[tuple[float, ...]]:
    """Edges as pairs of vertex positions (row numbers move when chunks drop out)."""
    p = geom.positions
    return {tuple(p[a].tolist() + p[b].tolist()) for a, b in geom.edges.tolist()}


# -- 1. skeletons never invent edges ---------------------------------------------------------
def _v07_child_out_of_range(path: Path) -> str:
    f = path / "0/links/0/0.1.0/c/0"  # uncompressed int64 (child, parent) rows
    rows = np.frombuffer(f.read_bytes(), "<i8").copy()
    rows[0] = 9999
    f.write_bytes(rows.tobytes())
    return "0.1.0"


def _v09_child_out_of_range(path: Path) -> str:
    s = nzv.open_store(path)
    grid = s.layout.grids.open(0, "links/0/0.0.0")
    chunk = s.layout.list_chunks(0, "links/0/0.0.0")[0]
    f = path / grid.keys((chunk - grid.origin)[None])[0]
    raw = f.read_bytes()  # one-element vlen frame: count, length, then int64 rows
    rows = np.frombuffer(raw[8:], "<i8").copy()
    rows[0] = 9999
    f.write_bytes(raw[:8] + rows.tobytes())
    return ".".join(map(str, chunk.tolist()))


def _dense_child_out_of_range(path: Path, value: int) -> str:
    arr = zarr.open_array(path / "0/links/0", mode="r+")
    cells = np.argwhere(arr[..., 0, 0] >= 0)
    cell = tuple(int(c) for c in cells[0])
    block = arr[cell]
    block[1, 0] = value
    arr[cell] = block
    return ".".join(map(str, cell))


@pytest.mark.parametrize(
    "rel, damage",
    [
        ("v07/skeleton.zarrvectors", _v07_child_out_of_range),
        ("v09/skeleton.zarrvectors", _v09_child_out_of_range),
        ("dense/skeleton.zarrvectors", lambda p: _dense_child_out_of_range(p, 9999)),
        ("dense/skeleton.zarrvectors", lambda p: _dense_child_out_of_range(p, -1)),
    ],
)
def test_a_corrupt_child_index_invents_no_skeleton_edge(tmp_path, rel, damage):
    path = copy_store(rel, tmp_path)
    clean = edge_set(nzv.open_store(path).read(0))
    chunk = damage(path)
    geom, caught = read_quietly(path)
    assert edge_set(geom) <= clean  # nothing invented
    assert len(clean - edge_set(geom)) < len(clean) / 2  # only that chunk's edges are lost
    assert any("links left out" in m and f"chunk {chunk}" in m for m in caught), caught
    with pytest.raises(ZVFormatError, match=f"chunk {chunk}"):
        nzv.open_store(path).read(0, strict=True)


@pytest.mark.parametrize("rel", ["v07/graph.zarrvectors", "v07/mesh.zarrvectors"])
def test_an_out_of_range_index_in_a_graph_or_mesh_is_reported(tmp_path, rel):
    path = copy_store(rel, tmp_path)
    clean = nzv.open_store(path).read(0)
    f = path / "0/links/0/0.0.0/c/0"
    rows = np.frombuffer(f.read_bytes(), "<i8").copy()
    rows[1] = -5
    f.write_bytes(rows.tobytes())
    geom, caught = read_quietly(path)
    assert len(geom.edges) + len(geom.faces) == len(clean.edges) + len(clean.faces) - 1
    assert any("links left out" in m and "chunk 0.0.0" in m for m in caught), caught


# -- 2. a missing chunk file the store says holds data is damage, not an empty chunk -------
def test_v07_missing_vertex_file_is_reported_not_read_as_the_origin(tmp_path):
    path = copy_store("v07/points.zarrvectors", tmp_path)
    clean = nzv.open_store(path).read(0)
    chunk = "-1.-2.0"  # a chunk away from the origin
    n = len(nzv.open_store(path).read(0, chunks=np.array([[-1, -2, 0]])).positions)
    (path / f"0/vertices/{chunk}/c/0").unlink()
    geom, caught = read_quietly(path)
    assert geom.vertex_count == clean.vertex_count - n
    at_origin = int(np.all(geom.positions == 0, axis=1).sum())
    assert at_origin == int(np.all(clean.positions == 0, axis=1).sum())
    assert any("file is missing" in m and f"chunk {chunk}" in m for m in caught), caught
    with pytest.raises(ZVFormatError, match=f"file 0/vertices/{chunk}/c/0"):
        nzv.open_store(path).read(0, strict=True)


def test_v07_missing_link_file_is_reported_not_read_as_self_loops(tmp_path):
    path = copy_store("v07/graph.zarrvectors", tmp_path)
    clean = nzv.open_store(path).read(0)
    (path / "0/links/0/0.0.0/c/0").unlink()
    geom, caught = read_quietly(path)
    assert not np.any(geom.edges[:, 0] == geom.edges[:, 1])  # no self-loop invented
    assert len(geom.edges) < len(clean.edges)
    assert any("file is missing" in m and "chunk 0.0.0" in m for m in caught), caught


def test_v09_missing_file_that_nonempty_chunks_lists_is_reported(tmp_path):
    path = copy_store("v09/graph.zarrvectors", tmp_path)
    s = nzv.open_store(path)
    clean = s.read(0)
    grid = s.layout.grids.open(0, "vertices")
    chunk = s.chunks(0)[3]
    key = grid.files((chunk - grid.origin)[None])[0]
    (path / key).unlink()
    geom, caught = read_quietly(path)
    name = ".".join(map(str, chunk.tolist()))
    assert geom.vertex_count < clean.vertex_count
    assert any("nonempty_chunks lists" in m and f"chunk {name}" in m for m in caught), caught
    with pytest.raises(ZVFormatError, match=f"file {key}"):
        nzv.open_store(path).read(0, strict=True)


# -- 4. one corrupt cell costs that cell, not the level ---------------------------------------
def _first_link_file(path: Path) -> Path:
    return sorted(p for p in (path / "0/links/0").rglob("*") if p.is_file() and "c" in p.parts)[0]


@pytest.mark.parametrize(
    "rel",
    [
        "v07/graph.zarrvectors",
        "v07/mesh.zarrvectors",
        "v09/graph.zarrvectors",
        "v09/mesh.zarrvectors",
        "dense/graph.zarrvectors",
        "dense/mesh.zarrvectors",
        "v07/skeleton.zarrvectors",
        "v09/skeleton.zarrvectors",
        "dense/skeleton.zarrvectors",
    ],
)
def test_one_corrupt_link_cell_costs_that_cell(tmp_path, rel):
    path = copy_store(rel, tmp_path)
    clean = nzv.open_store(path).read(0)
    f = _first_link_file(path)
    f.write_bytes(f.read_bytes()[:-3])
    geom, caught = read_quietly(path)
    kept = len(geom.edges) + len(geom.faces)
    total = len(clean.edges) + len(clean.faces)
    assert 0 < kept < total
    assert kept >= total / 2, (kept, total)
    assert edge_set(geom) <= edge_set(clean)  # nothing invented
    assert any(m.startswith("links left out") and "chunk" in m for m in caught), caught
    with pytest.raises(ZVFormatError):
        nzv.open_store(path).read(0, strict=True)


@pytest.mark.parametrize("rel", ["v07/points.zarrvectors", "v09/points.zarrvectors"])
def test_a_missing_attribute_chunk_costs_that_chunk(tmp_path, rel):
    path = copy_store(rel, tmp_path)
    s = nzv.open_store(path)
    clean = s.read(0)
    chunk = s.chunks(0)[2]
    name = ".".join(map(str, chunk.tolist()))
    rows = len(s.read(0, chunks=chunk[None]).positions)
    folder = path / "0/vertex_attributes/intensity"
    if rel.startswith("v07"):
        shutil.rmtree(folder / name)  # the blob is gone, not its bytes (which stand for zeros)
    else:
        grid = s.layout.grids.open(0, "vertex_attributes/intensity")
        (path / grid.files((chunk - grid.origin)[None])[0]).unlink()
    geom, caught = read_quietly(path)
    assert geom.vertex_count == clean.vertex_count
    values = geom.vertex_attributes["intensity"]
    assert int(np.isnan(values).sum()) >= rows
    same = ~np.isnan(values)
    np.testing.assert_array_equal(values[same], clean.vertex_attributes["intensity"][same])
    assert any("'intensity' left out" in m and f"chunk {name}" in m for m in caught), caught
    with pytest.raises(ZVFormatError, match=f"chunk {name}"):
        nzv.open_store(path).read(0, strict=True)


def test_a_negative_object_id_is_refused(tmp_path):
    path = copy_store("v09/graph.zarrvectors", tmp_path)
    arr = zarr.open_array(path / "0/object_index/object_ids", mode="r+")
    ids = arr[:]
    ids[1] = -7
    arr[:] = ids
    with pytest.raises(ZVFormatError, match="negative id -7.*object_index/object_ids"):
        nzv.open_store(path).read(0)


def test_raw_links_report_a_corrupt_cell(tmp_path):
    path = copy_store("v07/graph.zarrvectors", tmp_path)
    clean = len(nzv.open_store(path).links(0))
    f = _first_link_file(path)
    f.write_bytes(f.read_bytes()[:-3])
    with pytest.warns(ZVChunkWarning, match="links left out.*chunk 0.0.0"):
        links = nzv.open_store(path).links(0)
    assert 0 < len(links) < clean and len(links.errors) == 1
    with pytest.raises(ZVFormatError, match="chunk 0.0.0"):
        nzv.open_store(path).links(0, strict=True)


# -- 3. unbounded and invalid boxes -----------------------------------------------------------
@pytest.mark.parametrize(
    "rel", ["v07/points.zarrvectors", "v09/points.zarrvectors", "v07/graph.zarrvectors"]
)
@pytest.mark.parametrize("far", [np.inf, 1e300, 2.0**70])
def test_an_unbounded_box_reads_the_whole_level(rel, far):
    s = nzv.open_store(DATA / rel)
    whole = s.read(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not even numpy's cast warning
        boxed = nzv.open_store(DATA / rel).read(0, bbox=([-far] * s.ndim, [far] * s.ndim))
    np.testing.assert_array_equal(boxed.positions, whole.positions)
    np.testing.assert_array_equal(boxed.edges, whole.edges)


def test_a_box_with_nan_is_refused():
    s = nzv.open_store(DATA / "v07/points.zarrvectors")
    with pytest.raises(ValueError, match="NaN"):
        s.read(0, bbox=([np.nan, 0, 0], [1, 1, 1]))


def test_huge_bounds_cannot_overflow_the_candidate_count():
    from types import SimpleNamespace

    from napari_zarr_vectors.format.discovery import level_chunk_grid

    root = SimpleNamespace(bounds=(np.full(3, -1e308), np.full(3, 1e308)), ndim=3)
    level = SimpleNamespace(index=0, key_ndim=3, chunk_shape=np.full(3, 1e-300))
    with pytest.raises(nzv.ZVError, match="candidate chunks"):
        level_chunk_grid(root, level)


# -- 7, 8. hostile files: FIFOs, devices, symlink loops, deep JSON ------------------------------
def _read_in_child(path: Path, seconds: float = 20) -> str:
    """Read every level of ``path`` in a child process under a 3 GB address-space limit and a
    time limit; returns what it printed (``ok <warnings>``, ``<ZVError class>: ...``)."""
    script = textwrap.dedent(
        f"""
        import resource, warnings
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        import napari_zarr_vectors as nzv
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                s = nzv.open_store({str(path)!r})
                for lv in s.levels:
                    s.read(lv.index)
            print("ok", " | ".join(str(w.message) for w in caught))
        except nzv.ZVError as e:
            print(type(e).__name__ + ":", e)
        """
    )
    try:
        out = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=seconds
        )
    except subprocess.TimeoutExpired:
        return "hung"
    return out.stdout.strip() or out.stderr.strip()[-500:]


@pytest.mark.parametrize("kind", ["fifo", "device"])
@pytest.mark.parametrize(
    "rel, chunk_file",
    [
        ("v07/points.zarrvectors", "0/vertices/-1.-2.0/c/0"),
        ("v09/points.zarrvectors", "0/vertices/c/0/1/0"),  # a shard, read directly
        ("dense/graph.zarrvectors", "0/vertices/c/1/2/0/0/0"),  # read through zarr
    ],
)
def test_a_chunk_that_is_not_a_regular_file_is_refused_unread(tmp_path, rel, chunk_file, kind):
    path = copy_store(rel, tmp_path)
    target = path / chunk_file
    target.unlink()
    if kind == "fifo":
        os.mkfifo(target)  # a read would wait for a writer forever
    else:
        os.symlink("/dev/zero", target)  # a read would never end
    said = _read_in_child(path)  # a read that hangs fails at the child's timeout
    assert said.startswith("ok ") and "not a regular file" in said, said


def test_symlink_loops_are_format_errors(tmp_path):
    path = copy_store("v07/points.zarrvectors", tmp_path)
    blob = path / "0/vertices/-1.-2.0/c/0"
    blob.unlink()
    os.symlink(blob.name, blob)  # a file that points at itself
    geom, caught = read_quietly(path)
    assert any("Too many levels of symbolic links" in m and "chunk -1.-2.0" in m for m in caught)
    folder = path / "0/vertex_attributes"
    shutil.rmtree(folder)
    os.symlink(folder.name, folder)  # a folder that points at itself
    with pytest.raises(ZVFormatError, match="cannot list 0/vertex_attributes"):
        nzv.open_store(path).read(0)


def test_deeply_nested_json_is_a_format_error(tmp_path):
    path = copy_store("v09/points.zarrvectors", tmp_path)
    (path / "0/vertices/zarr.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ZVFormatError, match="nests its JSON too deeply"):
        nzv.open_store(path).read(0)


# -- 7. a shape that implies more chunks than can be read is refused at once --------------------
@pytest.mark.parametrize(
    "rel, array, read",
    [
        ("v09/points.zarrvectors", "0/group_attributes/weight", lambda s: s.group_attributes(0)),
        ("v09/points.zarrvectors", "0/object_attributes/score", lambda s: s.object_attributes(0)),
        ("v09/graph.zarrvectors", "0/groups", lambda s: s.groups(0)),
        ("dense/graph.zarrvectors", "0/object_attributes/score", lambda s: s.object_attributes(0)),
        ("dense/graph.zarrvectors", "0/vertex_fragments", lambda s: s.read(0)),
    ],
)
def test_an_inflated_shape_is_refused_before_reading(tmp_path, rel, array, read):
    path = copy_store(rel, tmp_path)
    doc_path = path / array / "zarr.json"
    doc = json.loads(doc_path.read_text())
    doc["shape"] = [n * 1_000_000 + 1 for n in doc["shape"]]
    doc_path.write_text(json.dumps(doc))
    with pytest.raises(ZVFormatError, match="shape|one cell spans"):
        read(nzv.open_store(path))


def test_an_inflated_dense_attribute_costs_that_attribute(tmp_path):
    path = copy_store("dense/graph.zarrvectors", tmp_path)
    clean = nzv.open_store(path).read(0)
    doc_path = path / "0/attributes/intensity/zarr.json"
    doc = json.loads(doc_path.read_text())
    doc["shape"] = [n * 1000 for n in doc["shape"]]
    doc_path.write_text(json.dumps(doc))
    geom, caught = read_quietly(path)
    assert geom.vertex_count == clean.vertex_count
    assert "intensity" in clean.vertex_attributes and "intensity" not in geom.vertex_attributes
    np.testing.assert_array_equal(geom.positions, clean.positions)
    assert any("'intensity' left out" in m and "spans" in m for m in caught), caught[:2]


# -- what the wrong-data oracle of the fuzz campaign found -------------------------------------
@pytest.mark.parametrize(
    "rel, move",
    [
        ("v07/points.zarrvectors", "zero"),  # all-zero bytes: every vertex at the origin
        ("v07/points.zarrvectors", "swap"),  # another chunk's vertices
        ("v09/graph.zarrvectors", "swap"),
    ],
)
def test_vertices_outside_their_chunk_are_reported(tmp_path, rel, move):
    path = copy_store(rel, tmp_path)
    s = nzv.open_store(path)
    clean = s.read(0)
    if rel.startswith("v07"):  # two blobs of one length: their sizes agree with metadata
        by_size: dict[int, list[Path]] = {}
        for f in sorted((path / "0/vertices").glob("*/c/0")):
            by_size.setdefault(f.stat().st_size, []).append(f)
        a, b = next(fs for fs in by_size.values() if len(fs) > 1)[:2]
    else:
        grid = s.layout.grids.open(0, "vertices")
        a, b = (path / grid.files((c - grid.origin)[None])[0] for c in s.chunks(0)[[0, -1]])
    first, second = a.read_bytes(), b.read_bytes()
    if move == "zero":  # away from the origin (zeros are that chunk's vertices otherwise)
        a = path / "0/vertices/-1.-2.0/c/0"
        a.write_bytes(bytes(len(a.read_bytes())))
    else:
        a.write_bytes(second)
        b.write_bytes(first)
    geom, caught = read_quietly(path)
    assert geom.vertex_count < clean.vertex_count
    assert any("lie far outside the chunk" in m for m in caught), caught


def test_a_v07_blob_whose_zarr_json_is_gone_is_reported(tmp_path):
    path = copy_store("v07/graph_interleaved.zarrvectors", tmp_path)
    (path / "0/vertex_fragments/0.0.0/zarr.json").unlink()
    geom, caught = read_quietly(path)
    assert any("zarr.json is missing beside its chunk file" in m for m in caught), caught


def test_a_v07_cross_chunk_blob_without_its_bytes_is_reported(tmp_path):
    path = copy_store("v07/graph.zarrvectors", tmp_path)
    (path / "0/cross_chunk_links/0/data/c/0").unlink()
    geom, caught = read_quietly(path)
    assert any("links left out" in m and "file is missing" in m for m in caught), caught


def test_a_manifest_naming_a_fragment_its_chunk_lacks_is_reported(tmp_path):
    path = copy_store("v09/polylines.zarrvectors", tmp_path)
    name_a_missing_fragment(path)
    geom, caught = read_quietly(path)
    assert any("name fragments their chunks do not hold" in m for m in caught), caught
    with pytest.raises(ZVFormatError, match="fragment 999"):
        nzv.open_store(path).read(0, strict=True)


def test_groups_naming_unknown_objects_are_reported(tmp_path):
    path = copy_store("v07/polylines.zarrvectors", tmp_path)
    f = path / "0/groups/data/c/0"
    ids = np.frombuffer(f.read_bytes(), "<i8").copy()
    ids[0] = 10_000
    f.write_bytes(ids.tobytes())
    with pytest.warns(ZVChunkWarning, match="groups name 1 object ids the level does not hold"):
        nzv.open_store(path).groups(0)


def test_a_dense_chunk_without_its_fragment_index_is_reported(tmp_path):
    path = copy_store("dense/lines.zarrvectors", tmp_path)
    s = nzv.open_store(path)
    chunk = s.chunks(0)[0]
    (path / ("0/vertex_fragments/c/" + "/".join(map(str, chunk.tolist())) + "/0")).unlink()
    geom, caught = read_quietly(path)
    assert any("no fragment index" in m for m in caught), caught


@pytest.mark.parametrize("rel", ["v09/polylines.zarrvectors", "v07/skeleton.zarrvectors"])
def test_a_listed_object_attribute_without_its_array_is_reported(tmp_path, rel):
    path = copy_store(rel, tmp_path)
    folder = next((path / "0/object_attributes").iterdir())
    for f in folder.rglob("zarr.json"):
        f.unlink()
    for f in folder.rglob("c"):
        shutil.rmtree(f)
    with pytest.warns(ZVChunkWarning, match="listed but holds no array"):
        nzv.open_store(path).object_attributes(0)


def test_a_listed_link_segment_without_its_array_is_reported(tmp_path):
    path = copy_store("v09/graph.zarrvectors", tmp_path)
    clean = nzv.open_store(path).read(0)
    (path / "0/links/0/+1.0.0/zarr.json").unlink()
    geom, caught = read_quietly(path)
    assert len(geom.edges) < len(clean.edges)
    assert any("links/0/+1.0.0" in m and "holds no array" in m for m in caught), caught


def test_a_record_toward_a_chunk_the_level_lacks_is_reported(tmp_path):
    path = copy_store("v07/skeleton.zarrvectors", tmp_path)
    clean = edge_set(nzv.open_store(path).read(0))
    f = path / "0/cross_chunk_links/0/data/c/0"  # (chunk, row) pairs, int64 (zstd or raw)
    meta = json.loads((f.parents[1] / "zarr.json").read_text())
    import numcodecs

    zstd = len(meta["codecs"]) > 1
    raw = numcodecs.Zstd().decode(f.read_bytes()) if zstd else f.read_bytes()
    values = np.frombuffer(raw, "<i8").copy()
    values[0] = 77  # the first record's child now lies in chunk (77, ., .)
    data = values.tobytes()
    f.write_bytes(numcodecs.Zstd().encode(data) if zstd else data)
    geom, caught = read_quietly(path)
    assert edge_set(geom) <= clean
    assert any("which the level does not list" in m for m in caught), caught


def test_a_manifest_naming_a_chunk_the_level_lacks_is_reported(tmp_path):
    path = copy_store("v09/polylines.zarrvectors", tmp_path)
    arr = zarr.open_array(path / "0/object_index/manifests", mode="r+")
    items = arr[:]
    raw = bytearray(items[0])  # u32 count, then per entry key_ndim int64 coordinates + frag
    raw[4:12] = np.int64(77).tobytes()
    items[0] = bytes(raw)
    arr[:] = items
    geom, caught = read_quietly(path)
    assert any("name chunks the level does not list" in m for m in caught), caught


def test_lazily_derived_object_ids_report_a_manifest_naming_a_missing_fragment(tmp_path):
    path = copy_store("v09/graph.zarrvectors", tmp_path)
    clean = nzv.open_store(path).read(0).vertex_object_ids
    arr = zarr.open_array(path / "0/object_index/manifests", mode="r+")
    items = arr[:]
    raw = bytearray(items[0])
    raw[-8:] = np.int64(999).tobytes()
    items[0] = bytes(raw)
    arr[:] = items
    geom = nzv.open_store(path).read(0)  # object ids derived (and checked) on first use
    with pytest.warns(ZVChunkWarning, match="fragment 999"):
        ids = geom.vertex_object_ids
    assert ids.shape == clean.shape and (ids != clean).any()


def test_a_damaged_cell_of_an_array_without_a_listing_is_reported(tmp_path):
    path = copy_store("next/points_deferred.zarrvectors", tmp_path)
    clean = nzv.open_store(path).links(0, 1)
    f = path / "0/links/+1/0.0.0/c/1/2/3"  # the array lists no non-empty cells: scanned
    f.write_bytes(f.read_bytes() + bytes(8))
    with pytest.warns(ZVChunkWarning, match=r"links/\+1/0.0.0.*chunk -1.0.1"):
        links = nzv.open_store(path).links(0, 1)
    lost = ~np.all(clean.chunks[:, 0] == [-1, 0, 1], axis=1)
    assert len(links) == int(lost.sum()) < len(clean)
    np.testing.assert_array_equal(links.rows, clean.rows[lost])


def test_a_level_without_its_vertices_array_is_an_error(tmp_path):
    path = copy_store("v09/edge-cases/explicit_demo.zarrvectors", tmp_path)
    (path / "0/vertices/zarr.json").unlink()
    with pytest.raises(ZVFormatError, match="declares 5 vertices and has no vertices array"):
        nzv.open_store(path).read(0)


def test_a_link_attribute_segment_without_its_array_is_reported(tmp_path):
    path = copy_store("next/graph_deferred_sharded.zarrvectors", tmp_path)
    clean = nzv.open_store(path).links(0, 0)
    (path / "0/link_attributes/weight/0/0.+1.0/zarr.json").unlink()
    with pytest.warns(ZVChunkWarning, match=r"link_attributes/weight/0/0.\+1.0"):
        links = nzv.open_store(path).links(0, 0)
    np.testing.assert_array_equal(links.rows, clean.rows)  # the records stand
    weight, lost = links.attributes["weight"], np.isnan(links.attributes["weight"])
    assert 0 < lost.sum() < len(links)
    np.testing.assert_array_equal(weight[~lost], clean.attributes["weight"][~lost])


def test_a_listed_link_attribute_family_without_its_group_is_reported(tmp_path):
    """``link_attributes/weight/0`` listed without its group document: the attribute is
    left out of the delta's links with a warning; the records stand."""
    path = copy_store("v09/skeleton.zarrvectors", tmp_path)
    clean = nzv.open_store(path).links(0, 0)
    assert list(clean.attributes) == ["weight"]
    (path / "0/link_attributes/weight/0/zarr.json").unlink()
    with pytest.warns(ZVChunkWarning, match=r"level 0, array link_attributes/weight/0\)"):
        links = nzv.open_store(path).links(0, 0)
    assert links.attributes == {}
    np.testing.assert_array_equal(links.chunks, clean.chunks)
    np.testing.assert_array_equal(links.rows, clean.rows)


def test_a_listed_link_family_without_its_group_is_reported(tmp_path):
    path = copy_store("next/streamlines_dense.zarrvectors", tmp_path)
    assert len(nzv.open_store(path).links(0, 0)) == 61
    (path / "0/links/0/zarr.json").unlink()
    with pytest.warns(ZVChunkWarning, match=r"links left out.*array links/0\)"):
        assert len(nzv.open_store(path).links(0, 0)) == 0


def test_a_dense_attribute_without_its_zarr_json_is_reported(tmp_path):
    path = copy_store("dense/skeleton.zarrvectors", tmp_path)
    clean = nzv.open_store(path).object_attributes(0)
    (path / "0/object_attributes/label/zarr.json").unlink()
    with pytest.warns(ZVChunkWarning, match="object_attributes/label"):
        attrs = nzv.open_store(path).object_attributes(0)
    assert "label" in clean and set(attrs) == set(clean) - {"label"}


@pytest.mark.parametrize(
    "rel", ["next/points_categorical.zarrvectors", "v07/polylines.zarrvectors"]
)
def test_a_listed_object_index_without_its_group_is_reported(tmp_path, rel):
    path = copy_store(rel, tmp_path)
    clean = nzv.open_store(path).read(0)
    assert (clean.vertex_object_ids >= 0).any()
    (path / "0/object_index/zarr.json").unlink()
    with pytest.warns(ZVChunkWarning, match=r"object index left out.*array object_index\)"):
        geom = nzv.open_store(path).read(0)
        assert geom.vertex_object_ids is None
    np.testing.assert_array_equal(geom.positions, clean.positions)


def test_v07_object_index_document_without_num_objects_is_refused(tmp_path):
    """Another node's document in place of the object index's (no ``num_objects``) read as
    an index of no objects; the count is required."""
    path = copy_store("v07/graph_interleaved.zarrvectors", tmp_path)
    assert (nzv.open_store(path).read(0).vertex_object_ids >= 0).any()
    doc = path / "0/object_index/zarr.json"
    doc.unlink()
    doc.symlink_to("../link_fragments/zarr.json")
    with pytest.raises(ZVFormatError, match="num_objects") as info:
        nzv.open_store(path).read(0)
    assert "level 0" in str(info.value) and "array object_index" in str(info.value)


@pytest.mark.parametrize(
    ("rel", "level", "delta"),
    [("v09/points_binned.zarrvectors", 1, -1), ("v09/edge-cases/poly_mc.zarrvectors", 0, 0)],
)
def test_link_family_that_lists_segments_without_its_width_is_refused(tmp_path, rel, level, delta):
    """A link family group whose attributes are gone (or whose document is another node's)
    read as no links although it lists segments."""
    path = copy_store(rel, tmp_path)
    assert len(nzv.open_store(path).links(level, delta)) > 0
    doc = path / f"{level}/links/{delta}/zarr.json"
    meta = json.loads(doc.read_text())
    meta["attributes"] = {}
    doc.write_text(json.dumps(meta))
    with pytest.raises(ZVFormatError, match="link_width") as info:
        nzv.open_store(path).links(level, delta)
    assert f"level {level}" in str(info.value) and "array links/" in str(info.value)


@pytest.mark.parametrize("rel", ["v07/graph.zarrvectors", "dense/skeleton.zarrvectors"])
def test_zeroed_cross_chunk_records_are_reported_not_read_as_self_loops(tmp_path, rel):
    path = copy_store(rel, tmp_path)
    clean = nzv.open_store(path).read(0)
    f = path / "0/cross_chunk_links/0/data/c/0"
    raw = f.read_bytes()
    meta = json.loads((f.parents[1] / "zarr.json").read_text())
    import numcodecs

    zstd = any(c.get("name") == "zstd" for c in meta["codecs"])
    size = len(numcodecs.Zstd().decode(raw)) if zstd else len(raw)
    f.write_bytes(numcodecs.Zstd().encode(bytes(size)) if zstd else bytes(size))
    geom, caught = read_quietly(path)
    assert any("cross-chunk records join rows of one chunk" in m for m in caught), caught
    assert edge_set(geom) < edge_set(clean)  # the cross-chunk edges are gone, no new one
    assert not any(p[: geom.ndim] == p[geom.ndim :] for p in edge_set(geom))


def test_cross_chunk_records_without_their_zarr_json_are_reported(tmp_path):
    path = copy_store("v07/mesh.zarrvectors", tmp_path)
    clean = nzv.open_store(path).read(0)
    (path / "0/cross_chunk_links/0/zarr.json").unlink()
    geom, caught = read_quietly(path)
    assert 0 < len(geom.faces) < len(clean.faces)
    assert any("cross_chunk_links/0" in m and "zarr.json is gone" in m for m in caught), caught


@pytest.mark.parametrize("array", ["names", "object_attributes/weight"])
def test_a_listed_parametric_array_without_its_zarr_json_is_reported(tmp_path, array):
    path = copy_store("next/parametric.zarrvectors", tmp_path)
    clean = nzv.open_store(path).parametric_objects
    (path / "parametric" / array / "zarr.json").unlink()
    with pytest.warns(ZVChunkWarning, match=f"array parametric/{array}"):
        objects = nzv.open_store(path).parametric_objects
    assert [o.coefficients for o in objects] == [o.coefficients for o in clean]


def test_a_chunk_file_larger_than_an_object_may_be_is_refused_unread(tmp_path, monkeypatch):
    from napari_zarr_vectors.format import io as io_module

    path = copy_store("v07/points.zarrvectors", tmp_path)
    clean = nzv.open_store(path).read(0)
    f = path / "0/vertices/-1.-2.0/c/0"
    monkeypatch.setattr(io_module, "MAX_OBJECT_BYTES", 1 << 16)
    with open(f, "ab") as out:
        out.truncate((1 << 16) + 1)  # one byte past the cap (sparse: nothing is written)
    geom, caught = read_quietly(path)
    assert any("more than the 65536" in m and "chunk -1.-2.0" in m for m in caught), caught
    assert 0 < geom.vertex_count < clean.vertex_count


def test_a_link_segment_whose_attributes_are_gone_costs_its_records(tmp_path):
    path = copy_store("v09/skeleton.zarrvectors", tmp_path)
    clean = nzv.open_store(path).links(0, 0)
    doc = path / "0/links/0/+1.+1.+1/zarr.json"
    meta = json.loads(doc.read_text())
    meta["attributes"] = None
    doc.write_text(json.dumps(meta))
    with pytest.warns(ZVChunkWarning, match=r"links/0/\+1.\+1.\+1"):
        links = nzv.open_store(path).links(0, 0)
    assert 0 < len(links) < len(clean)
    assert all(len(v) == len(links) for v in links.attributes.values())


@pytest.mark.parametrize("path_value", [None, 2**62])
def test_a_level_the_root_lists_without_its_document_is_reported(tmp_path, path_value):
    """Level 1's ``zarr.json`` gone, or the root's dataset path of level 1 turned into
    another level number: the level the root lists has no document and is left out with a
    warning naming it; level 0 reads as on the clean store."""
    path = copy_store("next/trk_crs.zarrvectors", tmp_path)
    clean = nzv.open_store(path).read(0)
    if path_value is None:
        (path / "1/zarr.json").unlink()
        level = 1
    else:
        doc = path / "zarr.json"
        meta = json.loads(doc.read_text())
        meta["attributes"]["multiscales"][0]["datasets"][1]["path"] = path_value
        doc.write_text(json.dumps(meta))
        level = path_value
    with pytest.warns(
        ZVChunkWarning, match=rf"level left out: .*zarr.json is missing.*level {level}\)"
    ):
        store = nzv.open_store(path)
    assert [lv.index for lv in store.levels] == [0]
    np.testing.assert_array_equal(store.read(0).positions, clean.positions)


def test_links_toward_a_level_the_store_lacks_are_a_format_error(tmp_path):
    from napari_zarr_vectors.format import cross_level_segments

    path = copy_store("next/mesh_flg.zarrvectors", tmp_path)
    (path / "0/zarr.json").unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = nzv.open_store(path)
    assert [lv.index for lv in store.levels] == [1]
    with pytest.raises(ZVFormatError, match="links toward level 0, which the store does not"):
        cross_level_segments(store, 1, -1)


def test_an_inflated_parametric_shape_is_refused_before_reading(tmp_path):
    path = copy_store("next/parametric.zarrvectors", tmp_path)
    doc = path / "parametric/groups/zarr.json"
    meta = json.loads(doc.read_text())
    meta["shape"] = [n * 1_000_000 for n in meta["shape"]]
    doc.write_text(json.dumps(meta))
    with pytest.raises(ZVFormatError, match="chunks to read"):
        nzv.open_store(path).parametric  # noqa: B018 - the read is the point


# -- parametric rows keep their NaN padding ----------------------------------------------------
def test_parametric_rows_read_as_the_fill_value_are_reported(tmp_path):
    """A missing ``parametric/objects`` chunk reads as the fill value 0: rows of type 0 (a
    plane, 4 coefficients) whose padding is 0, not NaN. They are left out with a warning
    naming the array and chunk instead of appearing as four planes 0x+0y+0z+0=0."""
    path = copy_store("next/parametric.zarrvectors", tmp_path)
    clean = nzv.open_store(path).parametric_objects
    assert len(clean) == 4 and {o.type for o in clean} != {"plane"}
    (path / "parametric/objects/c/0/0").unlink()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = nzv.open_store(path).parametric_objects
    messages = [str(w.message) for w in caught if issubclass(w.category, ZVChunkWarning)]
    assert got == []
    assert any("parametric/objects" in m and "chunk 0.0" in m for m in messages), messages


def test_parametric_coefficient_names_that_are_not_strings_are_refused(tmp_path):
    path = copy_store("next/parametric.zarrvectors", tmp_path)
    doc = path / "parametric/zarr.json"
    meta = json.loads(doc.read_text())
    meta["attributes"]["parametric_types"]["0"]["coefficients"][1] = None
    doc.write_text(json.dumps(meta))
    with pytest.raises(ZVFormatError, match="coefficients") as info:
        list(nzv.open_store(path).parametric_objects)
    assert "parametric/zarr.json" in str(info.value)


@pytest.mark.parametrize(
    ("store", "key", "value", "field"),
    [
        ("v07/lines.zarrvectors", "name", 2**31, "parametric_types.0.name"),
        ("next/parametric.zarrvectors", "name", 3, "parametric_types.0.name"),
        ("v07/lines.zarrvectors", "coefficients", None, "parametric_types.0.coefficients"),
    ],
)
def test_parametric_type_without_a_string_name_or_coefficient_list_is_refused(
    tmp_path, store, key, value, field
):
    """A declared type names itself and its coefficients: a number for a name, or the
    coefficient list removed (rows then read with made-up names ``c0..``), is refused."""
    path = copy_store(store, tmp_path)
    clean = nzv.open_store(path).parametric_objects
    planes = [o for o in clean if o.type == "plane"]
    assert planes and set(planes[0].coefficients) == {"A", "B", "C", "D"}
    doc = path / "parametric/zarr.json"
    meta = json.loads(doc.read_text())
    spec = meta["attributes"]["parametric_types"]["0"]
    if value is None:
        del spec[key]
    else:
        spec[key] = value
    doc.write_text(json.dumps(meta))
    with pytest.raises(ZVFormatError, match=field.replace(".", r"\.")) as info:
        list(nzv.open_store(path).parametric_objects)
    assert "parametric/zarr.json" in str(info.value)


@pytest.mark.parametrize("store", ["next/parametric.zarrvectors", "v07/lines.zarrvectors"])
def test_parametric_rows_of_a_type_the_store_does_not_declare_are_left_out(tmp_path, store):
    """A row's type id names an entry of ``parametric_types``: with the entry (or the whole
    table) gone, its coefficients have no names and its type no name (it read as type
    ``"1"`` with coefficients ``c0..``). Those rows are left out with a warning; the others
    read as on the clean store."""
    path = copy_store(store, tmp_path)
    clean = nzv.open_store(path).parametric_objects
    assert {o.type for o in clean} == {"plane", "line", "sphere"}
    doc = path / "parametric/zarr.json"
    meta = json.loads(doc.read_text())
    del meta["attributes"]["parametric_types"]["1"]
    doc.write_text(json.dumps(meta))
    with pytest.warns(ZVChunkWarning, match=r"does not declare \(.*array parametric/objects"):
        got = nzv.open_store(path).parametric_objects
    assert got == [o for o in clean if o.type != "line"] and len(got) < len(clean)
    del meta["attributes"]["parametric_types"]
    doc.write_text(json.dumps(meta))
    with pytest.warns(ZVChunkWarning, match=rf"{len(clean)} rows \(first 0\) have a type id"):
        assert nzv.open_store(path).parametric_objects == []


@pytest.mark.parametrize("store", ["next/parametric.zarrvectors", "v07/lines.zarrvectors"])
def test_a_parametric_folder_without_its_group_document_is_reported(tmp_path, store):
    """With ``parametric/zarr.json`` gone, the folder's objects cannot be read: they are
    left out with a warning naming the folder, not silently; a store with no parametric
    folder reads none, without a warning."""
    path = copy_store(store, tmp_path)
    assert nzv.open_store(path).parametric_objects
    (path / "parametric/zarr.json").unlink()
    with pytest.warns(ZVChunkWarning, match=r"parametric objects left out.*array parametric"):
        assert nzv.open_store(path).parametric_objects == []
    shutil.rmtree(path / "parametric")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert nzv.open_store(path).parametric_objects == []


def test_object_attribute_with_more_rows_than_objects_is_left_out(tmp_path):
    """An object attribute whose ``shape`` was inflated x1000 holds rows no object owns: it
    is left out with a warning naming it; the other attributes read as on the clean store."""
    path = copy_store("dense/streamlines.zarrvectors", tmp_path)
    clean = nzv.open_store(path).object_attributes(0)
    assert "length" in clean and len(clean) > 1
    doc = path / "0/object_attributes/length/zarr.json"
    meta = json.loads(doc.read_text())
    meta["shape"][0] *= 1000
    doc.write_text(json.dumps(meta))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = nzv.open_store(path).object_attributes(0)
    messages = [str(w.message) for w in caught if issubclass(w.category, ZVChunkWarning)]
    assert set(got) == set(clean) - {"length"}
    for name, values in got.items():
        np.testing.assert_array_equal(values, clean[name])
    assert any("object_attributes/length" in m and "level 0" in m for m in messages), messages


def test_v07_cross_chunk_links_without_their_group_document_are_refused(tmp_path):
    """The streamlines' only link family of delta 0 is ``cross_chunk_links/0``: without its
    ``zarr.json`` (which gives ``link_width``) its 55 records read as no links at all."""
    path = copy_store("v07/streamlines.zarrvectors", tmp_path)
    assert len(nzv.open_store(path).links(0, 0)) == 55
    (path / "0/cross_chunk_links/0/zarr.json").unlink()
    with pytest.raises(ZVFormatError, match="link_width") as info:
        nzv.open_store(path).links(0, 0)
    assert "level 0" in str(info.value) and "cross_chunk_links/0" in str(info.value)


def test_dense_chunk_shape_that_puts_stored_cells_outside_the_bounds_is_refused(tmp_path):
    """A root ``chunk_shape`` inflated on one axis maps every stored cell past index 0 of that
    axis outside the bounds: a bbox read would skip them and return part of the box, so the
    level's listing refuses it; the clean store's box read holds those vertices."""
    path = copy_store("dense/mesh.zarrvectors", tmp_path)
    box = ([-30.0, -10.0, -10.0], [28.0, 40.0, 40.0])
    clean = nzv.open_store(path).read(0, bbox=box)
    assert (clean.positions[:, 0] > 0).any()
    doc = path / "zarr.json"
    meta = json.loads(doc.read_text())
    meta["attributes"]["zarr_vectors"]["chunk_shape"][0] = 2.0**31
    doc.write_text(json.dumps(meta))
    with pytest.raises(ZVFormatError, match="outside the store's bounds") as info:
        nzv.open_store(path).read(0, bbox=box)
    assert "level 0" in str(info.value) and "array vertices" in str(info.value)
    assert "chunk 1." in str(info.value)


def test_link_attribute_grid_that_does_not_mirror_its_records_is_a_gap(tmp_path):
    """A link attribute array whose ``chunk_grid_origin`` moved no longer mirrors its link
    records cell for cell: its values would read as absent (NaN) with no word. The records
    stand, that segment's values are a reported gap, every other value is exact."""
    path = copy_store("next/graph_deferred_sharded.zarrvectors", tmp_path)
    clean = nzv.open_store(path).links(0, 0)
    doc = path / "0/link_attributes/weight/0/+1.0.+2/zarr.json"
    meta = json.loads(doc.read_text())
    meta["attributes"]["chunk_grid_origin"][2] = 2**31
    doc.write_text(json.dumps(meta))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = nzv.open_store(path).links(0, 0)
    messages = [str(w.message) for w in caught if issubclass(w.category, ZVChunkWarning)]
    assert len(got) == len(clean) == 135
    lost = np.isnan(got.attributes["weight"])
    assert 0 < lost.sum() < len(got)
    np.testing.assert_array_equal(
        got.attributes["weight"][~lost], clean.attributes["weight"][~lost]
    )
    assert any("link_attributes/weight/0/+1.0.+2" in m and "mirror" in m for m in messages), (
        messages
    )


def test_manifest_rows_read_as_the_fill_value_beyond_num_present_are_reported(tmp_path):
    """A 0.9 manifests chunk that is gone reads as the fill value, no manifest: objects
    without geometry. ``num_present`` counts the rows that hold one, so more empty rows than
    ``num_objects - num_present`` are damage; the vertices still read."""
    path = copy_store("v09/edge-cases/schema_demo2.zarrvectors", tmp_path)
    clean = nzv.open_store(path)
    clean_geom, clean_by_id = clean.read(0), clean.read(0, object_ids=[3])
    assert clean.object_presence(0).all() and len(clean_by_id.positions) > 0
    (path / "0/object_index/manifests/c/0").unlink()
    where = r"level 0, array object_index/manifests, chunk 0, file 0/object_index/manifests/c/0"
    with pytest.warns(ZVChunkWarning, match=rf"num_present says 10 of the 10 .*{where}"):
        by_id = nzv.open_store(path).read(0, object_ids=[3])  # the rows of one chunk read
    assert len(by_id.positions) == 0
    store = nzv.open_store(path)
    with pytest.warns(ZVChunkWarning, match=rf"10 manifest rows read as the fill value.*{where}"):
        presence = store.object_presence(0)
    assert presence.shape == (10,) and not presence.any()
    geom, _ = read_quietly(path)
    np.testing.assert_array_equal(geom.positions, clean_geom.positions)


def test_manifests_a_writer_left_without_blocks_are_not_reported(tmp_path):
    """A manifest of zero blocks (``B = 0``) is a row the writer wrote: ``explicit_demo``
    counts it in ``num_present`` and reads without a warning."""
    path = copy_store("v09/edge-cases/explicit_demo.zarrvectors", tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ZVChunkWarning)
        store = nzv.open_store(path)
        present = store.object_presence(0)
    np.testing.assert_array_equal(np.flatnonzero(present), [5, 1000])


def test_link_offsets_that_differ_from_the_segment_name_are_a_gap(tmp_path):
    """A segment's ``offsets`` repeat its name; one that lost a coordinate (``[[1, 0]]`` for
    ``+1.0.0``) placed every record's other endpoint in the wrong chunk. The segment is a
    reported gap, every other record is exact."""
    path = copy_store("next/trk_crs.zarrvectors", tmp_path)
    clean = nzv.open_store(path).links(0, 0)
    doc = path / "0/links/0/+1.0.0/zarr.json"
    meta = json.loads(doc.read_text())
    meta["attributes"]["offsets"] = [[1, 0]]
    doc.write_text(json.dumps(meta))
    with pytest.warns(ZVChunkWarning, match=r"differ from the segment's name.*links/0/\+1.0.0"):
        links = nzv.open_store(path).links(0, 0)
    kept = ~np.all(clean.chunks[:, 1] - clean.chunks[:, 0] == [1, 0, 0], axis=1)
    assert len(links) == int(kept.sum()) == len(clean) - 16
    np.testing.assert_array_equal(links.chunks, clean.chunks[kept])
    np.testing.assert_array_equal(links.rows, clean.rows[kept])
    with pytest.raises(ZVFormatError, match=r"offsets \[\[1, 0\]\] differ .* \+1.0.0 \(store"):
        nzv.open_store(path).links(0, 0, strict=True)


def test_object_ids_that_do_not_ascend_in_a_sorted_index_are_refused(tmp_path):
    """One id of level 1's ``object_ids`` changed (7 -> 71) in an index that says
    ``object_ids_sorted``: it read as object 71 with object 7's geometry. Without the
    flag, unsorted ids are ids a writer may write, read as they are."""
    path = copy_store("v09/edge-cases/schema_demo2.zarrvectors", tmp_path)
    arr = zarr.open_array(path / "1/object_index/object_ids", mode="r+")
    ids = arr[:]
    np.testing.assert_array_equal(ids, np.arange(10))
    ids[7] = 71
    arr[:] = ids
    with pytest.raises(ZVFormatError, match="object_ids_sorted") as info:
        nzv.open_store(path).object_ids(1)
    assert "level 1, array object_index/object_ids" in str(info.value)
    doc = path / "1/object_index/zarr.json"
    meta = json.loads(doc.read_text())
    del meta["attributes"]["object_ids_sorted"]
    doc.write_text(json.dumps(meta))
    np.testing.assert_array_equal(nzv.open_store(path).object_ids(1), ids)


# -- what the fuzz campaign of issue 39 found (seed 29) ----------------------------------------
def test_a_zeroed_v07_group_table_is_reported(tmp_path):
    path = copy_store("v07/polylines.zarrvectors", tmp_path)
    f = path / "0/groups/data/c/0"
    f.write_bytes(bytes(len(f.read_bytes())))
    with pytest.warns(ZVChunkWarning, match="group 0 lists object 0 3 times"):
        groups = nzv.open_store(path).groups(0)
    assert groups[0].tolist() == [0, 0, 0]  # read as stored, and reported


def test_a_v07_group_attribute_without_its_shape_is_shaped_by_the_group_count(tmp_path):
    path = copy_store("v07/points.zarrvectors", tmp_path)
    clean = nzv.open_store(path).group_attributes(0)["code"]
    doc_path = path / "0/group_attributes/code/zarr.json"
    doc = json.loads(doc_path.read_text())
    doc["attributes"]["shape"] = None
    doc_path.write_text(json.dumps(doc))
    with pytest.warns(ZVChunkWarning, match=r"records no shape.*read as \[4, 2\]"):
        got = nzv.open_store(path).group_attributes(0)["code"]
    np.testing.assert_array_equal(got, clean)


def test_a_v07_object_attribute_without_its_dtype_is_left_out(tmp_path):
    path = copy_store("v07/graph.zarrvectors", tmp_path)
    doc_path = path / "0/object_attributes/n_nodes/zarr.json"
    doc = json.loads(doc_path.read_text())
    doc["attributes"] = None
    doc_path.write_text(json.dumps(doc))
    with pytest.warns(
        nzv.ZVAttributeWarning, match="'n_nodes' left out: its zarr.json records no dtype"
    ):
        attrs = nzv.open_store(path).object_attributes(0)
    assert "n_nodes" not in attrs


def test_a_coarse_v07_chunk_swapped_with_its_neighbour_is_reported(tmp_path):
    path = copy_store("v07/skeleton.zarrvectors", tmp_path)
    a, b = path / "1/vertices/0.1.1/c/0", path / "1/vertices/1.2.1/c/0"
    first, second = a.read_bytes(), b.read_bytes()
    a.write_bytes(second)
    b.write_bytes(first)
    geom, caught = read_quietly(path, level=1)
    assert any("lie far outside the chunk" in m for m in caught), caught


@pytest.mark.parametrize(
    "rel",
    [
        "v09/edge-cases/sparse_ids.zarrvectors",
        "v09/edge-cases/explicit_demo.zarrvectors",
        "v07/skeleton.zarrvectors",
    ],
)
def test_a_groups_folder_without_its_document_is_reported(tmp_path, rel):
    """Fuzz seed 31, cases 224, 520, 613 (0.9) and seed 41, case 1719 (0.7):
    ``0/groups/zarr.json`` deleted read as a store without groups, silently."""
    path = copy_store(rel, tmp_path)
    assert nzv.open_store(path).groups()  # the clean store has groups
    (path / "0" / "groups" / "zarr.json").unlink()
    with pytest.warns(ZVChunkWarning, match=r"groups left out: .*level 0, array groups"):
        assert nzv.open_store(path).groups() == {}


def test_a_chunk_shape_too_large_to_place_a_second_chunk_is_refused(tmp_path):
    """Fuzz seed 31, case 1729: a v0.7 root ``chunk_shape`` of 1e308 put every chunk but the
    first at an infinite box: whole reads kept every vertex, box reads only the first
    chunk's, with nothing said."""
    path = copy_store("v07/skeleton.zarrvectors", tmp_path)
    doc = json.loads((path / "zarr.json").read_text())
    doc["attributes"]["zarr_vectors"]["chunk_shape"] = [1e308] * 3
    (path / "zarr.json").write_text(json.dumps(doc))
    with pytest.raises(ZVFormatError, match="too large to address a second chunk"):
        nzv.open_store(path).read(0, bbox=([0, 0, 0], [12, 12, 12]))


# -- shared fragments the store does not declare ------------------------------------------------
def _mode0(entries: list[list[tuple[tuple[int, ...], int]]]) -> list[bytes]:
    """Mode-0 manifest blobs of ``[[(chunk, fragment), ...], ...]`` (one list per object)."""
    out = []
    for manifest in entries:
        blob = np.uint32(len(manifest)).tobytes()
        for chunk, frag in manifest:
            blob += np.asarray(chunk, "<i8").tobytes() + b"\0" + np.int64(frag).tobytes()
        out.append(blob)
    return out


def test_two_objects_naming_one_fragment_without_shared_fragments_are_reported(tmp_path):
    """Fuzz seed 37 case 1288: a flipped bit made object 1's manifest name fragment 0 of chunk
    0.0.0 (object 0's) instead of its own fragment 1. A store that does not declare
    ``shared_fragments`` may not share a fragment: the read warns (naming store, level,
    array and chunk) and goes on with the manifests as they are; ``strict`` raises."""
    path = copy_store("v07/graph_interleaved.zarrvectors", tmp_path)
    assert nzv.open_store(path).manifest(0, 1)[0] == ((0, 0, 0), 1)
    arr = zarr.open_array(path / "0/object_index/manifests", mode="r+")
    items = arr[:]
    raw = bytearray(items[1])  # u32 count, then per entry 3 int64 coordinates, mode, frag
    raw[4 + 25 : 4 + 33] = np.int64(0).tobytes()
    items[1] = bytes(raw)
    arr[:] = items
    where = rf"store {path}, level 0, array object_index/manifests, chunk 0.0.0"
    report = rf"objects 0 and 1 both name fragment 0 of chunk 0.0.0.*shared_fragments.*{where}"
    with pytest.warns(ZVChunkWarning, match=report):  # the whole level's object ids
        ids = nzv.open_store(path).read(0).vertex_object_ids
    assert ids.tolist() == [0, 0, -1, -1, 0, 1]  # fragment 1 of chunk 0.0.0 has no owner left
    geom, caught = read_quietly(path, object_ids=[1])
    assert any(re.search(report, m) for m in caught), caught
    assert nzv.open_store(path).manifest(0, 1)[0] == ((0, 0, 0), 0)  # read as it is
    with pytest.raises(ZVFormatError, match=report):
        nzv.open_store(path).read(0, strict=True)


def test_a_mesh_shares_only_a_chunk_it_keeps_in_one_fragment():
    """zarr-vectors 0.7 meshes and every Draco mesh keep one fragment per chunk (fragment 0),
    which every object in it names; a chunk holding other fragments too is not shared."""
    from napari_zarr_vectors.format.layout.base import ObjectTable
    from napari_zarr_vectors.format.objects import decode_object_index

    whole = [[((0, 0, 0), 0), ((1, 0, 0), 0)], [((0, 0, 0), 0), ((1, 0, 0), 1)]]
    where = {"store": "s", "level": 0}
    table = ObjectTable(np.array([0, 1]), _mode0(whole))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ZVChunkWarning)
        index = decode_object_index(table, 3, where, False, "whole-chunk")
    assert index.frags.tolist() == [0, 0, 0, 1]
    with pytest.warns(ZVChunkWarning, match="both name fragment 0 of chunk 0.0.0"):
        decode_object_index(table, 3, where, False, "none")
    damaged = [[((0, 0, 0), 0), ((1, 0, 0), 1)], [((0, 0, 0), 0), ((1, 0, 0), 1)]]
    table = ObjectTable(np.array([0, 1]), _mode0(damaged))
    with pytest.warns(ZVChunkWarning, match=r"both name fragment 1 of chunk 1\.0\.0 \(1 fragment "):
        decode_object_index(table, 3, where, False, "whole-chunk")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ZVChunkWarning)
        decode_object_index(table, 3, where, False, "any")  # declared
        # a fragment named twice by one object is not two objects sharing it
        once = ObjectTable(np.array([7]), _mode0([[((0, 0, 0), 2), ((0, 0, 0), 2)]]))
        decode_object_index(once, 3, where, False, "none")


@pytest.mark.parametrize(
    "rel",
    sorted(
        str(p.relative_to(DATA))
        for p in DATA.rglob("*.zarrvectors")
        if not any(q.suffix == ".zarrvectors" for q in p.parents)
        and p.name != "required_unknown.zarrvectors"
    ),
)
def test_no_fixture_shares_a_fragment_it_does_not_declare(rel):
    """Every fixture's object index at every level decodes without a report, ``strict``:
    coarse levels declare ``shared_fragments``; 0.7 and Draco meshes share their chunks'
    one fragment; ``explicit_demo`` (zarr-vectors' low-level building calls, range and
    explicit manifest blocks) shares fragments 0 and 2 of chunk 0.0.0 undeclared."""
    store = nzv.open_store(DATA / rel)
    for level in range(len(store.levels)):
        store.object_index(level, strict=True)
