"""The *Pyramid QA* dock widget: a view of the Pyramid QA model of the selected store.

Module map of Pyramid QA (four places say "pyramid"):

* :mod:`napari_zarr_vectors.format.pyramid` -- the store reads (level statistics, dropped
  objects, chunk and bin boxes, cross-level links), no napari;
* :mod:`napari_zarr_vectors.napari.qa` -- the napari side without Qt: :mod:`~..qa.model`
  (:class:`~..qa.model.PyramidQA`, the state and the actions, with events),
  :mod:`~..qa.compute` (what is computed before anything is drawn), :mod:`~..qa.jobs`
  (tasks and store reads on the worker thread), :mod:`~..qa.overlays` (layer data and the
  jobs that build it), :mod:`~..qa.outlines` (the live chunk and bin outlines);
* this package -- the dock widget (its sections in a vertical scroll area), one section per
  group box (:mod:`.levels`, :mod:`.dropped`, :mod:`.side_by_side`, :mod:`.outlines`,
  :mod:`.links`, :mod:`.whole_store`); the layer menu's actions are in :mod:`..actions`.

The widget follows the layer selection like every browse widget
(:class:`.._browse_base.ZVBrowseWidget`) and shows the model of the selected store
(:func:`~..qa.model.qa_model`); a layer of no store keeps the current one while its layers
are in the viewer, else the first store is taken. Its sections render the model and call its
methods; the widget adds the progress bar, *Cancel*, the status line, the ``Alt-Up`` /
``Alt-Down`` keys, clicks in the canvas (*Pick in canvas*) and the question asked before an
action reads most of a store (:attr:`PyramidQAWidget.confirm`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from qtpy.QtCore import Qt
from qtpy.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from napari_zarr_vectors.napari.qa.model import PyramidQA, answer_yes, qa_model, store_layer
from napari_zarr_vectors.napari.widgets._browse_base import ZVBrowseWidget
from napari_zarr_vectors.napari.widgets.pyramid.dropped import DroppedSection
from napari_zarr_vectors.napari.widgets.pyramid.levels import LevelSection, StatisticsSection
from napari_zarr_vectors.napari.widgets.pyramid.links import LinksSection
from napari_zarr_vectors.napari.widgets.pyramid.outlines import OutlineSection
from napari_zarr_vectors.napari.widgets.pyramid.section import fixed_lines
from napari_zarr_vectors.napari.widgets.pyramid.side_by_side import SideBySideSection
from napari_zarr_vectors.napari.widgets.pyramid.whole_store import WholeStoreSection

if TYPE_CHECKING:
    from napari.layers import Layer
    from napari.utils.events import Event
    from napari.viewer import Viewer
    from qtpy.QtGui import QCloseEvent

__all__ = ["PyramidQAWidget"]

SINGLE_LEVEL = (
    "<br>This store has a <b>single level</b>: there is nothing to compare or lock, and no "
    "cross-level links. Chunk and bin outlines and the statistics still work."
)
FIXED_LEVEL = (
    "<br>This layer shows one fixed level (it was not opened with the level-of-detail "
    "engine): locking is unavailable."
)


class PyramidQAWidget(ZVBrowseWidget):
    """Dock widget: level lock, level statistics, dropped objects, side-by-side levels, chunk
    and bin outlines, cross-level links, whole-store jobs (see the module docstring). :attr:`model` is the
    :class:`~..qa.model.PyramidQA` shown (``None``: no store)."""

    def __init__(self, napari_viewer: Viewer, parent: QWidget | None = None) -> None:
        super().__init__(napari_viewer, parent)
        self.model: PyramidQA | None = None
        #: asks the user before an action reads most of a store: ``confirm(text) -> bool``
        #: (a QMessageBox; scripts and tests may replace it)
        self.confirm: Callable[[str], bool] = self._ask
        root = self.layout()
        self.info_label = QLabel("")
        self.info_label.setWordWrap(True)
        root.addWidget(self.info_label)
        self.level_box = LevelSection()
        self.stats_box = StatisticsSection()
        self.dropped_box = DroppedSection()
        self.side_box = SideBySideSection()
        self.outline_box = OutlineSection()
        self.links_box = LinksSection()
        self.whole_box = WholeStoreSection()
        self.sections = (
            self.level_box,
            self.stats_box,
            self.dropped_box,
            self.side_box,
            self.outline_box,
            self.links_box,
            self.whole_box,
        )
        root.addWidget(self._scrolled(self.sections), 1)
        root.addLayout(self._progress_row())
        self.status = fixed_lines(QLabel(""), 3)
        root.addWidget(self.status)
        self._connect_viewer()
        self.follow(self.viewer.layers.selection.active)

    def _scrolled(self, sections: tuple[QWidget, ...]) -> QScrollArea:
        """The sections in a vertical scroll area: the dock fits a 1000 px screen next to
        other docks (the header, progress bar and status line stay outside it, always
        seen); the sections are laid out to the dock's width, never scrolled sideways."""
        inner = QWidget()
        column = QVBoxLayout(inner)
        column.setContentsMargins(0, 0, 0, 0)
        for section in sections:
            column.addWidget(section)
        column.addStretch(1)
        self.scroll_area = scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(inner)
        scroll.setMinimumHeight(120)
        return scroll

    def _progress_row(self) -> QHBoxLayout:
        row = QHBoxLayout()
        self.progress_bar = QProgressBar()
        # the bar's text must not widen the dock: a wider dock shrinks the canvas, which
        # makes the level of detail reload (and, in 3-D, redraw) for nothing
        self.progress_bar.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.cancel_btn = QPushButton("Cancel")
        for w in (self.progress_bar, self.cancel_btn):  # showing them moves nothing
            policy = w.sizePolicy()
            policy.setRetainSizeWhenHidden(True)
            w.setSizePolicy(policy)
            w.setVisible(False)
        self.cancel_btn.clicked.connect(lambda: self.model and self.model.cancel_tasks())  # type: ignore[func-returns-value]  # a callback
        row.addWidget(self.progress_bar, 1)
        row.addWidget(self.cancel_btn)
        return row

    # ------------------------------------------------------------------ viewer wiring
    def _connect_viewer(self) -> None:
        v = self.viewer
        v.layers.events.inserted.connect(self._on_inserted)
        if self._on_click not in v.mouse_drag_callbacks:
            v.mouse_drag_callbacks.append(self._on_click)
        bind = getattr(v, "bind_key", None)
        if bind is not None:
            with contextlib.suppress(Exception):
                bind("Alt-Up", lambda _v: self._step(+1), overwrite=True)
                bind("Alt-Down", lambda _v: self._step(-1), overwrite=True)

    def closeEvent(self, event: QCloseEvent | None) -> None:  # noqa: N802 - Qt API
        self.disconnect_viewer()
        super().closeEvent(event)

    def disconnect_viewer(self) -> None:
        """Stop listening to the viewer (the widget is closing); the model stays."""
        if self.model is not None:
            self.model.cancel_tasks()
        v = self.viewer
        for emitter, cb in (
            (v.layers.selection.events.active, self._on_active),
            (v.layers.events.removed, self._on_removed),
            (v.layers.events.inserted, self._on_inserted),
        ):
            with contextlib.suppress(Exception):
                emitter.disconnect(cb)
        with contextlib.suppress(ValueError):
            v.mouse_drag_callbacks.remove(self._on_click)
        bind = getattr(v, "bind_key", None)
        if bind is not None:
            for key in ("Alt-Up", "Alt-Down"):
                with contextlib.suppress(Exception):
                    bind(key, None)
        self._show(None, carry_outline=False)

    def _on_inserted(self, event: Event | None = None) -> None:
        if self.target is None:
            self.follow(getattr(event, "value", None))

    def _on_click(self, viewer: Viewer, event: Event) -> None:
        if self.model is not None and self.outline_box.picking:
            self.model.pick(event.position)

    def _step(self, step: int) -> None:
        if self.model is not None:
            self.model.step_level(step)

    # ------------------------------------------------------------------ the model shown
    def follow(self, layer: Layer | None) -> None:
        """Show the model of ``layer``'s store; a layer of no store keeps the current one
        while its layer is in the viewer, else the first store layer is taken."""
        if store_layer(self.viewer, layer) is not layer:
            keep = self.layer is not None and self.layer in self.viewer.layers
            layer = self.layer if keep else store_layer(self.viewer)
        super().follow(layer)

    def retarget(self, layer: Layer | None = None) -> PyramidQA | None:
        """Show the model of ``layer`` (default: the active layer); returns it."""
        self.follow(self.viewer.layers.selection.active if layer is None else layer)
        return self.model

    def _target_changed(self) -> None:
        target = self.target
        self._show(None if target is None else qa_model(self.viewer, target))

    def _show(self, model: PyramidQA | None, carry_outline: bool = True) -> None:
        old = self.model
        if model is old:
            return
        # the chunk outline is a view setting: it moves with the widget to the new store
        carry = carry_outline and old is not None and old.chunks_on
        if old is not None:
            if carry:
                old.show_chunks(False)
            for name, cb in self._listening():
                getattr(old.events, name).disconnect(cb)
            if old.confirm == self._confirm:
                old.confirm = answer_yes
        self.model = model
        if model is not None:
            model.confirm = self._confirm
            for name, cb in self._listening():
                getattr(model.events, name).connect(cb)
        for section in self.sections:
            section.bind(model)
        self._update_header()
        self.status.setText("" if model is None else model.status)
        self._show_task()
        if model is None:
            return
        if not model.statistics and "statistics" not in model.tasks:
            model.refresh_statistics()
        if carry and not model.chunks_on:
            model.show_chunks(True)

    def _listening(self) -> list[tuple[str, Callable]]:
        return [
            ("status", self._show_status),
            ("task", self._show_task),
        ]

    def _show_status(self, event: Event) -> None:
        self.status.setText(event.text)

    def _show_task(self) -> None:
        """The progress bar and *Cancel* while a task runs."""
        model = self.model
        running = [] if model is None else [t for t in model.tasks.values() if not t.done]
        for w in (self.progress_bar, self.cancel_btn):
            w.setVisible(bool(running))
        if running:
            task = running[-1]
            p = task.progress
            self.progress_bar.setRange(0, max(int(p.total), 1))
            self.progress_bar.setValue(int(p.done))
            self.progress_bar.setFormat(f"{task.kind}: {p.text}")

    def _update_header(self, *_: object) -> None:
        super()._update_header()
        model = self.model
        store = None if model is None else model.store
        if model is None or store is None:
            self.info_label.setText("")
            return
        n = len(store.levels)
        text = f"{store.geometry_type} · ZV {store.zv_version} · {n} level{'s' if n != 1 else ''}"
        if n < 2:
            text += SINGLE_LEVEL
        elif model.controller is None:
            text += FIXED_LEVEL
        self.info_label.setText(text)

    # ------------------------------------------------------------------ asking first
    def _confirm(self, text: str) -> bool:
        return self.confirm(text)

    def _ask(self, text: str) -> bool:
        answer = QMessageBox.question(
            self,
            "Pyramid QA",
            text,
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No,
        )
        return answer == QMessageBox.StandardButton.Yes
