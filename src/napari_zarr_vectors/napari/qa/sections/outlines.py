"""Pyramid QA model section: outlines of the non-empty chunks and of the bins of one chunk
(:class:`..outlines.BoxOverlay`, redrawn as the slice moves), and picking the chunk and the
object under the cursor."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
from napari.utils.events import Event

from napari_zarr_vectors.format import pyramid as core
from napari_zarr_vectors.napari.layerdata.placement import Placement
from napari_zarr_vectors.napari.lod.view_geometry import Box
from napari_zarr_vectors.napari.lod.viewer_layers import next_turn
from napari_zarr_vectors.napari.qa.compute import shown_of, slice_of
from napari_zarr_vectors.napari.qa.jobs import (
    PENDING,
    QATask,
    bins_job,
    call_job,
    nearest_object_job,
)
from napari_zarr_vectors.napari.qa.outlines import BoxOverlay
from napari_zarr_vectors.napari.qa.overlays import (
    BIN_COLOUR,
    CHUNK_COLOUR,
    boxes_in_slab,
    overlay_info,
)
from napari_zarr_vectors.napari.qa.sections.section import QASection

if TYPE_CHECKING:
    from napari.layers import Layer
    from napari.viewer import Viewer

    from napari_zarr_vectors.napari.browse.targets import BrowseTarget as Target


class OutlinesQA(QASection):
    """The chunk outline (of the shown level, followed, or of a chosen one), the bin outline
    of one chunk, and picking."""

    def __init__(self, viewer: Viewer, target: Target) -> None:
        super().__init__(viewer, target)
        #: whether the chunk outline is on (it follows the shown level, or another store)
        self.chunks_on = False
        self.chunk_overlay = BoxOverlay(self, "qa_chunks", CHUNK_COLOUR)
        self.bin_overlay = BoxOverlay(self, "qa_bins", BIN_COLOUR)
        #: the level whose chunks are outlined (``None``: the shown level, followed)
        self.chunk_level: int | None = None
        self._chunk_boxes: dict[int, Box] = {}
        self._overlays_pending = False

    def _on_dims(self, event: Event | None = None) -> None:
        """The slice or display mode changed: redraw the outlines once napari's dims update
        is over (coalesced; never inside napari's own event)."""
        if not self._overlays_pending:
            self._overlays_pending = True
            next_turn(self._refresh_overlays)

    def _refresh_overlays(self) -> None:
        self._overlays_pending = False
        self.chunk_overlay.refresh()
        self.bin_overlay.refresh()

    @property
    def overlays_pending(self) -> bool:
        """Whether the outlines wait for a redraw after a slice change."""
        return self._overlays_pending

    def show_chunks(self, enabled: bool = True, level: int | None = None) -> QATask | None:
        """Outline the non-empty chunks of ``level`` (default: the shown level, followed as
        it changes); ``enabled=False`` removes the outlines. The chunk listing is read on
        the worker thread (once per level)."""
        running = self.tasks.get("chunks")
        if running is not None and not running.done:
            running.cancel()
        if not enabled or self.store is None:
            self.chunks_on = False
            self.chunk_overlay.remove()
            self.events.outlines()
            return None
        self.chunks_on = True
        self.chunk_level = None if level is None else int(level)
        level = self.level if level is None else int(level)
        task = self._run(
            "chunks",
            call_job,
            (f"listing the chunks of level {level}", self._boxes_of, level),
            partial(self._draw_chunks, level),
        )
        self.events.outlines()
        return task

    def _boxes_of(self, level: int) -> Box:
        """The boxes of the non-empty chunks of ``level`` (read once; worker thread)."""
        boxes = self._chunk_boxes.get(level)
        if boxes is None:
            boxes = self._chunk_boxes[level] = core.chunk_boxes(self._live_store, level)
        return boxes

    def _draw_chunks(self, level: int, boxes: Box) -> Layer | None:
        store = self._live_store
        lo, hi = boxes
        chunk_shape = np.asarray(store.level(level).chunk_shape, float).tolist()
        layer = self.chunk_overlay.set_boxes(
            lo,
            hi,
            overlay_info(store, level),
            "chunks",
            {"qa_level": level, "chunk_shape": chunk_shape},
        )
        cut = len(self.chunk_overlay.cut())
        where = "" if cut == len(lo) else f"; {cut:,} cut by the slice"
        self.say(
            f"{len(lo):,} non-empty chunks at level {level}{where}; "
            + shown_of(self.chunk_overlay.drawn(), cut, "outlined")
        )
        self.events.outlines()
        return layer

    def show_bins(
        self,
        chunk: Sequence[int] | None = None,
        occupied: bool = False,
        level: int | None = None,
    ) -> QATask | None:
        """Outline the bins of one chunk of ``level`` (default: the shown level; chunk
        default: the last picked or shown one). In a 2-D view the slice moves into the
        chunk when it is elsewhere, so that what is reported is drawn."""
        store = self.store
        if store is None:
            return None
        chunk = self.chunk_key if chunk is None else chunk
        level = self.level if level is None else int(level)
        if chunk is None or len(chunk) not in (store.ndim, store.level(level).key_ndim):
            self.say(f"a chunk key has {store.ndim} integers, e.g. 0,1,-1")
            return None
        chunk = [int(c) for c in chunk]
        self._pick(chunk, None)
        occupied = bool(occupied)
        return self._run(
            "bins",
            bins_job,
            (store, level, chunk, occupied),
            lambda boxes: self._draw_bins(level, chunk, occupied, boxes),
        )

    def _draw_bins(self, level: int, chunk: list[int], occupied: bool, boxes: Box) -> object:
        lo, hi = boxes
        info = overlay_info(self._live_store, level)
        displayed, point = slice_of(self.viewer, info.order, self.store)
        if len(lo) and not len(boxes_in_slab(lo, hi, displayed, point, info.world_scale)):
            # the slice change re-slices every layer in this turn; the outline comes in the
            # next one (each is a frame's worth of UI-thread work)
            moved = self._move_slice_into(lo, hi)
            task = self.tasks["bins"]

            def outline() -> None:
                if not task.done:
                    task.finish(self._outline_bins(level, chunk, occupied, boxes, moved))

            next_turn(outline)
            return PENDING
        return self._outline_bins(level, chunk, occupied, boxes, "")

    def _outline_bins(
        self, level: int, chunk: list[int], occupied: bool, boxes: Box, moved: str
    ) -> Layer | None:
        lo, hi = boxes
        key = ",".join(str(c) for c in chunk)
        layer = self.bin_overlay.set_boxes(
            lo,
            hi,
            overlay_info(self._live_store, level),
            f"bins of chunk {key}",
            {"qa_level": level, "chunk": chunk, "occupied": occupied},
        )
        cut = len(self.bin_overlay.cut()) if len(lo) else 0
        where = "" if cut == len(lo) else f" ({cut:,} cut by the slice)"
        self.say(
            f"{len(lo):,} {'occupied ' if occupied else ''}bins in chunk {key} of level "
            f"{level}{where}{moved}; " + shown_of(self.bin_overlay.drawn(), cut, "outlined")
        )
        return layer

    def _move_slice_into(self, lo: np.ndarray, hi: np.ndarray) -> str:
        """Move the dims point to the middle of the boxes on the axes not displayed."""
        store = self._live_store
        placement = Placement.of(store)
        order = placement.order
        displayed, _ = slice_of(self.viewer, order, store)
        offset = self.viewer.dims.ndim - store.ndim
        middle = (lo.min(0) + hi.max(0)) / 2
        # the dims point is in the world: the middle placed as the layers show it
        world = placement.to_world_points(middle)[0]
        moved = []
        for axis in range(store.ndim):
            if axis in displayed:
                continue
            k = int(np.flatnonzero(order == axis)[0])
            self.viewer.dims.set_point(offset + k, float(world[k]))
            moved.append(f"{store.axes[axis]} = {middle[axis]:g}")
        return f"; slice moved into the chunk ({', '.join(moved)})"

    # ------------------------------------------------------------------ picking
    def pick(self, world_position: Sequence[float]) -> QATask | None:
        """Pick at a world position (napari order): the chunk key of the shown level now
        and, once the worker has read around it, the object id of the nearest vertex
        (``events.picked``). The task's result is ``(chunk key, object id or None)``."""
        store = self.store
        if store is None:
            return None
        ndim = store.ndim
        here = np.asarray(world_position, dtype=np.float64)[-ndim:]
        placement = Placement.of(store)
        p = placement.to_store_points(here)[0]  # chunks live in the stored space
        level = self.level
        info = store.level(level)
        key = np.floor((p - info.chunk_origin) / info.chunk_shape).astype(np.int64).tolist()
        self._pick(key, None)
        displayed, _ = slice_of(self.viewer, placement.order, store)
        reach = np.asarray(info.bin_shape, float) * 2.0
        others = [a for a in range(ndim) if a not in displayed]
        reach[others] = placement.scale[others] / 2.0
        return self._run(
            "pick",
            nearest_object_job,
            (store, level, p, reach, displayed),
            lambda oid: self._picked(key, oid),
        )

    def _picked(self, key: list[int], oid: int | None) -> tuple[list[int], int | None]:
        if oid is not None:
            self._pick(None, [oid])
        self.say(f"picked chunk {key}" + (f", object {oid}" if oid is not None else ""))
        return key, oid
