"""Colour-by widget: colour the selected store's layers by any vertex or object attribute,
the object id or the group, with a colormap and contrast range, and a legend for categories.

The colours are set through each layer's own colour properties
(:func:`~napari_zarr_vectors.napari.colour.live.apply_colour`), so the level-of-detail
controller keeps them across data refreshes. At a level that does not store the chosen
attribute the layers are drawn in one grey (:data:`~napari_zarr_vectors.napari.colour.live.FALLBACK_COLOUR`)
and the legend says so; the colour and its contrast limits return with the attribute.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from magicgui.widgets import CheckBox, ComboBox, Container, FloatRangeSlider
from napari.utils.colormaps import ensure_colormap
from qtpy.QtCore import Qt
from qtpy.QtWidgets import QLabel
from superqt.utils import qdebounced

from napari_zarr_vectors.format.distinct import distinct
from napari_zarr_vectors.format.missing import OBJECT_UNKNOWN
from napari_zarr_vectors.napari.browse.groups import group_labels
from napari_zarr_vectors.napari.colour.bar import (
    bar_label,
    counted,
    default_colouring_name,
    display_name,
    object_counts,
    object_noun,
)
from napari_zarr_vectors.napari.colour.defaults import (
    LIFTED_VIRIDIS,
    categorical_rgba,
    direction_colormap,
)
from napari_zarr_vectors.napari.colour.live import (
    FALLBACK_COLOUR,
    apply_colour,
    colour_spec_of,
    colourable_features,
    feature_values,
    greys_unknown_objects,
    layer_kind,
)
from napari_zarr_vectors.napari.colour.spec import (
    MISSING_COLOUR,
    ColourSpec,
    categorical_colours,
    continuous_colours,
    finite_range,
    value_counts,
)
from napari_zarr_vectors.napari.conventions import DIRECTION, meta_of
from napari_zarr_vectors.napari.layerdata.build import GROUP_ID, GROUPS, OBJECT_ID
from napari_zarr_vectors.napari.values import (
    CATEGORICAL,
    MAX_CATEGORIES,
    attribute_kind,
    format_value,
)
from napari_zarr_vectors.napari.widgets._browse_base import ZVBrowseWidget, values_at_ends

if TYPE_CHECKING:
    from napari.layers import Layer
    from napari.viewer import Viewer

AUTO, CONTINUOUS = "auto", "continuous"

#: Colormaps offered for continuous values (the first is the default: every value of it
#: shows on napari's black canvas).
COLORMAPS = (
    LIFTED_VIRIDIS,
    "viridis",
    "magma",
    "plasma",
    "inferno",
    "turbo",
    "twilight",
    "gray",
    "hsv",
)

#: The legend lists at most this many categories.
LEGEND_MAX = 40

#: Contrast slider changes are applied after this many milliseconds without a further change.
APPLY_DELAY_MS = 150

#: What the legend says of the direction palette (:func:`.defaults.direction_colormap`).
DIRECTION_LEGEND = "each segment by its orientation: |x| red, |y| green, |z| blue"

NO_FEATURES = "This layer has no attributes to colour by."

#: What the legend says about objects in several groups (the rule of ``layers._group_membership``).
SEVERAL_GROUPS = "Objects in several groups are drawn in the colour of the smallest of them."


class ColourByWidget(ZVBrowseWidget):
    """Dock widget: colour the selected store's layers by an attribute."""

    def __init__(self, napari_viewer: Viewer) -> None:
        super().__init__(napari_viewer)
        # custom Qt for the two texts: word-wrapped rich text (the legend's colour swatches),
        # which magicgui's Label does not offer
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.legend = QLabel()
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setWordWrap(True)
        self.feature = ComboBox(label="Colour by", choices=[], nullable=True)
        self.mode = ComboBox(label="Values", choices=[AUTO, CONTINUOUS, CATEGORICAL])
        self.colormap = ComboBox(label="Colormap", choices=list(COLORMAPS))
        self.contrast = FloatRangeSlider(label="Contrast", min=0.0, max=1.0, value=(0.0, 1.0))
        values_at_ends(self.contrast.native)
        self.all_layers = CheckBox(text="all layers of this store", value=True)
        self.controls = Container(
            widgets=[self.feature, self.mode, self.colormap, self.contrast, self.all_layers]
        )
        self.controls.margins = (0, 0, 0, 0)
        for w in (self.message, self.controls.native, self.legend):
            self.layout().addWidget(w)
        self.spec: ColourSpec | None = None
        self._offered: tuple[list[str], tuple | None] | None = None
        self._vertex_names: list[str] = []
        self._updating = False
        self._contrast_later = qdebounced(self._contrast_changed, timeout=APPLY_DELAY_MS)
        self.feature.changed.connect(lambda *_: self._choose())
        self.mode.changed.connect(lambda *_: self._choose())
        self.colormap.changed.connect(lambda *_: self._choose(keep_contrast=True))
        self.contrast.changed.connect(lambda *_: None if self._updating else self._contrast_later())
        self._on_active()

    # -- choices -----------------------------------------------------------------------
    def _target_changed(self) -> None:
        self._updating = True
        try:
            self.legend.setText("")
            self.spec = None
            self._vertex_names = self._store_vertex_names()
            self._offered = None  # labels depend on the store: offer anew
            self.feature.null_string = f"{default_colouring_name(self.layer)} (default)"
            names = self._fill_features()
            if self.layer is None or not names:
                self.message.setText(NO_FEATURES)
                self.message.setVisible(self.layer is not None)
                self.controls.visible = False
                return
            self.message.setVisible(False)
            self.controls.visible = True
            current = colour_spec_of(self.layer)
            if current is not None and current.feature in names:
                self.feature.value = current.feature
                self.mode.value = current.mode
                if not current.categorical:
                    self.colormap.value = current.colormap
                self.spec = current
                self._show_spec(current)
            else:
                self.feature.value = None
                self._show_default()
        finally:
            self._updating = False

    def _restore_default(self) -> None:
        """ "(default)" chosen: forget the colour choice of the store's layers and draw them
        in their default colours again (the target's ``default_colours``: a controller
        reloads them, layers without one draw their opening colours; the legend follows)."""
        target = self.target
        layers = [self.layer] if target is None else target.layers
        chosen = [lay for lay in layers if colour_spec_of(lay) is not None]
        self.spec = None
        if self.session is not None:
            self.session.choose_colour(None)
        if chosen and target is not None:
            target.default_colours()
        self._show_default()

    def _show_default(self) -> None:
        """The layer's default colouring (stored colours, direction, one colour per object)
        has no colormap or range to set: only the choice of attribute is shown, and for one
        colour per object the legend of those colours."""
        self.mode.visible = self.colormap.visible = self.contrast.visible = False
        self.legend.setText(default_legend_html(self.layer))

    def _fill_features(self) -> list[str]:
        """Offer the selected layer's colourable features, and the feature it is coloured by
        when this level does not store it (marked so). Returns the names offered."""
        names = [] if self.layer is None else colourable_features(self.layer)
        current = None if self.layer is None else colour_spec_of(self.layer)
        missing = None
        if current is not None and not self._drawn_somewhere(current.feature):
            missing = (current.feature, self._level())
            names = [n for n in names if n != current.feature]
        offered = (names, missing)
        if offered != self._offered:  # on a new target, or when a level changed the list
            self._offered = offered
            choices = [(self._describe(n), n) for n in names]
            if missing is not None:
                choices.append((f"{missing[0]}  (not stored at level {missing[1]})", missing[0]))
            with self.feature.changed.blocked():
                value = self.feature.value
                self.feature.choices = choices
                self.feature.value = value if value in [c[1] for c in choices] else None
        return names if missing is None else [*names, missing[0]]

    def _store_vertex_names(self) -> list[str]:
        """The store's level-0 vertex attribute names (read once per selected store: the
        list may need a directory listing)."""
        store = self.store
        try:
            return list(store.vertex_attribute_names(0)) if store is not None else []
        except Exception:  # noqa: BLE001 - names we cannot list are simply not marked
            return []

    def _level(self) -> int | None:
        meta = meta_of(self.layer) or {}
        return getattr(self.target, "level", meta.get("level"))

    def _describe(self, name: str) -> str:
        if name in (OBJECT_ID, GROUP_ID):
            return display_name(name)
        if name == GROUPS:
            return "groups (all memberships)"
        table = self.session.table if self.session is not None else None
        if table is not None and (
            name in table.attributes
            or (name.startswith("object_") and name[len("object_") :] in table.attributes)
        ):
            return f"{name}  (object)"
        vnames = self._vertex_names
        base = name.split("[")[0]
        if base in vnames or base.removeprefix("vertex_") in vnames:
            return f"{name}  (vertex)"
        if name == "direction" or name.startswith("zv_direction"):
            return f"{name}  (computed from the geometry)"
        return name

    def layers(self) -> list[Layer]:
        """The layers a colour choice applies to: with "all layers", every layer of the store
        that has the feature at this level or is already coloured by it."""
        if self.layer is None:
            return []
        if self.all_layers.value and self.target is not None:
            feature = self.spec_feature()
            return [
                lay
                for lay in self.target.layers
                if feature in colourable_features(lay)
                or getattr(colour_spec_of(lay), "feature", None) == feature
            ]
        return [self.layer]

    def spec_feature(self) -> str | None:
        value = self.feature.value
        return None if value is None else str(value)

    def colour_by(
        self,
        feature: str,
        mode: str = AUTO,
        colormap: str | None = None,
        contrast_limits: tuple[float, float] | None = None,
    ) -> ColourSpec | None:
        """Colour by ``feature`` (scripts and tests; the controls follow)."""
        if feature not in self.feature.choices:
            raise ValueError(f"{feature!r} is not a feature of {self.layer.name}")
        self._updating = True
        try:
            self.feature.value = feature
            self.mode.value = mode
            if colormap is not None:
                self.colormap.value = colormap
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
            self._restore_default()
            return None
        if feature.endswith(DIRECTION):
            # the computed direction is a code into the direction palette (x red, y green,
            # z blue): a colormap over the codes drew meaningless colours and numbers
            ensure_colormap(direction_colormap())
            return self._apply(
                ColourSpec(feature=feature, colormap=DIRECTION, contrast_limits=(0.0, 1.0))
            )
        values = self._values(feature)
        mode = self.mode.value
        if mode == AUTO:
            mode = self._auto_mode(feature, values)
        elif mode == CONTINUOUS and values.dtype.kind not in "iufb":
            # text has no order to map onto a colormap (napari raised a TypeError and left
            # the layer in its old colours): its categories, and the control says so
            mode = CATEGORICAL
            self._updating = True
            try:
                self.mode.value = CATEGORICAL
            finally:
                self._updating = False
        if mode == CATEGORICAL:
            spec = self._categorical(feature, values)
        else:
            spec = continuous_colours(values, feature, self.colormap.value)
            old = self.spec
            if (
                (keep_contrast or not len(values))  # no values here to take a range from
                and old is not None
                and old.feature == feature
                and old.contrast_limits is not None
                and not old.categorical
            ):
                spec = spec.with_contrast(*old.contrast_limits)
        return self._apply(spec)

    def _values(self, feature: str) -> np.ndarray:
        """Values of ``feature`` over the store when known (object attributes, ids, groups),
        else over the loaded layers that have it."""
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
        layers = self.layers() or [self.layer]
        parts = [feature_values(lay, feature) for lay in layers if feature in lay.features]
        filled = [p for p in parts if len(p)]
        if filled:
            return np.concatenate(filled)
        # no rows loaded yet: an empty column of the feature's own type (text stays text, so
        # its mode is categories, not a colormap napari refuses once the rows arrive)
        return parts[0][:0] if parts else np.empty(0)

    def _auto_mode(self, feature: str, values: np.ndarray) -> str:
        if feature in (OBJECT_ID, GROUP_ID, GROUPS, "track_id"):
            n = len(distinct(values)) if len(values) else 0
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
        lo, hi = (float(v) for v in self.contrast.value)
        if hi <= lo:
            return
        self._apply(self.spec.with_contrast(lo, hi))

    def _apply(self, spec: ColourSpec) -> ColourSpec:
        self.spec = spec
        for layer in self.layers():
            apply_colour(layer, spec)
        if self.session is not None:
            self.session.choose_colour(spec if self.all_layers.value else None)
        self._show_spec(spec)
        return spec

    # -- display -------------------------------------------------------------------------
    def _show_spec(self, spec: ColourSpec) -> None:
        self._updating = True
        try:
            categorical = spec.categorical
            palette = spec.feature.endswith(DIRECTION)  # no colormap or range to choose
            self.mode.visible = not palette
            self.colormap.visible = self.contrast.visible = not (categorical or palette)
            if not (categorical or palette):
                lo, hi = finite_range(self._values(spec.feature))
                c0, c1 = spec.contrast_limits or (lo, hi)
                lo, hi = min(lo, c0), max(hi, c1)
                self.contrast.range = (lo, hi)
                self.contrast.step = (hi - lo) / 1000 or 1e-3
                self.contrast.value = (c0, c1)
        finally:
            self._updating = False
        self._show_legend()

    def _filters_changed(self) -> None:
        """Filters changed or new data arrived (a level change may add or drop features):
        refresh the feature list and the legend."""
        if self.layer is None:
            return
        if self.spec is None and colour_spec_of(self.layer) is not None:
            # the layer was coloured after it was selected (a layer a level added takes
            # the store's colour choice on its first refresh): show that choice
            self._target_changed()
            return
        self._updating = True
        try:
            self._fill_features()
        finally:
            self._updating = False
        if self.spec is not None and self.spec.categorical:
            # categories seen only in loaded rows (vertex attributes): values the new rows
            # bring join the legend in new colours instead of the missing grey
            wider = self.spec.with_values(self._values(self.spec.feature))
            if wider is not self.spec:
                self._apply(wider)
                return
        if self.spec is not None:
            self._show_legend()
        else:  # e.g. "(default)" reloaded the layers: their default colour_by is back
            self.legend.setText(default_legend_html(self.layer))

    def _show_legend(self) -> None:
        spec, layer = self.spec, self.layer
        if spec is None or layer is None:
            return
        missing = None if self._drawn_somewhere(spec.feature) else self._level()
        table = self.session.table if self.session is not None else None
        several = spec.feature == GROUP_ID and table is not None and table.groups_overlap()
        self.legend.setText(
            legend_html(
                spec,
                self._counts(spec),
                object_noun(layer) if OBJECT_ID in layer.features else _rows_noun(layer),
                missing_at=missing,
                several_groups=several,
                unknown_objects=greys_unknown_objects(layer, spec.feature),
            )
        )

    def _drawn_somewhere(self, feature: str) -> bool:
        """Whether a layer holding data at this level has ``feature`` (the selected layer,
        else, with "all layers", any layer of the store: a level may be drawn by another
        layer kind, e.g. a mesh level without faces as points)."""
        layers = [self.layer]
        if self.all_layers.value and self.target is not None:
            layers = [lay for lay in self.target.layers if len(lay.features)] or layers
        return any(feature in colourable_features(lay) for lay in layers)

    def _counts(self, spec: ColourSpec) -> dict:
        """``{category: objects loaded}`` of the selected layer (rows when it has no object
        ids; shown rows of Points)."""
        layer = self.layer
        if layer is None or spec.feature not in colourable_features(layer):
            return {}
        if OBJECT_ID in layer.features:
            # the target's other layers of the same objects too (a skeleton's nodes hold
            # its roots, which no edge row does)
            others = [
                lay
                for lay in (self.target.layers if self.target is not None else [])
                if lay is not layer
                and OBJECT_ID in lay.features
                and spec.feature in colourable_features(lay)
            ]
            return object_counts(
                layer, spec, _shown(layer), also=[(lay, _shown(lay)) for lay in others]
            )
        shown = _shown(layer)
        values = feature_values(layer, spec.feature)
        return value_counts(values if shown is None else values[shown])


