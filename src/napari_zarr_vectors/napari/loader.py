"""The worker side of level-of-detail loading: plan -> fetch chunk batches -> assemble ->
layer data. No Qt and no viewer: :class:`Loader.run` is a generator that
:mod:`.controller` runs on a worker thread (napari's ``thread_worker``), and that tests and
the reader drive synchronously (:meth:`Loader.load`).

One run, for one :class:`LoadRequest`:

1. **plan** (:mod:`.lod`): the visible box of the view, grown by :data:`.lod.MARGIN` on
   the displayed axes -> a level and the chunks intersecting the box, within the vertex
   budget. A 2-D view of a point cloud keeps only the vertices inside the slab (napari
   draws no others), so its estimate counts that part of each chunk.
2. **fetch**: ``Store.prefetch`` in batches of :data:`BATCH_CHUNKS` into the shared
   :class:`~napari_zarr_vectors.format.cache.ChunkCache`, yielding :class:`Progress` after
   each batch (where the worker checks for cancellation). A batch that raises is retried
   chunk by chunk; a chunk that still fails is left out and reported in
   :attr:`LoadResult.failed` (the controller shows a warning), the others load.
3. **assemble** with ``Store.read(level, chunks=..., cache=...)`` (no I/O left), check the
   real vertex count against the budget (coarser level or fewer chunks when the estimate
   was low), apply the object filter, and build the layer data tuples
   (:func:`.layers.layers_from_geometry`) -- all on the worker, so the UI thread only swaps
   arrays into existing layers.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import napari_zarr_vectors as nzv
from napari_zarr_vectors.format.cache import ChunkCache
from napari_zarr_vectors.format.geometry import Geometry

from . import lod
from .layers import LayerData, StoreInfo, layers_from_geometry

#: errors that concern the whole store, not one chunk: raised, not skipped
_FATAL = (nzv.MissingDependencyError, nzv.UnsupportedVersionError)

#: chunks fetched per batch (progress is reported and cancellation checked between batches)
BATCH_CHUNKS = 16

#: a load is fetched in at most this many batches (larger batches for many chunks)
MAX_BATCHES = 8

#: at most this many re-plans when the real vertex count exceeds the budget
MAX_REPLANS = 4

_CACHE_LOCK = threading.Lock()
_SHARED_CACHE: ChunkCache | None = None


def shared_cache() -> ChunkCache:
    """The process-wide decoded-chunk cache every store's loader shares (its byte budget is
    :func:`.settings.configure` ``cache_mb``; default 512 MiB)."""
    global _SHARED_CACHE
    with _CACHE_LOCK:
        if _SHARED_CACHE is None:
            from .settings import get_settings

            _SHARED_CACHE = ChunkCache(get_settings().cache_bytes)
        return _SHARED_CACHE


class _LevelChunks:
    """``store.chunks`` of each of ``store.levels`` (in that order), listed on access."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def __len__(self) -> int:
        return len(self._store.levels)

    def __getitem__(self, i: int) -> np.ndarray:
        return self._store.chunks(self._store.levels[i].index)


class StoreCacheView:
    """One opened store's window on the shared cache: keys are prefixed with a token of the
    :class:`Loader`, so two openings of the same path never share decoded chunks (a store
    rewritten in place between opens is read afresh), while all stores still share one byte
    budget and one LRU order. Duck-types the ``get``/``put`` the format core uses."""

    _tokens = itertools.count()

    def __init__(self, shared: ChunkCache) -> None:
        self.shared = shared
        self.token = ("nzv-loader", next(self._tokens))

    def get(self, key: Any) -> object | None:
        return self.shared.get((self.token, key))

    def put(self, key: Any, value: Any) -> None:
        self.shared.put((self.token, key), value)

    @property
    def max_bytes(self) -> int:
        return self.shared.max_bytes

    @property
    def nbytes(self) -> int:
        return self.shared.nbytes


@dataclass(frozen=True)
class LoadRequest:
    """What to load. ``view=None`` means "the whole store, as a fitted 3-D view would see
    it" (the reader's first read, before any camera exists)."""

    generation: int = 0
    view: lod.ViewState | None = None
    budget: int = lod.DEFAULT_VERTEX_BUDGET
    locked: int | None = None
    allowed_ids: np.ndarray | None = None
    #: the :attr:`LoadResult.key` on screen: a plan with the same key is not loaded again
    current_key: tuple | None = None
    force: bool = False


