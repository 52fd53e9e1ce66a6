"""The Pyramid QA model: the state and the actions of Pyramid QA for one open store.

:class:`PyramidQA` is what the *Pyramid QA* dock widget (:mod:`..widgets.pyramid`) shows and
what the layer menu's actions (:mod:`..widgets.actions`) act on, with no Qt: one per browse
target (a store's level-of-detail controller, or the static target of layers opened without
one: :func:`~napari_zarr_vectors.napari.browse.targets.target_for`), found from any of the
store's layers with :func:`qa_model_for` (a weak registry: a model lives as long as its
target). It holds every piece of QA state (the level lock a filter made, side-by-side layers
and grid mode, the chunk and bin outlines, the dropped-objects list and its layers, the links
layer, the statistics, the running tasks) and says what changed through ``events`` (napari's
:class:`~napari.utils.events.EmitterGroup`):

* ``status(text)`` -- a sentence for the user (:attr:`PyramidQA.status` keeps the last one);
* ``level`` -- the shown or locked level changed, or the layers were refreshed;
* ``statistics`` -- :attr:`~PyramidQA.statistics`, ``families``, ``has_objects`` are known;
* ``dropped`` -- :attr:`~PyramidQA.dropped` was listed;
* ``picked`` -- :attr:`~PyramidQA.chunk_key` / :attr:`~PyramidQA.object_ids` changed;
* ``outlines`` -- the chunk outline was switched on or off;
* ``side_by_side`` -- the side-by-side layers, grid mode or opacity changed;
* ``links(note)`` -- links were drawn;
* ``task(task)`` -- a task started, reported progress or ended (:attr:`~PyramidQA.busy`).

Every store read runs on the plugin's worker thread (:class:`.jobs.QATask`, one per action
kind; starting one cancels the running one of its kind); layers are added on the UI thread,
one per event-loop turn. An action that would read most of a store asks first through
:attr:`PyramidQA.confirm` (the widget asks the user; without a widget, scripts answer).

The state and the actions live in one section model each, as the widget has one section
each (:mod:`.sections`): :class:`PyramidQA` is all of them for one target, wired to the
viewer and to the target's level changes.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from napari.utils.events import Event

from napari_zarr_vectors.napari.browse.targets import controller_of, is_data_layer, target_for
from napari_zarr_vectors.napari.conventions import meta_of
from napari_zarr_vectors.napari.qa.sections.dropped import DroppedObjectsQA
from napari_zarr_vectors.napari.qa.sections.links import LinksQA
from napari_zarr_vectors.napari.qa.sections.outlines import OutlinesQA
from napari_zarr_vectors.napari.qa.sections.side_by_side import SideBySideQA
from napari_zarr_vectors.napari.qa.sections.whole_store import WholeStoreQA

if TYPE_CHECKING:
    from napari.layers import Layer
    from napari.viewer import Viewer

    from napari_zarr_vectors.napari.browse.targets import BrowseTarget as Target

_MODELS: weakref.WeakKeyDictionary[Target, PyramidQA] = weakref.WeakKeyDictionary()


def qa_model(viewer: Viewer, target: Target) -> PyramidQA:
    """The Pyramid QA model of ``target`` in ``viewer`` (created on first use)."""
    model = _MODELS.get(target)
    if model is None or model.viewer is not viewer:
        model = _MODELS[target] = PyramidQA(viewer, target)
    return model


def qa_model_for(viewer: Viewer, layer: Layer | None) -> PyramidQA | None:
    """The Pyramid QA model of the store ``layer`` shows (its data layers, bounds box or a
    layer derived from it); ``None`` for a layer of no Zarr Vectors store."""
    target = target_for(viewer, layer) if meta_of(layer) is not None else None
    return None if target is None else qa_model(viewer, target)


def store_layer(viewer: Viewer, layer: Layer | None = None) -> Layer | None:
    """``layer`` when it is of a Zarr Vectors store, else the viewer's first store data layer
    (one with a level-of-detail controller first); ``None`` when no store is open."""
    if meta_of(layer) is not None and target_for(viewer, layer) is not None:
        return layer
    data = [lyr for lyr in viewer.layers if is_data_layer(lyr)]
    with_controller = [lyr for lyr in data if controller_of(lyr) is not None]
    return next(iter(with_controller + data), None)


def answer_yes(text: str) -> bool:
    """The answer to :attr:`PyramidQA.confirm` when nobody can be asked (no widget, a
    script): go on."""
    return True


class PyramidQA(WholeStoreQA, LinksQA, OutlinesQA, SideBySideQA, DroppedObjectsQA):
    """Pyramid QA state and actions for one browse target in one viewer (see the module
    docstring): every section model's, with the wiring between them. Actions return the
    :class:`~.jobs.QATask` they started (``None`` when they start none: the status says
    why)."""

    def __init__(self, viewer: Viewer, target: Target) -> None:
        super().__init__(viewer, target)
        self.confirm = answer_yes
        self._connect()

    def _connect(self) -> None:
        v = self.viewer
        v.layers.events.removed.connect(self._on_layer_removed)
        for emitter in (v.dims.events.point, v.dims.events.ndisplay, v.dims.events.order):
            emitter.connect(self._on_dims)
        target = self._live_target
        target.events.level_changed.connect(self._on_level_changed)
        target.events.refreshed.connect(self._on_refreshed)

    def _on_layer_removed(self, event: Event | None = None) -> None:
        layer = getattr(event, "value", None)
        for kept in (self.side_layers, self.dropped_layers, self._grid_hidden):
            if layer in kept:
                kept.remove(layer)
        if layer is not None and layer is self.density_layer:
            self.density_layer = None
        if self._grid_hidden and not self.side_layers:
            # the last side-by-side level went: no cell left, show the rest again
            self._apply_grid(False)

    def _on_level_changed(self, *_: Any) -> None:
        self.events.level()
        if self.chunks_on and self.chunk_level is None:
            self.show_chunks(True)

    def _on_refreshed(self, *_: Any) -> None:
        self.events.level()
