"""*Pyramid QA* section: the objects dropped between two levels (list, isolate, filter)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from qtpy.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QGridLayout,
    QLabel,
    QListWidget,
    QPushButton,
)

from napari_zarr_vectors.napari.qa.compute import MAX_LISTED_IDS
from napari_zarr_vectors.napari.widgets.pyramid.section import Section, fixed_lines, set_combo


class DroppedSection(Section):
    """Choose two levels, list the objects present at the finer one and absent at the
    coarser one; isolate or filter to the selected ones (else all listed)."""

    listens: ClassVar[dict[str, str]] = {"dropped": "show_dropped", "statistics": "_enable"}

    def __init__(self) -> None:
        super().__init__("Objects dropped between two levels")
        grid = QGridLayout(self)
        self.fine_combo = QComboBox()
        self.coarse_combo = QComboBox()
        self.list_btn = QPushButton("List")
        self.dropped_list = QListWidget()
        self.dropped_list.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.dropped_list.setMaximumHeight(120)
        self.dropped_label = fixed_lines(QLabel(""), 2)
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
        self.list_btn.clicked.connect(self._list)
        self.isolate_btn.clicked.connect(lambda: self.bound.isolate_dropped(self.selected()))
        self.filter_btn.clicked.connect(lambda: self.bound.filter_to_dropped(self.selected()))
        self.clear_filter_btn.clicked.connect(lambda: self.bound.clear_filter())

    def render(self) -> None:  # type: ignore[override]  # not QWidget.render: shows the model
        for combo in (self.fine_combo, self.coarse_combo):
            combo.clear()
        levels = [] if self.model is None else self.model.levels
        for combo in (self.fine_combo, self.coarse_combo):
            combo.addItems([str(i) for i in levels])
        if len(levels) > 1:
            self.coarse_combo.setCurrentIndex(len(levels) - 1)
        self.setEnabled(self.multi_level)
        self.show_dropped()
        self._enable()

    def _enable(self) -> None:
        can = self.model is not None and self.model.can_filter
        for w in (self.filter_btn, self.clear_filter_btn):
            w.setEnabled(can)

    def _list(self) -> None:
        fine, coarse = sorted(
            (int(self.fine_combo.currentText()), int(self.coarse_combo.currentText()))
        )
        set_combo(self.fine_combo, str(fine))
        set_combo(self.coarse_combo, str(coarse))
        self.bound.list_dropped(fine, coarse)

    def show_dropped(self) -> None:
        self.dropped_list.clear()
        d = None if self.model is None else self.model.dropped
        if d is None:
            self.dropped_label.setText("")
            return
        set_combo(self.fine_combo, str(d.fine))
        set_combo(self.coarse_combo, str(d.coarse))
        self.dropped_list.addItems([str(i) for i in d.ids[:MAX_LISTED_IDS].tolist()])
        self.dropped_label.setText(d.describe())

    def selected(self) -> np.ndarray | None:
        """The selected ids (``None``: none selected, i.e. every listed one)."""
        chosen = [int(i.text()) for i in self.dropped_list.selectedItems()]
        return np.asarray(chosen, np.int64) if chosen else None
