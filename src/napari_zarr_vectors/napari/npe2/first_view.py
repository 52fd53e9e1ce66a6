"""The first picture of a store opened into an empty viewer: all of it, centred.

napari opens every layer in a 2-D view of one slice, which for 3-D vector data is a thin
and often empty cut (a tractogram showed 1,232 of its 14,576 vertices, the five navis
neurons a blob of 173 nodes). Tractography viewers and navis show such data whole, in 3-D.
So a store whose layers arrive in an empty viewer gets:

* a **3-D view** when it has three (or more) space axes;
* a **2-D slab covering the whole depth** of every space axis (``dims.margin_left`` /
  ``margin_right``): switching to 2-D shows the projection of everything, never an empty
  slice; the Store panel's *Slab* control makes it thinner, in store units;
* the camera fitted to the data (``viewer.reset_view``).

A viewer that already held layers keeps its view: the user chose it.

**The data stays in the picture** (:func:`keep_data_in_view`): docking a widget narrows the
canvas (the first dock on the right took a 1280 px window's canvas from ~960 to ~510 px)
without napari refitting, which cut the whole-store picture off. When the canvas changes
size and the camera showed all the layers (fitted to them, or all of them on the old canvas
and no longer on the new one), the view is fitted again (``viewer.fit_to_view``, the camera
angles kept). A view the user zoomed into keeps its zoom and centre.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import numpy as np

from napari_zarr_vectors.napari.layerdata.placement import Placement
from napari_zarr_vectors.napari.lod.camera import fitting_zoom, screen_extent, shows_box

if TYPE_CHECKING:
    from napari.utils.events import Event

    from napari import Viewer
    from napari_zarr_vectors.format.api import GeometryStore


def space_axes(viewer: Viewer, store: GeometryStore) -> list[int]:
    """The viewer's dims axes that show ``store``'s space axes (its layers take the last
    ``store.ndim`` dims axes; non-space axes come first)."""
    types = getattr(store, "axis_types", None) or ("space",) * int(store.ndim)
    order = Placement.of(store).order
    offset = int(viewer.dims.ndim) - int(store.ndim)
    return [offset + i for i, col in enumerate(order) if types[int(col)] == "space"]


def set_slab(viewer: Viewer, axes: list[int], thickness: float | None) -> None:
    """Set the 2-D slab on dims ``axes`` to ``thickness`` world units around the slice
    (``None``: the whole extent of each axis wherever the slice is)."""
    dims = viewer.dims
    left, right = list(dims.margin_left), list(dims.margin_right)
    for ax in axes:
        if thickness is None:
            lo, hi, step = (float(v) for v in dims.range[ax])
            half = hi - lo + step  # reaches both ends from any slice position
        else:
            half = max(float(thickness), 0.0) / 2.0
        left[ax] = right[ax] = half
    dims.margin_left, dims.margin_right = tuple(left), tuple(right)


def slab_thickness(viewer: Viewer, axes: list[int]) -> float:
    """The current 2-D slab (world units) on ``axes`` (the thickest of them)."""
    thick = np.asarray(viewer.dims.thickness, dtype=float)
    return float(thick[axes].max()) if axes else 0.0


def show_whole_store(viewer: Viewer, store: GeometryStore) -> None:
    """Put ``store`` in view whole: 3-D for three space axes, a slab of the whole depth for
    2-D views, the camera fitted to the data."""
    axes = space_axes(viewer, store)
    if not axes:
        return
    set_slab(viewer, axes, None)
    if len(axes) >= 3 and int(viewer.dims.ndisplay) == 2:
        viewer.dims.ndisplay = 3
    viewer.reset_view()


#: margin of napari's own ``reset_view`` / ``fit_to_view`` (a fraction of the canvas)
FIT_MARGIN = 0.05
#: a camera within this fraction of the fitted zoom and centre counts as fitted
FITTED_TOLERANCE = 0.02


def keep_data_in_view(viewer: Viewer) -> None:
    """Refit ``viewer`` when its canvas changes size (a dock opened or closed, the window
    resized) while the camera showed all its layers: fitted to them, or showing them whole
    before the change and not after. Connected once per viewer (by the reader's hooks)."""
    ref = weakref.ref(viewer)
    last = {"size": tuple(int(v) for v in viewer.canvas.size)}

    def on_size(event: Event | None = None) -> None:
        v = ref()
        if v is None:
            return
        old, new = last["size"], tuple(int(s) for s in v.canvas.size)
        last["size"] = new
        if old != new and min(old) > 1 and min(new) > 1 and _showed_all(v, old):
            v.fit_to_view(margin=FIT_MARGIN)

    viewer.canvas.events.size.connect(on_size)


def _showed_all(viewer: Viewer, old_size: tuple[int, ...]) -> bool:
    """Whether the camera showed every layer on a canvas of ``old_size`` and should refit
    on the current one: fitted to them there, or showing them whole there and not here."""
    if not len(viewer.layers):
        return False
    lo, hi = (np.asarray(b, np.float64) for b in viewer.layers.extent.world)
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        return False
    if shows_box(viewer, lo, hi, old_size) and not shows_box(viewer, lo, hi):
        return True
    zoom = fitting_zoom(viewer, lo, hi, FIT_MARGIN, old_size)
    if zoom is None or abs(float(viewer.scene.camera.zoom) - zoom) > FITTED_TOLERANCE * zoom:
        return False
    displayed = list(viewer.dims.displayed)
    centre = ((lo + hi) / 2)[displayed]
    camera = np.asarray(viewer.scene.camera.center, np.float64)[-len(displayed) :]
    span = max(float(np.max(screen_extent(viewer, lo, hi))), 1e-12)
    return bool(np.linalg.norm(camera - centre) <= FITTED_TOLERANCE * span)
