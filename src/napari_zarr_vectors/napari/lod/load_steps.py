"""The steps of a level-of-detail load after its plan (:class:`.loader.Loader` plans and
runs them): fetch the plan's chunks in batches, assemble what loaded into the view's geometry
(object subset, crop, simplification, the budget) and build its layer data. The steps also
hold what their reads teach the plan: per-chunk row counts, the part of the rows
simplification kept, the rows of the whole store."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING

import numpy as np

import napari_zarr_vectors as nzv
from napari_zarr_vectors.format.distinct import distinct
from napari_zarr_vectors.format.geometry import Geometry, GeometryType
from napari_zarr_vectors.napari.layerdata.build import StoreInfo, layers_from_geometry
from napari_zarr_vectors.napari.lod import plan as lod
from napari_zarr_vectors.napari.lod import simplify, view_geometry
from napari_zarr_vectors.napari.lod.cache import StoreCacheView
from napari_zarr_vectors.napari.lod.load_values import LoadRequest, LoadResult, Progress, ViewShare

if TYPE_CHECKING:
    from napari_zarr_vectors.format.api import GeometryStore

#: errors that concern the whole store, not one chunk: raised, not skipped
_FATAL = (nzv.MissingDependencyError, nzv.UnsupportedVersionError)

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


def level_ids(store: GeometryStore, level: int) -> np.ndarray:
    """The object ids of ``level`` (none when the store has no object table)."""
    try:
        return np.asarray(store.object_ids(level), dtype=np.int64)
    except nzv.ZVError:
        return np.empty(0, np.int64)


class LoadSteps:
    """Fetch, assemble and build one store's loads (shared state, behind :attr:`lock`: the
    counts learnt from reads, which the plan reads too)."""

    def __init__(
        self,
        store: GeometryStore,
        cache: StoreCacheView,
        info: Callable[..., StoreInfo],
    ) -> None:
        self.store = store
        self.cache = cache
        #: ``info(level, objects=...)``: what the layer builders need (:meth:`.Loader.info`)
        self.info = info
        #: (level, chunk key) -> estimated rows of the whole chunk, learnt from reads
        self.counts: dict[tuple[int, tuple[int, ...]], float] = {}
        #: layer rows of the whole of level 0, once a whole plan read it all
        self.whole_rows: int | None = None
        #: (level, tolerance) -> part of the cropped view's path rows simplification kept,
        #: learnt from reads: the plan's estimates count simplified rows
        self.kept: dict[tuple[int, float], float] = {}
        self.lock = threading.Lock()
        self._nonfinite_warned = False

    @property
    def ndim(self) -> int:
        return int(self.store.ndim)

    # -- fetching --------------------------------------------------------------------------
    def fetch(
        self,
        request: LoadRequest,
        plan: lod.LevelPlan,
        failed: list[tuple[tuple[int, ...], str]],
        cancelled: Callable[[], bool],
        size: int,
        preview: Callable[[np.ndarray], LoadResult] | None = None,
        crop: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> Generator[Progress, None, np.ndarray | None]:
        """Fetch the plan's chunks in batches, nearest the view centre first, yielding
        :class:`Progress` after each of ``size`` chunks; with ``preview``, the first of several
        batches also carries ``preview(rows fetched)``. Returns the chunks that loaded (plan
        order)."""
        chunks = np.asarray(plan.chunks, dtype=np.int64)
        total = len(chunks)
        yield Progress(request.generation, plan.level, 0, total)
        bad = {c for c, _ in failed}
        order = self.centre_out(plan.level, chunks, crop)
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

    def centre_out(
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

    def learn(self, level: int, geometry: Geometry, fraction: float) -> None:
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
        with self.lock:
            for c, n in zip(map(tuple, loaded.tolist()), found.tolist(), strict=True):
                self.counts[(level, c)] = n

    # -- assembling ------------------------------------------------------------------------
    def result(
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
        :meth:`pieces`, never simplified), paths simplified to ``tolerance`` when the view
        holds more than the budget (:meth:`simplified`). With ``layer_budget`` the layers
        hold the objects ranked lowest within it and the rest of the subset is the overview
        fill (:attr:`LoadResult.fill`)."""
        fill = None
        if pieces:
            geometry, share = self.pieces(request, plan, chunks, crop)
        else:
            subset, fraction, read, simplified = self.assemble(
                plan, chunks, crop, request, max_fraction, tolerance
            )
            held, fill = split_fill(subset, layer_budget)
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
                self.whole_rows = int(subset.vertices_in_view)
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

    def pieces(
        self,
        request: LoadRequest,
        plan: lod.LevelPlan,
        chunks: np.ndarray,
        crop: tuple[np.ndarray, np.ndarray] | None,
    ) -> tuple[Geometry, ViewShare]:
        """A quick look at ``chunks``: their path pieces (:meth:`.Store.read_pieces`, no
        object index) ranked below a little more than the plan's object fraction (what
        :meth:`assemble` reads), lowest ranks first within ``request.budget``, cropped to
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
        geometry = view_geometry.pieces_to_budget(self.drawable(pieces), crop, request.budget)
        shown = view_geometry.resident_vertices(geometry)
        share = ViewShare(
            fraction=fraction,
            item_kind="pieces",
            items_shown=len(geometry.paths),
            vertices_shown=shown,
            budget=int(request.budget),
        )
        return geometry, share

    def assemble(
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
        (:meth:`simplified`) and cut it to the budget exactly
        (:func:`.view_geometry.subset_to_budget`).

        The fraction shown is then the same whatever the estimate was: the largest ladder
        step whose objects fit, chosen among objects that were all read. When everything
        read fits, the objects ranked next may fit too: read again with a larger fraction
        (from the cache). Returns the subset, the fraction shown, the fraction read and the
        simplification."""
        by_object = self.store.geometry_type != GeometryType.POINT_CLOUD
        ids = level_ids(self.store, plan.level) if by_object else np.empty(0, np.int64)
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
            geometry = self.drawable(
                self.store.read(plan.level, chunks=chunks, object_ids=wanted, cache=self.cache)  # type: ignore[arg-type]  # the cache view duck-types the core's ChunkCache
            )
            self.learn(plan.level, geometry, fraction)
            if request.allowed_ids is not None and ranks is None:
                geometry = view_geometry.filter_geometry(geometry, request.allowed_ids)
            if crop is not None:
                geometry = view_geometry.crop_geometry(geometry, crop)
            simplified = self.simplified(geometry, tolerance, request.budget, plan.level)
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

    def simplified(
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
        with self.lock:
            kept = self.kept.get((level, tolerance), 0.0)
        if kept > SIMPLIFY_WORTH_KEEP:
            return unchanged
        out = simplify.simplify_geometry(geometry, tolerance)
        with self.lock:
            self.kept[(level, tolerance)] = out.rows_after / max(out.rows_before, 1)
        return out

    def drawable(self, geometry: Geometry) -> Geometry:
        """``geometry`` without vertices at NaN or infinite coordinates, with one warning
        per store (:func:`.view_geometry.finite_geometry`)."""
        geometry, dropped = view_geometry.finite_geometry(geometry)
        if dropped and not self._nonfinite_warned:
            self._nonfinite_warned = True
            message = view_geometry.nonfinite_message(self.store.name, geometry.level, dropped)
            warnings.warn(message, stacklevel=2)
        return geometry


def split_fill(
    subset: view_geometry.Subset, layer_budget: int | None
) -> tuple[view_geometry.Subset, Geometry | None]:
    """``(what the layers hold, the overview fill)`` of ``subset``: the objects ranked lowest
    within ``layer_budget`` (the same ranks, so the layers' objects come first), and the
    rest (``None``: no budget given, or everything fits it)."""
    if layer_budget is None or subset.vertices_shown <= layer_budget:
        return subset, None
    held = view_geometry.subset_to_budget(subset.geometry, layer_budget)
    ids = distinct(np.asarray(subset.geometry.path_object_ids, np.int64))
    kept = distinct(np.asarray(held.geometry.path_object_ids, np.int64))
    rest = np.setdiff1d(ids, kept, assume_unique=True)
    if not len(rest):
        return held, None
    return held, view_geometry.filter_geometry(subset.geometry, rest)
