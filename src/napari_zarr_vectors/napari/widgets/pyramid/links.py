"""*Pyramid QA* section: cross-level links (fine -> coarse arrows)."""

from __future__ import annotations

from typing import ClassVar

from napari.utils.events import Event
from qtpy.QtWidgets import QComboBox, QGridLayout, QLabel, QLineEdit, QPushButton

from napari_zarr_vectors.napari.qa.compute import parse_ids
from napari_zarr_vectors.napari.qa.sections.links import SCOPES
from napari_zarr_vectors.napari.widgets.pyramid.section import Section, fixed_lines

NO_LINKS = "This store has no cross-level links."


class LinksSection(Section):
    """Draw the links of a linked level pair for the picked objects, the visible box or the
    whole level."""

    listens: ClassVar[dict[str, str]] = {
        "statistics": "render",
        "links": "show_note",
        "picked": "show_picked",
    }

    def __init__(self) -> None:
        super().__init__("Cross-level links (fine → coarse)")
        grid = QGridLayout(self)
        self.link_combo = QComboBox()
        self.scope_combo = QComboBox()
        self.scope_combo.addItems(["picked objects", "visible box", "whole level"])
        self.object_edit = QLineEdit()
        self.object_edit.setPlaceholderText("object ids, e.g. 3, 7")
        self.links_btn = QPushButton("Draw links")
        self.links_label = fixed_lines(QLabel(""), 2)
        grid.addWidget(self.link_combo, 0, 0)
        grid.addWidget(self.scope_combo, 0, 1)
        grid.addWidget(self.object_edit, 1, 0)
        grid.addWidget(self.links_btn, 1, 1)
        grid.addWidget(self.links_label, 2, 0, 1, 2)
        self.links_btn.clicked.connect(self._draw)

    def render(self) -> None:  # type: ignore[override]  # not QWidget.render: shows the model
        self.link_combo.clear()
        families = [] if self.model is None else self.model.families
        for fine, delta in families:
            label = f"{fine} → {fine + 1}" + ("" if delta > 0 else " (links/-1)")
            self.link_combo.addItem(label, (fine, delta))
        self.setEnabled(self.multi_level)
        self.links_btn.setEnabled(bool(families))
        known = self.model is not None and bool(self.model.statistics)
        self.links_label.setText(NO_LINKS if self.multi_level and known and not families else "")

    def show_note(self, event: Event) -> None:
        self.links_label.setText(event.note)

    def show_picked(self) -> None:
        ids = [] if self.model is None else self.model.object_ids
        if ids and parse_ids(self.object_edit.text()) != ids:
            self.object_edit.setText(", ".join(str(i) for i in ids))
            self.scope_combo.setCurrentIndex(0)

    def _draw(self) -> None:
        data = self.link_combo.currentData()
        scope = SCOPES[max(self.scope_combo.currentIndex(), 0)]
        ids = parse_ids(self.object_edit.text()) if scope == "objects" else None
        self.bound.show_links(data[0] if data else None, scope, ids)
