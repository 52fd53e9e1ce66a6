"""The *Pyramid QA* dock widget: inspect and compare the levels of a Zarr Vectors store.

Acts on the selected Zarr Vectors layer (and follows the layer selection):

* **Level**: lock the shown level (combo, slider, *finer* / *coarser*, ``Alt-Up`` /
  ``Alt-Down`` in the viewer) or go back to the automatic, zoom-driven choice. Needs the
  level-of-detail controller of the layer (:func:`..controller.controller_for`).
* **Statistics**: one row per level (:func:`~napari_zarr_vectors.format.pyramid.level_statistics`).
* **Dropped objects** between two levels: list them, isolate them (read at the finer level
  into a highlighted layer) or filter the shown layer to them.
* **Side by side**: chosen levels as separate layers, coloured alike, overlaid (blend,
  toggle) or in napari's grid mode; they share the viewer's camera.
* **Grids**: outlines of the non-empty chunks of the shown level, and of the bins of one chunk
  (3-D view: wireframes; 2-D view: the outlines the current slice cuts, on that slice).
* **Cross-level links**: fine -> coarse segments for the picked objects, the visible box or
  the whole level.

The work is done by the napari-free :mod:`napari_zarr_vectors.format.pyramid`; this module
only turns results into layers. Everything is vectorised numpy.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from qtpy.QtCore import Qt
from qtpy.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QGridLayout,
    QGroupBox,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSlider,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

import napari_zarr_vectors as nzv
from napari_zarr_vectors.format import pyramid as core

from ..browse_layers import controller_of
from ..chunk_cache import shared_cache
from ..layers import _line_width, layers_from_geometry
from ..lod import ViewState, visible_box
from ..store_info import layer_scale, store_info
from ._pyramid_layers import (
    BIN_COLOUR,
    CHUNK_COLOUR,
    LINK_COLOUR,
    QA_ROLES,
    box_outline_segments,
    harmonise_colours,
    highlight,
    overlay_info,
    segments_layer,
)

if TYPE_CHECKING:
    from napari.viewer import Viewer

#: At most this many boxes are outlined at once (a 3-D wireframe is 12 segments per box).
MAX_OVERLAY_BOXES = 20_000
#: Side-by-side levels with more vertices than this are read inside the visible box only.
SIDE_BY_SIDE_BUDGET = 200_000
#: The dropped-objects list shows at most this many ids (all of them are isolated).
MAX_LISTED_IDS = 5_000

COLUMNS = (
    "level",
    "vertices",
    "objects kept",
    "sparsity",
    "chunks",
    "stored",
    "decoded",
    "bin",
    "chunk",
    "method",
)


def is_zv_layer(layer: Any) -> bool:
    """A layer showing a ZV store (not a QA overlay, side-by-side level or isolated set)."""
    meta = getattr(layer, "metadata", {}).get("zarr_vectors")
    return (
        isinstance(meta, dict)
        and "path" in meta
        and meta.get("role") not in QA_ROLES
        and meta.get("qa") is None
    )


@dataclass
class Target:
    """The store the widget acts on: a layer, its store and its controller (if any)."""

    layer: Any
    store: Any
    controller: Any | None

    @property
    def level(self) -> int:
        if self.controller is not None:
            return int(self.controller.level)
        return int(self.layer.metadata["zarr_vectors"].get("level", 0))

    @property
    def locked_level(self) -> int | None:
        if self.controller is None:
            return None
        lv = self.controller.locked_level
        return None if lv is None else int(lv)

    @property
    def levels(self) -> list[int]:
        return [lv.index for lv in self.store.levels]

    @property
    def single_level(self) -> bool:
        return len(self.store.levels) < 2


class _BoxOverlay:
    """A Vectors layer outlining boxes; redrawn for the current slice / display mode."""

    def __init__(self, widget: PyramidQAWidget, role: str, colour: tuple) -> None:
        self.widget = widget
        self.role = role
        self.colour = colour
        self.layer: Any = None
        self.lo = self.hi = None
        self.info = None
        self.label = ""
        self.extra: dict[str, Any] = {}
        # adding or updating the layer changes napari's dims, whose events call refresh
        # again: a nested add inserted a second layer while the layer list was inserting
        # the first (a Qt abort in 3-D, issue 16); nested calls only mark the overlay stale
        self._busy = False
        self._stale = False

    def set_boxes(self, lo, hi, info, label: str, extra: dict[str, Any] | None = None) -> Any:
        self.lo, self.hi = np.asarray(lo, float), np.asarray(hi, float)
        self.info, self.label, self.extra = info, label, dict(extra or {})
        return self.refresh()

    def refresh(self) -> Any:
        if self.lo is None or self.info is None:
            return None
        if self._busy:
            self._stale = True
            return self.layer
        if self.layer is not None and self.layer not in self.widget.viewer.layers:
            # removed by the user or a closing viewer: the overlay is off, never re-added
            self.layer = None
            self.lo = self.hi = None
            return None
        self._busy = True
        try:
            self._draw()
        finally:
            self._busy = False
        if self._stale:  # the slice moved while drawing: draw once more (in place)
            self._stale = False
            self._busy = True
            try:
                self._draw()
            finally:
                self._busy = False
                self._stale = False
        return self.layer

    def _draw(self) -> None:
        viewer = self.widget.viewer
        ndim = self.info.ndim
        displayed, point = _slice_of(viewer, ndim)
        thickness = self.info.world_scale
        lo, hi = self.lo, self.hi
        if len(lo) > MAX_OVERLAY_BOXES:
            lo, hi = lo[:MAX_OVERLAY_BOXES], hi[:MAX_OVERLAY_BOXES]
        starts, ends, box = box_outline_segments(lo, hi, displayed, point, thickness)
        extra = {
            **self.extra,
            "boxes": len(self.lo),
            "boxes_drawn": len(np.unique(box)),
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
            self.layer.data = data
            self.layer.features = kwargs["features"]
            self.layer.edge_color = kwargs["edge_color"]
            self.layer.name = kwargs["name"]
            self.layer.metadata = kwargs["metadata"]
        else:
            from napari.layers import Layer

            self.layer = viewer.add_layer(Layer.create(data, kwargs, kind))

    def remove(self) -> None:
        if self.layer is not None and self.layer in self.widget.viewer.layers:
            self.widget.viewer.layers.remove(self.layer)
        self.layer = None
        self.lo = self.hi = None


def _slice_of(viewer: Any, ndim: int) -> tuple[list[int], np.ndarray]:
    """Displayed store axes and the dims point in store order, for a layer of ``ndim`` axes
    aligned with the viewer's trailing axes (napari order = reversed store order)."""
    offset = viewer.dims.ndim - ndim
    shown = [a - offset for a in viewer.dims.displayed if a >= offset]
    displayed = sorted(ndim - 1 - a for a in shown)
    point = np.asarray(viewer.dims.point[offset:], dtype=np.float64)[::-1]
    if len(point) < ndim:  # viewer with fewer axes than the store (no layer yet)
        point = np.concatenate([point, np.zeros(ndim - len(point))])
    return displayed, point


