"""Layouts after zarr-vectors 0.9.2 (FORMAT-NEXT.md), against the ground truth of
the fixture tree's ``next/`` (a copy of ``shared/fixtures/next``;
the stores come from ``tests/data/next.tar.gz``)."""

from __future__ import annotations

import json
from functools import cache

import numpy as np
import pytest

import napari_zarr_vectors as nzv
from data_paths import data_root

NEXT_DIR = data_root() / "next"


@cache
def expected(name: str) -> dict:
    """Parsed ``next/expected/<name>.json`` (cached; read-only)."""
    return json.loads((NEXT_DIR / "expected" / f"{name}.json").read_text(encoding="utf-8"))


def _open(name: str) -> nzv.Store:
    return nzv.open_store(NEXT_DIR / f"{name}.zarrvectors")


def _f32(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float64).astype(np.float32)


# -- required_capabilities (FORMAT-NEXT §5) ------------------------------------------------
def test_required_unknown_capability_is_refused_naming_it():
    truth = expected("required_unknown")["expected_behaviour"]
    assert truth["refuse"]
    with pytest.raises(nzv.UnsupportedCapabilityError) as info:
        _open("required_unknown")
    assert truth["unknown_capability"] in str(info.value)
    assert "required_unknown.zarrvectors" in str(info.value)
    assert info.value.capabilities == (truth["unknown_capability"],)
    # an UnsupportedVersionError: the napari loader treats it as fatal for the store
    assert isinstance(info.value, nzv.UnsupportedVersionError)


def test_implemented_capability_opens():
    store = _open("streamlines_additive")
    assert store.root.required_capabilities == ("additive_levels",)


def _keys(keys) -> set[tuple[int, ...]]:
    return {tuple(int(v) for v in k.split(".")) for k in keys}


def _rows(a: np.ndarray) -> set[tuple]:
    return {tuple(r) for r in np.asarray(a).tolist()}


# -- dense object index (FORMAT-NEXT §4) ------------------------------------------------------
@pytest.mark.parametrize("level", [0, 1, 2])
def test_dense_object_index_reads_like_its_vlen_twin(level):
    store, twin = (
        _open("streamlines_dense"),
        nzv.open_store(NEXT_DIR / "twins/streamlines_vlen.zarrvectors"),
    )
    lv = expected("streamlines_dense")["levels"][str(level)]
    np.testing.assert_array_equal(store.object_ids(level), lv["object_index"]["object_ids"])
    for oid, obj in lv["objects_via_manifests"].items():
        want = [(tuple(int(v) for v in c.split(".")), f) for c, f in obj["manifest"]]
        assert store.manifest(level, int(oid)) == want
    got, ref = store.read(level), twin.read(level)
    lib = lv["library_read_of_vlen_twin"]
    lib_pos = _f32(lib["positions"])
    assert got.path_object_ids.tolist() == lib["part_objects"]
    for path, (a, b) in zip(got.paths, lib["parts"], strict=True):
        np.testing.assert_array_equal(got.positions[path], lib_pos[a:b])
    np.testing.assert_array_equal(got.path_object_ids, ref.path_object_ids)
    for a, b in zip(got.paths, ref.paths, strict=True):
        np.testing.assert_array_equal(got.positions[a], ref.positions[b])
    for oid, obj in lv["objects_via_manifests"].items():
        if obj["manifest"]:
            (i,) = np.flatnonzero(got.path_object_ids == int(oid))
            np.testing.assert_array_equal(got.positions[got.paths[i]], _f32(obj["vertices"]))
    # a selection by object id goes through the same manifests
    some = store.read(level, object_ids=[int(k) for k in list(lv["objects_via_manifests"])[:3]])
    assert set(some.path_object_ids.tolist()) <= {0, 1, 2}
    assert store.object_presence(level).sum() == sum(
        1 for o in lv["objects_via_manifests"].values() if o["manifest"]
    )


