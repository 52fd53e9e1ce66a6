"""Running a whole-store job: tasks over chunk blocks on a dask scheduler, merged exactly.

A job is a list of :class:`Task` (one function applied to one block of one level) and a
merge. :func:`run_tasks` runs them on

* dask's threaded scheduler (the default, ``scheduler=None`` or ``"threads"``; ``"sync"``
  runs them one after another in the calling thread: the serial run tests compare with);
* a ``dask.distributed`` cluster: ``"tcp://host:port"`` (a running scheduler), a
  ``distributed.Client``, a ``LocalCluster``, ``"local:N"`` (a ``LocalCluster`` of ``N``
  one-thread worker processes, started and closed by the job) or a ``dict`` of
  ``LocalCluster`` settings (``{"n_workers": 2, "processes": False}``).

Each task's partial result is handed to ``merge`` as it arrives (in any order: merges are
exact and order-free: counts, extremes, fixed-bin histograms, id sets). A task never fails
the job: an error inside it comes back as a :class:`ChunkFailure` naming the level and the
chunk (or block) it read. Cancellation (``cancel``: a :class:`threading.Event` or a
function returning ``True`` once the job should stop) is checked before each task starts
and, on a cluster, between the tasks that finish; the job then raises
:class:`~napari_zarr_vectors.format.errors.ZVCancelledError`.

dask is an optional dependency (the ``jobs`` extra): it is imported when a job runs, and its
absence raises :class:`~napari_zarr_vectors.format.errors.MissingDependencyError`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..format.errors import MissingDependencyError, ZVCancelledError

#: what ``progress`` is called with: ``(tasks done, tasks in all, what the job does)``
Progress = Callable[[int, int, str], None]
#: ``cancel``: an event, or a function saying whether to stop
Cancel = threading.Event | Callable[[], bool] | None

#: stores opened per worker process for the tasks of a cluster (by location)
OPEN_STORES_PER_WORKER = 4


@dataclass(frozen=True)
class ChunkFailure:
    """A part of a store a job could not read: ``chunk`` is a chunk key (``"1.0.2"``), or the
    name of what failed when it is no chunk (``"object_index"``, ``"links/+1"``, a block)."""

    level: int
    chunk: str
    error: str

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "chunk": self.chunk, "error": self.error}


@dataclass(frozen=True, eq=False)
class Shared:
    """A task parameter that many tasks take (``Task.params[k] = Shared(value)``): on a
    cluster it is sent to the workers once (``Client.scatter``) instead of inside every
    task that names it; the task's function gets ``value``."""

    value: Any


@dataclass(frozen=True)
class Task:
    """``fn(store, level, chunks, **params)`` on one block of one level; ``name`` says what
    failed when the whole task does (a :class:`ChunkFailure` with that name). A
    :class:`Shared` parameter reaches ``fn`` as its value."""

    fn: Callable[..., Any]
    level: int
    chunks: Any
    params: dict[str, Any] = field(default_factory=dict)
    name: str = "block"


#: what a task hands back when it did not run (the job was cancelled)
SKIPPED = "zv-task-skipped"


@dataclass
class Failed:
    """What a task that raised hands to the merge in place of its partial result."""

    failure: ChunkFailure


def require_dask() -> Any:
    """The ``dask`` module, or :class:`MissingDependencyError` naming the extra."""
    try:
        import dask
        import dask.callbacks
    except ImportError as exc:
        raise MissingDependencyError(
            "whole-store jobs need dask: pip install 'napari-zarr-vectors[jobs]'"
        ) from exc
    return dask


def _require_distributed() -> Any:
    try:
        import distributed
    except ImportError as exc:
        raise MissingDependencyError(
            "a dask.distributed scheduler needs distributed: "
            "pip install 'napari-zarr-vectors[jobs]'"
        ) from exc
    return distributed


def stopped(cancel: Cancel) -> bool:
    """Whether ``cancel`` asks the job to stop."""
    if cancel is None:
        return False
    if isinstance(cancel, threading.Event):
        return cancel.is_set()
    return bool(cancel())


