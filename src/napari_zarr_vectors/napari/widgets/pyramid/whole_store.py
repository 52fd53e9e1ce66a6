"""*Pyramid QA* section: the whole-store jobs (the command line's ``qa`` report and
``density`` map), run in the background with the widget's progress bar and *Cancel*."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from qtpy.QtWidgets import QDoubleSpinBox, QFileDialog, QGridLayout, QLabel, QPushButton

from napari_zarr_vectors.napari.qa.whole_store import default_voxel
from napari_zarr_vectors.napari.widgets.pyramid.section import Section, fixed_lines


def _ask_report_path(parent: Section, suggested: str) -> str:
    path, _ = QFileDialog.getSaveFileName(parent, "Whole-store report", suggested, "HTML (*.html)")
    return path


class WholeStoreSection(Section):
    """*Whole-store report…* (every level checked, an HTML report opened in the browser)
    and *Density map* (objects or vertices per voxel, an Image layer under the store)."""

    listens: ClassVar[dict[str, str]] = {"task": "show_running"}

    def __init__(self) -> None:
        super().__init__("Whole store")
        #: asks where to write the report: ``ask_path(section, suggested) -> path`` ("" to
        #: cancel; a file dialog, scripts and tests may replace it)
        self.ask_path: Callable[[Section, str], str] = _ask_report_path
        grid = QGridLayout(self)
        self.report_btn = QPushButton("Whole-store report…")
        self.report_btn.setToolTip(
            "Check every level of the store (counts, dropped objects, coverage pictures, "
            "links) and write one HTML report; it opens in the browser"
        )
        self.voxel_spin = QDoubleSpinBox()
        self.voxel_spin.setDecimals(3)
        self.voxel_spin.setRange(0.001, 1e9)
        self.voxel_spin.setPrefix("voxel ")
        self.voxel_spin.setToolTip("edge of a density voxel, in world units")
        self.density_btn = QPushButton("Density map")
        self.density_btn.setToolTip(
            "Count the objects (or vertices) of level 0 in every voxel of the whole store; "
            "the image is added under the store's layers"
        )
        self.note = fixed_lines(QLabel(""), 2)
        grid.addWidget(self.report_btn, 0, 0, 1, 2)
        grid.addWidget(self.voxel_spin, 1, 0)
        grid.addWidget(self.density_btn, 1, 1)
        grid.addWidget(self.note, 2, 0, 1, 2)
        self.report_btn.clicked.connect(self._report)
        self.density_btn.clicked.connect(self._density)

    def render(self) -> None:  # type: ignore[override]  # not QWidget.render: shows the model
        store = None if self.model is None else self.model.store
        self.setEnabled(store is not None)
        if store is not None:
            self.voxel_spin.setValue(default_voxel(store))
        self.show_running()

    def show_running(self, event: object = None) -> None:
        tasks = {} if self.model is None else self.model.tasks
        for kind, button in (
            ("whole-store report", self.report_btn),
            ("density map", self.density_btn),
        ):
            task = tasks.get(kind)
            button.setEnabled(self.model is not None and (task is None or task.done))
        report = None if self.model is None else self.model.report
        self.note.setText("" if report is None else f"last report: {report[1]} ({report[0].name})")

    def _report(self) -> None:
        store = self.model.store if self.model is not None else None
        if store is None:
            return
        suggested = str(Path.home() / f"{Path(str(store.path)).stem}-qa.html")
        path = self.ask_path(self, suggested)
        if path:
            self.bound.whole_store_report(path)

    def _density(self) -> None:
        if self.model is not None:
            self.model.density_map(self.voxel_spin.value())
