"""*Object table*: every object of the selected store, one row each, to sort, search, select.

A virtual Qt model over numpy columns (:class:`~napari_zarr_vectors.napari.browse.object_rows.ObjectRows`):
the view asks for the cells it draws, so a store of 200,000 objects costs no widget and no
Python object per row. Clicking a header sorts by that column (stable, missing values last);
the search box keeps the rows matching every term (text: substring; integers such as the id
or ``body_id``: leading digits).

Selecting rows selects those objects (:func:`~napari_zarr_vectors.napari.browse.selection.selection_for`):
they light up on the canvas over the store's layers; clicking an object on the canvas selects
its row and scrolls to it (shift-click adds it). *Zoom to* (or a double-click on a row)
fits the selected objects to the canvas (read whole through their manifests), *Isolate*
loads them whole through the *Pick and isolate* dock into layers of their own, *Export
selection…* writes them as a new store, *Save as CSV…* the rows and columns shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
from qtpy.QtCore import (
    QAbstractTableModel,
    QItemSelection,
    QItemSelectionModel,
    QModelIndex,
    Qt,
)
from qtpy.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QTableView,
    QVBoxLayout,
    QWidget,
)
from superqt.utils import qdebounced

from napari_zarr_vectors.format.distinct import distinct
from napari_zarr_vectors.napari.browse.object_rows import (
    ObjectRows,
    cached_rows,
    store_rows,
    write_csv,
)
from napari_zarr_vectors.napari.browse.pick import pick_at, pick_slab
from napari_zarr_vectors.napari.browse.selection import (
    ObjectSelection,
    SelectionHighlight,
    fit_camera,
    highlight_for,
    objects_world_box,
    selection_for,
)
from napari_zarr_vectors.napari.browse.targets import OBJECTS_UNKNOWN
from napari_zarr_vectors.napari.layerdata.export import export_dialog
from napari_zarr_vectors.napari.tasks import LoadJob, run_task
from napari_zarr_vectors.napari.widgets._browse_base import ZVBrowseWidget, was_click

if TYPE_CHECKING:
    from napari.viewer import Viewer

    from napari_zarr_vectors.napari.browse.selection import BrowseTarget

#: Search is applied this many milliseconds after the last key stroke.
SEARCH_DELAY_MS = 200

#: *Isolate* loads at most this many objects (each becomes its own layers).
MAX_ISOLATE = 20

#: Rows whose text decides a column's width.
WIDTH_SAMPLE_ROWS = 200

#: The table asks for the width of its columns, up to this many pixels.
MAX_TABLE_WIDTH = 640
#: Rows the table always has room for, however many docks share its side of the window.
MIN_ROWS = 12

PLUGIN = "napari-zarr-vectors"
PICK_WIDGET = "Pick and isolate"
NO_OBJECTS = "This store has no objects: there is no object table."


#: a shared selection of more runs of consecutive rows than this is drawn by the model
#: (:meth:`ObjectTableModel.mark`), not held by Qt's selection model
MIRRORED_RUNS = 500


class ObjectTableModel(QAbstractTableModel):
    """Rows of an :class:`ObjectRows` in display order (``visible``: row indices after the
    search, sorted); cell text is made only for the cells the view draws."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.rows: ObjectRows | None = None
        self.visible = np.empty(0, np.int64)
        self.sort_by: tuple[int, bool] = (0, False)
        self.mask: np.ndarray | None = None
        self._where: np.ndarray | None = None
        #: display rows drawn as selected without Qt's selection (:meth:`mark`), and their brush
        self.marked: np.ndarray | None = None
        self._mark_brush: Any = None

    # -- Qt model interface -------------------------------------------------------------
    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else int(self.visible.size)

    def columnCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() or self.rows is None else len(self.rows.columns)

    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if self.rows is None or not index.isValid():
            return None
        column = self.rows.columns[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return column.text(int(self.visible[index.row()]))
        if role == Qt.ItemDataRole.TextAlignmentRole:
            side = Qt.AlignmentFlag.AlignRight if column.numeric else Qt.AlignmentFlag.AlignLeft
            return int(side | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.BackgroundRole and self.marked is not None:
            return self._mark_brush if self.marked[index.row()] else None
        return None

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if self.rows is None or orientation != Qt.Orientation.Horizontal:
            return None
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return self.rows.columns[section].header
        return None

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        self.sort_by = (int(column), order == Qt.SortOrder.DescendingOrder)
        self._refresh()

    # -- rows ---------------------------------------------------------------------------
    def set_rows(self, rows: ObjectRows | None) -> None:
        self.rows = rows
        self.mask = None
        if rows is not None and self.sort_by[0] >= len(rows.columns):
            self.sort_by = (0, False)
        self._refresh()

    def search(self, query: str) -> None:
        """Keep the rows matching ``query`` (:meth:`ObjectRows.matches`)."""
        self.mask = None if self.rows is None else self.rows.matches(query)
        self._refresh()

    def mark(self, view_rows: np.ndarray | None, brush: Any = None) -> None:
        """Draw display rows ``view_rows`` in ``brush`` (``None``: none): a selection of
        many runs of rows, which Qt's selection model takes seconds to hold (44,000 runs of
        66,000 rows of 200,000: 7 s), shown in one pass over the rows drawn."""
        if view_rows is None:
            if self.marked is None:
                return
            self.marked = None
        else:
            self.marked = np.zeros(self.visible.size, bool)
            self.marked[view_rows] = True
            self._mark_brush = brush
        if self.visible.size and self.rows is not None:
            last = self.index(self.visible.size - 1, len(self.rows.columns) - 1)
            self.dataChanged.emit(self.index(0, 0), last, [Qt.ItemDataRole.BackgroundRole])

    def _refresh(self) -> None:
        self.marked = None
        self.beginResetModel()
        if self.rows is None:
            self.visible = np.empty(0, np.int64)
        else:
            order = self.rows.order(*self.sort_by)
            self.visible = order if self.mask is None else order[self.mask[order]]
        self._where = None
        self.endResetModel()

    def object_ids(self, view_rows: np.ndarray) -> np.ndarray:
        """Object ids of display rows ``view_rows``."""
        if self.rows is None:
            return np.empty(0, np.int64)
        return self.rows.ids[self.visible[np.asarray(view_rows, np.int64)]]

    def view_rows(self, object_ids: np.ndarray) -> np.ndarray:
        """Display rows of ``object_ids`` (those the search hides are left out), ascending."""
        if self.rows is None:
            return np.empty(0, np.int64)
        if self._where is None:
            self._where = np.full(self.rows.n, -1, np.int64)
            self._where[self.visible] = np.arange(self.visible.size)
        found = self._where[self.rows.rows_of(object_ids)]
        return np.sort(found[found >= 0])


def _objects(n: int) -> str:
    return f"{n:,} object{'s' if n != 1 else ''}"


def isolated_text(results: Sequence[int | None]) -> str:
    """What the Object table says once its isolations are over: ``results`` holds each
    object's vertex count (``None``: that one failed, *Pick and isolate* says why)."""
    done = [n for n in results if n is not None]
    text = f"isolated {_objects(len(done))}: {sum(done):,} vertices at full resolution"
    failed = len(results) - len(done)
    return text + (f"; {_objects(failed)} failed (see Pick and isolate)" if failed else "")


class ObjectTableWidget(ZVBrowseWidget):
    """Dock widget: the object table of the selected store."""

    def __init__(self, napari_viewer: Viewer) -> None:
        super().__init__(napari_viewer)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search: id or body id (leading digits), names, text…")
        self.search.setClearButtonEnabled(True)
        self.count = QLabel()
        self.model = ObjectTableModel(self)
        self.view = QTableView()
        self.view.setModel(self.model)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.view.setWordWrap(False)
        rows: QHeaderView = self.view.verticalHeader()  # type: ignore[assignment]  # Qt: it has one
        rows.setVisible(False)
        rows.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        rows.setDefaultSectionSize(self.fontMetrics().height() + 6)
        header: QHeaderView = self.view.horizontalHeader()  # type: ignore[assignment]  # Qt: it has one
        header.setSortIndicator(0, Qt.SortOrder.AscendingOrder)
        header.setStretchLastSection(True)
        self.view.setSortingEnabled(True)
        self.zoom_button = QPushButton("Zoom to")
        self.zoom_button.setToolTip(
            "Frame the selected objects (read whole, at the shown level); or double-click a row"
        )
        self.isolate_button = QPushButton("Isolate")
        self.isolate_button.setToolTip(
            f"Load the selected objects (up to {MAX_ISOLATE}) whole at full resolution into "
            "layers of their own, in their colours (Pick and isolate)"
        )
        self.export_button = QPushButton("Export selection…")
        self.export_button.setToolTip(
            "Save the selected objects as a new Zarr Vectors store or a file of the field"
            " (.trk, .tck, .trx, .swc, .ply, .obj, .stl, .csv: the suffix picks the format)"
        )
        self.csv_button = QPushButton("Save as CSV…")
        self.csv_button.setToolTip("Save the rows and columns shown as a CSV file")
        self.status = QLabel()
        self.status.setWordWrap(True)
        buttons = QHBoxLayout()
        for b in (self.zoom_button, self.isolate_button, self.export_button, self.csv_button):
            buttons.addWidget(b)
        self.controls = QWidget()
        inner = QVBoxLayout(self.controls)
        inner.setContentsMargins(0, 0, 0, 0)
        inner.addWidget(self.search)
        inner.addWidget(self.count)
        inner.addWidget(self.view, 1)
        inner.addLayout(buttons)
        inner.addWidget(self.status)
        self.layout().addWidget(self.message)
        self.layout().addWidget(self.controls, 1)
        # the table takes the dock's height: napari adds no stretch below an expanding widget
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Expanding)
        row = self.view.verticalHeader().defaultSectionSize()  # type: ignore[union-attr]  # Qt: a table view has its headers
        self.view.setMinimumHeight((MIN_ROWS + 1) * row + 2 * self.view.frameWidth())

        self.selection: ObjectSelection | None = None
        self.highlight: SelectionHighlight | None = None
        self._showing = False  # the view's selection is being set from the shared one
        self._job: LoadJob | None = None
        self._rows_job: LoadJob | None = None
        self._search_later = qdebounced(self.apply_search, timeout=SEARCH_DELAY_MS)
        self.search.textChanged.connect(lambda *_: self._search_later())
        self.search.returnPressed.connect(self.apply_search)
        self.view.selectionModel().selectionChanged.connect(self._rows_selected)  # type: ignore[union-attr]  # Qt: a table view has its selection model
        self.model.modelReset.connect(self._show_selection)
        self.zoom_button.clicked.connect(self.zoom_to)
        self.view.doubleClicked.connect(lambda *_: self.zoom_to())
        self.isolate_button.clicked.connect(self.isolate)
        self.export_button.clicked.connect(self.export)
        self.csv_button.clicked.connect(self.save_csv_dialog)
        napari_viewer.mouse_drag_callbacks.append(self._on_drag)
        self.destroyed.connect(lambda *_: self._disconnect(napari_viewer))
        self._on_active()

    def _disconnect(self, viewer: Viewer) -> None:
        if self._on_drag in viewer.mouse_drag_callbacks:
            viewer.mouse_drag_callbacks.remove(self._on_drag)

    # -- target --------------------------------------------------------------------------
    def _target_changed(self) -> None:
        if self.selection is not None:
            self.selection.disconnect(self._selection_changed)
        self.selection = self.highlight = None
        table = self.session.table if self.session is not None else None
        has_rows = table is not None and table.n_objects > 0
        self.message.setText(NO_OBJECTS if table is not None and not has_rows else "")
        self.message.setVisible(table is not None and not has_rows)
        self.controls.setVisible(has_rows)
        if not has_rows:
            self.model.set_rows(None)
            return
        assert table is not None and self.target is not None and self.store is not None  # rows
        self._show_unknown()
        self.selection = selection_for(self.target)
        self.highlight = highlight_for(self.viewer, self.target)
        self.selection.connect(self._selection_changed)
        rows = cached_rows(self.store, table)
        if rows is not None:
            self._show_rows(rows)
            return
        # the columns of a large table are built off the UI thread
        self.model.set_rows(None)
        self.count.setText(f"reading {table.n_objects:,} objects …")
        self._rows_job = run_task(
            store_rows,
            self.store,
            table,
            on_result=partial(self._rows_built, target=self.target),
            on_error=lambda e: self.count.setText(f"object table: {e}"),
        )

    def _show_unknown(self) -> None:
        """Object actions off where the store does not record which vertex is whose: the
        buttons say why, and so does the status."""
        unknown = self._objects_unknown()
        for button in (self.zoom_button, self.isolate_button, self.export_button):
            button.setEnabled(unknown is None)
            if unknown is not None:
                button.setToolTip(unknown)
        if unknown is not None or self.status.text().startswith(OBJECTS_UNKNOWN):  # (not another's)
            self.status.setText(unknown or "")

    def _objects_unknown(self) -> str | None:
        """Why object actions are off (:func:`.targets.objects_unknown`); ``None`` when on."""
        return None if self.session is None else self.session.objects_unknown

    def _refused(self) -> bool:
        """Whether an object action cannot run: nothing selected, or objects unknown (the
        status says which)."""
        unknown = self._objects_unknown()
        if unknown is not None:
            self.status.setText(unknown)
            return True
        if self.selection is None or not self.selection.ids.size:
            self.status.setText("Select objects first.")
            return True
        return False

    def _rows_built(self, rows: ObjectRows, target: BrowseTarget) -> None:
        if target is self.target:  # not another store's, selected meanwhile
            self._show_rows(rows)

    def _show_rows(self, rows: ObjectRows) -> None:
        self.model.set_rows(rows)
        self._fit_columns()
        if self.search.text():
            self.apply_search()
        self._update_count()

    def _fit_columns(self) -> None:
        """Size each column to its header and the text of a sample of rows."""
        rows = self.model.rows
        if rows is None:
            return
        cells = self.view.fontMetrics()
        heads = self.view.horizontalHeader().fontMetrics()  # type: ignore[union-attr]  # Qt: a table view has its headers
        sample = self.model.visible[:WIDTH_SAMPLE_ROWS]
        total = 0
        for c, column in enumerate(rows.columns):
            width = max(
                heads.horizontalAdvance(column.header) + 24,  # and the sort indicator
                *(cells.horizontalAdvance(column.text(int(r))) for r in sample),
            )
            self.view.setColumnWidth(c, width + 12)
            total += width + 12
        # ask the dock for room to show every column (within reason)
        scroll = self.view.verticalScrollBar().sizeHint().width()  # type: ignore[union-attr]  # Qt: a table view has its scroll bars
        self.view.setMinimumWidth(min(total + scroll + 2 * self.view.frameWidth(), MAX_TABLE_WIDTH))

    # -- search and count ----------------------------------------------------------------
    def apply_search(self) -> None:
        self._search_later.cancel()
        self.model.search(self.search.text())
        self._update_count()

    def _update_count(self) -> None:
        rows = self.model.rows
        if rows is None:
            self.count.setText("")
            return
        text = f"{self.model.visible.size:,} of {rows.n:,} objects"
        n_selected = 0 if self.selection is None else int(self.selection.ids.size)
        if n_selected:
            text += f" · {n_selected:,} selected"
        self.count.setText(text)

    # -- selection -----------------------------------------------------------------------
    def selected_ids(self) -> np.ndarray:
        """Object ids of the selected rows (those marked, :meth:`ObjectTableModel.mark`)."""
        if self.model.marked is not None:
            return self.model.object_ids(np.flatnonzero(self.model.marked))
        ranges = self.view.selectionModel().selection()  # type: ignore[union-attr]  # Qt: a table view has its selection model
        runs = [np.arange(r.top(), r.bottom() + 1) for r in ranges]  # type: ignore[union-attr]  # a QItemSelection is a list of ranges
        rows = distinct(np.concatenate(runs)) if runs else np.empty(0, np.int64)
        return self.model.object_ids(rows)

    def select_ids(self, object_ids: Sequence[int] | np.ndarray) -> None:
        """Select the objects ``object_ids`` (their rows, the canvas highlight)."""
        if self.selection is not None:
            self.selection.set(object_ids)

    def _rows_selected(self, *_: object) -> None:
        if self._showing or self.selection is None:
            return
        self.model.mark(None)  # the user's own rows replace a marked selection
        self.selection.set(self.selected_ids(), source=self)
        self._update_count()

    def _selection_changed(self, ids: np.ndarray, source: object) -> None:
        if source is not self:
            self._show_selection(scroll=True)
        self._update_count()

    def _show_selection(self, scroll: bool = False) -> None:
        """Select the rows of the shared selection in the view (after a sort or a search
        too); ``scroll`` brings the first into view."""
        if self.selection is None:
            return
        rows = self.model.view_rows(self.selection.ids)
        chosen = QItemSelection()
        breaks = np.flatnonzero(np.diff(rows) != 1) + 1
        many = len(breaks) + 1 > MIRRORED_RUNS
        self.model.mark(rows if many else None, self.view.palette().highlight())
        if rows.size and not many:
            last = self.model.columnCount() - 1
            for run in np.split(rows, breaks):
                top = self.model.index(int(run[0]), 0)
                bottom = self.model.index(int(run[-1]), last)
                chosen.select(top, bottom)
        flags = (
            QItemSelectionModel.SelectionFlag.ClearAndSelect
            | QItemSelectionModel.SelectionFlag.Rows
        )
        self._showing = True
        try:
            self.view.selectionModel().select(chosen, flags)  # type: ignore[union-attr]  # Qt: a table view has its selection model
        finally:
            self._showing = False
        if scroll and rows.size:
            self.view.scrollTo(
                self.model.index(int(rows[0]), 0), QAbstractItemView.ScrollHint.PositionAtCenter
            )

    # -- canvas clicks -------------------------------------------------------------------
    def _on_drag(self, viewer: Viewer, event: Any):
        if self.selection is None:
            return
        if (yield from was_click(event)):
            view = event.view_direction if len(event.dims_displayed) == 3 else None
            add = "Shift" in {str(getattr(m, "name", m)) for m in event.modifiers}
            self.pick(event.position, list(event.dims_displayed), view, add=add)

    def pick(
        self,
        position: Sequence[float] | np.ndarray,
        displayed: list[int] | None = None,
        view_direction: Sequence[float] | None = None,
        add: bool = False,
    ) -> int | None:
        """Pick the object at a world ``position`` (as the *Pick and isolate* dock does) and
        select it (``add``: to the selection); nothing there clears the selection. Returns
        the object id picked."""
        if self.selection is None or self.target is None:
            return None
        viewer = self.viewer
        layers = self.target.layers
        hit = pick_at(
            layers,
            position,
            displayed=list(viewer.dims.displayed) if displayed is None else displayed,
            zoom=float(viewer.scene.camera.zoom),
            view_direction=view_direction,
            slab=None if view_direction is not None else pick_slab(viewer, layers),
        )
        oid = None if hit is None else hit.object_id
        if oid is None:
            if not add:
                self.selection.clear()
            return None
        ids = np.append(self.selection.ids, oid) if add else [oid]
        self.selection.set(ids)
        return int(oid)

    # -- actions -------------------------------------------------------------------------
    def zoom_to(self) -> LoadJob | None:
        """Frame the selected objects; reads them in the background (:func:`.tasks.run_task`)
        and returns the job (``None`` without a selection, or with objects unknown)."""
        if self._refused():
            return None
        assert self.selection is not None  # (_refused)
        store, ids = self.store, self.selection.ids.copy()
        level = int(getattr(self.target, "level", 0) or 0)
        self.status.setText(f"reading {ids.size:,} objects …")
        self._job = run_task(
            objects_world_box,
            store,
            ids,
            level,
            on_result=partial(self._zoomed, n=ids.size),
            on_error=lambda e: self.status.setText(f"zoom to: {e}"),
        )
        return self._job

    def _zoomed(self, box: tuple[np.ndarray, np.ndarray] | None, n: int) -> None:
        if box is None:
            self.status.setText("The selected objects have no vertices at this level.")
            return
        fit_camera(self.viewer, *box)
        self.status.setText(f"framed {n:,} object{'s' if n != 1 else ''}")

    def isolate(self) -> list[LoadJob | None]:
        """Isolate the selected objects in the *Pick and isolate* dock (at most
        :data:`MAX_ISOLATE`); returns its jobs. The status says *isolating …* until the
        last is in, then what was isolated."""
        if self._refused():
            return []
        assert self.selection is not None  # (_refused)
        _, pick_widget = self.viewer.window.add_plugin_dock_widget(PLUGIN, PICK_WIDGET)
        ids = self.selection.ids[:MAX_ISOLATE]
        more = self.selection.ids.size - ids.size
        note = f" (the first {ids.size}; {more:,} more not loaded)" if more else ""
        results: list[int | None] = []

        def one_done(n_vertices: int | None) -> None:
            results.append(n_vertices)
            if len(results) == ids.size:
                self.status.setText(isolated_text(results) + note)

        self.status.setText(f"isolating {_objects(ids.size)}{note} …")
        return [pick_widget.isolate(int(oid), then=one_done) for oid in ids]

    def export(self) -> Any:
        if self._refused():
            return None
        assert self.selection is not None  # (_refused)
        return export_dialog(self, self.selection.ids)

    def save_csv(self, path: str) -> int:
        """Write the rows shown (in their order) and the columns shown to ``path``."""
        if self.model.rows is None:
            return 0
        columns = [c for c in range(self.model.columnCount()) if not self.view.isColumnHidden(c)]
        n = write_csv(path, self.model.rows, self.model.visible, columns)
        self.status.setText(f"saved {n:,} rows to {path}")
        return n

    def save_csv_dialog(self) -> None:
        if self.model.rows is None or self.store is None:
            return
        path, _ = QFileDialog.getSaveFileName(
            self, "Save the table as CSV", f"{self.store.name}-objects.csv", "CSV (*.csv)"
        )
        if path:
            self.save_csv(path)
