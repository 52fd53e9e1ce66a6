"""What to write: :class:`WriteSpec`, one geometry in store order and store units.

A :class:`WriteSpec` is the napari-free hand-over between "where the data comes from" (napari
layers: :mod:`napari_zarr_vectors.napari.npe2.writer`; a selection of an opened store:
:func:`spec_from_geometry`) and the engine that writes it through the reference writer
(:mod:`.engine`). It holds plain numpy arrays only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..format.distinct import distinct
from ..format.geometry import GEOMETRY_TYPES, GRAPH_TYPES, PATH_TYPES, Geometry, GeometryType
from ..format.missing import take_by_id

#: Object attribute keeping the original object ids when the reference writer cannot
#: (paths and lines are numbered 0..n-1 in the order written).
SOURCE_OBJECT_ID = "source_object_id"


@dataclass
class WriteSpec:
    """One geometry to write, in **store** column order and store (world) units.

    Attributes
    ----------
    geometry_type
        One of :data:`GEOMETRY_TYPES`.
    positions
        ``(N, D)`` vertex coordinates. For paths (line, polyline, streamline) the vertices of
        all objects back to back, ``lengths[i]`` of them for object ``i`` (a line: 2).
    axes, units, axis_types
        Store axis names, units (``None``: undeclared) and types (``"space"``, ``"time"``).
    bounds
        ``(lo, hi)``; ``None``: the data's extent (padded where it is flat).
    lengths
        Paths only: ``(n_objects,)`` vertex count of each object.
    faces, edges
        Mesh ``(F, 3)`` faces, graph / skeleton ``(E, 2)`` edges (skeleton: ``(child,
        parent)``), rows into ``positions``.
    vertex_attributes, edge_attributes
        ``{name: (N,) or (N, C)}`` / ``{name: (E,) ...}``; strings as ``str`` / object arrays.
    object_ids
        Paths: ``(n_objects,)`` id of each object. Other types: ``(N,)`` id of each vertex, or
        ``None`` (no objects).
    object_attributes
        ``{name: values}`` aligned with :attr:`object_table_ids`.
    groups, group_attributes, group_names
        ``{group id: member object ids}``, ``{name: values by group id}`` and ``{group id:
        name}`` (groups left out of it are written as ``group_<id>``, the reference
        writer's name for an unnamed group, when any group is named).
    """

    geometry_type: str
    positions: np.ndarray
    axes: tuple[str, ...]
    units: tuple[str | None, ...]
    axis_types: tuple[str, ...] | None = None
    bounds: tuple[np.ndarray, np.ndarray] | None = None
    lengths: np.ndarray | None = None
    faces: np.ndarray | None = None
    edges: np.ndarray | None = None
    vertex_attributes: dict[str, np.ndarray] = field(default_factory=dict)
    edge_attributes: dict[str, np.ndarray] = field(default_factory=dict)
    object_ids: np.ndarray | None = None
    object_attributes: dict[str, np.ndarray] = field(default_factory=dict)
    groups: dict[int, np.ndarray] = field(default_factory=dict)
    group_attributes: dict[str, np.ndarray] = field(default_factory=dict)
    group_names: dict[int, str] = field(default_factory=dict)
    name: str = ""

    def __post_init__(self) -> None:
        if self.geometry_type not in GEOMETRY_TYPES:
            raise ValueError(
                f"cannot write geometry type {self.geometry_type!r}; "
                f"one of {', '.join(GEOMETRY_TYPES)}"
            )
        self.positions = np.asarray(self.positions, dtype=np.float64).reshape(-1, len(self.axes))
        if self.axis_types is None:
            self.axis_types = ("space",) * len(self.axes)
        if self.geometry_type in PATH_TYPES:
            if self.lengths is None:
                raise ValueError(f"a {self.geometry_type} spec needs lengths")
            self.lengths = np.asarray(self.lengths, dtype=np.int64).reshape(-1)
            if int(self.lengths.sum()) != self.vertex_count:
                raise ValueError("lengths do not add up to the number of positions")
        n = self.vertex_count
        for name, values in self.vertex_attributes.items():
            if len(values) != n:
                raise ValueError(f"vertex attribute {name!r} has {len(values)} rows, not {n}")

    @property
    def ndim(self) -> int:
        return len(self.axes)

    @property
    def vertex_count(self) -> int:
        return int(self.positions.shape[0])

    @property
    def n_objects(self) -> int:
        """Number of objects (paths: runs; others: distinct object ids, 0 without)."""
        if self.geometry_type in PATH_TYPES:
            assert self.lengths is not None  # (__post_init__ checks it)
            return int(len(self.lengths))
        return 0 if self.object_ids is None else int(distinct(self.object_ids).size)

    @property
    def object_table_ids(self) -> np.ndarray:
        """The object ids :attr:`object_attributes` rows describe (paths: in object order;
        others: ascending distinct ids)."""
        if self.object_ids is None:
            n = self.n_objects
            return np.arange(n, dtype=np.int64)
        ids = np.asarray(self.object_ids, dtype=np.int64)
        return ids if self.geometry_type in PATH_TYPES else distinct(ids)

    def resolved_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """The bounds to declare: :attr:`bounds` widened to hold every vertex; flat axes of
        the data's own extent padded by half a unit each side."""
        if self.vertex_count:
            lo = self.positions.min(axis=0)
            hi = self.positions.max(axis=0)
        else:
            lo = hi = np.zeros(self.ndim)
        if self.bounds is not None:
            lo = np.minimum(lo, np.asarray(self.bounds[0], dtype=np.float64))
            hi = np.maximum(hi, np.asarray(self.bounds[1], dtype=np.float64))
        flat = hi - lo <= 0
        lo = np.where(flat, lo - 0.5, lo)
        hi = np.where(flat, hi + 0.5, hi)
        return lo.astype(np.float64), hi.astype(np.float64)


# --------------------------------------------------------------------------------------------
# from a read of an opened store (export of a selection)
# --------------------------------------------------------------------------------------------


def spec_from_geometry(
    geometry: Geometry,
    *,
    axes: Sequence[str],
    units: Sequence[str | None] | None = None,
    axis_types: Sequence[str] | None = None,
    bounds: tuple[Any, Any] | None = None,
    object_attributes: Mapping[str, np.ndarray] | None = None,
    groups: Mapping[int, np.ndarray] | None = None,
    group_attributes: Mapping[str, np.ndarray] | None = None,
    group_names: Mapping[int, str] | None = None,
    name: str = "",
) -> WriteSpec:
    """A :class:`WriteSpec` holding ``geometry`` (a core read, e.g. of selected objects).

    ``object_attributes`` are the store's (arrays indexed by object id, as
    :meth:`~napari_zarr_vectors.format.store.Store.object_attributes` returns them): the rows
    of the objects ``geometry`` holds are kept. ``groups`` keep the members ``geometry``
    holds (a group left empty stays, so group ids do not change) and their
    ``group_names``.
    """
    kind = geometry.geometry_type
    positions = np.asarray(geometry.positions, dtype=np.float64)
    units = tuple(units) if units is not None else (None,) * len(axes)
    common: dict[str, Any] = {
        "axes": tuple(axes),
        "units": units,
        "axis_types": tuple(axis_types) if axis_types is not None else None,
        "bounds": bounds,
        "vertex_attributes": {},
        "name": name,
    }
    ids: np.ndarray | None
    if kind in PATH_TYPES:
        paths = [np.asarray(p, dtype=np.int64) for p in geometry.paths]
        lengths = np.fromiter((len(p) for p in paths), np.int64, len(paths))
        rows = np.concatenate(paths) if paths else np.empty(0, np.int64)
        keep = lengths >= 2
        if not keep.all():  # a path needs two vertices (lines whose ends merged are dropped)
            path_of_row = np.repeat(np.arange(len(paths)), lengths)
            rows = rows[keep[path_of_row]]
            lengths = lengths[keep]
        ids = np.asarray(geometry.path_object_ids, dtype=np.int64).reshape(-1)
        ids = ids[keep] if len(ids) == len(keep) else np.arange(len(lengths), dtype=np.int64)
        common["vertex_attributes"] = {
            k: np.asarray(v)[rows] for k, v in geometry.vertex_attributes.items()
        }
        spec = WriteSpec(kind, positions[rows], lengths=lengths, object_ids=ids, **common)
    else:
        common["vertex_attributes"] = {
            k: np.asarray(v) for k, v in geometry.vertex_attributes.items()
        }
        ids = (
            None
            if geometry.vertex_object_ids is None
            else np.asarray(geometry.vertex_object_ids, np.int64)
        )
        extra: dict[str, Any] = {}
        if kind == GeometryType.MESH:
            extra["faces"] = np.asarray(geometry.faces, np.int64).reshape(-1, 3)
        elif kind in GRAPH_TYPES:
            extra["edges"] = np.asarray(geometry.edges, np.int64).reshape(-1, 2)
            extra["edge_attributes"] = {
                k: np.asarray(v) for k, v in geometry.edge_attributes.items()
            }
        spec = WriteSpec(kind, positions, object_ids=ids, **common, **extra)
    table_ids = spec.object_table_ids if spec.object_ids is not None else np.empty(0, np.int64)
    if object_attributes and len(table_ids):
        spec.object_attributes = {
            k: _rows_by_id(np.asarray(v), table_ids) for k, v in object_attributes.items()
        }
    if groups and len(table_ids):
        present = distinct(table_ids)
        spec.groups = {
            int(g): np.intersect1d(np.asarray(m, np.int64).ravel(), present)
            for g, m in groups.items()
        }
        spec.group_attributes = {k: np.asarray(v) for k, v in (group_attributes or {}).items()}
        spec.group_names = {int(g): str(n) for g, n in (group_names or {}).items()}
    return spec


def _rows_by_id(values: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """``values[ids]``; ids beyond the table get the missing marker of the dtype
    (:func:`~..format.missing.missing_value`), text ``""`` and flags ``False``."""
    return take_by_id(values, ids, fill="" if values.dtype.kind in "OSUb" else None)