def visible_store_box(viewer: Any, store: Any) -> tuple[np.ndarray, np.ndarray]:
    """The world box the camera shows, in store order, clipped to the store bounds (see
    ``lod.visible_box``)."""
    ndim = int(store.ndim)
    lo_s, hi_s = (np.asarray(b, float) for b in store.bounds)
    offset = viewer.dims.ndim - ndim
    camera = viewer.scene.camera if hasattr(viewer, "scene") else viewer.camera
    displayed = tuple(a - offset for a in viewer.dims.displayed if a >= offset)
    scale = np.asarray(_scale_of(store), float)[::-1]
    view = ViewState(
        ndisplay=int(viewer.dims.ndisplay),
        center=tuple(float(c) for c in camera.center),
        zoom=float(camera.zoom),
        canvas_size=tuple(int(s) for s in viewer.canvas.size),
        point=tuple(float(p) for p in np.asarray(viewer.dims.point[offset:], float)),
        displayed=displayed,
        thickness=tuple(float(t) for t in scale),
        view_direction=tuple(camera.view_direction) if viewer.dims.ndisplay == 3 else None,
        up_direction=tuple(camera.up_direction) if viewer.dims.ndisplay == 3 else None,
    )
    lo, hi = visible_box(view, lo_s[::-1], hi_s[::-1])
    return np.asarray(lo)[::-1], np.asarray(hi)[::-1]


def _scale_of(store: Any) -> np.ndarray:
    return layer_scale(store)


def _fmt_bytes(n: int | None) -> str:
    if n is None:
        return "–"
    value = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{n} B"


def _fmt_shape(shape: Sequence[float]) -> str:
    return "×".join(f"{v:g}" for v in shape)


def parse_ids(text: str) -> list[int]:
    """``"3, 5 7"`` -> ``[3, 5, 7]`` (anything else is ignored)."""
    out = []
    for part in text.replace(";", ",").replace(" ", ",").split(","):
        part = part.strip()
        if part.lstrip("-").isdigit():
            out.append(int(part))
    return out


