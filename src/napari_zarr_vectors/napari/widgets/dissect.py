"""*Dissect* dock: 3-D regions (box, sphere, plane) with include / any-of / exclude roles
over every object of the store, the count they select, named bundles, and a JSON file.

A thin view over the store's :class:`~napari_zarr_vectors.napari.browse.dissect.Dissection`
(:func:`~napari_zarr_vectors.napari.browse.dissect.dissection_for`): the model counts in
the background and puts its result in the shared selection (the *Object table*, *Select by
region*'s *show only* / *dim the rest*); this dock adds regions at the view's centre, edits
them in numeric fields (store coordinates), draws them
(:class:`~napari_zarr_vectors.napari.widgets.dissect_outlines.RegionOutlines`),
keeps bundles and shows each in its colour (:class:`~.dissect_bundles.BundlePanel`), and
saves / loads the dissection file. The fields are a :class:`~.dissect_editor.RegionEditor`.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import numpy as np
from qtpy.QtGui import QCloseEvent
from qtpy.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QPushButton,
)

from napari_zarr_vectors.format.select import TESTS
from napari_zarr_vectors.napari.browse import selection as sel
from napari_zarr_vectors.napari.browse.dissect import (
    KINDS,
    Dissection,
    RegionSpec,
    dissection_for,
    load_dissection,
    save_dissection,
    view_centre,
)
from napari_zarr_vectors.napari.widgets._browse_base import ZVBrowseWidget
from napari_zarr_vectors.napari.widgets.dissect_bundles import BundlePanel
from napari_zarr_vectors.napari.widgets.dissect_editor import RegionEditor
from napari_zarr_vectors.napari.widgets.dissect_outlines import RegionOutlines

if TYPE_CHECKING:
    from napari.viewer import Viewer


class DissectWidget(ZVBrowseWidget):
    """Dock widget: dissect the store by 3-D regions; keep, show, export and save bundles."""

    def __init__(self, napari_viewer: Viewer) -> None:
        super().__init__(napari_viewer)
        self.dissection: Dissection | None = None
        self.outlines: RegionOutlines | None = None
        self.status = QLabel()
        self.status.setWordWrap(True)

        add_row = QHBoxLayout()
        add_row.addWidget(QLabel("Add at the view's centre:"))
        self.add_buttons = {}
        for kind in KINDS:
            button = QPushButton(kind.capitalize())
            button.setToolTip(f"Add a {kind} at the centre of the view")
            button.clicked.connect(partial(self.add_region, kind))
            add_row.addWidget(button)
            self.add_buttons[kind] = button
        self.layout().addLayout(add_row)

        test_row = QHBoxLayout()
        test_row.addWidget(QLabel("Test:"))
        self.test_combo = QComboBox()
        self.test_combo.addItems(TESTS)
        self.test_combo.setToolTip(
            "crosses: some segment meets the region; vertex: some vertex inside; "
            "endpoints: the first or last vertex inside; both_endpoints: both"
        )
        self.test_combo.currentTextChanged.connect(self._test_chosen)
        test_row.addWidget(self.test_combo, 1)
        self.layout().addLayout(test_row)

        self.region_list = QListWidget()
        self.region_list.setMaximumHeight(110)
        self.region_list.currentRowChanged.connect(self._region_chosen)
        self.layout().addWidget(self.region_list)

        self.editor = RegionEditor(self.status)
        self.layout().addWidget(self.editor)

        region_buttons = QHBoxLayout()
        self.to_centre_button = QPushButton("Move to view centre")
        self.to_centre_button.clicked.connect(self.move_to_view_centre)
        self.remove_button = QPushButton("Remove")
        self.remove_button.clicked.connect(self.remove_region)
        region_buttons.addWidget(self.to_centre_button)
        region_buttons.addWidget(self.remove_button)
        self.layout().addLayout(region_buttons)

        self.count_label = QLabel()
        self.count_label.setWordWrap(True)
        self.layout().addWidget(self.count_label)
        self.show_only = QCheckBox("Show only the selection")
        self.show_only.setToolTip("Hide every object the regions do not select (a filter)")
        self.show_only.toggled.connect(self._show_only)
        self.layout().addWidget(self.show_only)

        self.bundles = BundlePanel(self)
        self.layout().addWidget(self.bundles)

        file_row = QHBoxLayout()
        self.save_button = QPushButton("Save…")
        self.save_button.setToolTip("Save the regions and bundles to a JSON file")
        self.save_button.clicked.connect(self.save)
        self.load_button = QPushButton("Load…")
        self.load_button.setToolTip("Load regions and bundles from a JSON file")
        self.load_button.clicked.connect(self.load)
        file_row.addWidget(self.save_button)
        file_row.addWidget(self.load_button)
        self.layout().addLayout(file_row)
        self.layout().addWidget(self.status)
        self._on_active()

    # -- following the store -------------------------------------------------------------
    def _target_changed(self) -> None:
        if self.dissection is not None:
            events = self.dissection.events
            events.regions.disconnect(self._regions_changed)
            events.bundles.disconnect(self.bundles.refresh)
            events.status.disconnect(self._status_changed)
            events.count.disconnect(self._counted)
        if self.outlines is not None:
            self.outlines.close()
            self.outlines = None
        # a store that does not record which vertex is whose: no region can select objects
        unknown = None if self.session is None else self.session.objects_unknown
        self.dissection = (
            None if self.target is None or unknown is not None else dissection_for(self.target)
        )
        enabled = self.dissection is not None
        b = self.bundles
        controls = [*self.add_buttons.values(), *b.bundle_buttons.values(), self.test_combo]
        controls += [self.to_centre_button, self.remove_button, self.show_only, b.bundle_name]
        for w in (*controls, b.keep_button, self.save_button, self.load_button):
            w.setEnabled(enabled)
        b.keep_button.setEnabled(self.dissection is not None and self.dissection.result is not None)
        if self.dissection is None:
            self.region_list.clear()
            b.bundle_list.clear()
            self.editor.clear()
            self.count_label.setText(unknown or "")
            for button in self.add_buttons.values():
                button.setToolTip(unknown or button.toolTip())
            return
        d = self.dissection
        d.events.regions.connect(self._regions_changed)
        d.events.bundles.connect(self.bundles.refresh)
        d.events.status.connect(self._status_changed)
        d.events.count.connect(self._counted)
        self.outlines = RegionOutlines(self.viewer, d)
        self.editor.forget()
        self._regions_changed()
        self.bundles.refresh()
        self.count_label.setText(
            d.status or "Add a region: the objects it selects are counted here."
        )
        self.outlines.refresh()

    # -- regions ---------------------------------------------------------------------------
    def add_region(self, kind: str) -> RegionSpec | None:
        """Add a ``kind`` region at the centre of the view."""
        store = self.store
        if self.dissection is None or store is None:  # (a dissection comes with its store)
            return None
        spec = self.dissection.add_at(kind, view_centre(self.viewer, store))
        self.region_list.setCurrentRow(len(self.dissection.regions) - 1)
        return spec

    def move_to_view_centre(self) -> None:
        row, store = self.region_list.currentRow(), self.store
        if self.dissection is not None and store is not None and row >= 0:
            self.dissection.update(row, center=view_centre(self.viewer, store))

    def remove_region(self) -> None:
        row = self.region_list.currentRow()
        if self.dissection is not None and row >= 0:
            self.editor.forget()
            self.dissection.remove(row)

    def _test_chosen(self, test: str) -> None:
        if self.dissection is not None and test != self.dissection.test:
            self.dissection.set_test(test)

    def _regions_changed(self, *_: object) -> None:
        d = self.dissection
        if d is None:
            return
        row = self.region_list.currentRow()
        self.region_list.blockSignals(True)
        self.region_list.clear()
        for spec in d.regions:
            self.region_list.addItem(f"{spec.name} · {spec.kind} · {spec.role}")
        if d.regions:
            self.region_list.setCurrentRow(min(max(row, 0), len(d.regions) - 1))
        self.region_list.blockSignals(False)
        self.test_combo.blockSignals(True)
        self.test_combo.setCurrentText(d.test)
        self.test_combo.blockSignals(False)
        self._region_chosen(self.region_list.currentRow())

    def _region_chosen(self, row: int) -> None:
        self.editor.show_region(self.dissection, row, self.store)

    # -- the count ---------------------------------------------------------------------------
    def _status_changed(self, event: object) -> None:
        self.count_label.setText(str(getattr(event, "value", "")))

    def _counted(self, event: object) -> None:
        ids = getattr(event, "value", None)
        self.bundles.keep_button.setEnabled(ids is not None)
        if ids is not None and self.show_only.isChecked():
            self._show_only(True)

    def _show_only(self, on: bool) -> None:
        if self.session is None or self.dissection is None:
            return
        ids = self.dissection.result if self.dissection.result is not None else np.empty(0)
        sel.show_only(self.session.filters, ids, on)
        self.session.apply()

    # -- the file --------------------------------------------------------------------------
    def save(self, path: str | None = None) -> object:
        """Save the regions and bundles to a JSON file (asked for when ``path`` is not
        given)."""
        store = self.store
        if self.dissection is None or store is None:  # (a dissection comes with its store)
            return None
        if not path:
            path, _ = QFileDialog.getSaveFileName(
                self,
                "Save the dissection (regions and bundles)",
                f"{store.name}-dissection.json",
                "JSON (*.json)",
            )
        if not path:
            return None
        try:
            written = save_dissection(self.dissection, path)
        except (OSError, ValueError) as e:
            self.status.setText(f"not saved: {e}")
            return None
        self.status.setText(f"saved to {written}")
        return written

    def load(self, path: str | None = None) -> bool:
        """Load regions and bundles from a JSON file (asked for when ``path`` is not
        given); they replace the dock's."""
        if self.dissection is None:
            return False
        if not path:
            path, _ = QFileDialog.getOpenFileName(self, "Load a dissection", "", "JSON (*.json)")
        if not path:
            return False
        try:
            self.editor.forget()
            load_dissection(self.dissection, path)
        except (OSError, ValueError, KeyError, TypeError) as e:
            self.status.setText(f"not loaded: {e}")
            return False
        self.status.setText(f"loaded {path}")
        return True

    def closeEvent(self, event: QCloseEvent | None) -> None:  # noqa: N802 - Qt's name
        if self.outlines is not None:
            self.outlines.close()
        super().closeEvent(event)
