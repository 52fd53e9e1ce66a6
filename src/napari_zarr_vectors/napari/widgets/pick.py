"""Pick and isolate: click (or hover) an object to see its id and attributes; "isolate"
loads that whole object at full resolution through its manifest (every chunk it names,
whatever the view) into layers of its own, in its colours, named by object and part
(``#2 skeleton (isolated)``); "clear" removes them."""

from __future__ import annotations

import html
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from qtpy.QtCore import Qt, QTimer
from qtpy.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from napari_zarr_vectors.napari.browse.hover import pick_fields, store_position_text
from napari_zarr_vectors.napari.browse.pick import Pick, pick_at, pick_slab
from napari_zarr_vectors.napari.browse.targets import (
    add_object_layers,
    isolate_layer_data,
    layer_kind,
)
from napari_zarr_vectors.napari.conventions import meta_of
from napari_zarr_vectors.napari.layerdata.export import export_dialog
from napari_zarr_vectors.napari.lod.viewer_layers import remove_layers
from napari_zarr_vectors.napari.tasks import LoadJob, run_task
from napari_zarr_vectors.napari.values import format_value
from napari_zarr_vectors.napari.widgets._browse_base import ZVBrowseWidget, was_click

if TYPE_CHECKING:
    from napari.layers import Layer
    from napari.utils.events import Event

    from napari import Viewer

#: Hover picks at most this often (seconds); the last position of a move is always picked.
HOVER_INTERVAL = 0.08

#: What the object spin box says before an object is picked or typed in.
NO_OBJECT_CHOSEN = "object id…"

NO_OBJECTS = (
    "This store has no objects: picking shows the vertex under the cursor; "
    "there is no object to isolate."
)


