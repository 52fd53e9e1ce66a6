"""The *Pyramid QA* dock widget: inspect and compare the levels of a Zarr Vectors store.

Acts on the target of the selected Zarr Vectors layer, resolved like every browse widget
(:class:`._browse_base.ZVBrowseWidget`, :func:`..browse_layers.target_for`: the layer's
level-of-detail controller, else a static target), and follows the layer selection:

* **Level**: lock the shown level (combo, slider, *finer* / *coarser*, ``Alt-Up`` /
  ``Alt-Down`` in the viewer) or go back to the automatic, zoom-driven choice.
* **Statistics**: one row per level (:func:`~napari_zarr_vectors.format.pyramid.level_statistics`)
  and the rows the shown level draws (the status bar's count).
* **Dropped objects** between two levels: list them, isolate them (read at the finer level
  into a highlighted layer) or filter the store's layers to them, through the filter state
  the browse widgets share (:class:`..browse.IdFilter` in the target's session).
* **Side by side**: chosen levels as separate layers, coloured alike, overlaid (blend,
  toggle) or in napari's grid mode (only these layers get cells).
* **Grids**: outlines of the non-empty chunks of the shown level, and of the bins of one chunk.
* **Cross-level links**: fine -> coarse segments for the picked objects, the visible box or
  the whole level.

Every store read and layer-data build runs on the plugin's worker thread
(:class:`..worker.LoadJob`, one :class:`QATask` per action, with progress and *Cancel*);
layers are added, changed and removed on the UI thread afterwards, one layer per event-loop
turn. What is drawn is capped by the vertex budget and the cap is said. An action that would
read most of a store asks first (:attr:`PyramidQAWidget.confirm`). The pure parts are in
:mod:`..pyramid_qa`, the layer data in :mod:`._pyramid_layers`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from qtpy.QtCore import Qt
from qtpy.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSlider,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

import napari_zarr_vectors as nzv
from napari_zarr_vectors.format import pyramid as core
from napari_zarr_vectors.napari.browse.table import IdFilter
from napari_zarr_vectors.napari.browse.targets import (
    controller_of,
    is_data_layer,
    target_for,
    zv_meta,
)
from napari_zarr_vectors.napari.layerdata.store_info import (
    layer_scale,
    store_box_to_world,
    world_box_to_store,
)
from napari_zarr_vectors.napari.lod.cache import shared_cache
from napari_zarr_vectors.napari.lod.settings import vertex_budget as default_budget
from napari_zarr_vectors.napari.lod.viewer_layers import (
    add_layer,
    hold_paint,
    make_layer,
    next_turn,
    remove_layers,
)
from napari_zarr_vectors.napari.qa.jobs import PENDING, QATask
from napari_zarr_vectors.napari.qa.overlays import (
    BIN_COLOUR,
    CHUNK_COLOUR,
    Built,
    box_corner_edges,
    box_outline_segments,
    boxes_in_slab,
    call_job,
    isolate_job,
    links_job,
    overlay_info,
    segments_layer,
    side_by_side_job,
)
from napari_zarr_vectors.napari.qa.pure import (
    MAX_LISTED_IDS,
    STAT_COLUMNS,
    STAT_TOOLTIP,
    DroppedObjects,
    axis_order,
    drawn_text,
    dropped,
    estimate_read,
    grid_plan,
    levels_holding,
    parse_ids,
    reads_most,
    select_within,
    shown_of,
    slice_of,
    stat_cells,
    store_vertices,
    visible_store_box,
)
from napari_zarr_vectors.napari.widgets._browse_base import ZVBrowseWidget

if TYPE_CHECKING:
    from napari.viewer import Viewer

#: Share of the vertex budget one added layer may hold (see
#: :meth:`PyramidQAWidget.layer_budget`).
BUDGET_SHARE = 0.25


def is_zv_layer(layer: Any) -> bool:
    """Any layer of this plugin (data, bounds box, isolated object, QA overlay)."""
    return zv_meta(layer) is not None


class _BoxOverlay:
    """A Vectors layer outlining boxes, capped by the vertex budget; redrawn (UI thread,
    numpy only) for the current slice / display mode."""

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
        #: the slice the layer was drawn for (displayed axes, point on the other axes)
        self._drawn_for: tuple | None = None

    def set_boxes(self, lo, hi, info, label: str, extra: dict[str, Any] | None = None) -> Any:
        self.lo, self.hi = np.asarray(lo, float), np.asarray(hi, float)
        self.info, self.label, self.extra = info, label, dict(extra or {})
        self._drawn_for = None
        return self.refresh()

    def _slice_key(self) -> tuple:
        displayed, point = slice_of(self.widget.viewer, self.info.order, self.widget.store)
        others = [a for a in range(self.info.ndim) if a not in displayed]
        return tuple(displayed), tuple(point[others].tolist())

    def refresh(self) -> Any:
        """Redraw for the current slice (nothing to do when the slice the layer shows has
        not changed)."""
        if self.lo is None or self.info is None:
            return None
        layers = self.widget.viewer.layers
        if self.layer in layers and self._drawn_for == self._slice_key():
            return self.layer
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

    def cut(self) -> np.ndarray:
        """Rows of the boxes the current slab cuts (all of them in a 3-D view)."""
        displayed, point = slice_of(self.widget.viewer, self.info.order, self.widget.store)
        return boxes_in_slab(self.lo, self.hi, displayed, point, self.info.world_scale)

    def _draw(self) -> None:
        viewer = self.widget.viewer
        self._drawn_for = self._slice_key()
        displayed, point = slice_of(viewer, self.info.order, self.widget.store)
        thickness = self.info.world_scale
        rows = boxes_in_slab(self.lo, self.hi, displayed, point, thickness)
        # two ends a segment, len(a) segments a box, within the vertex budget
        edges = len(box_corner_edges(len(displayed))[0])
        cap = max(self.widget.layer_budget() // (2 * edges), 1)
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

    def remove(self) -> None:
        """No layer of this overlay's role stays in the viewer."""
        viewer = self.widget.viewer
        mine = [lyr for lyr in viewer.layers if (zv_meta(lyr) or {}).get("role") == self.role]
        remove_layers(viewer, mine)
        self.layer = None
        self.lo = self.hi = None


