"""Background work of Pyramid QA: one :class:`QATask` per action, and the store reads that
need no layer (statistics, chunk boxes, bins, the object under a click, dropped objects).

A task runs a job generator (these, or the layer-building ones of :mod:`.overlays`) on the
plugin's worker thread through :class:`~napari_zarr_vectors.napari.tasks.LoadJob` (the pool
and the relay the level-of-detail loads use: progress, result, error and end come back on
the UI thread), then hands the result to its owner (the :class:`.model.PyramidQA`) on the
UI thread. Every job takes the task's cancel event as its last argument: reads that accept
one stop between chunk batches, and every job stops between its reads (the job yields after
each one; a cancelled task's generator is closed there). Whatever a cancelled job still
delivers is dropped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

import napari_zarr_vectors as nzv
from napari_zarr_vectors.format import pyramid as core
from napari_zarr_vectors.napari.lod.cache import shared_cache
from napari_zarr_vectors.napari.qa.compute import DroppedObjects, QAProgress
from napari_zarr_vectors.napari.tasks import LoadJob

if TYPE_CHECKING:
    from napari_zarr_vectors.format.api import GeometryStore

#: What a task's ``apply`` returns when it finishes later (layers added over several
#: event-loop turns).
PENDING = object()

#: what a worker job generator is: progress reports, then its result
Job = Generator[QAProgress, None, Any]

#: ``(rows of level_statistics, (fine level, delta) of each linked pair, has objects)``
StoreFacts = tuple[list[dict[str, Any]], list[tuple[int, int]], bool]


class TaskOwner(Protocol):
    """What a :class:`QATask` reports to (the :class:`.model.PyramidQA`)."""

    def say(self, text: str) -> None: ...

    def task_changed(self, task: QATask) -> None: ...


class QATask:
    """One Pyramid QA action: ``job(*args, cancel)`` (a generator yielding
    :class:`~.compute.QAProgress`, or with ``report_progress`` a function reporting them
    through its ``progress`` callback) runs on the plugin's worker thread; ``apply(value)``
    runs on the UI thread with its result. ``done`` is set when the action is over (applied,
    failed or cancelled); ``result`` is what ``apply`` returned."""

    def __init__(
        self,
        owner: TaskOwner,
        kind: str,
        job: Callable[..., Job] | Callable[..., object],
        args: tuple,
        apply: Callable[[Any], Any],
        report_progress: bool = False,
    ) -> None:
        self.owner = owner
        self.kind = kind
        #: set on cancel; handed to the job as its last argument
        self.cancel_event = threading.Event()
        # ``report_progress``: ``job`` is a plain function reporting its QAProgress through
        # a ``progress`` callback (a job of napari_zarr_vectors.jobs), not a generator
        self._job = LoadJob(self, job, *args, self.cancel_event, report_progress=report_progress)
        self._apply = apply
        self.done = False
        self.cancelled = False
        self.result: Any = None
        self.error: Exception | None = None
        self.progress = QAProgress(0, 1, kind)

    def start(self) -> QATask:
        self._job.start()
        return self

    def cancel(self) -> None:
        """Stop at the next step (a store read stops between chunk batches); nothing of it
        reaches the viewer."""
        self.cancelled = True
        self.cancel_event.set()
        self._job.quit()
        self.finish(None)

    def finish(self, result: object) -> None:
        if self.done:
            return
        self.done = True
        self.result = result
        self.owner.task_changed(self)

    # -- relayed from the worker (UI thread) ---------------------------------------------
    def _on_progress(self, p: QAProgress) -> None:
        if not self.done:
            self.progress = p
            self.owner.task_changed(self)

    def _on_result(self, value: object) -> None:
        if self.done:
            return
        result = self._apply(value)
        if result is not PENDING:
            self.finish(result)

    def _on_error(self, exc: Exception) -> None:
        if not self.done:
            self.error = exc
            self.owner.say(f"{self.kind} failed: {type(exc).__name__}: {exc}")
            self.finish(None)

    def _on_finished(self, job: LoadJob) -> None:
        if not self.done and self._job is job and self.cancelled:
            self.finish(None)


# --------------------------------------------------------------------------------------------
# store reads (worker thread)
# --------------------------------------------------------------------------------------------


def call_job(text: str, fn: Callable[..., object], *args: Any) -> Job:
    """``fn(*args)`` as a one-step job reporting ``text`` (the trailing cancel event is not
    handed to ``fn``: the job stops before the read when the task is cancelled)."""
    *fn_args, cancel = args
    yield QAProgress(0, 1, text)
    return None if cancel.is_set() else fn(*fn_args)


def store_facts(store: GeometryStore, cancel: threading.Event) -> Job:
    """Level statistics, the ``(fine level, delta)`` of each adjacent pair with stored links
    (``+1`` at the fine level preferred, else ``-1`` at the coarse level), and whether the
    store has objects (:data:`StoreFacts`)."""
    yield QAProgress(0, 2, "reading level metadata")
    rows = core.level_statistics(store)
    levels = [lv.index for lv in store.levels]
    families = []
    for fine, coarse in zip(levels[:-1], levels[1:], strict=True):
        yield QAProgress(1, 2, f"looking for links between levels {fine} and {coarse}")
        if coarse != fine + 1:
            continue
        try:
            if 1 in core.cross_level_deltas(store, fine):
                families.append((fine, 1))
            elif -1 in core.cross_level_deltas(store, coarse):
                families.append((fine, -1))
        except nzv.ZVError:
            continue
    return rows, families, store.object_index(levels[0]) is not None


def bins_job(
    store: GeometryStore, level: int, chunk: list[int], occupied: bool, cancel: threading.Event
) -> Job:
    """The bins of one chunk (occupied ones only: reads the chunk)."""
    yield QAProgress(0, 1, f"bins of chunk {chunk}")
    return core.bin_boxes(store, level, chunk, occupied=occupied, cache=shared_cache())  # type: ignore[arg-type]  # occupied bins read a Store's own rows


def nearest_object_job(
    store: GeometryStore,
    level: int,
    p: np.ndarray,
    reach: np.ndarray,
    displayed: list[int],
    cancel: threading.Event,
) -> Job:
    """The object owning the stored vertex nearest ``p`` (in the displayed axes) within
    ``p +- reach`` (``None``: no object there)."""
    yield QAProgress(0, 1, "reading around the click")
    try:
        geom = store.read(level, bbox=(p - reach, p + reach), attributes=False, cancel=cancel)
    except nzv.ZVError:
        return None
    if not geom.vertex_count or geom.vertex_object_ids is None:
        return None
    d = geom.positions[:, displayed] - p[displayed]
    oid = int(geom.vertex_object_ids[int(np.argmin(np.einsum("ij,ij->i", d, d)))])
    return oid if oid >= 0 else None


def dropped_job(store: GeometryStore, fine: int, coarse: int, cancel: threading.Event) -> Job:
    """The objects present at ``fine`` and absent at ``coarse`` (ordered finer first)."""
    fine, coarse = sorted((int(fine), int(coarse)))
    yield QAProgress(0, 2, f"comparing levels {fine} and {coarse}")
    if store.object_index(fine) is None:
        return DroppedObjects(np.empty(0, np.int64), fine, coarse, False)
    ids = core.dropped_objects(store, fine, coarse)
    yield QAProgress(1, 2, f"counting the objects of level {fine}")
    n_fine = len(core.present_objects(store, fine))
    return DroppedObjects(np.asarray(ids, np.int64), fine, coarse, True, n_fine)


def levels_holding_job(
    store: GeometryStore, ids: Sequence[int] | np.ndarray, cancel: threading.Event
) -> Job:
    """The levels at which at least one of ``ids`` has a non-empty manifest (where
    *Filter shown layer* can show them)."""
    ids = np.asarray(ids, np.int64)
    out = []
    for i, lv in enumerate(store.levels):
        yield QAProgress(i, len(store.levels), "finding the levels that hold them")
        if np.isin(ids, core.present_objects(store, lv.index)).any():
            out.append(lv.index)
    return out