def test_dense_object_index_rejects_a_span_past_the_blocks(tmp_path):
    import shutil

    import zarr

    path = tmp_path / "dense.zarrvectors"
    shutil.copytree(NEXT_DIR / "streamlines_dense.zarrvectors", path)
    spans = zarr.open_array(str(path / "0/object_index/manifest_spans"), mode="r+")
    bad = spans[:]
    bad[3] = [70, 50]  # 77 blocks
    spans[:] = bad
    with pytest.raises(nzv.ZVFormatError, match=r"span 3 .*level 0"):
        nzv.open_store(path).read(0, strict=True)


# -- additive levels (FORMAT-NEXT §6) ---------------------------------------------------------
@pytest.mark.parametrize("level", [0, 1, 2])
def test_additive_level_reads_its_complete_content(level):
    store = _open("streamlines_additive")
    lv = expected("streamlines_additive")["levels"][str(level)]
    assert list(store.refinement_chain(level)) == lv["chain"]
    complete = lv["complete"]["by_object"]
    for geometry in (store.read(level), store.read(level, chunks=store.chunks(level))):
        assert sorted(geometry.path_object_ids.tolist()) == sorted(map(int, complete))
        for i, oid in enumerate(geometry.path_object_ids.tolist()):
            rows = geometry.paths[i]
            np.testing.assert_array_equal(
                geometry.positions[rows], _f32(complete[str(oid)]["vertices"])
            )
            np.testing.assert_array_equal(
                geometry.vertex_attributes["fa"][rows], _f32(complete[str(oid)]["fa"])
            )
    own = store.read(level, own_level_only=True)
    assert own.vertex_count == lv["vertex_count"]
    assert sorted(own.path_object_ids.tolist()) == sorted(lv["own"]["object_ids_stored"])
    assert np.flatnonzero(store.object_presence(level)).tolist() == sorted(map(int, complete))


