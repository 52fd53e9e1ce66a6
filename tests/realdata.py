"""Stores made from real data shipped in packages, written by zarr-vectors 0.9.2.

A scientist's first stores are not the small fixtures: these two are what the issues about
first sight were found on, built the way a user of the reference writer builds them.

* :func:`write_tracks300` -- dipy's ``tracks300.trk`` (300 streamlines, 14,576 vertices, RAS mm)
  as a ``streamline`` store: eight named bundles (groups named by the octant of a streamline's
  mean position), object attributes ``hemisphere`` (text: ``left`` / ``right``) and
  ``length_mm``, and a two-level pyramid.
* :func:`write_navis_neurons` -- ``navis.example_neurons()`` (5 skeletons, 23,221 nodes, 8 nm
  voxels) as one ``skeleton`` store through ``Dataset.add_graph``, with the text vertex
  attribute ``node_type`` (root / slab / branch / end, stored with dtype ``object`` as that
  writer stores text) and the numeric object attribute ``body_id``.

Both return the ground truth they fed to the writer, so a test can compare what it reads
with the source file read by its own library.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass
class Truth:
    """What was fed to the writer: one entry per object, in the writer's object order."""

    objects: list[np.ndarray]  # positions per object (streamline vertices or skeleton nodes)
    object_attributes: dict[str, np.ndarray] = field(default_factory=dict)
    vertex_attributes: dict[str, list[np.ndarray]] = field(default_factory=dict)
    group_names: list[str] = field(default_factory=list)
    groups: dict[int, list[int]] = field(default_factory=dict)
    edges: list[np.ndarray] = field(default_factory=list)  # per object, local (child, parent)

    @property
    def vertex_count(self) -> int:
        return int(sum(len(o) for o in self.objects))


_OCTANT = (("left", "right"), ("posterior", "anterior"), ("inferior", "superior"))


def tracks300_streamlines() -> list[np.ndarray]:
    """dipy's ``tracks300.trk`` in RAS mm, read by nibabel."""
    import dipy.data
    import nibabel as nib

    tract = nib.streamlines.load(Path(dipy.data.__file__).parent / "files" / "tracks300.trk")
    return [np.asarray(s, np.float32) for s in tract.streamlines]


