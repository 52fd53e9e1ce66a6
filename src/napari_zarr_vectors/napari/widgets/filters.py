"""Group filter and object-attribute filter widgets.

The controls are magicgui widgets (choices, range sliders, value lists, buttons); custom Qt
remains for the texts (word-wrapped labels), the group list (ticked *and* highlighted items:
magicgui's ``Select`` has one state only) and the titled frame of a filter with its
histogram sparkline.

Both edit the shared :class:`~napari_zarr_vectors.napari.browse.targets.BrowseState` of the
selected store: its filters are ANDed on the level-0 object table (vectorised) and sent to
the target with ``set_object_filter(allowed_ids)``, which applies them at every level and
after every level-of-detail refresh.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

import numpy as np
from magicgui.widgets import ComboBox, Container, FloatRangeSlider, PushButton, RangeSlider, Select
from qtpy.QtCore import Qt
from qtpy.QtWidgets import (
    QAbstractItemView,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QVBoxLayout,
    QWidget,
)
from superqt.utils import qdebounced

from napari_zarr_vectors.napari.browse.filters import GroupFilter, RangeFilter, ValueFilter
from napari_zarr_vectors.napari.browse.groups import (
    GROUP_ID_LABEL,
    group_label_choices,
    group_labels,
)
from napari_zarr_vectors.napari.browse.table import AttributeSummary, summarise
from napari_zarr_vectors.napari.values import CATEGORICAL, dtype_word, format_value
from napari_zarr_vectors.napari.widgets._browse_base import (
    ZVBrowseWidget,
    clear_layout,
    values_at_ends,
)

if TYPE_CHECKING:
    from napari.viewer import Viewer

#: Slider changes are applied after this many milliseconds without a further change.
APPLY_DELAY_MS = 150

#: List item data role holding the group id (``None``: objects in no group).
GROUP_ROLE = Qt.ItemDataRole.UserRole
UNGROUPED = -1

#: The group list is as tall as its rows up to this many (then it scrolls).
GROUP_ROWS_SHOWN = 20

NO_OBJECTS = "This store has no objects: there is nothing to filter by."
NO_GROUPS = "This store has no groups."
NO_ATTRIBUTES = "This store has no object attributes."


class GroupFilterWidget(ZVBrowseWidget):
    """Tick groups to show or hide their objects; "only these" keeps the highlighted ones."""

    def __init__(self, napari_viewer: Viewer) -> None:
        super().__init__(napari_viewer)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.label_by = ComboBox(label="Label by", choices=[])
        self.label_by.tooltip = "Group attribute used to label the groups"
        # custom Qt: each group is ticked (shown) and may be highlighted ("Only these")
        self.groups = QListWidget()
        self.groups.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        # long names are elided in the middle (the tooltip has them whole), never scrolled
        self.groups.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.groups.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.all_button = PushButton(text="All")
        self.none_button = PushButton(text="None")
        self.only_button = PushButton(text="Only these")
        self.only_button.tooltip = "Show only the highlighted groups"
        self.count = QLabel()
        buttons = Container(
            widgets=[self.all_button, self.none_button, self.only_button],
            layout="horizontal",
            labels=False,
        )
        buttons.margins = (0, 0, 0, 0)
        form = Container(widgets=[self.label_by])
        form.margins = (0, 0, 0, 0)
        self.controls = QWidget()
        box = QVBoxLayout(self.controls)
        box.setContentsMargins(0, 0, 0, 0)
        box.addWidget(form.native)
        box.addWidget(self.groups)
        box.addWidget(buttons.native)
        for w in (self.message, self.controls, self.count):
            self.layout().addWidget(w)

        self.label_by.changed.connect(self._relabel)
        self.groups.itemChanged.connect(self._ticked)
        self.all_button.changed.connect(lambda *_: self.set_checked(None))
        self.none_button.changed.connect(lambda *_: self.set_checked([]))
        self.only_button.changed.connect(lambda *_: self.only_selected())
        self._updating = False
        self._on_active()

    # -- state -------------------------------------------------------------------------
    def _target_changed(self) -> None:
        self._updating = True
        try:
            self.groups.clear()
            self.label_by.choices = []
            table = self.session.table if self.session is not None else None
            if table is None:
                self._show(None)
                return
            if not table.n_objects:
                self._show(NO_OBJECTS)
                return
            if not table.has_groups:
                self._show(NO_GROUPS)
                return
            self._show(None, controls=True)
            self.label_by.choices = group_label_choices(table)
            self._fill(self.label_by.value)
        finally:
            self._updating = False
        self._filters_changed()

    def _show(self, message: str | None, controls: bool = False) -> None:
        self.message.setText(message or "")
        self.message.setVisible(message is not None)
        self.controls.setVisible(controls)
        self.count.setVisible(self.session is not None and self.session.table.n_objects > 0)

    def _fill(self, by: str) -> None:
        table = self.session.table
        labels = group_labels(table, by if by else None)
        counts = table.group_counts()
        current = self.session.filters.group_filter
        ticked = None if current is None else set(current.groups)
        for g in table.group_ids():
            text = f"{labels[g]}  —  {counts[g]:,} objects"
            item = QListWidgetItem(text)
            item.setToolTip(text if by == GROUP_ID_LABEL else f"{text} (group id {g})")
            item.setData(GROUP_ROLE, g)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            on = ticked is None or g in ticked
            item.setCheckState(Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)
            self.groups.addItem(item)
        n_free = int((~table.grouped()).sum())
        if n_free:
            item = QListWidgetItem(f"(in no group)  —  {n_free:,} objects")
            item.setData(GROUP_ROLE, UNGROUPED)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            on = current is None or current.ungrouped
            item.setCheckState(Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)
            self.groups.addItem(item)
        self._fit_rows()

    def _fit_rows(self) -> None:
        """Make the list as tall as its rows (up to :data:`GROUP_ROWS_SHOWN`): a list of
        many groups is not squeezed to a few rows in a dock with room to spare."""
        n = min(self.groups.count(), GROUP_ROWS_SHOWN)
        row = self.groups.sizeHintForRow(0) if self.groups.count() else 0
        self.groups.setFixedHeight(max(n, 1) * max(row, 1) + 2 * self.groups.frameWidth() + 2)

    def _relabel(self, by: str) -> None:
        if self._updating or self.session is None:
            return
        self._updating = True
        try:
            self.groups.clear()
            self._fill(by)
        finally:
            self._updating = False

    def _items(self) -> list[QListWidgetItem]:
        return [self.groups.item(i) for i in range(self.groups.count())]  # type: ignore[misc]  # Qt: every row has an item

    def checked_groups(self) -> list[int]:
        """Ticked group ids (:data:`UNGROUPED` for "in no group")."""
        return [
            int(it.data(GROUP_ROLE))
            for it in self._items()
            if it.checkState() == Qt.CheckState.Checked
        ]

    def set_checked(self, group_ids: list[int] | None) -> None:
        """Tick exactly ``group_ids`` (``None``: all) and apply."""
        self._updating = True
        try:
            for it in self._items():
                on = group_ids is None or int(it.data(GROUP_ROLE)) in group_ids
                it.setCheckState(Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)
        finally:
            self._updating = False
        self._apply()

    def only_selected(self) -> None:
        """Only these: tick the highlighted groups, untick the rest."""
        chosen = [int(it.data(GROUP_ROLE)) for it in self.groups.selectedItems()]
        if chosen:
            self.set_checked(chosen)

    def _ticked(self, item: QListWidgetItem | None = None) -> None:
        if not self._updating:
            self._apply()

    def _apply(self) -> None:
        if self.session is None or not self.session.table.has_groups:
            return
        ticked = self.checked_groups()
        items = self._items()
        if len(ticked) == len(items):
            self.session.filters.group_filter = None
        else:
            groups = tuple(g for g in ticked if g != UNGROUPED)
            self.session.filters.group_filter = GroupFilter(groups, UNGROUPED in ticked)
        self.session.apply()

    def _filters_changed(self) -> None:
        if self.session is not None:
            self.count.setText(self.session.filters.describe())


class AttributeFilterWidget(ZVBrowseWidget):
    """One control per chosen object attribute: a range slider (numeric) or a value list
    (categorical / integer codes). Filters combine (AND) with each other and the groups."""

    def __init__(self, napari_viewer: Viewer) -> None:
        super().__init__(napari_viewer)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.choose = ComboBox(choices=[])
        self.add_button = PushButton(text="Add filter")
        self.clear_button = PushButton(text="Clear all")
        self.rows_box = QWidget()
        self.rows = QVBoxLayout(self.rows_box)
        self.rows.setContentsMargins(0, 0, 0, 0)
        self.count = QLabel()
        top = Container(widgets=[self.choose, self.add_button], layout="horizontal", labels=False)
        top.margins = (0, 0, 0, 0)
        self.controls = QWidget()
        box = QVBoxLayout(self.controls)
        box.setContentsMargins(0, 0, 0, 0)
        box.addWidget(top.native)
        box.addWidget(self.rows_box)
        box.addWidget(self.clear_button.native)
        for w in (self.message, self.controls, self.count):
            self.layout().addWidget(w)
        self.add_button.changed.connect(lambda *_: self.add_filter(self.choose.value))
        self.clear_button.changed.connect(lambda *_: self.clear_filters())
        self.filter_rows: dict[str, _FilterRow] = {}
        self._on_active()

    def _target_changed(self) -> None:
        clear_layout(self.rows)
        self.filter_rows = {}
        self.choose.choices = []
        table = self.session.table if self.session is not None else None
        if table is None:
            self._show(None)
            return
        if not table.n_objects:
            self._show(NO_OBJECTS)
            return
        if not table.attributes:
            self._show(NO_ATTRIBUTES)
            return
        self._show(None, controls=True)
        self.choose.choices = list(table.attributes)
        for name, f in list(self.session.filters.attribute_filters.items()):
            self.add_filter(name, existing=f)
        self._filters_changed()

    def _show(self, message: str | None, controls: bool = False) -> None:
        self.message.setText(message or "")
        self.message.setVisible(message is not None)
        self.controls.setVisible(controls)
        self.count.setVisible(controls)

    def add_filter(
        self, name: str, existing: RangeFilter | ValueFilter | None = None
    ) -> _FilterRow | None:
        """Show the control for attribute ``name`` (its filter starts inactive)."""
        if self.session is None or name not in self.session.table.attributes:
            return None
        if name in self.filter_rows:
            return self.filter_rows[name]
        table = self.session.table
        summary = summarise(name, table.attributes[name], table.present[name])
        row = _FilterRow(summary, self._row_changed, self.remove_filter)
        if existing is not None:
            row.restore(existing)
        self.filter_rows[name] = row
        self.rows.addWidget(row)
        return row

    def remove_filter(self, name: str) -> None:
        row = self.filter_rows.pop(name, None)
        if row is not None:
            row.setParent(None)
            row.deleteLater()
        if self.session is not None and name in self.session.filters.attribute_filters:
            self.session.filters.set_attribute_filter(name, None)
            self.session.apply()

    def clear_filters(self) -> None:
        for name in list(self.filter_rows):
            self.filter_rows.pop(name).setParent(None)
        if self.session is not None and self.session.filters.attribute_filters:
            self.session.filters.attribute_filters.clear()
            self.session.apply()

    def _row_changed(self, name: str, f: RangeFilter | ValueFilter | None) -> None:
        if self.session is None:
            return
        if self.session.filters.attribute_filters.get(name) == f:
            return
        self.session.filters.set_attribute_filter(name, f)
        self.session.apply()

    def _filters_changed(self) -> None:
        if self.session is not None:
            self.count.setText(self.session.filters.describe())


MONOSPACE = "font-family: monospace; letter-spacing: 0px;"


def histogram_axis(summary: AttributeSummary) -> str:
    """``"24.69          76.67"``: the lowest and highest value, as wide as the sparkline."""
    lo, hi = format_value(summary.lo), format_value(summary.hi)
    width = len(summary.sparkline())
    return lo + " " * max(width - len(lo) - len(hi), 1) + hi


class _FilterRow(QGroupBox):
    """The control of one attribute filter: a range slider (numeric) or a value list
    (categorical), in a titled frame (custom Qt) with the histogram as a sparkline."""

    def __init__(
        self,
        summary: AttributeSummary,
        changed: Callable[[str, RangeFilter | ValueFilter | None], None],
        remove: Callable[[str], None],
    ) -> None:
        super().__init__()
        self.summary = summary
        self._changed = changed
        self.setTitle(f"{summary.name}  ({dtype_word(summary.dtype)})")
        layout = QVBoxLayout(self)
        head = QHBoxLayout()
        info = QLabel(self._info_text())
        info.setWordWrap(True)
        head.addWidget(info, 1)
        close = PushButton(text="✕", tooltip="Remove this filter")
        close.changed.connect(lambda *_: remove(summary.name))
        head.addWidget(close.native)
        layout.addLayout(head)
        self._emit_later = qdebounced(self.emit, timeout=APPLY_DELAY_MS)
        self.slider: RangeSlider | FloatRangeSlider | None = None
        self.values: Select | None = None
        if summary.kind == CATEGORICAL:
            choices = [
                (f"{format_value(value)}  —  {n:,}", value)
                for value, n in zip(summary.categories, summary.counts, strict=False)
            ]
            self.values = Select(choices=choices, value=list(summary.categories))
            self.values.tooltip = "The values shown (ctrl-click to add or remove one)"
            self.values.native.setMaximumHeight(min(160, 22 * (len(summary.categories) + 1)))
            self.values.changed.connect(lambda *_: self.emit())
            layout.addWidget(self.values.native)
        elif summary.lo is not None and summary.hi is not None:  # (set together)
            lo: float
            hi: float
            if summary.integer:
                lo, hi = int(summary.lo), int(summary.hi)
                self.slider = RangeSlider(min=lo, max=hi, value=(lo, hi))
            else:
                lo, hi = summary.lo, summary.hi
                step = 10.0 ** -_decimals(lo, hi)
                self.slider = FloatRangeSlider(min=lo, max=hi, value=(lo, hi), step=step)
            spark = QLabel(summary.sparkline())
            peak = int(summary.histogram.max()) if summary.histogram is not None else 0
            spark.setToolTip(f"histogram of the objects' values (tallest bar: {peak:,} objects)")
            spark.setStyleSheet(MONOSPACE)
            layout.addWidget(spark)
            layout.addWidget(self._axis(summary))
            values_at_ends(self.slider.native)
            layout.addWidget(self.slider.native)
            self.slider.changed.connect(lambda *_: self._emit_later())
        else:
            layout.addWidget(QLabel("no values to filter on"))

    def _axis(self, summary: AttributeSummary) -> QLabel:
        """The histogram's axis: its lowest and highest values under its ends (the same
        monospace font, so they line up with the bars)."""
        self.axis = QLabel(histogram_axis(summary))
        self.axis.setStyleSheet(MONOSPACE)
        return self.axis

    def _info_text(self) -> str:
        s = self.summary
        text = f"{s.n_present:,} objects with a value"
        if s.n_missing:
            text += f", {s.n_missing:,} without (hidden while this filter is active)"
        if s.kind != CATEGORICAL and s.lo is not None:
            text += f"; range {format_value(s.lo)} … {format_value(s.hi)}"
        return text

    # -- values --------------------------------------------------------------------------
    def set_range(self, lo: float, hi: float) -> None:
        """Set the slider (clamped to its range) and apply at once (tests, scripts)."""
        if self.slider is None:
            raise ValueError(f"{self.summary.name} is not a numeric filter")
        kind = int if isinstance(self.slider, RangeSlider) else float
        lo, hi = max(kind(lo), self.slider.min), min(kind(hi), self.slider.max)
        with self.slider.changed.blocked():
            self.slider.value = (lo, hi)
        self._emit_later.cancel()
        self.emit()

    def set_values(self, values: Collection[object]) -> None:
        """Choose exactly ``values`` and apply."""
        if self.values is None:
            raise ValueError(f"{self.summary.name} is not a categorical filter")
        self._select(values)
        self.emit()

    def _select(self, values: Collection[object]) -> None:
        if self.values is None:
            return
        with self.values.changed.blocked():
            self.values.value = [v for v in self.summary.categories if v in values]

    def current(self) -> RangeFilter | ValueFilter | None:
        """The filter this row stands for (``None`` while it lets everything through)."""
        s = self.summary
        if self.values is not None:
            selected = self.values.value
            chosen = [v for v in s.categories if v in selected]
            if len(chosen) == len(s.categories):
                return None
            return ValueFilter(s.name, tuple(chosen))
        if self.slider is None:
            return None
        lo, hi = (float(v) for v in self.slider.value)
        assert s.lo is not None and s.hi is not None  # a slider: a numeric summary
        if lo <= s.lo and hi >= s.hi:
            return None
        return RangeFilter(s.name, lo, hi)

    def restore(self, f: RangeFilter | ValueFilter) -> None:
        if isinstance(f, RangeFilter) and self.slider is not None:
            with self.slider.changed.blocked():
                self.slider.value = (f.lo, f.hi)
        elif isinstance(f, ValueFilter) and self.values is not None:
            self._select(f.values)

    def emit(self) -> None:
        self._changed(self.summary.name, self.current())


def _decimals(lo: float, hi: float) -> int:
    span = abs(hi - lo)
    if span <= 0 or not np.isfinite(span):
        return 3
    return int(np.clip(3 - np.floor(np.log10(span)), 1, 8))
