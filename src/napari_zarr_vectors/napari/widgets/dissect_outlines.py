"""The Dissect regions drawn in the viewer: one Vectors layer of outline segments, and a
Points layer of handles (the regions' centres) to drag them by.

:func:`region_segments` (pure numpy) gives a region's outline in store coordinates: in a
3-D view a box's wireframe, a sphere's three great circles and a square patch of a plane
with a tick along its normal; in a 2-D view the region seen along the hidden axes, placed at
the slice (a box's rectangle, a sphere's circle, the line where a plane meets the slice).
:class:`RegionOutlines` keeps the layer (role ``"region"``, so no browse widget takes it for
store data) in step with a :class:`~.dissect.Dissection` and the viewer's slice, coloured by
role (:data:`~napari_zarr_vectors.napari.browse.dissect.ROLE_COLOURS`), and the handles:
dragging one (napari's *select* mode of the handles layer, 2-D or 3-D) moves its region's
centre there.
"""

from __future__ import annotations

import copy
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np

from napari_zarr_vectors.napari.browse.dissect import ROLE_COLOURS
from napari_zarr_vectors.napari.browse.targets import store_layers
from napari_zarr_vectors.napari.layerdata.placement import Placement
from napari_zarr_vectors.napari.lod.viewer_layers import add_layer, make_layer, remove_layers
from napari_zarr_vectors.napari.qa.compute import slice_of
from napari_zarr_vectors.napari.qa.overlays import (
    box_outline_segments,
    overlay_info,
    segments_layer,
)

if TYPE_CHECKING:
    from napari.layers import Layer
    from napari.viewer import Viewer

    from napari_zarr_vectors.napari.browse.dissect import Dissection, RegionSpec


#: segments of a circle
CIRCLE_STEPS = 64

#: a handle's size: this share of the store's largest extent
HANDLE_SHARE = 1 / 40

#: the layer's role in its metadata block
ROLE = "region"


def _circle(
    centre: np.ndarray, radius: float, axes: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray]:
    angles = np.linspace(0, 2 * np.pi, CIRCLE_STEPS + 1)
    ring = np.tile(centre, (CIRCLE_STEPS + 1, 1))
    ring[:, axes[0]] += radius * np.cos(angles)
    ring[:, axes[1]] += radius * np.sin(angles)
    return ring[:-1], ring[1:]


def _box(lo: np.ndarray, hi: np.ndarray, displayed: list[int], point: np.ndarray):
    starts, ends, _ = box_outline_segments(
        lo[None], hi[None], displayed, point, np.full(len(lo), np.inf)
    )
    return starts, ends


