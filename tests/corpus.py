"""The real-writer corpus: stores written by every writer users have, from real data shipped in
the test dependencies, each with what was fed to its writer.

Every damage detector must pass these stores (a detector that trips on one of them costs
users real data; the fuzz campaign's oracle cannot see that). The sources: navis' five
example neurons as skeletons and meshes and one neuron's synapses, dipy's ``tracks300.trk``,
nibabel's ``standard.trk`` / ``standard.tck``, a networkx graph. The writers: zarr-vectors
0.9.2 (raw and Draco, several chunk sizes, with and without pyramids) and the
zarr-vectors-tools 0.3.0 ingesters (with their own pyramids).

:func:`build` writes one entry of :data:`ENTRIES` into a folder and returns its
:class:`Source`; ``tests/format/test_real_writers.py`` reads every one back.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from realdata import navis_neurons, tracks300_streamlines, write_navis_neurons, write_tracks300


@dataclass
class Source:
    """What a writer was given, enough to check what a reader gets back."""

    geometry: str  # "points", "paths", "graph", "mesh"
    #: every position fed to the writer (float32 rows)
    positions: np.ndarray
    #: paths (streamlines) in object order; ``None`` for other geometries
    paths: list[np.ndarray] | None = None
    #: graph or skeleton edges as pairs of positions' rows (undirected); meshes: faces
    edges: np.ndarray | None = None
    faces: np.ndarray | None = None
    #: Draco: vertices and faces of the level-0 blobs decoded by DracoPy itself, and the
    #: largest distance quantisation may move a vertex
    draco: tuple[int, int, float] | None = None
    #: coarse levels whose reads are compared with zarr-vectors' own reader
    pyramid: bool = False
    #: the reader of zarr-vectors 0.9.2 that reads this geometry (``None``: it cannot)
    reference: str | None = None
    notes: list[str] = field(default_factory=list)


def _quiet(fn: Callable[[], object]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn()


# -- sources ----------------------------------------------------------------------------------
def navis_meshes() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """navis' five example neuron meshes as one vertex array, faces and per-vertex ids."""
    import navis

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        meshes = navis.example_neurons(kind="mesh")
    verts, faces, ids, off = [], [], [], 0
    for i, m in enumerate(meshes):
        v = np.asarray(m.vertices, np.float32)
        verts.append(v)
        faces.append(np.asarray(m.faces, np.int64) + off)
        ids.append(np.full(len(v), i, np.int64))
        off += len(v)
    return np.concatenate(verts), np.concatenate(faces), np.concatenate(ids)


def navis_synapses() -> tuple[np.ndarray, np.ndarray]:
    """The 3,136 synapses of navis' neuron 722817260 and their kind (0 pre, 1 post)."""
    import navis
    import pandas as pd

    table = pd.read_csv(Path(navis.__file__).parent / "data" / "synapses" / "722817260.csv")
    xyz = table[["x", "y", "z"]].to_numpy(np.float32)
    return xyz, (table["type"] == "post").to_numpy().astype(np.int64)


def _nib_data() -> Path:
    import nibabel

    return Path(nibabel.__file__).parent / "tests" / "data"


def _draco_blobs(path: Path) -> tuple[int, int, float]:
    """Vertices and faces of the level-0 Draco blobs, decoded with DracoPy through
    zarr-vectors' storage, and the largest quantisation step of a blob (11 bits)."""
    import json

    import DracoPy
    from zarr_vectors.core.store import get_resolution_level
    from zarr_vectors.core.store import open_store as zv_open

    level = get_resolution_level(zv_open(str(path)), 0)
    attrs = json.loads((path / "0" / "vertices" / "zarr.json").read_text())["attributes"]
    n_v = n_f = 0
    step = 0.0
    for key in attrs["nonempty_chunks"]:
        blob = DracoPy.decode(bytes(level.read_bytes("vertices", key)))
        pts = np.asarray(blob.points, np.float64)
        n_v += len(pts)
        n_f += len(np.asarray(getattr(blob, "faces", ())).reshape(-1, 3))  # a point cloud
        step = max(step, float((pts.max(0) - pts.min(0)).max()) / (2**11 - 1))
    return n_v, n_f, step


