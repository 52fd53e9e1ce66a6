"""Every value read from metadata is validated.

A corrupted ``zarr.json`` value raises :class:`ZVFormatError` naming the file and the field;
hostile sizes are refused before anything is allocated; corruption inside a chunk leaves a
gap with a :class:`ZVChunkWarning`.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

import napari_zarr_vectors as nzv
from data_paths import data_root
from napari_zarr_vectors.format import ZVChunkWarning, ZVFormatError
from napari_zarr_vectors.format.validate import Source, float_list, int_field, int_list

DATA = data_root()


def copy(tmp_path: Path, rel: str) -> Path:
    dst = tmp_path / Path(rel).name
    shutil.copytree(DATA / rel, dst)
    return dst


def edit(path: Path, fn) -> None:
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(json.dumps(doc))


def read_all(store: Path) -> None:
    s = nzv.open_store(store)
    for lv in s.levels:
        s.read(lv.index)
        s.object_ids(lv.index)
        s.object_attributes(lv.index)
    s.groups(0)


# -- the helpers -------------------------------------------------------------------------
SRC = Source("s", "0/zarr.json", 0)


@pytest.mark.parametrize(
    "value, message",
    [
        ("7", "expected an integer"),
        (None, "is null"),
        (-1, r"expected an integer in \[0,"),
        (2**62, r"expected an integer in \[0,"),
        (1.5, "expected an integer"),
        (True, "expected an integer"),
        ([3], "expected an integer"),
        (float("nan"), "expected an integer"),
    ],
)
def test_int_field_rejects(value, message) -> None:
    with pytest.raises(ZVFormatError, match=message) as info:
        int_field({"num_objects": value}, "num_objects", SRC)
    assert "0/zarr.json" in str(info.value) and "'num_objects'" in str(info.value)


def test_int_field_accepts_and_defaults() -> None:
    assert int_field({"n": 3}, "n", SRC) == 3
    assert int_field({"n": 3.0}, "n", SRC) == 3
    assert int_field({}, "n", SRC, 5) == 5
    assert int_field({"n": None}, "n", SRC, None) is None
    with pytest.raises(ZVFormatError, match="is null"):
        int_field({"n": None}, "n", SRC, 5)
    with pytest.raises(ZVFormatError, match="is missing"):
        int_field({}, "n", SRC)


def test_list_helpers() -> None:
    assert int_list([1, 2], "shape", SRC, 2) == [1, 2]
    np.testing.assert_array_equal(float_list([1, 2.5], "b", SRC, 2), [1.0, 2.5])
    for bad in ("x", [1, "2"], [1, None], [float("inf"), 1]):
        with pytest.raises(ZVFormatError, match="'b'"):
            float_list(bad, "b", SRC, 2)
    with pytest.raises(ZVFormatError, match="has 1 values, expected 2"):
        int_list([1], "shape", SRC, 2)


# -- root and level documents -------------------------------------------------------------
ROOT_CORRUPTIONS = [
    ("chunk_shape", ["a", "b", "c"], "chunk_shape"),
    ("chunk_shape", 7, "chunk_shape"),
    ("bounds", [[0, 0, 0], [1, "x", 1]], "bounds[1]"),
    ("bounds", [[0, 0, None], [1, 1, 1]], "bounds[0]"),
    ("base_bin_shape", [1, -2, 1], "base_bin_shape"),
    ("zv_version", 7, "zv_version"),
]


@pytest.mark.parametrize("layout", ["v07", "v09"])
@pytest.mark.parametrize("key, value, field", ROOT_CORRUPTIONS)
def test_root_corruption_names_the_field(tmp_path: Path, layout, key, value, field) -> None:
    store = copy(tmp_path, f"{layout}/points.zarrvectors")
    edit(store / "zarr.json", lambda d: d["attributes"]["zarr_vectors"].__setitem__(key, value))
    with pytest.raises(ZVFormatError, match=field.replace("[", r"\[")) as info:
        nzv.open_store(store)
    assert "zarr.json" in str(info.value)


LEVEL_CORRUPTIONS = [
    ("vertex_count", "many"),
    ("vertex_count", -5),
    ("object_sparsity", "x"),
    ("parent_level", "0"),
    ("chunk_shape", [1, None, 1]),
    ("coarsening_method", 3),
    ("chunk_dims", 4),
]


@pytest.mark.parametrize("layout", ["v07", "v09"])
@pytest.mark.parametrize("key, value", LEVEL_CORRUPTIONS)
def test_level_corruption_names_file_and_field(tmp_path: Path, layout, key, value) -> None:
    store = copy(tmp_path, f"{layout}/points.zarrvectors")

    def corrupt(doc: dict) -> None:
        doc.setdefault("attributes", {}).setdefault("zarr_vectors_level", {})[key] = value

    edit(store / "1" / "zarr.json", corrupt)
    with pytest.raises(ZVFormatError) as info:
        nzv.open_store(store)
    assert "1/zarr.json" in str(info.value) and repr(key) in str(info.value)


# -- arrays and groups ------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["12", None, -3, 2**62, [1]])
def test_v07_num_objects(tmp_path: Path, value) -> None:
    store = copy(tmp_path, "v07/points.zarrvectors")
    edit(
        store / "0" / "object_index" / "zarr.json",
        lambda d: d["attributes"].__setitem__("num_objects", value),
    )
    s = nzv.open_store(store)
    with pytest.raises(ZVFormatError, match="object_index") as info:
        s.read(0)
    assert "object_index" in str(info.value)


def test_v09_num_objects_huge_is_refused(tmp_path: Path) -> None:
    store = copy(tmp_path, "v09/points.zarrvectors")
    edit(
        store / "0" / "object_index" / "zarr.json",
        lambda d: d["attributes"].__setitem__("num_objects", 2**62),
    )
    with pytest.raises(ZVFormatError, match="num_objects"):
        nzv.open_store(store).object_ids(0)


def test_v09_nonempty_chunks_of_numbers(tmp_path: Path) -> None:
    store = copy(tmp_path, "v09/points.zarrvectors")
    edit(
        store / "0" / "vertices" / "zarr.json",
        lambda d: d["attributes"].__setitem__("nonempty_chunks", [1, 2]),
    )
    with pytest.raises(ZVFormatError, match="nonempty_chunks") as info:
        nzv.open_store(store).read(0)
    assert "0/vertices/zarr.json" in str(info.value)


def test_chunk_attribute_values_of_mixed_types_are_refused(tmp_path: Path) -> None:
    """The values of one chunk attribute are all strings or all numbers: a number among
    strings (the cells of that value read as another attribute value) is refused."""
    store = copy(tmp_path, "v09/edge-cases/cba_demo.zarrvectors")
    info = nzv.open_store(store).levels[0]
    assert info.chunk_attribute_values == ("a", "b", "c")
    doc = store / "0" / "zarr.json"
    edit(
        doc,
        lambda d: d["attributes"]["zarr_vectors_level"]["chunk_attribute_values"].__setitem__(2, 3),
    )
    with pytest.raises(ZVFormatError, match="chunk_attribute_values") as caught:
        nzv.open_store(store).read(0)
    assert "0/zarr.json" in str(caught.value) and "level 0" in str(caught.value)


def test_v09_nonempty_chunks_entry_not_a_key(tmp_path: Path) -> None:
    """One listed cell replaced by a word: the listing no longer names every non-empty cell
    (the link family's cell would silently read as empty), so it is refused."""
    store = copy(tmp_path, "v09/polylines.zarrvectors")
    doc = store / "0" / "links" / "0" / "+1.0.0" / "zarr.json"
    listed = json.loads(doc.read_text())["attributes"]["nonempty_chunks"]
    assert len(listed) > 2
    edit(doc, lambda d: d["attributes"]["nonempty_chunks"].__setitem__(2, "word"))
    s = nzv.open_store(store)
    with pytest.raises(ZVFormatError, match="nonempty_chunks") as info:
        s.links(0, 0)
    assert "0/links/0/+1.0.0/zarr.json" in str(info.value)
    assert len(nzv.open_store(store).read(0).positions) == len(
        nzv.open_store(DATA / "v09/polylines.zarrvectors").read(0).positions
    )


def test_v09_group_name_that_is_a_number(tmp_path: Path) -> None:
    """A group name that is a number is refused, not read as the name "2147483648"."""
    store = copy(tmp_path, "v09/polylines.zarrvectors")
    assert nzv.open_store(store).group_names(0) == {0: "bundle_a", 1: "bundle_b", 2: "hand_made"}
    edit(
        store / "0" / "groups" / "zarr.json",
        lambda d: d["attributes"]["group_names"].__setitem__(1, 2**31),
    )
    with pytest.raises(ZVFormatError, match="group_names") as info:
        nzv.open_store(store).group_names(0)
    assert "0/groups/zarr.json" in str(info.value)


def test_v09_grid_origin_null(tmp_path: Path) -> None:
    store = copy(tmp_path, "v09/points.zarrvectors")
    edit(
        store / "0" / "vertices" / "zarr.json",
        lambda d: d["attributes"].__setitem__("chunk_grid_origin", [0, None, 0]),
    )
    with pytest.raises(ZVFormatError, match=r"chunk_grid_origin\[1\]"):
        nzv.open_store(store).read(0)


def test_v09_group_range_too_wide(tmp_path: Path) -> None:
    store = copy(tmp_path, "v09/points.zarrvectors")
    edit(
        store / "0" / "groups" / "zarr.json",
        lambda d: d["attributes"].__setitem__("group_ranges", {"0": [0, 2**40]}),
    )
    with pytest.raises(ZVFormatError, match="group_ranges"):
        nzv.open_store(store).groups(0)


def test_v07_elided_blob_with_hostile_shape(tmp_path: Path) -> None:
    """A blob with no ``c/0`` (zarr's fill elision) declaring 2**40 bytes: not allocated,
    the chunk becomes a gap."""
    store = copy(tmp_path, "v07/points_binned.zarrvectors")
    s0 = nzv.open_store(store)
    full = s0.read(0)
    chunk = ".".join(str(int(c)) for c in s0.chunks(0)[0])
    blob = store / "0" / "vertices" / chunk
    (blob / "c" / "0").unlink()
    edit(blob / "zarr.json", lambda d: d.__setitem__("shape", [2**40]))
    with pytest.warns(ZVChunkWarning, match="shape"):
        g = nzv.open_store(store).read(0)
    lost = np.all(np.floor(full.positions / s0.chunk_shape) == s0.chunks(0)[0], axis=1)
    assert len(g.positions) == len(full.positions) - int(lost.sum()) > 0


def test_corrupt_chunk_is_a_gap_of_exactly_that_chunk(tmp_path: Path) -> None:
    store = copy(tmp_path, "v09/points_binned.zarrvectors")
    s0 = nzv.open_store(store)
    full = s0.read(0)
    cells = sorted((store / "0" / "vertices" / "c").rglob("*"))
    victim = next(p for p in cells if p.is_file())
    victim.write_bytes(b"\x00" * 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = nzv.open_store(store).read(0)
    assert any(issubclass(w.category, ZVChunkWarning) for w in caught)
    assert 0 < len(g.positions) < len(full.positions)
    assert set(map(tuple, g.positions.tolist())) <= set(map(tuple, full.positions.tolist()))


@pytest.mark.parametrize("layout", ["v07", "v09"])
def test_attribute_dtype_of_wrong_type(tmp_path: Path, layout) -> None:
    store = copy(tmp_path, f"{layout}/points.zarrvectors")
    name = sorted(p.name for p in (store / "0" / "vertex_attributes").iterdir() if p.is_dir())[0]
    edit(
        store / "0" / "vertex_attributes" / name / "zarr.json",
        lambda d: d["attributes"].__setitem__("dtype", 5),
    )
    with pytest.raises(ZVFormatError, match="'dtype'") as info:
        nzv.open_store(store).read(0)
    assert f"vertex_attributes/{name}/zarr.json" in str(info.value)
    # without attributes the geometry still reads
    assert len(nzv.open_store(store).read(0, attributes=False).positions) > 0


def test_vlen_chunk_with_a_huge_item_count_is_refused(tmp_path: Path) -> None:
    """A plain 0.9 vlen array chunk whose item count says 2**29: refused before zarr's vlen
    decoder allocates an object array of that many items (4 GB seen in the fuzz campaign)."""
    import numcodecs

    store = copy(tmp_path, "v09/edge-cases/explicit_demo.zarrvectors")
    chunk = store / "0" / "groups" / "c" / "0"
    payload = bytearray(numcodecs.Zstd().decode(chunk.read_bytes()))
    payload[:4] = (2**29 + 3).to_bytes(4, "little")
    chunk.write_bytes(numcodecs.Zstd(level=0).encode(bytes(payload)))
    with pytest.raises(ZVFormatError, match="vlen chunk declares 536870915 items, not 1"):
        nzv.open_store(store).groups(0)


def test_corrupt_blosc_frames_never_reach_c_blosc() -> None:
    """Block offsets and stream sizes are walked before c-blosc (which reads out of bounds
    on them) sees the frame."""
    import numcodecs

    from napari_zarr_vectors.format.codecs import decode_bytes_chunk

    values = np.arange(4000, dtype="<f4")
    frame = bytearray(numcodecs.Blosc(cname="zstd", shuffle=1, blocksize=256).encode(values))
    chain = [{"name": "bytes"}, {"name": "blosc"}]
    assert np.array_equal(np.frombuffer(decode_bytes_chunk(bytes(frame), chain), "<f4"), values)
    bad_offset = bytearray(frame)
    bad_offset[16:20] = (len(frame) + 100).to_bytes(4, "little")
    bad_stream = bytearray(frame)
    start = int.from_bytes(frame[16:20], "little")
    bad_stream[start : start + 4] = (10**6).to_bytes(4, "little")
    for bad in (bad_offset, bad_stream, frame[:-3]):
        with pytest.raises(ZVFormatError, match="blosc"):
            decode_bytes_chunk(bytes(bad), chain)


@pytest.mark.parametrize(
    "rel, array",
    [
        ("dense/points.zarrvectors", "object_index/data"),
        ("v09/points.zarrvectors", "object_index/object_ids"),
    ],
)
def test_whole_read_of_a_huge_declared_shape_is_refused(tmp_path: Path, rel, array) -> None:
    """Tables read whole (object index, groups) whose shape claims 2**40 elements."""
    store = copy(tmp_path, rel)
    edit(store / "0" / array / "zarr.json", lambda d: d.__setitem__("shape", [2**40]))
    with pytest.raises(ZVFormatError, match="'shape'") as info:
        nzv.open_store(store).object_ids(0)
    assert f"0/{array}/zarr.json" in str(info.value)
