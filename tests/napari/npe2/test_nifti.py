"""The NIfTI reader: an image in RAS mm, in the streamlines' axis order (issue 40)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

nib = pytest.importorskip("nibabel")
napari = pytest.importorskip("napari")

from napari_zarr_vectors.napari.npe2.nifti import napari_get_nifti_reader  # noqa: E402

DATA = Path(os.path.dirname(nib.__file__)) / "tests" / "data"


def _image_layer(path: Path):
    reader = napari_get_nifti_reader(str(path))
    assert reader is not None
    ((data, kwargs, kind),) = reader(str(path))
    assert kind == "image"
    return napari.layers.Image(data, **kwargs)


def _on_nonzero(layer, world: np.ndarray) -> float:
    """Share of napari world points that fall on a non-zero voxel of the image layer."""
    index = np.rint(layer.affine.inverse(world)).astype(int)
    data = np.asarray(layer.data)
    ok = np.all((index >= 0) & (index < data.shape), axis=1)
    hit = np.zeros(len(world), bool)
    hit[ok] = data[tuple(index[ok].T)] != 0
    return float(hit.mean())


def test_standard_trk_lands_on_the_image_as_nibabel_maps_it() -> None:
    layer = _image_layer(DATA / "standard.nii.gz")
    ras = np.concatenate(list(nib.streamlines.load(str(DATA / "standard.trk")).streamlines))
    # the plugin shows a streamline store's R, A, S as napari z, y, x -> world (S, A, R)
    share = _on_nonzero(layer, ras[:, ::-1])
    assert share == pytest.approx(0.486, abs=0.001)
    # nibabel mapping the same points into the image gives the same share
    img = nib.load(str(DATA / "standard.nii.gz"))
    vox = np.rint(nib.affines.apply_affine(np.linalg.inv(img.affine), ras)).astype(int)
    data = np.asanyarray(img.dataobj)
    inside = np.all((vox >= 0) & (vox < data.shape), axis=1)
    want = np.zeros(len(ras), bool)
    want[inside] = data[tuple(vox[inside].T)] != 0
    assert share == pytest.approx(want.mean())
    assert tuple(str(u) for u in layer.units) == ("millimeter",) * 3
    assert tuple(layer.axis_labels) == ("z", "y", "x")


def test_an_oblique_free_permuted_affine_stays_diagonal(tmp_path: Path) -> None:
    """A LAS-style affine with swapped axes: the data is transposed, the affine diagonal,
    and every voxel centre lands where nibabel puts it."""
    affine = np.array([[0, 0, -2.0, 90], [1.5, 0, 0, -100], [0, 2.5, 0, -70], [0, 0, 0, 1]])
    vol = np.arange(4 * 5 * 6, dtype=np.int16).reshape(4, 5, 6)
    path = tmp_path / "perm.nii.gz"
    nib.save(nib.Nifti1Image(vol, affine), str(path))
    layer = _image_layer(path)
    linear = layer.affine.affine_matrix[:3, :3]
    assert np.count_nonzero(linear - np.diag(np.diag(linear))) == 0
    ijk = np.array([[0, 0, 0], [3, 4, 5], [1, 2, 3]])
    ras = nib.affines.apply_affine(affine, ijk)
    index = np.rint(layer.affine.inverse(ras[:, ::-1])).astype(int)
    assert np.asarray(layer.data)[tuple(index.T)].tolist() == vol[tuple(ijk.T)].tolist()


def test_other_paths_are_not_read() -> None:
    assert napari_get_nifti_reader("brain.zarrvectors") is None
    assert napari_get_nifti_reader(["a.nii", "b.nii"]) is None
    assert napari_get_nifti_reader("T1.NII.GZ") is not None


def test_a_plain_open_reads_the_image_with_this_plugin(viewer_model, fresh_napari_settings):
    """``viewer.open(image.nii.gz)`` with no plugin named: napari's builtin reader also
    claims ``*.nii.gz`` and cannot read it; once the plugin ran, the preference picks it."""
    from napari_zarr_vectors.napari.npe2.reader import PLUGIN_NAME, on_activate

    on_activate(None)
    assert fresh_napari_settings.plugins.extension2reader["*.nii.gz"] == PLUGIN_NAME
    (layer,) = viewer_model.open(str(DATA / "standard.nii.gz"), plugin=None)
    assert layer.source.reader_plugin == PLUGIN_NAME
    want = _image_layer(DATA / "standard.nii.gz")
    np.testing.assert_array_equal(np.asarray(layer.data), np.asarray(want.data))
    np.testing.assert_allclose(layer.affine.affine_matrix, want.affine.affine_matrix)
