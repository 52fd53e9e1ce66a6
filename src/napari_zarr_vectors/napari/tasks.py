"""The plugin's one runner of background work: every job (level-of-detail loads, Pyramid QA
actions, the store panel's counts, Pick's isolate, export, side reads of object tables)
runs on one ``QThreadPool`` of the plugin's own and reports back on the UI thread the same
way.

The API
-------
:class:`LoadJob` ``(owner, fn, *args)``
    Runs ``fn(*args)`` on a worker thread once :meth:`~LoadJob.start` is called. ``fn`` is
    a generator function (each value it yields is progress, its return value the result)
    or a plain function (its return value is the result). The owner's methods
    ``_on_progress(value)``, ``_on_result(value)``, ``_on_error(exc)`` and
    ``_on_finished(job)`` (:class:`JobOwner`) are called on the UI thread; the job holds
    its owner weakly, so a job never keeps a closed widget or controller alive.
:meth:`LoadJob.quit`
    Cancels: sets :attr:`LoadJob.cancel_event` (hand it to store reads as their
    ``cancel``: fetches not started yet are dropped), closes a generator at its next
    ``yield`` and drops whatever it still reports; ``_on_finished`` still comes.
:func:`run_task` ``(fn, *args, on_result=..., on_error=..., on_progress=..., what=...)``
    The same job for callers that take callbacks (widgets): starts it and returns it.
    ``fn`` gets the job's :meth:`~LoadJob.report` as ``progress=`` when
    ``report_progress`` is set (functions that report progress through a callback).
:func:`report_error`
    How a failed job reaches the user: napari's notification (with its traceback).
    :func:`run_task` reports every error this way, then calls ``on_error`` (a status line).
:func:`run_aside` ``(fn, *args)``
    Work with nothing to report (a side read that warms a cache), on the same pool.

napari's ``thread_worker``/``create_worker`` is not used: superqt wraps every worker run in
``warnings.catch_warnings()``, which is not thread-safe -- a worker ending while the UI
thread is inside its own ``catch_warnings`` restores a stale global filter list (e.g.
leaving "error" filters behind) -- and napari 0.9.2 never relays the captured warnings.
Warnings raised in jobs (skipped chunks) go to the global ``warnings.showwarning``, which
napari's notification manager shows (on the UI thread).
"""

from __future__ import annotations

import inspect
import threading
import weakref
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from qtpy.QtCore import QObject, QThreadPool

#: worker threads: a load, a cancelled load finishing its batch, a side read (an object
#: table) and a widget's job (counts, isolate, export, a QA action) run side by side
POOL_THREADS = 4

#: what a job returns, and what it reports as progress
R = TypeVar("R")
P = TypeVar("P")

_POOL: QThreadPool | None = None
_RELAY: QObject | None = None


class JobOwner(Protocol):
    """What a :class:`LoadJob` reports to (on the UI thread)."""

    def _on_progress(self, value: Any) -> None: ...

    def _on_result(self, value: Any) -> None: ...

    def _on_error(self, exc: Exception) -> None: ...

    def _on_finished(self, job: LoadJob) -> None: ...


def _pool() -> QThreadPool:
    """The thread pool of our own, so jobs never queue behind other plugins' workers."""
    global _POOL
    if _POOL is None:
        from qtpy.QtCore import QThreadPool

        _POOL = QThreadPool()
        _POOL.setMaxThreadCount(POOL_THREADS)
    return _POOL


def _relay() -> QObject:
    """The one QObject (UI thread, never deleted) that carries every job's progress, result,
    error and end to the UI thread. Jobs hold no Qt objects, so they may be freed on any
    thread."""
    global _RELAY
    if _RELAY is None:
        from qtpy.QtCore import QObject, Signal

        class _Relay(QObject):
            progress = Signal(object)
            result = Signal(object)
            error = Signal(object)
            finished = Signal(object)

        relay = _Relay()
        relay.progress.connect(lambda item: _deliver(item, "_on_progress"))
        relay.result.connect(lambda item: _deliver(item, "_on_result"))
        relay.error.connect(lambda item: _deliver(item, "_on_error"))
        relay.finished.connect(lambda job: _end(job))
        _RELAY = relay
    return _RELAY


def _deliver(item: tuple[LoadJob, object], method: str) -> None:
    job, value = item
    owner = job.owner()
    if owner is not None and not job.cancelled:
        getattr(owner, method)(value)


def _end(job: LoadJob) -> None:
    job.done = True
    owner = job.owner()
    if owner is not None:
        owner._on_finished(job)


def _start(work: Callable[[], object]) -> None:
    from qtpy.QtCore import QRunnable

    class _Runnable(QRunnable):  # deleted by the pool once run (autoDelete)
        def run(self) -> None:  # worker thread
            work()

    _pool().start(_Runnable())


