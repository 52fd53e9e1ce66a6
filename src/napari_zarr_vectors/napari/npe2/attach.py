"""Attaching level-of-detail controllers to the layers napari's reader made.

napari's npe2 readers return layer data and never see the viewer. The reader therefore
registers each opened store here (:func:`register_pending`), writes the returned session
token into its layers' ``metadata["zarr_vectors"]["session"]``, and this module watches the
layer lists of the open viewers (:func:`install_viewer_hooks`): when a layer with a pending
token is inserted, it gets that store's :class:`.controller.ZVLayerController` (created on
the first layer). Imports run one way: reader -> session -> controller -> loader.
"""

from __future__ import annotations

import itertools
import uuid
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from napari_zarr_vectors.napari._napari_compat import (
    TRACKS_TIME_CONTROLS,
    hide_layer_controls,
    open_viewers,
)
from napari_zarr_vectors.napari.browse.hover import install as install_hover
from napari_zarr_vectors.napari.conventions import NO_TIME
from napari_zarr_vectors.napari.layerdata.build import META
from napari_zarr_vectors.napari.lod.controller import ZVLayerController
from napari_zarr_vectors.napari.lod.loader import Loader, ViewShare
from napari_zarr_vectors.napari.lod.viewer_layers import next_turn
from napari_zarr_vectors.napari.npe2.first_view import keep_data_in_view, show_whole_store
from napari_zarr_vectors.napari.npe2.slider_units import install as install_slider_units
from napari_zarr_vectors.napari.open_stores import OpenStore, register
from napari_zarr_vectors.napari.widgets.colour_bar import install_colour_bars

if TYPE_CHECKING:
    from napari.layers import Layer
    from napari.utils.events import Event

    from napari import Viewer
    from napari_zarr_vectors.format.api import GeometryStore


@dataclass
class _Pending:
    """A store the reader opened; its layers are on their way into a viewer. Level-of-detail
    layers (``loader`` set) get a controller; static layers (a read of one level) share an
    :class:`~..open_stores.OpenStore` without one."""

    store: GeometryStore
    loader: Loader | None
    n_layers: int
    held: tuple[int, np.ndarray, tuple | None] | None
    vertex_budget: int | None
    share: ViewShare | None = None
    arrived: int = 0
    #: the controller made when the first layer arrived (level of detail)
    controller: ZVLayerController | None = None
    #: the open store of static layers, made when the first layer arrived
    static: OpenStore | None = None
    #: the viewer held nothing else when the first layer arrived (set then)
    empty_viewer: bool = False
    #: show the whole store first when the viewer was empty (:mod:`.first_view`); scripts
    #: that pass ``first_view=False`` to :func:`.opening.open_in_viewer` keep their view
    fit_view: bool = True


#: session token -> pending open (bounded: reads never added to a viewer are dropped)
_PENDING: OrderedDict[str, _Pending] = OrderedDict()
_MAX_PENDING = 32
_HOOKED: weakref.WeakSet = weakref.WeakSet()
_counter = itertools.count()


def register_pending(
    store: GeometryStore,
    loader: Loader | None,
    n_layers: int,
    held: tuple[int, np.ndarray, tuple | None] | None,
    vertex_budget: int | None = None,
    share: ViewShare | None = None,
) -> str:
    """Remember an opened store until its ``n_layers`` layers reach a viewer; returns the
    session token the reader writes into each layer's ``metadata["zarr_vectors"]["session"]``.
    ``loader`` ``None``: static layers (no level of detail), which still reach the store
    the reader opened through :func:`~..open_stores.open_store_for`."""
    token = f"{uuid.uuid4().hex}-{next(_counter)}"
    _PENDING[token] = _Pending(store, loader, int(n_layers), held, vertex_budget, share)
    while len(_PENDING) > _MAX_PENDING:
        _PENDING.popitem(last=False)
    install_viewer_hooks()
    return token


