"""The base of the Pyramid QA model's sections: the store of one browse target, the state the
sections share (the status, the running tasks, what is picked) and how they run a task.

Each section (:mod:`.levels`, :mod:`.dropped`, :mod:`.side_by_side`, :mod:`.outlines`,
:mod:`.links`, :mod:`.whole_store`) adds its state and actions to :class:`QASection`;
:class:`..model.PyramidQA` is all of them for one target, wired to the viewer.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from napari.utils.events import EmitterGroup, Event

from napari_zarr_vectors.napari.browse.targets import BrowseState, browse_state_of
from napari_zarr_vectors.napari.conventions import meta_of
from napari_zarr_vectors.napari.lod import camera
from napari_zarr_vectors.napari.lod.settings import vertex_budget as default_budget
from napari_zarr_vectors.napari.lod.view_geometry import Box
from napari_zarr_vectors.napari.lod.viewer_layers import add_layer, next_turn
from napari_zarr_vectors.napari.qa.compute import drawn_text, reads_most, store_vertices
from napari_zarr_vectors.napari.qa.jobs import PENDING, Job, QATask

if TYPE_CHECKING:
    from napari.layers import Layer
    from napari.viewer import Viewer

    from napari_zarr_vectors.format.api import GeometryStore
    from napari_zarr_vectors.napari.browse.targets import BrowseTarget as Target
    from napari_zarr_vectors.napari.lod.controller import ZVLayerController

#: Share of the vertex budget one added layer may hold (see :meth:`QASection.layer_budget`).
BUDGET_SHARE = 0.25


class QASection:
    """What every section of the Pyramid QA model has: the viewer, the target (held weakly),
    ``events``, the status, the tasks and what is picked. Actions return the
    :class:`~..jobs.QATask` they started (``None`` when they start none: the status says
    why)."""

    #: asks before an action reads most of the store: ``confirm(text) -> bool`` (set by
    #: :class:`..model.PyramidQA`)
    confirm: Callable[[str], bool]

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
        self.tasks: dict[str, QATask] = {}
        # picked: the chunk the bins are outlined in, the objects the links are drawn for
        self.chunk_key: list[int] | None = None
        self.object_ids: list[int] = []

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

    # ------------------------------------------------------------------ picked
    def _pick(self, chunk: list[int] | None, object_ids: list[int] | None) -> None:
        if chunk is not None:
            self.chunk_key = chunk
        if object_ids is not None:
            self.object_ids = object_ids
        self.events.picked()
