"""Density maps: equal to dipy's ``density_map`` of the same streamlines in world placement,
whatever the blocks, and vertex counts equal to a histogram of the positions."""

from __future__ import annotations

import numpy as np
import pytest

import napari_zarr_vectors as nzv
from napari_zarr_vectors.jobs import density_map


def _dipy_density(streamlines, result):
    utils = pytest.importorskip("dipy.tracking.utils")
    return utils.density_map(streamlines, result.affine, result.image.shape)


@pytest.mark.parametrize("voxel", [2.0, 0.7])
def test_tracks300_equals_dipy_in_any_blocks(tracks300_store, voxel):
    from realdata import tracks300_streamlines

    store = nzv.open_store(tracks300_store[0])
    serial = density_map(store, voxel, scheduler="sync", block_chunks=1_000)
    expected = _dipy_density(tracks300_streamlines(), serial)
    assert serial.count == "objects" and serial.outside == 0
    np.testing.assert_array_equal(serial.image, expected)
    for blocks in (1, 3):  # objects crossing blocks: counted once per voxel
        np.testing.assert_array_equal(
            density_map(store, voxel, block_chunks=blocks).image, expected
        )


def test_a_trk_ingest_is_counted_in_ras_mm(data_dir):
    """zarr-vectors-tools' TRK ingest stores TrackVis voxmm: the map is in RAS mm (the
    placement of its header), as dipy counts the streamlines placed there."""
    store = nzv.open_store(data_dir / "next/trk_crs.zarrvectors")
    assert store.placement.space == "RASmm" and not store.placement.is_identity
    result = density_map(store, 2.0, block_chunks=2)
    geometry = store.read(0, attributes=False)
    world = store.placement.apply(geometry.positions)
    streamlines = [world[p] for p in geometry.paths]
    assert len(streamlines) == 40
    np.testing.assert_array_equal(result.image, _dipy_density(streamlines, result))
    assert result.space == "RASmm"
    lo = result.affine[:3, 3]
    assert np.all(lo <= world.min(axis=0) + 1.0)  # voxel 0 centred at the world box's corner


def test_vertices_per_voxel_equal_a_histogram(data_dir):
    store = nzv.open_store(data_dir / "v09/points.zarrvectors")
    result = density_map(store, 5.0, count="vertices", block_chunks=2)
    positions = store.read(0, attributes=False).positions.astype(np.float64)
    idx = np.floor((positions - result.affine[:3, 3]) / 5.0 + 0.5).astype(np.int64)
    expected = np.zeros(result.image.shape, np.int64)
    np.add.at(expected, tuple(idx.T), 1)
    np.testing.assert_array_equal(result.image, expected)
    assert result.image.sum() == store.level(0).vertex_count


def test_an_additive_level_counts_its_whole_chain(data_dir):
    store = nzv.open_store(data_dir / "next/streamlines_additive.zarrvectors")
    result = density_map(store, 3.0, level=0, block_chunks=1)
    geometry = store.read(0, attributes=False)  # the whole chain, finest first
    streamlines = [geometry.positions[p] for p in geometry.paths]
    ids = geometry.path_object_ids
    # one object is one streamline whose pieces sit at different levels of the chain
    joined = [
        np.concatenate([s for s, i in zip(streamlines, ids, strict=True) if i == k])
        for k in np.unique(ids)
    ]
    np.testing.assert_array_equal(result.image, _dipy_density(joined, result))


@pytest.mark.parametrize(
    ("voxel", "message"), [(0.0, "positive"), (-1.0, "positive"), (1e-5, "larger voxel")]
)
def test_bad_voxels_are_refused(data_dir, voxel, message):
    store = nzv.open_store(data_dir / "v09/points.zarrvectors")
    with pytest.raises(ValueError, match=message):
        density_map(store, voxel)


def test_a_store_without_objects_cannot_count_objects(data_dir):
    store = nzv.open_store(data_dir / "v09/points_binned.zarrvectors")
    assert store.object_index(0) is None
    with pytest.raises(ValueError, match="no objects"):
        density_map(store, 5.0, count="objects")
    result = density_map(store, 5.0)
    assert result.count == "vertices" and result.image.sum() == store.level(0).vertex_count
