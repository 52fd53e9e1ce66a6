"""Spec forms no fixture writer produces (flat / offset object index), parametric objects,
and the Draco dependency message."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import zarr

import napari_zarr_vectors as nzv
from data_paths import data_root

DATA = data_root()
V07 = DATA / "v07"


def _write_blob(path: Path, payload: bytes) -> None:
    path.mkdir(parents=True)
    meta = {
        "shape": [len(payload)],
        "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [max(len(payload), 1)]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes"}],
        "attributes": {},
        "zarr_format": 3,
        "node_type": "array",
    }
    (path / "zarr.json").write_text(json.dumps(meta))
    (path / "c").mkdir()
    (path / "c" / "0").write_bytes(payload)


def _to_legacy(tmp_path: Path, with_offsets: bool) -> Path:
    """A copy of the polylines store whose level-0 object index uses the spec's blob form."""
    dst = tmp_path / "polylines.zarrvectors"
    shutil.copytree(V07 / "polylines.zarrvectors", dst)
    oi = dst / "0" / "object_index"
    manifests = [bytes(m) for m in zarr.open_array(store=str(oi / "manifests"), mode="r")[:]]
    shutil.rmtree(oi / "manifests")
    meta = json.loads((oi / "zarr.json").read_text())
    del meta["attributes"]["layout"]
    (oi / "zarr.json").write_text(json.dumps(meta))
    _write_blob(oi / "data", b"".join(manifests))
    if with_offsets:
        offsets = np.cumsum([0] + [len(m) for m in manifests[:-1]]).astype("<i8")
        _write_blob(oi / "offsets", offsets.tobytes())
    return dst


@pytest.mark.parametrize("with_offsets", [False, True], ids=["flat-data", "data+offsets"])
def test_legacy_object_index_forms_give_the_same_paths(tmp_path: Path, with_offsets: bool) -> None:
    reference = nzv.open_store(V07 / "polylines.zarrvectors").read(0)
    legacy = nzv.open_store(_to_legacy(tmp_path, with_offsets)).read(0)
    assert len(legacy.paths) == len(reference.paths) == 12
    for a, b in zip(legacy.paths, reference.paths, strict=True):
        np.testing.assert_array_equal(legacy.positions[a], reference.positions[b])
    np.testing.assert_array_equal(legacy.path_object_ids, reference.path_object_ids)


def test_truncated_flat_object_index_is_a_format_error(tmp_path: Path) -> None:
    store = _to_legacy(tmp_path, with_offsets=False)
    blob = store / "0" / "object_index" / "data" / "c" / "0"
    data = blob.read_bytes()[:-5]
    blob.write_bytes(data)
    meta_path = blob.parent.parent / "zarr.json"
    meta = json.loads(meta_path.read_text())
    meta["shape"] = [len(data)]
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(nzv.ZVFormatError, match="object_index"):
        nzv.open_store(store).read(0)


def test_parametric_objects_match_what_the_writer_got() -> None:
    truth = json.loads((V07 / "expected" / "lines.json").read_text())
    par = nzv.open_store(V07 / "lines.zarrvectors").parametric
    ref = truth["reference_read_parametric"]
    assert [o.type for o in par.objects] == [r["type"] for r in ref]
    assert [o.name for o in par.objects] == [r["name"] for r in ref]
    for obj, r in zip(par.objects, ref, strict=True):
        assert list(obj.coefficients) == r["coefficient_names"]
        assert list(obj.coefficients.values()) == r["coefficients"]
    weights = truth["parametric_object_attributes"]["p_weight"]
    assert [float(o.attributes["p_weight"]) for o in par.objects] == weights
    assert {str(g): v.tolist() for g, v in par.groups.items()} == truth["parametric_groups"]
    assert par.group_attributes["pg"].tolist() == truth["parametric_group_attributes"]["pg"]


def test_store_without_parametric_group_has_none() -> None:
    par = nzv.open_store(V07 / "points.zarrvectors").parametric
    assert par.objects == [] and par.groups == {}


def test_draco_store_without_dracopy_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "DracoPy", None)  # import DracoPy -> ImportError
    store = nzv.open_store(V07 / "mesh_draco.zarrvectors")
    with pytest.raises(nzv.MissingDependencyError, match=r"napari-zarr-vectors\[draco\]"):
        store.read(0)


@pytest.mark.parametrize(
    "version, name", [("v07", "points"), ("v07", "streamlines"), ("v09", "points")]
)
def test_cross_level_links_without_chunks_are_all_records(version: str, name: str) -> None:
    store = nzv.open_store(DATA / version / f"{name}.zarrvectors")
    for level in (0, 1):
        every = store.links(level, +1)
        by_chunks = store.links(level, +1, store.chunks(level))
        assert len(every) == len(by_chunks) > 0
        assert _records(every) == _records(by_chunks)


def _records(links) -> list[tuple[int, ...]]:
    """Link records as sorted ``(chunk..., row...)`` tuples."""
    flat = np.concatenate([links.chunks.reshape(len(links), -1), links.rows], axis=1)
    return sorted(map(tuple, flat.tolist()))
