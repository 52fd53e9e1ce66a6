"""The *Dissect* dock's region editor: the numeric fields (store coordinates) and the role
of one region of a :class:`~napari_zarr_vectors.napari.browse.dissect.Dissection`, rebuilt
when another region or kind is shown; edits go to the model's ``update``."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
from qtpy.QtWidgets import QComboBox, QDoubleSpinBox, QGridLayout, QLabel, QWidget

from napari_zarr_vectors.napari.browse.dissect import ROLES, RegionSpec
from napari_zarr_vectors.napari.widgets._browse_base import clear_layout

if TYPE_CHECKING:
    from napari_zarr_vectors.format.api import GeometryStore
    from napari_zarr_vectors.napari.browse.dissect import Dissection

#: what the role menu says for each role
ROLE_LABELS = {
    "include": "include (must cross)",
    "any_of": "any of (at least one)",
    "exclude": "exclude (must not)",
}

#: spin box decimals
DECIMALS = 3


class RegionEditor(QWidget):
    """The fields of the region being edited (``row``); a refused edit's reason goes to
    ``status``."""

    def __init__(self, status: QLabel) -> None:
        super().__init__()
        self.status = status
        self.dissection: Dissection | None = None
        #: the region the fields show, and its kind
        self.row: int | None = None
        self.kind: str | None = None
        self.fields: dict[str, list[QDoubleSpinBox]] = {}
        self.setLayout(QGridLayout())
        self.layout().setContentsMargins(0, 0, 0, 0)  # type: ignore[union-attr]  # the grid just set

    def forget(self) -> None:
        """Rebuild the fields the next time a region is shown."""
        self.row = None

    def clear(self) -> None:
        clear_layout(self.layout())

    def show_region(self, d: Dissection | None, row: int, store: GeometryStore | None) -> None:
        """Show region ``row``'s numbers in the fields (rebuilt for another region)."""
        self.dissection = d
        if d is None or row < 0 or row >= len(d.regions):
            self.clear()
            self.row = None
            return
        spec = d.regions[row]
        if self.row != row or self.kind != spec.kind:
            assert store is not None  # a region being edited: a dissection of the store
            self._build(row, spec, store)
        self._fill(spec)

    def _build(self, row: int, spec: RegionSpec, store: GeometryStore) -> None:
        grid: QGridLayout = self.layout()  # type: ignore[assignment]  # set in __init__
        clear_layout(grid)
        self.row, self.kind = row, spec.kind
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

    def _fill(self, spec: RegionSpec) -> None:
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
        d, row = self.dissection, self.row
        if d is None or row is None:
            return
        try:
            d.update(row, **{key: value})
        except ValueError as e:
            self.status.setText(str(e))
