"""Bad input: not-a-store, unsupported versions, corrupt blobs -> the project's own errors."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
import zarr

import napari_zarr_vectors as nzv
from data_paths import data_root
from napari_zarr_vectors.format.errors import ZVChunkWarning

V07_DIR = data_root() / "v07"


@pytest.fixture
def points_copy(tmp_path: Path) -> Path:
    dst = tmp_path / "points.zarrvectors"
    shutil.copytree(V07_DIR / "points.zarrvectors", dst)
    return dst


def test_plain_folder_is_not_a_store(tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("hello")
    with pytest.raises(nzv.NotAZVStoreError, match="not a Zarr Vectors store"):
        nzv.open_store(tmp_path)


def test_missing_path_is_not_a_store(tmp_path: Path) -> None:
    with pytest.raises(nzv.NotAZVStoreError, match="no such directory"):
        nzv.open_store(tmp_path / "nope.zarrvectors")


def test_plain_zarr_group_is_not_a_store(tmp_path: Path) -> None:
    zarr.open_group(tmp_path / "plain.zarr", mode="w", zarr_format=3).attrs["hello"] = 1
    with pytest.raises(nzv.NotAZVStoreError, match="no 'zarr_vectors' attributes"):
        nzv.open_store(tmp_path / "plain.zarr")


def test_zarr_v2_group_is_not_a_store(tmp_path: Path) -> None:
    zarr.open_group(tmp_path / "v2.zarr", mode="w", zarr_format=2)
    with pytest.raises(nzv.NotAZVStoreError):
        nzv.open_store(tmp_path / "v2.zarr")


def _set_version(store: Path, version: str) -> None:
    doc = json.loads((store / "zarr.json").read_text())
    doc["attributes"]["zarr_vectors"]["zv_version"] = version
    (store / "zarr.json").write_text(json.dumps(doc))


@pytest.mark.parametrize("version", ["0.8.1", "1.0.0", "0.6.0"])
def test_unsupported_version_is_named(points_copy: Path, version: str) -> None:
    _set_version(points_copy, version)
    with pytest.raises(nzv.UnsupportedVersionError, match=version.replace(".", r"\.")):
        nzv.open_store(points_copy)


def test_open_reads_metadata_only_and_read_never_writes(points_copy: Path) -> None:
    before = {p: p.stat().st_mtime_ns for p in points_copy.rglob("*")}
    store = nzv.open_store(points_copy)
    store.read(0)
    store.read(1, bbox=([-5, -5, -5], [5, 5, 5]))
    after = {p: p.stat().st_mtime_ns for p in points_copy.rglob("*")}
    assert before == after


def _raw_blob(store: Path, rel: str) -> Path:
    path = store / rel / "c" / "0"
    meta = json.loads((store / rel / "zarr.json").read_text())
    assert meta["codecs"] == [{"name": "bytes"}], "test expects an uncompressed blob"
    return path


def _truncate(path: Path, nbytes: int) -> None:
    data = path.read_bytes()[:nbytes]
    path.write_bytes(data)
    meta_path = path.parent.parent / "zarr.json"
    meta = json.loads(meta_path.read_text())
    meta["shape"] = [len(data)]
    meta["chunk_grid"]["configuration"]["chunk_shape"] = [len(data)]
    meta_path.write_text(json.dumps(meta))


def test_truncated_vertex_blob_warns_names_chunk_and_leaves_a_gap(points_copy: Path) -> None:
    full = nzv.open_store(V07_DIR / "points.zarrvectors").read(0)
    blob = _raw_blob(points_copy, "0/vertices/0.0.0")
    n_rows = len(blob.read_bytes()) // 12
    _truncate(blob, 13)
    store = nzv.open_store(points_copy)
    with pytest.warns(ZVChunkWarning) as record:
        g = store.read(0)
    text = " ".join(str(w.message) for w in record)
    assert "chunk 0.0.0" in text and "level 0" in text and "vertices" in text
    assert str(points_copy) in text
    assert g.positions.shape[0] == full.positions.shape[0] - n_rows
    with pytest.raises(nzv.ZVFormatError, match=r"chunk 0\.0\.0"):
        store.read(0, strict=True)


def test_bad_fragment_magic_is_a_format_error(points_copy: Path) -> None:
    blob = _raw_blob(points_copy, "0/vertex_fragments/0.0.0")
    data = bytearray(blob.read_bytes())
    data[:4] = b"ZVFG"  # the spec's text, not the bytes writers put on disk
    blob.write_bytes(bytes(data))
    store = nzv.open_store(points_copy)
    with pytest.raises(nzv.ZVFormatError, match=r"magic.*vertex_fragments.*chunk 0\.0\.0"):
        store.read(0, strict=True)


def test_absurd_fragment_count_is_a_format_error(points_copy: Path) -> None:
    blob = _raw_blob(points_copy, "0/vertex_fragments/0.0.0")
    data = bytearray(blob.read_bytes())
    data[8:12] = (2**32 - 1).to_bytes(4, "little")
    blob.write_bytes(bytes(data))
    with pytest.raises(nzv.ZVFormatError, match="fragments"):
        nzv.open_store(points_copy).read(0, strict=True)


def test_corrupt_zstd_blob_is_a_format_error(points_copy: Path) -> None:
    blob = points_copy / "1" / "vertices" / "0.0.0" / "c" / "0"
    data = blob.read_bytes()
    blob.write_bytes(data[: len(data) // 2])  # a truncated zstd frame
    with pytest.warns(ZVChunkWarning, match=r"level 1.*chunk 0\.0\.0"):
        g = nzv.open_store(points_copy).read(1)
    assert (
        g.positions.shape[0] < nzv.open_store(V07_DIR / "points.zarrvectors").read(1).vertex_count
    )


def test_zstd_header_claiming_a_huge_payload_is_refused(points_copy: Path) -> None:
    blob = points_copy / "1" / "vertices" / "0.0.0" / "c" / "0"
    meta_path = blob.parent.parent / "zarr.json"
    meta = json.loads(meta_path.read_text())
    meta["shape"] = [2**40]
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(nzv.ZVFormatError, match="declares"):
        nzv.open_store(points_copy).read(1, strict=True)


def test_missing_c0_means_zero_bytes(points_copy: Path) -> None:
    # groups/data of the skeleton fixture has no c/0: it decodes to int64 zeros
    store = nzv.open_store(V07_DIR / "skeleton.zarrvectors")
    assert not (V07_DIR / "skeleton.zarrvectors" / "0" / "groups" / "data" / "c" / "0").exists()
    groups = store.groups(0)
    assert {g: v.tolist() for g, v in groups.items()} == {0: [0]}


def test_warnings_do_not_escape_clean_reads() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = nzv.open_store(V07_DIR / "points.zarrvectors").read(0)
    assert g.vertex_count == 240


def test_unknown_level_is_named() -> None:
    store = nzv.open_store(V07_DIR / "points.zarrvectors")
    with pytest.raises(KeyError, match="levels: \\[0, 1, 2\\]"):
        store.read(7)


@pytest.mark.parametrize("name", ["points", "streamlines"])
@pytest.mark.parametrize(
    "bbox, match",
    [
        (([5, 5, 5], [0, 0, 0]), "exceeds"),
        (([0, 0], [1, 1]), "3 coordinates"),
        (([np.nan, 0, 0], [1, 1, 1]), "holds NaN"),
        (([0, 0, 0], [1, np.nan, 1]), "holds NaN"),
        (([0, 0, 0],), "a pair"),
        ((["a", 0, 0], [1, 1, 1]), "must be numbers"),
    ],
)
@pytest.mark.parametrize("layout", ["v07", "v09"])
def test_bad_bbox_is_a_typed_error_naming_the_store(layout, name, bbox, match) -> None:
    root = V07_DIR if layout == "v07" else V07_DIR.parent / "v09"
    store = nzv.open_store(root / f"{name}.zarrvectors")
    with pytest.raises(nzv.ZVArgumentError, match=match) as caught:
        store.read(0, bbox=bbox)
    assert isinstance(caught.value, ValueError)  # still a ValueError, as it was
    assert f"{name}.zarrvectors" in str(caught.value)


def test_manifest_with_trailing_bytes_is_reported() -> None:
    from napari_zarr_vectors.format.decode.manifests import decode_manifest

    good = (
        np.array([1], "<u4").tobytes()
        + np.array([0, 0, 0], "<i8").tobytes()
        + b"\x00"
        + np.array([2], "<i8").tobytes()
    )
    chunks, frags = decode_manifest(good, 3)
    assert chunks.tolist() == [[0, 0, 0]] and frags.tolist() == [2]
    with pytest.raises(nzv.ZVFormatError, match="trailing"):
        decode_manifest(good + b"\x00", 3)
