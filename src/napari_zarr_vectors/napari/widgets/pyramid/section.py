"""The base of the *Pyramid QA* widget's sections: a group box that renders one part of a
:class:`~napari_zarr_vectors.napari.qa.model.PyramidQA` and calls its methods.

A section holds no QA state: :meth:`Section.bind` points it at a model (or at none),
connects the model events it lists in :attr:`Section.listens` and renders; the model's
events re-render it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from qtpy.QtWidgets import QComboBox, QGroupBox, QLabel, QSizePolicy, QWidget

if TYPE_CHECKING:
    from napari_zarr_vectors.napari.qa.model import PyramidQA


class Section(QGroupBox):
    """One group box of the widget, bound to the model the widget shows."""

    #: model event name -> name of the method it calls (each takes the event, or nothing)
    listens: ClassVar[dict[str, str]] = {}

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(title, parent)
        self.model: PyramidQA | None = None
        #: set while the section writes its controls (their signals call nothing)
        self._updating = False

    def bind(self, model: PyramidQA | None) -> None:
        """Show ``model`` (``None``: no store) and follow its events."""
        if self.model is not None:
            for event, method in self.listens.items():
                getattr(self.model.events, event).disconnect(getattr(self, method))
        self.model = model
        if model is not None:
            for event, method in self.listens.items():
                getattr(model.events, event).connect(getattr(self, method))
        self._updating = True
        try:
            self.render()
        finally:
            self._updating = False

    def render(self) -> None:  # type: ignore[override]  # not QWidget.render: shows the model
        """Show everything of the bound model (subclasses)."""

    @property
    def bound(self) -> PyramidQA:
        """The bound model, for the controls that act on it (enabled with one bound)."""
        assert self.model is not None
        return self.model

    @property
    def multi_level(self) -> bool:
        """Whether the bound store has two levels or more."""
        return self.model is not None and not self.model.single_level


def fixed_lines(label: QLabel, n: int) -> QLabel:
    """Give ``label`` the height of ``n`` lines: texts that change with every action keep a
    fixed size (a dock that grows shrinks the canvas, which makes the level of detail
    reload and redraw for nothing)."""
    label.setWordWrap(True)
    label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
    label.setFixedHeight(label.fontMetrics().lineSpacing() * n + 4)
    return label


def set_combo(combo: QComboBox, text: str) -> None:
    """Select the item of ``combo`` reading ``text`` (if any)."""
    i = combo.findText(text)
    if i >= 0:
        combo.setCurrentIndex(i)
