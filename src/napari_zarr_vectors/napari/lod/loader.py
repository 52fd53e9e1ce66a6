"""The worker side of level-of-detail loading: plan -> fetch chunk batches -> assemble ->
layer data. No Qt and no viewer: :class:`Loader.run` is a generator that
:mod:`.controller` runs on the plugin's worker pool (:mod:`napari_zarr_vectors.napari.tasks`), and that tests and
the reader drive synchronously (:meth:`Loader.load`).

One run, for one :class:`LoadRequest`:

1. **plan** (:mod:`.plan`): the visible box of the view, grown by :data:`.plan.MARGIN` on
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
   was low), apply the object filter, crop to the view, simplify paths to the screen when
   the view holds more than the budget (:mod:`.simplify`), cut to the budget, and build the
   layer data tuples (:func:`.build.layers_from_geometry`) -- all on the worker, so the UI
   thread only swaps arrays into existing layers.
"""

from __future__ import annotations

import dataclasses
import threading
import warnings
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

import napari_zarr_vectors as nzv
from napari_zarr_vectors.format.cache import ChunkCache
from napari_zarr_vectors.format.geometry import PIECE_TYPES, Geometry, GeometryType
from napari_zarr_vectors.napari.layerdata.build import LayerData, StoreInfo, layers_from_geometry
from napari_zarr_vectors.napari.layerdata.placement import Placement
from napari_zarr_vectors.napari.layerdata.store_info import store_info
from napari_zarr_vectors.napari.lod import camera, simplify, view_geometry
from napari_zarr_vectors.napari.lod import plan as lod
from napari_zarr_vectors.napari.lod.cache import StoreCacheView, shared_cache
from napari_zarr_vectors.napari.lod.settings import SMALL_STORE_ROWS
from napari_zarr_vectors.napari.tasks import run_aside

if TYPE_CHECKING:
    from napari_zarr_vectors.format.api import GeometryStore

#: errors that concern the whole store, not one chunk: raised, not skipped
_FATAL = (nzv.MissingDependencyError, nzv.UnsupportedVersionError)

#: chunks fetched per batch (progress is reported and cancellation checked between batches)
BATCH_CHUNKS = 16

#: a load is fetched in at most this many batches (larger batches for many chunks)
MAX_BATCHES = 8

#: a first load's preview comes from a first batch of this many chunks, the nearest the view
#: centre (the 2 x 2 x 2 around it): small enough to be drawn about as fast as a plain layer
#: of the budget's size is built (benchmarks/bench_scale.py, docs/level-of-detail.md)
PREVIEW_CHUNKS = 8

#: at most this many re-reads (from the cache) when everything a subset read found fits
MAX_REREADS = 2

#: a subset read takes this many ladder steps more than the estimate asks for, so that the
#: budget, not the estimate, decides what is shown
READ_AHEAD = 2

#: a level and zoom band where simplifying paths kept more than this part of their rows is
#: not simplified again: the pass (~0.6 s per million vertices on the worker here) would
#: buy next to nothing (deep zooms, where a pixel is far below the vertex spacing)
SIMPLIFY_WORTH_KEEP = 0.9


class _LevelChunks:
    """``store.chunks`` of each of ``store.levels`` (in that order), listed on access."""

    def __init__(self, store: GeometryStore) -> None:
        self._store = store

    def __len__(self) -> int:
        return len(self._store.levels)

    def __getitem__(self, i: int) -> np.ndarray:
        return self._store.chunks(self._store.levels[i].index)


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
    #: nothing is on screen yet: a load of several batches first shows a preview built
    #: from its first batch (the chunks nearest the view centre), see :attr:`Progress.preview`
    progressive: bool = False
    #: vertices beyond ``budget`` that an overview fill may draw (:mod:`.overview_fill`):
    #: the streamlines ranked next, drawn but not held by the layer (polylines and
    #: streamlines without a locked level; 0: none)
    fill_budget: int = 0


@dataclass(frozen=True)
class Progress:
    """Yielded after each fetched batch."""

    generation: int
    level: int
    done: int
    total: int
    #: a progressive load's first picture: its first batch, within the batch's estimated
    #: share of the budget (the final result replaces it); for polylines and streamlines at
    #: level 0 without an object filter, their path pieces (:meth:`Loader._pieces`)
    preview: LoadResult | None = None