def _shown(layer: Layer) -> np.ndarray | None:
    """The rows of ``layer`` a legend counts: a Points layer's shown ones, else all."""
    return np.asarray(layer.shown, bool) if layer_kind(layer) == "points" else None


def _rows_noun(layer: Layer) -> str:
    kind = layer_kind(layer) if layer is not None else ""
    return {"points": "points", "vectors": "segments", "shapes": "shapes"}.get(kind, "vertices")


def _hex(rgba: Sequence[float]) -> str:
    return "#{:02x}{:02x}{:02x}".format(*(int(round(255 * c)) for c in rgba[:3]))


#: the legends' swatch of vertices whose object is not recorded (``OBJECT_UNKNOWN``), in
#: the colour they are drawn in by default and by object-level features
#: (:func:`~napari_zarr_vectors.napari.colour.live.greys_unknown_objects`)
UNKNOWN_SWATCH = "object unknown (several objects share these vertices' chunk fragment)"
UNKNOWN_ROW = f"<span style='color:{_hex(MISSING_COLOUR)}'>■</span> {UNKNOWN_SWATCH}"


def default_legend_html(layer: Layer | None) -> str:
    """The legend of a default colouring by object id (:func:`categorical_rgba`): one
    swatch per loaded object, labelled by its id; empty for other default colourings."""
    meta = meta_of(layer) or {}
    if layer is None or meta.get("colour_by") != OBJECT_ID or OBJECT_ID not in layer.features:
        return ""
    every = distinct(layer.features[OBJECT_ID].to_numpy())
    ids = every[every != OBJECT_UNKNOWN]
    head = (
        f"<b>object id</b> (default): each of the {counted(len(ids), object_noun(layer))} loaded "
        "in its own colour"
    )
    rows = [
        f"<span style='color:{_hex(rgba)}'>■</span> {int(i)}"
        for i, rgba in zip(ids[:LEGEND_MAX], categorical_rgba(ids[:LEGEND_MAX]), strict=True)
    ]
    if len(ids) > LEGEND_MAX:
        rows.append(f"… and {len(ids) - LEGEND_MAX:,} more")
    if len(ids) < len(every):  # vertices whose object the store does not record
        rows.append(UNKNOWN_ROW)
    return "<br>".join([head, *rows])