def region_segments(
    spec: RegionSpec,
    displayed: list[int],
    point: np.ndarray,
    bounds: tuple[np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """``(starts, ends)`` of ``spec``'s outline (store order) for a view showing the store
    axes ``displayed`` at the slice ``point`` (store order); ``bounds``, the store's box,
    sizes a plane's patch."""
    c = spec.center
    ndim = len(c)
    flat = len(displayed) < ndim  # a 2-D view of a 3-D store: outlines at the slice
    lo_store, hi_store = (np.asarray(b, np.float64) for b in bounds)
    span = float(np.linalg.norm(hi_store - lo_store)) or 1.0
    if spec.kind == "box":
        half = np.asarray(spec.size, np.float64) / 2
        return _box(c - half, c + half, displayed, point)
    if spec.kind == "sphere":
        centre = c.copy()
        if flat:
            others = [a for a in range(ndim) if a not in displayed]
            centre[others] = point[others]
        parts = [_circle(centre, spec.radius, pair) for pair in combinations(displayed, 2)]
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    return _plane(spec, displayed, point, (lo_store + hi_store) / 2, span)


def _plane(
    spec: RegionSpec, displayed: list[int], point: np.ndarray, middle: np.ndarray, span: float
):
    """A plane: in 3-D a square patch of side ``span / 2`` around its point nearest the
    store's middle, with a tick along the normal; in 2-D the line where it meets the slice
    (the patch's rectangle when it lies in the slice)."""
    assert spec.normal is not None  # a plane has one (RegionSpec)
    n = spec.normal / np.linalg.norm(spec.normal)
    ndim = len(n)
    base = middle - ((middle - spec.center) @ n) * n  # the plane's point nearest the middle
    if len(displayed) == ndim:
        helper = np.eye(ndim)[int(np.argmin(np.abs(n)))]
        u = np.cross(n, helper) if ndim == 3 else np.array([-n[1], n[0]])
        u /= np.linalg.norm(u)
        half = span / 4
        if ndim == 3:
            v = np.cross(n, u)
            corners = np.array(
                [base + half * (su * u + sv * v) for su, sv in ((-1, -1), (1, -1), (1, 1), (-1, 1))]
            )
            starts, ends = corners, np.roll(corners, -1, axis=0)
        else:
            starts, ends = (base - half * u)[None], (base + half * u)[None]
        tick = (base[None], (base + n * half / 2)[None])
        return np.concatenate([starts, tick[0]]), np.concatenate([ends, tick[1]])
    others = [a for a in range(ndim) if a not in displayed]
    shown = n[displayed]
    if np.linalg.norm(shown) < 1e-9:  # the plane is the slice's plane (or parallel to it)
        lo, hi = middle - span / 4, middle + span / 4
        return _box(lo, hi, displayed, point)
    # the points x of the slice (x[others] = point[others]) with n . (x - centre) = 0
    rhs = n @ spec.center - n[others] @ point[others]
    on = shown * rhs / (shown @ shown)
    direction = np.array([-shown[1], shown[0]]) / np.linalg.norm(shown)
    near = on + ((middle[displayed] - on) @ direction) * direction
    a, b = point.copy(), point.copy()
    a[displayed] = near - direction * span / 2
    b[displayed] = near + direction * span / 2
    return a[None], b[None]


class RegionOutlines:
    """The outline and handle layers of a :class:`~.dissect.Dissection` in ``viewer``:
    redrawn when its regions change and when the slice or the display mode does; removed by
    :meth:`remove`. Once the user (or a closing viewer) removes one, they stay away until
    the regions change."""

    def __init__(self, viewer: Viewer, dissection: Dissection) -> None:
        self.viewer = viewer
        self.dissection = dissection
        self.layer: Layer | None = None
        #: the Points layer of the regions' centres (dragged to move them)
        self.handles: Layer | None = None
        self._busy = False
        #: a layer of ours was removed: no redraw for the slice until the regions change
        self._off = False
        #: the slice the outlines were drawn for (:meth:`_slice_key`)
        self._drawn_for: tuple | None = None
        dissection.events.regions.connect(self.refresh)
        viewer.dims.events.point.connect(self.refresh)
        viewer.dims.events.ndisplay.connect(self.refresh)

    def segments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(starts, ends, colours)`` of every region's outline for the current view."""
        store = self.dissection.store
        displayed, point = slice_of(self.viewer, None, store)
        ndim = int(store.ndim)
        if len(displayed) < 2:
            displayed = list(range(ndim))
        starts, ends, colours = [], [], []
        for spec in self.dissection.regions:
            try:
                spec.region()
            except ValueError:
                continue  # numbers that make no region (a zero normal) are not drawn
            a, b = region_segments(spec, displayed, point, store.bounds)
            starts.append(a)
            ends.append(b)
            colours.append(np.tile(ROLE_COLOURS[spec.role], (len(a), 1)))
        if not starts:
            empty = np.empty((0, ndim))
            return empty, empty, np.empty((0, 4))
        return np.concatenate(starts), np.concatenate(ends), np.concatenate(colours)

    def refresh(self, event: object = None) -> Layer | None:
        """Redraw (nothing to do when a slice event leaves the slice the outlines were drawn
        for); once the store's data layers have left the viewer (it is closing), the
        outlines go too, so that their own extent never drives the slice."""
        if self._busy:
            return self.layer
        if not store_layers(self.viewer, str(self.dissection.store.path)):
            self.remove()
            return None
        from_dims = getattr(event, "source", None) is self.viewer.dims
        layers = self.viewer.layers
        if any(x is not None and x not in layers for x in (self.layer, self.handles)):
            # removed by the user or a closing viewer: off until the regions change
            self.remove()
            self._off = True
        if from_dims and (self._off or self._slice_key() == self._drawn_for):
            return self.layer
        self._off = False
        key = self._slice_key()
        self._busy = True
        try:
            self._drawn_for = key
            return self._draw()
        finally:
            self._busy = False

    def _slice_key(self) -> tuple:
        displayed, point = slice_of(self.viewer, None, self.dissection.store)
        others = [a for a in range(len(point)) if a not in displayed]
        return tuple(displayed), tuple(np.round(point[others], 9).tolist())

    def _draw(self) -> Layer | None:
        starts, ends, colours = self.segments()
        if not len(starts):
            self.remove()
            return None
        store = self.dissection.store
        data, kwargs, kind = segments_layer(
            starts,
            ends,
            overlay_info(store, self.dissection.level),
            role=ROLE,
            label="Dissect regions",
            colour=colours.astype(np.float32),
            extra={"regions": len(self.dissection.regions)},
        )
        kwargs["edge_width"] = float(kwargs["edge_width"]) * 2
        # drawn over the streamlines in 3-D too: a region inside a dense bundle is hidden
        # by the paths in front of it otherwise
        kwargs["blending"] = "translucent_no_depth"
        if self.layer is not None and self.layer in self.viewer.layers:
            self.layer.data = data
            self.layer.edge_color = kwargs["edge_color"]
            self.layer.metadata = kwargs["metadata"]
        else:
            self.layer = add_layer(self.viewer, make_layer(data, kwargs, kind))
        self._draw_handles(kwargs["metadata"])
        return self.layer

    def to_top(self) -> None:
        """Put the outline and handle layers above every other layer (after a bundle's
        layers were added: drawn after them, the outlines stay visible)."""
        layers = self.viewer.layers
        for layer in (self.layer, self.handles):
            if layer is not None and layer in layers:
                layers.move(layers.index(layer), len(layers))

    # -- the handles: a Points layer of the regions' centres, dragged to move them -----------
    def centres(self) -> np.ndarray:
        """The regions' centres in world coordinates, napari order."""
        store = self.dissection.store
        rows = [
            Placement.of(store).to_world_box(r.center, r.center)[0] for r in self.dissection.regions
        ]
        return np.asarray(rows, np.float64).reshape(-1, int(store.ndim))

    def _hidden_axes(self, ndim: int) -> list[int]:
        """The axes of a ``ndim``-axis layer a 2-D view does not display."""
        offset = self.viewer.dims.ndim - ndim
        shown = {a - offset for a in self.viewer.dims.displayed}
        return [a for a in range(ndim) if a not in shown]

    def handle_positions(self) -> np.ndarray:
        """The handles' data: the regions' centres (world, napari order), in a 2-D view
        placed at the slice so that every handle shows and drags in the plane shown."""
        out = self.centres()
        hidden = self._hidden_axes(out.shape[1])
        if hidden and len(out):
            point = np.asarray(self.viewer.dims.point, np.float64)[-out.shape[1] :]
            out[:, hidden] = point[hidden]
        return out

    def _draw_handles(self, metadata: dict) -> None:
        from napari.layers import Points

        data = self.handle_positions()
        colours = np.asarray([ROLE_COLOURS[r.role] for r in self.dissection.regions], np.float32)
        layer = self.handles
        if layer is not None and layer in self.viewer.layers:
            layer.data = data
            layer.face_color = colours
            return
        lo, hi = (np.asarray(b, np.float64) for b in self.dissection.store.bounds)
        self.handles = Points(
            data,
            name=f"{self.dissection.store.name} Dissect handles",
            size=float(np.max(hi - lo)) * HANDLE_SHARE,
            face_color=colours,
            border_color="white",
            border_width=0.1,
            blending="translucent_no_depth",
            units=None if self.layer is None else tuple(self.layer.units)[-data.shape[1] :],
            metadata=copy.deepcopy(metadata),
        )
        self.handles.events.data.connect(self._handle_moved)
        add_layer(self.viewer, self.handles)

    def _handle_moved(self, event: object) -> None:
        """A handle was dragged (napari's *select* mode of the handles layer): its region's
        centre follows, in store coordinates (the world placement undone)."""
        if self._busy or not str(getattr(event, "action", "")).lower().endswith("changed"):
            return
        assert self.handles is not None  # its data event called
        moved = np.asarray(self.handles.data, np.float64)
        before = self.handle_positions()
        if moved.shape != before.shape:  # a handle added or deleted: put them back
            self.refresh()
            return
        store = self.dissection.store
        centres = self.centres()
        hidden = self._hidden_axes(moved.shape[1])
        for row in np.flatnonzero(np.any(np.abs(moved - before) > 1e-9, axis=1)):
            world = moved[row].copy()
            world[hidden] = centres[row, hidden]  # a 2-D drag keeps the depth
            centre = Placement.of(store).to_store_box(world, world)[0]
            self.dissection.update(int(row), center=centre)

    def remove(self) -> None:
        remove_layers(self.viewer, [self.layer, self.handles])
        self.layer = self.handles = None

    def close(self) -> None:
        """Stop following (the dock follows another store, or closes) and remove the layer."""
        self.dissection.events.regions.disconnect(self.refresh)
        self.viewer.dims.events.point.disconnect(self.refresh)
        self.viewer.dims.events.ndisplay.disconnect(self.refresh)
        self.remove()
