"""export_objects to the field's files: each read back by the field's reader, against the store."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import napari_zarr_vectors as nzv
from data_paths import data_root
from napari_zarr_vectors.write import export_objects
from napari_zarr_vectors.write.engine import TargetExistsError, WriteError

DATA = data_root()
nib = pytest.importorskip("nibabel")


def _paths_world(store: nzv.Store, ids=None) -> dict[int, np.ndarray]:
    g = store.read(0, object_ids=ids)
    pos = store.placement.apply(g.positions)
    return {int(o): pos[p] for o, p in zip(g.path_object_ids, g.paths, strict=True)}


def test_trk_round_trips_to_the_source_voxmm(tmp_path: Path) -> None:
    """A TRK ingest: the file's streamlines are nibabel's RAS mm of the store, and its
    voxmm on disk are the store's stored coordinates (the source file's)."""
    store = nzv.open_store(DATA / "next" / "trk_crs.zarrvectors")
    out = export_objects(store, tmp_path / "all.trk")
    trk = nib.streamlines.load(str(out))
    want = _paths_world(store)
    assert len(trk.streamlines) == len(want)
    for got, ref in zip(trk.streamlines, want.values(), strict=True):
        np.testing.assert_allclose(got, ref, atol=1e-4)
    header = trk.header
    assert "".join(header["voxel_order"].decode() if isinstance(header["voxel_order"], bytes)
                   else header["voxel_order"]) == "LSA"  # fmt: skip
    to_voxmm = nib.streamlines.trk.get_affine_rasmm_to_trackvis(header)
    stored = store.read(0)
    first = stored.positions[stored.paths[0]]
    voxmm = nib.affines.apply_affine(to_voxmm, trk.streamlines[0])
    np.testing.assert_allclose(voxmm, first, atol=1e-3)


def test_tck_and_trx_of_a_selection(tmp_path: Path, tracks300_store) -> None:
    pytest.importorskip("trx")
    import trx.trx_file_memmap as tmm

    store = nzv.open_store(tracks300_store[0])
    ids = np.array([3, 17, 250, 4])
    want = _paths_world(store, ids)
    tck = nib.streamlines.load(str(export_objects(store, tmp_path / "sel.tck", object_ids=ids)))
    assert len(tck.streamlines) == 4
    for got, ref in zip(tck.streamlines, want.values(), strict=True):
        np.testing.assert_allclose(got, ref, atol=1e-4)
    # the source: tracks300 in RAS mm, objects in file order
    truth = tracks300_store[1].objects
    np.testing.assert_allclose(tck.streamlines[0], truth[3], atol=1e-4)
    trx = tmm.load(str(export_objects(store, tmp_path / "sel.trx", object_ids=ids)))
    try:
        assert trx.header["NB_STREAMLINES"] == 4
        for got, ref in zip(trx.streamlines, want.values(), strict=True):
            np.testing.assert_allclose(got, ref, atol=1e-4)
        length = store.object_attributes(0)["length_mm"][sorted(want)]
        np.testing.assert_allclose(trx.data_per_streamline["length_mm"][:, 0], length, rtol=1e-6)
        names = store.group_names(0)
        groups = store.groups(0)
        for gid, members in groups.items():
            hit = sorted(np.flatnonzero(np.isin(sorted(want), members)).tolist())
            if hit:
                assert sorted(trx.groups[names[gid]].tolist()) == hit
    finally:
        trx.close()


def test_swc_read_by_navis(tmp_path: Path, neurons_store) -> None:
    navis = pytest.importorskip("navis")
    store = nzv.open_store(neurons_store[0])
    out = export_objects(store, tmp_path / "one.swc", object_ids=[2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        neuron = navis.read_swc(str(out))
    truth = neurons_store[1]
    nodes = neuron.nodes
    assert len(nodes) == len(truth.objects[2])
    got = nodes[["x", "y", "z"]].to_numpy()
    # the same node set, and the same tree: every (child, parent) edge of the source
    order = np.lexsort(got.T)
    src = truth.objects[2].astype(np.float64)
    np.testing.assert_allclose(got[order], src[np.lexsort(src.T)], rtol=1e-6)
    assert (nodes["parent_id"] < 0).sum() == 1
    pos_of = dict(zip(nodes["node_id"], map(tuple, got.astype(np.float32)), strict=True))
    edges = {
        (pos_of[c], pos_of[p])
        for c, p in zip(nodes["node_id"], nodes["parent_id"], strict=True)
        if p >= 0
    }
    want = {(tuple(src[c].astype(np.float32)), tuple(src[p].astype(np.float32)))
            for c, p in truth.edges[2]}  # fmt: skip
    assert edges == want


@pytest.mark.parametrize("suffix", [".ply", ".obj", ".stl"])
def test_meshes_read_by_trimesh(tmp_path: Path, suffix: str) -> None:
    trimesh = pytest.importorskip("trimesh")
    store = nzv.open_store(DATA / "v09" / "mesh.zarrvectors")
    g = store.read(0)
    out = export_objects(store, tmp_path / f"m{suffix}")
    mesh = trimesh.load(str(out), process=False, force="mesh")
    assert len(mesh.faces) == len(g.faces)
    tris = np.sort(g.positions[g.faces].reshape(-1, 3), axis=0)
    got = np.sort(np.asarray(mesh.vertices)[np.asarray(mesh.faces)].reshape(-1, 3), axis=0)
    np.testing.assert_allclose(got, tris, rtol=1e-5, atol=1e-5)
    if suffix != ".stl":
        np.testing.assert_allclose(mesh.vertices, g.positions, rtol=1e-6, atol=1e-6)


def test_points_csv_read_by_pandas(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    store = nzv.open_store(DATA / "v09" / "points.zarrvectors")
    g = store.read(0)
    table = pd.read_csv(export_objects(store, tmp_path / "p.csv"))
    assert list(table.columns[:3]) == store.axes
    np.testing.assert_allclose(table[store.axes].to_numpy(), g.positions, rtol=1e-6)
    assert table["object_id"].tolist() == g.vertex_object_ids.tolist()
    for name, values in g.vertex_attributes.items():
        values = np.asarray(values)
        if values.ndim == 1 and values.dtype.kind in "biuf":
            np.testing.assert_allclose(table[name].to_numpy(), values, rtol=1e-6)


def test_refusals(tmp_path: Path) -> None:
    mesh = nzv.open_store(DATA / "v09" / "mesh.zarrvectors")
    with pytest.raises(WriteError, match=r"cannot hold; export them as .zarrvectors or .ply"):
        export_objects(mesh, tmp_path / "m.trk")
    (tmp_path / "there.ply").write_text("keep me")
    with pytest.raises(TargetExistsError):
        export_objects(mesh, tmp_path / "there.ply")
    assert (tmp_path / "there.ply").read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["there.ply"]  # no partial files
