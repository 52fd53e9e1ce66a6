"""Whole-store jobs at scale: the QA report against plain reads, and 1 vs 2 cluster workers.

    python benchmarks/bench_jobs.py

One command. Uses the store of ``bench_scale.py`` (written into ``benchmarks/.work/`` when
missing, ~3-5 min): 200,000 streamlines, 10M vertices at level 0, 4 levels, links between
adjacent levels (10M records each way between levels 0 and 1). The page cache is warmed by
one untimed read; every timing opens the store afresh (no decoded index or chunk is kept).

Baselines, measured in the same run:

* **read vertices**: every chunk of every level decoded once (``load_rows`` block by
  block, in the calling thread): the least any whole-store job reads;
* **read all QA reads**: the same plus every level's object index and its cross-level links
  (``Store.object_index``, ``Store.links``): the data the QA report has to check;
* **read every level**: ``Store.read(level)`` of each level, as a script reads a store whole
  (vertices with their objects and attributes).

Measurements:

* **QA, threads**: :func:`~napari_zarr_vectors.jobs.qa_report` on dask's threaded scheduler
  (the default); given over the three baselines (target, issue 41: <= 3x "the time of
  reading every level once": ``Store.read`` of each level; the other two are a floor);
* **QA, LocalCluster of 1 and 2 workers** (one-thread worker processes, started before the
  clock and given as a ``Client``): the speed-up of 2 workers over 1 (target >= 1.6 on this
  2-core machine) and each worker's peak RSS after its job, beside its RSS before the job
  (started, the job's modules loaded) and the store's level-0 data (target: bounded by the
  chunk block, not the store).

Results: ``benchmarks/results/bench_jobs.json`` and a table on stdout. On a machine shared
with other work the seconds move; the ratios are measured side by side.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _memory  # noqa: E402
from _memory import peak_rss_mb  # noqa: E402

RESULTS = HERE / "results" / "bench_jobs.json"
TARGETS = {"qa_over_read_every_level": 3.0, "speedup_2_over_1_workers": 1.6}


def read_vertices(path: Path) -> int:
    """Decode every chunk of every level once; returns the rows read."""
    import napari_zarr_vectors as nzv
    from napari_zarr_vectors.format.pyramid import load_rows
    from napari_zarr_vectors.jobs.blocks import plan_blocks

    store = nzv.open_store(path)
    return sum(
        load_rows(store, lv.index, block).n_rows
        for lv in store.levels
        for block in plan_blocks(store, lv.index)
    )


def read_all(path: Path) -> int:
    """:func:`read_vertices` plus every level's object index and cross-level links."""
    import napari_zarr_vectors as nzv
    from napari_zarr_vectors.format import pyramid

    rows = read_vertices(path)
    store = nzv.open_store(path)
    for lv in store.levels:
        store.object_index(lv.index)
        for delta in pyramid.cross_level_deltas(store, lv.index):
            rows += len(store.links(lv.index, delta))
    return rows


