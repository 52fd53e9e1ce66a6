"""What a store says about itself: its root and level metadata (axes, units, bounds,
chunk shapes, the refinement chains of additive levels), its container layout and which
chunks of each level hold data, where it lies in the world and its parametric objects.
:class:`~.store.Store` adds the objects, links and geometry it reads."""

from __future__ import annotations

import contextlib
import warnings
from functools import cached_property
from pathlib import PurePosixPath
from threading import Lock
from typing import Any

import numpy as np

from .chunks import unique_rows
from .errors import ZVChunkWarning, ZVError, ZVFormatError
from .io import StoreIO
from .layout import Layout, detect_layout
from .layout.keys import sort_chunks
from .metadata import LevelInfo, RootMetadata, parse_level, parse_root
from .parametric import Parametric, ParametricObject, read_parametric
from .refinement import map_chunks, refinement_chains
from .world import WorldPlacement, world_placement


class StoreMetadata:
    """The metadata of a ZV store: root, levels, layout, chunk listings, placement,
    parametric objects. Reads no geometry."""

    def __init__(self, io: StoreIO) -> None:
        self._io = io
        self.root: RootMetadata = parse_root(io.get_json("zarr.json"), io.name)
        self.levels: list[LevelInfo] = self._read_levels()
        self.layout: Layout = detect_layout(io, self.root, self.levels)
        self._chains = refinement_chains(self.root, self.levels, io.name)
        self._lock = Lock()
        self._chunk_lists: dict[int, np.ndarray] = {}
        self._chain_chunks: dict[int, np.ndarray] = {}
        self._warm: set[int] = set()

    def _read_levels(self) -> list[LevelInfo]:
        paths = [str(d.get("path")) for d in self.root.datasets if str(d.get("path", "")).isdigit()]
        if not paths:
            paths = sorted((n for n in self._io.list_dir("") if n.isdigit()), key=int)
        docs = self._io.get_many([f"{p}/zarr.json" for p in paths])
        levels = []
        for p, raw in zip(paths, docs, strict=True):
            if raw is None:  # listed by the root, gone from the store
                error = ZVFormatError(
                    f"the root lists the level, but {p}/zarr.json is missing",
                    store=self._io.name,
                    level=int(p),
                )
                warnings.warn(f"level left out: {error}", ZVChunkWarning, stacklevel=5)
                continue
            levels.append(
                parse_level(self.root, p, self._io.parse_json(raw, f"{p}/zarr.json"), self._io.name)
            )
        if not levels:
            raise ZVFormatError("the store has no resolution levels", store=self._io.name)
        return sorted(levels, key=lambda lv: lv.index)

    def _prefetch_metadata(self, level: int) -> None:
        """Remote stores: the metadata documents of a level in one batch, once."""
        with self._lock:
            if level in self._warm or not any(lv.index == level for lv in self.levels):
                return
            self._warm.add(level)
        with contextlib.suppress(ZVError):  # only a shortcut: the read meets errors in context
            self.layout.prefetch_metadata(level)

    # -- metadata ----------------------------------------------------------------------
    @property
    def path(self) -> str:
        """The location the store was opened from."""
        return self._io.name

    @property
    def name(self) -> str:
        """The store's folder name without its ``.zarrvectors`` (or short ``.zv``) suffix."""
        base = PurePosixPath(self.path.rstrip("/").replace("\\", "/")).name
        for suffix in (".zarrvectors", ".zv"):
            if base.endswith(suffix) and len(base) > len(suffix):
                return base[: -len(suffix)]
        return base.split(".zarrvectors")[0] or base

    @property
    def remote(self) -> bool:
        """The store is reached over a network (requests are retried, latency matters)."""
        return self._io.remote

    @property
    def listable(self) -> bool:
        """The store can list its keys (``False`` for plain HTTP: :meth:`chunks` of a 0.7
        store then probes every candidate key of the level's grid, one request each)."""
        return self._io.listable

    @property
    def zv_version(self) -> str:
        return self.root.zv_version

    @property
    def generation(self) -> str:
        """Container layout: ``"0.7"``, ``"0.9"`` or ``"dense"`` (the spec's grid-shaped
        arrays)."""
        return self.layout.generation

    @property
    def geometry_type(self) -> str:
        """The store's own geometry (the first the root lists)."""
        return self.root.geometry_type

    @property
    def geometry_types(self) -> list[str]:
        """Every geometry the store holds, its own first: a composite store (zarr-vectors
        ``composite.add_geometry``) lists the geometries added to it after it."""
        return list(self.root.geometry_types or (self.root.geometry_type,))

    @property
    def ndim(self) -> int:
        return self.root.ndim

    @cached_property
    def placement(self) -> WorldPlacement:
        """Where the stored coordinates lie in the world (:mod:`.world`): the store ->
        world affine from the root ``crs`` (TrackVis voxmm -> RAS mm from ``headers/trk``
        for zarr-vectors-tools' TRK ingest, a plain affine otherwise, the identity when
        positions were stored in the output space) and ``coordinate_offset``. Reads stay in
        the stored space; a voxmm store without its TRK header warns once (best effort)."""
        zv = self.root.raw.get("zarr_vectors") or {}
        header = self.trk_header if isinstance(zv.get("crs"), dict) else None
        placement, warning = world_placement(zv, header, self.ndim, self.path)
        if warning:
            warnings.warn(warning, UserWarning, stacklevel=2)
        return placement

    @cached_property
    def trk_header(self) -> dict[str, Any] | None:
        """The attributes of the store's ``headers/trk`` group (a TRK ingest's TrackVis
        header: ``vox_to_ras``, ``dimensions``, ``voxel_size``, ``voxel_order``, ...),
        ``None`` when it has none."""
        doc = self._io.get_json("headers/trk/zarr.json")
        if doc is None:
            return None
        header = doc.get("attributes")
        if not isinstance(header, dict):
            raise ZVFormatError(
                "headers/trk/zarr.json: field 'attributes' is not a JSON object",
                store=self.path,
            )
        return header

    @property
    def world_affine(self) -> np.ndarray:
        """``placement.affine``: the ``(ndim + 1, ndim + 1)`` store -> world matrix."""
        return self.placement.affine

    @property
    def axes(self) -> list[str]:
        """Axis names in vertex column order (e.g. ``["x", "y", "z"]``)."""
        return list(self.root.axes)

    @property
    def axis_types(self) -> list[str]:
        """Type per axis (``"space"``, ``"time"``, ``"channel"``, ...; ``"space"`` where
        undeclared), in vertex column order."""
        return list(self.root.axis_types)

    @property
    def units(self) -> list[str | None]:
        """Declared unit per axis (``None`` where undeclared)."""
        return list(self.root.units)

    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Inclusive ``(lo, hi)`` world extent from the root metadata."""
        return self.root.bounds

    @property
    def chunk_shape(self) -> np.ndarray:
        """Level-0 chunk edge per axis."""
        return self.root.chunk_shape

    @property
    def base_bin_shape(self) -> np.ndarray:
        """Level-0 bin edge (the chunk shape when the store declares none)."""
        return self.levels[0].bin_shape

    def level(self, level: int) -> LevelInfo:
        """Metadata of one level; raises ``KeyError`` naming the available levels."""
        for lv in self.levels:
            if lv.index == level:
                return lv
        raise KeyError(
            f"{self.path} has no level {level} (levels: {[lv.index for lv in self.levels]})"
        )

    def chunks(self, level: int = 0) -> np.ndarray:
        """``(K, key_ndim)`` coordinates of the level's non-empty chunks, in level order.

        For an additive level (:meth:`refinement_chain`), the chunks of its grid that hold
        any of its complete content: its own non-empty chunks and those overlapping the
        non-empty chunks of the coarser levels it adds to (some hold no own data)."""
        chain = self.refinement_chain(level)
        if len(chain) == 1:
            return self._own_chunks(level)
        with self._lock:
            if level in self._chain_chunks:
                return self._chain_chunks[level]
        info = self.level(level)
        parts = [self._own_chunks(level)]
        parts += [map_chunks(self._own_chunks(c), self.level(c), info) for c in chain[1:]]
        found = sort_chunks(unique_rows(np.concatenate(parts)))
        with self._lock:
            self._chain_chunks[level] = found
        return found

    def _own_chunks(self, level: int) -> np.ndarray:
        """The level's own non-empty chunks (listed once)."""
        self.level(level)
        with self._lock:
            if level not in self._chunk_lists:
                self._chunk_lists[level] = self.layout.list_chunks(level, "vertices")
            return self._chunk_lists[level]

    def vertex_attribute_names(self, level: int = 0) -> list[str]:
        return self.layout.list_attributes(level, "vertex")

    def _is_draco(self, level: int) -> bool:
        meta = self.layout.array_attributes(level, "vertices") or {}
        return meta.get("encoding") == "draco"

    def refinement_chain(self, level: int = 0) -> tuple[int, ...]:
        """The levels whose own data make up ``level``'s content, finest first: ``(level,)``
        unless the level is additive (``refinement: "add"``, FORMAT-NEXT §6), then
        ``level`` and the chain of ``level + 1``. :meth:`read`, :meth:`read_pieces`,
        :meth:`prefetch`, :meth:`chunks` and :meth:`object_presence` cover the whole
        chain; the object index, object attributes and ``LevelInfo.vertex_count``
        describe the level's own data."""
        self.level(level)
        return self._chains.get(level, (level,))

    @cached_property
    def parametric(self) -> Parametric:
        """Resolution-independent objects of the root ``parametric/`` group, with their
        groups and group attributes (empty when the store has none)."""
        return read_parametric(self._io)

    @property
    def parametric_objects(self) -> list[ParametricObject]:
        """Shortcut for ``parametric.objects``."""
        return self.parametric.objects
