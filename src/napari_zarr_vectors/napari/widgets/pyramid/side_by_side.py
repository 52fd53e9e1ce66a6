"""*Pyramid QA* section: chosen levels side by side (layers, grid mode, toggle, blend)."""

from __future__ import annotations

from typing import ClassVar

from qtpy.QtCore import Qt
from qtpy.QtWidgets import (
    QCheckBox,
    QGridLayout,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSlider,
)

from napari_zarr_vectors.napari.widgets.pyramid.section import Section


class SideBySideSection(Section):
    """Tick levels to add them as separate, alike-coloured layers; grid mode gives each a
    canvas cell, *Toggle* shows one at a time, the slider sets their opacity."""

    listens: ClassVar[dict[str, str]] = {"side_by_side": "show_state"}

    def __init__(self) -> None:
        super().__init__("Side by side")
        grid = QGridLayout(self)
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
        self.blend_slider.setToolTip("opacity of the side-by-side layers")
        grid.addWidget(self.side_list, 0, 0, 1, 3)
        grid.addWidget(self.add_levels_btn, 1, 0, 1, 2)
        grid.addWidget(self.remove_levels_btn, 1, 2)
        grid.addWidget(self.grid_check, 2, 0)
        grid.addWidget(self.toggle_btn, 2, 1)
        grid.addWidget(self.blend_slider, 2, 2)
        self.add_levels_btn.clicked.connect(lambda: self.bound.add_levels(self.checked()))
        self.remove_levels_btn.clicked.connect(lambda: self.bound.remove_levels())
        self.grid_check.toggled.connect(self._on_grid)
        self.toggle_btn.clicked.connect(lambda: self.bound.toggle_side_by_side())
        self.blend_slider.valueChanged.connect(self._on_blend)

    def render(self) -> None:  # type: ignore[override]  # not QWidget.render: shows the model
        self.side_list.clear()
        for i in [] if self.model is None else self.model.levels:
            item = QListWidgetItem(f"level {i}")
            item.setData(Qt.ItemDataRole.UserRole, i)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Unchecked)
            self.side_list.addItem(item)
        self.setEnabled(self.multi_level)
        self.show_state()

    def show_state(self) -> None:
        """Grid mode and opacity as the model has them."""
        if self.model is None:
            return
        old, self._updating = self._updating, True
        try:
            self.grid_check.setChecked(self.model.grid)
            self.blend_slider.setValue(round(self.model.opacity * 100))
        finally:
            self._updating = old

    def checked(self) -> list[int]:
        """The ticked levels."""
        items: list[QListWidgetItem] = [
            self.side_list.item(i)  # type: ignore[misc]  # Qt: every row has an item
            for i in range(self.side_list.count())
        ]
        return [
            int(item.data(Qt.ItemDataRole.UserRole))
            for item in items
            if item.checkState() == Qt.CheckState.Checked
        ]

    def _on_grid(self, on: bool) -> None:
        if not self._updating and self.model is not None:
            self.model.set_grid(bool(on))

    def _on_blend(self, value: int) -> None:
        if not self._updating and self.model is not None:
            self.model.set_opacity(value / 100.0)
