"""The viewer's camera and dims as a :class:`~.plan.ViewState`: the one builder of what a
view shows, used by the level-of-detail controller (what the loader plans) and by Pyramid QA
(its "visible box"), so both mean the same box.

A view is taken in the store's napari axis order and in the world (the layers' placement,
:class:`~..layerdata.placement.Placement`); :func:`visible_world_box` is the box it shows
there, :func:`visible_store_box` that box back in the stored space, clipped to the store
bounds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from napari_zarr_vectors.napari.layerdata.placement import Placement
from napari_zarr_vectors.napari.lod.plan import ViewState, visible_box

if TYPE_CHECKING:
    from napari.viewer import Viewer

    from napari_zarr_vectors.format.store import Store


def view_state(viewer: Viewer, store: Store) -> ViewState | None:
    """The current view in the store's napari axis order (``None``: the viewer has fewer
    axes than the store, or displays an axis the store does not have). The slab of a 2-D
    view is at least one layer data unit thick (what a slice of the layers shows)."""
    ndim = int(store.ndim)
    dims = viewer.dims
    offset = dims.ndim - ndim
    if offset < 0:
        return None
    nd = int(dims.ndisplay)
    displayed_world = tuple(int(a) for a in dims.displayed)
    if any(a < offset for a in displayed_world):
        return None
    cam = viewer.scene.camera
    placement = Placement.of(store)
    scale = placement.scale[placement.order]
    thickness = tuple(
        max(float(t), float(s)) for t, s in zip(tuple(dims.thickness)[offset:], scale, strict=True)
    )
    return ViewState(
        ndisplay=nd,
        center=tuple(float(c) for c in tuple(cam.center)[-nd:]),
        zoom=float(cam.zoom),
        canvas_size=tuple(int(v) for v in viewer.canvas.size),
        point=tuple(float(p) for p in tuple(dims.point)[offset:]),
        displayed=tuple(a - offset for a in displayed_world),
        thickness=thickness,
        view_direction=tuple(float(v) for v in cam.view_direction) if nd == 3 else None,
        up_direction=tuple(float(v) for v in cam.up_direction) if nd == 3 else None,
        perspective=float(cam.perspective),
    )


def visible_world_box(
    view: ViewState, placement: Placement, bounds: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """The world box (napari order) ``view`` shows of a store of stored ``bounds`` placed by
    ``placement``: :func:`~.plan.visible_box` of the store's world extent (empty, ``lo > hi``
    on some axis, when the view misses it)."""
    return visible_box(view, *placement.to_world_box(*bounds))


def visible_store_box(view: ViewState | None, store: Store) -> tuple[np.ndarray, np.ndarray]:
    """The box ``view`` shows (:func:`visible_world_box`, as the loader plans it), in the
    stored space and store order, clipped to the store bounds (``view=None``: the whole
    store)."""
    lo_s, hi_s = (np.asarray(b, float) for b in store.bounds)
    if view is None:
        return lo_s, hi_s
    placement = Placement.of(store)
    lo, hi = placement.to_store_box(*visible_world_box(view, placement, (lo_s, hi_s)))
    return np.maximum(lo, lo_s), np.minimum(hi, hi_s)
