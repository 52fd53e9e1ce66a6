"""Selection dock: select the objects inside a box or lasso drawn on the canvas, then show
only them, dim the rest, isolate them whole, or export them.

A thin view over the store's
:class:`~napari_zarr_vectors.napari.browse.selection.ObjectSelection` (:func:`selection_for`:
the one the *Object table* shows, highlighted once on the canvas). The region is
drawn in a temporary Shapes layer (napari's rectangle and lasso tools) that goes away once
drawn; the objects inside come from
:func:`~napari_zarr_vectors.napari.browse.region.objects_in_region` over the vertices the
store's layers draw, in the 2-D slice shown.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import numpy as np
from qtpy.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QPushButton

from napari_zarr_vectors.napari.browse import selection as sel
from napari_zarr_vectors.napari.browse.region import objects_in_region, slice_extent
from napari_zarr_vectors.napari.browse.selection import highlight_for, selection_for
from napari_zarr_vectors.napari.browse.targets import (
    META,
    OBJECTS_UNKNOWN,
    add_object_layers,
    isolate_layer_data,
)
from napari_zarr_vectors.napari.conventions import meta_of
from napari_zarr_vectors.napari.layerdata.export import export_dialog
from napari_zarr_vectors.napari.lod.viewer_layers import add_layer, remove_layers
from napari_zarr_vectors.napari.tasks import LoadJob, run_task
from napari_zarr_vectors.napari.widgets._browse_base import ZVBrowseWidget

if TYPE_CHECKING:
    from napari.layers import Layer, Shapes
    from napari.utils.events import Event
    from napari.viewer import Viewer

    from napari_zarr_vectors.napari.browse.selection import ObjectSelection

#: napari Shapes modes of the two region tools.
MODES = {"box": "add_rectangle", "lasso": "add_polygon_lasso"}

#: Outline colour of the region while it is drawn.
REGION_COLOUR = (1.0, 0.85, 0.2, 1.0)


def _viewer_units(viewer: Viewer, layer: Layer | None) -> tuple | None:
    """The units of every viewer axis for a layer as wide as the viewer: ``layer``'s own for
    the axes it has, the viewer-wide layers' for those in front (a bounds box's hidden time
    of a store whose data layers are 3-D)."""
    if layer is None:
        return None
    ndim = viewer.dims.ndim
    own = tuple(layer.units)[-ndim:]
    wide = next((tuple(w.units) for w in viewer.layers if w.ndim == ndim), None)
    lead = wide[: ndim - len(own)] if wide is not None else ("pixel",) * (ndim - len(own))
    return lead + own


class SelectionWidget(ZVBrowseWidget):
    """Dock widget: select objects by region; show only them, dim the rest, isolate,
    export."""

    def __init__(self, napari_viewer: Viewer) -> None:
        super().__init__(napari_viewer)
        self.box_button = QPushButton("Box")
        self.box_button.setToolTip("Drag a box on the canvas: select the objects inside")
        self.lasso_button = QPushButton("Lasso")
        self.lasso_button.setToolTip("Draw a lasso on the canvas: select the objects inside")
        self.clear_button = QPushButton("Clear")
        self.clear_button.setToolTip("Select nothing")
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.show_only = QCheckBox("Show only the selection")
        self.show_only.setToolTip("Hide every other object of the store (a filter)")
        self.dim_rest = QCheckBox("Dim the rest")
        self.dim_rest.setToolTip(
            "Draw the store faintly and the selected objects whole and highlighted over it"
        )
        self.isolate_button = QPushButton("Isolate")
        self.isolate_button.setToolTip(
            "Load the selected objects whole at full resolution into layers of their own"
        )
        self.export_button = QPushButton("Export…")
        self.export_button.setToolTip(
            "Save the selected objects as a new Zarr Vectors store or a file of the field"
            " (.trk, .tck, .trx, .swc, .ply, .obj, .stl, .csv: the suffix picks the format)"
        )
        self.status = QLabel()
        self.status.setWordWrap(True)
        tools = QHBoxLayout()
        for button in (self.box_button, self.lasso_button, self.clear_button):
            tools.addWidget(button)
        actions = QHBoxLayout()
        actions.addWidget(self.isolate_button)
        actions.addWidget(self.export_button)
        for item in (tools, self.summary, self.show_only, self.dim_rest, actions, self.status):
            if isinstance(item, QHBoxLayout):
                self.layout().addLayout(item)
            else:
                self.layout().addWidget(item)
        self._region: Shapes | None = None
        self._selection: ObjectSelection | None = None
        self._worker: LoadJob | None = None
        self.box_button.clicked.connect(lambda: self.draw("box"))
        self.lasso_button.clicked.connect(lambda: self.draw("lasso"))
        self.clear_button.clicked.connect(self.clear)
        self.show_only.toggled.connect(self._show_only)
        self.dim_rest.toggled.connect(self._dim)
        self.isolate_button.clicked.connect(self.isolate)
        self.export_button.clicked.connect(self.export)
        self._on_active()

    # -- following the store -------------------------------------------------------------
    @property
    def selection(self) -> ObjectSelection | None:
        return None if self.target is None else selection_for(self.target)

    def _target_changed(self) -> None:
        if self._selection is not None:
            self._selection.disconnect(self._selection_changed)
        self._selection = self.selection
        if self._selection is not None and self.target is not None:  # (one with the other)
            self._selection.connect(self._selection_changed)
            highlight_for(self.viewer, self.target)
        unknown = self._objects_unknown()
        enabled = self.target is not None and unknown is None
        for w in (self.box_button, self.lasso_button, self.clear_button, self.show_only):
            w.setEnabled(enabled)
            if unknown is not None:
                w.setToolTip(unknown)
        if unknown is not None or self.status.text().startswith(OBJECTS_UNKNOWN):  # (not another's)
            self.status.setText(unknown or "")
        self._selection_changed()

    def _objects_unknown(self) -> str | None:
        """Why regions select nothing here (:func:`.targets.objects_unknown`), else ``None``."""
        return None if self.session is None else self.session.objects_unknown

    def _selection_changed(self, ids: np.ndarray | None = None, source: object = None) -> None:
        selection = self.selection
        if selection is None:
            self.summary.setText("")
            for w in (self.dim_rest, self.isolate_button, self.export_button):
                w.setEnabled(False)
            return
        n = len(selection.ids)
        self.summary.setText(
            f"{n:,} of {self.session.table.n_objects:,} objects selected"
            if n
            else "No objects selected: draw a box or a lasso on the canvas."
        )
        some = n > 0 and self._objects_unknown() is None
        for w in (self.dim_rest, self.isolate_button, self.export_button):
            w.setEnabled(some)
        if self.show_only.isChecked():
            self._show_only(True)
        if self.dim_rest.isChecked():
            self._dim(some)

    # -- drawing the region ----------------------------------------------------------------
    def draw(self, tool: str) -> Shapes | None:
        """Start drawing a region with ``tool`` (``"box"`` or ``"lasso"``) on the canvas;
        the objects inside are selected once it is drawn. Returns the drawing layer;
        ``None`` (the status says why) where the store does not record whose vertices are
        inside."""
        from napari.layers import Shapes

        if self.target is None:
            return None
        unknown = self._objects_unknown()
        if unknown is not None:
            self.status.setText(unknown)
            return None
        viewer = self.viewer
        if viewer.dims.ndisplay != 2:
            viewer.dims.ndisplay = 2
            self.status.setText("Switched to 2-D: regions are drawn on the 2-D view.")
        self._end_drawing()
        store = self.store
        assert store is not None  # a target: its store
        path = str(store.path)
        layer = Shapes(
            ndim=viewer.dims.ndim,
            name=f"draw a {tool} (selection)",
            edge_color=[REGION_COLOUR],
            face_color=[(1.0, 0.85, 0.2, 0.08)],
            edge_width=0,
            # the store's units, so napari keeps drawing its layers in them
            units=_viewer_units(viewer, self.layer),
            metadata={META: {"role": "region", "path": path, "name": store.name}},
        )
        add_layer(viewer, layer, select=True)
        layer.mode = MODES[tool]
        layer.events.data.connect(lambda event: self._drawn(layer, tool, event))
        self._region = layer
        return layer

    def _drawn(self, layer: Shapes, tool: str, event: Event) -> None:
        if str(getattr(event, "action", "added")) not in ("added", "ActionType.ADDED"):
            return
        if not len(layer.data):
            return
        outline = np.asarray(layer.data[-1], np.float64)
        self.select_region(outline, tool)
        self._end_drawing()

    def select_region(self, outline: np.ndarray, tool: str = "box") -> np.ndarray:
        """Select the objects inside ``outline`` (its corners in world coordinates, one
        column per viewer axis, as napari's Shapes layer holds them) in the slice shown;
        none where the store does not record whose vertices are inside (the status says so)."""
        unknown = self._objects_unknown()
        if unknown is not None:
            self.status.setText(unknown)
            return np.empty(0, np.int64)
        viewer = self.viewer
        displayed = list(viewer.dims.displayed)
        assert self.target is not None and self.selection is not None  # a followed store
        layers = list(self.target.layers)
        ids = objects_in_region(
            layers,
            np.asarray(outline, np.float64)[:, displayed],
            displayed=displayed,
            extent=slice_extent(viewer, layers),
        )
        self.selection.set(ids, self)
        return ids

    def _end_drawing(self) -> None:
        region, self._region = self._region, None
        store_layer = self.layer  # the drawing goes: the store's layer is active again
        if region is not None:
            remove_layers(self.viewer, [region])
            if store_layer is not None and store_layer in self.viewer.layers:
                self.viewer.layers.selection.active = store_layer

    # -- actions ---------------------------------------------------------------------------
    def clear(self) -> None:
        if self.selection is not None:
            self.selection.clear()

    def _show_only(self, on: bool) -> None:
        if self.session is None:
            return
        assert self.selection is not None  # a session: a target
        sel.show_only(self.session.filters, self.selection.ids, on)
        self.session.apply()

    def _dim(self, on: bool) -> None:
        if self.target is None:
            return
        sel.dim(self.target.layers, on)
        remove_layers(self.viewer, self._selected_layers())
        if on and self.selection is not None and len(self.selection.ids):
            level = int(getattr(self.target, "level", 0))
            self._read(self.selection.ids, level, "selected", "")

    def isolate(self) -> LoadJob | None:
        """Read the selected objects whole at full resolution in the background
        (:func:`.tasks.run_task`) into layers of their own. Returns the job."""
        if self.selection is None or not len(self.selection.ids):
            return None
        n = len(self.selection.ids)
        self.status.setText(f"loading {n:,} objects …")
        return self._read(self.selection.ids, 0, "isolated", f"{n:,} objects isolated")

    def export(self) -> object:
        """Ask for a new store name and export the selected objects to it."""
        return export_dialog(self, None if self.selection is None else self.selection.ids)

    def _read(self, ids: np.ndarray, level: int, role: str, done: str) -> LoadJob:
        """Read ``ids`` whole at ``level`` on a worker; add them as layers of ``role``."""

        def loaded(layer_data: list[tuple]) -> None:
            self._add(layer_data)
            self.status.setText(done)

        if self._worker is not None and not self._worker.done:
            self._worker.quit()  # a newer selection replaces what it was reading
        self._worker = run_task(
            partial(isolate_layer_data, role=role),
            self.store,
            ids,
            level,
            on_result=loaded,
            on_error=lambda e: self.status.setText(str(e)),
        )
        return self._worker

    def _add(self, layer_data: list[tuple]) -> list[Layer]:
        return add_object_layers(self.viewer, layer_data)

    def _selected_layers(self) -> list[Layer]:
        path = None if self.store is None else str(self.store.path)
        return [
            layer
            for layer in self.viewer.layers
            if (m := meta_of(layer)) and m.get("role") == "selected" and m.get("path") == path
        ]