# -- zarr-vectors 0.9.2 -----------------------------------------------------------------------
def _zv_pyramid(path: Path, levels: int = 2) -> None:
    from zarr_vectors.multiresolution.coarsen import build_pyramid

    _quiet(lambda: build_pyramid(str(path), factors=[(2.0, 1.0)] * levels))


def zv_tracks300(path: Path, chunk: float, pyramid: bool) -> Source:
    from zarr_vectors.types.polylines import write_polylines

    lines = tracks300_streamlines()
    _quiet(lambda: write_polylines(str(path), lines, chunk_shape=(chunk,) * 3))
    if pyramid:
        _zv_pyramid(path)
    return Source("paths", np.concatenate(lines), paths=lines, pyramid=pyramid)


def zv_tracks300_dataset(path: Path) -> Source:
    """tracks300 through the Dataset API with groups, attributes and a pyramid."""
    truth = write_tracks300(path, pyramid=True)
    return Source("paths", np.concatenate(truth.objects), paths=truth.objects, pyramid=True)


def zv_skeletons(path: Path) -> Source:
    truth = write_navis_neurons(path, node_type_as="str", with_names=True)
    offsets = np.cumsum([0] + [len(o) for o in truth.objects[:-1]])
    edges = np.concatenate([e + o for e, o in zip(truth.edges, offsets, strict=True)])
    return Source("graph", np.concatenate(truth.objects), edges=edges)


def zv_meshes(path: Path, encoding: str, chunk: float, pyramid: bool = False) -> Source:
    from zarr_vectors.types.meshes import write_mesh

    verts, faces, ids = navis_meshes()
    _quiet(
        lambda: write_mesh(
            str(path), verts, faces, chunk_shape=(chunk,) * 3, object_ids=ids, encoding=encoding
        )
    )
    if pyramid:
        _zv_pyramid(path, 1)
    draco = _draco_blobs(path) if encoding == "draco" else None
    return Source("mesh", verts, faces=faces, draco=draco, pyramid=pyramid)


def zv_synapses(path: Path, pyramid: bool) -> Source:
    from zarr_vectors.types.points import write_points

    xyz, kind = navis_synapses()
    _quiet(lambda: write_points(str(path), xyz, chunk_shape=(5000.0,) * 3, object_ids=kind))
    if pyramid:
        _zv_pyramid(path)
    return Source("points", xyz, pyramid=pyramid, reference="points")


def zv_graph(path: Path) -> Source:
    import networkx as nx
    from zarr_vectors.types.graphs import write_graph

    graph = nx.random_geometric_graph(80, 0.25, dim=3, seed=7)
    pos = nx.get_node_attributes(graph, "pos")
    xyz = np.array([pos[n] for n in graph.nodes], np.float32) * 100.0
    edges = np.array(list(graph.edges), np.int64)
    _quiet(lambda: write_graph(str(path), xyz, edges, chunk_shape=(25.0,) * 3))
    return Source("graph", xyz, edges=edges)


