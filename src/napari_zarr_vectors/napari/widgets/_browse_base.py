"""Common base of the browse widgets and *Pyramid QA*: follow the selected Zarr Vectors layer.

Each widget acts on the *target* of the active layer (its level-of-detail controller, or a
:class:`~napari_zarr_vectors.napari.browse.targets.StaticTarget`; one resolution for every
widget, :func:`~napari_zarr_vectors.napari.browse.targets.target_for`) and on the target's
shared :class:`~napari_zarr_vectors.napari.browse.targets.BrowseState` (object table +
filters). A layer derived from a store (an isolated object, a QA overlay, a level added side
by side) leads to that store's data layers. When the active layer is not a Zarr Vectors layer
the widget says so and waits.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from qtpy.QtCore import Qt
from qtpy.QtWidgets import QDockWidget, QLabel, QVBoxLayout, QWidget
from superqt import QLabeledRangeSlider

from napari_zarr_vectors.napari.browse.targets import (
    BrowseTarget,
    browse_state_of,
    is_data_layer,
    target_for,
)
from napari_zarr_vectors.napari.conventions import meta_of

if TYPE_CHECKING:
    from napari.layers import Layer
    from napari.utils.events import Event

    from napari import Viewer
    from napari_zarr_vectors.format.api import GeometryStore

NO_LAYER = "Select a Zarr Vectors layer (opened by napari-zarr-vectors) to browse it."


def was_click(event: Event) -> Generator[None, None, bool]:
    """Follow a mouse press to its release inside a napari drag callback
    (``clicked = yield from was_click(event)``): true when the mouse did not move between
    them, so that a drag to rotate or pan never picks."""
    dragged = False
    yield
    while event.type == "mouse_move":
        dragged = True
        yield
    return not dragged


class ZVBrowseWidget(QWidget):
    """Follows ``viewer.layers.selection.events.active``; subclasses implement
    :meth:`_target_changed` (and :meth:`_filters_changed` to hear other widgets)."""

    #: whether an isolated-object layer is itself the layer to act on (store panel: yes);
    #: otherwise the widget acts on the data layers of the isolated object's store
    accept_isolated = False

    def __init__(self, napari_viewer: Viewer, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        # napari hands plugin widgets a PublicOnlyProxy of the viewer, whose layers are
        # proxies too: controllers are registered by the real layer objects, so unwrap
        self.viewer = unwrap(napari_viewer)
        self.layer: Layer = None
        self.target: BrowseTarget | None = None
        self.session: Any = None
        self._followed = False
        self.setLayout(QVBoxLayout())
        self.layout().setAlignment(Qt.AlignmentFlag.AlignTop)
        self.header = QLabel(NO_LAYER)
        self.header.setWordWrap(True)
        self.header.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.layout().addWidget(self.header)
        napari_viewer.layers.selection.events.active.connect(self._on_active)
        napari_viewer.layers.events.removed.connect(self._on_removed)

    def layout(self) -> QVBoxLayout:
        """The column of controls ``__init__`` sets (Qt types it as any layout, or none)."""
        column = super().layout()
        assert isinstance(column, QVBoxLayout)
        return column

    def showEvent(self, event: Any) -> None:  # noqa: N802 - Qt's name
        super().showEvent(event)
        fit_dock_title(self)

    # -- following the selection -------------------------------------------------------
    def _on_active(self, event: Event | None = None) -> None:
        self.follow(self.viewer.layers.selection.active)

    def _on_removed(self, event: Event | None = None) -> None:
        if self.layer is not None and self.layer not in self.viewer.layers:
            self.follow(self.viewer.layers.selection.active)

    def follow(self, layer: Layer) -> None:
        """Act on ``layer`` (``None`` or a non-ZV layer: nothing)."""
        meta = meta_of(layer)
        target = None if meta is None else target_for(self.viewer, layer)
        if (
            meta is not None
            and _derived(layer, meta)
            and not (self.accept_isolated and meta.get("role") == "isolated")
        ):
            # an isolated object or a Pyramid QA layer: keep browsing its store
            layer = target.layers[0] if target is not None and target.layers else None
            meta = meta_of(layer)
        if meta is None:
            layer, target = None, None
        if self._followed and layer is self.layer and target is self.target:
            return
        self._followed = True  # the first call sets the controls up even for no layer
        if self.session is not None:
            self.session.disconnect(self._filters_changed)
        self._watch_level(self.target, False)
        self.layer, self.target = layer, target
        self.session = browse_state_of(target) if target is not None else None
        if self.session is not None:
            self.session.connect(self._filters_changed)
        self._watch_level(target, True)
        self._update_header()
        self._target_changed()

    def _watch_level(self, target: BrowseTarget | None, on: bool) -> None:
        """Follow the target's level changes (the header names the level)."""
        if target is None:
            return
        if on:
            target.events.level_changed.connect(self._update_header)
        else:
            target.events.level_changed.disconnect(self._update_header)

    def _update_header(self, *_: int) -> None:
        meta = meta_of(self.layer)
        if self.layer is None or meta is None:
            self.header.setText(NO_LAYER)
            return
        target = self.target
        level = target.level if target is not None else meta.get("level")
        self.header.setText(f"<b>{meta.get('name', self.layer.name)}</b> · level {level}")

    # -- hooks ---------------------------------------------------------------------------
    def _target_changed(self) -> None:
        """The layer / target changed (``self.layer`` may be ``None``)."""

    def _filters_changed(self) -> None:
        """Another widget changed the session's filters."""

    @property
    def store(self) -> GeometryStore | None:
        if self.session is not None:
            return self.session.store
        if self.target is not None:
            return self.target.store
        return None


