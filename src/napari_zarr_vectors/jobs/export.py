"""Export as a job: :func:`~napari_zarr_vectors.write.export.export_objects` run as a task.

The export reads whole objects at full resolution through their manifests and writes them
with the reference writer in one go (the writer builds the target's pyramid from all of
them), so it is one task: on a cluster it runs on a worker, which must see the target path.
The target is checked before anything runs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ..format.errors import ZVError
from ..write.engine import check_target
from ..write.export import export_objects
from .runner import Cancel, Progress, Task, run_tasks

#: the schedulers that run a task in this process (a progress callable reaches it)
_LOCAL = (None, "threads", "sync", "synchronous")


def export_task(
    store: Any, level: int, chunks: Any, *, target: str, object_ids: Any, progress: Any
) -> Path:
    """The task: ``export_objects`` of ``store`` into ``target``."""
    return export_objects(store, target, object_ids=object_ids, progress=progress)


def export_job(
    store: Any,
    target: str | os.PathLike,
    object_ids: np.ndarray | None = None,
    *,
    scheduler: Any = None,
    cancel: Cancel = None,
    progress: Progress | None = None,
) -> Path:
    """Export ``object_ids`` of ``store`` (``None``: every object) into a new store at
    ``target`` as a job (:func:`~.runner.run_tasks`); returns the written path. Raises the
    write's :class:`~napari_zarr_vectors.write.engine.WriteError` (an existing target, the
    store itself) before running, and :class:`ZVError` when the task fails."""
    path = check_target(target, [store.path])
    written: list[Path] = []
    local = scheduler is None or (isinstance(scheduler, str) and scheduler in _LOCAL)
    params = {
        "target": str(path),
        "object_ids": object_ids,
        "progress": progress if local else None,
    }
    task = Task(export_task, 0, None, params, name="export")
    failures = run_tasks(
        store,
        [task],
        written.append,
        scheduler=scheduler,
        cancel=cancel,
        progress=None if local else progress,
        text=f"export of {store.name}",
    )
    if failures:
        raise ZVError(f"export of {store.path} into {path} failed: {failures[0].error}")
    return written[0]
