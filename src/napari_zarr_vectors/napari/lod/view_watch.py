"""The viewer events a level-of-detail controller follows: a view change (camera, dims,
canvas size) and layers leaving the viewer."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from napari_zarr_vectors.napari.lod import gc_pauses

if TYPE_CHECKING:
    from napari import Viewer


class ViewWatch:
    """Calls ``on_view`` after each change of what ``viewer`` shows (camera centre, zoom,
    angles, perspective; dims point, order, ndisplay, slab margins; the canvas size) and
    ``on_removed`` when a layer leaves it, until :meth:`stop`."""

    def __init__(
        self,
        viewer: Viewer,
        on_view: Callable[[Any], None],
        on_removed: Callable[[Any], None],
    ) -> None:
        cam = viewer.scene.camera.events
        dims = viewer.dims.events
        self._on_view = on_view
        self._on_removed = on_removed
        self._sources = [
            cam.center,
            cam.zoom,
            cam.angles,
            cam.perspective,
            dims.point,
            dims.ndisplay,
            dims.order,
            dims.margin_left,
            dims.margin_right,
            viewer.canvas.events.size,
        ]
        for emitter in self._sources:
            emitter.connect(on_view)
        viewer.layers.events.removed.connect(on_removed)
        gc_pauses.thaw_on_close(viewer)

    def stop(self, viewer: Viewer) -> None:
        for emitter in self._sources:
            emitter.disconnect(self._on_view)
        self._sources = []
        viewer.layers.events.removed.disconnect(self._on_removed)
