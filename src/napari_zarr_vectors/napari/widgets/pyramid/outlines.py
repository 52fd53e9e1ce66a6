"""*Pyramid QA* section: outlines of the non-empty chunks, and of the bins of one chunk."""

from __future__ import annotations

from typing import ClassVar

from qtpy.QtWidgets import QCheckBox, QGridLayout, QLineEdit, QPushButton

from napari_zarr_vectors.napari.qa.compute import parse_ids
from napari_zarr_vectors.napari.widgets.pyramid.section import Section


class OutlineSection(Section):
    """The chunk outline of the shown level (a check box), the bins of the chunk typed or
    picked, and *Pick in canvas* (the widget turns a click into
    :meth:`~napari_zarr_vectors.napari.qa.sections.outlines.OutlinesQA.pick` while it is down)."""

    listens: ClassVar[dict[str, str]] = {"outlines": "show_state", "picked": "show_state"}

    def __init__(self) -> None:
        super().__init__("Chunks and bins")
        grid = QGridLayout(self)
        self.chunks_check = QCheckBox("outline the non-empty chunks of the shown level")
        self.chunk_edit = QLineEdit()
        self.chunk_edit.setPlaceholderText("chunk key, e.g. 0,1,-1")
        self.occupied_check = QCheckBox("occupied bins only")
        self.bins_btn = QPushButton("Show bins")
        self.pick_btn = QPushButton("Pick in canvas")
        self.pick_btn.setCheckable(True)
        self.pick_btn.setToolTip("click in the canvas: fills the chunk key and object id")
        grid.addWidget(self.chunks_check, 0, 0, 1, 3)
        grid.addWidget(self.chunk_edit, 1, 0)
        grid.addWidget(self.occupied_check, 1, 1)
        grid.addWidget(self.bins_btn, 1, 2)
        grid.addWidget(self.pick_btn, 2, 0, 1, 3)
        self.chunks_check.toggled.connect(self._on_chunks)
        self.bins_btn.clicked.connect(self._show_bins)

    def render(self) -> None:  # type: ignore[override]  # not QWidget.render: shows the model
        enabled = self.model is not None and self.model.store is not None
        for w in (self.chunks_check, self.bins_btn, self.pick_btn):
            w.setEnabled(enabled)
        self.show_state()

    def show_state(self) -> None:
        """The outline check box and the chunk key as the model has them."""
        model = self.model
        old, self._updating = self._updating, True
        try:
            self.chunks_check.setChecked(model is not None and model.chunks_on)
            key = None if model is None else model.chunk_key
            if key is not None:
                self.chunk_edit.setText(",".join(str(k) for k in key))
        finally:
            self._updating = old

    @property
    def picking(self) -> bool:
        """Whether a click in the canvas picks."""
        return self.pick_btn.isChecked()

    def _on_chunks(self, on: bool) -> None:
        if not self._updating and self.model is not None:
            self.model.show_chunks(bool(on))

    def _show_bins(self) -> None:
        occupied = self.occupied_check.isChecked()
        self.bound.show_bins(parse_ids(self.chunk_edit.text()), occupied=occupied)
