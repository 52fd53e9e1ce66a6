"""*Dissect* dock: 3-D regions (box, sphere, plane) with include / any-of / exclude roles
over every object of the store, the count they select, named bundles, and a JSON file.

A thin view over the store's :class:`~napari_zarr_vectors.napari.browse.dissect.Dissection`
(:func:`~napari_zarr_vectors.napari.browse.dissect.dissection_for`): the model counts in
the background and puts its result in the shared selection (the *Object table*, *Select by
region*'s *show only* / *dim the rest*); this dock adds regions at the view's centre, edits
them in numeric fields (store coordinates), draws them
(:class:`~napari_zarr_vectors.napari.widgets.dissect_outlines.RegionOutlines`), keeps
bundles and shows each in its colour, and saves / loads the dissection file.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
from qtpy.QtCore import Qt
from qtpy.QtGui import QCloseEvent, QColor, QIcon, QPixmap
from qtpy.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QWidget,
)

from napari_zarr_vectors.format.select import TESTS
from napari_zarr_vectors.napari.browse import selection as sel
from napari_zarr_vectors.napari.browse.dissect import (
    KINDS,
    ROLES,
    Bundle,
    Dissection,
    RegionSpec,
    dissection_for,
    load_dissection,
    save_dissection,
    view_centre,
)
from napari_zarr_vectors.napari.browse.targets import isolate_layer_data
from napari_zarr_vectors.napari.layerdata.export import export_dialog
from napari_zarr_vectors.napari.lod.swap import new_layer
from napari_zarr_vectors.napari.lod.viewer_layers import add_layer, remove_layers
from napari_zarr_vectors.napari.tasks import LoadJob, run_task
from napari_zarr_vectors.napari.widgets._browse_base import ZVBrowseWidget, clear_layout
from napari_zarr_vectors.napari.widgets.dissect_outlines import RegionOutlines

if TYPE_CHECKING:
    from napari.layers import Layer
    from napari.viewer import Viewer

#: what the role menu says for each role
ROLE_LABELS = {
    "include": "include (must cross)",
    "any_of": "any of (at least one)",
    "exclude": "exclude (must not)",
}

#: spin box decimals
DECIMALS = 3


class DissectWidget(ZVBrowseWidget):
    """Dock widget: dissect the store by 3-D regions; keep, show, export and save bundles."""

    def __init__(self, napari_viewer: Viewer) -> None:
        super().__init__(napari_viewer)
        self.dissection: Dissection | None = None
        self.outlines: RegionOutlines | None = None
        #: the layers showing bundles, by bundle name
        self.bundle_layers: dict[str, list[Layer]] = {}
        self._jobs: list[LoadJob] = []
        #: the region the fields show, and its kind
        self._editing: int | None = None
        self._editing_kind: str | None = None
        self.fields: dict[str, list[QDoubleSpinBox]] = {}

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

        self.editor = QWidget()
        self.editor.setLayout(QGridLayout())
        self.editor.layout().setContentsMargins(0, 0, 0, 0)  # type: ignore[union-attr]  # the grid just set
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

        keep_row = QHBoxLayout()
        self.bundle_name = QLineEdit()
        self.bundle_name.setPlaceholderText("bundle name")
        self.keep_button = QPushButton("Keep as bundle")
        self.keep_button.setToolTip("Keep the selected objects as a named bundle with its colour")
        self.keep_button.clicked.connect(self.keep_bundle)
        keep_row.addWidget(self.bundle_name, 1)
        keep_row.addWidget(self.keep_button)
        self.layout().addLayout(keep_row)

        self.bundle_list = QListWidget()
        self.bundle_list.setMaximumHeight(110)
        self.bundle_list.itemChanged.connect(self._bundle_edited)
        self.layout().addWidget(self.bundle_list)
        bundle_buttons = QHBoxLayout()
        self.bundle_buttons = {}
        for name, tip, slot in (
            ("Show", "Draw the bundle whole in its colour (or hide it)", self.toggle_bundle),
            ("Select", "Make the bundle the selection", self.select_bundle),
            ("Regions", "Bring back the regions that made the bundle", self.restore_bundle),
            (
                "Export…",
                "Export the bundle's objects (the suffix picks the format)",
                self.export_bundle,
            ),
            ("Remove", "Forget the bundle", self.remove_bundle),
        ):
            button = QPushButton(name)
            button.setToolTip(tip)
            button.clicked.connect(slot)
            bundle_buttons.addWidget(button)
            self.bundle_buttons[name] = button
        self.layout().addLayout(bundle_buttons)

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
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.layout().addWidget(self.status)
        self._on_active()

    # -- following the store -------------------------------------------------------------
    def _target_changed(self) -> None:
        if self.dissection is not None:
            events = self.dissection.events
            events.regions.disconnect(self._regions_changed)
            events.bundles.disconnect(self._bundles_changed)
            events.status.disconnect(self._status_changed)
            events.count.disconnect(self._counted)
        if self.outlines is not None:
            self.outlines.close()
            self.outlines = None
        self.dissection = None if self.target is None else dissection_for(self.target)
        enabled = self.dissection is not None
        controls = [*self.add_buttons.values(), *self.bundle_buttons.values(), self.test_combo]
        controls += [self.to_centre_button, self.remove_button, self.show_only, self.bundle_name]
        for w in (*controls, self.keep_button, self.save_button, self.load_button):
            w.setEnabled(enabled)
        self.keep_button.setEnabled(
            self.dissection is not None and self.dissection.result is not None
        )
        if self.dissection is None:
            self.region_list.clear()
            self.bundle_list.clear()
            clear_layout(self.editor.layout())
            self.count_label.setText("")
            return
        d = self.dissection
        d.events.regions.connect(self._regions_changed)
        d.events.bundles.connect(self._bundles_changed)
        d.events.status.connect(self._status_changed)
        d.events.count.connect(self._counted)
        self.outlines = RegionOutlines(self.viewer, d)
        self._editing = None
        self._regions_changed()
        self._bundles_changed()
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
            self._editing = None
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
        """Show region ``row``'s numbers in the fields (rebuilt for another region)."""
        d = self.dissection
        if d is None or row < 0 or row >= len(d.regions):
            clear_layout(self.editor.layout())
            self._editing = None
            return
        spec = d.regions[row]
        if self._editing != row or self._editing_kind != spec.kind:
            self._build_editor(row, spec)
        self._fill_editor(spec)

    def _build_editor(self, row: int, spec: RegionSpec) -> None:
        grid: QGridLayout = self.editor.layout()  # type: ignore[assignment]  # set in __init__
        clear_layout(grid)
        self._editing, self._editing_kind = row, spec.kind
        store = self.store
        assert store is not None  # a region being edited: a dissection of the store
        axes = [str(a) for a in store.axes]
        units = list(store.units) if store.units is not None else [None] * len(axes)
        lo, hi = (np.asarray(b, np.float64) for b in store.bounds)
        extent = float(np.max(hi - lo)) or 1.0
        self.fields = {}
        self.role_combo = QComboBox()
        for role in ROLES:
            self.role_combo.addItem(ROLE_LABELS[role], role)
        self.role_combo.currentIndexChanged.connect(
            lambda i: self._edited("role", self.role_combo.itemData(i))
        )
        grid.addWidget(QLabel("Role"), 0, 0)
        grid.addWidget(self.role_combo, 0, 1, 1, len(axes))
        header = [f"{a} ({u})" if u else a for a, u in zip(axes, units, strict=False)]
        for k, text in enumerate(header):
            grid.addWidget(QLabel(text), 1, k + 1)
        rows = {"box": ("center", "size"), "sphere": ("center",), "plane": ("center", "normal")}[
            spec.kind
        ]
        for r, key in enumerate(rows, start=2):
            label = "Point" if spec.kind == "plane" and key == "center" else key.capitalize()
            grid.addWidget(QLabel(label), r, 0)
            boxes = []
            for k in range(len(axes)):
                box = QDoubleSpinBox()
                box.setDecimals(DECIMALS)
                if key == "center":
                    box.setRange(lo[k] - extent, hi[k] + extent)
                elif key == "size":
                    box.setRange(0.0, 4 * extent)
                else:
                    box.setRange(-1.0, 1.0)
                box.setSingleStep(0.1 if key == "normal" else extent / 100)
                box.setKeyboardTracking(False)
                box.valueChanged.connect(partial(self._vector_edited, key))
                grid.addWidget(box, r, k + 1)
                boxes.append(box)
            self.fields[key] = boxes
        last = 2 + len(rows)
        scalar = {"sphere": "radius", "plane": "thickness"}.get(spec.kind)
        if scalar is not None:
            box = QDoubleSpinBox()
            box.setDecimals(DECIMALS)
            box.setRange(0.0, 4 * extent)
            box.setSingleStep(extent / 100)
            box.setKeyboardTracking(False)
            box.valueChanged.connect(lambda value: self._edited(scalar, value))
            grid.addWidget(QLabel(scalar.capitalize()), last, 0)
            grid.addWidget(box, last, 1)
            self.fields[scalar] = [box]

    def _fill_editor(self, spec: RegionSpec) -> None:
        values: dict[str, Any] = {
            "center": spec.center,
            "size": spec.size,
            "normal": spec.normal,
            "radius": [spec.radius],
            "thickness": [spec.thickness],
        }
        for key, boxes in self.fields.items():
            for box, value in zip(boxes, values[key], strict=False):
                if box.value() != round(float(value), DECIMALS):
                    box.blockSignals(True)
                    box.setValue(float(value))
                    box.blockSignals(False)
        self.role_combo.blockSignals(True)
        self.role_combo.setCurrentIndex(ROLES.index(spec.role))
        self.role_combo.blockSignals(False)

    def _vector_edited(self, key: str, _value: float) -> None:
        self._edited(key, [box.value() for box in self.fields[key]])

    def _edited(self, key: str, value: object) -> None:
        d, row = self.dissection, self._editing
        if d is None or row is None:
            return
        try:
            d.update(row, **{key: value})
        except ValueError as e:
            self.status.setText(str(e))

    # -- the count ---------------------------------------------------------------------------
    def _status_changed(self, event: object) -> None:
        self.count_label.setText(str(getattr(event, "value", "")))

    def _counted(self, event: object) -> None:
        ids = getattr(event, "value", None)
        self.keep_button.setEnabled(ids is not None)
        if ids is not None and self.show_only.isChecked():
            self._show_only(True)

    def _show_only(self, on: bool) -> None:
        if self.session is None or self.dissection is None:
            return
        ids = self.dissection.result if self.dissection.result is not None else np.empty(0)
        sel.show_only(self.session.filters, ids, on)
        self.session.apply()

    # -- bundles ---------------------------------------------------------------------------
    def keep_bundle(self) -> object:
        if self.dissection is None:
            return None
        bundle = self.dissection.keep(self.bundle_name.text().strip())
        if bundle is not None:
            self.bundle_name.clear()
            self.bundle_list.setCurrentRow(len(self.dissection.bundles) - 1)
        return bundle

    def _bundles_changed(self, *_: object) -> None:
        d = self.dissection
        if d is None:
            return
        row = self.bundle_list.currentRow()
        self.bundle_list.blockSignals(True)
        self.bundle_list.clear()
        for bundle in d.bundles:
            item = QListWidgetItem(_bundle_text(bundle.name, len(bundle.object_ids)))
            item.setToolTip(f"{bundle.test} test; double-click to rename")
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsEditable)
            pixmap = QPixmap(14, 14)
            pixmap.fill(QColor.fromRgbF(*bundle.colour))
            item.setIcon(QIcon(pixmap))
            self.bundle_list.addItem(item)
        if d.bundles:
            self.bundle_list.setCurrentRow(min(max(row, 0), len(d.bundles) - 1))
        self.bundle_list.blockSignals(False)

    def _bundle_edited(self, item: QListWidgetItem) -> None:
        d = self.dissection
        row = self.bundle_list.row(item)
        if d is None or row < 0:
            return
        name = item.text().split(" · ")[0].strip()
        old = d.bundles[row].name
        if name and name != old:
            self.bundle_layers[name] = self.bundle_layers.pop(old, [])
            d.rename(row, name)
        else:
            self._bundles_changed()

    def _bundle(self) -> tuple[int, Bundle] | tuple[None, None]:
        d, row = self.dissection, self.bundle_list.currentRow()
        if d is None or row < 0 or row >= len(d.bundles):
            return None, None
        return row, d.bundles[row]

    def select_bundle(self) -> None:
        row, bundle = self._bundle()
        if bundle is not None and self.target is not None:  # (a bundle: the target's)
            sel.selection_for(self.target).set(bundle.object_ids, self)
            self.status.setText(f"{bundle.name}: {len(bundle.object_ids):,} objects selected")

    def restore_bundle(self) -> None:
        row, _ = self._bundle()
        if row is not None and self.dissection is not None:  # (a bundle: the dissection's)
            self._editing = None
            self.dissection.restore(row)

    def remove_bundle(self) -> None:
        row, bundle = self._bundle()
        if row is not None and bundle is not None and self.dissection is not None:
            remove_layers(self.viewer, self.bundle_layers.pop(bundle.name, []))
            self.dissection.remove_bundle(row)

    def export_bundle(self) -> object:
        _, bundle = self._bundle()
        if bundle is None:
            return None
        return export_dialog(self, bundle.object_ids)

    def toggle_bundle(self) -> LoadJob | None:
        """Draw the current bundle whole (level 0) in its colour, read in the background; or
        take its layers away when they are shown. Returns the job."""
        _, bundle = self._bundle()
        if bundle is None:
            return None
        shown = [
            lyr for lyr in self.bundle_layers.get(bundle.name, []) if lyr in self.viewer.layers
        ]
        if shown:
            remove_layers(self.viewer, shown)
            self.bundle_layers.pop(bundle.name, None)
            return None
        if not len(bundle.object_ids):
            self.status.setText(f"{bundle.name} holds no objects")
            return None
        self.status.setText(f"loading {bundle.name} …")
        name = bundle.name
        store = self.store
        assert store is not None  # a bundle: a dissection of the store

        def loaded(layer_data: list[tuple]) -> None:
            layers = []
            for data, kwargs, kind in layer_data:
                kwargs["name"] = f"{store.name} {name}"
                kwargs["blending"] = "translucent"  # its own colour, not summed to white
                layers.append(new_layer(data, kwargs, kind, add=partial(add_layer, self.viewer)))
            self.bundle_layers[name] = layers
            if self.outlines is not None:
                self.outlines.to_top()
            self.status.setText(f"{name}: {len(bundle.object_ids):,} objects shown")

        job = run_task(
            partial(isolate_layer_data, role="bundle", colour=bundle.colour),
            store,
            bundle.object_ids,
            0,
            on_result=loaded,
            on_error=lambda e: self.status.setText(str(e)),
        )
        self._jobs = [j for j in self._jobs if not j.done] + [job]
        return job

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
            self._editing = None
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


def _bundle_text(name: str, n: int) -> str:
    return f"{name} · {n:,} objects"