def write_tracks300(path: Path, *, pyramid: bool = True) -> Truth:
    """Write dipy's ``tracks300.trk`` as a 0.9.2 streamline store at ``path``."""

    lines = tracks300_streamlines()
    means = np.stack([s.mean(axis=0) for s in lines])
    centre = np.median(means, axis=0)
    bits = (means > centre).astype(np.int64)
    octant = bits[:, 0] * 4 + bits[:, 1] * 2 + bits[:, 2]
    names = [" ".join(_OCTANT[a][(k >> (2 - a)) & 1] for a in range(3)) for k in range(8)]
    groups = {g: np.flatnonzero(octant == g).tolist() for g in range(8)}
    hemisphere = np.where(bits[:, 0] == 1, "right", "left")
    length = np.array([np.linalg.norm(np.diff(s, axis=0), axis=1).sum() for s in lines], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = _create(path, np.concatenate(lines), "millimeter", "streamline", margin=1)
        ds.add_polylines(
            lines,
            object_attributes={"hemisphere": hemisphere, "length_mm": length},
            groups=groups,
            streamlines=True,
        )
        ds.level(0).groups.name_rows(names)
        if pyramid:
            ds.build_pyramid(factors=[(2, 1)])
    return Truth(
        objects=lines,
        object_attributes={"hemisphere": hemisphere, "length_mm": length},
        group_names=names,
        groups=groups,
    )


def navis_neurons():
    """``navis.example_neurons()``: five DA1 projection neurons (8 nm voxels).

    One of them is two trees (two roots); a skeleton object is one rooted tree (the writer
    refuses a forest), so it is joined the way navis users do, with ``navis.heal_skeleton``
    (one edge added, no node changed).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import navis

        return [
            navis.heal_skeleton(n) if (n.nodes["parent_id"] < 0).sum() > 1 else n
            for n in navis.example_neurons()
        ]


def write_navis_neurons(
    path: Path, *, node_type_as: str = "object", with_names: bool = False, with_radius: bool = False
) -> Truth:
    """Write ``navis.example_neurons()`` as one 0.9.2 skeleton store at ``path``.

    ``node_type_as="object"`` hands ``node_type`` over as navis gives it (an ``object``
    array of ``str``): zarr-vectors 0.9.2's ``add_graph`` then stores the memory addresses of
    those strings, not the text, so no reader can get it back. ``"str"`` hands over a numpy
    string array (``values.astype(str)``), which it stores as UTF-32 text (dtype ``<U6``).
    ``with_names`` also stores each neuron's navis name as the text object attribute
    ``name``; ``with_radius`` each node's navis ``radius`` (nm, float32) as the vertex
    attribute ``radius``.
    """

    neurons = navis_neurons()
    objects, edges, types, ids, parts, radii = [], [], [], [], [], []
    start = 0
    for k, n in enumerate(neurons):
        nodes = n.nodes
        pos = nodes[["x", "y", "z"]].to_numpy(np.float32)
        row = {int(v): i for i, v in enumerate(nodes["node_id"].to_numpy())}
        parent = nodes["parent_id"].to_numpy()
        child = np.flatnonzero(parent >= 0)
        local = np.stack([child, [row[int(p)] for p in parent[child]]], axis=1)
        objects.append(pos)
        edges.append(local)
        parts.append(local + start)
        types.append(nodes["type"].astype(str).to_numpy().astype(object))
        ids.append(np.full(len(pos), k, np.int64))
        radii.append(nodes["radius"].to_numpy(np.float32))
        start += len(pos)
    positions = np.concatenate(objects)
    all_edges = np.concatenate(parts)
    node_type = np.concatenate(types)
    if node_type_as == "str":
        node_type = node_type.astype(str)
    object_ids = np.concatenate(ids)
    body_id = np.array([int(n.id) for n in neurons], np.int64)
    object_attributes = {"body_id": body_id}
    attributes = {"node_type": node_type}
    if with_radius:
        attributes["radius"] = np.concatenate(radii)
    if with_names:
        object_attributes["name"] = np.array([str(n.name) for n in neurons])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = _create(path, positions, "nanometer", "skeleton", margin=8)
        ds.add_graph(
            positions,
            all_edges,
            attributes=attributes,
            object_ids=object_ids,
            object_attributes=object_attributes,
            tree=True,
        )
    return Truth(
        objects=objects,
        object_attributes=object_attributes,
        vertex_attributes={"node_type": types, **({"radius": radii} if with_radius else {})},
        edges=edges,
    )


def _create(path: Path, positions: np.ndarray, unit: str, kind: str, margin: float):
    """A new 0.9.2 dataset of ``kind`` at ``path``: x, y, z in ``unit``, bounds around
    ``positions`` grown by ``margin``, a 4 x 4 x 4 chunk grid."""
    import zarr_vectors as zv

    lo, hi = np.floor(positions.min(0)) - margin, np.ceil(positions.max(0)) + margin
    schema = zv.Schema(
        ndim=3,
        bounds=(tuple(map(float, lo)), tuple(map(float, hi))),
        axes=tuple(zv.Axis(name=n, unit=unit) for n in "xyz"),
        kind=kind,
        layout=zv.Layout(cells=(4, 4, 4)),
    )
    return zv.create(str(path), schema=schema)


def write_navis_meshes(path: Path) -> Truth:
    """Write ``navis.example_neurons(kind="mesh")`` as one 0.9.2 mesh store at ``path``.

    The five meshes (8 nm voxels) share one navis name, ``DA1_lPN_R``, stored as the text
    object attribute ``name`` beside the numeric ``body_id``: a category with one value.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import navis

        meshes = list(navis.example_neurons(kind="mesh"))
    verts = [np.asarray(m.vertices, np.float32) for m in meshes]
    faces, ids, start = [], [], 0
    for k, (m, v) in enumerate(zip(meshes, verts, strict=True)):
        faces.append(np.asarray(m.faces, np.int64) + start)
        ids.append(np.full(len(v), k, np.int64))
        start += len(v)
    positions = np.concatenate(verts)
    object_attributes = {
        "body_id": np.array([int(m.id) for m in meshes], np.int64),
        "name": np.array([str(m.name) for m in meshes]),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = _create(path, positions, "nanometer", "mesh", margin=8)
        ds.add_mesh(
            positions,
            np.concatenate(faces),
            object_ids=np.concatenate(ids),
            object_attributes=object_attributes,
        )
    return Truth(objects=verts, object_attributes=object_attributes)


def write_navis_synapses(path: Path) -> Truth:
    """Write the connectors of ``navis.example_neurons()`` (14,836) as a 0.9.2 point store.

    One object per neuron (its synapses), the vertex attribute ``kind`` (0 presynapse,
    1 postsynapse: navis' ``type`` ``pre`` / ``post``) and the object attribute ``body_id``.
    """
    neurons = navis_neurons()
    objects, kinds = [], []
    for n in neurons:
        c = n.connectors
        objects.append(c[["x", "y", "z"]].to_numpy(np.float32))
        kinds.append((c["type"].to_numpy() == "post").astype(np.int32))
    positions = np.concatenate(objects)
    ids = np.concatenate([np.full(len(o), k, np.int64) for k, o in enumerate(objects)])
    object_attributes = {"body_id": np.array([int(n.id) for n in neurons], np.int64)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = _create(path, positions, "nanometer", "point_cloud", margin=8)
        ds.add_points(
            positions,
            attributes={"kind": np.concatenate(kinds)},
            object_ids=ids,
            object_attributes=object_attributes,
        )
    return Truth(
        objects=objects,
        object_attributes=object_attributes,
        vertex_attributes={"kind": kinds},
    )
