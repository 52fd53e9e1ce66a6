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

    from napari_zarr_vectors.format.api import GeometryStore


def view_state(viewer: Viewer, store: GeometryStore) -> ViewState | None:
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


def visible_store_box(
    view: ViewState | None, store: GeometryStore
) -> tuple[np.ndarray, np.ndarray]:
    """The box ``view`` shows (:func:`visible_world_box`, as the loader plans it), in the
    stored space and store order, clipped to the store bounds (``view=None``: the whole
    store)."""
    lo_s, hi_s = (np.asarray(b, float) for b in store.bounds)
    if view is None:
        return lo_s, hi_s
    placement = Placement.of(store)
    lo, hi = placement.to_store_box(*visible_world_box(view, placement, (lo_s, hi_s)))
    return np.maximum(lo, lo_s), np.minimum(hi, hi_s)


# --------------------------------------------------------------------------------------------
# a world box on the canvas: its size on screen, whether the view shows it, the zoom fitting it
# --------------------------------------------------------------------------------------------


def _screen_axes(viewer: Viewer) -> np.ndarray | None:
    """The screen's up and right directions (rows; displayed-axis order) of a 3-D view
    (``None`` in 2-D, where they are the displayed axes themselves)."""
    if int(viewer.dims.ndisplay) != 3:
        return None
    cam = viewer.scene.camera
    up = np.asarray(cam.up_direction, np.float64)
    return np.stack([up, np.cross(np.asarray(cam.view_direction, np.float64), up)])


def screen_extent(viewer: Viewer, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``(height, width)`` in world units of the world box ``lo``-``hi`` (every viewer
    axis, napari order) as the camera shows it: the projection of the box onto the
    screen's up and right directions in 3-D (orthographic), its displayed sides in 2-D."""
    size = (np.asarray(hi, np.float64) - np.asarray(lo, np.float64))[list(viewer.dims.displayed)]
    axes = _screen_axes(viewer)
    return size[-2:] if axes is None else np.abs(axes) @ size


def fitting_zoom(
    viewer: Viewer,
    lo: np.ndarray,
    hi: np.ndarray,
    margin: float,
    canvas_size: tuple[int, ...] | None = None,
) -> float | None:
    """The zoom (screen pixels per world unit) at which the world box ``lo``-``hi`` fills
    the canvas (``canvas_size``, default the viewer's) but a ``margin`` (a fraction of the
    canvas) on its tighter side; ``None`` for a box of no size on screen."""
    extent = screen_extent(viewer, lo, hi)
    canvas = np.asarray(viewer.canvas.size if canvas_size is None else canvas_size, np.float64)
    sides = extent > 1e-12 * max(float(np.max(np.abs(hi))), 1.0)
    if not sides.any():
        return None
    return float(np.min(canvas[sides] / extent[sides]) * (1.0 - margin))


def shows_box(
    viewer: Viewer,
    lo: np.ndarray,
    hi: np.ndarray,
    canvas_size: tuple[int, ...] | None = None,
    *,
    slack: float = 1e-6,
) -> bool:
    """Whether the camera shows the whole world box ``lo``-``hi`` (every viewer axis, napari
    order) on its displayed axes, on a canvas of ``canvas_size`` (default the viewer's):
    every corner within ``center ± canvas / (2 zoom)`` along the screen's axes (orthographic
    3-D, docs/NAPARI-FACTS). ``slack`` is a fraction of the canvas a corner may pass by."""
    cam = viewer.scene.camera
    displayed = list(viewer.dims.displayed)
    lo_d = np.asarray(lo, np.float64)[displayed]
    hi_d = np.asarray(hi, np.float64)[displayed]
    canvas = np.asarray(viewer.canvas.size if canvas_size is None else canvas_size, np.float64)
    half = canvas * (1.0 + slack) / (2.0 * max(float(cam.zoom), 1e-12))
    center = np.asarray(cam.center, np.float64)[-len(displayed) :]
    axes = _screen_axes(viewer)
    if axes is None:
        return bool(
            np.all(lo_d[-2:] >= center[-2:] - half) and np.all(hi_d[-2:] <= center[-2:] + half)
        )
    corners = np.array(np.meshgrid(*zip(lo_d, hi_d, strict=True), indexing="ij")).reshape(3, -1).T
    offsets = (corners - center) @ axes.T  # (8, 2): along up, along right
    return bool(np.all(np.abs(offsets) <= half))
