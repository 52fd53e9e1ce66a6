"""The Pyramid QA model: the state and the actions of Pyramid QA for one open store.

:class:`PyramidQA` is what the *Pyramid QA* dock widget (:mod:`..widgets.pyramid`) shows and
what the layer menu's actions (:mod:`..widgets.actions`) act on, with no Qt: one per browse
target (a store's level-of-detail controller, or the static target of layers opened without
one: :func:`~napari_zarr_vectors.napari.browse.targets.target_for`), found from any of the
store's layers with :func:`qa_model_for` (a weak registry: a model lives as long as its
target). It holds every piece of QA state (the level lock a filter made, side-by-side layers
and grid mode, the chunk and bin outlines, the dropped-objects list and its layers, the links
layer, the statistics, the running tasks) and says what changed through ``events`` (napari's
:class:`~napari.utils.events.EmitterGroup`):

* ``status(text)`` -- a sentence for the user (:attr:`PyramidQA.status` keeps the last one);
* ``level`` -- the shown or locked level changed, or the layers were refreshed;
* ``statistics`` -- :attr:`~PyramidQA.statistics`, ``families``, ``has_objects`` are known;
* ``dropped`` -- :attr:`~PyramidQA.dropped` was listed;
* ``picked`` -- :attr:`~PyramidQA.chunk_key` / :attr:`~PyramidQA.object_ids` changed;
* ``outlines`` -- the chunk outline was switched on or off;
* ``side_by_side`` -- the side-by-side layers, grid mode or opacity changed;
* ``links(note)`` -- links were drawn;
* ``task(task)`` -- a task started, reported progress or ended (:attr:`~PyramidQA.busy`).

Every store read runs on the plugin's worker thread (:class:`.jobs.QATask`, one per action
kind; starting one cancels the running one of its kind); layers are added on the UI thread,
one per event-loop turn. An action that would read most of a store asks first through
:attr:`PyramidQA.confirm` (the widget asks the user; without a widget, scripts answer).
"""

from __future__ import annotations

import weakref
import webbrowser
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from napari.utils.events import EmitterGroup, Event

from napari_zarr_vectors.format import pyramid as core
from napari_zarr_vectors.napari.browse.filters import IdFilter
from napari_zarr_vectors.napari.browse.targets import (
    BrowseState,
    browse_state_of,
    controller_of,
    is_data_layer,
    target_for,
)
from napari_zarr_vectors.napari.conventions import meta_of
from napari_zarr_vectors.napari.layerdata.placement import Placement
from napari_zarr_vectors.napari.lod import camera
from napari_zarr_vectors.napari.lod.settings import vertex_budget as default_budget
from napari_zarr_vectors.napari.lod.view_geometry import Box
from napari_zarr_vectors.napari.lod.viewer_layers import add_layer, next_turn, remove_layers
from napari_zarr_vectors.napari.qa.compute import (
    DroppedObjects,
    drawn_text,
    estimate_read,
    grid_plan,
    reads_most,
    shown_of,
    slice_of,
    store_vertices,
)
from napari_zarr_vectors.napari.qa.jobs import (
    PENDING,
    Job,
    QATask,
    StoreFacts,
    bins_job,
    call_job,
    dropped_job,
    levels_holding_job,
    nearest_object_job,
    store_facts,
)
from napari_zarr_vectors.napari.qa.outlines import BoxOverlay
from napari_zarr_vectors.napari.qa.overlays import (
    BIN_COLOUR,
    CHUNK_COLOUR,
    Built,
    boxes_in_slab,
    isolate_job,
    links_job,
    overlay_info,
    side_by_side_job,
)
from napari_zarr_vectors.napari.qa.whole_store import (
    add_density_layer,
    default_voxel,
    density_job,
    density_layer_kwargs,
    report_job,
)

if TYPE_CHECKING:
    from napari.layers import Layer
    from napari.viewer import Viewer

    from napari_zarr_vectors.format.api import GeometryStore
    from napari_zarr_vectors.jobs import DensityMap
    from napari_zarr_vectors.napari.browse.targets import BrowseTarget as Target
    from napari_zarr_vectors.napari.lod.controller import ZVLayerController

#: Share of the vertex budget one added layer may hold (see :meth:`PyramidQA.layer_budget`).
BUDGET_SHARE = 0.25

#: Link scopes of :meth:`PyramidQA.show_links`.
SCOPES = ("objects", "box", "all")

_MODELS: weakref.WeakKeyDictionary[Target, PyramidQA] = weakref.WeakKeyDictionary()


def qa_model(viewer: Viewer, target: Target) -> PyramidQA:
    """The Pyramid QA model of ``target`` in ``viewer`` (created on first use)."""
    model = _MODELS.get(target)
    if model is None or model.viewer is not viewer:
        model = _MODELS[target] = PyramidQA(viewer, target)
    return model


