"""Worker tasks of the *Pyramid QA* widget: one :class:`QATask` per action.

A task runs a job generator (see :mod:`._pyramid_layers`) on the plugin's worker thread
through :class:`..worker.LoadJob` (the pool and the relay the level-of-detail loads use:
progress, result, error and end come back on the UI thread), then hands the result to the
widget on the UI thread. Cancelling sets the task's event (store reads stop between chunk
batches) and drops whatever the job still delivers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from napari_zarr_vectors.napari.qa.pure import QAProgress
from napari_zarr_vectors.napari.tasks import LoadJob

#: What a task's ``apply`` returns when it finishes later (layers added over several
#: event-loop turns).
PENDING = object()


class QATask:
    """One Pyramid QA action: ``job(*args)`` (a generator yielding
    :class:`~..pyramid_qa.QAProgress`) runs on the plugin's worker thread; ``apply(value)``
    runs on the UI thread with its result. ``done`` is set when the action is over (applied,
    failed or cancelled); ``result`` is what ``apply`` returned."""

    def __init__(
        self,
        widget: Any,
        kind: str,
        job: Callable[..., Any],
        args: tuple,
        apply: Callable[[Any], Any],
        cancellable: bool = False,
    ) -> None:
        self.widget = widget
        self.kind = kind
        #: set on cancel; handed to the job as its last argument when ``cancellable`` (store
        #: reads stop between chunk batches)
        self.cancel_event = threading.Event()
        args = (*args, self.cancel_event) if cancellable else args
        self._job = LoadJob(self, job, *args)
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

    def finish(self, result: Any) -> None:
        if self.done:
            return
        self.done = True
        self.result = result
        self.widget._task_over(self)

    # -- relayed from the worker (UI thread) ---------------------------------------------
    def _on_progress(self, p: QAProgress) -> None:
        if not self.done:
            self.progress = p
            self.widget._show_progress(self)

    def _on_result(self, value: Any) -> None:
        if self.done:
            return
        result = self._apply(value)
        if result is not PENDING:
            self.finish(result)

    def _on_error(self, exc: Exception) -> None:
        if not self.done:
            self.error = exc
            self.widget._say(f"{self.kind} failed: {type(exc).__name__}: {exc}")
            self.finish(None)

    def _on_finished(self, job: Any) -> None:
        if not self.done and self._job is job and self.cancelled:
            self.finish(None)
