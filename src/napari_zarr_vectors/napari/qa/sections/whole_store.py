"""Pyramid QA model section: the whole-store jobs (the command line's ``qa`` report and
``density`` map, :mod:`..whole_store`), run in the background."""

from __future__ import annotations

import webbrowser
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from napari_zarr_vectors.napari.lod.viewer_layers import remove_layers
from napari_zarr_vectors.napari.qa.jobs import QATask
from napari_zarr_vectors.napari.qa.sections.section import QASection
from napari_zarr_vectors.napari.qa.whole_store import (
    add_density_layer,
    default_voxel,
    density_job,
    density_layer_kwargs,
    report_job,
)

if TYPE_CHECKING:
    from napari.layers import Layer
    from napari.viewer import Viewer

    from napari_zarr_vectors.jobs import DensityMap
    from napari_zarr_vectors.napari.browse.targets import BrowseTarget as Target


def _open_in_browser(path: Path) -> object:
    return webbrowser.open(Path(path).resolve().as_uri())


class WholeStoreQA(QASection):
    """The last whole-store report written and the density-map layer."""

    def __init__(self, viewer: Viewer, target: Target) -> None:
        super().__init__(viewer, target)
        #: ``(path, verdict)`` of the last whole-store report written
        self.report: tuple[Path, str] | None = None
        #: opens a written report (the browser; scripts and tests may replace it)
        self.open_report: Callable[[Path], object] = _open_in_browser
        self.density_layer: Layer | None = None

    def whole_store_report(self, target: str | Path) -> QATask | None:
        """Check every level of the store (the command line's ``qa`` job, chunk blocks on
        dask's threaded scheduler: it reads the whole store, without asking) and write the
        HTML report to ``target``; once written it is opened with :attr:`open_report` and
        :attr:`report` holds ``(path, verdict)``."""
        if self.store is None:
            return None

        def written(result: tuple[Path, str] | None) -> object:
            if result is None:
                return None
            self.report = result
            path, verdict = result
            self.say(f"whole-store report: {verdict}; written to {path}")
            self.open_report(path)
            return result

        args = (self.store, str(target))
        return self._run("whole-store report", report_job, args, written, report_progress=True)

    def density_map(self, voxel: float | None = None, level: int | None = None) -> QATask | None:
        """Count the objects (or, without objects, the vertices) of ``level`` (default:
        level 0) in every voxel of ``voxel`` world units (default: :func:`.default_voxel`)
        over the whole store, and add the image as an Image layer under the store's layers,
        in their placement (:attr:`density_layer`)."""
        store = self.store
        if store is None:
            return None
        voxel = default_voxel(store) if voxel is None else float(voxel)
        level = self.levels[0] if level is None else int(level)

        def add(density: DensityMap) -> object:
            old, self.density_layer = self.density_layer, None
            remove_layers(self.viewer, [old])
            kwargs = density_layer_kwargs(store, density)
            self.density_layer = add_density_layer(
                self.viewer, list(self._live_target.layers), kwargs
            )
            top = int(density.image.max(initial=0))
            self.say(
                f"density map of level {density.level}: {density.count} per voxel of "
                f"{voxel:g}, at most {top:,}"
                + (f"; {len(density.failures)} chunk(s) unread" if density.failures else "")
            )
            return self.density_layer

        return self._run(
            "density map", density_job, (store, voxel, level), add, report_progress=True
        )