@dataclass(frozen=True)
class Progress:
    """Yielded after each fetched batch."""

    generation: int
    level: int
    done: int
    total: int


@dataclass
class LoadResult:
    """A finished load: the level, chunks and layer data to put on screen."""

    generation: int
    level: int
    chunks: np.ndarray  # (K, key_ndim) chunks shown
    key: tuple
    geometry: Geometry | None = None
    layer_data: list[LayerData] = field(default_factory=list)
    #: vertices the layers hold (:func:`resident_vertices`)
    vertex_count: int = 0
    #: chunks the view needed but the budget left out
    trimmed: int = 0
    #: chunks that failed to load and were left out: ``(chunk, error message)``
    failed: list[tuple[tuple[int, ...], str]] = field(default_factory=list)
    #: ``True`` when the plan equals what is on screen: nothing to update
    unchanged: bool = False
    #: the store-order crop box of a 2-D point-cloud view (``None``: whole chunks)
    crop: tuple[np.ndarray, np.ndarray] | None = None


class Loader:
    """Plans and loads one store's views (thread-safe enough for one worker at a time plus
    a cancelled one finishing its batch: shared state is the cache and learnt counts)."""

    def __init__(
        self,
        store: Any,
        cache: ChunkCache | None = None,
        *,
        info_for_level: Callable[[int], StoreInfo] | None = None,
        batch_chunks: int = BATCH_CHUNKS,
    ) -> None:
        self.store = store
        self.cache = StoreCacheView(cache if cache is not None else shared_cache())
        self.batch_chunks = max(int(batch_chunks), 1)
        self._info_for_level = info_for_level
        #: (level, chunk key) -> estimated rows of the whole chunk, learnt from reads
        self.counts: dict[tuple[int, tuple[int, ...]], float] = {}
        self._infos: dict[int, StoreInfo] = {}
        self._batch_override: int | None = None
        self._lock = threading.Lock()

    # -- geometry of the store -----------------------------------------------------------
    @property
    def ndim(self) -> int:
        return int(self.store.ndim)

    def extent_napari(self) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = (np.asarray(b, dtype=np.float64) for b in self.store.bounds)
        return lo[::-1].copy(), hi[::-1].copy()

    def level_chunks(self) -> _LevelChunks:
        """The non-empty chunks of each level, listed when first indexed."""
        return _LevelChunks(self.store)

    # -- planning ------------------------------------------------------------------------
    def plan(
        self, request: LoadRequest, min_level: int | None = None
    ) -> tuple[lod.LevelPlan, tuple[np.ndarray, np.ndarray] | None]:
        """``(plan, crop)`` for a request; ``crop`` (store order) is the part of the chunks
        the layers keep (2-D point-cloud slab), ``None`` for whole chunks."""
        lo_s, hi_s = (np.asarray(b, dtype=np.float64) for b in self.store.bounds)
        view = request.view
        crop = None
        prism = None
        if view is None:
            if min_level is None and request.locked is None:
                return self._overview_plan(request), None
            box = (lo_s, hi_s)
            pixel = float(np.max(hi_s - lo_s)) / 1000.0 if np.all(hi_s > lo_s) else 1.0
            center = (lo_s + hi_s) / 2
        else:
            vis = lod.visible_box(view, *self.extent_napari())
            pixel = view.pixel_size
            if lod.is_empty(vis):
                plan = lod.LevelPlan(self._zoom_level(pixel, request), self._no_chunks(), 0)
                return plan, None
            grow_axes = list(view.displayed[-3:] if view.is_3d else view.displayed[-2:])
            box = lod.to_store(lod.grow_box(vis, grow_axes))
            if self.ndim == 3 and tuple(view.displayed[-3:]) == (0, 1, 2):
                prism = lod.Prism.of_view(view, lod.MARGIN)
            center = lod.to_store(((vis[0] + vis[1]) / 2, (vis[0] + vis[1]) / 2))[0]
            if self.store.geometry_type == "point_cloud" and not view.is_3d:
                c_lo, c_hi = np.full(self.ndim, -np.inf), np.full(self.ndim, np.inf)
                for axis in range(self.ndim):
                    if axis not in grow_axes:
                        c_lo[axis], c_hi[axis] = vis[0][axis], vis[1][axis]
                crop = lod.to_store((c_lo, c_hi))
        with self._lock:
            counts = dict(self.counts)
        plan = lod.plan_level(
            self.store.levels,
            self.level_chunks(),
            box,
            pixel,
            request.budget,
            locked=request.locked,
            min_level=min_level,
            counts=counts,
            crop=crop,
            center=center,
            prism=prism,
        )
        return plan, crop

    def _overview_plan(self, request: LoadRequest) -> lod.LevelPlan:
        """The whole store without a camera: :func:`.lod.initial_level` from the levels'
        vertex counts (no listing of the other levels), all chunks of that level, the
        chunks nearest the centre when even the coarsest level exceeds the budget."""
        level = lod.initial_level(self.store.levels, request.budget)
        info = self.store.level(level)
        chunks = self.store.chunks(level)
        with self._lock:
            known = {k[1]: v for k, v in self.counts.items() if k[0] == level}
        est = lod.chunk_estimates(info, chunks, len(chunks), known)
        lo, hi = (np.asarray(b, dtype=np.float64) for b in self.store.bounds)
        kept, kept_est = lod.trim_to_budget(
            chunks, est, np.asarray(info.chunk_shape), (lo + hi) / 2, request.budget
        )
        return lod.LevelPlan(
            level,
            kept,
            int(round(float(kept_est.sum()))),
            trimmed=len(chunks) - len(kept),
            estimates=kept_est,
        )

    def _zoom_level(self, pixel: float, request: LoadRequest) -> int:
        if request.locked is not None:
            return int(request.locked)
        fine = [
            lv.index
            for lv in self.store.levels
            if float(np.max(lv.bin_shape)) <= lod.MAX_BIN_PIXELS * pixel
        ]
        return int(max(fine)) if fine else int(min(lv.index for lv in self.store.levels))

    def _no_chunks(self) -> np.ndarray:
        return np.empty((0, self.store.levels[0].key_ndim), np.int64)

    @staticmethod
    def key_of(
        level: int,
        chunks: np.ndarray,
        crop: tuple[np.ndarray, np.ndarray] | None,
        allowed_ids: np.ndarray | None,
    ) -> tuple:
        """What identifies the data on screen (same key: same layer data)."""
        chunk_key = tuple(map(tuple, np.asarray(chunks, dtype=np.int64).tolist()))
        crop_key = None
        if crop is not None:
            crop_key = tuple(np.round(np.concatenate(crop), 6).tolist())
        filt = None if allowed_ids is None else hash(np.asarray(allowed_ids).tobytes())
        return (int(level), chunk_key, crop_key, filt)

    # -- running -------------------------------------------------------------------------
    def run(
        self, request: LoadRequest, cancelled: Callable[[], bool] = lambda: False
    ) -> Generator[Progress, None, LoadResult | None]:
        """Plan, fetch (yielding :class:`Progress` per batch), assemble and build layer data.
        Returns ``None`` when ``cancelled()`` turns true between batches."""
        plan, crop = self.plan(request)
        failed: list[tuple[tuple[int, ...], str]] = []
        coarsest = max(lv.index for lv in self.store.levels)
        for attempt in range(MAX_REPLANS + 1):
            key = self.key_of(plan.level, plan.chunks, crop, request.allowed_ids)
            if key == request.current_key and not request.force:
                return LoadResult(
                    request.generation,
                    plan.level,
                    plan.chunks,
                    key,
                    unchanged=True,
                    trimmed=plan.trimmed,
                    crop=crop,
                )
            ok = yield from self._fetch(request, plan, failed, cancelled)
            if ok is None:
                return None
            geometry = self._read(plan.level, ok, crop)
            self._learn(plan.level, geometry, crop)
            resident = resident_vertices(geometry)
            if resident <= request.budget or attempt == MAX_REPLANS:
                break
            # the estimate was low: a coarser level, else fewer chunks (learnt counts)
            if request.locked is None and plan.level < coarsest:
                plan, crop = self.plan(request, min_level=plan.level + 1)
            else:
                shrink = request.budget / max(resident, 1) if attempt else 1.0
                plan = self._trim_by_counts(plan, crop, request, shrink)
        if cancelled():
            return None
        if request.allowed_ids is not None:
            geometry = filter_geometry(geometry, request.allowed_ids)
            resident = resident_vertices(geometry)
        layer_data = layers_from_geometry(geometry, self.info(plan.level), bounds_layer=False)
        return LoadResult(
            request.generation,
            plan.level,
            ok,
            key,
            geometry=geometry,
            layer_data=layer_data,
            vertex_count=resident,
            trimmed=plan.trimmed,
            failed=failed,
            crop=crop,
        )

    def load(self, request: LoadRequest) -> LoadResult | None:
        """Run synchronously, fetching every chunk in one batch (nothing to report between
        batches; one large batch lets the core read local files in parallel)."""
        batch, self._batch_override = self._batch_override, 1 << 30
        try:
            gen = self.run(request)
            while True:
                try:
                    next(gen)
                except StopIteration as stop:
                    return stop.value
        finally:
            self._batch_override = batch

    # -- steps ---------------------------------------------------------------------------
    def _fetch(
        self,
        request: LoadRequest,
        plan: lod.LevelPlan,
        failed: list[tuple[tuple[int, ...], str]],
        cancelled: Callable[[], bool],
    ) -> Generator[Progress, None, np.ndarray | None]:
        chunks = np.asarray(plan.chunks, dtype=np.int64)
        total = len(chunks)
        yield Progress(request.generation, plan.level, 0, total)
        bad = {c for c, _ in failed}
        # at least batch_chunks per batch, and at most MAX_BATCHES batches: small batches
        # report often, large ones let the core read many files at once
        size = self._batch_override or max(self.batch_chunks, -(-total // MAX_BATCHES))
        for start in range(0, total, size):
            if cancelled():
                return None
            batch = chunks[start : start + size]
            try:
                self.store.prefetch(plan.level, batch, self.cache)
            except _FATAL:
                raise
            except Exception:  # noqa: BLE001 - isolate the failing chunk(s)
                for c in batch:
                    try:
                        self.store.prefetch(plan.level, c[None, :], self.cache)
                    except _FATAL:
                        raise
                    except Exception as exc:  # noqa: BLE001
                        key = tuple(int(v) for v in c)
                        bad.add(key)
                        failed.append((key, f"{type(exc).__name__}: {exc}"))
            yield Progress(request.generation, plan.level, min(start + len(batch), total), total)
        if cancelled():
            return None
        if not bad:
            return chunks
        keep = [i for i, c in enumerate(chunks.tolist()) if tuple(c) not in bad]
        return chunks[keep]

    def _read(
        self, level: int, chunks: np.ndarray, crop: tuple[np.ndarray, np.ndarray] | None
    ) -> Geometry:
        bbox = None
        if crop is not None and len(chunks):
            info = self.store.level(level)
            edge = np.asarray(info.chunk_shape, dtype=np.float64)
            spatial = np.asarray(chunks, dtype=np.int64)[:, -self.ndim :]
            c_lo = spatial.min(axis=0) * edge
            c_hi = (spatial.max(axis=0) + 1) * edge
            lo = np.where(np.isfinite(crop[0]), crop[0], c_lo)
            hi = np.where(np.isfinite(crop[1]), crop[1], c_hi)
            bbox = (lo, np.maximum(hi, lo))
        return self.store.read(level, bbox=bbox, chunks=chunks, cache=self.cache)

    def _learn(
        self, level: int, geometry: Geometry, crop: tuple[np.ndarray, np.ndarray] | None
    ) -> None:
        """Remember per-chunk row counts (scaled up from a crop) for later estimates."""
        info = self.store.level(level)
        if info.key_ndim != self.ndim or not geometry.vertex_count or geometry.chunks is None:
            return
        edge = np.asarray(info.chunk_shape, dtype=np.float64)
        loaded = np.asarray(geometry.chunks, dtype=np.int64).reshape(-1, self.ndim)
        if not len(loaded):
            return
        # count rows per chunk through linear chunk indices (a row-wise np.unique sorts a
        # void view and holds the GIL ~1 us per row: the UI thread would stall)
        keys = np.floor(geometry.positions / edge).astype(np.int64)
        base = np.minimum(keys.min(axis=0), loaded.min(axis=0))
        dims = np.maximum(keys.max(axis=0), loaded.max(axis=0)) - base + 1
        rows = np.bincount(
            np.ravel_multi_index((keys - base).T, dims), minlength=int(np.prod(dims))
        )
        at = np.ravel_multi_index((loaded - base).T, dims)
        found = dict(zip(map(tuple, loaded.tolist()), rows[at].tolist(), strict=True))
        frac = lod.crop_fraction(loaded, edge, crop)
        with self._lock:
            for c, f in zip(map(tuple, loaded.tolist()), frac.tolist(), strict=True):
                if f >= 0.05:
                    self.counts[(level, c)] = found.get(c, 0) / f

    def _trim_by_counts(
        self,
        plan: lod.LevelPlan,
        crop: tuple[np.ndarray, np.ndarray] | None,
        request: LoadRequest,
        shrink: float = 1.0,
    ) -> lod.LevelPlan:
        """The plan's chunks re-estimated with learnt counts and trimmed to the budget
        (times ``shrink`` when an earlier trim still came out too big)."""
        info = self.store.level(plan.level)
        with self._lock:
            known = {k[1]: v for k, v in self.counts.items() if k[0] == plan.level}
        est = lod.chunk_estimates(
            info, plan.chunks, len(self.store.chunks(plan.level)), known, crop
        )
        # a little headroom: learnt counts are exact for whole chunks, not for crops
        budget = int(request.budget * shrink * (0.95 if crop is not None else 1.0))
        center = None
        if request.view is not None:
            vis = lod.visible_box(request.view, *self.extent_napari())
            center = lod.to_store(((vis[0] + vis[1]) / 2, (vis[0] + vis[1]) / 2))[0]
        kept, kept_est = lod.trim_to_budget(
            plan.chunks, est, np.asarray(info.chunk_shape), center, budget
        )
        return lod.LevelPlan(
            plan.level,
            kept,
            int(round(float(kept_est.sum()))),
            trimmed=plan.trimmed + len(plan.chunks) - len(kept),
            estimates=kept_est,
        )

    def info(self, level: int) -> StoreInfo:
        """What the layer builders need to know about ``level`` (cached per level)."""
        if self._info_for_level is not None:
            return self._info_for_level(level)
        with self._lock:
            cached = self._infos.get(level)
        if cached is None:
            from .reader import store_info

            cached = store_info(self.store, level, lod=True)
            with self._lock:
                self._infos[level] = cached
        return cached


def resident_vertices(geometry: Geometry) -> int:
    """Vertices the layers will hold: the rows of the paths for path types (coarse levels
    share metavertices between objects, and each path holds its own copy), else the
    geometry's vertices."""
    n = geometry.vertex_count
    if geometry.paths:
        n = max(n, int(sum(len(p) for p in geometry.paths)))
    return int(n)


# --------------------------------------------------------------------------------------------
# object filter
# --------------------------------------------------------------------------------------------


def filter_geometry(geometry: Geometry, allowed_ids: np.ndarray) -> Geometry:
    """Only the objects ``allowed_ids``: paths by their object id, vertices by theirs, edges
    and faces whose vertices all stay; rows are compacted. Stores without object ids are
    returned unchanged."""
    allowed = np.unique(np.asarray(allowed_ids, dtype=np.int64).ravel())
    n = geometry.vertex_count
    if geometry.vertex_object_ids is None and not geometry.paths:
        return geometry
    if geometry.paths:
        path_ids = np.asarray(geometry.path_object_ids, dtype=np.int64)
        keep_path = np.isin(path_ids, allowed)
        paths = [
            np.asarray(p, np.int64) for p, k in zip(geometry.paths, keep_path, strict=True) if k
        ]
        keep = np.zeros(n, bool)
        if paths:
            keep[np.concatenate(paths)] = True
    else:
        keep_path = None
        paths = []
        keep = np.isin(np.asarray(geometry.vertex_object_ids, dtype=np.int64), allowed)
    remap = np.full(n, -1, dtype=np.int64)
    remap[keep] = np.arange(int(keep.sum()))
    edges = np.asarray(geometry.edges, dtype=np.int64).reshape(-1, 2)
    edge_keep = keep[edges].all(axis=1) if len(edges) else np.zeros(0, bool)
    faces = np.asarray(geometry.faces, dtype=np.int64).reshape(-1, 3)
    face_keep = keep[faces].all(axis=1) if len(faces) else np.zeros(0, bool)
    return Geometry(
        geometry_type=geometry.geometry_type,
        level=geometry.level,
        positions=geometry.positions[keep],
        vertex_attributes={k: np.asarray(v)[keep] for k, v in geometry.vertex_attributes.items()},
        vertex_object_ids=(
            None
            if geometry.vertex_object_ids is None
            else np.asarray(geometry.vertex_object_ids)[keep]
        ),
        edges=remap[edges[edge_keep]],
        edge_attributes={k: np.asarray(v)[edge_keep] for k, v in geometry.edge_attributes.items()},
        faces=remap[faces[face_keep]],
        paths=[remap[p] for p in paths],
        path_object_ids=(
            np.asarray(geometry.path_object_ids)[keep_path]
            if keep_path is not None
            else geometry.path_object_ids
        ),
        chunks=geometry.chunks,
    )