@functools.lru_cache(maxsize=OPEN_STORES_PER_WORKER)
def _open_on_worker(location: str) -> Any:
    from ..format.store import open_store

    return open_store(location)


def _run_task(ref: Any, task: Task, cancel: Cancel, shared: dict[str, Any] | None = None) -> Any:
    """One task where it runs: the store (opened once per worker process from its location
    on a cluster), its :class:`Shared` parameters (``shared``: their values as the cluster
    sent them), the cancel check, and any error turned into a :class:`Failed`."""
    if stopped(cancel):
        return SKIPPED
    store = _open_on_worker(ref) if isinstance(ref, str) else ref
    params = {k: v.value if isinstance(v, Shared) else v for k, v in task.params.items()}
    params.update(shared or {})
    try:
        return task.fn(store, task.level, task.chunks, **params)
    except ZVCancelledError:
        return SKIPPED
    except Exception as exc:  # noqa: BLE001 - reported by key, the job goes on
        return Failed(ChunkFailure(task.level, task.name, f"{type(exc).__name__}: {exc}"))


def scheduler_name(scheduler: Any) -> str:
    """How a ``scheduler`` argument is reported (``"threads"``, ``"local:2"``, an address)."""
    if scheduler is None:
        return "threads"
    if isinstance(scheduler, str):
        return scheduler
    if isinstance(scheduler, dict):
        return f"LocalCluster({', '.join(f'{k}={v!r}' for k, v in scheduler.items())})"
    address = getattr(scheduler, "scheduler_address", None) or getattr(
        getattr(scheduler, "scheduler", None), "address", None
    )
    return f"{type(scheduler).__name__}({address})"


def check_scheduler(scheduler: Any) -> None:
    """Raise ``ValueError`` for a scheduler text that names none (``local:0``, a word)."""
    if not isinstance(scheduler, str) or scheduler in ("threads", "sync", "synchronous"):
        return
    if scheduler.startswith("local:"):
        n = scheduler.removeprefix("local:")
        if not n.isdigit() or int(n) < 1:
            raise ValueError(f"scheduler {scheduler!r}: expected local:N with N >= 1 workers")
    elif "://" not in scheduler:
        raise ValueError(
            f"unknown scheduler {scheduler!r}: use 'threads', 'sync', 'local:N', "
            "a scheduler address (tcp://host:port) or a distributed Client"
        )


@contextlib.contextmanager
def _client(scheduler: Any) -> Iterator[Any]:
    """A ``distributed.Client`` for a cluster ``scheduler`` (``None`` for dask's local
    schedulers); the clusters and clients it starts it also closes."""
    if scheduler is None or scheduler in ("threads", "sync", "synchronous"):
        yield None
        return
    distributed = _require_distributed()
    if isinstance(scheduler, distributed.Client):
        yield scheduler
        return
    check_scheduler(scheduler)
    cluster = None
    if isinstance(scheduler, str) and scheduler.startswith("local:"):
        n = int(scheduler.removeprefix("local:"))
        cluster = distributed.LocalCluster(
            n_workers=n, threads_per_worker=1, dashboard_address=None
        )
    elif isinstance(scheduler, dict):
        cluster = distributed.LocalCluster(**{"dashboard_address": None, **scheduler})
    elif not isinstance(scheduler, str) and not hasattr(scheduler, "scheduler_address"):
        raise TypeError(f"unknown scheduler {scheduler!r}")
    try:
        client = distributed.Client(cluster if cluster is not None else scheduler)
    except BaseException:
        if cluster is not None:
            cluster.close()
        raise
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def run_tasks(
    store: Any,
    tasks: Sequence[Task],
    merge: Callable[[Any], None],
    *,
    scheduler: Any = None,
    cancel: Cancel = None,
    progress: Progress | None = None,
    text: str = "",
    num_workers: int | None = None,
) -> list[ChunkFailure]:
    """Run ``tasks`` over ``store`` on ``scheduler``, hand each partial result to ``merge``
    (in the calling thread) and return the failures of tasks that raised (each task
    reports the chunks it could not read in its own result). ``num_workers``: threads of the
    threaded scheduler (default: the CPU count)."""
    dask = require_dask()
    failures: list[ChunkFailure] = []
    total = len(tasks)
    done = ran = 0

    def take(value: Any) -> None:
        nonlocal done, ran
        done += 1
        if isinstance(value, Failed):
            failures.append(value.failure)
            ran += 1
        elif not (isinstance(value, str) and value == SKIPPED):
            merge(value)
            ran += 1
        if progress is not None:
            progress(done, total, text)

    if progress is not None:
        progress(0, total, text)
    if not tasks:
        return failures
    with _client(scheduler) as client:
        if client is None:
            _run_local(dask, store, tasks, take, scheduler, cancel, num_workers)
        else:
            _run_cluster(client, store, tasks, take, cancel)
    if stopped(cancel):
        raise ZVCancelledError(f"{text or 'the job'} was cancelled ({ran} of {total} tasks run)")
    return failures


