"""The decoded, napari-free result of a read: :class:`Geometry`, and the geometry types
(:class:`GeometryType`, :data:`GEOMETRY_TYPES`, :data:`PATH_TYPES`, :data:`GRAPH_TYPES`,
:data:`PIECE_TYPES`)."""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, overload

import numpy as np


class GeometryType(StrEnum):
    """A store's geometry type. A ``str``: members equal, hash and print as their value
    (``GeometryType.MESH == "mesh"``), so metadata strings compare with them directly."""

    POINT_CLOUD = "point_cloud"
    LINE = "line"
    POLYLINE = "polyline"
    STREAMLINE = "streamline"
    GRAPH = "graph"
    SKELETON = "skeleton"
    MESH = "mesh"


#: Every geometry type, in the format's order (plain strings, as metadata holds them).
GEOMETRY_TYPES: tuple[str, ...] = tuple(t.value for t in GeometryType)
#: Geometry types whose objects are ordered vertex runs (one object per run).
_G = GeometryType
PATH_TYPES: tuple[str, ...] = (_G.LINE.value, _G.POLYLINE.value, _G.STREAMLINE.value)
#: Geometry types with explicit edges between vertices.
GRAPH_TYPES: tuple[str, ...] = (_G.GRAPH.value, _G.SKELETON.value)
#: Path types whose objects are vertex runs of any length (a line's are two vertices): read
#: in pieces (``Store.read_pieces``), shown as napari Tracks or paths.
PIECE_TYPES: tuple[str, ...] = (_G.POLYLINE.value, _G.STREAMLINE.value)


class Derived:
    """A field value given as a zero-argument function, computed on first access: a read
    sets its derived arrays (per-vertex object ids, path edges) this way, so that a caller
    who never looks at them pays neither their time nor their memory."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn


class _Derivable:
    """Descriptor of a :class:`Geometry` field that may hold a :class:`Derived` value
    (computed and stored on first access); ``empty`` makes its default."""

    def __init__(self, empty: Callable[[], Any] | None = None) -> None:
        self._empty = empty

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __get__(self, obj: Geometry | None, owner: type | None = None) -> Any:
        if obj is None:  # the dataclass's default (a hashable marker, made into a value)
            return None if self._empty is None else self
        try:
            value = obj.__dict__[self._name]
        except KeyError:
            raise AttributeError(self._name) from None
        if isinstance(value, Derived):
            value = obj.__dict__[self._name] = value.fn()
        return value

    def __set__(self, obj: Geometry, value: object) -> None:
        if value is self and self._empty is not None:  # (``__get__`` gave the marker)
            value = self._empty()
        obj.__dict__[self._name] = value


@dataclass
class Geometry:
    """Geometry of one level (or of a bbox / object selection of it).

    Attributes
    ----------
    geometry_type
        ``"point_cloud"``, ``"line"``, ``"polyline"``, ``"streamline"``, ``"graph"``,
        ``"skeleton"`` or ``"mesh"``.
    level
        The pyramid level the data comes from.
    positions
        ``(N, ndim)`` float array, columns in store axis order.
    vertex_attributes
        ``{name: (N,) or (N, C)}`` aligned with ``positions``. Dictionary-encoded string
        attributes are decoded to object arrays of ``str`` (missing values as ``None``).
    vertex_object_ids
        ``(N,)`` int64 object id of every vertex, or ``None`` when the store has no objects.
        A vertex shared by several objects (coarse levels) carries the first; ``-1``: no
        object names it; :data:`~.missing.OBJECT_UNKNOWN`: a mesh chunk's one fragment that
        several objects name (zarr-vectors 0.9.2 Draco chunks), whose owner is not stored.
    edges
        ``(M, 2)`` int64 rows into ``positions``: graph edges, skeleton ``(child, parent)``
        and ``line`` segments. Empty for other types.
    edge_attributes
        ``{name: (M,) or (M, C)}`` aligned with ``edges``. Attributes a writer did not store
        for some edges (e.g. cross-chunk edges in 0.7) are NaN (floats) or 0 there.
    faces
        ``(F, 3)`` int64 rows into ``positions`` (mesh), winding preserved.
    paths
        Ordered vertex row indices per object (line, polyline, streamline): ``paths[i]`` is an
        integer array of rows into ``positions`` (int32 when a read's rows fit in it, else
        int64). A read returns them as a :class:`Paths`, a sequence of views of one array
        (:func:`flat_paths` gives that array and the lengths without a copy per path).
    path_object_ids
        ``(len(paths),)`` int64 object id of each path.
    chunks
        ``(K, ndim)`` int64 chunk coordinates that were read.
    """

    geometry_type: str
    level: int
    positions: np.ndarray
    vertex_attributes: dict[str, np.ndarray] = field(default_factory=dict)
    vertex_object_ids: np.ndarray | None = _Derivable()  # type: ignore[assignment]
    edges: np.ndarray = _Derivable(lambda: np.empty((0, 2), dtype=np.int64))  # type: ignore[assignment]
    edge_attributes: dict[str, np.ndarray] = field(default_factory=dict)
    faces: np.ndarray = field(default_factory=lambda: np.empty((0, 3), dtype=np.int64))
    paths: Sequence[np.ndarray] = field(default_factory=list)
    path_object_ids: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    chunks: np.ndarray | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Derived values computed (their functions are not for pickling)."""
        return {
            k: getattr(self, k) if isinstance(v, Derived) else v for k, v in self.__dict__.items()
        }

    @property
    def ndim(self) -> int:
        """Number of spatial axes."""
        return int(self.positions.shape[1])

    @property
    def vertex_count(self) -> int:
        """Number of vertices (rows of ``positions``)."""
        return int(self.positions.shape[0])

    def path_positions(self, i: int) -> np.ndarray:
        """``(n_i, ndim)`` coordinates of path ``i`` in order."""
        path: np.ndarray = self.positions[self.paths[i]]
        return path


