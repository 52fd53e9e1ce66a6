"""World placement (``Store.placement``): the root ``crs`` of zarr-vectors-tools' TRK ingest,
plain affines and ``coordinate_offset`` (FORMAT-NEXT §7, §9.5)."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

import napari_zarr_vectors as nzv
from data_paths import data_root
from napari_zarr_vectors.format.validate import Source
from napari_zarr_vectors.format.world import trackvis_to_rasmm

NEXT_DIR = data_root() / "next"


def _truth(name: str) -> dict:
    return json.loads((NEXT_DIR / "expected" / f"{name}.json").read_text(encoding="utf-8"))


def _world_by_object(store: nzv.Store, level: int = 0) -> dict[int, np.ndarray]:
    g = store.read(level)
    return {
        int(oid): store.placement.apply(g.positions[g.paths[i]])
        for i, oid in enumerate(g.path_object_ids.tolist())
    }


def test_trk_voxmm_store_lands_in_ras_like_the_registered_one():
    crs, ras = (nzv.open_store(NEXT_DIR / f"{n}.zarrvectors") for n in ("trk_crs", "trk_rasmm"))
    truth = _truth("trk_crs")
    np.testing.assert_allclose(crs.world_affine, truth["trackvis_voxmm_to_rasmm_nibabel"])
    assert crs.placement.source == "trackvis_header" and crs.placement.space == "RASmm"
    assert ras.placement.is_identity and ras.placement.source == "baked"
    a, b = _world_by_object(crs), _world_by_object(ras)
    assert sorted(a) == sorted(b) == list(range(40))
    for oid, streamline in truth["levels"]["0"]["streamlines"].items():
        np.testing.assert_allclose(a[int(oid)], streamline["rasmm_nibabel"], atol=1e-3)
        np.testing.assert_allclose(b[int(oid)], streamline["rasmm_nibabel"], atol=1e-3)
        # the crs affine as stored is not the placement (off by tens of mm here)
        assert np.abs(a[int(oid)] - np.asarray(streamline["crs_affine_applied"])).max() > 5


@pytest.mark.parametrize("order", ["LSA", "RAS", "LPS", "ASR", "PIR"])
@pytest.mark.parametrize("sizes", [(1.0, 1.0, 1.0), (2.0, 1.5, 2.5)])
def test_trackvis_affine_matches_nibabel(order, sizes):
    nib = pytest.importorskip("nibabel")
    from nibabel.orientations import axcodes2ornt, inv_ornt_aff, ornt_transform
    from nibabel.streamlines.trk import get_affine_trackvis_to_rasmm

    dims = np.array([30, 24, 20])
    # a vox_to_ras whose axes follow `order`, scaled by the voxel sizes, shifted
    ornt = ornt_transform(axcodes2ornt("RAS"), axcodes2ornt(order))
    vox_to_ras = np.linalg.inv(inv_ornt_aff(ornt, dims)) @ np.diag([*sizes, 1.0])
    vox_to_ras[:3, 3] += [10.0, -20.0, 30.0]
    header = {
        nib.streamlines.Field.VOXEL_TO_RASMM: vox_to_ras,
        nib.streamlines.Field.VOXEL_SIZES: np.array(sizes),
        nib.streamlines.Field.DIMENSIONS: dims,
        nib.streamlines.Field.VOXEL_ORDER: b"LSA",
    }
    ours = trackvis_to_rasmm(
        {
            "vox_to_ras": vox_to_ras.ravel().tolist(),
            "voxel_size": list(sizes),
            "dimensions": dims.tolist(),
            "voxel_order": "LSA",
        },
        Source("s", "headers/trk/zarr.json"),
    )
    np.testing.assert_allclose(ours, get_affine_trackvis_to_rasmm(header), atol=1e-5)


def _copy(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.zarrvectors"
    shutil.copytree(NEXT_DIR / f"{name}.zarrvectors", path)
    return path


def _edit_root(path: Path, edit) -> None:
    doc = json.loads((path / "zarr.json").read_text())
    edit(doc["attributes"]["zarr_vectors"])
    (path / "zarr.json").write_text(json.dumps(doc))


def test_voxmm_without_header_applies_the_stored_affine_with_a_warning(tmp_path):
    path = _copy(tmp_path, "trk_crs")
    shutil.rmtree(path / "headers")
    store = nzv.open_store(path)
    with pytest.warns(UserWarning, match="no headers/trk"):
        placement = store.placement
    assert not placement.exact and placement.space is None
    truth = _truth("trk_crs")["levels"]["0"]["streamlines"]
    got = _world_by_object(store)
    np.testing.assert_allclose(got[0], truth["0"]["crs_affine_applied"], atol=1e-3)


def test_plain_affine_opaque_crs_and_coordinate_offset(tmp_path):
    path = _copy(tmp_path, "trk_rasmm")
    matrix = np.array([[0, 2, 0, 5], [1, 0, 0, -3], [0, 0, -1, 7], [0, 0, 0, 1]], float)

    def plain(zv):
        zv["crs"] = {"affine": matrix.ravel().tolist()}
        zv["coordinate_offset"] = [100.0, 0.0, -50.0]

    _edit_root(path, plain)
    store = nzv.open_store(path)
    stored = store.read(0).positions[:5].astype(np.float64)
    want = (stored + [100.0, 0.0, -50.0]) @ matrix[:3, :3].T + matrix[:3, 3]
    np.testing.assert_allclose(store.placement.apply(stored), want)
    assert store.placement.source == "crs_affine"

    _edit_root(path, lambda zv: zv.update(crs={"name": "some OME crs"}))
    store = nzv.open_store(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(store.placement.apply(stored), stored + [100.0, 0.0, -50.0])

    _edit_root(path, lambda zv: zv.update(crs={"affine": [1, 0, 0, 1]}))
    with pytest.raises(nzv.ZVFormatError, match=r"crs.affine"):
        _ = nzv.open_store(path).placement


def test_coordinate_offset_in_the_translations_does_not_change_the_bins(tmp_path):
    """The streaming skeleton writer adds coordinate_offset to the multiscales translation
    (FORMAT-NEXT §9.5): the bins still come from the scale."""
    path = _copy(tmp_path, "trk_crs")
    before = [lv.bin_shape.copy() for lv in nzv.open_store(path).levels]
    doc = json.loads((path / "zarr.json").read_text())
    offset = [1000.0, -2000.0, 500.0]
    doc["attributes"]["zarr_vectors"]["coordinate_offset"] = offset
    for ds in doc["attributes"]["multiscales"][0]["datasets"]:
        for t in ds["coordinateTransformations"]:
            if t["type"] == "translation":
                t["translation"] = [a + b for a, b in zip(t["translation"], offset, strict=True)]
    (path / "zarr.json").write_text(json.dumps(doc))
    store = nzv.open_store(path)
    for lv, bins in zip(store.levels, before, strict=True):
        np.testing.assert_array_equal(lv.bin_shape, bins)
    # the offset is applied before the TrackVis transform
    np.testing.assert_allclose(
        store.placement.apply(np.zeros((1, 3))),
        nzv.open_store(NEXT_DIR / "trk_crs.zarrvectors").placement.apply([offset]),
    )
