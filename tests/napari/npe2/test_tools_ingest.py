"""Stores written by zarr-vectors-tools 0.3.0 ingesters from files shipped in packages open
where the source file's own library puts them (world coordinates, RAS mm for tractograms):
the TRK ingest keeps TrackVis voxmm and a ``crs`` block, which the layers' placement undoes
(FORMAT-NEXT §7)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import napari_zarr_vectors as nzv
from napari_zarr_vectors.napari.layerdata.placement import layer_world_positions
from napari_zarr_vectors.napari.npe2.reader import read_zarr_vectors

pytest.importorskip("zarr_vectors_tools")
nib = pytest.importorskip("nibabel")

NIB_DATA = Path(nib.__file__).parent / "tests" / "data"


def _tracks300() -> Path:
    dipy = pytest.importorskip("dipy")
    return Path(dipy.__file__).parent / "data" / "files" / "tracks300.trk"


def _world_rows(path: Path) -> set[tuple[float, ...]]:
    """World positions (x, y, z, rounded) of everything the level-0 data layer draws."""
    from napari.layers import Layer

    layers = [Layer.create(*t) for t in read_zarr_vectors(path, level=0)]
    points = [ly for ly in layers if type(ly).__name__ == "Points"]  # a graph's nodes
    data = points[0] if points else max(layers, key=lambda ly: len(ly.data))  # not the box
    world, _ = layer_world_positions(data)
    return {tuple(p) for p in np.round(world[:, ::-1], 3).tolist()}


def _rows(points) -> set[tuple[float, ...]]:
    return {tuple(p) for p in np.round(np.asarray(points, np.float64), 3).tolist()}


@pytest.mark.parametrize("source", ["standard.LPS.trk", "standard.trk", "tracks300"])
def test_trk_ingest_lands_where_nibabel_puts_the_streamlines(tmp_path, source):
    from zarr_vectors_tools.convert.ingest.trk_parallel import ingest_trk_parallel

    src = _tracks300() if source == "tracks300" else NIB_DATA / source
    out = tmp_path / "t.zarrvectors"
    ingest_trk_parallel(src, out, workers=1, progress=False, build_multiscale=False)
    truth = nib.streamlines.load(str(src)).streamlines  # RAS mm
    store = nzv.open_store(out)
    assert store.placement.source == "trackvis_header"
    g = store.read(0)
    assert sorted(g.path_object_ids.tolist()) == list(range(len(truth)))
    for i, oid in enumerate(g.path_object_ids.tolist()):
        placed = store.placement.apply(g.positions[g.paths[i]])
        np.testing.assert_allclose(placed, truth[oid], atol=1e-3)
    assert _world_rows(out) == _rows(np.concatenate(list(truth)))


def test_tck_ingest_is_already_ras(tmp_path):
    from zarr_vectors_tools.convert.ingest.tck import ingest_tck

    src = NIB_DATA / "standard.tck"
    out = tmp_path / "t.zarrvectors"
    ingest_tck(src, out, (10.0, 10.0, 10.0))
    truth = nib.streamlines.load(str(src)).streamlines
    assert nzv.open_store(out).placement.is_identity
    assert _world_rows(out) == _rows(np.concatenate(list(truth)))


def test_swc_ingest_of_a_navis_skeleton(tmp_path):
    navis = pytest.importorskip("navis")
    from zarr_vectors_tools.convert.ingest.swc import ingest_swc

    neuron = navis.example_neurons(1, kind="skeleton")
    swc = tmp_path / "n.swc"
    navis.write_swc(neuron, str(swc))
    out = tmp_path / "n.zarrvectors"
    ingest_swc(swc, out, (2000.0, 2000.0, 2000.0))
    nodes = neuron.nodes
    xyz = nodes[["x", "y", "z"]].to_numpy(np.float32)
    got = nzv.open_store(out).read(0)
    assert _rows(got.positions) == _rows(xyz) and got.vertex_count == len(nodes)
    # (child, parent) edges by position
    where = {tuple(p): i for i, p in enumerate(xyz.tolist())}
    node_of = np.array([where[tuple(p)] for p in got.positions.astype(np.float32).tolist()])
    ids = nodes["node_id"].to_numpy()
    parent = dict(zip(ids.tolist(), nodes["parent_id"].tolist(), strict=True))
    want = {(c, parent[c]) for c in ids.tolist() if parent[c] >= 0}
    edges = ids[node_of[got.edges]]
    assert {tuple(e) for e in edges.tolist()} == want
    assert _world_rows(out) == _rows(xyz)


def test_graphml_ingest_of_a_networkx_graph(tmp_path):
    nx = pytest.importorskip("networkx")
    from zarr_vectors_tools.convert.ingest.graphml import ingest_graphml

    graph = nx.random_geometric_graph(60, 0.3, dim=3, seed=3)
    for node, pos in nx.get_node_attributes(graph, "pos").items():
        graph.nodes[node].update(x=float(pos[0]), y=float(pos[1]), z=float(pos[2]))
        del graph.nodes[node]["pos"]
    src = tmp_path / "g.graphml"
    nx.write_graphml(graph, src)
    out = tmp_path / "g.zarrvectors"
    ingest_graphml(src, out, (0.5, 0.5, 0.5))
    xyz = np.array([[graph.nodes[n][a] for a in "xyz"] for n in graph.nodes], np.float32)
    got = nzv.open_store(out).read(0)
    where = {tuple(p): n for n, p in zip(graph.nodes, xyz.tolist(), strict=True)}
    node_of = [where[tuple(p)] for p in got.positions.astype(np.float32).tolist()]
    edges = {frozenset((node_of[a], node_of[b])) for a, b in got.edges.tolist()}
    assert edges == {frozenset(e) for e in graph.edges}
    assert _world_rows(out) == _rows(xyz)


def test_csv_ingest_of_points(tmp_path):
    from zarr_vectors_tools.convert.ingest.csv_points import ingest_csv

    pts = np.random.default_rng(0).uniform(-5, 5, (300, 3)).astype(np.float32)
    src = tmp_path / "p.csv"
    np.savetxt(src, pts, delimiter=",", header="x,y,z", comments="")
    out = tmp_path / "p.zarrvectors"
    ingest_csv(src, out, (2.0, 2.0, 2.0))
    got = nzv.open_store(out).read(0)
    assert got.vertex_count == 300 and _rows(got.positions) == _rows(pts)
    assert _world_rows(out) == _rows(pts)
