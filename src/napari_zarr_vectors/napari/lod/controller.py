"""One opened store in one viewer: view-driven level of detail for its layers.

:class:`ZVLayerController` watches the camera and dims of the viewer its layers live in.
Every pan, zoom, rotation, slice move, ``ndisplay`` switch or canvas resize restarts a
debounce timer (:func:`.settings.get_settings` ``debounce_ms``); when it fires, the
controller snapshots the view (:class:`.plan.ViewState`) on the UI thread and its
:class:`.loads.Loads` hand it to a worker thread running :meth:`.loader.Loader.run`:
plan a level and chunk set, fetch chunk batches into the shared cache (progress after each
batch, cancellation between batches), assemble and build the layer data. Only the final
swap of arrays into the existing layers runs on the UI thread, with the layers' events held
back and one refresh at the end. A newer request bumps a generation
counter and aborts the running worker; stale results are dropped.

After every swap the controller re-applies the user's colouring (colour-by feature,
colormap, contrast limits, uniform colours, point size) read from the layer before the
swap, so colours survive level changes (napari drops a colour-by feature that a new
feature table lacks, napari#9330).

Controllers are found with :func:`controller_for` (a weak registry keyed by layer: a
controller lives exactly as long as one of its layers). Stores opened through napari's
reader get a controller automatically (:mod:`.session`); scripts use
:func:`.opening.open_in_viewer`.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
from psygnal import Signal, SignalGroup

from napari_zarr_vectors.format.distinct import distinct
from napari_zarr_vectors.napari._napari_compat import canvas_widget
from napari_zarr_vectors.napari.layerdata.build import META
from napari_zarr_vectors.napari.lod import camera, gc_pauses, overview_fill
from napari_zarr_vectors.napari.lod import plan as lod
from napari_zarr_vectors.napari.lod.cache import shared_cache
from napari_zarr_vectors.napari.lod.loader import (
    Loader,
    LoadRequest,
    LoadResult,
    Progress,
    ViewShare,
)
from napari_zarr_vectors.napari.lod.loads import Loads
from napari_zarr_vectors.napari.lod.settings import get_settings, store_budget
from napari_zarr_vectors.napari.lod.shown import Shown
from napari_zarr_vectors.napari.lod.store_layers import StoreLayers
from napari_zarr_vectors.napari.lod.view_watch import ViewWatch
from napari_zarr_vectors.napari.lod.viewer_layers import hold_paint
from napari_zarr_vectors.napari.open_stores import (
    OpenStore,
    open_entries,
    open_store_for,
)

if TYPE_CHECKING:
    from napari.layers import Layer
    from napari.utils.events import Event

    from napari import Viewer
    from napari_zarr_vectors.format.api import GeometryStore


#: layer metadata key of this plugin
def controller_for(layer: object) -> ZVLayerController | None:
    """The controller managing ``layer`` (a data layer or the bounds box), else ``None``
    (the :mod:`..open_stores` registry)."""
    entry = open_store_for(layer)
    controller = None if entry is None else entry.controller
    return controller if isinstance(controller, ZVLayerController) else None


def open_controllers() -> list[ZVLayerController]:
    """Every controller still showing a store, oldest first."""
    controllers = (e.controller for e in open_entries())
    return [c for c in controllers if isinstance(c, ZVLayerController) and not c.closed]


class ControllerEvents(SignalGroup):
    """Signals of a :class:`ZVLayerController` (emitted on the UI thread)."""

    #: the level on screen changed (new level)
    level_changed = Signal(int)
    #: new data is on screen
    refreshed = Signal()
    #: chunk batches fetched so far for the current request (done, total)
    loading = Signal(int, int)


class ZVLayerController:
    """View-driven level of detail for the layers of one opened store.

    Parameters
    ----------
    viewer
        A ``napari.Viewer`` (held weakly).
    store
        The opened :class:`~napari_zarr_vectors.Store`.
    layers
        Its data layers (held weakly), already in ``viewer.layers``.
    bounds_layer
        Its ``<name> bounds`` box layer, if any.
    loader
        A :class:`.loader.Loader` for ``store`` (created when omitted).
    vertex_budget
        Vertices the view may hold (default: the plugin setting).
    held
        What the layers hold now (``level``, ``chunks``, plan ``key``).
    share
        What part of the view they show (:attr:`view_share`).

    What the layers show (level, chunks, vertices, what was left out) is one
    :class:`.shown.Shown`, replaced after every load; the attributes below read it.
    """

    def __init__(
        self,
        viewer: Viewer,
        store: GeometryStore,
        layers: Sequence[Layer] = (),
        *,
        bounds_layer: Layer = None,
        loader: Loader | None = None,
        vertex_budget: int | None = None,
        held: tuple[int, np.ndarray, tuple | None] | None = None,
        share: ViewShare | None = None,
        autostart: bool = True,
    ) -> None:
        self.events = ControllerEvents()
        self.store = store
        #: what the layers share about the store (:mod:`..open_stores`)
        self.open_store = OpenStore(store, controller=self)
        self.loader = loader if loader is not None else Loader(store, shared_cache())
        self._viewer_ref = weakref.ref(viewer)
        #: the store's layers, their colouring and the seconds the last swap spent on them
        self._layers = StoreLayers(store, self.open_store)
        self._vertex_budget = None if vertex_budget is None else int(vertex_budget)
        self._locked: int | None = None
        self._allowed: np.ndarray | None = None
        self._loads = Loads(self, store.name)
        self._closed = False
        #: load on the calling (UI) thread instead of a worker: for benchmarks and scripts
        #: that want every refresh finished before the next line (the UI blocks meanwhile)
        self.synchronous = False
        self.last_update_seconds = 0.0
        share = share if share is not None else ViewShare()
        if held is None:
            level = lod.initial_level(store.levels, self.vertex_budget)
            held = (level, np.empty((0, store.levels[0].key_ndim), np.int64), None)
        #: what the layers show; the vertices counted as the budget counts (the reader's
        #: first read)
        self._shown = Shown(
            int(held[0]),
            np.array(held[1], dtype=np.int64),
            held[2],
            vertex_count=int(share.vertices_shown),
            share=share,
        )

        from superqt.utils import qdebounced

        #: camera and dims events call it; it re-plans debounce_ms after the last call
        self._debounced = qdebounced(self._on_timer, timeout=int(get_settings().debounce_ms))
        self._pending = False

        if bounds_layer is not None:
            self._layers.add_bounds(bounds_layer)
        for layer in layers:
            self.add_layer(layer)
        self._watch = ViewWatch(viewer, self._on_view_event, self._on_layer_removed)
        if autostart:
            self.schedule()

    # -- public API ----------------------------------------------------------------------
    @property
    def viewer(self) -> Any:
        return self._viewer_ref()

    @property
    def layers(self) -> list[Layer]:
        """The store's data layers (not the bounds box), in the order they were added."""
        return self._layers.layers

    @property
    def bounds_layer(self) -> Any:
        return self._layers.bounds_layer

    @property
    def level(self) -> int:
        """The level on screen."""
        return self._shown.level

    @property
    def chunks(self) -> np.ndarray:
        """``(K, key_ndim)`` chunk coordinates on screen (read-only)."""
        return self._shown.chunks

    @property
    def vertex_count(self) -> int:
        """The vertices on screen, counted as the budget counts."""
        return self._shown.vertex_count

    @property
    def trimmed(self) -> int:
        """Chunks of the view not read (too many to read at once)."""
        return self._shown.trimmed

    @property
    def view_share(self) -> ViewShare:
        """What part of the view the layers show (the object subset, what was left out)."""
        return self._shown.share

    @property
    def left_out(self) -> list[str]:
        """What the shown chunks lack: the stored file (or chunk key) of each chunk that
        could not be read, the undecodable ones first (counted in :meth:`summary` on every
        load, also after the core's one warning)."""
        return self._shown.left_out

    @property
    def controller(self) -> ZVLayerController:
        """The controller itself (a browse target's controller, when it has one)."""
        return self

    @property
    def locked_level(self) -> int | None:
        return self._locked

    def lock_level(self, level: int | None) -> None:
        """Show ``level`` whatever the zoom (still only the visible chunks, still within the
        budget); ``None`` unlocks. Reloads at once."""
        level = self._checked_level(level)
        if level == self._locked:
            return
        self._locked = level
        self.refresh()

    def set_view(
        self, *, lock_level: int | None, object_filter: np.ndarray | Sequence[int] | None
    ) -> None:
        """:meth:`lock_level` and :meth:`set_object_filter` with one reload."""
        self._locked = self._checked_level(lock_level)
        self._allowed = _unique_ids(object_filter)
        self.refresh()

    def _checked_level(self, level: int | None) -> int | None:
        if level is None:
            return None
        self.store.level(int(level))  # KeyError naming the levels
        return int(level)

    @property
    def vertex_budget(self) -> int:
        """Vertices this store's layers may hold (the plugin default unless set; a small
        store's is at least what shows it whole, :func:`.settings.store_budget`)."""
        if self._vertex_budget is not None:
            return self._vertex_budget
        return store_budget(self.loader.whole_rows)

    @vertex_budget.setter
    def vertex_budget(self, value: int | None) -> None:
        if value is not None and int(value) < 1:
            raise ValueError("vertex_budget must be at least 1")
        self._vertex_budget = None if value is None else int(value)
        self.refresh()

    @property
    def object_filter(self) -> np.ndarray | None:
        return None if self._allowed is None else self._allowed.copy()

    def set_object_filter(self, allowed_ids: np.ndarray | Sequence[int] | None) -> None:
        """Show only these object ids (at every level, through every refresh); ``None``
        shows all. Stores without objects ignore the filter."""
        self._allowed = _unique_ids(allowed_ids)
        self.refresh()

    @property
    def is_loading(self) -> bool:
        """Whether a refresh is pending (debounce timer) or running (worker)."""
        return bool(self._pending or self._loads.running)

    @property
    def closed(self) -> bool:
        """Whether the controller stopped (its layers left the viewer, or :meth:`close`)."""
        return self._closed

    def refresh(self, force: bool = True) -> None:
        """Re-plan for the current view and reload now (``force``: even when the plan is
        unchanged)."""
        if self._closed:
            return
        self._cancel_pending()
        self._loads.start(force=force)

    def schedule(self) -> None:
        """Re-plan after the debounce delay (what camera and dims events call)."""
        if self._closed:
            return
        self._pending = True
        # nothing on screen yet (a store opened in the background): load on the next turn
        # of the event loop, once the viewer has placed the new layers
        empty = self.vertex_count == 0 and self._shown.key is None
        self._debounced.setTimeout(0 if empty else int(get_settings().debounce_ms))
        self._debounced()

    def close(self) -> None:
        """Stop watching the viewer and cancel loading (the layers stay as they are)."""
        if self._closed:
            return
        self._closed = True
        gc_pauses.thaw()
        self._cancel_pending()
        self._loads.close()
        viewer = self.viewer
        if viewer is not None:
            self._watch.stop(viewer)

    # -- layers --------------------------------------------------------------------------
    def add_layer(self, layer: Layer) -> None:
        """Manage ``layer`` (its ``metadata["zarr_vectors"]["role"]`` names its part)."""
        if not self._layers.add(layer):  # the bounds box
            return
        count = int(layer.metadata[META].get("vertex_count", 0) or 0)
        self._shown = replace(self._shown, vertex_count=max(self.vertex_count, count))
        self._write_metadata(layer)

    def default_colours(self) -> None:
        """Forget every colour choice on the store's layers (the Colour by dock's, and what
        was chosen through napari's layer controls) and reload them: the swap draws the
        builders' default colours again."""
        self._layers.forget_colours()
        self.refresh(force=True)

    def _append_layer(self, viewer: Viewer, layer: Layer) -> None:
        """Manage ``layer`` and put it in ``viewer``."""
        self.add_layer(layer)
        viewer.layers.append(layer)

    # -- viewer events -------------------------------------------------------------------
    def _on_view_event(self, event: Event | None = None) -> None:
        self.schedule()

    def _on_layer_removed(self, event: Event | None = None) -> None:
        gc_pauses.layer_removed(getattr(event, "value", None))
        viewer = self.viewer
        if viewer is None:
            self.close()
            return
        present = {id(layer) for layer in viewer.layers}
        mine = self.layers or [self.bounds_layer]  # a store without data in view yet
        if not any(layer is not None and id(layer) in present for layer in mine):
            self.close()

    def _cancel_pending(self) -> None:
        self._pending = False
        self._debounced.cancel()

    def _on_timer(self) -> None:
        self._pending = False
        self._loads.start(force=False)

    # -- the view ------------------------------------------------------------------------
    def view_state(self) -> lod.ViewState | None:
        """The current view in the store's napari axis order (``None``: no viewer, or the
        displayed axes are not the store's): :func:`.camera.view_state`."""
        viewer = self.viewer
        return None if viewer is None else camera.view_state(viewer, self.store)

    def request(self, force: bool = False) -> LoadRequest:
        """The load request for the current view and settings."""
        return LoadRequest(
            generation=self._loads.generation,
            view=self.view_state(),
            budget=self.vertex_budget,
            locked=self._locked,
            allowed_ids=self._allowed,
            current_key=self._shown.key,
            force=force,
            progressive=self.vertex_count == 0,
            # an overview fill is drawn in a canvas: none to read for a viewer without one
            fill_budget=get_settings().fill_budget if canvas_widget(self.viewer) else 0,
        )

    # -- loading (lod/loads.py runs the loads; LoadsOwner) -------------------------------
    def show_load(self, result: LoadResult) -> None:
        """:meth:`apply`, timed: the adaptive budget learns what a swap costs here, the
        layers' data swaps (on the draw path in use) apart from the rest. The frame that
        draws it comes in a turn of its own (:func:`.viewer_layers.hold_paint`)."""
        hold_paint(self.viewer)
        self._layers.seconds = 0.0
        t0 = time.perf_counter()
        self.apply(result)
        self.last_update_seconds = time.perf_counter() - t0
        fixed = self.last_update_seconds - self._layers.seconds  # not the layers' data
        get_settings().swap_cost.observe(self.last_update_seconds, self.vertex_count, fixed)

    def keep_shown(self, result: LoadResult) -> None:
        """Nothing new to load, but chunks found unreadable since (e.g. by the reader's first
        read) are still left out."""
        unreadable = tuple(f for _, f in result.unreadable)
        if unreadable != self._shown.unreadable:
            self._shown = replace(self._shown, unreadable=unreadable)
            for layer in self.layers:
                self._write_metadata(layer)
        self.show_status(self.summary())

    def load_progress(self, p: Progress) -> None:
        self.events.loading.emit(int(p.done), int(p.total))
        if p.total and p.done < p.total:
            self.show_status(
                f"{self.store.name}: loading level {p.level}, {p.done:,}/{p.total:,} chunks"
            )

    def loads_settled(self) -> None:
        viewer = None if self.is_loading else self.viewer
        if viewer is not None and self.vertex_count:
            gc_pauses.freeze_long_lived(viewer.layers)  # settled: see gc_pauses

    # -- applying a result (UI thread) ---------------------------------------------------
    def apply(self, result: LoadResult) -> None:
        """Put a finished load on screen (UI thread): swap data into the layers, restore
        their colouring, update metadata and status, emit signals."""
        old_level = self._shown.level
        viewer = self.viewer
        self._layers.swap_in(viewer, result.layer_data, partial(self._append_layer, viewer))
        self._shown = Shown.of(result, overview_fill.show_result(self.layers, result))
        for layer in self.layers:
            self._write_metadata(layer)
        if result.failed:
            _notify_warning(
                f"{self.store.name}: level {result.level}: "
                f"{len(result.failed)} chunk(s) could not be loaded and are left out: "
                + "; ".join(f"{'.'.join(map(str, c))} ({msg})" for c, msg in result.failed[:5])
            )
        self.show_status(self.summary())
        if result.level != old_level:
            self.events.level_changed.emit(int(result.level))
        self.events.refreshed.emit()

    def summary(self, *, named: bool = True) -> str:
        """The level line: store (when ``named``), level (locked?), chunks and vertices shown,
        what part of the view that is and what was left out. Shown in ``viewer.status`` after
        each load and after the layer name in the hover status (:mod:`.hover`)."""
        return self._shown.summary(
            self.store.name if named else None,
            item_label(self.store.geometry_type),
            locked=self._locked is not None,
        )

    def show_status(self, text: str) -> None:
        viewer = self.viewer
        if viewer is not None:
            viewer.status = text

    def _write_metadata(self, layer: Layer) -> None:
        self._shown.write_metadata(layer, locked_level=self._locked, budget=self.vertex_budget)

    def __repr__(self) -> str:
        return (
            f"<ZVLayerController {self.store.name!r} level={self.level} "
            f"chunks={len(self.chunks)} vertices={self.vertex_count} "
            f"locked={self._locked} budget={self.vertex_budget}>"
        )


def _unique_ids(ids: np.ndarray | Sequence[int] | None) -> np.ndarray | None:
    return None if ids is None else distinct(np.asarray(ids, dtype=np.int64).ravel())


def item_label(geometry_type: str) -> str:
    return {
        "streamline": "streamlines",
        "polyline": "polylines",
        "line": "lines",
        "skeleton": "skeletons",
        "graph": "graph objects",
        "mesh": "meshes",
        "point_cloud": "points",
    }.get(geometry_type, "objects")


def _notify_warning(message: str) -> None:
    from napari.utils.notifications import show_warning

    show_warning(message)
