"""*Pyramid QA* sections about the levels: the level lock and the statistics table."""

from __future__ import annotations

import contextlib
from typing import ClassVar

from qtpy.QtCore import Qt
from qtpy.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QGridLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSlider,
    QTableWidget,
    QTableWidgetItem,
)

from napari_zarr_vectors.napari.qa.compute import STAT_COLUMNS, STAT_TOOLTIP, stat_cells
from napari_zarr_vectors.napari.widgets.pyramid.section import Section, fixed_lines

#: statistics columns holding numbers (right-aligned)
NUMERIC_COLUMNS = 7


class LevelSection(Section):
    """Lock the shown level (combo, slider, *finer* / *coarser*) or go back to automatic."""

    listens: ClassVar[dict[str, str]] = {"level": "on_level"}

    def __init__(self) -> None:
        super().__init__("Level")
        grid = QGridLayout(self)
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
        self.level_combo.currentIndexChanged.connect(self._on_combo)
        self.level_slider.valueChanged.connect(self._on_slider)
        self.finer_btn.clicked.connect(lambda: self.model and self.model.step_level(-1))  # type: ignore[func-returns-value]  # a callback
        self.coarser_btn.clicked.connect(lambda: self.model and self.model.step_level(+1))  # type: ignore[func-returns-value]  # a callback

    def render(self) -> None:  # type: ignore[override]  # not QWidget.render: shows the model
        model = self.model
        self.level_combo.clear()
        if model is None or model.store is None:
            self.level_label.setText("–")
            self.setEnabled(False)
            return
        self.setEnabled(True)
        levels = model.levels
        self.level_combo.addItem("automatic")
        self.level_combo.addItems([f"level {i}" for i in levels])
        self.level_slider.setRange(0, max(len(levels) - 1, 0))
        lockable = self.multi_level and model.controller is not None
        for w in (self.level_combo, self.level_slider, self.finer_btn, self.coarser_btn):
            w.setEnabled(lockable)
        self._sync()

    def on_level(self) -> None:
        old, self._updating = self._updating, True
        try:
            self._sync()
        finally:
            self._updating = old

    def _sync(self) -> None:
        model = self.model
        if model is None or model.target is None or model.store is None:
            return
        level, locked = model.level, model.locked_level
        mode = "fixed" if model.controller is None else "automatic" if locked is None else "locked"
        self.level_label.setText(f"shown: level {level} ({mode})")
        levels = model.levels
        self.level_combo.setCurrentIndex(0 if locked is None else levels.index(locked) + 1)
        with contextlib.suppress(ValueError):  # the lock when locked, else the shown level
            self.level_slider.setValue(levels.index(level if locked is None else locked))

    def _on_combo(self, index: int) -> None:
        if self._updating or self.model is None or index < 0:
            return
        self.model.lock_level(None if index == 0 else self.model.levels[index - 1])

    def _on_slider(self, value: int) -> None:
        if self._updating or self.model is None:
            return
        self.model.lock_level(self.model.levels[value])


class StatisticsSection(Section):
    """One column per level (a row per statistic), and what the shown level draws (the
    status bar's count)."""

    listens: ClassVar[dict[str, str]] = {"statistics": "render", "level": "show_drawn"}

    def __init__(self) -> None:
        super().__init__("Levels")
        grid = QGridLayout(self)
        # one column per level, one row per statistic: a few levels fit the dock's width
        self.stats_table = table = QTableWidget(len(STAT_COLUMNS) - 1, 0)
        table.setVerticalHeaderLabels(list(STAT_COLUMNS[1:]))
        table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)  # type: ignore[union-attr]  # Qt: a table view has its header
        table.horizontalHeader().setStretchLastSection(True)  # type: ignore[union-attr]  # Qt: a table view has its header
        table.setToolTip(STAT_TOOLTIP)
        self.drawn_label = fixed_lines(QLabel(""), 2)
        self.stats_btn = QPushButton("Refresh statistics")
        self.stats_btn.clicked.connect(lambda: self.model and self.model.refresh_statistics())
        grid.addWidget(table, 0, 0)
        grid.addWidget(self.drawn_label, 1, 0)
        grid.addWidget(self.stats_btn, 2, 0)

    def render(self) -> None:  # type: ignore[override]  # not QWidget.render: shows the model
        model = self.model
        self.stats_btn.setEnabled(model is not None and model.store is not None)
        rows = [] if model is None else model.statistics
        table = self.stats_table
        table.setColumnCount(len(rows))
        table.setHorizontalHeaderLabels([f"level {row['level']}" for row in rows])
        for c, row in enumerate(rows):
            for r, text in enumerate(stat_cells(row)[1:]):
                item = QTableWidgetItem(text)
                if r + 1 < NUMERIC_COLUMNS:
                    item.setTextAlignment(
                        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                    )
                table.setItem(r, c, item)
        table.resizeRowsToContents()
        height = table.horizontalHeader().height() + 2 * table.frameWidth()  # type: ignore[union-attr]  # Qt: a table view has its header
        height += sum(table.rowHeight(r) for r in range(table.rowCount()))
        table.setFixedHeight(height)
        self.show_drawn()

    def show_drawn(self) -> None:
        model = self.model
        ok = model is not None and model.target is not None and model.store is not None
        self.drawn_label.setText(model.drawn_text() if ok and model is not None else "")