def values_at_ends(slider: QLabeledRangeSlider) -> None:
    """A labelled range slider says its two values in editable labels at its ends, none on
    its handles (handle labels overlapped each other and were clipped at the ends)."""
    slider.setHandleLabelPosition(QLabeledRangeSlider.LabelPosition.NoLabel)
    slider.setEdgeLabelMode(QLabeledRangeSlider.EdgeLabelMode.LabelIsValue)


#: Room the dock's own title bar buttons take when it has no title bar widget to ask.
TITLE_BAR_BUTTONS = 100


def fit_dock_title(widget: QWidget) -> int:
    """Make the dock holding ``widget`` at least as wide as its title bar wants (its title
    whole, not cut off); returns that width (0: not in a dock)."""
    dock = widget.parentWidget()
    while dock is not None and not isinstance(dock, QDockWidget):
        dock = dock.parentWidget()
    if dock is None:
        return 0
    bar = dock.titleBarWidget()
    bar_layout = None if bar is None else bar.layout()
    need = (
        bar_layout.sizeHint().width()  # a custom title bar: its buttons, title and margins
        if bar_layout is not None
        else dock.fontMetrics().horizontalAdvance(dock.windowTitle()) + TITLE_BAR_BUTTONS
    )
    if dock.minimumWidth() < need:
        dock.setMinimumWidth(need)
    return need


def _derived(layer: Layer, meta: dict) -> bool:
    """A layer made from its store's data (isolated object, QA overlay, side-by-side level),
    not the store's own layers or bounds box."""
    return meta.get("role") != "bounds" and not is_data_layer(layer)


def unwrap(obj: Any) -> Any:
    """The object behind napari's ``PublicOnlyProxy`` (``obj`` itself otherwise)."""
    return getattr(obj, "__wrapped__", obj)


def clear_layout(layout: Any) -> None:
    """Delete every widget of ``layout``."""
    while layout.count():
        item = layout.takeAt(0)
        widget = item.widget()
        if widget is not None:
            widget.setParent(None)
            widget.deleteLater()
        elif item.layout() is not None:
            clear_layout(item.layout())
