"""Colour-by widget: colour the selected store's layers by any vertex or object attribute,
the object id or the group, with a colormap and contrast range, and a legend for categories.

The colours are set through each layer's own colour properties
(:func:`~napari_zarr_vectors.napari.colour.apply_colour`), so the level-of-detail
controller keeps them across data refreshes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from qtpy.QtCore import Qt, QTimer
from qtpy.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QLabel,
    QWidget,
)

from ..browse import (
    CATEGORICAL,
    MAX_CATEGORIES,
    ColourSpec,
    attribute_kind,
    categorical_colours,
    continuous_colours,
    finite_range,
    format_value,
    group_labels,
    value_counts,
)
from ..colour import (
    apply_colour,
    colour_spec_of,
    colourable_features,
    feature_values,
    layer_kind,
)
from ..layers import GROUP_ID, GROUPS, OBJECT_ID
from ._browse_base import ZVBrowseWidget

AUTO, CONTINUOUS = "auto", "continuous"

#: Colormaps offered for continuous values.
COLORMAPS = ("viridis", "magma", "plasma", "inferno", "turbo", "twilight", "gray", "hsv")

#: The legend lists at most this many categories.
LEGEND_MAX = 40

NO_FEATURES = "This layer has no attributes to colour by."


class ColourByWidget(ZVBrowseWidget):
    """Dock widget: colour the selected store's layers by an attribute."""

    def __init__(self, napari_viewer: Any) -> None:
        super().__init__(napari_viewer)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.feature = QComboBox()
        self.mode = QComboBox()
        self.mode.addItems([AUTO, CONTINUOUS, CATEGORICAL])
        self.colormap = QComboBox()
        self.colormap.addItems(list(COLORMAPS))
        self.all_layers = QCheckBox("all layers of this store")
        self.all_layers.setChecked(True)
        from superqt import QLabeledDoubleRangeSlider

        self.contrast = QLabeledDoubleRangeSlider(Qt.Orientation.Horizontal)
        self.legend = QLabel()
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setWordWrap(True)
        self.controls = QWidget()
        form = QFormLayout(self.controls)
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow("Colour by", self.feature)
        form.addRow("Values", self.mode)
        self.colormap_label = QLabel("Colormap")
        self.contrast_label = QLabel("Contrast")
        form.addRow(self.colormap_label, self.colormap)
        form.addRow(self.contrast_label, self.contrast)
        form.addRow("", self.all_layers)
        for w in (self.message, self.controls, self.legend):
            self.layout().addWidget(w)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(150)
        self._timer.timeout.connect(self._contrast_changed)
        self.spec: ColourSpec | None = None
        self._updating = False
        self.feature.currentIndexChanged.connect(lambda *_: self._choose())
        self.mode.currentTextChanged.connect(lambda *_: self._choose())
        self.colormap.currentTextChanged.connect(lambda *_: self._choose(keep_contrast=True))
        self.contrast.valueChanged.connect(
            lambda *_: None if self._updating else self._timer.start()
        )
        self._on_active()

    # -- choices -----------------------------------------------------------------------
    def _target_changed(self) -> None:
        self._updating = True
        try:
            self.feature.clear()
            self.legend.setText("")
            self.spec = None
            if self.layer is None:
                self.message.setVisible(False)
                self.controls.setVisible(False)
                return
            names = colourable_features(self.layer)
            if not names:
                self.message.setText(NO_FEATURES)
                self.message.setVisible(True)
                self.controls.setVisible(False)
                return
            self.message.setVisible(False)
            self.controls.setVisible(True)
            for name in names:
                self.feature.addItem(self._describe(name), name)
            current = colour_spec_of(self.layer)
            if current is not None and current.feature in names:
                self.feature.setCurrentIndex(names.index(current.feature))
                self.mode.setCurrentText(current.mode)
                if not current.categorical:
                    self.colormap.setCurrentText(current.colormap)
                self.spec = current
                self._show_spec(current)
            else:
                self.feature.setCurrentIndex(-1)
        finally:
            self._updating = False

    def _describe(self, name: str) -> str:
        if name == OBJECT_ID:
            return "object id"
        if name == GROUP_ID:
            return "group"
        if name == GROUPS:
            return "groups (all memberships)"
        table = self.session.table if self.session is not None else None
        if table is not None and (
            name in table.attributes
            or (name.startswith("object_") and name[len("object_") :] in table.attributes)
        ):
            return f"{name}  (object)"
        store = self.store
        try:
            vnames = store.vertex_attribute_names(0) if store is not None else []
        except Exception:  # noqa: BLE001
            vnames = []
        base = name.split("[")[0]
        if base in vnames or base.removeprefix("vertex_") in vnames:
            return f"{name}  (vertex)"
        if name == "direction" or name.startswith("zv_direction"):
            return f"{name}  (computed from the geometry)"
        return name

    def layers(self) -> list[Any]:
        """The layers a colour choice applies to."""
        if self.layer is None:
            return []
        if self.all_layers.isChecked() and self.target is not None:
            feature = self.spec_feature()
            return [lay for lay in self.target.layers if feature in colourable_features(lay)]
        return [self.layer]

    def spec_feature(self) -> str | None:
        data = self.feature.currentData()
        return None if data is None else str(data)

    def colour_by(
        self,
        feature: str,
        mode: str = AUTO,
        colormap: str | None = None,
        contrast_limits: tuple[float, float] | None = None,
    ) -> ColourSpec | None:
        """Colour by ``feature`` (scripts and tests; the controls follow)."""
        self._updating = True
        try:
            index = self.feature.findData(feature)
            if index < 0:
                raise ValueError(f"{feature!r} is not a feature of {self.layer.name}")
            self.feature.setCurrentIndex(index)
            self.mode.setCurrentText(mode)
            if colormap is not None:
                self.colormap.setCurrentText(colormap)
        finally:
            self._updating = False
        spec = self._choose()
        if contrast_limits is not None and spec is not None and not spec.categorical:
            spec = self._apply(spec.with_contrast(*contrast_limits))
        return spec

    def _choose(self, keep_contrast: bool = False) -> ColourSpec | None:
        if self._updating or self.layer is None:
            return None
        feature = self.spec_feature()
        if feature is None:
            return None
        values = self._values(feature)
        mode = self.mode.currentText()
        if mode == AUTO:
            mode = self._auto_mode(feature, values)
        if mode == CATEGORICAL:
            spec = self._categorical(feature, values)
        else:
            spec = continuous_colours(values, feature, self.colormap.currentText())
            old = self.spec
            if (
                keep_contrast
                and old is not None
                and old.feature == feature
                and old.contrast_limits is not None
                and not old.categorical
            ):
                spec = spec.with_contrast(*old.contrast_limits)
        return self._apply(spec)

    def _values(self, feature: str) -> np.ndarray:
        """Values of ``feature`` over the store when known (object attributes, ids, groups),
        else over the loaded layers."""
        table = self.session.table if self.session is not None else None
        if table is not None and table.n_objects:
            if feature == OBJECT_ID:
                return table.ids
            if feature == GROUP_ID:
                gids = np.asarray(table.group_ids(), np.int64)
                return gids if table.grouped().all() else np.append(gids, -1)
            name = feature if feature in table.attributes else feature.removeprefix("object_")
            if name in table.attributes:
                values = np.asarray(table.attributes[name])
                return values[np.asarray(table.present[name], bool)]
        parts = [feature_values(lay, feature) for lay in self.layers() or [self.layer]]
        parts = [p for p in parts if len(p)]
        return np.concatenate(parts) if parts else np.empty(0)

    def _auto_mode(self, feature: str, values: np.ndarray) -> str:
        if feature in (OBJECT_ID, GROUP_ID, GROUPS, "track_id"):
            n = len(np.unique(values)) if len(values) else 0
            return CATEGORICAL if n <= MAX_CATEGORIES else CONTINUOUS
        return CATEGORICAL if attribute_kind(values) == CATEGORICAL else CONTINUOUS

    def _categorical(self, feature: str, values: np.ndarray) -> ColourSpec:
        labels = None
        if feature == GROUP_ID and self.session is not None:
            labels = {g: f"{lab}" for g, lab in group_labels(self.session.table).items()}
            labels[-1] = "(no group)"
        return categorical_colours(values, feature, labels)

    def _contrast_changed(self) -> None:
        if self.spec is None or self.spec.categorical:
            return
        lo, hi = (float(v) for v in self.contrast.value())
        if hi <= lo:
            return
        self._apply(self.spec.with_contrast(lo, hi))

    def _apply(self, spec: ColourSpec) -> ColourSpec:
        self.spec = spec
        for layer in self.layers():
            apply_colour(layer, spec)
        self._show_spec(spec)
        return spec

    # -- display -------------------------------------------------------------------------
    def _show_spec(self, spec: ColourSpec) -> None:
        self._updating = True
        try:
            categorical = spec.categorical
            for w in (self.colormap, self.colormap_label, self.contrast, self.contrast_label):
                w.setVisible(not categorical)
            if not categorical:
                values = self._values(spec.feature)
                lo, hi = finite_range(values)
                c0, c1 = spec.contrast_limits or (lo, hi)
                self.contrast.setRange(min(lo, c0), max(hi, c1))
                self.contrast.setValue((c0, c1))
        finally:
            self._updating = False
        self.legend.setText(legend_html(spec, self._counts(spec), _rows_noun(self.layer)))

    def _filters_changed(self) -> None:
        """Filters changed or new data arrived: refresh the legend counts."""
        if self.spec is not None and self.layer is not None:
            self.legend.setText(
                legend_html(self.spec, self._counts(self.spec), _rows_noun(self.layer))
            )

    def _counts(self, spec: ColourSpec) -> dict:
        """``{category: rows loaded}`` of the selected layer (shown rows of Points)."""
        layer = self.layer
        if layer is None or spec.feature not in colourable_features(layer):
            return {}
        values = feature_values(layer, spec.feature)
        if layer_kind(layer) == "points":
            values = values[np.asarray(layer.shown, bool)]
        return value_counts(values)


def _rows_noun(layer: Any) -> str:
    kind = layer_kind(layer) if layer is not None else ""
    return {"points": "points", "vectors": "segments", "shapes": "shapes"}.get(kind, "vertices")


def legend_html(spec: ColourSpec, counts: dict | None = None, noun: str = "rows") -> str:
    """A legend: colour swatches and labels (categories) or the range (continuous)."""
    if not spec.categorical:
        lo, hi = spec.contrast_limits or (0.0, 1.0)
        return f"<b>{spec.feature}</b>: {spec.colormap}, {format_value(lo)} … {format_value(hi)}"
    entries = spec.legend(counts)
    rows = []
    for label, rgba, n in entries[:LEGEND_MAX]:
        hexcol = "#{:02x}{:02x}{:02x}".format(*(int(round(255 * c)) for c in rgba[:3]))
        count = f" <small>({n:,} {noun} loaded)</small>" if counts else ""
        rows.append(f"<span style='color:{hexcol}'>■</span> {label}{count}")
    more = len(entries) - LEGEND_MAX
    if more > 0:
        rows.append(f"… and {more:,} more")
    return f"<b>{spec.feature}</b><br>" + "<br>".join(rows)