class LoadJob:
    """One background job: ``fn(*args)`` on the plugin's pool, reporting to ``owner`` (a
    :class:`JobOwner`, held weakly) on the UI thread. See the module docstring."""

    def __init__(
        self,
        owner: JobOwner,
        fn: Callable[..., object],
        *args: object,
        report_progress: bool = False,
    ) -> None:
        self.owner = weakref.ref(owner)
        self._fn = fn
        self._args = args
        #: ``fn`` reports progress through a callback: it gets :meth:`report` as ``progress``
        self._kwargs = {"progress": self.report} if report_progress else {}
        #: set by :meth:`quit`: reads given it as ``cancel`` stop between fetches
        self.cancel_event = threading.Event()
        #: the end has reached the UI thread
        self.done = False

    @property
    def cancelled(self) -> bool:
        return self.cancel_event.is_set()

    def start(self) -> LoadJob:
        relay = _relay()
        _start(lambda: self._run(relay))
        return self

    def quit(self) -> None:
        """Cancel: reads stop between fetches, a generator at its next ``yield``; its
        progress, result and errors are dropped."""
        self.cancel_event.set()

    def report(self, *value: object) -> None:
        """Report progress from the worker thread (``value``: the arguments, a tuple when
        there are several); the owner's ``_on_progress`` gets it on the UI thread."""
        self._emit(_relay(), "progress", (self, value[0] if len(value) == 1 else value))

    def _run(self, relay: QObject) -> None:
        try:
            out = self._fn(*self._args, **self._kwargs)
            result = self._drive(out, relay) if inspect.isgenerator(out) else out
            if not self.cancelled:
                self._emit(relay, "result", (self, result))
        except Exception as exc:  # noqa: BLE001 - reported on the UI thread
            if not self.cancelled:
                self._emit(relay, "error", (self, exc))
        finally:
            self._emit(relay, "finished", self)

    def _drive(self, gen: Generator[object, Any, object], relay: QObject) -> object:
        while True:
            if self.cancelled:
                gen.close()
                return None
            try:
                progress = next(gen)
            except StopIteration as stop:
                return stop.value
            self._emit(relay, "progress", (self, progress))

    def _emit(self, relay: QObject, signal: str, value: object) -> None:
        """Emit through the relay; once Qt has deleted it (the application is closing while
        a job runs), stop quietly instead of printing a traceback per batch."""
        try:
            getattr(relay, signal).emit(value)
        except RuntimeError:
            self.cancel_event.set()


def report_error(exc: BaseException) -> None:
    """Show a failed job's error in napari (a notification with its traceback)."""
    from napari.utils.notifications import notification_manager

    notification_manager.receive_error(type(exc), exc, exc.__traceback__)


class _Callbacks(Generic[R, P]):
    """The :class:`JobOwner` of a :func:`run_task` job: its callbacks."""

    def __init__(
        self,
        on_result: Callable[[R], None] | None,
        on_error: Callable[[Exception], None] | None,
        on_progress: Callable[[P], None] | None,
        on_finished: Callable[[LoadJob], None] | None,
    ) -> None:
        self.on_result = on_result
        self.on_error = on_error
        self.on_progress = on_progress
        self.on_finished = on_finished

    def _on_progress(self, value: P) -> None:
        if self.on_progress is not None:
            self.on_progress(value)

    def _on_result(self, value: R) -> None:
        if self.on_result is not None:
            self.on_result(value)

    def _on_error(self, exc: Exception) -> None:
        report_error(exc)
        if self.on_error is not None:
            self.on_error(exc)

    def _on_finished(self, job: LoadJob) -> None:
        _RUNNING.discard(self)
        if self.on_finished is not None:
            self.on_finished(job)


#: the callback owners of running :func:`run_task` jobs (a job holds its owner weakly)
_RUNNING: set[_Callbacks[Any, Any]] = set()


def run_task(
    fn: Callable[..., R | Generator[P, None, R]],
    *args: object,
    on_result: Callable[[R], None] | None = None,
    on_error: Callable[[Exception], None] | None = None,
    on_progress: Callable[[P], None] | None = None,
    on_finished: Callable[[LoadJob], None] | None = None,
    report_progress: bool = False,
    start: bool = True,
) -> LoadJob:
    """Run ``fn(*args)`` in the background with callbacks on the UI thread (see the module
    docstring); returns the job (started unless ``start`` is false)."""
    owner = _Callbacks(on_result, on_error, on_progress, on_finished)
    _RUNNING.add(owner)
    job = LoadJob(owner, fn, *args, report_progress=report_progress)
    return job.start() if start else job


def run_aside(fn: Callable[..., object], *args: object) -> None:
    """Run ``fn(*args)`` on the pool with nothing to report (its errors are the caller's:
    ``fn`` catches what it expects)."""
    _start(lambda: fn(*args))
