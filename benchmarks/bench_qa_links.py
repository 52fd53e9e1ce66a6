"""Pyramid QA links of the visible box on the 10M-vertex store.

    python benchmarks/bench_qa_links.py

One command. Uses the store of ``bench_scale.py`` (written into ``benchmarks/.work/`` when
missing, ~2.5 min on an idle machine): 200,000 streamlines, 10M vertices at level 0, 365
chunks. Runs ``qa.overlays.links_job`` for levels 0 -> 1 with the visible box of the fitted
overview (the whole store) and the Pyramid QA layer budget, as the dock does on the worker
thread: the first call (the level's object index read, cold; napari's layer modules already
imported, as in a viewer showing the store) and the next ones (warm).
The baseline, measured in the same run, is building a plain napari Vectors layer holding the
same number of arrows (the least any links action costs): each links time is also given
over it. Target: <= 2 s. Results: ``benchmarks/results/bench_qa_links.json``.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
RESULTS = HERE / "results" / "bench_qa_links.json"
TARGET_S = 2.0


def _run(job):
    try:
        while True:
            next(job)
    except StopIteration as stop:
        return stop.value


def main() -> int:
    import napari  # noqa: F401 - imported before timing, as in the viewer
    import napari_zarr_vectors as nzv
    from bench_scale import ensure_store
    from napari_zarr_vectors.napari.lod.settings import vertex_budget
    from napari_zarr_vectors.napari.lod.viewer_layers import make_layer
    from napari_zarr_vectors.napari.qa.model import BUDGET_SHARE
    from napari_zarr_vectors.napari.qa.overlays import links_job

    store = nzv.open_store(ensure_store(200_000, 50))
    budget = max(int(vertex_budget() * BUDGET_SHARE), 1)
    box = tuple(np.asarray(b, np.float64) for b in store.bounds)
    # the dock runs in a viewer already showing the store's layers: napari's layer modules and
    # its unit registry are loaded (1.2 s of once-per-process imports otherwise)
    make_layer(np.zeros((1, 2, store.ndim)), {"name": "warm-up"}, "vectors")
    runs = []
    for i in range(3):
        t0 = time.perf_counter()
        built = _run(links_job(store, 0, 1, None, box, budget, "box", threading.Event()))
        runs.append(time.perf_counter() - t0)
        print(f"links of the visible box, call {i + 1}: {runs[-1]:.2f} s  {built.note}")
    shown = built.shown
    data = np.random.default_rng(0).random((shown, 2, store.ndim))
    t0 = time.perf_counter()
    make_layer(data, {"name": "baseline"}, "vectors")
    baseline = time.perf_counter() - t0
    warm = float(np.median(runs[1:]))
    result = {
        "store": store.name,
        "layer_budget": budget,
        "arrows": shown,
        "note": built.note,
        "cold_s": round(runs[0], 3),
        "warm_s": round(warm, 3),
        "baseline_plain_vectors_s": round(baseline, 3),
        "warm_over_baseline": round(warm / max(baseline, 1e-6), 1),
        "target_s": TARGET_S,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