def qa_model_for(viewer: Viewer, layer: Layer | None) -> PyramidQA | None:
    """The Pyramid QA model of the store ``layer`` shows (its data layers, bounds box or a
    layer derived from it); ``None`` for a layer of no Zarr Vectors store."""
    target = target_for(viewer, layer) if meta_of(layer) is not None else None
    return None if target is None else qa_model(viewer, target)


def store_layer(viewer: Viewer, layer: Layer | None = None) -> Layer | None:
    """``layer`` when it is of a Zarr Vectors store, else the viewer's first store data layer
    (one with a level-of-detail controller first); ``None`` when no store is open."""
    if meta_of(layer) is not None and target_for(viewer, layer) is not None:
        return layer
    data = [lyr for lyr in viewer.layers if is_data_layer(lyr)]
    with_controller = [lyr for lyr in data if controller_of(lyr) is not None]
    return next(iter(with_controller + data), None)


def _open_in_browser(path: Path) -> object:
    return webbrowser.open(Path(path).resolve().as_uri())


def answer_yes(text: str) -> bool:
    """The answer to :attr:`PyramidQA.confirm` when nobody can be asked (no widget, a
    script): go on."""
    return True


class PyramidQA:
    """Pyramid QA state and actions for one browse target in one viewer (see the module
    docstring). Actions return the :class:`~.jobs.QATask` they started (``None`` when they
    start none: the status says why)."""

    def __init__(self, viewer: Viewer, target: Target) -> None:
        self.viewer = viewer
        self._target = weakref.ref(target)
        self.events = EmitterGroup(
            source=self,
            status=Event,
            level=Event,
            statistics=Event,
            dropped=Event,
            picked=Event,
            outlines=Event,
            side_by_side=Event,
            links=Event,
            task=Event,
        )
        self.status = ""
        #: asks before an action reads most of the store: ``confirm(text) -> bool``
        self.confirm: Callable[[str], bool] = answer_yes
        self.tasks: dict[str, QATask] = {}
        # statistics
        self.statistics: list[dict[str, Any]] = []
        self.families: list[tuple[int, int]] = []
        self.has_objects = False
        # dropped objects
        self.dropped: DroppedObjects | None = None
        self.dropped_layers: list[Layer] = []
        #: ``(was locked, lock)`` before a filter locked the level holding the objects
        self._lock_before_filter: tuple[bool, int | None] | None = None
        # side by side
        self.side_layers: list[Layer] = []
        #: side-by-side levels in grid cells (the default: levels apart), else overlaid
        self.grid = True
        self._grid_hidden: list[Layer] = []
        self._toggle_index = -1
        self.opacity = 0.7
        # outlines, picking, links
        #: whether the chunk outline is on (it follows the shown level, or another store)
        self.chunks_on = False
        self.chunk_overlay = BoxOverlay(self, "qa_chunks", CHUNK_COLOUR)
        self.bin_overlay = BoxOverlay(self, "qa_bins", BIN_COLOUR)
        #: the level whose chunks are outlined (``None``: the shown level, followed)
        self.chunk_level: int | None = None
        self._chunk_boxes: dict[int, Box] = {}
        self._overlays_pending = False
        self.chunk_key: list[int] | None = None
        self.object_ids: list[int] = []
        self.links_layer: Layer | None = None
        # whole store
        #: ``(path, verdict)`` of the last whole-store report written
        self.report: tuple[Path, str] | None = None
        #: opens a written report (the browser; scripts and tests may replace it)
        self.open_report: Callable[[Path], object] = _open_in_browser
        self.density_layer: Layer | None = None
        self._connect()

    # ------------------------------------------------------------------ wiring
    def _connect(self) -> None:
        v = self.viewer
        v.layers.events.removed.connect(self._on_layer_removed)
        for emitter in (v.dims.events.point, v.dims.events.ndisplay, v.dims.events.order):
            emitter.connect(self._on_dims)
        target = self._live_target
        target.events.level_changed.connect(self._on_level_changed)
        target.events.refreshed.connect(self._on_refreshed)

    def _on_layer_removed(self, event: Event | None = None) -> None:
        layer = getattr(event, "value", None)
        for kept in (self.side_layers, self.dropped_layers, self._grid_hidden):
            if layer in kept:
                kept.remove(layer)
        if layer is not None and layer is self.density_layer:
            self.density_layer = None
        if self._grid_hidden and not self.side_layers:
            # the last side-by-side level went: no cell left, show the rest again
            self._apply_grid(False)

    def _on_dims(self, event: Event | None = None) -> None:
        """The slice or display mode changed: redraw the outlines once napari's dims update
        is over (coalesced; never inside napari's own event)."""
        if not self._overlays_pending:
            self._overlays_pending = True
            next_turn(self._refresh_overlays)

    def _refresh_overlays(self) -> None:
        self._overlays_pending = False
        self.chunk_overlay.refresh()
        self.bin_overlay.refresh()

    @property
    def overlays_pending(self) -> bool:
        """Whether the outlines wait for a redraw after a slice change."""
        return self._overlays_pending

    def _on_level_changed(self, *_: Any) -> None:
        self.events.level()
        if self.chunks_on and self.chunk_level is None:
            self.show_chunks(True)

    def _on_refreshed(self, *_: Any) -> None:
        self.events.level()

    def say(self, text: str) -> None:
        """Tell the user (``events.status``)."""
        self.status = text
        self.events.status(text=text)

    # ------------------------------------------------------------------ the store
    @property
    def target(self) -> Target | None:
        return self._target()

    @property
    def store(self) -> GeometryStore | None:
        target = self.target
        return None if target is None else target.store

    @property
    def _live_target(self) -> Target:
        """:attr:`target`, where the model acts on it (and needs it alive)."""
        target = self.target
        assert target is not None
        return target

    @property
    def _live_store(self) -> GeometryStore:
        """:attr:`store` where the model reads it (its target is alive)."""
        return self._live_target.store

    @property
    def session(self) -> BrowseState | None:
        """The filter state the browse widgets share for this store."""
        return browse_state_of(self.target)

    @property
    def controller(self) -> ZVLayerController | None:
        """The level-of-detail controller (``None``: a fixed-level layer)."""
        target = self.target
        return None if target is None else target.controller

    @property
    def levels(self) -> list[int]:
        store = self.store
        return [] if store is None else [lv.index for lv in store.levels]

    @property
    def level(self) -> int:
        """The level the store's layers show."""
        return int(self._live_target.level)

    @property
    def locked_level(self) -> int | None:
        return getattr(self.target, "locked_level", None)

    @property
    def single_level(self) -> bool:
        return len(self.levels) < 2

    def budget(self) -> int:
        """The vertex budget (the controller's, else the plugin default)."""
        controller = self.controller
        return int(controller.vertex_budget) if controller is not None else default_budget()

    def layer_budget(self) -> int:
        """Rows one layer QA adds may hold: :data:`BUDGET_SHARE` of the vertex budget (the
        budget is what one data *swap* costs ~50 ms; adding a layer costs more per row, and
        it draws on top of what the store's layers hold)."""
        return max(int(self.budget() * BUDGET_SHARE), 1)

    def visible_box(self) -> Box:
        """The box the camera shows, in the stored space and store order, clipped to the
        store bounds: the box the loader plans for this view (:mod:`..lod.camera`)."""
        store = self._live_store
        return camera.visible_store_box(camera.view_state(self.viewer, store), store)

    def drawn_text(self) -> str:
        """The shown level's drawn rows (the status bar's count) and stored vertices."""
        level = self.level
        drawn = getattr(self.target, "vertex_count", None)
        if drawn is None:  # a fixed-level layer: what its layers hold
            drawn = sum(
                int((meta_of(lyr) or {}).get("vertex_count", 0) or 0)
                for lyr in self._live_target.layers
            )
        stored = self._live_store.level(level).vertex_count
        return drawn_text(level, int(drawn), stored, self.locked_level is not None)

    # ------------------------------------------------------------------ tasks
    def _run(
        self,
        kind: str,
        job: Callable[..., Job] | Callable[..., object],
        args: tuple,
        apply: Callable[[Any], Any],
        *,
        report_progress: bool = False,
    ) -> QATask:
        """Start ``job(*args, cancel)`` on the worker thread (cancelling a running task of
        the same kind); ``apply(result)`` runs on the UI thread. ``report_progress``: the
        job reports through a ``progress`` callback instead of yielding (see
        :class:`.jobs.QATask`)."""
        running = self.tasks.get(kind)
        if running is not None and not running.done:
            running.cancel()
        task = QATask(self, kind, job, args, apply, report_progress=report_progress)
        self.tasks[kind] = task
        self.task_changed(task)
        return task.start()

    def task_changed(self, task: QATask) -> None:
        """A task started, reported progress or ended (``events.task``)."""
        self.events.task(task=task)

    def cancel_tasks(self) -> None:
        """Cancel every running task (what *Cancel* does)."""
        for task in list(self.tasks.values()):
            if not task.done:
                task.cancel()
                self.say(f"{task.kind}: cancelled")

    @property
    def busy(self) -> bool:
        """Whether a task is running."""
        return any(not t.done for t in self.tasks.values())

    def _add_in_turns(
        self,
        kind: str,
        items: Sequence[Layer],
        added: Callable[[Layer], None],
        then: Callable[[list[Layer]], object],
    ) -> object:
        """Add layers (built on the worker) one per event-loop turn (the UI stays responsive
        between them) for the running task of ``kind``: ``added(layer)`` after each,
        ``task.finish(then(layers))`` at the end. Returns :data:`~.jobs.PENDING`."""
        task = self.tasks[kind]
        queue = list(items)
        layers: list[Layer] = []

        def step() -> None:
            if task.done:
                return
            if not queue:
                task.finish(then(layers))
                return
            layer = add_layer(self.viewer, queue.pop(0))
            layers.append(layer)
            added(layer)
            next_turn(step)

        # not in the turn that delivered the result (which may have removed a layer)
        next_turn(step)
        return PENDING

    def _confirm_read(self, to_read: int, what: str) -> bool:
        """Ask before reading most of the store (see :func:`.compute.reads_most`)."""
        store = self._live_store
        if not reads_most(to_read, store, self.budget()):
            return True
        ok = self.confirm(
            f"{what} reads about {to_read:,} of the {store_vertices(store):,} vertices "
            f"stored in {store.name} (it runs in the background; at most "
            f"{self.layer_budget():,} rows a layer are drawn). Go on?"
        )
        if not ok:
            self.say(f"{what}: not started")
        return ok

    # ------------------------------------------------------------------ level lock
    def lock_level(self, level: int | None) -> None:
        """Lock the shown level (``None``: back to the automatic, zoom-driven choice)."""
        controller = self.controller
        if controller is None:
            self.say("Locking needs a layer opened with the level-of-detail engine.")
            return
        if level is not None and level not in self.levels:
            raise ValueError(
                f"{self._live_store.name} has no level {level} (levels: {self.levels})"
            )
        controller.lock_level(level)
        self.events.level()
        self.say(
            "automatic level (follows the zoom)" if level is None else f"locked at level {level}"
        )

    def lock_shown_level(self) -> None:
        """Lock the level shown now."""
        self.lock_level(self.level)

    def step_level(self, step: int) -> None:
        """Lock one level coarser (``+1``) or finer (``-1``) than the locked one (else the
        shown one: the shown one may still be loading)."""
        controller = self.controller
        if controller is None or self.single_level:
            return
        levels = self.levels
        base = controller.locked_level if controller.locked_level is not None else self.level
        i = levels.index(base) if base in levels else 0
        self.lock_level(levels[int(np.clip(i + step, 0, len(levels) - 1))])

    # ------------------------------------------------------------------ statistics
    def refresh_statistics(self) -> QATask | None:
        """Read the level statistics, the link families and whether the store has objects
        (``events.statistics`` when they are known)."""
        if self.store is None:
            return None
        self.statistics = []
        return self._run("statistics", store_facts, (self.store,), self._facts_ready)

    def _facts_ready(self, facts: StoreFacts) -> list[dict[str, Any]]:
        self.statistics, self.families, self.has_objects = facts
        self.events.statistics()
        return self.statistics

    @property
    def can_filter(self) -> bool:
        """Whether the dropped objects can be filtered to (objects, two levels, a session)."""
        return not self.single_level and self.has_objects and self.session is not None

    # ------------------------------------------------------------------ dropped objects
    def list_dropped(self, fine: int | None = None, coarse: int | None = None) -> QATask | None:
        """List the ids present at ``fine`` and absent at ``coarse`` (default: the finest
        and the coarsest level)."""
        if self.store is None or self.single_level:
            return None
        fine = self.levels[0] if fine is None else int(fine)
        coarse = self.levels[-1] if coarse is None else int(coarse)
        return self._run("dropped objects", dropped_job, (self.store, fine, coarse), self._listed)

    def _listed(self, d: DroppedObjects) -> np.ndarray:
        self.dropped = d
        self.events.dropped()
        return d.ids

    @property
    def dropped_ids(self) -> np.ndarray:
        return np.empty(0, np.int64) if self.dropped is None else self.dropped.ids

    def isolate_dropped(self, ids: Sequence[int] | np.ndarray | None = None) -> QATask | None:
        """Read objects (default: every listed dropped id) at the finer level of the listed
        pair into highlighted layers, capped by the vertex budget."""
        store = self.store
        if store is None:
            return None
        if self.dropped is None:
            self.say(
                "Nothing listed: choose the two levels and press List first (Isolate acts on "
                "the listed objects)."
            )
            return None
        ids = self.dropped_ids if ids is None else np.asarray(ids, np.int64)
        if not len(ids):
            self.say("no objects to isolate")
            return None
        pair = (self.dropped.fine, self.dropped.coarse)
        share = min(len(ids) / max(self.dropped.n_fine, 1), 1.0)
        if not self._confirm_read(
            estimate_read(store, pair[0], share=share), f"Isolating {len(ids):,} object(s)"
        ):
            return None

        def apply(built: Built) -> object:
            def then(layers: list[Layer]) -> list[Layer]:
                self.say(f"isolated at level {pair[0]}: {built.note}")
                return layers

            return self._add_in_turns("isolate", built.items, self.dropped_layers.append, then)

        return self._run("isolate", isolate_job, (store, ids, pair, self.layer_budget()), apply)

    def filter_to_dropped(self, ids: Sequence[int] | np.ndarray | None = None) -> QATask | None:
        """Show only the dropped objects ``ids`` (default: every listed one) in the store's
        layers, through the filter state the browse widgets share (ANDed with their
        filters). When the shown level holds none of them the finer level of the pair is
        locked (or, for a fixed-level layer, the status says why nothing is drawn)."""
        store, session = self.store, self.session
        if store is None or session is None:
            self.say("filtering needs a Zarr Vectors layer")
            return None
        if self.dropped is None:
            self.say("Nothing listed: choose the two levels and press List first.")
            return None
        ids = self.dropped_ids if ids is None else np.asarray(ids, np.int64)
        if not len(ids):
            self.say("no dropped objects to filter to")
            return None
        d = self.dropped
        return self._run(
            "filter",
            levels_holding_job,
            (store, ids),
            lambda holding: self._apply_filter(ids, d, holding),
        )

    def _apply_filter(self, ids: np.ndarray, d: DroppedObjects, holding: list[int]) -> str:
        session = self.session
        if session is None:
            return ""
        session.filters.id_filter = IdFilter(tuple(ids.tolist()), f"dropped {d.fine}→{d.coarse}")
        controller = self.controller
        shown = self.level if self.locked_level is None else self.locked_level
        note = ""
        if shown not in holding:
            if not holding:
                note = "; they exist at no level: nothing is drawn"
            elif controller is not None:
                lock = d.fine if d.fine in holding else holding[0]
                if self._lock_before_filter is None:
                    self._lock_before_filter = (True, controller.locked_level)
                controller.lock_level(lock)
                self.events.level()
                note = f"; locked level {lock}, where they exist (level {shown} has none of them)"
            else:
                note = f"; this layer shows level {shown}, which has none of them: nothing is drawn"
        session.apply()
        text = f"showing {len(ids):,} dropped object(s) only ({session.filters.describe()}){note}"
        self.say(text)
        return text

    def clear_filter(self) -> None:
        """Remove the dropped-objects filter (the browse widgets' filters stay) and undo the
        level lock it made."""
        session = self.session
        if session is None:
            return
        session.filters.id_filter = None
        restore, self._lock_before_filter = self._lock_before_filter, None
        if restore is not None and self.controller is not None:
            self.controller.lock_level(restore[1])
            self.events.level()
        session.apply()
        self.say(f"dropped-objects filter cleared ({session.filters.describe()})")

    # ------------------------------------------------------------------ side by side
    def add_levels(self, levels: Sequence[int]) -> QATask | None:
        """Add ``levels`` as separate, alike-coloured layers, each capped by the vertex
        budget, in grid cells unless :attr:`grid` was turned off (when a level holds more
        than the budget, every level is read inside the visible box)."""
        store = self.store
        if store is None:
            return None
        levels = [int(lv) for lv in levels]
        if not levels:
            self.say("tick the levels to add side by side")
            return None
        budget = self.layer_budget()
        # one extent for every level: when one level is read inside the visible box (it
        # holds more than the budget), all are, so the cells compare the same region
        boxed = any(int(store.level(level).vertex_count or 0) > budget for level in levels)
        bboxes: dict[int, Box] = dict.fromkeys(levels, self.visible_box()) if boxed else {}
        to_read = 0
        for level in levels:
            to_read += estimate_read(store, level, bboxes.get(level))
        if not self._confirm_read(to_read, f"Adding level(s) {levels}"):
            return None

        def apply(built: list[Built]) -> object:
            items = [item for b in built for item in b.items]

            def then(layers: list[Layer]) -> list[Layer]:
                self._toggle_index = -1
                notes = "; ".join(f"level {b.level}: {b.note}" for b in built)
                self.say(f"added {len(layers)} layer(s) ({notes})")
                self._apply_grid(self.grid)
                self.events.side_by_side()
                return layers

            return self._add_in_turns("side by side", items, self.side_layers.append, then)

        args = (store, levels, bboxes, budget, self.opacity)
        return self._run("side by side", side_by_side_job, args, apply)

    def remove_levels(self) -> None:
        """Remove the side-by-side layers (:func:`..lod.viewer_layers.remove_layers`) and
        leave napari's grid mode (the grid setting stays for the next levels added)."""
        self._apply_grid(False)
        layers, self.side_layers = list(self.side_layers), []
        remove_layers(self.viewer, layers)
        self.events.side_by_side()

    def set_grid(self, enabled: bool) -> None:
        """Side-by-side levels in napari's grid mode, one cell per level (the default), or
        overlaid in one canvas. With levels added it applies at once, else to the levels
        added next."""
        self.grid = bool(enabled)
        side = any(lyr in self.viewer.layers for lyr in self.side_layers)
        self._apply_grid(self.grid and side)
        self.events.side_by_side()

    def _apply_grid(self, enabled: bool) -> None:
        """napari's grid mode with one cell per side-by-side level: every other layer (the
        store's own layers, the bounds box, overlays) is hidden while it is on, and shown
        again when it goes off; the camera then fits every cell (the same extent in each)."""
        grid = self.viewer.canvas.grid
        if enabled:
            side = [lyr for lyr in self.side_layers if lyr in self.viewer.layers]
            hide, stride = grid_plan(list(self.viewer.layers), side)
            for layer in hide:
                layer.visible = False
            self._grid_hidden += hide
            if stride > 1:
                # napari groups ``stride`` layers a cell counted from the top of the list
                # (negative stride): the levels go on top, level by level, the first
                # level topmost (the first cell)
                levels: dict[Any, list[Layer]] = {}
                for layer in side:
                    levels.setdefault((meta_of(layer) or {}).get("level"), []).append(layer)
                order = [lyr for group in reversed(list(levels.values())) for lyr in group]
                layers = self.viewer.layers
                layers.move_multiple([layers.index(lyr) for lyr in order], len(layers))
            grid.stride = -stride if stride > 1 else 1
            grid.enabled = True
            self.viewer.reset_view()
        elif grid.enabled or self._grid_hidden:
            # grid off first: with it on, every layer shown again rebuilds the grid's views
            grid.enabled = False
            for layer in self._grid_hidden:
                if layer in self.viewer.layers:
                    layer.visible = True
            self._grid_hidden = []

    def toggle_side_by_side(self) -> Layer | None:
        """Show the side-by-side layers one at a time, then all again. Returns the layer
        now shown alone (``None`` when all are shown)."""
        layers = [lyr for lyr in self.side_layers if lyr in self.viewer.layers]
        if not layers:
            return None
        self._toggle_index += 1
        if self._toggle_index >= len(layers):
            self._toggle_index = -1
        for i, layer in enumerate(layers):
            layer.visible = self._toggle_index in (-1, i)
        return None if self._toggle_index == -1 else layers[self._toggle_index]

    def set_opacity(self, opacity: float) -> None:
        """Opacity of the side-by-side layers (and of those added later)."""
        self.opacity = float(opacity)
        for layer in self.side_layers:
            layer.opacity = self.opacity
        self.events.side_by_side()

    # ------------------------------------------------------------------ chunks and bins
    def show_chunks(self, enabled: bool = True, level: int | None = None) -> QATask | None:
        """Outline the non-empty chunks of ``level`` (default: the shown level, followed as
        it changes); ``enabled=False`` removes the outlines. The chunk listing is read on
        the worker thread (once per level)."""
        running = self.tasks.get("chunks")
        if running is not None and not running.done:
            running.cancel()
        if not enabled or self.store is None:
            self.chunks_on = False
            self.chunk_overlay.remove()
            self.events.outlines()
            return None
        self.chunks_on = True
        self.chunk_level = None if level is None else int(level)
        level = self.level if level is None else int(level)
        task = self._run(
            "chunks",
            call_job,
            (f"listing the chunks of level {level}", self._boxes_of, level),
            partial(self._draw_chunks, level),
        )
        self.events.outlines()
        return task

    def _boxes_of(self, level: int) -> Box:
        """The boxes of the non-empty chunks of ``level`` (read once; worker thread)."""
        boxes = self._chunk_boxes.get(level)
        if boxes is None:
            boxes = self._chunk_boxes[level] = core.chunk_boxes(self._live_store, level)
        return boxes

    def _draw_chunks(self, level: int, boxes: Box) -> Layer | None:
        store = self._live_store
        lo, hi = boxes
        chunk_shape = np.asarray(store.level(level).chunk_shape, float).tolist()
        layer = self.chunk_overlay.set_boxes(
            lo,
            hi,
            overlay_info(store, level),
            "chunks",
            {"qa_level": level, "chunk_shape": chunk_shape},
        )
        cut = len(self.chunk_overlay.cut())
        where = "" if cut == len(lo) else f"; {cut:,} cut by the slice"
        self.say(
            f"{len(lo):,} non-empty chunks at level {level}{where}; "
            + shown_of(self.chunk_overlay.drawn(), cut, "outlined")
        )
        self.events.outlines()
        return layer

    def show_bins(
        self,
        chunk: Sequence[int] | None = None,
        occupied: bool = False,
        level: int | None = None,
    ) -> QATask | None:
        """Outline the bins of one chunk of ``level`` (default: the shown level; chunk
        default: the last picked or shown one). In a 2-D view the slice moves into the
        chunk when it is elsewhere, so that what is reported is drawn."""
        store = self.store
        if store is None:
            return None
        chunk = self.chunk_key if chunk is None else chunk
        level = self.level if level is None else int(level)
        if chunk is None or len(chunk) not in (store.ndim, store.level(level).key_ndim):
            self.say(f"a chunk key has {store.ndim} integers, e.g. 0,1,-1")
            return None
        chunk = [int(c) for c in chunk]
        self._pick(chunk, None)
        occupied = bool(occupied)
        return self._run(
            "bins",
            bins_job,
            (store, level, chunk, occupied),
            lambda boxes: self._draw_bins(level, chunk, occupied, boxes),
        )

    def _draw_bins(self, level: int, chunk: list[int], occupied: bool, boxes: Box) -> object:
        lo, hi = boxes
        info = overlay_info(self._live_store, level)
        displayed, point = slice_of(self.viewer, info.order, self.store)
        if len(lo) and not len(boxes_in_slab(lo, hi, displayed, point, info.world_scale)):
            # the slice change re-slices every layer in this turn; the outline comes in the
            # next one (each is a frame's worth of UI-thread work)
            moved = self._move_slice_into(lo, hi)
            task = self.tasks["bins"]

            def outline() -> None:
                if not task.done:
                    task.finish(self._outline_bins(level, chunk, occupied, boxes, moved))

            next_turn(outline)
            return PENDING
        return self._outline_bins(level, chunk, occupied, boxes, "")

    def _outline_bins(
        self, level: int, chunk: list[int], occupied: bool, boxes: Box, moved: str
    ) -> Layer | None:
        lo, hi = boxes
        key = ",".join(str(c) for c in chunk)
        layer = self.bin_overlay.set_boxes(
            lo,
            hi,
            overlay_info(self._live_store, level),
            f"bins of chunk {key}",
            {"qa_level": level, "chunk": chunk, "occupied": occupied},
        )
        cut = len(self.bin_overlay.cut()) if len(lo) else 0
        where = "" if cut == len(lo) else f" ({cut:,} cut by the slice)"
        self.say(
            f"{len(lo):,} {'occupied ' if occupied else ''}bins in chunk {key} of level "
            f"{level}{where}{moved}; " + shown_of(self.bin_overlay.drawn(), cut, "outlined")
        )
        return layer

    def _move_slice_into(self, lo: np.ndarray, hi: np.ndarray) -> str:
        """Move the dims point to the middle of the boxes on the axes not displayed."""
        store = self._live_store
        placement = Placement.of(store)
        order = placement.order
        displayed, _ = slice_of(self.viewer, order, store)
        offset = self.viewer.dims.ndim - store.ndim
        middle = (lo.min(0) + hi.max(0)) / 2
        # the dims point is in the world: the middle placed as the layers show it
        world = placement.to_world_points(middle)[0]
        moved = []
        for axis in range(store.ndim):
            if axis in displayed:
                continue
            k = int(np.flatnonzero(order == axis)[0])
            self.viewer.dims.set_point(offset + k, float(world[k]))
            moved.append(f"{store.axes[axis]} = {middle[axis]:g}")
        return f"; slice moved into the chunk ({', '.join(moved)})"

    # ------------------------------------------------------------------ picking
    def _pick(self, chunk: list[int] | None, object_ids: list[int] | None) -> None:
        if chunk is not None:
            self.chunk_key = chunk
        if object_ids is not None:
            self.object_ids = object_ids
        self.events.picked()

    def pick(self, world_position: Sequence[float]) -> QATask | None:
        """Pick at a world position (napari order): the chunk key of the shown level now
        and, once the worker has read around it, the object id of the nearest vertex
        (``events.picked``). The task's result is ``(chunk key, object id or None)``."""
        store = self.store
        if store is None:
            return None
        ndim = store.ndim
        here = np.asarray(world_position, dtype=np.float64)[-ndim:]
        placement = Placement.of(store)
        p = placement.to_store_points(here)[0]  # chunks live in the stored space
        level = self.level
        info = store.level(level)
        key = np.floor((p - info.chunk_origin) / info.chunk_shape).astype(np.int64).tolist()
        self._pick(key, None)
        displayed, _ = slice_of(self.viewer, placement.order, store)
        reach = np.asarray(info.bin_shape, float) * 2.0
        others = [a for a in range(ndim) if a not in displayed]
        reach[others] = placement.scale[others] / 2.0
        return self._run(
            "pick",
            nearest_object_job,
            (store, level, p, reach, displayed),
            lambda oid: self._picked(key, oid),
        )

    def _picked(self, key: list[int], oid: int | None) -> tuple[list[int], int | None]:
        if oid is not None:
            self._pick(None, [oid])
        self.say(f"picked chunk {key}" + (f", object {oid}" if oid is not None else ""))
        return key, oid

    # ------------------------------------------------------------------ links
    def show_links(
        self,
        fine_level: int | None = None,
        scope: str = "objects",
        object_ids: Sequence[int] | None = None,
    ) -> QATask | None:
        """Draw fine -> coarse link arrows from ``fine_level`` (default: the finest linked
        level) for the picked objects (``scope="objects"``; ``object_ids``, default the
        picked ones), the visible box (``"box"``) or the whole level (``"all"``; asks first
        when that is most of the store), at most half the vertex budget of them (two ends an
        arrow), thinned by object."""
        store = self.store
        if store is None:
            return None
        families = dict(self.families)
        if not families:
            self.say("This store has no cross-level links.")
            return None
        fine_level = min(families) if fine_level is None else int(fine_level)
        if fine_level not in families:
            self.say(f"no stored links between levels {fine_level} and {fine_level + 1}")
            return None
        delta = families[fine_level]
        ids = bbox = None
        if scope == "objects":
            ids = list(self.object_ids if object_ids is None else object_ids)
            if not ids:
                self.say("pick an object (or type its id) first")
                return None
            self._pick(None, ids)
        elif scope == "box":
            bbox = self.visible_box()
        to_read = estimate_read(store, fine_level, bbox) if ids is None else 0
        if not self._confirm_read(to_read, f"Links of level {fine_level} ({scope})"):
            return None
        owner = fine_level if delta > 0 else fine_level + 1

        def apply(built: Built) -> object:
            old, self.links_layer = self.links_layer, None
            remove_layers(self.viewer, [old])

            def added(layer: Layer) -> None:
                self.links_layer = layer

            def then(layers: list[Layer]) -> Layer | None:
                self.say(built.note)
                self.events.links(note=built.note)
                return self.links_layer

            return self._add_in_turns("links", built.items, added, then)

        args = (store, owner, delta, ids, bbox, self.layer_budget(), scope)
        return self._run("links", links_job, args, apply)

    # ------------------------------------------------------------------ whole store
    def whole_store_report(self, target: str | Path) -> QATask | None:
        """Check every level of the store (the command line's ``qa`` job, chunk blocks on
        dask's threaded scheduler: it reads the whole store, without asking) and write the HTML report to ``target``; once written it
        is opened with :attr:`open_report` and :attr:`report` holds ``(path, verdict)``."""
        if self.store is None:
            return None

        def written(result: tuple[Path, str] | None) -> object:
            if result is None:
                return None
            self.report = result
            path, verdict = result
            self.say(f"whole-store report: {verdict}; written to {path}")
            self.open_report(path)
            return result

        args = (self.store, str(target))
        return self._run("whole-store report", report_job, args, written, report_progress=True)

    def density_map(self, voxel: float | None = None, level: int | None = None) -> QATask | None:
        """Count the objects (or, without objects, the vertices) of ``level`` (default:
        level 0) in every voxel of ``voxel`` world units (default: :func:`.default_voxel`)
        over the whole store, and add the image as an Image layer under the store's layers,
        in their placement (:attr:`density_layer`)."""
        store = self.store
        if store is None:
            return None
        voxel = default_voxel(store) if voxel is None else float(voxel)
        level = self.levels[0] if level is None else int(level)

        def add(density: DensityMap) -> object:
            old, self.density_layer = self.density_layer, None
            remove_layers(self.viewer, [old])
            kwargs = density_layer_kwargs(store, density)
            self.density_layer = add_density_layer(
                self.viewer, list(self._live_target.layers), kwargs
            )
            top = int(density.image.max(initial=0))
            self.say(
                f"density map of level {density.level}: {density.count} per voxel of "
                f"{voxel:g}, at most {top:,}"
                + (f"; {len(density.failures)} chunk(s) unread" if density.failures else "")
            )
            return self.density_layer

        return self._run(
            "density map", density_job, (store, voxel, level), add, report_progress=True
        )
