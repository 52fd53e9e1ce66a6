"""Pyramid QA's whole-store actions: the report and the density map of the command line
(:mod:`napari_zarr_vectors.jobs`), run as tasks of the plugin's one runner with progress
(through the jobs' ``progress`` callback) and cancel, and what their results become in the
viewer: an HTML file opened in the browser, an Image layer under the store's layers in their
placement.

Inside the task the job runs on dask's threaded scheduler (the ``jobs`` extra); without dask
the task fails with the message naming the extra."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from napari_zarr_vectors.napari.coords import napari_affine
from napari_zarr_vectors.napari.layerdata.placement import Placement
from napari_zarr_vectors.napari.qa.compute import QAProgress

if TYPE_CHECKING:
    from napari.layers import Image, Layer
    from napari.viewer import Viewer

    from napari_zarr_vectors.format.api import GeometryStore
    from napari_zarr_vectors.jobs import DensityMap

#: voxels along the longest side of the store's world box in the default density grid
DENSITY_VOXELS = 128


def _relayed(progress: Callable[[QAProgress], None]) -> Callable[[int, int, str], None]:
    """A job's ``progress(done, total, text)`` as :class:`QAProgress` reports of a task."""
    return lambda done, total, text: progress(QAProgress(int(done), int(total), str(text)))


def report_job(
    store: GeometryStore,
    target: str,
    cancel: threading.Event,
    progress: Callable[[QAProgress], None],
) -> tuple[Path, str] | None:
    """The whole-store QA report of ``store`` written to ``target`` (HTML); returns
    ``(path, verdict)`` (``None``: cancelled, nothing written)."""
    from napari_zarr_vectors.jobs import qa_report
    from napari_zarr_vectors.jobs.report import render_html

    result = qa_report(store, progress=_relayed(progress), cancel=cancel)
    if cancel.is_set():
        return None
    path = Path(target)
    path.write_text(render_html(result), encoding="utf-8")
    return path, result.verdict


def default_voxel(store: GeometryStore) -> float:
    """A voxel edge giving :data:`DENSITY_VOXELS` voxels along the longest side of the
    store's world box (world units, rounded to two significant digits)."""
    from napari_zarr_vectors.format.world import affine_box

    lo, hi = affine_box(store.placement.affine, *store.bounds)  # type: ignore[attr-defined]  # a Store's placement
    side = float(np.max(np.asarray(hi, float) - np.asarray(lo, float)))
    if not np.isfinite(side) or side <= 0:
        return 1.0
    edge = side / DENSITY_VOXELS
    return float(f"{edge:.2g}")


def density_job(
    store: GeometryStore,
    voxel: float,
    level: int,
    cancel: threading.Event,
    progress: Callable[[QAProgress], None],
) -> DensityMap:
    """The density map of ``level`` on a grid of ``voxel`` world units."""
    from napari_zarr_vectors.jobs import density_map

    return density_map(store, voxel, level=level, progress=_relayed(progress), cancel=cancel)


def density_layer_kwargs(store: GeometryStore, density: DensityMap) -> dict[str, Any]:
    """``add_image`` arguments that put the density image where the store's layers show its
    world: the image's axes in napari's world order, its voxel -> world affine (taken back
    to the stored space when the store is shown there, the Store panel's toggle)."""
    shown = Placement.of(store)
    order = shown.world_order
    affine = np.asarray(density.affine, np.float64)
    if shown.stored_space:  # the layers show the stored space
        placed = np.asarray(store.placement.affine, np.float64)  # type: ignore[attr-defined]  # a Store's placement
        affine = np.linalg.inv(placed) @ affine
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