# -- zarr-vectors-tools 0.3.0 -----------------------------------------------------------------
def zv_mesh_shared_chunk(path: Path) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """A raw mesh laid out as zarr-vectors 0.7 wrote meshes: one fragment per chunk, which
    every object in the chunk names whole (not in :data:`ENTRIES`: no released writer does
    this today). zarr-vectors 0.9.2 writes it: ``write_mesh`` of one object (one fragment per
    chunk), then its own ``write_object_index`` and ``write_object_attributes`` give two
    objects, 0 in chunks x 0 and 1, 1 in chunks x 1 and 2: chunk x 1 holds vertices of
    unknown object. A strip of 24 vertices, 8 per chunk (10 units), x ascending.

    Returns the vertices, each vertex's object as the store records it (``OBJECT_UNKNOWN``
    in chunk x 1) and the object attributes (``volume``, ``kind``) in id order."""
    from zarr_vectors.core.arrays import (
        create_object_attributes_array,
        write_object_attributes,
        write_object_index,
    )
    from zarr_vectors.core.store import get_resolution_level, open_store
    from zarr_vectors.types.meshes import write_mesh

    from napari_zarr_vectors.format.missing import OBJECT_UNKNOWN

    x = np.arange(12) * 2.5 + 0.5
    side = np.tile([1.0, 4.0], 12)
    verts = np.column_stack([np.repeat(x, 2), side, side]).astype(np.float32)
    quads = 2 * np.arange(11)[:, None] + np.array([[0, 1, 2], [1, 3, 2]]).reshape(1, 6)
    faces = quads.reshape(-1, 3)
    _quiet(lambda: write_mesh(str(path), verts, faces, chunk_shape=(10.0,) * 3))
    level = get_resolution_level(open_store(str(path), mode="r+"), 0)
    chunk = [((i, 0, 0), 0) for i in range(3)]
    write_object_index(level, {0: chunk[:2], 1: chunk[1:]}, sid_ndim=3)
    attributes = {"volume": np.array([2.5, 7.0], np.float32), "kind": np.array(["axon", "soma"])}
    for name, values in attributes.items():
        create_object_attributes_array(level, name)
        write_object_attributes(level, name, values)
    owner = np.repeat(np.array([0, OBJECT_UNKNOWN, 1], np.int64), 8)
    return verts, owner, attributes


def _tools_pyramid(path: Path, levels: int = 1) -> None:
    from zarr_vectors_tools.multiresolution.coarsen import build_pyramid

    _quiet(lambda: build_pyramid(str(path), factors=[(2.0, 1.0)] * levels))


def tools_synapses(path: Path) -> Source:
    """The issue's set-up: 5,000-unit chunks, object ids, k-NN distances, duplicates
    dropped, per-object vertex counts and a two-fold pyramid."""
    from zarr_vectors_tools.convert.ingest.csv_points import ingest_csv

    xyz, kind = navis_synapses()
    csv = path.with_suffix(".csv")
    np.savetxt(csv, xyz, delimiter=",", header="x,y,z", comments="", fmt="%.1f")
    _quiet(
        lambda: ingest_csv(
            csv,
            path,
            (5000.0,) * 3,
            object_ids=kind,
            knn_distance_k=4,
            drop_duplicates=True,
            per_object_vertex_count=True,
        )
    )
    _tools_pyramid(path)
    unique = np.unique(xyz, axis=0)
    return Source("points", unique, pyramid=True, reference="points")


def tools_trk(path: Path, source: str) -> Source:
    import nibabel as nib
    from zarr_vectors_tools.convert.ingest.trk_parallel import ingest_trk_parallel

    if source == "tracks300":
        import dipy

        src = Path(dipy.__file__).parent / "data" / "files" / "tracks300.trk"
    else:
        src = _nib_data() / source
    _quiet(
        lambda: ingest_trk_parallel(src, path, workers=1, progress=False, build_multiscale=False)
    )
    if source == "tracks300":
        _tools_pyramid(path, 2)
    lines = [np.asarray(s, np.float32) for s in nib.streamlines.load(str(src)).streamlines]
    return Source(
        "paths",
        np.concatenate(lines),
        paths=lines,
        pyramid=source == "tracks300",
        notes=["positions in TrackVis voxmm; the crs places them in RAS mm"],
    )


def tools_tck(path: Path) -> Source:
    import nibabel as nib
    from zarr_vectors_tools.convert.ingest.tck import ingest_tck

    src = _nib_data() / "standard.tck"
    _quiet(lambda: ingest_tck(src, path, (10.0, 10.0, 10.0)))
    lines = [np.asarray(s, np.float32) for s in nib.streamlines.load(str(src)).streamlines]
    return Source("paths", np.concatenate(lines), paths=lines)


def tools_swc(path: Path) -> Source:
    import navis
    from zarr_vectors_tools.convert.ingest.swc import ingest_swc

    neuron = navis_neurons()[0]
    swc = path.with_suffix(".swc")
    _quiet(lambda: navis.write_swc(neuron, str(swc)))
    _quiet(lambda: ingest_swc(swc, path, (2000.0, 2000.0, 2000.0)))
    nodes = neuron.nodes
    xyz = nodes[["x", "y", "z"]].to_numpy(np.float32)
    row = {int(v): i for i, v in enumerate(nodes["node_id"].to_numpy())}
    parent = nodes["parent_id"].to_numpy()
    child = np.flatnonzero(parent >= 0)
    edges = np.stack([child, [row[int(p)] for p in parent[child]]], axis=1)
    return Source("graph", xyz, edges=edges)


