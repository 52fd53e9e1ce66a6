"""Pyramid QA's whole-store actions: the report and the density map of the command line
(:mod:`napari_zarr_vectors.jobs`), run on the plugin's worker thread with progress and
cancel, and what their results become in the viewer (an HTML file opened in the browser,
an Image layer under the store's layers in their placement).

The jobs run on dask's threaded scheduler (the ``jobs`` extra); without dask the task fails
with the message naming the extra."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from napari_zarr_vectors.napari.coords import napari_affine
from napari_zarr_vectors.napari.layerdata.placement import Placement
from napari_zarr_vectors.napari.qa.compute import QAProgress
from napari_zarr_vectors.napari.qa.jobs import Job

if TYPE_CHECKING:
    from napari.layers import Image, Layer
    from napari.viewer import Viewer

    from napari_zarr_vectors.format.store import Store
    from napari_zarr_vectors.jobs import DensityMap

#: voxels along the longest side of the store's world box in the default density grid
DENSITY_VOXELS = 128


def _relay(queue: list[QAProgress], lock: threading.Lock) -> Any:
    """A ``progress(done, total, text)`` callback for a job of :mod:`napari_zarr_vectors.jobs`
    that keeps the last report for the generator to yield."""

    def progress(done: int, total: int, text: str) -> None:
        with lock:
            queue[:] = [QAProgress(int(done), int(total), str(text))]

    return progress


def _run_reporting(fn: Any, cancel: threading.Event, what: str) -> Job:
    """``fn(progress=..., cancel=...)`` on a side thread of the worker, its progress yielded
    as :class:`QAProgress` every 0.1 s (a task's generator reports between its steps; the
    job reports through a callback), its result returned, its error raised."""
    last: list[QAProgress] = [QAProgress(0, 1, what)]
    lock = threading.Lock()
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = fn(progress=_relay(last, lock), cancel=cancel)
        except BaseException as exc:  # noqa: BLE001 - raised again on the worker
            out["error"] = exc

    thread = threading.Thread(target=run, name="nzv-whole-store", daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(0.1)
        with lock:
            report = last[0]
        yield report
    if "error" in out:
        raise out["error"]
    return out.get("value")


def report_job(store: Store, target: str, cancel: threading.Event) -> Job:
    """The whole-store QA report of ``store`` written to ``target`` (HTML); returns
    ``(path, verdict)``."""
    from napari_zarr_vectors.jobs import qa_report
    from napari_zarr_vectors.jobs.report import render_html

    def run(progress: Any, cancel: threading.Event) -> Any:
        return qa_report(store, progress=progress, cancel=cancel)

    result = yield from _run_reporting(run, cancel, f"QA of {store.name}")
    if cancel.is_set():
        return None
    path = Path(target)
    path.write_text(render_html(result), encoding="utf-8")
    return path, result.verdict


def default_voxel(store: Store) -> float:
    """A voxel edge giving :data:`DENSITY_VOXELS` voxels along the longest side of the
    store's world box (world units, rounded to two significant digits)."""
    from napari_zarr_vectors.format.world import affine_box

    lo, hi = affine_box(store.placement.affine, *store.bounds)
    side = float(np.max(np.asarray(hi, float) - np.asarray(lo, float)))
    if not np.isfinite(side) or side <= 0:
        return 1.0
    edge = side / DENSITY_VOXELS
    return float(f"{edge:.2g}")


def density_job(store: Store, voxel: float, level: int, cancel: threading.Event) -> Job:
    """The density map of ``level`` on a grid of ``voxel`` world units."""
    from napari_zarr_vectors.jobs import density_map

    def run(progress: Any, cancel: threading.Event) -> Any:
        return density_map(store, voxel, level=level, progress=progress, cancel=cancel)

    return (yield from _run_reporting(run, cancel, f"density of {store.name}"))


def density_layer_kwargs(store: Store, density: DensityMap) -> dict[str, Any]:
    """``add_image`` arguments that put the density image where the store's layers show its
    world: the image's axes in napari's world order, its voxel -> world affine (taken back
    to the stored space when the store is shown there, the Store panel's toggle)."""
    shown = Placement.of(store)
    order = shown.world_order
    affine = np.asarray(density.affine, np.float64)
    if shown.stored_space:  # the layers show the stored space
        affine = np.linalg.inv(np.asarray(store.placement.affine, np.float64)) @ affine
    data = np.transpose(density.image, order)
    return {
        "data": data,
        "affine": napari_affine(affine, order, order),
        "name": f"{store.name} density ({density.count}, level {density.level})",
        "colormap": "magma",
        "blending": "additive",
        "contrast_limits": (0, max(1, int(density.image.max(initial=0)))),
        "metadata": {
            "zarr_vectors_density": {
                "store": str(store.path),
                "level": int(density.level),
                "count": density.count,
                "outside": int(density.outside),
                "failed_chunks": len(density.failures),
            }
        },
    }


def add_density_layer(viewer: Viewer, layers: list[Layer], kwargs: dict[str, Any]) -> Image:
    """The density image added under the lowest of the store's ``layers``, with the units
    of their space axes (the last ones: a Tracks layer adds a time axis in front; napari
    warns about layers of mixed units and then renders without any)."""
    ndim = kwargs["data"].ndim
    units = next((getattr(lyr, "units", None) for lyr in layers if lyr in viewer.layers), None)
    if units is not None and len(units) >= ndim:  # given to add_image: it warns at once
        kwargs = {**kwargs, "units": tuple(units)[-ndim:]}
    image = viewer.add_image(**kwargs)
    below = [viewer.layers.index(lyr) for lyr in layers if lyr in viewer.layers]
    if below:
        viewer.layers.move(viewer.layers.index(image), min(below))
    return image