class Paths(Sequence[np.ndarray]):
    """The row indices of many paths, one path after another in one array (:attr:`flat`)
    cut at :attr:`offsets`: a sequence of arrays whose items (views of :attr:`flat`) are
    made when accessed, so that a read of 100,000 paths does not build 100,000 arrays
    that a caller working on the flat rows never looks at (about 30 ms)."""

    __slots__ = ("flat", "offsets")

    def __init__(self, flat: np.ndarray, lengths: np.ndarray) -> None:
        self.flat = flat
        self.offsets = np.zeros(len(lengths) + 1, np.int64)
        np.cumsum(lengths, out=self.offsets[1:])

    @property
    def lengths(self) -> np.ndarray:
        """Length of every path (int64)."""
        return np.diff(self.offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @overload
    def __getitem__(self, i: int) -> np.ndarray: ...
    @overload
    def __getitem__(self, i: slice) -> list[np.ndarray]: ...
    def __getitem__(self, i: int | slice) -> np.ndarray | list[np.ndarray]:
        if isinstance(i, slice):
            return [self[k] for k in range(len(self))[i]]
        n = len(self)
        k = operator.index(i)
        if k < 0:
            k += n
        if not 0 <= k < n:
            raise IndexError(f"path {i} of {n}")
        return self.flat[self.offsets[k] : self.offsets[k + 1]]

    def __iter__(self) -> Iterator[np.ndarray]:
        bounds = self.offsets.tolist()
        flat = self.flat
        return (flat[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True))

    def __eq__(self, other: object) -> bool:
        """Equal to a sequence of the same paths (``paths == []`` for none)."""
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(
            np.array_equal(a, b) for a, b in zip(self, other, strict=True)
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Paths({len(self)} paths, {len(self.flat)} rows)"


def split_lengths(values: np.ndarray, lengths: np.ndarray) -> Paths:
    """``values`` cut into consecutive pieces of ``lengths`` (views made on access)."""
    return Paths(values, np.asarray(lengths, dtype=np.int64))


def flat_paths(paths: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``(rows of every path one after another, int64; length of each path, int64)``,
    without a copy per path when ``paths`` is a :class:`Paths`."""
    if isinstance(paths, Paths):
        return paths.flat.astype(np.int64, copy=False), paths.lengths
    lengths = np.fromiter((len(p) for p in paths), dtype=np.int64, count=len(paths))
    rows = (
        np.concatenate([np.asarray(p, np.int64) for p in paths]) if paths else np.empty(0, np.int64)
    )
    return rows, lengths