def legend_html(
    spec: ColourSpec,
    counts: dict | None = None,
    noun: str = "rows",
    *,
    missing_at: int | None = None,
    several_groups: bool = False,
    unknown_objects: bool = False,
) -> str:
    """A legend: colour swatches and labels (categories) or the range (continuous).

    ``missing_at``: the level shown does not store the attribute (the layers are drawn in
    the fallback grey until a level that stores it is shown). ``several_groups``: some
    objects are in several groups (the legend states the colouring rule).
    ``unknown_objects``: vertices whose object is not recorded are drawn in the missing
    grey (:data:`UNKNOWN_ROW` says so)."""
    if missing_at is not None:
        grey = _hex(FALLBACK_COLOUR)
        return (
            f"<b>{display_name(spec.feature)}</b>: not stored at level {missing_at}. Drawn in "
            f"<span style='color:{grey}'>■</span> grey instead; its colours"
            f"{'' if spec.categorical else ' and contrast'} return at a level that stores it."
        )
    if spec.feature.endswith(DIRECTION):
        return f"<b>{DIRECTION}</b>: {DIRECTION_LEGEND}"
    unknown = f"<br>{UNKNOWN_ROW}" if unknown_objects else ""
    if not spec.categorical:
        lo, hi = spec.contrast_limits or (0.0, 1.0)
        return (
            f"<b>{bar_label(spec.feature)}</b>: {spec.colormap}, "
            f"{format_value(lo)} … {format_value(hi)}{unknown}"
        )
    entries = spec.legend(counts)
    rows = []
    for label, rgba, n in entries[:LEGEND_MAX]:
        count = f" <small>({counted(n, noun)} loaded)</small>" if counts else ""
        rows.append(f"<span style='color:{_hex(rgba)}'>■</span> {label}{count}")
    more = len(entries) - LEGEND_MAX
    if more > 0:
        rows.append(f"… and {more:,} more")
    if several_groups:
        rows.append(f"<small>{SEVERAL_GROUPS}</small>")
    return f"<b>{display_name(spec.feature)}</b><br>" + "<br>".join(rows) + unknown
