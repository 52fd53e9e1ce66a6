"""The worker thread of level-of-detail loading: a ``QThreadPool`` of the plugin's own and
the relay that brings a job's progress, result, error and end back to its controller on the
UI thread (the controller's ``_on_progress``, ``_on_result``, ``_on_error`` and
``_on_finished``)."""

from __future__ import annotations

import weakref
from typing import Any

_POOL: Any = None
_RELAY: Any = None


def _pool() -> Any:
    """A thread pool of our own (two threads: a load, and a cancelled one finishing its
    batch), so loads never queue behind other plugins' workers."""
    global _POOL
    if _POOL is None:
        from qtpy.QtCore import QThreadPool

        _POOL = QThreadPool()
        _POOL.setMaxThreadCount(2)
    return _POOL


def _relay() -> Any:
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

        _RELAY = _Relay()
        _RELAY.progress.connect(lambda item: _deliver(item, "_on_progress"))
        _RELAY.result.connect(lambda item: _deliver(item, "_on_result"))
        _RELAY.error.connect(lambda item: _deliver(item, "_on_error"))
        _RELAY.finished.connect(lambda job: _deliver((job, job), "_on_finished"))
    return _RELAY


def _deliver(item: tuple, method: str) -> None:
    job, value = item
    controller = job.controller()
    if controller is not None:
        getattr(controller, method)(value)


class LoadJob:
    """Runs a :meth:`.loader.Loader.run` generator on a worker thread (``QThreadPool``); its
    progress, result, error and end reach the controller on the UI thread through Qt
    signals.

    napari's ``thread_worker`` is not used: superqt wraps every worker run in
    ``warnings.catch_warnings()``, which is not thread-safe -- a worker ending while the UI
    thread is inside its own ``catch_warnings`` restores a stale global filter list (e.g.
    leaving "error" filters behind) -- and napari 0.9.2 never relays the captured warnings.
    Warnings raised here (skipped chunks) go to the global ``warnings.showwarning``, which
    napari's notification manager shows (on the UI thread)."""

    def __init__(self, controller: Any, fn: Any, *args: Any) -> None:
        self.controller = weakref.ref(controller)
        self._fn = fn
        self._args = args
        self._abort = False

    def start(self) -> None:
        from qtpy.QtCore import QRunnable

        relay = _relay()
        job = self

        class _Runnable(QRunnable):  # deleted by the pool once run (autoDelete)
            def run(self) -> None:  # worker thread
                job._run(relay)

        _pool().start(_Runnable())

    def quit(self) -> None:
        """Ask the job to stop at the next batch boundary (its result is dropped)."""
        self._abort = True

    def _run(self, relay: Any) -> None:
        try:
            gen = self._fn(*self._args)
            while True:
                if self._abort:
                    gen.close()
                    break
                try:
                    progress = next(gen)
                except StopIteration as stop:
                    if not self._abort:
                        self._emit(relay, "result", (self, stop.value))
                    break
                self._emit(relay, "progress", (self, progress))
        except Exception as exc:  # noqa: BLE001 - reported on the UI thread
            if not self._abort:
                self._emit(relay, "error", (self, exc))
        finally:
            self._emit(relay, "finished", self)

    def _emit(self, relay: Any, signal: str, value: Any) -> None:
        """Emit through the relay; once Qt has deleted it (the application is closing while
        a load runs), stop quietly instead of printing a traceback per batch."""
        try:
            getattr(relay, signal).emit(value)
        except RuntimeError:
            self._abort = True