def test_additive_level_chunks_and_pieces_cover_the_chain():
    store = _open("streamlines_additive")
    coarse = {tuple(c) for c in store.chunks(2).tolist()}
    fine = store.chunks(0)
    # every level-0 chunk inside a non-empty level-2 chunk (40 = 2 x 20) is listed
    assert {tuple(c) for c in (fine // 2).tolist()} >= coarse
    own = _keys(expected("streamlines_additive")["levels"]["0"]["vertices_nonempty_chunks"])
    assert _rows(fine) > own
    cache = nzv.ChunkCache()
    assert store.prefetch(0, fine, cache) > 0
    pieces = store.read_pieces(0, fine, cache=cache)
    assert pieces.vertex_count == store.read(0).vertex_count == 507


def test_additive_level_that_adds_to_nothing_is_refused(tmp_path):
    import shutil

    path = tmp_path / "add.zarrvectors"
    shutil.copytree(NEXT_DIR / "streamlines_additive.zarrvectors", path)
    doc = json.loads((path / "2/zarr.json").read_text())
    doc["attributes"]["zarr_vectors_level"]["refinement"] = "add"
    (path / "2/zarr.json").write_text(json.dumps(doc))
    with pytest.raises(nzv.ZVFormatError, match="level 2 adds to level 3"):
        nzv.open_store(path)
    doc["attributes"]["zarr_vectors_level"]["refinement"] = "merge"
    (path / "2/zarr.json").write_text(json.dumps(doc))
    with pytest.raises(nzv.ZVFormatError, match="'refinement' is 'merge'"):
        nzv.open_store(path)


# -- object_ids whatever the index label (FORMAT-NEXT §9.4) -----------------------------------
def test_object_ids_are_used_whatever_the_layout_label(tmp_path):
    import shutil

    path = tmp_path / "label.zarrvectors"
    shutil.copytree(NEXT_DIR / "streamlines_additive.zarrvectors", path)
    node = path / "1/object_index/zarr.json"
    doc = json.loads(node.read_text())
    doc["attributes"]["layout"] = "vlen_manifests_v1"
    node.write_text(json.dumps(doc))
    store = nzv.open_store(path)
    own = expected("streamlines_additive")["levels"]["1"]["own"]["object_ids_stored"]
    assert sorted(store.read(1, own_level_only=True).path_object_ids.tolist()) == sorted(own)


# -- deferred presence (FORMAT-NEXT §3) -------------------------------------------------------
@pytest.mark.parametrize("name", ["points_deferred", "graph_deferred_sharded"])
def test_deferred_presence_is_inferred_from_the_store(name):
    store = _open(name)
    truth = expected(name)
    for level, lv in truth["levels"].items():
        level = int(level)
        for array, cells in lv["present_cells"].items():
            lvl, rel = array.split("/", 1)
            if int(lvl) != level:
                continue
            assert _rows(store.layout.list_chunks(level, rel)) == _keys(cells), array
        ref = lv["library_read_before_deferral"]
        got = store.read(level)
        assert got.vertex_count == len(ref["positions"]) > 0
        assert _rows(got.positions) == _rows(_f32(ref["positions"]))
    if name == "graph_deferred_sharded":
        got = store.read(0)
        assert len(got.edges) == len(truth["input"]["edges"]) == 135
        by_pos = {tuple(p): i for i, p in enumerate(_f32(truth["input"]["positions"]).tolist())}
        mapped = np.array([by_pos[tuple(p)] for p in got.positions.tolist()])
        assert {tuple(sorted(e)) for e in mapped[got.edges].tolist()} == {
            tuple(sorted(e)) for e in truth["input"]["edges"]
        }
        np.testing.assert_array_equal(
            np.sort(got.edge_attributes["weight"]),
            np.sort(_f32(truth["input"]["link_attributes"]["weight"])),
        )


# -- fragment link groups (FORMAT-NEXT §8) ----------------------------------------------------
def test_fragment_link_groups_read_every_face():
    store = _open("mesh_flg")
    truth = expected("mesh_flg")
    got = store.read(0)
    ref = truth["levels"]["0"]["library_read"]
    assert len(got.faces) == len(ref["faces"]) == 960
    faces = {
        tuple(f) for f in _f32(ref["positions"])[np.asarray(ref["faces"])].reshape(-1, 9).tolist()
    }
    assert {tuple(f) for f in got.positions[got.faces].reshape(-1, 9).tolist()} == faces


# -- dictionary-encoded categoricals (FORMAT-NEXT §9.3) ---------------------------------------
def test_dictionary_encoded_attribute_decodes_to_its_categories():
    store = _open("points_categorical")
    truth = expected("points_categorical")
    got = store.read(0)
    by_pos = {
        tuple(p): v
        for p, v in zip(
            _f32(truth["input"]["positions"]).tolist(),
            truth["input"]["vertex_attributes"]["cell_type"],
            strict=True,
        )
    }
    assert [by_pos[tuple(p)] for p in got.positions.tolist()] == got.vertex_attributes[
        "cell_type"
    ].tolist()
    assert got.vertex_count == 120


# -- parametric objects in the 0.9 layout (FORMAT-NEXT §9.2) ----------------------------------
def test_parametric_objects_and_groups_of_a_09_store():
    truth = expected("parametric")
    got = _open("parametric").parametric
    lib = truth["parametric"]["library_read"]
    assert [o.name for o in got.objects] == [o["name"] for o in lib]
    assert [o.type for o in got.objects] == [o["type"] for o in lib]
    for obj, ref in zip(got.objects, lib, strict=True):
        assert obj.type_id == ref["type_id"]
        assert obj.coefficients == dict(
            zip(ref["coefficient_names"], ref["coefficients"], strict=True)
        )
    assert [float(o.attributes["weight"]) for o in got.objects] == truth["input"][
        "object_attributes"
    ]["weight"]
    assert {g: m.tolist() for g, m in got.groups.items()} == {
        int(g): m for g, m in truth["input"]["groups"].items()
    }