def _run_local(
    dask: Any,
    store: Any,
    tasks: Sequence[Task],
    take: Callable[[Any], None],
    scheduler: Any,
    cancel: Cancel,
    num_workers: int | None,
) -> None:
    """dask's threaded (or synchronous) scheduler; results merged as tasks finish."""
    lock = threading.Lock()
    keys = {f"zv-task-{i}" for i in range(len(tasks))}

    def posttask(key: Any, result: Any, dsk: Any, state: Any, worker_id: Any) -> None:
        if key in keys:
            with lock:
                take(result)

    delayed = [
        dask.delayed(_run_task, pure=False)(store, t, cancel, dask_key_name=f"zv-task-{i}")
        for i, t in enumerate(tasks)
    ]
    sync = scheduler in ("sync", "synchronous")
    options: dict[str, Any] = {"scheduler": "sync" if sync else "threads"}
    if not sync:
        options["num_workers"] = num_workers or os.cpu_count() or 1
    with dask.callbacks.Callback(posttask=posttask):
        dask.compute(*delayed, **options)


def _run_cluster(
    client: Any, store: Any, tasks: Sequence[Task], take: Callable[[Any], None], cancel: Cancel
) -> None:
    """A ``dask.distributed`` cluster: the tasks open the store from its location; their
    results stream back as they finish (``as_completed``: no round trip per task) and the
    cancel check runs here between them."""
    distributed = _require_distributed()
    ref = str(store.path)
    run = uuid.uuid4().hex[:8]
    sent: dict[int, Any] = {}  # id of a Shared -> its scattered future

    def submit(i: int, task: Task) -> Any:
        shared = {k: v for k, v in task.params.items() if isinstance(v, Shared)}
        for v in shared.values():
            if id(v) not in sent:
                sent[id(v)] = client.scatter(v.value, hash=False)
        args = {k: sent[id(v)] for k, v in shared.items()}
        bare = replace(task, params={k: v for k, v in task.params.items() if k not in shared})
        return client.submit(_run_task, ref, bare, None, args, key=f"zv-task-{run}-{i}", pure=False)

    futures = [submit(i, t) for i, t in enumerate(tasks)]
    by_future = dict(zip(futures, tasks, strict=True))
    del futures
    try:
        finished = distributed.as_completed(by_future, with_results=True, raise_errors=False)
        for future, value in finished:
            task = by_future.pop(future)
            if future.status != "finished":  # a worker lost, a task killed or cancelled
                exc = value[1] if isinstance(value, tuple) else value
                value = Failed(ChunkFailure(task.level, task.name, f"{type(exc).__name__}: {exc}"))
            take(value)
            future.release()  # (its result is no longer held on the worker)
            if stopped(cancel):
                break
    finally:
        if by_future:
            client.cancel(list(by_future))