def keep_view(token: str) -> None:
    """The layers of session ``token`` arrive in a view their opener sets up: do not show
    the whole store first (:mod:`.first_view`)."""
    pending = _PENDING.get(token)
    if pending is not None:
        pending.fit_view = False


def install_viewer_hooks() -> int:
    """Watch the layer lists of every open ``napari.Viewer`` (once per viewer) so that
    layers a reader made get a controller when they are inserted; returns how many viewers
    are watched (0: the layers will stay static).

    napari's npe2 readers return layer data and never see the viewer; every path that opens
    a file (drag and drop, *File > Open*, ``viewer.open``, ``napari path``, samples) reads
    first and then inserts the layers into the viewer that asked, which exists by then.
    """
    viewers = open_viewers()
    for viewer in viewers:
        hook_viewer(viewer)
    return len(viewers)


def hook_viewer(viewer: Viewer) -> None:
    """Watch one viewer's layer insertions (idempotent): the plugin's layers get their hover
    status (:func:`.hover.install`) and, when a reader made them, their controller; its
    canvas keeps the data in the picture when a dock resizes it (:func:`.keep_data_in_view`)."""
    if viewer in _HOOKED:
        return
    _HOOKED.add(viewer)
    install_slider_units(viewer)
    install_colour_bars(viewer)
    keep_data_in_view(viewer)
    ref = weakref.ref(viewer)

    def on_inserted(event: Event) -> None:
        v = ref()
        if v is not None:
            install_hover(event.value)
            _attach(v, event.value)
            _hide_time_controls(v, event.value)

    viewer.layers.events.inserted.connect(on_inserted)


def _hide_time_controls(viewer: Viewer, layer: Layer) -> None:
    """A plugin Tracks layer of a store without time (every vertex at t = 0, on the
    :data:`NO_TIME` axis) shows no tail, head, id, graph or *hide completed* controls: they
    act on time. Done on the next event-loop turn, once napari made the layer's panel."""
    labels = tuple(getattr(layer, "axis_labels", ()))
    if type(layer).__name__ != "Tracks" or META not in layer.metadata or labels[:1] != (NO_TIME,):
        return
    v, lay = weakref.ref(viewer), weakref.ref(layer)

    def hide() -> None:
        if (v_ := v()) is not None and (lay_ := lay()) is not None:
            hide_layer_controls(v_, lay_, TRACKS_TIME_CONTROLS)

    next_turn(hide)


def _attach(viewer: Viewer, layer: Layer) -> ZVLayerController | None:
    meta = getattr(layer, "metadata", {}).get(META)
    token = meta.get("session") if isinstance(meta, dict) else None
    if not token:
        return None
    pending = _PENDING.get(token)
    if pending is None:
        return None  # complete already (e.g. a duplicated layer): not managed
    if pending.loader is None:
        if pending.static is None:
            pending.static = OpenStore(pending.store)
        register(layer, pending.static)
        _arrived(token, pending)
        return None
    if pending.arrived == 0:
        pending.empty_viewer = pending.fit_view and len(viewer.layers) == 1
    controller = pending.controller
    if controller is None:
        controller = ZVLayerController(
            viewer,
            pending.store,
            (),
            loader=pending.loader,
            vertex_budget=pending.vertex_budget,
            held=pending.held,
            share=pending.share,
            autostart=False,
        )
        pending.controller = controller
    controller.add_layer(layer)
    if _arrived(token, pending) and pending.empty_viewer:  # the first picture shows the whole store
        store = pending.store
        next_turn(lambda: None if controller.closed else show_whole_store(viewer, store))
    controller.schedule()
    return controller


def _arrived(token: str, pending: _Pending) -> bool:
    """Count a layer in; ``True`` when it was the last (the pending open is over)."""
    pending.arrived += 1
    if pending.arrived < pending.n_layers:
        return False
    _PENDING.pop(token, None)
    return True
