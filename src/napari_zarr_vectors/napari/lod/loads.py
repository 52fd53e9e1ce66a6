"""The loads of one store's layers: at most one running, each newer one replacing it.

:class:`Loads` numbers every load it starts (its generation) and runs it on a worker (a
:class:`~napari_zarr_vectors.napari.tasks.LoadJob` running :meth:`.loader.Loader.run`) or,
for a :attr:`LoadsOwner.synchronous` owner, on the calling thread. What a stale load (an
older generation, or an owner that closed) reports is dropped; what the current one
reports reaches its owner on the UI thread: a first picture and the result to show, the
result of a load that found nothing new to show, its progress (napari's progress bar and
the status line) and its failure.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Protocol

from napari_zarr_vectors.napari.lod.load_progress import LoadProgress
from napari_zarr_vectors.napari.tasks import LoadJob, report_error

if TYPE_CHECKING:
    from napari_zarr_vectors.napari.lod.loader import Loader, LoadRequest, LoadResult, Progress


class LoadsOwner(Protocol):
    """What :class:`Loads` loads for (a :class:`.controller.ZVLayerController`)."""

    loader: Loader
    #: load on the calling thread (the UI blocks meanwhile)
    synchronous: bool

    @property
    def closed(self) -> bool: ...

    def request(self, force: bool = False) -> LoadRequest: ...

    def show_load(self, result: LoadResult) -> None:
        """Put a load's result (or its first picture) on screen."""

    def keep_shown(self, result: LoadResult) -> None:
        """A load found the shown data current (``result.unchanged``)."""

    def load_progress(self, p: Progress) -> None:
        """A load fetched another batch of its chunks."""

    def loads_settled(self) -> None:
        """The last load ended and no other runs."""

    def show_status(self, text: str) -> None: ...


class Loads:
    """The loads of ``owner`` (held weakly), named after the store ``name`` in their
    progress bar and messages."""

    def __init__(self, owner: LoadsOwner, name: str) -> None:
        self._owner = weakref.ref(owner)
        self._name = name
        #: the number of the newest load (:attr:`.load_values.LoadRequest.generation`)
        self.generation = 0
        self._worker: LoadJob | None = None
        self._progress = LoadProgress(name)

    @property
    def running(self) -> bool:
        """Whether a load runs on a worker."""
        return self._worker is not None

    def start(self, force: bool) -> None:
        """Start a load of the owner's current view (:meth:`LoadsOwner.request`), replacing
        the one running."""
        owner = self._owner()
        if owner is None or owner.closed:
            return
        self.generation += 1
        self.cancel()
        req = owner.request(force=force)
        generation = self.generation
        self._progress.start()
        if owner.synchronous:
            try:
                result = owner.loader.load(req)
            except Exception as exc:  # noqa: BLE001 - shown like a worker's error
                self._on_error(exc)
                return
            self._on_result(result)
            return

        def stale() -> bool:
            now = self._owner()
            return generation != self.generation or now is None or now.closed

        self._worker = LoadJob(self, owner.loader.run, req, stale)
        self._worker.start()

    def cancel(self) -> None:
        """Stop the running load (what it still reports is dropped)."""
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.quit()

    def close(self) -> None:
        """Stop the running load and close its progress bar."""
        self.cancel()
        self._progress.close()

    def _current(self, generation: int) -> LoadsOwner | None:
        """The owner, when what a load of ``generation`` reports is still wanted."""
        owner = self._owner()
        if owner is None or owner.closed or generation != self.generation:
            return None
        return owner

    # -- what a job reports (UI thread; tasks.JobOwner) -----------------------------------
    def _on_finished(self, worker: Any) -> None:
        if self._worker is worker:
            self._worker = None
            self._progress.close()
            owner = self._owner()
            if owner is not None and not owner.closed:
                owner.loads_settled()

    def _on_error(self, exc: Exception) -> None:
        """A load failed as a whole: the layers keep what they show, napari shows the error
        (:func:`.tasks.report_error`, as for every background job)."""
        self._progress.close()
        owner = self._owner()
        if owner is not None:
            owner.show_status(f"{self._name}: loading failed ({type(exc).__name__}: {exc})")
        report_error(exc)

    def _on_progress(self, p: Progress) -> None:
        owner = self._current(p.generation)
        if owner is None:
            return
        if p.preview is not None:  # a first picture while the rest loads
            owner.show_load(p.preview)
        owner.load_progress(p)
        if p.total and p.done < p.total:
            self._progress.update(p)

    def _on_result(self, result: LoadResult | None) -> None:
        owner = None if result is None else self._current(result.generation)
        if owner is None or result is None:
            return
        self._progress.close()
        if result.unchanged:
            owner.keep_shown(result)
        else:
            owner.show_load(result)