def tools_graphml(path: Path) -> Source:
    import networkx as nx
    from zarr_vectors_tools.convert.ingest.graphml import ingest_graphml

    graph = nx.random_geometric_graph(60, 0.3, dim=3, seed=3)
    xyz = []
    for node, pos in nx.get_node_attributes(graph, "pos").items():
        graph.nodes[node].update(x=float(pos[0]), y=float(pos[1]), z=float(pos[2]))
        del graph.nodes[node]["pos"]
        xyz.append(pos)
    src = path.with_suffix(".graphml")
    nx.write_graphml(graph, src)
    _quiet(lambda: ingest_graphml(src, path, (0.5, 0.5, 0.5)))
    index = {n: i for i, n in enumerate(graph.nodes)}
    edges = np.array([(index[a], index[b]) for a, b in graph.edges], np.int64)
    return Source("graph", np.asarray(xyz, np.float32), edges=edges)


def tools_obj(path: Path, encoding: str) -> Source:
    """One navis neuron mesh (decimated by navis' own vertex clustering to a few hundred
    vertices) written as OBJ and ingested."""
    from zarr_vectors_tools.convert.ingest.obj import ingest_obj

    verts, faces, ids = navis_meshes()
    keep = ids == 0
    v, f = verts[keep], faces[np.all(keep[faces], axis=1)]
    obj = path.with_suffix(".obj")
    lines = [f"v {x:.4f} {y:.4f} {z:.4f}" for x, y, z in v.tolist()]
    lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in f.tolist()]
    obj.write_text("\n".join(lines) + "\n")
    _quiet(lambda: ingest_obj(obj, path, (1500.0,) * 3, encoding=encoding))
    written = np.loadtxt([ln[2:] for ln in lines if ln.startswith("v ")], np.float32)
    draco = _draco_blobs(path) if encoding == "draco" else None
    return Source("mesh", written, faces=f, draco=draco)


#: name -> builder writing that store into the path it is given
ENTRIES: dict[str, Callable[[Path], Source]] = {
    "zv-tracks300-c20": lambda p: zv_tracks300(p, 20.0, pyramid=False),
    "zv-tracks300-c50-pyramid": lambda p: zv_tracks300(p, 50.0, pyramid=True),
    "zv-tracks300-dataset": zv_tracks300_dataset,
    "zv-skeletons": zv_skeletons,
    "zv-meshes-raw-c3000": lambda p: zv_meshes(p, "raw", 3000.0),
    "zv-meshes-raw-c10000-pyramid": lambda p: zv_meshes(p, "raw", 10000.0, pyramid=True),
    "zv-meshes-draco-c3000": lambda p: zv_meshes(p, "draco", 3000.0),
    "zv-meshes-draco-c10000": lambda p: zv_meshes(p, "draco", 10000.0),
    "zv-synapses": lambda p: zv_synapses(p, pyramid=False),
    "zv-synapses-pyramid": lambda p: zv_synapses(p, pyramid=True),
    "zv-graph": zv_graph,
    "tools-synapses-pyramid": tools_synapses,
    "tools-tracks300-pyramid": lambda p: tools_trk(p, "tracks300"),
    "tools-standard-trk": lambda p: tools_trk(p, "standard.trk"),
    "tools-standard-tck": tools_tck,
    "tools-swc": tools_swc,
    "tools-graphml": tools_graphml,
    "tools-obj-raw": lambda p: tools_obj(p, "raw"),
    "tools-obj-draco": lambda p: tools_obj(p, "draco"),
}


def build(name: str, folder: Path) -> tuple[Path, Source]:
    """Write corpus entry ``name`` into ``folder``; its store's path and source."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.zarrvectors"
    return path, ENTRIES[name](path)
