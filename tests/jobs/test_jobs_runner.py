"""The job runner: schedulers, merging, failures by key, cancellation, dask as an option."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import napari_zarr_vectors as nzv
from napari_zarr_vectors.format.errors import MissingDependencyError, ZVCancelledError
from napari_zarr_vectors.jobs.blocks import plan_blocks
from napari_zarr_vectors.jobs.runner import Shared, Task, require_dask, run_tasks


def count_rows(store, level, chunks, *, fail_on=None):
    """A task: the chunk keys and rows of a block (raises for block ``fail_on``)."""
    if fail_on is not None and np.array_equal(chunks[0], fail_on):
        raise RuntimeError("this block fails")
    from napari_zarr_vectors.format.pyramid import load_rows

    return level, [tuple(c) for c in chunks.tolist()], load_rows(store, level, chunks).n_rows


def _run(store, scheduler=None, **kwargs):
    tasks = [
        Task(count_rows, 0, b, name=f"block {i}") for i, b in enumerate(plan_blocks(store, 0, 3))
    ]
    found = []
    failures = run_tasks(store, tasks, found.append, scheduler=scheduler, **kwargs)
    return sorted(found), failures, tasks


@pytest.fixture
def store(data_dir):
    return nzv.open_store(data_dir / "v09/streamlines.zarrvectors")


def test_blocks_cover_every_chunk_once(store):
    blocks = plan_blocks(store, 0, 3)
    keys = np.concatenate(blocks)
    assert len(keys) == len(store.chunks(0))
    assert {tuple(k) for k in keys.tolist()} == {tuple(k) for k in store.chunks(0).tolist()}
    assert max(len(b) for b in blocks) == 3


@pytest.mark.parametrize("scheduler", [None, "threads", "sync"])
def test_local_schedulers_equal_the_serial_run(store, scheduler):
    serial, _, _ = _run(store, "sync")
    found, failures, _ = _run(store, scheduler)
    assert found == serial and failures == []
    assert sum(n for _, _, n in found) == store.level(0).vertex_count


def test_a_local_cluster_by_address_and_by_client_equals_the_serial_run(store):
    distributed = pytest.importorskip("distributed")
    serial, _, _ = _run(store, "sync")
    with distributed.LocalCluster(
        n_workers=2, processes=False, protocol="tcp://", dashboard_address=None
    ) as cluster:
        assert cluster.scheduler_address.startswith("tcp://")
        by_address, failures, _ = _run(store, cluster.scheduler_address)
        assert by_address == serial and failures == []
        with distributed.Client(cluster) as client:
            by_client, _, _ = _run(store, client)
            assert by_client == serial
            assert client.status == "running"  # a client handed over is not closed


def test_local_cluster_settings_equal_the_serial_run(store):
    pytest.importorskip("distributed")
    serial, _, _ = _run(store, "sync")
    found, failures, _ = _run(store, {"n_workers": 2, "processes": False})
    assert found == serial and failures == []


def test_a_failing_task_is_reported_by_name_and_the_others_merge(store):
    blocks = plan_blocks(store, 0, 3)
    tasks = [
        Task(count_rows, 0, b, {"fail_on": blocks[1][0]}, name=f"block {i}")
        for i, b in enumerate(blocks)
    ]
    found = []
    failures = run_tasks(store, tasks, found.append)
    assert [(f.level, f.chunk) for f in failures] == [(0, "block 1")]
    assert "RuntimeError: this block fails" in failures[0].error
    assert len(found) == len(blocks) - 1


def test_cancel_by_event_stops_before_the_tasks(store):
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(ZVCancelledError, match="cancelled"):
        _run(store, "sync", cancel=cancel)


def test_cancel_by_callback_is_checked_per_task(store):
    seen = []

    def progress(done, total, text):
        seen.append(done)

    with pytest.raises(ZVCancelledError, match=r"\(1 of \d+ tasks run\)"):
        tasks = [Task(count_rows, 0, b) for b in plan_blocks(store, 0, 3)]
        found = []
        run_tasks(
            store,
            tasks,
            found.append,
            scheduler="sync",
            cancel=lambda: len(found) >= 1,
            progress=progress,
        )
    assert seen[0] == 0 and len(tasks) > 2


def test_progress_counts_every_task(store):
    seen = []
    _, _, tasks = _run(store, progress=lambda d, t, text: seen.append((d, t)))
    assert seen[0] == (0, len(tasks)) and seen[-1] == (len(tasks), len(tasks))
    assert sorted(d for d, _ in seen) == list(range(len(tasks) + 1))


@pytest.mark.parametrize("bad", ["local:0", "local:x", "nonsense"])
def test_unknown_schedulers_are_refused(store, bad):
    with pytest.raises(ValueError, match="scheduler"):
        _run(store, bad)


def test_without_dask_a_job_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask", None)
    with pytest.raises(MissingDependencyError, match=r"napari-zarr-vectors\[jobs\]"):
        require_dask()


def where_it_ran(store, level, chunks):
    """A task: the address of the dask.distributed worker running it (raises elsewhere)."""
    import distributed

    return distributed.get_worker().address


def test_a_client_given_runs_every_task_on_its_cluster_workers(store):
    distributed = pytest.importorskip("distributed")
    tasks = [
        Task(where_it_ran, 0, b, name=f"block {i}") for i, b in enumerate(plan_blocks(store, 0, 2))
    ]
    # dask's threaded scheduler runs no task on a worker: every one fails, by name
    found = []
    failures = run_tasks(store, tasks, found.append)
    assert found == [] and len(failures) == len(tasks)
    assert all("ValueError" in f.error for f in failures)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        workers = {w.address for w in cluster.workers.values()}
        failures = run_tasks(store, tasks, found.append, scheduler=client)
        assert failures == [] and len(found) == len(tasks) > 2
        assert set(found) <= workers
        # the QA job names the cluster it ran on and equals the serial run
        from napari_zarr_vectors.jobs import qa_report

        on_cluster = qa_report(store, scheduler=client, block_chunks=2)
        assert on_cluster.scheduler == f"Client({cluster.scheduler_address})"
        serial = qa_report(store, scheduler="sync")
        assert on_cluster.to_json()["levels"] == serial.to_json()["levels"]


def test_cancel_on_a_cluster_stops_between_the_tasks_that_finish(store):
    pytest.importorskip("distributed")
    tasks = [Task(count_rows, 0, b) for b in plan_blocks(store, 0, 2)]
    found = []
    with pytest.raises(ZVCancelledError, match=rf"\(1 of {len(tasks)} tasks run\)"):
        run_tasks(
            store,
            tasks,
            found.append,
            scheduler={"n_workers": 1, "processes": False},
            cancel=lambda: len(found) >= 1,
        )
    assert len(found) == 1 and len(tasks) > 2


def rows_plus_offset(store, level, chunks, *, offset):
    """A task: the rows of the block plus a parameter every task shares."""
    return count_rows(store, level, chunks)[2] + offset["rows"]


@pytest.mark.parametrize("scheduler", ["sync", "threads", "cluster"])
def test_a_shared_parameter_reaches_every_task_as_its_value(store, scheduler):
    """A ``Shared`` parameter is sent to a cluster once (one scattered key for every task),
    and every task, on any scheduler, gets the value inside it."""
    blocks = plan_blocks(store, 0, 2)
    offset = Shared({"rows": 1000})
    tasks = [Task(rows_plus_offset, 0, b, {"offset": offset}) for b in blocks]
    want = sorted(count_rows(store, 0, b)[2] + 1000 for b in blocks)
    found: list[int] = []
    if scheduler != "cluster":
        assert run_tasks(store, tasks, found.append, scheduler=scheduler) == []
        assert sorted(found) == want
        return
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        scattered = []
        real = client.scatter
        client.scatter = lambda *a, **k: scattered.append(a) or real(*a, **k)
        assert run_tasks(store, tasks, found.append, scheduler=client) == []
    assert sorted(found) == want and len(tasks) > 2
    assert scattered == [({"rows": 1000},)]
