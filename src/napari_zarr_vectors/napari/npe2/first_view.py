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
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from napari_zarr_vectors.napari.layerdata.placement import Placement

if TYPE_CHECKING:
    from napari import Viewer
    from napari_zarr_vectors.napari.types import ZVStore


def space_axes(viewer: Viewer, store: ZVStore) -> list[int]:
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


def show_whole_store(viewer: Viewer, store: ZVStore) -> None:
    """Put ``store`` in view whole: 3-D for three space axes, a slab of the whole depth for
    2-D views, the camera fitted to the data."""
    axes = space_axes(viewer, store)
    if not axes:
        return
    set_slab(viewer, axes, None)
    if len(axes) >= 3 and int(viewer.dims.ndisplay) == 2:
        viewer.dims.ndisplay = 3
    viewer.reset_view()