class PyramidQAWidget(ZVBrowseWidget):
    """Dock widget: level lock, level statistics, dropped objects, side-by-side levels, chunk
    and bin outlines, cross-level links (see the module docstring)."""

    def __init__(self, napari_viewer: Any, parent: QWidget | None = None) -> None:
        super().__init__(napari_viewer, parent)
        self._store: Any = None
        self._chunk_boxes: dict[tuple[str, str, int], tuple[np.ndarray, np.ndarray]] = {}
        self._connected: Any = None
        self._updating = False
        self._picking = False
        self._chunk_level: int | None = None
        self._overlays_pending = False
        self.tasks: dict[str, QATask] = {}
        self.statistics: list[dict] = []
        self.families: list[tuple[int, int]] = []
        self.has_objects = False
        self.side_layers: list[Any] = []
        self._grid_hidden: list[Any] = []
        self._toggle_index = -1
        self.dropped: DroppedObjects | None = None
        self._lock_before_filter: tuple[bool, int | None] | None = None
        self.links_layer: Any = None
        self.dropped_layers: list[Any] = []
        self.chunk_overlay = _BoxOverlay(self, "qa_chunks", CHUNK_COLOUR)
        self.bin_overlay = _BoxOverlay(self, "qa_bins", BIN_COLOUR)
        #: asks the user before an action reads most of a store: ``confirm(text) -> bool``
        #: (a QMessageBox; scripts and tests may replace it)
        self.confirm: Callable[[str], bool] = self._ask
        self._build()
        self._connect_viewer()
        self.follow(self.viewer.layers.selection.active)

    # ------------------------------------------------------------------ UI
    def _build(self) -> None:
        root = self.layout()
        self.info_label = QLabel("")
        self.info_label.setWordWrap(True)
        root.addWidget(self.info_label)

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
        grid = QGridLayout(box)
        self.stats_table = QTableWidget(0, len(STAT_COLUMNS))
        self.stats_table.setHorizontalHeaderLabels(list(STAT_COLUMNS))
        self.stats_table.verticalHeader().setVisible(False)
        self.stats_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.stats_table.horizontalHeader().setSectionResizeMode(
            QHeaderView.ResizeMode.ResizeToContents
        )
        self.stats_table.setToolTip(STAT_TOOLTIP)
        self.drawn_label = QLabel("")
        self.drawn_label.setWordWrap(True)
        self.stats_btn = QPushButton("Refresh statistics")
        self.stats_btn.clicked.connect(lambda: self.refresh_statistics())
        grid.addWidget(self.stats_table, 0, 0)
        grid.addWidget(self.drawn_label, 1, 0)
        grid.addWidget(self.stats_btn, 2, 0)
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
        self.dropped_label.setWordWrap(True)
        self.isolate_btn = QPushButton("Isolate")
        self.isolate_btn.setToolTip(
            "read the selected (else all listed) objects at the finer level into a "
            "highlighted layer (capped by the vertex budget)"
        )
        self.filter_btn = QPushButton("Filter shown layer")
        self.filter_btn.setToolTip(
            "show only the selected (else all listed) objects in the store's layers, with "
            "the browse widgets' filters; locks the finer level when the shown one lacks them"
        )
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
        self.grid_check.setToolTip("one canvas cell per side-by-side level (others hidden)")
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

        # progress of worker jobs
        row = QHBoxLayout()
        self.progress_bar = QProgressBar()
        # the bar's text must not widen the dock: a wider dock shrinks the canvas, which
        # makes the level of detail reload (and, in 3-D, redraw) for nothing
        self.progress_bar.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.cancel_btn = QPushButton("Cancel")
        for w in (self.progress_bar, self.cancel_btn):  # showing them moves nothing
            policy = w.sizePolicy()
            policy.setRetainSizeWhenHidden(True)
            w.setSizePolicy(policy)
            w.setVisible(False)
        self.cancel_btn.clicked.connect(lambda: self.cancel_tasks())
        row.addWidget(self.progress_bar, 1)
        row.addWidget(self.cancel_btn)
        root.addLayout(row)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        root.addWidget(self.status)
        # texts that change with every action keep a fixed size: a dock that grows shrinks
        # the canvas, which makes the level of detail reload and redraw for nothing
        lines = {self.status: 3, self.dropped_label: 2, self.links_label: 2, self.drawn_label: 2}
        for label, n in lines.items():
            label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
            label.setFixedHeight(label.fontMetrics().lineSpacing() * n + 4)

    # ------------------------------------------------------------------ viewer wiring
    def _connect_viewer(self) -> None:
        v = self.viewer
        v.layers.events.inserted.connect(self._on_inserted)
        v.layers.events.removed.connect(self._on_qa_removed)
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
        """Stop listening to the viewer (the widget is closing)."""
        self.cancel_tasks()
        v = self.viewer
        for emitter, cb in (
            (v.layers.selection.events.active, self._on_active),
            (v.layers.events.removed, self._on_removed),
            (v.layers.events.removed, self._on_qa_removed),
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
        self._connect_target(None)

    def _on_inserted(self, event: Any = None) -> None:
        if self.target is None:
            self.follow(getattr(event, "value", None))

    def _on_qa_removed(self, event: Any = None) -> None:
        layer = getattr(event, "value", None)
        for kept in (self.side_layers, self.dropped_layers, self._grid_hidden):
            if layer in kept:
                kept.remove(layer)

    def _on_dims(self, event: Any = None) -> None:
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

    # ------------------------------------------------------------------ target
    def follow(self, layer: Any) -> None:
        """Act on ``layer``'s target (:func:`..browse_layers.target_for`, as the browse
        widgets do); a layer of no store keeps the current target while its layer is in the
        viewer, else the widget takes the first store layer (one with a controller first)."""
        if zv_meta(layer) is None or target_for(self.viewer, layer) is None:
            layer = None
            if self.layer is not None and self.layer in self.viewer.layers:
                layer = self.layer
            else:
                data = [lyr for lyr in self.viewer.layers if is_data_layer(lyr)]
                with_controller = [lyr for lyr in data if controller_of(lyr) is not None]
                layer = next(iter(with_controller + data), None)
        super().follow(layer)

    def retarget(self, layer: Any = None) -> Any:
        """Act on ``layer`` (default: the active layer); returns the target."""
        self.follow(self.viewer.layers.selection.active if layer is None else layer)
        return self.target

    @property
    def controller(self) -> Any | None:
        """The level-of-detail controller of the target (``None``: a fixed-level layer)."""
        return self.target if hasattr(self.target, "lock_level") else None

    @property
    def levels(self) -> list[int]:
        store = self.store
        return [] if store is None else [lv.index for lv in store.levels]

    @property
    def level(self) -> int:
        """The level the target shows."""
        return int(self.target.level)

    @property
    def single_level(self) -> bool:
        return len(self.levels) < 2

    def budget(self) -> int:
        """The vertex budget of the target (the controller's, else the plugin default)."""
        controller = self.controller
        return int(controller.vertex_budget) if controller is not None else default_budget()

    def layer_budget(self) -> int:
        """Rows one layer this widget adds may hold: :data:`BUDGET_SHARE` of the vertex
        budget (the budget is what one data *swap* costs ~50 ms; adding a layer costs more
        per row, and it draws on top of what the store's layers hold)."""
        return max(int(self.budget() * BUDGET_SHARE), 1)

    def _target_changed(self) -> None:
        self._connect_target(self.target)
        store = self.store
        if store is self._store:
            self._sync_level_controls()
            return
        self._store = store
        self.cancel_tasks()
        self.chunk_overlay.remove()
        self.bin_overlay.remove()
        self._chunk_boxes.clear()
        self.dropped = None
        self._lock_before_filter = None
        self.statistics, self.families, self.has_objects = [], [], False
        self._fill_controls()
        if store is not None:
            self.refresh_statistics()
            if self.chunks_check.isChecked():
                self.show_chunks(True)

    def _update_header(self, *_: Any) -> None:
        super()._update_header()
        store = self.store
        if store is None:
            self.info_label.setText("")
            return
        n = len(store.levels)
        text = f"{store.geometry_type} · ZV {store.zv_version} · {n} level{'s' if n != 1 else ''}"
        if n < 2:
            text += (
                "<br>This store has a <b>single level</b>: there is nothing to compare "
                "or lock, and no cross-level links. Chunk and bin outlines and the "
                "statistics still work."
            )
        elif self.controller is None:
            text += (
                "<br>This layer shows one fixed level (it was not opened with the "
                "level-of-detail engine): locking is unavailable."
            )
        self.info_label.setText(text)

    def _connect_target(self, target: Any | None) -> None:
        old = self._connected
        if old is target:
            return
        if old is not None:
            with contextlib.suppress(Exception):
                old.events.level_changed.disconnect(self._on_level_changed)
            with contextlib.suppress(Exception):
                old.events.refreshed.disconnect(self._on_refreshed)
        self._connected = target
        if target is not None:
            target.events.level_changed.connect(self._on_level_changed)
            target.events.refreshed.connect(self._on_refreshed)

    def _fill_controls(self) -> None:
        store = self.store
        self._updating = True
        try:
            for combo in (self.level_combo, self.fine_combo, self.coarse_combo, self.link_combo):
                combo.clear()
            self.side_list.clear()
            self.dropped_list.clear()
            self.dropped_label.setText("")
            self.links_label.setText("")
            self.stats_table.setRowCount(0)
            enabled = store is not None
            for w in (self.stats_btn, self.chunks_check, self.bins_btn, self.pick_btn):
                w.setEnabled(enabled)
            if store is None:
                for w in self._multi_level_widgets():
                    w.setEnabled(False)
                self.level_label.setText("–")
                return
            levels = self.levels
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
            multi = not self.single_level
            for w in self._multi_level_widgets():
                w.setEnabled(multi)
            lockable = multi and self.controller is not None
            for w in (self.level_combo, self.level_slider, self.finer_btn, self.coarser_btn):
                w.setEnabled(lockable)
            # known once the statistics job has looked (links, objects)
            for w in (self.links_btn, self.filter_btn, self.clear_filter_btn):
                w.setEnabled(False)
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

    # ------------------------------------------------------------------ worker tasks
    def _run(
        self,
        kind: str,
        job: Callable[..., Any],
        args: tuple,
        apply: Callable,
        cancellable: bool = False,
    ) -> QATask:
        """Start ``job(*args)`` on the worker thread (cancelling a running task of the same
        kind); ``apply(result)`` runs on the UI thread."""
        running = self.tasks.get(kind)
        if running is not None and not running.done:
            running.cancel()
        task = QATask(self, kind, job, args, apply, cancellable)
        self.tasks[kind] = task
        self._show_progress(task)
        return task.start()

    def cancel_tasks(self) -> None:
        """Cancel every running task (the *Cancel* button)."""
        for task in list(self.tasks.values()):
            if not task.done:
                task.cancel()
                self._say(f"{task.kind}: cancelled")

    @property
    def busy(self) -> bool:
        """Whether a task is running."""
        return any(not t.done for t in self.tasks.values())

    def _show_progress(self, task: QATask) -> None:
        p = task.progress
        self.progress_bar.setRange(0, max(int(p.total), 1))
        self.progress_bar.setValue(int(p.done))
        self.progress_bar.setFormat(f"{task.kind}: {p.text}")
        self.progress_bar.setVisible(True)
        self.cancel_btn.setVisible(True)

    def _task_over(self, task: QATask) -> None:
        if not self.busy:
            self.progress_bar.setVisible(False)
            self.cancel_btn.setVisible(False)

    def _add_in_turns(
        self,
        kind: str,
        items: Sequence[tuple],
        added: Callable[[Any], None],
        then: Callable[[list[Any]], Any],
    ) -> Any:
        """Add layers (built on the worker) one per event-loop turn (the UI stays responsive
        between them) for the running task of ``kind``: ``added(layer)`` after each,
        ``task.finish(then(layers))`` at the end. Returns :data:`PENDING`."""
        task = self.tasks[kind]
        queue = list(items)
        layers: list[Any] = []

        def step() -> None:
            if task.done:
                return
            if not queue:
                task.finish(then(layers))
                return
            layer = add_layer(self.viewer, queue.pop(0))
            layers.append(layer)
            added(layer)
            next_turn(step)

        # not in the turn that delivered the result (which may have removed a layer)
        next_turn(step)
        return PENDING

    def _ask(self, text: str) -> bool:
        answer = QMessageBox.question(
            self,
            "Pyramid QA",
            text,
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No,
        )
        return answer == QMessageBox.StandardButton.Yes

    def _confirm_read(self, to_read: int, what: str) -> bool:
        """Ask before reading most of the store (see :func:`..pyramid_qa.reads_most`)."""
        store = self.store
        if not reads_most(to_read, store, self.budget()):
            return True
        ok = self.confirm(
            f"{what} reads about {to_read:,} of the {store_vertices(store):,} vertices "
            f"stored in {store.name} (it runs in the background; at most "
            f"{self.layer_budget():,} rows a layer are drawn). Go on?"
        )
        if not ok:
            self._say(f"{what}: not started")
        return ok

    # ------------------------------------------------------------------ level lock
    def _sync_level_controls(self) -> None:
        if self.target is None or self.store is None:
            return
        level = self.level
        locked = getattr(self.target, "locked_level", None)
        mode = "fixed" if self.controller is None else "automatic" if locked is None else "locked"
        self.level_label.setText(f"shown: level {level} ({mode})")
        old = self._updating
        self._updating = True
        try:
            levels = self.levels
            self.level_combo.setCurrentIndex(0 if locked is None else levels.index(locked) + 1)
            with contextlib.suppress(ValueError):  # the lock when locked, else the shown level
                self.level_slider.setValue(levels.index(level if locked is None else locked))
        finally:
            self._updating = old
        self._update_drawn()

    def _update_drawn(self) -> None:
        if self.target is None or self.store is None:
            self.drawn_label.setText("")
            return
        level = self.level
        drawn = getattr(self.target, "vertex_count", None)
        if drawn is None:  # a fixed-level layer: what its layers hold
            drawn = sum(int(zv_meta(lyr).get("vertex_count", 0) or 0) for lyr in self.target.layers)
        stored = self.store.level(level).vertex_count
        locked = getattr(self.target, "locked_level", None) is not None
        self.drawn_label.setText(drawn_text(level, int(drawn), stored, locked))

    def _on_level_combo(self, index: int) -> None:
        if self._updating or self.target is None or index < 0:
            return
        self.lock_level(None if index == 0 else self.levels[index - 1])

    def _on_level_slider(self, value: int) -> None:
        if self._updating or self.target is None:
            return
        self.lock_level(self.levels[value])

    def lock_level(self, level: int | None) -> None:
        """Lock the shown level (``None``: back to the automatic, zoom-driven choice)."""
        controller = self.controller
        if controller is None:
            self._say("Locking needs a layer opened with the level-of-detail engine.")
            return
        if level is not None and level not in self.levels:
            raise ValueError(f"{self.store.name} has no level {level} (levels: {self.levels})")
        controller.lock_level(level)
        self._sync_level_controls()
        self._say(
            "automatic level (follows the zoom)" if level is None else f"locked at level {level}"
        )

    def step_level(self, step: int) -> None:
        """Lock one level coarser (``+1``) or finer (``-1``) than the locked one (else the
        shown one)."""
        controller = self.controller
        if controller is None or self.single_level:
            return
        levels = self.levels
        # from the locked level (the shown one may still be loading), else the shown one
        base = controller.locked_level if controller.locked_level is not None else self.level
        i = levels.index(base) if base in levels else 0
        self.lock_level(levels[int(np.clip(i + step, 0, len(levels) - 1))])

    def _on_level_changed(self, *_: Any) -> None:
        self._sync_level_controls()
        if self.chunks_check.isChecked() and self._chunk_level is None:
            self.show_chunks(True)

    def _on_refreshed(self, *_: Any) -> None:
        self._sync_level_controls()

    # ------------------------------------------------------------------ statistics
    def refresh_statistics(self) -> QATask | None:
        """Fill the statistics table, the link families and whether the store has objects
        (read on the worker thread)."""
        store = self.store
        if store is None:
            return None
        self.stats_table.setRowCount(0)
        return self._run(
            "statistics",
            call_job,
            ("reading level metadata", _store_facts, store),
            lambda facts, s=store: self._facts_ready(s, facts),
        )

    def _facts_ready(self, store: Any, facts: tuple) -> list[dict] | None:
        if store is not self.store:
            return None
        rows, families, has_objects = facts
        self.statistics, self.families, self.has_objects = rows, families, has_objects
        self._fill_stats(rows)
        self._updating = True
        try:
            self.link_combo.clear()
            for fine, delta in families:
                self.link_combo.addItem(
                    f"{fine} → {fine + 1}" + ("" if delta > 0 else " (links/-1)"), (fine, delta)
                )
        finally:
            self._updating = False
        multi = not self.single_level
        self.links_btn.setEnabled(bool(families))
        if multi and not families:
            self.links_label.setText("This store has no cross-level links.")
        for w in (self.filter_btn, self.clear_filter_btn):
            w.setEnabled(multi and has_objects and self.session is not None)
        return rows

    def _fill_stats(self, rows: list[dict]) -> None:
        table = self.stats_table
        table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            for c, text in enumerate(stat_cells(row)):
                item = QTableWidgetItem(text)
                if c < 7:
                    item.setTextAlignment(
                        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                    )
                table.setItem(r, c, item)
        table.resizeRowsToContents()
        shown = min(len(rows), 8)
        height = table.horizontalHeader().height() + 2 * table.frameWidth() + 4
        height += table.horizontalScrollBar().sizeHint().height()
        height += sum(table.rowHeight(r) for r in range(shown))
        table.setMinimumHeight(height)
        table.setMaximumHeight(height)
        self._update_drawn()

    # ------------------------------------------------------------------ dropped objects
    def list_dropped(self, fine: int | None = None, coarse: int | None = None) -> QATask | None:
        """List the ids present at ``fine`` and absent at ``coarse`` (default: the combos)."""
        store = self.store
        if store is None or self.single_level:
            return None
        fine = int(self.fine_combo.currentText()) if fine is None else int(fine)
        coarse = int(self.coarse_combo.currentText()) if coarse is None else int(coarse)
        fine, coarse = sorted((fine, coarse))
        self._set_combo(self.fine_combo, str(fine))
        self._set_combo(self.coarse_combo, str(coarse))
        return self._run(
            "dropped objects",
            call_job,
            (f"comparing levels {fine} and {coarse}", dropped, store, fine, coarse),
            lambda d, s=store: self._dropped_ready(s, d),
        )

    def _dropped_ready(self, store: Any, d: DroppedObjects) -> np.ndarray | None:
        if store is not self.store:
            return None
        self.dropped = d
        self.dropped_list.clear()
        self.dropped_list.addItems([str(i) for i in d.ids[:MAX_LISTED_IDS].tolist()])
        self.dropped_label.setText(d.describe())
        return d.ids

    @property
    def dropped_ids(self) -> np.ndarray:
        return np.empty(0, np.int64) if self.dropped is None else self.dropped.ids

    def _selected_dropped(self) -> np.ndarray:
        chosen = [int(i.text()) for i in self.dropped_list.selectedItems()]
        return np.asarray(chosen, np.int64) if chosen else self.dropped_ids

    def isolate_dropped(self, ids: Sequence[int] | np.ndarray | None = None) -> QATask | None:
        """Read objects (default: the selected, else all listed dropped ids) at the finer
        level of the listed pair into highlighted layers, capped by the vertex budget."""
        store = self.store
        if store is None:
            return None
        if self.dropped is None:
            self._say(
                "Nothing listed: choose the two levels and press List first (Isolate acts on "
                "the listed objects)."
            )
            return None
        ids = self._selected_dropped() if ids is None else np.asarray(ids, np.int64)
        if not len(ids):
            self._say("no objects to isolate")
            return None
        pair = (self.dropped.fine, self.dropped.coarse)
        share = min(len(ids) / max(self.dropped.n_fine, 1), 1.0)
        to_read = estimate_read(store, pair[0], share=share)
        if not self._confirm_read(to_read, f"Isolating {len(ids):,} object(s)"):
            return None

        def apply(built: Built) -> Any:
            def then(layers: list[Any]) -> list[Any]:
                self._say(f"isolated at level {pair[0]}: {built.note}")
                return layers

            return self._add_in_turns("isolate", built.items, self.dropped_layers.append, then)

        return self._run(
            "isolate",
            isolate_job,
            (store, ids, pair, self.layer_budget()),
            apply,
            cancellable=True,
        )

    def filter_to_dropped(self) -> QATask | None:
        """Show only the selected (else all listed) dropped objects in the store's layers,
        through the filter state the browse widgets share (ANDed with their filters). When
        the shown level holds none of them the finer level of the pair is locked (or, for a
        fixed-level layer, the status says why nothing is drawn)."""
        store, session = self.store, self.session
        if store is None or session is None:
            self._say("filtering needs a Zarr Vectors layer")
            return None
        if self.dropped is None:
            self._say("Nothing listed: choose the two levels and press List first.")
            return None
        ids = self._selected_dropped()
        if not len(ids):
            self._say("no dropped objects to filter to")
            return None
        return self._run(
            "filter",
            call_job,
            ("finding the levels that hold them", levels_holding, store, ids),
            lambda holding, d=self.dropped: self._apply_filter(ids, d, holding),
        )

    def _apply_filter(self, ids: np.ndarray, d: DroppedObjects, holding: list[int]) -> str:
        session = self.session
        if session is None:
            return ""
        session.filters.id_filter = IdFilter(tuple(ids.tolist()), f"dropped {d.fine}→{d.coarse}")
        controller = self.controller
        shown = self.level
        if controller is not None and controller.locked_level is not None:
            shown = controller.locked_level
        note = ""
        if shown not in holding:
            if not holding:
                note = "; they exist at no level: nothing is drawn"
            elif controller is not None:
                lock = d.fine if d.fine in holding else holding[0]
                if self._lock_before_filter is None:
                    self._lock_before_filter = (True, controller.locked_level)
                controller.lock_level(lock)
                self._sync_level_controls()
                note = f"; locked level {lock}, where they exist (level {shown} has none of them)"
            else:
                note = f"; this layer shows level {shown}, which has none of them: nothing is drawn"
        session.apply()
        text = f"showing {len(ids):,} dropped object(s) only ({session.filters.describe()}){note}"
        self._say(text)
        return text

    def clear_filter(self) -> None:
        """Remove the dropped-objects filter (the browse widgets' filters stay) and undo the
        level lock it made."""
        session = self.session
        if session is None:
            return
        session.filters.id_filter = None
        restore, self._lock_before_filter = self._lock_before_filter, None
        if restore is not None and self.controller is not None:
            self.controller.lock_level(restore[1])
            self._sync_level_controls()
        session.apply()
        self._say(f"dropped-objects filter cleared ({session.filters.describe()})")

    # ------------------------------------------------------------------ side by side
    def add_levels(self, levels: Sequence[int] | None = None) -> QATask | None:
        """Add levels (default: the checked ones) as separate, alike-coloured layers, each
        capped by the vertex budget (levels above it are read inside the visible box)."""
        store = self.store
        if store is None:
            return None
        if levels is None:
            levels = [
                self.side_list.item(i).data(Qt.ItemDataRole.UserRole)
                for i in range(self.side_list.count())
                if self.side_list.item(i).checkState() == Qt.CheckState.Checked
            ]
        levels = [int(lv) for lv in levels]
        if not levels:
            self._say("tick the levels to add side by side")
            return None
        budget = self.layer_budget()
        bboxes: dict[int, Any] = {}
        to_read = 0
        for level in levels:
            if int(store.level(level).vertex_count or 0) > budget:
                bboxes[level] = visible_store_box(self.viewer, store)
            to_read += estimate_read(store, level, bboxes.get(level))
        if not self._confirm_read(to_read, f"Adding level(s) {levels}"):
            return None

        def apply(built: list[Built]) -> Any:
            items = [item for b in built for item in b.items]

            def then(layers: list[Any]) -> list[Any]:
                self._toggle_index = -1
                notes = "; ".join(f"level {b.level}: {b.note}" for b in built)
                self._say(f"added {len(layers)} layer(s) ({notes})")
                if self.grid_check.isChecked():
                    self.set_grid(True)
                return layers

            return self._add_in_turns("side by side", items, self.side_layers.append, then)

        opacity = self.blend_slider.value() / 100.0
        return self._run(
            "side by side",
            side_by_side_job,
            (store, levels, bboxes, budget, opacity),
            apply,
            cancellable=True,
        )

    def remove_levels(self) -> None:
        """Remove the side-by-side layers (:func:`.viewer_layers.remove_layers`) and leave
        grid mode."""
        self.set_grid(False)
        layers, self.side_layers = list(self.side_layers), []
        remove_layers(self.viewer, layers)

    def set_grid(self, enabled: bool) -> None:
        """napari's grid mode with one cell per side-by-side level: every other layer (the
        store's own layers, the bounds box, overlays) is hidden while it is on, and shown
        again when it goes off."""
        grid = self.viewer.canvas.grid
        if enabled:
            side = [lyr for lyr in self.side_layers if lyr in self.viewer.layers]
            hide, stride = grid_plan(list(self.viewer.layers), side)
            for layer in hide:
                layer.visible = False
            self._grid_hidden += hide
            grid.stride = stride
            grid.enabled = True
        else:
            # grid off first: with it on, every layer shown again rebuilds the grid's views
            grid.enabled = False
            for layer in self._grid_hidden:
                if layer in self.viewer.layers:
                    layer.visible = True
            self._grid_hidden = []
        if self.grid_check.isChecked() != bool(enabled):
            blocked = self.grid_check.blockSignals(True)
            self.grid_check.setChecked(bool(enabled))
            self.grid_check.blockSignals(blocked)

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
    def show_chunks(self, enabled: bool = True, level: int | None = None) -> QATask | None:
        """Outline the non-empty chunks of ``level`` (default: the shown level, followed as
        it changes); ``enabled=False`` removes the outlines. The chunk listing is read on
        the worker thread (once per level)."""
        blocked = self.chunks_check.blockSignals(True)
        self.chunks_check.setChecked(bool(enabled))
        self.chunks_check.blockSignals(blocked)
        running = self.tasks.get("chunks")
        if running is not None and not running.done:
            running.cancel()
        if not enabled or self.store is None:
            self.chunk_overlay.remove()
            return None
        self._chunk_level = None if level is None else int(level)
        store = self.store
        level = self.level if level is None else int(level)
        return self._run(
            "chunks",
            call_job,
            (f"listing the chunks of level {level}", self._boxes_of, store, level),
            lambda boxes, s=store, lv=level: self._draw_chunks(s, lv, boxes),
        )

    def _boxes_of(self, store: Any, level: int) -> tuple[np.ndarray, np.ndarray]:
        key = (str(store.path), str(store.geometry_type), int(level))  # composite stores
        boxes = self._chunk_boxes.get(key)
        if boxes is None:
            boxes = self._chunk_boxes[key] = core.chunk_boxes(store, int(level))
        return boxes

    def _on_chunks_toggled(self, on: bool) -> None:
        self.show_chunks(bool(on))

    def _draw_chunks(self, store: Any, level: int, boxes: tuple) -> Any | None:
        if store is not self.store or not self.chunks_check.isChecked():
            return None
        lo, hi = boxes
        info = overlay_info(store, level)
        chunk_shape = np.asarray(store.level(level).chunk_shape, float).tolist()
        layer = self.chunk_overlay.set_boxes(
            lo, hi, info, "chunks", {"qa_level": level, "chunk_shape": chunk_shape}
        )
        drawn = 0 if layer is None else int(layer.metadata["zarr_vectors"]["boxes_drawn"])
        cut = len(self.chunk_overlay.cut())
        where = "" if cut == len(lo) else f"; {cut:,} cut by the slice"
        self._say(
            f"{len(lo):,} non-empty chunks at level {level}{where}; "
            + shown_of(drawn, cut, "outlined")
        )
        return layer

    def show_bins(
        self,
        chunk: Sequence[int] | None = None,
        occupied: bool | None = None,
        level: int | None = None,
    ) -> QATask | None:
        """Outline the bins of one chunk of ``level`` (default: the shown level; chunk
        default: the chunk key field). In a 2-D view the slice moves into the chunk when it
        is elsewhere, so that what is reported is drawn."""
        store = self.store
        if store is None:
            return None
        if chunk is None:
            chunk = parse_ids(self.chunk_edit.text())
        if occupied is None:
            occupied = self.occupied_check.isChecked()
        level = self.level if level is None else int(level)
        if len(chunk) not in (store.ndim, store.level(level).key_ndim):
            self._say(f"a chunk key has {store.ndim} integers, e.g. 0,1,-1")
            return None
        chunk = [int(c) for c in chunk]
        self.chunk_edit.setText(",".join(str(c) for c in chunk))
        occupied = bool(occupied)
        return self._run(
            "bins",
            call_job,
            (f"bins of chunk {chunk}", _bins, store, level, chunk, occupied),
            lambda boxes, s=store: self._draw_bins(s, level, chunk, occupied, boxes),
        )

    def _draw_bins(
        self, store: Any, level: int, chunk: list[int], occupied: bool, boxes: tuple
    ) -> Any | None:
        if store is not self.store:
            return None
        lo, hi = boxes
        info = overlay_info(store, level)
        displayed, point = slice_of(self.viewer, info.order, store)
        if len(lo) and not len(boxes_in_slab(lo, hi, displayed, point, info.world_scale)):
            # the slice change re-slices every layer in this turn; the outline comes in the
            # next one (each is a frame's worth of UI-thread work)
            moved = self._move_slice_into(store, lo, hi)
            task = self.tasks["bins"]

            def outline() -> None:
                if not task.done:
                    task.finish(self._outline_bins(store, level, chunk, occupied, boxes, moved))

            next_turn(outline)
            return PENDING
        return self._outline_bins(store, level, chunk, occupied, boxes, "")

    def _outline_bins(
        self,
        store: Any,
        level: int,
        chunk: list[int],
        occupied: bool,
        boxes: tuple,
        moved: str,
    ) -> Any | None:
        if store is not self.store:
            return None
        lo, hi = boxes
        info = overlay_info(store, level)
        key = ",".join(str(c) for c in chunk)
        layer = self.bin_overlay.set_boxes(
            lo,
            hi,
            info,
            f"bins of chunk {key}",
            {"qa_level": level, "chunk": chunk, "occupied": occupied},
        )
        drawn = 0 if layer is None else int(layer.metadata["zarr_vectors"]["boxes_drawn"])
        cut = len(self.bin_overlay.cut()) if len(lo) else 0
        where = "" if cut == len(lo) else f" ({cut:,} cut by the slice)"
        self._say(
            f"{len(lo):,} {'occupied ' if occupied else ''}bins in chunk {key} of level "
            f"{level}{where}{moved}; " + shown_of(drawn, cut, "outlined")
        )
        return layer

    def _move_slice_into(self, store: Any, lo: np.ndarray, hi: np.ndarray) -> str:
        """Move the dims point to the middle of the boxes on the axes not displayed."""
        order = axis_order(store)
        displayed, _ = slice_of(self.viewer, order, store)
        offset = self.viewer.dims.ndim - store.ndim
        middle = (lo.min(0) + hi.max(0)) / 2
        # the dims point is in the world: the middle placed as the layers show it
        world = store_box_to_world(store, middle, middle)[0]
        moved = []
        for axis in range(store.ndim):
            if axis in displayed:
                continue
            k = int(np.flatnonzero(order == axis)[0])
            self.viewer.dims.set_point(offset + k, float(world[k]))
            moved.append(f"{store.axes[axis]} = {middle[axis]:g}")
        return f"; slice moved into the chunk ({', '.join(moved)})"

    # ------------------------------------------------------------------ picking
    def _on_pick_toggled(self, on: bool) -> None:
        self._picking = bool(on)

    def _on_click(self, viewer: Any, event: Any) -> None:
        if not self._picking or self.store is None:
            return
        self.pick(event.position)

    def pick(self, world_position: Sequence[float]) -> QATask | None:
        """Pick at a world position (napari order): fills the chunk key (shown level) and,
        once the worker has read around it, the object id of the nearest vertex. The task's
        result is ``(chunk key, object id or None)``."""
        store = self.store
        if store is None:
            return None
        ndim = store.ndim
        order = axis_order(store)
        here = np.asarray(world_position, dtype=np.float64)[-ndim:]
        p = world_box_to_store(store, here, here)[0]  # chunks live in the stored space
        level = self.level
        info = store.level(level)
        key = np.floor((p - info.chunk_origin) / info.chunk_shape).astype(np.int64).tolist()
        self.chunk_edit.setText(",".join(str(k) for k in key))
        displayed, _ = slice_of(self.viewer, order, store)
        reach = np.asarray(info.bin_shape, float) * 2.0
        others = [a for a in range(ndim) if a not in displayed]
        reach[others] = np.asarray(layer_scale(store), float)[others] / 2.0
        return self._run(
            "pick",
            call_job,
            ("reading around the click", _nearest_object, store, level, p, reach, displayed),
            lambda oid: self._picked(key, oid),
        )

    def _picked(self, key: list[int], oid: int | None) -> tuple[list[int], int | None]:
        if oid is not None:
            self.object_edit.setText(str(oid))
            self.scope_combo.setCurrentIndex(0)
        self._say(f"picked chunk {key}" + (f", object {oid}" if oid is not None else ""))
        return key, oid

    # ------------------------------------------------------------------ links
    def show_links(
        self,
        fine_level: int | None = None,
        scope: str | None = None,
        object_ids: Sequence[int] | None = None,
    ) -> QATask | None:
        """Draw fine -> coarse link arrows from ``fine_level`` (default: the combo) for the
        picked objects (``scope="objects"``), the visible box (``"box"``) or the whole level
        (``"all"``; asks first when that is most of the store), at most half the vertex
        budget of them (two ends an arrow), thinned by object."""
        store = self.store
        if store is None:
            return None
        families = dict(self.families)
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
            bbox = visible_store_box(self.viewer, store)
        to_read = estimate_read(store, fine_level, bbox) if ids is None else 0
        if not self._confirm_read(to_read, f"Links of level {fine_level} ({scope})"):
            return None
        owner = fine_level if delta > 0 else fine_level + 1

        def apply(built: Built) -> Any:
            old, self.links_layer = self.links_layer, None
            remove_layers(self.viewer, [old])

            def added(layer: Any) -> None:
                self.links_layer = layer

            def then(layers: list[Any]) -> Any:
                self.links_label.setText(built.note)
                self._say(built.note)
                return self.links_layer

            return self._add_in_turns("links", built.items, added, then)

        return self._run(
            "links",
            links_job,
            (store, owner, delta, ids, bbox, self.layer_budget(), scope),
            apply,
        )

    # ------------------------------------------------------------------ misc
    def _say(self, text: str) -> None:
        self.status.setText(text)

    @staticmethod
    def _set_combo(combo: QComboBox, text: str) -> None:
        i = combo.findText(text)
        if i >= 0:
            combo.setCurrentIndex(i)


def _store_facts(store: Any) -> tuple[list[dict], list[tuple[int, int]], bool]:
    """Worker job: level statistics, the ``(fine level, delta)`` of each adjacent pair with
    stored links (``+1`` at the fine level preferred, else ``-1`` at the coarse level), and
    whether the store has objects."""
    rows = core.level_statistics(store)
    levels = [lv.index for lv in store.levels]
    families = []
    for fine, coarse in zip(levels[:-1], levels[1:], strict=True):
        if coarse != fine + 1:
            continue
        try:
            if 1 in core.cross_level_deltas(store, fine):
                families.append((fine, 1))
            elif -1 in core.cross_level_deltas(store, coarse):
                families.append((fine, -1))
        except nzv.ZVError:
            continue
    return rows, families, store.object_index(levels[0]) is not None


def _bins(
    store: Any, level: int, chunk: list[int], occupied: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Worker job: the bins of one chunk (occupied ones only: reads the chunk)."""
    return core.bin_boxes(store, level, chunk, occupied=occupied, cache=shared_cache())


def _nearest_object(
    store: Any, level: int, p: np.ndarray, reach: np.ndarray, displayed: list[int]
) -> int | None:
    """Worker job: the object owning the stored vertex nearest ``p`` (in the displayed axes)
    within ``p +- reach``."""
    try:
        geom = store.read(level, bbox=(p - reach, p + reach), attributes=False)
    except nzv.ZVError:
        return None
    if not geom.vertex_count or geom.vertex_object_ids is None:
        return None
    d = geom.positions[:, displayed] - p[displayed]
    oid = int(geom.vertex_object_ids[int(np.argmin(np.einsum("ij,ij->i", d, d)))])
    return oid if oid >= 0 else None


def make_pyramid_widget(napari_viewer: Viewer) -> PyramidQAWidget:
    """The *Pyramid QA* dock widget for a viewer (the manifest names the class itself)."""
    return PyramidQAWidget(napari_viewer)