class PickWidget(ZVBrowseWidget):
    """Dock widget: what is under the cursor, and isolating whole objects."""

    def __init__(self, napari_viewer: Viewer) -> None:
        super().__init__(napari_viewer)
        self.on_click = QCheckBox("pick on click")
        self.on_click.setChecked(True)
        self.on_hover = QCheckBox("pick on hover")
        self.info = QLabel("Click an object in the viewer.")
        self.info.setTextFormat(Qt.TextFormat.RichText)
        self.info.setWordWrap(True)
        self.info.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.object_id = QSpinBox()
        self.object_id.setRange(-1, 2**31 - 1)
        self.object_id.setPrefix("object ")
        # its minimum (one below the smallest id) means "none chosen yet"
        self.object_id.setSpecialValueText(NO_OBJECT_CHOSEN)
        self.object_id.setToolTip("The object to isolate: pick one, or type its id")
        self.isolate_button = QPushButton("Isolate")
        self.isolate_button.setToolTip(
            "Load the whole object at full resolution (all its chunks) into layers of its own"
        )
        self.clear_button = QPushButton("Clear")
        self.clear_button.setToolTip("Remove the isolated objects of this store")
        self.export_button = QPushButton("Export…")
        self.export_button.setToolTip(
            "Save the isolated objects (else the objects passing the filters, else the whole "
            "store), whole and at full resolution, as a new Zarr Vectors store or a file of "
            "the field (.trk, .tck, .trx, .swc, .ply, .obj, .stl, .csv: the suffix picks it)"
        )
        self.status = QLabel()
        self.status.setWordWrap(True)
        checks = QHBoxLayout()
        checks.addWidget(self.on_click)
        checks.addWidget(self.on_hover)
        row = QHBoxLayout()
        row.addWidget(self.object_id, 1)
        row.addWidget(self.isolate_button)
        row.addWidget(self.clear_button)
        row.addWidget(self.export_button)
        self.controls = QWidget()
        inner = QVBoxLayout(self.controls)
        inner.setContentsMargins(0, 0, 0, 0)
        inner.addLayout(checks)
        inner.addWidget(self.info)
        inner.addLayout(row)
        inner.addWidget(self.status)
        self.layout().addWidget(self.controls)
        self.last_pick: Pick | None = None
        self._last_hover = 0.0
        self._hover_at: tuple[Any, list[int], Any] | None = None
        self._hover_timer = QTimer(self)
        self._hover_timer.setSingleShot(True)
        self._hover_timer.timeout.connect(self._hover_pick)
        self._worker: LoadJob | None = None
        self.isolate_button.clicked.connect(lambda: self.isolate(self.object_id.value()))
        self.object_id.valueChanged.connect(lambda *_: self._enable_isolate())
        self.clear_button.clicked.connect(self.clear)
        self.export_button.clicked.connect(lambda: export_dialog(self))
        napari_viewer.mouse_drag_callbacks.append(self._on_drag)
        napari_viewer.mouse_move_callbacks.append(self._on_move)
        self.destroyed.connect(lambda *_: self._disconnect(napari_viewer))
        self._on_active()

    def _disconnect(self, viewer: Viewer) -> None:
        for callbacks, cb in (
            (viewer.mouse_drag_callbacks, self._on_drag),
            (viewer.mouse_move_callbacks, self._on_move),
        ):
            if cb in callbacks:
                callbacks.remove(cb)

    # -- target --------------------------------------------------------------------------
    def _target_changed(self) -> None:
        self.controls.setVisible(self.layer is not None)
        self.last_pick = None
        if self.layer is None:
            return
        has_objects = self.session is not None and self.session.table.n_objects > 0
        unknown = self._objects_unknown()
        self.object_id.setEnabled(has_objects and unknown is None)
        if has_objects:
            ids = self.session.table.ids
            self.object_id.setRange(int(ids.min()) - 1, int(ids.max()))
            self.object_id.setValue(self.object_id.minimum())
            self.info.setText("Click an object in the viewer.")
            self.status.setText(unknown or "")
            if unknown is not None:
                self.object_id.setToolTip(unknown)
                self.isolate_button.setToolTip(unknown)
        else:
            self.info.setText("Click a vertex in the viewer.")
            self.status.setText(NO_OBJECTS)
        self._enable_isolate()

    def _objects_unknown(self) -> str | None:
        """Why objects cannot be picked or isolated here (:func:`.targets.objects_unknown`)."""
        return None if self.session is None else self.session.objects_unknown

    def object_chosen(self) -> int | None:
        """The object id in the spin box (``None`` before one is picked or typed in)."""
        value = self.object_id.value()
        return None if value == self.object_id.minimum() else int(value)

    def _enable_isolate(self) -> None:
        self.isolate_button.setEnabled(
            self.object_id.isEnabled() and self.object_chosen() is not None
        )

    # -- mouse -----------------------------------------------------------------------------
    def _on_drag(self, viewer: Viewer, event: Event):
        if self.layer is None or not self.on_click.isChecked():
            return
        if (yield from was_click(event)):
            self.pick_event(event)

    def _on_move(self, viewer: Viewer, event: Event) -> None:
        if self.layer is None or not self.on_hover.isChecked():
            return
        view = event.view_direction if len(event.dims_displayed) == 3 else None
        self._hover_at = (list(event.position), list(event.dims_displayed), view)
        wait = HOVER_INTERVAL - (time.monotonic() - self._last_hover)
        if wait <= 0:
            self._hover_pick()
        elif not self._hover_timer.isActive():  # pick where the cursor is once it may
            self._hover_timer.start(int(wait * 1000) + 1)

    def _hover_pick(self) -> None:
        if self._hover_at is None or self.layer is None:
            return
        position, displayed, view = self._hover_at
        self._hover_at = None
        self._last_hover = time.monotonic()
        self.pick(position, displayed, view_direction=view)

    def pick_event(self, event: Event) -> Pick | None:
        ndisplay = len(event.dims_displayed)
        view = event.view_direction if ndisplay == 3 else None
        return self.pick(event.position, list(event.dims_displayed), view_direction=view)

    def pick(
        self,
        position: Any,
        displayed: list[int] | None = None,
        view_direction: Any = None,
    ) -> Pick | None:
        """Pick at a world ``position`` (viewer axis order); shows and returns the pick."""
        if self.target is None:
            return None
        viewer = self.viewer
        if displayed is None:
            displayed = list(viewer.dims.displayed)
        camera = viewer.scene.camera if hasattr(viewer, "scene") else viewer.camera
        # a 2-D slice shows about one data unit around the current point
        slab = None if view_direction is not None else pick_slab(viewer, self.target.layers)
        hit = pick_at(
            self.target.layers,
            position,
            displayed=displayed,
            zoom=float(camera.zoom),
            view_direction=view_direction,
            slab=slab,
        )
        self.last_pick = hit
        self.info.setText(self.describe(hit))
        if hit is not None and hit.object_id is not None:
            self.object_id.setValue(int(hit.object_id))
        return hit

    def describe(self, hit: Pick | None) -> str:
        """The pick in the store's language (:func:`.hover.pick_fields`, as hover says it):
        the object id, its attributes and group names, then where the picked vertex is (store
        axes and units) and its own values."""
        if hit is None:
            return "Nothing under the cursor."
        esc = html.escape
        table = self.session.table if self.session is not None else None
        object_fields, own = pick_fields(hit, table)
        rows = []
        # a streamline of the overview picture: drawn, not held by the layer
        drawn_in = esc(hit.layer.name) + (", overview picture" if hit.in_fill else "")
        unknown = self._objects_unknown()
        if hit.object_id is not None:
            rows.append(f"<b>Object {hit.object_id}</b> <small>({drawn_in})</small>")
            rows += [f"{esc(k)}: {esc(format_value(v))}" for k, v in object_fields]
        elif unknown is not None:
            rows.append(f"<b>Object unknown</b> <small>({drawn_in})</small>")
            rows.append(esc(unknown))
        else:
            rows.append(f"<b>Vertex</b> <small>({drawn_in})</small>")
        where = store_position_text(hit.layer, hit.position)
        what = "vertex" if layer_kind(hit.layer) != "vectors" else "segment"
        line = f"<i>this {what}</i>" + (f" at {esc(where)}" if where else "")
        if own:
            line += ": " + "; ".join(f"{esc(k)}: {esc(format_value(v))}" for k, v in own)
        if own or where:
            rows.append(line)
        return "<br>".join(rows)

    # -- isolate ---------------------------------------------------------------------------
    def isolate(
        self,
        object_id: int,
        level: int = 0,
        then: Callable[[int | None], None] | None = None,
    ) -> LoadJob | None:
        """Read object ``object_id`` whole (level 0 by default) in the background
        (:func:`.tasks.run_task`) and add it as layers in its colours. Returns the job (its
        ``done`` is set when it is over); ``then(n_vertices)`` is called once its layers are
        in (``then(None)`` when it failed); ``None`` (the status says why) where the store
        does not record which vertex is whose."""
        if self.store is None:
            return None
        unknown = self._objects_unknown()
        if unknown is not None:
            self.status.setText(unknown)
            return None
        self.object_id.setValue(int(object_id))
        self.status.setText(f"loading object {object_id} …")
        oid = int(object_id)

        def failed(e: Exception) -> None:
            self.status.setText(f"object {oid}: {e}")
            if then is not None:
                then(None)

        self._worker = run_task(
            isolate_layer_data,
            self.store,
            oid,
            level,
            on_result=lambda data: self._isolated(oid, data, then),
            on_error=failed,
        )
        return self._worker

    def _isolated(
        self,
        object_id: int,
        layer_data: list[tuple],
        then: Callable[[int | None], None] | None = None,
    ) -> None:
        path = str(self.store.path) if self.store is not None else None
        # replace an earlier isolation of the same object
        earlier = [
            layer
            for layer in self.viewer.layers
            if (meta := meta_of(layer))
            and meta.get("role") == "isolated"
            and meta.get("object_id") == object_id
            and (path is None or meta.get("path") == path)
        ]
        remove_layers(self.viewer, earlier)
        added = add_object_layers(self.viewer, layer_data)
        n = max((_vertex_count(layer) for layer in added), default=0)
        self.status.setText(f"object {object_id}: {n:,} vertices at full resolution")
        if then is not None:
            then(n)

    def isolated_layers(self) -> list[Layer]:
        """The isolated-object layers of the current store."""
        path = str(self.store.path) if self.store is not None else None
        return [
            layer
            for layer in self.viewer.layers
            if (m := meta_of(layer)) and m.get("role") == "isolated" and m.get("path") == path
        ]

    def clear(self) -> None:
        """Remove the isolated objects of the current store."""
        remove_layers(self.viewer, self.isolated_layers())
        self.status.setText("")


def _vertex_count(layer: Layer) -> int:
    meta = meta_of(layer) or {}
    return int(meta.get("vertex_count", 0))