@dataclass(frozen=True)
class ViewShare:
    """What part of a view the layers show: the object subset (:mod:`.view_geometry`) and
    what the budget left out."""

    #: objects ranked below it are shown; 1 = every object in view
    fraction: float = 1.0
    #: what the subset counts ("objects", "vertices" for point clouds, "pieces" for a
    #: preview of path pieces) and how many of them the view holds (estimated from the part
    #: read when ``fraction < 1``; 0 when unknown) / shows
    item_kind: str = "objects"
    items_in_view: int = 0
    items_shown: int = 0
    #: vertices the layers would hold with every object in view (estimated likewise) / hold
    vertices_in_view: int = 0
    vertices_shown: int = 0
    #: the vertex budget the load was cut to
    budget: int = 0
    #: the counts are exact (every object in view was read), not scaled up from a part
    exact: bool = False
    #: paths were simplified to the screen (:mod:`.simplify`) with this tolerance (store
    #: units; 0: every stored vertex is drawn), keeping this part of the vertices in view
    simplify_tolerance: float = 0.0
    simplified_keep: float = 1.0
    #: of ``items_shown`` / beyond ``vertices_shown``: the objects and vertices an overview
    #: fill draws (:mod:`.overview_fill`: drawn, not held by the layers: not picked, not in
    #: their features), and the fraction the layers alone show
    items_filled: int = 0
    vertices_filled: int = 0
    layer_fraction: float = 1.0

    @property
    def left_out(self) -> int:
        """Vertices of the view the budget left out (estimated)."""
        return max(
            int(self.vertices_in_view) - int(self.vertices_shown) - int(self.vertices_filled), 0
        )

    def without_fill(self) -> ViewShare:
        """The share when no fill is drawn: what the layers hold."""
        if not self.items_filled and not self.vertices_filled:
            return self
        return dataclasses.replace(
            self,
            fraction=self.layer_fraction,
            items_shown=self.items_shown - self.items_filled,
            items_filled=0,
            vertices_filled=0,
        )

    def describe(self, label: str) -> str:
        """``"showing 1 of 5 skeletons in view (...)"`` when the counts are exact,
        ``"showing 1,105 of ~200,000 streamlines in view (0.55%; ...)"`` when estimated (a
        percentage only of many), with how many of them the layers hold when an overview
        fill draws the rest; empty when the layers show all. ``label`` names the store's
        objects. (The vertices left out are in :meth:`as_metadata`.)"""
        if self.item_kind == "pieces":
            return f"a first look: pieces of the {label} in the chunks read so far"
        pickable = ""
        if self.items_filled:
            held = self.items_shown - self.items_filled
            pickable = f"{held:,} of them pickable, the rest drawn once the view is still"
        if self.fraction >= 1.0:
            return (
                f"showing all {self.items_shown:,} {label} in view ({pickable})" if pickable else ""
            )
        noun = "points" if self.item_kind == "vertices" else label
        about = "" if self.exact else "~"
        pct = 100.0 * self.items_shown / max(self.items_in_view, 1)
        share = f"{pct:.2g}%; " if pct < 10 else f"{pct:.0f}%; "
        if self.items_in_view < 1000:
            share = ""
        if pickable:
            share += f"{pickable}; "
        return (
            f"showing {self.items_shown:,} of {about}{self.items_in_view:,} {noun} in view "
            f"({share}zoom in, or raise Detail in the Store panel, for more)"
        )

    def as_metadata(self) -> dict[str, Any]:
        """The figures layers carry in ``metadata["zarr_vectors"]``."""
        return {
            "shown_fraction": float(self.fraction),
            "subset_of": self.item_kind,
            "items_in_view": int(self.items_in_view),
            "items_shown": int(self.items_shown),
            "items_filled": int(self.items_filled),
            "vertices_filled": int(self.vertices_filled),
            "vertices_in_view": int(self.vertices_in_view),
            "vertices_left_out": int(self.left_out),
            "loaded_budget": int(self.budget),
            "simplified": bool(self.simplify_tolerance > 0),
            "simplify_tolerance": float(self.simplify_tolerance),
            "simplified_keep": float(self.simplified_keep),
        }

    @property
    def simplified_note(self) -> str:
        """``"paths simplified to the screen (41% of their vertices)"`` when they were,
        else empty."""
        if self.simplify_tolerance <= 0:
            return ""
        return (
            f"paths simplified to the screen ({100 * self.simplified_keep:.2g}% of their vertices)"
        )


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
    #: chunks left out because their bytes do not decode, on every load that needs them
    #: (the core warns only the first time): ``(chunk, stored file)``
    unreadable: list[tuple[tuple[int, ...], str]] = field(default_factory=list)
    #: ``True`` when the plan equals what is on screen: nothing to update
    unchanged: bool = False
    #: the store-order box the geometry was cropped to (``None``: whole chunks)
    crop: tuple[np.ndarray, np.ndarray] | None = None
    #: what part of the view the layers show (the object subset, what was left out)
    share: ViewShare = field(default_factory=lambda: ViewShare())
    #: the overview fill's Tracks layer data (:attr:`LoadRequest.fill_budget`; ``None``: none)
    fill: LayerData | None = None


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
        #: (level, chunk key) -> estimated rows of the whole chunk, learnt from reads
        self.counts: dict[tuple[int, tuple[int, ...]], float] = {}
        self._infos: dict[tuple[int, bool], StoreInfo] = {}
        #: layer rows of the whole of level 0, once a whole plan read it all
        self._whole_rows: int | None = None
        self._batch_override: int | None = None
        #: (level, tolerance) -> part of the cropped view's path rows simplification kept,
        #: learnt from reads: the plan's estimates count simplified rows
        self._kept: dict[tuple[int, float], float] = {}
        self._lock = threading.Lock()
        self._nonfinite_warned = False

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
                kept = self._kept.get((level, tolerance), 1.0)
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
        holds (:meth:`_simplified`)."""
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
        if self._whole_rows is not None:
            return self._whole_rows
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
        total = len(self._level_ids(0))
        return min(len(request.allowed_ids) / total, 1.0) if total else 1.0

    def _level_ids(self, level: int) -> np.ndarray:
        try:
            return np.asarray(self.store.object_ids(level), dtype=np.int64)
        except nzv.ZVError:
            return np.empty(0, np.int64)

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
            result = self._result(
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
        ok = yield from self._fetch(
            request, plan, failed, cancelled, preview if request.progressive else None, crop
        )
        if ok is None:
            return None
        result = self._result(
            request, plan, ok, key, crop, failed, tolerance=tolerance, layer_budget=layer_budget
        )
        return None if cancelled() else result

    def _fills(self, request: LoadRequest) -> bool:
        """Whether ``request``'s view may get an overview fill: polylines and streamlines,
        no locked level (Pyramid QA shows what a level holds)."""
        return request.locked is None and self.store.geometry_type in PIECE_TYPES

    def _result(
        self,
        request: LoadRequest,
        plan: lod.LevelPlan,
        chunks: np.ndarray,
        key: tuple,
        crop: tuple[np.ndarray, np.ndarray] | None,
        failed: list[tuple[tuple[int, ...], str]],
        max_fraction: float = 1.0,
        pieces: bool = False,
        tolerance: float = 0.0,
        layer_budget: int | None = None,
    ) -> LoadResult:
        """Assemble fetched ``chunks`` into layer data within ``request.budget``, showing at
        most ``max_fraction`` of the objects (``pieces``: their path pieces instead,
        :meth:`_pieces`, never simplified), paths simplified to ``tolerance`` when the view
        holds more than the budget (:meth:`_simplified`). With ``layer_budget`` the layers
        hold the objects ranked lowest within it and the rest of the subset is the overview
        fill (:attr:`LoadResult.fill`)."""
        fill = None
        if pieces:
            geometry, share = self._pieces(request, plan, chunks, crop)
        else:
            subset, fraction, read, simplified = self._assemble(
                plan, chunks, crop, request, max_fraction, tolerance
            )
            held, fill = _split_fill(subset, layer_budget)
            geometry = held.geometry
            scale = 1.0 / read if read > 0 else 1.0
            share = ViewShare(
                fraction=fraction,
                item_kind=subset.kind,
                items_in_view=int(round(subset.items_in_view * scale)),
                items_shown=subset.items_shown,
                vertices_in_view=int(round(subset.vertices_in_view * scale)),
                vertices_shown=held.vertices_shown,
                budget=int(request.budget if layer_budget is None else layer_budget),
                exact=read >= 1.0,
                simplify_tolerance=simplified.tolerance,
                simplified_keep=simplified.rows_after / max(simplified.rows_before, 1),
                items_filled=subset.items_shown - held.items_shown,
                vertices_filled=subset.vertices_shown - held.vertices_shown,
                layer_fraction=min(held.fraction, fraction),
            )
            if plan.whole and request.allowed_ids is None and not failed:
                self._whole_rows = int(subset.vertices_in_view)
        info = self.info(plan.level, objects=not pieces)
        fill_data = None
        if fill is not None:
            built = layers_from_geometry(fill, info, bounds_layer=False)
            fill_data = next((item for item in built if item[2] == "tracks"), None)
        return LoadResult(
            request.generation,
            plan.level,
            chunks,
            key,
            geometry=geometry,
            layer_data=layers_from_geometry(geometry, info, bounds_layer=False),
            vertex_count=share.vertices_shown,
            trimmed=plan.trimmed,
            failed=list(failed),
            unreadable=self.cache.unreadable_in(plan.level, chunks),
            crop=crop,
            share=share,
            fill=fill_data,
        )

    def _pieces(
        self,
        request: LoadRequest,
        plan: lod.LevelPlan,
        chunks: np.ndarray,
        crop: tuple[np.ndarray, np.ndarray] | None,
    ) -> tuple[Geometry, ViewShare]:
        """A quick look at ``chunks``: their path pieces (:meth:`.Store.read_pieces`, no
        object index) ranked below a little more than the plan's object fraction (what
        :meth:`_assemble` reads), lowest ranks first within ``request.budget``, cropped to
        the view. Objects are unknown (id -1): nothing to pick, filter or colour by object
        until the whole view replaces it (the worker reads the object index meanwhile)."""
        fraction = view_geometry.ladder_step(min(float(plan.fraction), 1.0), READ_AHEAD)
        pieces = self.store.read_pieces(
            plan.level,
            chunks,
            fraction=fraction,
            bbox=crop,  # type: ignore[arg-type]  # (lo, hi) arrays: the core takes array-likes
            max_vertices=request.budget,
            cache=self.cache,  # type: ignore[arg-type]  # duck-types the core's ChunkCache
        )
        geometry = view_geometry.pieces_to_budget(self._drawable(pieces), crop, request.budget)
        shown = view_geometry.resident_vertices(geometry)
        share = ViewShare(
            fraction=fraction,
            item_kind="pieces",
            items_shown=len(geometry.paths),
            vertices_shown=shown,
            budget=int(request.budget),
        )
        return geometry, share

    def _assemble(
        self,
        plan: lod.LevelPlan,
        chunks: np.ndarray,
        crop: tuple[np.ndarray, np.ndarray] | None,
        request: LoadRequest,
        max_fraction: float = 1.0,
        tolerance: float = 0.0,
    ) -> tuple[view_geometry.Subset, float, float, simplify.Simplified]:
        """Read a little more than the planned object fraction of ``chunks``, crop it to the
        view, simplify its paths to ``tolerance`` when it holds more than the budget
        (:meth:`_simplified`) and cut it to the budget exactly
        (:func:`.view_geometry.subset_to_budget`).

        The fraction shown is then the same whatever the estimate was: the largest ladder
        step whose objects fit, chosen among objects that were all read. When everything
        read fits, the objects ranked next may fit too: read again with a larger fraction
        (from the cache). Returns the subset, the fraction shown, the fraction read and the
        simplification."""
        by_object = self.store.geometry_type != GeometryType.POINT_CLOUD
        ids = self._level_ids(plan.level) if by_object else np.empty(0, np.int64)
        if request.allowed_ids is not None and len(ids):
            ids = ids[np.isin(ids, request.allowed_ids)]
        ranks = view_geometry.object_rank(ids) if len(ids) else None
        if ranks is None:
            fraction = 1.0
        else:
            fraction = min(view_geometry.ladder_step(plan.fraction, READ_AHEAD), max_fraction)
        for attempt in range(MAX_REREADS + 1):
            wanted = request.allowed_ids if by_object else None
            if ranks is not None and fraction < 1.0:
                wanted = ids[ranks < fraction]
            geometry = self._drawable(
                self.store.read(plan.level, chunks=chunks, object_ids=wanted, cache=self.cache)  # type: ignore[arg-type]  # the cache view duck-types the core's ChunkCache
            )
            self._learn(plan.level, geometry, fraction)
            if request.allowed_ids is not None and ranks is None:
                geometry = view_geometry.filter_geometry(geometry, request.allowed_ids)
            if crop is not None:
                geometry = view_geometry.crop_geometry(geometry, crop)
            simplified = self._simplified(geometry, tolerance, request.budget, plan.level)
            subset = view_geometry.subset_to_budget(simplified.geometry, request.budget)
            if subset.fraction < 1.0:  # cut among objects that were all read: exact
                return subset, subset.fraction, fraction, simplified
            if fraction >= max_fraction or attempt == MAX_REREADS:
                break
            shown = max(subset.vertices_shown, 1)
            fraction = min(
                max(
                    view_geometry.ladder_floor(fraction * request.budget / shown),
                    view_geometry.ladder_step(fraction, 1),
                ),
                max_fraction,
            )
        return subset, fraction, fraction, simplified

    def _simplified(
        self, geometry: Geometry, tolerance: float, budget: int, level: int
    ) -> simplify.Simplified:
        """``geometry``'s paths simplified to ``tolerance`` (:mod:`.simplify`) when they hold
        more rows than ``budget`` (a view that fits shows every vertex), unless the pass
        kept more than :data:`SIMPLIFY_WORTH_KEEP` of the rows at this level and tolerance
        before. The part kept is learnt for the plan's estimates."""
        rows = view_geometry.resident_vertices(geometry)
        unchanged = simplify.Simplified(geometry, 0.0, rows, rows)
        if tolerance <= 0 or rows <= budget or not simplify.simplifiable(geometry):
            return unchanged
        with self._lock:
            kept = self._kept.get((level, tolerance), 0.0)
        if kept > SIMPLIFY_WORTH_KEEP:
            return unchanged
        out = simplify.simplify_geometry(geometry, tolerance)
        with self._lock:
            self._kept[(level, tolerance)] = out.rows_after / max(out.rows_before, 1)
        return out

    def _drawable(self, geometry: Geometry) -> Geometry:
        """``geometry`` without vertices at NaN or infinite coordinates, with one warning
        per store (:func:`.view_geometry.finite_geometry`)."""
        geometry, dropped = view_geometry.finite_geometry(geometry)
        if dropped and not self._nonfinite_warned:
            self._nonfinite_warned = True
            message = view_geometry.nonfinite_message(self.store.name, geometry.level, dropped)
            warnings.warn(message, stacklevel=2)
        return geometry

    def _read_table_aside(self, level: int) -> None:
        """Read the level's object table aside, on the plugin's pool (a later
        :meth:`_level_ids` waits for it instead of reading it again)."""
        if self.store.geometry_type != GeometryType.POINT_CLOUD:
            run_aside(self._level_ids, level)

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
        preview: Callable[[np.ndarray], LoadResult] | None = None,
        crop: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> Generator[Progress, None, np.ndarray | None]:
        """Fetch the plan's chunks in batches, nearest the view centre first, yielding
        :class:`Progress` after each; with ``preview``, the first of several batches also
        carries ``preview(rows fetched)``. Returns the chunks that loaded (plan order)."""
        chunks = np.asarray(plan.chunks, dtype=np.int64)
        total = len(chunks)
        yield Progress(request.generation, plan.level, 0, total)
        bad = {c for c, _ in failed}
        # at least batch_chunks per batch, and at most MAX_BATCHES batches: small batches
        # report often, large ones let the core read many files at once
        size = self._batch_override or max(self.batch_chunks, -(-total // MAX_BATCHES))
        order = self._centre_out(plan.level, chunks, crop)
        # a preview comes from a first batch of PREVIEW_CHUNKS, the nearest the centre
        first = min(PREVIEW_CHUNKS, size) if preview is not None and total > size else size
        starts = [0, *range(first, total, size)]
        for start, end in zip(starts, [*starts[1:], total], strict=True):
            if cancelled():
                return None
            batch = chunks[order[start:end]]
            try:
                self.store.prefetch(plan.level, batch, self.cache)  # type: ignore[arg-type]
            except _FATAL:
                raise
            except Exception:  # noqa: BLE001 - isolate the failing chunk(s)
                for c in batch:
                    try:
                        self.store.prefetch(plan.level, c[None, :], self.cache)  # type: ignore[arg-type]
                    except _FATAL:
                        raise
                    except Exception as exc:  # noqa: BLE001
                        key = tuple(int(v) for v in c)
                        bad.add(key)
                        failed.append((key, f"{type(exc).__name__}: {exc}"))
            shown = None
            if preview is not None and start == 0 and end < total and not cancelled():
                rows = np.sort(order[:end])
                ok = [r for r in rows.tolist() if tuple(chunks[r].tolist()) not in bad]
                shown = preview(np.asarray(ok, np.int64))
                shown = shown if shown.vertex_count else None  # nothing to show yet
            yield Progress(request.generation, plan.level, end, total, shown)
        if cancelled():
            return None
        if not bad:
            return chunks
        keep = [i for i, c in enumerate(chunks.tolist()) if tuple(c) not in bad]
        return chunks[keep]

    def _centre_out(
        self, level: int, chunks: np.ndarray, crop: tuple[np.ndarray, np.ndarray] | None
    ) -> np.ndarray:
        """Rows of ``chunks`` ordered by distance (in chunk edges) from the centre of
        ``crop``, or of the store's bounds without a crop."""
        info = self.store.level(level)
        if not len(chunks) or info.key_ndim != self.ndim:
            return np.arange(len(chunks))
        box = crop if crop is not None else self.store.bounds
        centre = (np.asarray(box[0], np.float64) + np.asarray(box[1], np.float64)) / 2
        return lod.nearest_first(chunks, info.chunk_shape, centre - info.chunk_origin)

    def _learn(self, level: int, geometry: Geometry, fraction: float) -> None:
        """Remember per-chunk row counts for later estimates (rows of a read of ``fraction``
        of the objects are scaled up by ``1 / fraction``)."""
        info = self.store.level(level)
        if info.key_ndim != self.ndim or geometry.chunks is None or fraction <= 0:
            return
        edge = np.asarray(info.chunk_shape, dtype=np.float64)
        loaded = np.asarray(geometry.chunks, dtype=np.int64).reshape(-1, self.ndim)
        if not len(loaded):
            return
        # count rows per chunk through linear chunk indices (a row-wise np.unique sorts a
        # void view and holds the GIL ~1 us per row: the UI thread would stall)
        keys = np.floor((np.asarray(geometry.positions, np.float64) - info.chunk_origin) / edge)
        keys = keys.astype(np.int64)
        if not len(keys):
            keys = loaded[:0]
        lo = np.vstack([keys, loaded]).min(axis=0)
        dims = np.vstack([keys, loaded]).max(axis=0) - lo + 1
        rows = np.bincount(np.ravel_multi_index((keys - lo).T, dims), minlength=int(np.prod(dims)))
        at = np.ravel_multi_index((loaded - lo).T, dims)
        found = rows[at] / fraction
        with self._lock:
            for c, n in zip(map(tuple, loaded.tolist()), found.tolist(), strict=True):
                self.counts[(level, c)] = n

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


def _split_fill(
    subset: view_geometry.Subset, layer_budget: int | None
) -> tuple[view_geometry.Subset, Geometry | None]:
    """``(what the layers hold, the overview fill)`` of ``subset``: the objects ranked lowest
    within ``layer_budget`` (the same ranks, so the layers' objects come first), and the
    rest (``None``: no budget given, or everything fits it)."""
    if layer_budget is None or subset.vertices_shown <= layer_budget:
        return subset, None
    held = view_geometry.subset_to_budget(subset.geometry, layer_budget)
    ids = np.unique(np.asarray(subset.geometry.path_object_ids, np.int64))
    kept = np.unique(np.asarray(held.geometry.path_object_ids, np.int64))
    rest = np.setdiff1d(ids, kept, assume_unique=True)
    if not len(rest):
        return held, None
    return held, view_geometry.filter_geometry(subset.geometry, rest)
