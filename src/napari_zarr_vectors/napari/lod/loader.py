"""The worker side of level-of-detail loading: plan -> fetch chunk batches -> assemble ->
layer data. No Qt and no viewer: :class:`Loader.run` is a generator that
:mod:`.controller` runs on the plugin's worker pool (:mod:`napari_zarr_vectors.napari.tasks`), and that tests and
the reader drive synchronously (:meth:`Loader.load`).

One run, for one :class:`LoadRequest`:

1. **plan** (:mod:`.plan`): the visible box of the view, grown by :data:`.plan.MARGIN` on
   the displayed axes -> a level and the chunks intersecting the box, within the vertex
   budget. A 2-D view of a point cloud keeps only the vertices inside the slab (napari
   draws no others), so its estimate counts that part of each chunk.
2. **fetch** (:mod:`.load_steps`, as step 3): ``Store.prefetch`` in batches of
   :data:`BATCH_CHUNKS` into the shared :class:`~napari_zarr_vectors.format.cache.ChunkCache`, yielding :class:`Progress` after
   each batch (where the worker checks for cancellation). A batch that raises is retried
   chunk by chunk; a chunk that still fails is left out and reported in
   :attr:`LoadResult.failed` (the controller shows a warning), the others load.
3. **assemble** with ``Store.read(level, chunks=..., cache=...)`` (no I/O left), check the
   real vertex count against the budget (coarser level or fewer chunks when the estimate
   was low), apply the object filter, crop to the view, simplify paths to the screen when
   the view holds more than the budget (:mod:`.simplify`), cut to the budget, and build the
   layer data tuples (:func:`.build.layers_from_geometry`) -- all on the worker, so the UI
   thread only swaps arrays into existing layers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

import napari_zarr_vectors as nzv
from napari_zarr_vectors.format.cache import ChunkCache
from napari_zarr_vectors.format.geometry import PIECE_TYPES, GeometryType
from napari_zarr_vectors.napari.layerdata.build import StoreInfo
from napari_zarr_vectors.napari.layerdata.placement import Placement
from napari_zarr_vectors.napari.layerdata.store_info import store_info
from napari_zarr_vectors.napari.lod import camera, simplify, view_geometry
from napari_zarr_vectors.napari.lod import plan as lod
from napari_zarr_vectors.napari.lod.cache import StoreCacheView, shared_cache
from napari_zarr_vectors.napari.lod.load_steps import (
    PREVIEW_CHUNKS,
    READ_AHEAD,
    SIMPLIFY_WORTH_KEEP,
    LoadSteps,
    level_ids,
)
from napari_zarr_vectors.napari.lod.load_values import LoadRequest, LoadResult, Progress, ViewShare
from napari_zarr_vectors.napari.lod.settings import SMALL_STORE_ROWS
from napari_zarr_vectors.napari.tasks import run_aside

if TYPE_CHECKING:
    from napari_zarr_vectors.format.api import GeometryStore

__all__ = [
    "BATCH_CHUNKS",
    "MAX_BATCHES",
    "PREVIEW_CHUNKS",
    "LoadRequest",
    "LoadResult",
    "Loader",
    "Progress",
    "ViewShare",
]

#: chunks fetched per batch (progress is reported and cancellation checked between batches)
BATCH_CHUNKS = 16

#: a load is fetched in at most this many batches (larger batches for many chunks)
MAX_BATCHES = 8


class _LevelChunks:
    """``store.chunks`` of each of ``store.levels`` (in that order), listed on access."""

    def __init__(self, store: GeometryStore) -> None:
        self._store = store

    def __len__(self) -> int:
        return len(self._store.levels)

    def __getitem__(self, i: int) -> np.ndarray:
        return self._store.chunks(self._store.levels[i].index)


class Loader:
    """Plans and loads one store's views (thread-safe enough for one worker at a time plus
    a cancelled one finishing its batch: shared state is the cache and learnt counts)."""

    def __init__(
        self,
        store: GeometryStore,
        cache: ChunkCache | None = None,
        *,
        info_for_level: Callable[[int], StoreInfo] | None = None,
        batch_chunks: int = BATCH_CHUNKS,
    ) -> None:
        self.store = store
        self.cache = StoreCacheView(cache if cache is not None else shared_cache())
        self.batch_chunks = max(int(batch_chunks), 1)
        self._info_for_level = info_for_level
        self._infos: dict[tuple[int, bool], StoreInfo] = {}
        self._batch_override: int | None = None
        #: the steps after the plan (fetch, assemble, build), which learn from their reads
        self._steps = LoadSteps(store, self.cache, self.info)
        #: (level, chunk key) -> estimated rows of the whole chunk, learnt from reads
        self.counts = self._steps.counts
        self._lock = self._steps.lock

    # -- geometry of the store -----------------------------------------------------------
    @property
    def ndim(self) -> int:
        return int(self.store.ndim)

    def extent_napari(self) -> tuple[np.ndarray, np.ndarray]:
        """The store bounds in the world (placed by the layers' affine), napari order."""
        return self.placement.to_world_box(*self.store.bounds)

    @property
    def placement(self) -> Placement:
        """Where the store's layers put its coordinates (as the loader's layers were built:
        the Store panel's stored-space toggle opens the store again, with a new loader)."""
        return self._axes.placement

    @cached_property
    def _axes(self) -> StoreInfo:
        """The store's axes as the layers order them (no object tables read)."""
        return store_info(self.store, 0, objects=False)

    def _tracks_in_time(self) -> bool:
        """Tracks with the store's time column show tails and heads along time themselves:
        a view reads every time of their paths, not the slider's slab."""
        info = self._axes
        paths = self.store.geometry_type in PIECE_TYPES
        return bool(paths and info.n_lead and info.paths_as_tracks)

    def _whole_track_time(self, box: tuple[np.ndarray, np.ndarray]) -> None:
        """:meth:`_tracks_in_time`: the whole time range in ``box`` (in place, napari
        order)."""
        if self._tracks_in_time():
            lo, hi = self.extent_napari()
            box[0][0], box[1][0] = lo[0], hi[0]

    def _first_slab(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The store box (store order) cut, on each slider axis (non-space, scale 1), to
        the step napari's slider starts at: the middle one, ``lo + floor((hi - lo) / 2)``
        (a camera-less overview reads the chunks of one time, not of all; the first view
        of the controller then reads the slider's whole slab)."""
        info = self._axes
        lo, hi = lo.copy(), hi.copy()
        sliders: list[int] | np.ndarray = (
            [] if self._tracks_in_time() else info.order[: info.n_lead]
        )
        for axis in sliders:
            mid = lo[axis] + np.floor((hi[axis] - lo[axis]) / 2.0)
            lo[axis] = hi[axis] = mid
        return lo, hi

    def level_chunks(self) -> _LevelChunks:
        """The non-empty chunks of each level, listed when first indexed."""
        return _LevelChunks(self.store)

    # -- planning ------------------------------------------------------------------------
    def plan(
        self, request: LoadRequest
    ) -> tuple[lod.LevelPlan, tuple[np.ndarray, np.ndarray] | None]:
        """``(plan, crop)`` for a request; ``crop`` (store order) is the box the geometry is
        cut to (``None``: whole chunks, a camera-less overview)."""
        if self.shows_whole(request):
            level0 = self.store.levels[0]
            return lod.whole_plan(level0, self.level_chunks()[0]), None
        lo_s, hi_s = (np.asarray(b, dtype=np.float64) for b in self.store.bounds)
        view = request.view
        crop = None
        prism = None
        pixel = self.pixel_size(request)
        if view is None:  # the whole store, as a fitted view of OVERVIEW_PIXELS would see it
            box = self._first_slab(lo_s, hi_s)
            center = (lo_s + hi_s) / 2
        else:
            vis = camera.visible_world_box(view, self.placement, self.store.bounds)
            self._whole_track_time(vis)
            if lod.is_empty(vis):
                level = (
                    int(request.locked)
                    if request.locked is not None
                    else lod.resolution_level(self.store.levels, pixel)
                )
                return lod.LevelPlan(level, self._no_chunks(), 0), None
            grow_axes = list(view.displayed[-3:] if view.is_3d else view.displayed[-2:])
            grown = lod.snap_box(lod.grow_box(vis, grow_axes), grow_axes)
            # world boxes -> the stored space the chunks live in (the inverse placement)
            box = self.placement.to_store_box(*grown)
            placed = self.placement.affine is not None
            if self.ndim == 3 and tuple(view.displayed[-3:]) == (0, 1, 2) and not placed:
                prism = lod.Prism.of_view(view, lod.MARGIN)
            center = self.placement.to_store_points((vis[0] + vis[1]) / 2)[0]
            crop = box
        with self._lock:
            counts = dict(self.counts)
        share = self._filter_share(request)
        tolerance = self.simplify_tolerance(request)
        if tolerance > 0:  # estimates in simplified rows, as learnt at this level and band
            level = lod.resolution_level(self.store.levels, pixel)
            with self._lock:
                kept = self._steps.kept.get((level, tolerance), 1.0)
            share *= kept if kept <= SIMPLIFY_WORTH_KEEP else 1.0
        plan = lod.plan_level(
            self.store.levels,
            self.level_chunks(),
            box,
            pixel,
            request.budget,
            locked=request.locked,
            counts=counts,
            crop=crop,
            center=center,
            prism=prism,
            share=share,
        )
        return plan, crop

    def pixel_size(self, request: LoadRequest) -> float:
        """Store units one screen pixel spans in ``request``'s view (a camera-less overview:
        a fitted view of :data:`.plan.OVERVIEW_PIXELS`)."""
        if request.view is not None:
            return request.view.pixel_size / self.placement.world_units_per_store_unit
        lo, hi = (np.asarray(b, dtype=np.float64) for b in self.store.bounds)
        extent = float(np.max((hi - lo)[self._axes.space], initial=0.0))
        return extent / lod.OVERVIEW_PIXELS if extent > 0 else 1.0

    def simplify_tolerance(self, request: LoadRequest) -> float:
        """The tolerance paths of ``request``'s view may be simplified to (store units,
        :func:`.simplify.tolerance_band`), or 0: never with a locked level (Pyramid QA
        shows what a level stores), never for a store shown whole or one of at most
        :data:`.settings.SMALL_STORE_ROWS` rows (every vertex, as before), only for
        polylines and streamlines. Whether a view is simplified also depends on what it
        holds (:meth:`.load_steps.LoadSteps.simplified`)."""
        if request.locked is not None or self.store.geometry_type not in PIECE_TYPES:
            return 0.0
        rows = self.whole_rows
        if rows is None or rows <= SMALL_STORE_ROWS or self.shows_whole(request):
            return 0.0
        return simplify.tolerance_band(self.pixel_size(request))

    @property
    def whole_rows(self) -> int | None:
        """Layer rows of the whole of level 0: measured once it was read whole, estimated
        from its vertex count before (``None``: unknown)."""
        if self._steps.whole_rows is not None:
            return self._steps.whole_rows
        level0 = self.store.levels[0]
        return lod.layer_rows(self.store.geometry_type, level0.vertex_count)

    def shows_whole(self, request: LoadRequest) -> bool:
        """Whether ``request`` shows the whole of level 0, uncropped: a 3-D view (or none
        yet) whose rows fit the budget, no level locked, and every axis a space axis (slider
        axes are read a slab at a time). A 2-D view is still cut to its slab."""
        rows = self.whole_rows
        return (
            request.locked is None
            and (request.view is None or request.view.is_3d)
            and rows is not None
            and rows <= request.budget
            and self._axes.n_lead == 0
            and not self._tracks_in_time()
        )

    def _filter_share(self, request: LoadRequest) -> float:
        """The part of the objects an object filter lets through (1 without a filter)."""
        if request.allowed_ids is None or self.store.geometry_type == GeometryType.POINT_CLOUD:
            return 1.0
        total = len(level_ids(self.store, 0))
        return min(len(request.allowed_ids) / total, 1.0) if total else 1.0

    def _no_chunks(self) -> np.ndarray:
        return np.empty((0, self.store.levels[0].key_ndim), np.int64)

    @staticmethod
    def key_of(
        level: int,
        chunks: np.ndarray,
        crop: tuple[np.ndarray, np.ndarray] | None,
        allowed_ids: np.ndarray | None,
        budget: int = 0,
        tolerance: float = 0.0,
    ) -> tuple:
        """What identifies the data on screen (same key: same layer data; the object subset
        is decided by the budget from what was read, not by the plan's estimate; paths are
        simplified to ``tolerance``)."""
        chunk_key = tuple(map(tuple, np.asarray(chunks, dtype=np.int64).tolist()))
        crop_key = None
        if crop is not None:
            crop_key = tuple(np.round(np.concatenate(crop), 6).tolist())
        filt = None if allowed_ids is None else hash(np.asarray(allowed_ids).tobytes())
        return (int(level), chunk_key, crop_key, filt, int(budget), float(tolerance))

    # -- running -------------------------------------------------------------------------
    def run(
        self, request: LoadRequest, cancelled: Callable[[], bool] = lambda: False
    ) -> Generator[Progress, None, LoadResult | None]:
        """Plan, fetch (yielding :class:`Progress` per batch), assemble, cut to the view and
        the budget, and build layer data. Returns ``None`` when ``cancelled()`` turns true
        between batches."""
        layer_budget = None
        if request.fill_budget > 0 and self._fills(request):
            layer_budget = request.budget
            request = dataclasses.replace(request, budget=request.budget + request.fill_budget)
        plan, crop = self.plan(request)
        # a whole store's data does not depend on the budget, as long as it fits
        budget_key = 0 if plan.whole and layer_budget is None else request.budget
        tolerance = 0.0 if plan.whole else self.simplify_tolerance(request)
        key = self.key_of(plan.level, plan.chunks, crop, request.allowed_ids, budget_key, tolerance)
        if key == request.current_key and not request.force:
            return LoadResult(
                request.generation,
                plan.level,
                plan.chunks,
                key,
                unchanged=True,
                trimmed=plan.trimmed,
                unreadable=self.cache.unreadable_in(plan.level, plan.chunks),
                crop=crop,
            )
        failed: list[tuple[tuple[int, ...], str]] = []

        def preview(rows: np.ndarray) -> LoadResult:
            """The chunks ``plan.chunks[rows]`` fetched so far, within their estimated share
            of the budget: their path pieces (no object index needed), or their objects
            ranked below at most the plan's object fraction."""
            est = np.asarray(plan.estimates, np.float64)
            whole = float(est.sum()) if est.size == len(plan.chunks) else 0.0
            share = float(est[rows].sum()) / whole if whole > 0 else len(rows) / len(plan.chunks)
            held = request.budget if layer_budget is None else layer_budget
            cut = dataclasses.replace(request, budget=max(int(held * share), 1))
            fetched = plan.chunks[rows]  # rows ascending: plan order
            # objects read: in proportion to the share too (a small read, no whole index)
            most = min(plan.fraction, view_geometry.ladder_step(plan.fraction * share, READ_AHEAD))
            result = self._steps.result(
                cut, plan, fetched, ("preview", *key), crop, [], most, pieces, tolerance
            )
            return dataclasses.replace(
                result, share=dataclasses.replace(result.share, budget=int(held))
            )

        # paths without a filter preview their level-0 pieces (no object index needed;
        # coarse levels store a fragment per metavertex, no runs); otherwise the object
        # table (every id, for the object ranks) is read while the first batch is fetched:
        # both are needed before the first picture
        pieces = (
            request.allowed_ids is None
            and plan.level == 0
            and self.store.geometry_type in PIECE_TYPES
            and isinstance(self.store, nzv.Store)
        )
        if request.progressive and not pieces:
            self._read_table_aside(plan.level)
        # at least batch_chunks per batch, and at most MAX_BATCHES batches: small batches
        # report often, large ones let the core read many files at once
        size = self._batch_override or max(self.batch_chunks, -(-len(plan.chunks) // MAX_BATCHES))
        ok = yield from self._steps.fetch(
            request, plan, failed, cancelled, size, preview if request.progressive else None, crop
        )
        if ok is None:
            return None
        result = self._steps.result(
            request, plan, ok, key, crop, failed, tolerance=tolerance, layer_budget=layer_budget
        )
        return None if cancelled() else result

    def _fills(self, request: LoadRequest) -> bool:
        """Whether ``request``'s view may get an overview fill: polylines and streamlines,
        no locked level (Pyramid QA shows what a level holds)."""
        return request.locked is None and self.store.geometry_type in PIECE_TYPES

    def _read_table_aside(self, level: int) -> None:
        """Read the level's object table aside, on the plugin's pool (a later
        :func:`.load_steps.level_ids` waits for it instead of reading it again)."""
        if self.store.geometry_type != GeometryType.POINT_CLOUD:
            run_aside(level_ids, self.store, level)

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

    def info(self, level: int, *, objects: bool = True) -> StoreInfo:
        """What the layer builders need to know about ``level`` (cached per level);
        ``objects=False``: without object attributes and groups (which need the object
        index)."""
        if self._info_for_level is not None and objects:
            return self._info_for_level(level)
        with self._lock:
            cached = self._infos.get((level, objects))
        if cached is None:
            cached = store_info(self.store, level, lod=True, objects=objects)
            with self._lock:
                self._infos[(level, objects)] = cached
        return cached