def read_levels(path: Path) -> int:
    """``Store.read`` of every level, whole; returns the vertices read."""
    import warnings

    import napari_zarr_vectors as nzv

    store = nzv.open_store(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sum(len(store.read(lv.index).positions) for lv in store.levels)


def timed(fn, *args) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t0, out


def qa(path: Path, scheduler=None):
    import napari_zarr_vectors as nzv
    from napari_zarr_vectors.jobs import qa_report

    return qa_report(nzv.open_store(path), scheduler=scheduler)


def on_cluster(path: Path, n_workers: int) -> dict:
    """The QA job on a fresh LocalCluster of ``n_workers`` one-thread processes."""
    import cloudpickle
    import distributed

    cloudpickle.register_pickle_by_value(_memory)  # workers need not find benchmarks/
    with (
        distributed.LocalCluster(
            n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        client.run(_import_job)  # every worker up, the job's modules loaded, before the clock
        idle = client.run(peak_rss_mb)
        seconds, result = timed(qa, path, client)
        rss = client.run(peak_rss_mb)
    return {
        "seconds": seconds,
        "result": result,
        "worker_peak_rss_mb": sorted(rss.values()),
        "worker_idle_rss_mb": sorted(idle.values()),
    }


def _import_job() -> None:
    import napari_zarr_vectors.jobs.qa  # noqa: F401


def main() -> int:
    from bench_scale import ensure_store

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--objects", type=int, default=200_000)
    ap.add_argument("--vertices", type=int, default=50)
    args = ap.parse_args()
    path = ensure_store(args.objects, args.vertices)
    data_mb = sum(f.stat().st_size for f in (path / "0").rglob("*") if f.is_file()) / 2**20

    read_vertices(path)  # warm the page cache: every timing below reads from memory
    t_vertices, n_rows = timed(read_vertices, path)
    t_all, _ = timed(read_all, path)
    t_levels, _ = timed(read_levels, path)
    t_threads, threads = timed(qa, path)
    one = on_cluster(path, 1)
    two = on_cluster(path, 2)
    assert threads.to_json()["levels"] == one["result"].to_json()["levels"]
    assert one["result"].to_json()["levels"] == two["result"].to_json()["levels"]

    out = {
        "store": path.name,
        "vertices_read": n_rows,
        "level_0_on_disk_mb": round(data_mb, 1),
        "seconds": {
            "read_vertices": round(t_vertices, 2),
            "read_all_qa_reads": round(t_all, 2),
            "read_every_level": round(t_levels, 2),
            "qa_threads": round(t_threads, 2),
            "qa_1_worker": round(one["seconds"], 2),
            "qa_2_workers": round(two["seconds"], 2),
        },
        "ratios": {
            "qa_over_read_vertices": round(t_threads / t_vertices, 2),
            "qa_over_read_all": round(t_threads / t_all, 2),
            "qa_over_read_every_level": round(t_threads / t_levels, 2),
            "speedup_2_over_1_workers": round(one["seconds"] / two["seconds"], 2),
        },
        "worker_peak_rss_mb": {
            "1_worker": [round(v) for v in one["worker_peak_rss_mb"]],
            "2_workers": [round(v) for v in two["worker_peak_rss_mb"]],
        },
        "worker_idle_rss_mb": {
            "1_worker": [round(v) for v in one["worker_idle_rss_mb"]],
            "2_workers": [round(v) for v in two["worker_idle_rss_mb"]],
        },
        "verdict": threads.verdict,
        "targets": TARGETS,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=1))
    print(table(out))
    return 0


def table(out: dict) -> str:
    s, r = out["seconds"], out["ratios"]
    rows = [
        ("read vertices (baseline)", s["read_vertices"], "1.00", ""),
        ("read all QA reads (baseline)", s["read_all_qa_reads"], "", ""),
        ("read every level (baseline)", s["read_every_level"], "", ""),
        ("QA, threads / read vertices", s["qa_threads"], f"{r['qa_over_read_vertices']:.2f}", ""),
        ("QA, threads / read all", s["qa_threads"], f"{r['qa_over_read_all']:.2f}", ""),
        (
            "QA, threads / read every level",
            s["qa_threads"],
            f"{r['qa_over_read_every_level']:.2f}",
            f"<= {TARGETS['qa_over_read_every_level']}",
        ),
        ("QA, 1 worker", s["qa_1_worker"], "", ""),
        (
            "QA, 2 workers: speed-up over 1",
            s["qa_2_workers"],
            f"{r['speedup_2_over_1_workers']:.2f}",
            f">= {TARGETS['speedup_2_over_1_workers']}",
        ),
    ]
    lines = [
        f"{out['store']}: {out['vertices_read']:,} vertices in all levels, level 0 "
        f"{out['level_0_on_disk_mb']} MB on disk; QA verdict {out['verdict']}",
        f"{'measurement':34s} {'seconds':>8s} {'ratio':>7s}  target",
    ]
    lines += [f"{a:34s} {b:8.2f} {c:>7s}  {d}" for a, b, c, d in rows]
    rss = out["worker_peak_rss_mb"]
    idle = out["worker_idle_rss_mb"]
    lines.append(f"worker peak RSS (MB): 1 worker {rss['1_worker']}, 2 workers {rss['2_workers']}")
    lines.append(
        f"  before the job (started, modules loaded): 1 worker {idle['1_worker']}, "
        f"2 workers {idle['2_workers']}"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
