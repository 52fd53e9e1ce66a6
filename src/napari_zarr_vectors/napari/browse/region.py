"""Objects inside a region drawn on the canvas: a box or a lasso in a 2-D view.

Pure numpy over the vertices the layers draw (world coordinates, as
:func:`~napari_zarr_vectors.napari.layerdata.placement.layer_world_positions` gives them): no Qt,
no store I/O. The Selection dock (:mod:`napari_zarr_vectors.napari.widgets.region`) draws
the region in a temporary Shapes layer and hands its outline here.

An object is inside when at least one of its drawn vertices is: inside the outline in the
two displayed axes, and within the slice napari shows in the others (:func:`slice_extent`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from napari_zarr_vectors.format.distinct import distinct
from napari_zarr_vectors.napari.browse.targets import layer_kind
from napari_zarr_vectors.napari.conventions import OBJECT_ID
from napari_zarr_vectors.napari.layerdata.placement import layer_world_positions

if TYPE_CHECKING:
    from napari.layers import Layer
    from napari.viewer import Viewer


def inside_polygon(points: np.ndarray, polygon: np.ndarray) -> np.ndarray:
    """Which of ``points`` (N × 2) lie inside ``polygon`` (M × 2, closed implicitly), by the
    even-odd rule. Vectorised over the points (the loop runs over the outline's M edges,
    after a bounding-box test leaves only the candidates)."""
    points = np.asarray(points, np.float64).reshape(-1, 2)
    polygon = np.asarray(polygon, np.float64).reshape(-1, 2)
    inside = np.zeros(len(points), bool)
    if len(polygon) < 3 or not len(points):
        return inside
    lo, hi = polygon.min(axis=0), polygon.max(axis=0)
    candidates = np.flatnonzero(np.all((points >= lo) & (points <= hi), axis=1))
    x, y = points[candidates, 0], points[candidates, 1]
    odd = np.zeros(len(candidates), bool)
    xs, ys = polygon[:, 0], polygon[:, 1]
    for i in range(len(polygon)):
        x0, y0, x1, y1 = xs[i - 1], ys[i - 1], xs[i], ys[i]
        if y0 == y1:
            continue  # a horizontal edge crosses no horizontal ray
        crosses = (y0 > y) != (y1 > y)
        x_at = x0 + (x1 - x0) * (y - y0) / (y1 - y0)
        odd ^= crosses & (x < x_at)
    inside[candidates] = odd
    # a box drawn exactly on the data: points on its outline count as inside
    on_box = _on_axis_aligned_box(points[candidates], polygon)
    if on_box is not None:
        inside[candidates] |= on_box
    return inside


def _on_axis_aligned_box(points: np.ndarray, polygon: np.ndarray) -> np.ndarray | None:
    """For an axis-aligned rectangle, every point of its bounding box (edges included);
    ``None`` for any other outline."""
    if len(polygon) != 4:
        return None
    lo, hi = polygon.min(axis=0), polygon.max(axis=0)
    corners = np.isclose(polygon, lo) | np.isclose(polygon, hi)
    if not corners.all():
        return None
    return np.all((points >= lo) & (points <= hi), axis=1)


def slice_extent(viewer: Viewer, layers: Sequence[Layer]) -> tuple[np.ndarray, np.ndarray]:
    """World interval per viewer axis of what the 2-D view shows: the slice point minus
    ``dims.margin_left`` to plus ``margin_right``, at least half a data unit of the coarsest
    of ``layers`` either side (what napari draws of a slice without margins)."""
    dims = viewer.dims
    point = np.asarray(dims.point, np.float64)
    floor = np.zeros(len(point))
    for layer in layers:
        scale = np.abs(np.asarray(layer.scale, np.float64))[-len(point) :]
        floor[len(point) - len(scale) :] = np.maximum(floor[len(point) - len(scale) :], 0.5 * scale)
    below = np.maximum(np.asarray(dims.margin_left, np.float64), floor)
    above = np.maximum(np.asarray(dims.margin_right, np.float64), floor)
    return point - below, point + above


def objects_in_region(
    layers: Sequence[Layer],
    outline: np.ndarray,
    *,
    displayed: Sequence[int],
    extent: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Sorted ids of the objects with a drawn vertex inside ``outline``.

    ``outline``: the region's corners in the two ``displayed`` viewer axes (world
    coordinates, M × 2). ``extent``: the slice shown, ``(lo, hi)`` world bounds per viewer
    axis (:func:`slice_extent`; ``None``: the whole depth). Layers align to the viewer's
    trailing axes, as napari does; hidden layers and layers without object ids are left out;
    Tracks ignore the slice (napari draws their tails across it).
    """
    outline = np.asarray(outline, np.float64).reshape(-1, 2)
    n_view = max(displayed) + 1 if extent is None else len(extent[0])
    found: list[np.ndarray] = []
    for layer in layers:
        if not getattr(layer, "visible", True) or OBJECT_ID not in layer.features:
            continue
        positions, rows = layer_world_positions(layer)
        if not len(positions):
            continue
        d = positions.shape[1]
        offset = n_view - d
        axes = [a - offset for a in displayed]
        if min(axes) < 0:
            continue  # the layer does not span the displayed axes
        keep = inside_polygon(positions[:, axes], outline)
        if extent is not None and layer_kind(layer) != "tracks":
            lo, hi = (np.asarray(bound, np.float64)[offset:] for bound in extent)
            for axis in set(range(d)) - set(axes):
                keep &= (positions[:, axis] >= lo[axis]) & (positions[:, axis] <= hi[axis])
        ids = layer.features[OBJECT_ID].to_numpy()[rows[keep]]
        found.append(np.asarray(ids, np.int64))
    if not found:
        return np.empty(0, np.int64)
    ids = distinct(np.concatenate(found))
    return ids[ids >= 0]  # negative: a preview's path piece, not an object yet
