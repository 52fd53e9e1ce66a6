"""Live box outlines in a viewer (chunks, bins): a Vectors layer that follows the slice.

:class:`BoxOverlay` keeps a set of boxes (store order) and the one layer outlining them,
redrawn on the UI thread (numpy only) when the slice or the display mode changes: the whole
wireframes in a 3-D view, the outlines of the boxes the current slab cuts in a 2-D one
(:func:`.overlays.box_outline_segments`), every box up to :data:`BOXES_ALWAYS` of them,
beyond that capped by the vertex budget. One per outline kind
and :class:`.model.PyramidQA`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from napari_zarr_vectors.napari.conventions import meta_of
from napari_zarr_vectors.napari.layerdata.build import StoreInfo
from napari_zarr_vectors.napari.lod.viewer_layers import (
    add_layer,
    hold_paint,
    make_layer,
    remove_layers,
)
from napari_zarr_vectors.napari.qa.compute import select_within, slice_of
from napari_zarr_vectors.napari.qa.overlays import (
    box_corner_edges,
    box_outline_segments,
    boxes_in_slab,
    segments_layer,
)

if TYPE_CHECKING:
    from napari.layers import Layer
    from napari.viewer import Viewer

    from napari_zarr_vectors.format.api import GeometryStore


class OverlayOwner(Protocol):
    """What a :class:`BoxOverlay` draws for (the :class:`.model.PyramidQA`)."""

    viewer: Viewer

    @property
    def store(self) -> GeometryStore | None: ...

    def layer_budget(self) -> int: ...


#: boxes outlined whatever the vertex budget (12 segments a box in 3-D: 60,000 segments)
BOXES_ALWAYS = 5_000


class BoxOverlay:
    """A Vectors layer outlining boxes, capped by the vertex budget; redrawn (UI thread,
    numpy only) for the current slice / display mode."""

    def __init__(self, owner: OverlayOwner, role: str, colour: tuple[float, ...]) -> None:
        self.owner = owner
        self.role = role
        self.colour = colour
        self.layer: Layer | None = None
        self.lo: np.ndarray | None = None
        self.hi: np.ndarray | None = None
        self.info: StoreInfo | None = None
        self.label = ""
        self.extra: dict[str, Any] = {}
        # adding or updating the layer changes napari's dims, whose events call refresh
        # again: a nested add would insert a second layer while the layer list is still
        # inserting the first; nested calls only mark the overlay stale
        self._busy = False
        self._stale = False
        #: the slice the layer was drawn for (displayed axes, point on the other axes)
        self._drawn_for: tuple | None = None

    @property
    def viewer(self) -> Viewer:
        return self.owner.viewer

    def set_boxes(
        self,
        lo: np.ndarray,
        hi: np.ndarray,
        info: StoreInfo,
        label: str,
        extra: dict[str, Any] | None = None,
    ) -> Layer | None:
        """Outline boxes ``[lo, hi)`` (store order) described by ``info``; returns the layer
        (``None``: nothing drawn)."""
        self.lo, self.hi = np.asarray(lo, float), np.asarray(hi, float)
        self.info, self.label, self.extra = info, label, dict(extra or {})
        self._drawn_for = None
        return self.refresh()

    def _slice(self) -> tuple[list[int], np.ndarray]:
        assert self.info is not None  # drawn: refresh() checked
        return slice_of(self.viewer, self.info.order, self.owner.store)

    def _slice_key(self) -> tuple:
        displayed, point = self._slice()
        others = [a for a in range(self.info.ndim) if a not in displayed]  # type: ignore[union-attr]  # _slice() asserts it
        return tuple(displayed), tuple(point[others].tolist())

    def refresh(self) -> Layer | None:
        """Redraw for the current slice (nothing to do when the slice the layer shows has
        not changed)."""
        if self.lo is None or self.info is None:
            return None
        layers = self.viewer.layers
        if self.layer in layers and self._drawn_for == self._slice_key():
            return self.layer
        if self._busy:
            self._stale = True
            return self.layer
        if self.layer is not None and self.layer not in layers:
            # removed by the user or a closing viewer: the overlay is off, never re-added
            self.layer = None
            self.lo = self.hi = None
            return None
        self._draw_once()
        if self._stale:  # the slice moved while drawing: draw once more (in place)
            self._stale = False
            self._draw_once()
        self._stale = False
        return self.layer

    def _draw_once(self) -> None:
        self._busy = True
        try:
            self._draw()
        finally:
            self._busy = False

    def cut(self) -> np.ndarray:
        """Rows of the boxes the current slab cuts (all of them in a 3-D view)."""
        displayed, point = self._slice()
        assert self.info is not None and self.lo is not None and self.hi is not None
        return boxes_in_slab(self.lo, self.hi, displayed, point, self.info.world_scale)

    def _draw(self) -> None:
        viewer = self.viewer
        self._drawn_for = self._slice_key()
        displayed, point = self._slice()
        assert self.info is not None and self.lo is not None and self.hi is not None  # refresh()
        thickness = self.info.world_scale
        rows = boxes_in_slab(self.lo, self.hi, displayed, point, thickness)
        # two ends a segment, len(a) segments a box, within the vertex budget; boxes are
        # cheap, so at least BOXES_ALWAYS of them are outlined whatever the budget
        edges = len(box_corner_edges(len(displayed))[0])
        cap = max(self.owner.layer_budget() // (2 * edges), BOXES_ALWAYS)
        rows = rows[select_within(cap, positions=self.lo[rows])]
        starts, ends, box = box_outline_segments(
            self.lo[rows], self.hi[rows], displayed, point, thickness
        )
        box = rows[box]
        extra = {
            **self.extra,
            "boxes": len(self.lo),
            "boxes_drawn": len(rows),
            "displayed_axes": [self.info.axes[a] for a in displayed],
        }
        data, kwargs, kind = segments_layer(
            starts,
            ends,
            self.info,
            role=self.role,
            label=self.label,
            colour=self.colour,
            features={"box": box.astype(np.int64)},
            extra=extra,
        )
        if self.layer is not None and self.layer in viewer.layers:
            hold_paint(viewer)
            self.layer.data = data
            self.layer.features = kwargs["features"]
            self.layer.edge_color = kwargs["edge_color"]
            self.layer.name = kwargs["name"]
            self.layer.metadata = kwargs["metadata"]
        else:
            self.layer = add_layer(viewer, make_layer(data, kwargs, kind))

    def drawn(self) -> int:
        """Boxes the layer outlines now."""
        return 0 if self.layer is None else int(meta_of(self.layer)["boxes_drawn"])  # type: ignore[index]  # the overlay's layer has its block

    def remove(self) -> None:
        """No layer of this overlay's role and store stays in the viewer."""
        store = self.owner.store
        mine = [
            lyr
            for lyr in self.viewer.layers
            if lyr is self.layer or _same_overlay(meta_of(lyr), self.role, store)
        ]
        remove_layers(self.viewer, mine)
        self.layer = None
        self.lo = self.hi = None


def _same_overlay(meta: dict | None, role: str, store: GeometryStore | None) -> bool:
    """Whether layer metadata ``meta`` is of an overlay of ``role`` over ``store``."""
    if meta is None or meta.get("role") != role or store is None:
        return False
    return meta.get("path") == str(store.path) and meta.get("geometry_type") in (
        None,
        str(store.geometry_type),
    )
