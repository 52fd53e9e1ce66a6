"""The *Dissect* dock's bundles: keep the selection as a named bundle, list the bundles of
the :class:`~napari_zarr_vectors.napari.browse.dissect.Dissection` in their colours (rename
in place), and show, select, restore, export or forget the current one."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from qtpy.QtCore import Qt
from qtpy.QtGui import QColor, QIcon, QPixmap
from qtpy.QtWidgets import (
    QHBoxLayout,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from napari_zarr_vectors.napari.browse import selection as sel
from napari_zarr_vectors.napari.browse.targets import isolate_layer_data
from napari_zarr_vectors.napari.layerdata.export import export_dialog
from napari_zarr_vectors.napari.lod.swap import new_layer
from napari_zarr_vectors.napari.lod.viewer_layers import add_layer, remove_layers
from napari_zarr_vectors.napari.tasks import LoadJob, run_task

if TYPE_CHECKING:
    from napari.layers import Layer

    from napari_zarr_vectors.napari.browse.dissect import Bundle
    from napari_zarr_vectors.napari.widgets.dissect import DissectWidget


class BundlePanel(QWidget):
    """The bundle rows of ``dock`` (its dissection, store, viewer, status and outlines)."""

    def __init__(self, dock: DissectWidget) -> None:
        super().__init__()
        self.dock = dock
        #: the layers showing bundles, by bundle name
        self.bundle_layers: dict[str, list[Layer]] = {}
        self._jobs: list[LoadJob] = []
        column = QVBoxLayout()
        column.setContentsMargins(0, 0, 0, 0)
        self.setLayout(column)

        keep_row = QHBoxLayout()
        self.bundle_name = QLineEdit()
        self.bundle_name.setPlaceholderText("bundle name")
        self.keep_button = QPushButton("Keep as bundle")
        self.keep_button.setToolTip("Keep the selected objects as a named bundle with its colour")
        self.keep_button.clicked.connect(self.keep_bundle)
        keep_row.addWidget(self.bundle_name, 1)
        keep_row.addWidget(self.keep_button)
        column.addLayout(keep_row)

        self.bundle_list = QListWidget()
        self.bundle_list.setMaximumHeight(110)
        self.bundle_list.itemChanged.connect(self._bundle_edited)
        column.addWidget(self.bundle_list)
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
        column.addLayout(bundle_buttons)

    def keep_bundle(self) -> object:
        d = self.dock.dissection
        if d is None:
            return None
        bundle = d.keep(self.bundle_name.text().strip())
        if bundle is not None:
            self.bundle_name.clear()
            self.bundle_list.setCurrentRow(len(d.bundles) - 1)
        return bundle

    def refresh(self, *_: object) -> None:
        """List the dissection's bundles, keeping the current row."""
        d = self.dock.dissection
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
        d = self.dock.dissection
        row = self.bundle_list.row(item)
        if d is None or row < 0:
            return
        name = item.text().split(" · ")[0].strip()
        old = d.bundles[row].name
        if name and name != old:
            self.bundle_layers[name] = self.bundle_layers.pop(old, [])
            d.rename(row, name)
        else:
            self.refresh()

    def _bundle(self) -> tuple[int, Bundle] | tuple[None, None]:
        d, row = self.dock.dissection, self.bundle_list.currentRow()
        if d is None or row < 0 or row >= len(d.bundles):
            return None, None
        return row, d.bundles[row]

    def select_bundle(self) -> None:
        row, bundle = self._bundle()
        target = self.dock.target
        if bundle is not None and target is not None:  # (a bundle: the target's)
            sel.selection_for(target).set(bundle.object_ids, self.dock)
            self.dock.status.setText(f"{bundle.name}: {len(bundle.object_ids):,} objects selected")

    def restore_bundle(self) -> None:
        row, _ = self._bundle()
        d = self.dock.dissection
        if row is not None and d is not None:  # (a bundle: the dissection's)
            self.dock.editor.forget()
            d.restore(row)

    def remove_bundle(self) -> None:
        row, bundle = self._bundle()
        d = self.dock.dissection
        if row is not None and bundle is not None and d is not None:
            remove_layers(self.dock.viewer, self.bundle_layers.pop(bundle.name, []))
            d.remove_bundle(row)

    def export_bundle(self) -> object:
        _, bundle = self._bundle()
        if bundle is None:
            return None
        return export_dialog(self.dock, bundle.object_ids)

    def toggle_bundle(self) -> LoadJob | None:
        """Draw the current bundle whole (level 0) in its colour, read in the background; or
        take its layers away when they are shown. Returns the job."""
        _, bundle = self._bundle()
        if bundle is None:
            return None
        viewer, status = self.dock.viewer, self.dock.status
        shown = [lyr for lyr in self.bundle_layers.get(bundle.name, []) if lyr in viewer.layers]
        if shown:
            remove_layers(viewer, shown)
            self.bundle_layers.pop(bundle.name, None)
            return None
        if not len(bundle.object_ids):
            status.setText(f"{bundle.name} holds no objects")
            return None
        status.setText(f"loading {bundle.name} …")
        name = bundle.name
        store = self.dock.store
        assert store is not None  # a bundle: a dissection of the store

        def loaded(layer_data: list[tuple]) -> None:
            layers = []
            for data, kwargs, kind in layer_data:
                kwargs["name"] = f"{store.name} {name}"
                kwargs["blending"] = "translucent"  # its own colour, not summed to white
                layers.append(new_layer(data, kwargs, kind, add=partial(add_layer, viewer)))
            self.bundle_layers[name] = layers
            if self.dock.outlines is not None:
                self.dock.outlines.to_top()
            status.setText(f"{name}: {len(bundle.object_ids):,} objects shown")

        job = run_task(
            partial(isolate_layer_data, role="bundle", colour=bundle.colour),
            store,
            bundle.object_ids,
            0,
            on_result=loaded,
            on_error=lambda e: status.setText(str(e)),
        )
        self._jobs = [j for j in self._jobs if not j.done] + [job]
        return job


def _bundle_text(name: str, n: int) -> str:
    return f"{name} · {n:,} objects"
