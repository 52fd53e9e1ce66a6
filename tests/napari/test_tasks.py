"""The one background runner (napari_zarr_vectors.napari.tasks): results, progress and
errors come back on the UI thread, Cancel stops a job and drops what it still reports,
and no other mechanism runs background work."""

from __future__ import annotations

import ast
import threading
from pathlib import Path

import pytest

from napari_zarr_vectors.napari import tasks

SRC = Path(tasks.__file__).resolve().parents[1]


def steps(n, seen_threads):
    for i in range(n):
        seen_threads.append(threading.current_thread() is threading.main_thread())
        yield i
    return n * 10


@pytest.mark.gui
def test_a_generator_job_reports_progress_then_its_result_on_the_ui_thread(qtbot):
    got, worker_threads = [], []

    def note(kind):
        return lambda v: got.append(
            (kind, v, threading.current_thread() is threading.main_thread())
        )

    job = tasks.run_task(
        steps,
        3,
        worker_threads,
        on_progress=note("progress"),
        on_result=note("result"),
        on_finished=lambda j: got.append(("finished", j, True)),
    )
    qtbot.waitUntil(lambda: job.done, timeout=5_000)
    assert got == [
        ("progress", 0, True),
        ("progress", 1, True),
        ("progress", 2, True),
        ("result", 30, True),
        ("finished", job, True),
    ]
    assert worker_threads == [False, False, False]  # the work ran off the UI thread


@pytest.mark.gui
def test_a_plain_function_and_a_progress_callback(qtbot):
    got = []

    def count(n, *, progress):
        for i in range(n):
            progress(i, n, f"step {i}")
        return "done"

    job = tasks.run_task(
        count, 2, report_progress=True, on_progress=got.append, on_result=got.append
    )
    qtbot.waitUntil(lambda: job.done, timeout=5_000)
    assert got == [(0, 2, "step 0"), (1, 2, "step 1"), "done"]


@pytest.mark.gui
def test_an_error_reaches_napari_and_the_caller(qtbot):
    from napari.utils.notifications import notification_manager

    shown, errors = [], []

    def record(event):
        shown.append(str(event.message))

    def fail(store):
        raise ValueError(f"cannot read {store}")

    notification_manager.notification_ready.connect(record)
    try:
        job = tasks.run_task(fail, "s.zarrvectors", on_result=errors.append, on_error=errors.append)
        qtbot.waitUntil(lambda: job.done, timeout=5_000)
    finally:
        notification_manager.notification_ready.disconnect(record)
    assert [str(e) for e in errors] == ["cannot read s.zarrvectors"]
    assert any("cannot read s.zarrvectors" in m for m in shown), shown


@pytest.mark.gui
def test_cancel_stops_the_job_and_drops_what_it_still_reports(qtbot):
    started, closed, got = threading.Event(), threading.Event(), []
    release = threading.Event()

    def endless():
        try:
            while True:
                started.set()
                release.wait(5)
                yield "tick"
        finally:
            closed.set()

    job = tasks.run_task(endless, on_result=got.append, on_progress=got.append)
    assert started.wait(5)
    job.quit()
    release.set()
    qtbot.waitUntil(lambda: job.done, timeout=5_000)
    assert closed.is_set() and job.cancel_event.is_set()
    assert got == []  # the tick yielded after Cancel never reached the caller


@pytest.mark.gui
def test_a_job_does_not_keep_its_owner_alive(qtbot):
    import gc

    class Owner:
        def __init__(self):
            self.got = []

        def _on_progress(self, value):
            self.got.append(value)

        _on_result = _on_error = _on_progress

        def _on_finished(self, job):
            pass

    gate = threading.Event()
    owner = Owner()
    job = tasks.LoadJob(owner, lambda: gate.wait(5) and 1).start()
    del owner
    gc.collect()
    assert job.owner() is None
    gate.set()
    qtbot.waitUntil(lambda: job.done, timeout=5_000)


def test_no_other_background_mechanism_in_the_napari_side():
    """napari's create_worker/thread_worker and bare threads are not used: every job goes
    through tasks."""
    found = []
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            name = (
                node.attr
                if isinstance(node, ast.Attribute)
                else node.id
                if isinstance(node, ast.Name)
                else None
            )
            if name in ("create_worker", "thread_worker", "Thread", "QThread"):
                found.append(f"{path.relative_to(SRC)}:{node.lineno} {name}")
    assert found == []