class PyramidQAWidget(QWidget):
    """Dock widget: level lock, level statistics, dropped objects, side-by-side levels, chunk
    and bin outlines, cross-level links (see the module docstring)."""

    def __init__(self, napari_viewer: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.viewer = napari_viewer
        self.target: Target | None = None
        self._stores: dict[str, Any] = {}
        self._chunk_boxes: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = {}
        self._connected: Any = None
        self._stats_worker: Any = None
        self._updating = False
        self._picking = False
        self._chunk_level: int | None = None
        self.side_layers: list[Any] = []
        self._toggle_index = -1
        self.dropped_ids = np.empty(0, np.int64)
        self.links_layer: Any = None
        self.dropped_layers: list[Any] = []
        self.chunk_overlay = _BoxOverlay(self, "qa_chunks", CHUNK_COLOUR)
        self.bin_overlay = _BoxOverlay(self, "qa_bins", BIN_COLOUR)
        self._build()
        self._connect_viewer()
        self.retarget()

    # ------------------------------------------------------------------ UI
    def _build(self) -> None:
        root = QVBoxLayout(self)
        self.header = QLabel("Select a Zarr Vectors layer.")
        self.header.setWordWrap(True)
        root.addWidget(self.header)

        # level lock
        box = QGroupBox("Level")
        grid = QGridLayout(box)
        self.level_label = QLabel("–")
        self.level_combo = QComboBox()
        self.level_combo.setToolTip("automatic = chosen from the zoom; a level = locked")
        self.level_slider = QSlider(Qt.Orientation.Horizontal)
        self.level_slider.setToolTip("step through the levels (locks the level)")
        self.finer_btn = QPushButton("finer")
        self.coarser_btn = QPushButton("coarser")
        self.finer_btn.setToolTip("lock one level finer (Alt-Down in the viewer)")
        self.coarser_btn.setToolTip("lock one level coarser (Alt-Up in the viewer)")
        grid.addWidget(self.level_label, 0, 0, 1, 3)
        grid.addWidget(self.level_combo, 1, 0)
        grid.addWidget(self.finer_btn, 1, 1)
        grid.addWidget(self.coarser_btn, 1, 2)
        grid.addWidget(self.level_slider, 2, 0, 1, 3)
        root.addWidget(box)
        self.level_combo.currentIndexChanged.connect(self._on_level_combo)
        self.level_slider.valueChanged.connect(self._on_level_slider)
        self.finer_btn.clicked.connect(lambda: self.step_level(-1))
        self.coarser_btn.clicked.connect(lambda: self.step_level(+1))

        # statistics
        box = QGroupBox("Levels")
        lay = QVBoxLayout(box)
        self.stats_table = QTableWidget(0, len(COLUMNS))
        self.stats_table.setHorizontalHeaderLabels(list(COLUMNS))
        self.stats_table.verticalHeader().setVisible(False)
        self.stats_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.stats_table.horizontalHeader().setSectionResizeMode(
            QHeaderView.ResizeMode.ResizeToContents
        )
        self.stats_table.setToolTip(
            "vertices: level metadata · objects kept: non-empty manifests / objects · "
            "stored: bytes on disk under the level folder (local stores; '–' remote) · "
            "decoded: vertices × ndim × dtype size"
        )
        self.stats_btn = QPushButton("Refresh statistics")
        self.stats_btn.clicked.connect(lambda: self.refresh_statistics())
        lay.addWidget(self.stats_table)
        lay.addWidget(self.stats_btn)
        root.addWidget(box)

        # dropped objects
        self.dropped_box = box = QGroupBox("Objects dropped between two levels")
        grid = QGridLayout(box)
        self.fine_combo = QComboBox()
        self.coarse_combo = QComboBox()
        self.list_btn = QPushButton("List")
        self.dropped_list = QListWidget()
        self.dropped_list.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.dropped_list.setMaximumHeight(120)
        self.dropped_label = QLabel("")
        self.isolate_btn = QPushButton("Isolate")
        self.isolate_btn.setToolTip(
            "read the selected (else all listed) objects at the finer level into a "
            "highlighted layer"
        )
        self.filter_btn = QPushButton("Filter shown layer")
        self.clear_filter_btn = QPushButton("Clear filter")
        grid.addWidget(QLabel("present at"), 0, 0)
        grid.addWidget(self.fine_combo, 0, 1)
        grid.addWidget(QLabel("absent at"), 0, 2)
        grid.addWidget(self.coarse_combo, 0, 3)
        grid.addWidget(self.list_btn, 0, 4)
        grid.addWidget(self.dropped_list, 1, 0, 1, 5)
        grid.addWidget(self.dropped_label, 2, 0, 1, 5)
        grid.addWidget(self.isolate_btn, 3, 0, 1, 2)
        grid.addWidget(self.filter_btn, 3, 2, 1, 2)
        grid.addWidget(self.clear_filter_btn, 3, 4)
        root.addWidget(box)
        self.list_btn.clicked.connect(lambda: self.list_dropped())
        self.isolate_btn.clicked.connect(lambda: self.isolate_dropped())
        self.filter_btn.clicked.connect(lambda: self.filter_to_dropped())
        self.clear_filter_btn.clicked.connect(lambda: self.clear_filter())

        # side by side
        self.side_box = box = QGroupBox("Side by side")
        grid = QGridLayout(box)
        self.side_list = QListWidget()
        self.side_list.setMaximumHeight(80)
        self.add_levels_btn = QPushButton("Add checked levels as layers")
        self.remove_levels_btn = QPushButton("Remove")
        self.grid_check = QCheckBox("grid mode")
        self.toggle_btn = QPushButton("Toggle")
        self.toggle_btn.setToolTip("show one level at a time, then all")
        self.blend_slider = QSlider(Qt.Orientation.Horizontal)
        self.blend_slider.setRange(0, 100)
        self.blend_slider.setValue(70)
        self.blend_slider.setToolTip("opacity of the side-by-side layers")
        grid.addWidget(self.side_list, 0, 0, 1, 3)
        grid.addWidget(self.add_levels_btn, 1, 0, 1, 2)
        grid.addWidget(self.remove_levels_btn, 1, 2)
        grid.addWidget(self.grid_check, 2, 0)
        grid.addWidget(self.toggle_btn, 2, 1)
        grid.addWidget(self.blend_slider, 2, 2)
        root.addWidget(box)
        self.add_levels_btn.clicked.connect(lambda: self.add_levels())
        self.remove_levels_btn.clicked.connect(lambda: self.remove_levels())
        self.grid_check.toggled.connect(self.set_grid)
        self.toggle_btn.clicked.connect(lambda: self.toggle_side_by_side())
        self.blend_slider.valueChanged.connect(self._on_blend)

        # grids
        box = QGroupBox("Chunks and bins")
        grid = QGridLayout(box)
        self.chunks_check = QCheckBox("outline the non-empty chunks of the shown level")
        self.chunk_edit = QLineEdit()
        self.chunk_edit.setPlaceholderText("chunk key, e.g. 0,1,-1")
        self.occupied_check = QCheckBox("occupied bins only")
        self.bins_btn = QPushButton("Show bins")
        self.pick_btn = QPushButton("Pick in canvas")
        self.pick_btn.setCheckable(True)
        self.pick_btn.setToolTip("click in the canvas: fills the chunk key and object id")
        grid.addWidget(self.chunks_check, 0, 0, 1, 3)
        grid.addWidget(self.chunk_edit, 1, 0)
        grid.addWidget(self.occupied_check, 1, 1)
        grid.addWidget(self.bins_btn, 1, 2)
        grid.addWidget(self.pick_btn, 2, 0, 1, 3)
        root.addWidget(box)
        self.chunks_check.toggled.connect(self._on_chunks_toggled)
        self.bins_btn.clicked.connect(lambda: self.show_bins())
        self.pick_btn.toggled.connect(self._on_pick_toggled)

        # links
        self.links_box = box = QGroupBox("Cross-level links (fine → coarse)")
        grid = QGridLayout(box)
        self.link_combo = QComboBox()
        self.scope_combo = QComboBox()
        self.scope_combo.addItems(["picked objects", "visible box", "whole level"])
        self.object_edit = QLineEdit()
        self.object_edit.setPlaceholderText("object ids, e.g. 3, 7")
        self.links_btn = QPushButton("Draw links")
        self.links_label = QLabel("")
        self.links_label.setWordWrap(True)
        grid.addWidget(self.link_combo, 0, 0)
        grid.addWidget(self.scope_combo, 0, 1)
        grid.addWidget(self.object_edit, 1, 0)
        grid.addWidget(self.links_btn, 1, 1)
        grid.addWidget(self.links_label, 2, 0, 1, 2)
        root.addWidget(box)
        self.links_btn.clicked.connect(lambda: self.show_links())

        self.status = QLabel("")
        self.status.setWordWrap(True)
        root.addWidget(self.status)
        root.addStretch(1)

    # ------------------------------------------------------------------ viewer wiring
    def _connect_viewer(self) -> None:
        v = self.viewer
        v.layers.selection.events.active.connect(self._on_active)
        v.layers.events.removed.connect(self._on_removed)
        v.layers.events.inserted.connect(self._on_inserted)
        v.dims.events.point.connect(self._on_dims)
        v.dims.events.ndisplay.connect(self._on_dims)
        v.dims.events.order.connect(self._on_dims)
        if self._on_click not in v.mouse_drag_callbacks:
            v.mouse_drag_callbacks.append(self._on_click)
        self._bind_keys()

    def _bind_keys(self) -> None:
        bind = getattr(self.viewer, "bind_key", None)
        if bind is None:
            return
        with contextlib.suppress(Exception):
            bind("Alt-Up", lambda _v: self.step_level(+1), overwrite=True)
            bind("Alt-Down", lambda _v: self.step_level(-1), overwrite=True)

    def closeEvent(self, event: Any) -> None:  # noqa: N802 - Qt API
        self.disconnect_viewer()
        super().closeEvent(event)

    def disconnect_viewer(self) -> None:
        v = self.viewer
        for emitter, cb in (
            (v.layers.selection.events.active, self._on_active),
            (v.layers.events.removed, self._on_removed),
            (v.layers.events.inserted, self._on_inserted),
            (v.dims.events.point, self._on_dims),
            (v.dims.events.ndisplay, self._on_dims),
            (v.dims.events.order, self._on_dims),
        ):
            with contextlib.suppress(Exception):
                emitter.disconnect(cb)
        with contextlib.suppress(ValueError):
            v.mouse_drag_callbacks.remove(self._on_click)
        bind = getattr(v, "bind_key", None)
        if bind is not None:
            for key in ("Alt-Up", "Alt-Down"):
                with contextlib.suppress(Exception):
                    bind(key, None)
        self._connect_controller(None)

    def _on_active(self, event: Any = None) -> None:
        self.retarget()

    def _on_inserted(self, event: Any = None) -> None:
        if self.target is None:
            self.retarget()

    def _on_removed(self, event: Any = None) -> None:
        layer = getattr(event, "value", None)
        if layer is not None and layer in self.side_layers:
            self.side_layers.remove(layer)
        if layer is not None and layer in self.dropped_layers:
            self.dropped_layers.remove(layer)
        if self.target is not None and self.target.layer not in self.viewer.layers:
            self.retarget()

    def _on_dims(self, event: Any = None) -> None:
        self.chunk_overlay.refresh()
        self.bin_overlay.refresh()

    # ------------------------------------------------------------------ target
    def retarget(self, layer: Any = None) -> Target | None:
        """Act on ``layer`` (default: the active ZV layer, else the current target while it
        is in the viewer, else the first ZV layer with a controller, else any ZV layer)."""
        candidates = []
        if layer is not None:
            candidates.append(layer)
        active = self.viewer.layers.selection.active
        if active is not None and is_zv_layer(active):
            candidates.append(active)
        if self.target is not None and self.target.layer in self.viewer.layers:
            candidates.append(self.target.layer)
        zv = [lyr for lyr in self.viewer.layers if is_zv_layer(lyr)]
        candidates += [lyr for lyr in zv if controller_of(lyr) is not None] + zv
        chosen = next((c for c in candidates if is_zv_layer(c)), None)
        if chosen is None:
            self._set_target(None)
            return None
        controller = controller_of(chosen)
        store = controller.store if controller is not None else self._store_for(chosen)
        if store is None:
            self._set_target(None)
            return None
        same = (
            self.target is not None
            and self.target.store is store
            and self.target.controller is controller
        )
        if same:
            self.target.layer = chosen
            self._sync_level_controls()
            return self.target
        self._set_target(Target(chosen, store, controller))
        return self.target

    def _store_for(self, layer: Any) -> Any | None:
        path = layer.metadata["zarr_vectors"]["path"]
        if path not in self._stores:
            try:
                self._stores[path] = nzv.open_store(path)
            except nzv.ZVError as exc:
                self._say(f"cannot open {path}: {exc}")
                return None
        return self._stores[path]

    def _set_target(self, target: Target | None) -> None:
        self.target = target
        self._connect_controller(target.controller if target else None)
        self.chunk_overlay.remove()
        self.bin_overlay.remove()
        self._chunk_boxes.clear()
        self.dropped_ids = np.empty(0, np.int64)
        self._fill_controls()
        if target is not None:
            self.refresh_statistics()
            if self.chunks_check.isChecked():
                self.show_chunks(True)

    def _connect_controller(self, controller: Any | None) -> None:
        if self._connected is not None:
            with contextlib.suppress(Exception):
                self._connected.events.level_changed.disconnect(self._on_level_changed)
            with contextlib.suppress(Exception):
                self._connected.events.refreshed.disconnect(self._on_refreshed)
        self._connected = controller
        if controller is not None:
            controller.events.level_changed.connect(self._on_level_changed)
            with contextlib.suppress(Exception):
                controller.events.refreshed.connect(self._on_refreshed)

    def _fill_controls(self) -> None:
        t = self.target
        self._updating = True
        try:
            for combo in (self.level_combo, self.fine_combo, self.coarse_combo, self.link_combo):
                combo.clear()
            self.side_list.clear()
            self.dropped_list.clear()
            self.dropped_label.setText("")
            self.stats_table.setRowCount(0)
            enabled = t is not None
            for w in (self.stats_btn, self.chunks_check, self.bins_btn, self.pick_btn):
                w.setEnabled(enabled)
            if t is None:
                self.header.setText("Select a Zarr Vectors layer.")
                for w in self._multi_level_widgets():
                    w.setEnabled(False)
                self.level_label.setText("–")
                return
            s = t.store
            levels = t.levels
            text = (
                f"<b>{s.name}</b> · {s.geometry_type} · ZV {s.zv_version} · "
                f"{len(levels)} level{'s' if len(levels) != 1 else ''}"
            )
            if t.single_level:
                text += (
                    "<br>This store has a <b>single level</b>: there is nothing to compare "
                    "or lock, and no cross-level links. Chunk and bin outlines and the "
                    "statistics still work."
                )
            elif t.controller is None:
                text += (
                    "<br>This layer shows one fixed level (it was not opened with the "
                    "level-of-detail engine): locking is unavailable."
                )
            self.header.setText(text)
            self.level_combo.addItem("automatic")
            self.level_combo.addItems([f"level {i}" for i in levels])
            self.level_slider.setRange(0, max(len(levels) - 1, 0))
            for combo in (self.fine_combo, self.coarse_combo):
                combo.addItems([str(i) for i in levels])
            if len(levels) > 1:
                self.fine_combo.setCurrentIndex(0)
                self.coarse_combo.setCurrentIndex(len(levels) - 1)
            for i in levels:
                item = QListWidgetItem(f"level {i}")
                item.setData(Qt.ItemDataRole.UserRole, i)
                item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                item.setCheckState(Qt.CheckState.Unchecked)
                self.side_list.addItem(item)
            for fine, delta in self._link_families():
                self.link_combo.addItem(
                    f"{fine} → {fine + 1}" + ("" if delta > 0 else " (links/-1)"), (fine, delta)
                )
            multi = not t.single_level
            for w in self._multi_level_widgets():
                w.setEnabled(multi)
            lockable = multi and t.controller is not None
            for w in (self.level_combo, self.level_slider, self.finer_btn, self.coarser_btn):
                w.setEnabled(lockable)
            has_objects = t.store.object_index(levels[0]) is not None
            for w in (self.filter_btn, self.clear_filter_btn):
                w.setEnabled(multi and t.controller is not None and has_objects)
            self.links_btn.setEnabled(self.link_combo.count() > 0)
            if multi and self.link_combo.count() == 0:
                self.links_label.setText("This store has no cross-level links.")
            self._sync_level_controls()
        finally:
            self._updating = False

    def _multi_level_widgets(self) -> list[QWidget]:
        return [
            self.level_combo,
            self.level_slider,
            self.finer_btn,
            self.coarser_btn,
            self.dropped_box,
            self.side_box,
            self.links_box,
        ]

    def _link_families(self) -> list[tuple[int, int]]:
        """``(fine level, delta)`` of each adjacent pair with stored links (``+1`` at the
        fine level preferred, else ``-1`` at the coarse level)."""
        t = self.target
        if t is None:
            return []
        levels = t.levels
        out = []
        for fine, coarse in zip(levels[:-1], levels[1:], strict=True):
            if coarse != fine + 1:
                continue
            try:
                if 1 in core.cross_level_deltas(t.store, fine):
                    out.append((fine, 1))
                elif -1 in core.cross_level_deltas(t.store, coarse):
                    out.append((fine, -1))
            except nzv.ZVError:
                continue
        return out

    # ------------------------------------------------------------------ level lock
    def _sync_level_controls(self) -> None:
        t = self.target
        if t is None:
            return
        level, locked = t.level, t.locked_level
        mode = "automatic" if locked is None else "locked"
        if t.controller is None:
            mode = "fixed"
        self.level_label.setText(f"shown: level {level} ({mode})")
        old = self._updating
        self._updating = True
        try:
            self.level_combo.setCurrentIndex(0 if locked is None else t.levels.index(locked) + 1)
            with contextlib.suppress(ValueError):  # the lock when locked, else the shown level
                self.level_slider.setValue(t.levels.index(level if locked is None else locked))
        finally:
            self._updating = old

    def _on_level_combo(self, index: int) -> None:
        if self._updating or self.target is None or index < 0:
            return
        self.lock_level(None if index == 0 else self.target.levels[index - 1])

    def _on_level_slider(self, value: int) -> None:
        if self._updating or self.target is None:
            return
        self.lock_level(self.target.levels[value])

    def lock_level(self, level: int | None) -> None:
        """Lock the shown level (``None``: back to the automatic, zoom-driven choice)."""
        t = self.target
        if t is None or t.controller is None:
            self._say("Locking needs a layer opened with the level-of-detail engine.")
            return
        if level is not None and level not in t.levels:
            raise ValueError(f"{t.store.name} has no level {level} (levels: {t.levels})")
        t.controller.lock_level(level)
        self._sync_level_controls()
        self._say(
            "automatic level (follows the zoom)" if level is None else f"locked at level {level}"
        )

    def step_level(self, step: int) -> None:
        """Lock one level coarser (``+1``) or finer (``-1``) than the locked one (else the
        shown one)."""
        t = self.target
        if t is None or t.controller is None or t.single_level:
            return
        levels = t.levels
        # from the locked level (the shown one may still be loading), else the shown one
        base = t.locked_level if t.locked_level is not None else t.level
        i = levels.index(base) if base in levels else 0
        self.lock_level(levels[int(np.clip(i + step, 0, len(levels) - 1))])

    def _on_level_changed(self, event: Any = None) -> None:
        self._sync_level_controls()
        if self.chunk_overlay.layer is not None and self._chunk_level is None:
            self._draw_chunks()

    def _on_refreshed(self, event: Any = None) -> None:
        self._sync_level_controls()

    # ------------------------------------------------------------------ statistics
    def refresh_statistics(self, block: bool = False) -> None:
        """Fill the statistics table (in a worker thread unless ``block``)."""
        t = self.target
        if t is None:
            return
        store = t.store
        if block:
            self._fill_stats(core.level_statistics(store))
            return
        from napari.qt.threading import create_worker

        self.stats_table.setRowCount(0)
        self._say("computing level statistics …")
        worker = create_worker(core.level_statistics, store)
        worker.returned.connect(lambda rows, s=store: self._stats_returned(s, rows))
        worker.errored.connect(lambda exc: self._say(f"statistics failed: {exc}"))
        self._stats_worker = worker
        worker.start()

    def _stats_returned(self, store: Any, rows: list[dict]) -> None:
        if self.target is not None and self.target.store is store:
            self._fill_stats(rows)
            self._say("")

    def _fill_stats(self, rows: list[dict]) -> None:
        self.statistics = rows
        table = self.stats_table
        table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            kept = (
                f"{row['objects_kept']:,} / {row['objects_total']:,}"
                if row["objects_total"]
                else "–"
            )
            sparsity = "–" if row["sparsity"] is None else f"{row['sparsity']:.3g}"
            cells = [
                str(row["level"]),
                "?" if row["vertices"] is None else f"{row['vertices']:,}",
                kept,
                sparsity,
                f"{row['chunks']:,}",
                _fmt_bytes(row["stored_bytes"]),
                _fmt_bytes(row["decoded_bytes"]),
                _fmt_shape(row["bin_shape"]),
                _fmt_shape(row["chunk_shape"]),
                str(row["coarsening_method"]),
            ]
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if c < 7:
                    item.setTextAlignment(
                        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                    )
                table.setItem(r, c, item)
        table.resizeRowsToContents()
        shown = min(len(rows), 8)
        height = table.horizontalHeader().height() + 2 * table.frameWidth() + 18
        height += sum(table.rowHeight(r) for r in range(shown))
        table.setMinimumHeight(height)
        table.setMaximumHeight(height)

    # ------------------------------------------------------------------ dropped objects
    def list_dropped(self, fine: int | None = None, coarse: int | None = None) -> np.ndarray:
        """Ids present at ``fine`` and absent at ``coarse`` (default: the combos), listed."""
        t = self.target
        if t is None or t.single_level:
            return np.empty(0, np.int64)
        fine = int(self.fine_combo.currentText()) if fine is None else int(fine)
        coarse = int(self.coarse_combo.currentText()) if coarse is None else int(coarse)
        if fine > coarse:
            fine, coarse = coarse, fine
        self._set_combo(self.fine_combo, str(fine))
        self._set_combo(self.coarse_combo, str(coarse))
        ids = core.dropped_objects(t.store, fine, coarse)
        self.dropped_ids = ids
        self.dropped_pair = (fine, coarse)
        self.dropped_list.clear()
        self.dropped_list.addItems([str(i) for i in ids[:MAX_LISTED_IDS].tolist()])
        more = f" (first {MAX_LISTED_IDS:,} listed)" if len(ids) > MAX_LISTED_IDS else ""
        if t.store.object_index(fine) is None:
            self.dropped_label.setText("This store has no objects: nothing can be dropped.")
        else:
            self.dropped_label.setText(
                f"{len(ids):,} object(s) present at level {fine} are absent at level "
                f"{coarse}{more}."
            )
        return ids

    def _selected_dropped(self) -> np.ndarray:
        chosen = [int(i.text()) for i in self.dropped_list.selectedItems()]
        return np.asarray(chosen, np.int64) if chosen else self.dropped_ids

    def isolate_dropped(self, ids: Sequence[int] | np.ndarray | None = None) -> list[Any]:
        """Read objects (default: the selected, else all listed dropped ids) at the finer
        level of the pair into highlighted layers."""
        t = self.target
        if t is None:
            return []
        if not len(self.dropped_ids) and ids is None:
            self.list_dropped()
        ids = self._selected_dropped() if ids is None else np.asarray(ids, np.int64)
        if not len(ids):
            self._say("no objects to isolate")
            return []
        fine, coarse = getattr(self, "dropped_pair", (t.levels[0], t.levels[-1]))
        geometry = t.store.read(fine, object_ids=ids)
        info = store_info(t.store, fine)
        out = []
        from napari.layers import Layer

        for data, kwargs, kind in layers_from_geometry(geometry, info, bounds_layer=False):
            data, kwargs, kind = highlight((data, kwargs, kind))
            kwargs["name"] = f"{t.store.name} dropped {fine}→{coarse} ({len(ids)} objects)"
            meta = kwargs["metadata"]["zarr_vectors"]
            meta.update(role="qa_dropped", object_ids=ids.tolist(), pair=[fine, coarse])
            layer = self.viewer.add_layer(Layer.create(data, kwargs, kind))
            self.dropped_layers.append(layer)
            out.append(layer)
        self._say(f"isolated {len(ids)} object(s): {geometry.vertex_count:,} vertices")
        return out

    def filter_to_dropped(self) -> None:
        """Show only the dropped objects in the controller's layers."""
        t = self.target
        if t is None or t.controller is None:
            self._say("filtering needs a layer opened with the level-of-detail engine")
            return
        ids = self._selected_dropped()
        t.controller.set_object_filter(ids)
        self._say(f"showing {len(ids)} object(s) only")

    def clear_filter(self) -> None:
        t = self.target
        if t is not None and t.controller is not None:
            t.controller.set_object_filter(None)
            self._say("object filter cleared")

    # ------------------------------------------------------------------ side by side
    def add_levels(self, levels: Sequence[int] | None = None) -> list[Any]:
        """Add levels (default: the checked ones) as separate, alike-coloured layers."""
        t = self.target
        if t is None:
            return []
        if levels is None:
            levels = [
                self.side_list.item(i).data(Qt.ItemDataRole.UserRole)
                for i in range(self.side_list.count())
                if self.side_list.item(i).checkState() == Qt.CheckState.Checked
            ]
        from napari.layers import Layer

        added = []
        notes = []
        for level in levels:
            info_level = t.store.level(int(level))
            bbox = None
            if info_level.vertex_count > SIDE_BY_SIDE_BUDGET:
                bbox = visible_store_box(self.viewer, t.store)
                notes.append(f"level {level}: visible box only")
            geometry = t.store.read(int(level), bbox=bbox)
            info = store_info(t.store, int(level))
            for data, kwargs, kind in layers_from_geometry(geometry, info, bounds_layer=False):
                data, kwargs, kind = harmonise_colours((data, kwargs, kind))
                kwargs["name"] = f"{kwargs['name'].split(' (level')[0]} [level {level}]"
                kwargs["metadata"]["zarr_vectors"]["qa"] = "side_by_side"
                kwargs["opacity"] = self.blend_slider.value() / 100.0
                kwargs.setdefault("blending", "translucent")
                layer = self.viewer.add_layer(Layer.create(data, kwargs, kind))
                self.side_layers.append(layer)
                added.append(layer)
        self._toggle_index = -1
        self._say(f"added {len(added)} layer(s)" + (f" ({'; '.join(notes)})" if notes else ""))
        return added

    def remove_levels(self) -> None:
        for layer in list(self.side_layers):
            if layer in self.viewer.layers:
                self.viewer.layers.remove(layer)
        self.side_layers.clear()

    def set_grid(self, enabled: bool) -> None:
        """napari's grid mode: one canvas cell per layer, one shared camera."""
        grid = getattr(getattr(self.viewer, "canvas", None), "grid", None)
        if grid is None:
            grid = self.viewer.grid
        grid.enabled = bool(enabled)
        if self.grid_check.isChecked() != bool(enabled):
            self.grid_check.setChecked(bool(enabled))

    def toggle_side_by_side(self) -> Any | None:
        """Show the side-by-side layers one at a time, then all again. Returns the layer
        now shown alone (``None`` when all are shown)."""
        layers = [lyr for lyr in self.side_layers if lyr in self.viewer.layers]
        if not layers:
            return None
        self._toggle_index += 1
        if self._toggle_index >= len(layers):
            self._toggle_index = -1
        for i, layer in enumerate(layers):
            layer.visible = self._toggle_index in (-1, i)
        return None if self._toggle_index == -1 else layers[self._toggle_index]

    def _on_blend(self, value: int) -> None:
        for layer in self.side_layers:
            layer.opacity = value / 100.0

    # ------------------------------------------------------------------ chunks and bins
    def chunk_boxes(self, level: int) -> tuple[np.ndarray, np.ndarray]:
        t = self.target
        assert t is not None
        key = (t.store.path, int(level))
        if key not in self._chunk_boxes:
            self._chunk_boxes[key] = core.chunk_boxes(t.store, int(level))
        return self._chunk_boxes[key]

    def show_chunks(self, enabled: bool = True, level: int | None = None) -> Any | None:
        """Outline the non-empty chunks of ``level`` (default: the shown level, followed as
        it changes); ``enabled=False`` removes the outlines."""
        blocked = self.chunks_check.blockSignals(True)
        self.chunks_check.setChecked(bool(enabled))
        self.chunks_check.blockSignals(blocked)
        if not enabled:
            self.chunk_overlay.remove()
            return None
        self._chunk_level = None if level is None else int(level)
        return self._draw_chunks()

    def _on_chunks_toggled(self, on: bool) -> None:
        self.show_chunks(bool(on))

    def _draw_chunks(self) -> Any | None:
        t = self.target
        if t is None:
            self.chunk_overlay.remove()
            return None
        level = t.level if self._chunk_level is None else self._chunk_level
        lo, hi = self.chunk_boxes(level)
        info = overlay_info(t.store, level)
        layer = self.chunk_overlay.set_boxes(
            lo, hi, info, "chunks", {"qa_level": level, "chunk_shape": info_chunk(t, level)}
        )
        over = f" (first {MAX_OVERLAY_BOXES:,} drawn)" if len(lo) > MAX_OVERLAY_BOXES else ""
        self._say(f"{len(lo):,} non-empty chunks at level {level}{over}")
        return layer

    def show_bins(
        self,
        chunk: Sequence[int] | None = None,
        occupied: bool | None = None,
        level: int | None = None,
    ) -> Any | None:
        """Outline the bins of one chunk of ``level`` (default: the shown level; chunk
        default: the chunk key field)."""
        t = self.target
        if t is None:
            return None
        if chunk is None:
            chunk = parse_ids(self.chunk_edit.text())
        if occupied is None:
            occupied = self.occupied_check.isChecked()
        level = t.level if level is None else int(level)
        info_level = t.store.level(level)
        if len(chunk) not in (t.store.ndim, info_level.key_ndim):
            self._say(f"a chunk key has {t.store.ndim} integers, e.g. 0,1,-1")
            return None
        self.chunk_edit.setText(",".join(str(int(c)) for c in chunk))
        try:
            lo, hi = core.bin_boxes(
                t.store, level, chunk, occupied=bool(occupied), cache=shared_cache()
            )
        except ValueError as exc:
            self._say(str(exc))
            return None
        info = overlay_info(t.store, level)
        key = ",".join(str(int(c)) for c in chunk)
        layer = self.bin_overlay.set_boxes(
            lo,
            hi,
            info,
            f"bins of chunk {key}",
            {"qa_level": level, "chunk": [int(c) for c in chunk], "occupied": bool(occupied)},
        )
        self._say(f"{len(lo):,} {'occupied ' if occupied else ''}bins in chunk {key}")
        return layer

    # ------------------------------------------------------------------ picking
    def _on_pick_toggled(self, on: bool) -> None:
        self._picking = bool(on)

    def _on_click(self, viewer: Any, event: Any) -> None:
        if not self._picking or self.target is None:
            return
        self.pick(event.position)

    def pick(self, world_position: Sequence[float]) -> tuple[list[int], int | None]:
        """Pick at a world position (napari order): fills the chunk key (shown level) and the
        object id of the nearest vertex near it. Returns ``(chunk key, object id)``."""
        t = self.target
        if t is None:
            return [], None
        ndim = t.store.ndim
        p = np.asarray(world_position, dtype=np.float64)[-ndim:][::-1]
        level = t.level
        info = t.store.level(level)
        origin = 0.0 if info.grid_origin is None else np.asarray(info.grid_origin, float)
        key = np.floor((p - origin) / info.chunk_shape).astype(np.int64).tolist()
        self.chunk_edit.setText(",".join(str(k) for k in key))
        displayed, _ = _slice_of(self.viewer, ndim)
        radius = np.asarray(info.bin_shape, float) * 2.0
        reach = radius.copy()
        others = [a for a in range(ndim) if a not in displayed]
        reach[others] = np.asarray(_scale_of(t.store), float)[others] / 2.0
        oid = None
        try:
            geom = t.store.read(level, bbox=(p - reach, p + reach), attributes=False)
        except nzv.ZVError:
            geom = None
        if geom is not None and geom.vertex_count and geom.vertex_object_ids is not None:
            d = geom.positions[:, displayed] - p[displayed]
            nearest = int(np.argmin(np.einsum("ij,ij->i", d, d)))
            oid = int(geom.vertex_object_ids[nearest])
            if oid >= 0:
                self.object_edit.setText(str(oid))
                self.scope_combo.setCurrentIndex(0)
            else:
                oid = None
        self._say(f"picked chunk {key}" + (f", object {oid}" if oid is not None else ""))
        return key, oid

    # ------------------------------------------------------------------ links
    def show_links(
        self,
        fine_level: int | None = None,
        scope: str | None = None,
        object_ids: Sequence[int] | None = None,
    ) -> Any | None:
        """Draw fine -> coarse link segments from ``fine_level`` (default: the combo) for the
        picked objects (``scope="objects"``), the visible box (``"box"``) or the whole level
        (``"all"``). Returns the Vectors layer."""
        t = self.target
        if t is None:
            return None
        families = dict(self._link_families())
        if not families:
            self._say("This store has no cross-level links.")
            self.links_label.setText("This store has no cross-level links.")
            return None
        if fine_level is None:
            data = self.link_combo.currentData()
            fine_level = data[0] if data else min(families)
        if fine_level not in families:
            self._say(f"no stored links between levels {fine_level} and {fine_level + 1}")
            return None
        delta = families[fine_level]
        scope = scope or ("objects", "box", "all")[max(self.scope_combo.currentIndex(), 0)]
        ids = None
        bbox = None
        if scope == "objects":
            ids = list(object_ids) if object_ids is not None else parse_ids(self.object_edit.text())
            if not ids:
                self._say("pick an object (or type its id) first")
                return None
            self.object_edit.setText(", ".join(str(i) for i in ids))
        elif scope == "box":
            bbox = visible_store_box(self.viewer, t.store)
        owner = fine_level if delta > 0 else fine_level + 1
        seg = core.cross_level_segments(
            t.store, owner, delta, object_ids=ids, bbox=bbox, cache=shared_cache()
        )
        info = overlay_info(t.store, fine_level)
        features = {"object_id": seg.fine_object_ids} if seg.fine_object_ids is not None else None
        data, kwargs, kind = segments_layer(
            seg.fine,
            seg.coarse,
            info,
            role="qa_links",
            label=f"links {fine_level}→{fine_level + 1}",
            colour=LINK_COLOUR,
            width=2.0 * _line_width(info),
            style="arrow",
            features=features,
            extra={
                "qa_levels": [seg.fine_level, seg.coarse_level],
                "scope": scope,
                "object_ids": ids,
                "records": seg.n_records,
                "missing": seg.n_missing,
            },
        )
        kwargs["name"] = f"{t.store.name} links {seg.fine_level}→{seg.coarse_level}"
        from napari.layers import Layer

        if self.links_layer is not None and self.links_layer in self.viewer.layers:
            self.viewer.layers.remove(self.links_layer)
        self.links_layer = self.viewer.add_layer(Layer.create(data, kwargs, kind))
        text = f"{len(seg):,} link(s) level {seg.fine_level} → {seg.coarse_level}"
        if seg.n_missing:
            text += f"; {seg.n_missing:,} record(s) with a missing endpoint left out"
        self.links_label.setText(text)
        self._say(text)
        return self.links_layer

    # ------------------------------------------------------------------ misc
    def _say(self, text: str) -> None:
        self.status.setText(text)

    @staticmethod
    def _set_combo(combo: QComboBox, text: str) -> None:
        i = combo.findText(text)
        if i >= 0:
            combo.setCurrentIndex(i)


def info_chunk(target: Target, level: int) -> list[float]:
    return np.asarray(target.store.level(level).chunk_shape, float).tolist()


def make_pyramid_widget(napari_viewer: Viewer) -> PyramidQAWidget:
    """The *Pyramid QA* dock widget for a viewer (the manifest names the class itself)."""
    return PyramidQAWidget(napari_viewer)
