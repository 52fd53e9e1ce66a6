"""The Store panel's view controls: how much of the data is drawn, and the 2-D slab.

* **Detail** -- the vertex budget of every open store for this session
  (:func:`..settings.configure`): *Auto* adapts to this machine (small stores are always
  whole, :func:`..settings.store_budget`), or a fixed number of vertices up to 2,000,000
  (napari's own cost of drawing more freezes the window for seconds on each update). Open
  stores reload at once.
* **Shown** -- what the selected store's layers hold: exact counts ("all 5 skeletons",
  "1,105 of ~200,320 streamlines").
* **2-D slab** -- in a 2-D view, the thickness of the slab drawn around the slice, in the
  store's units (*whole depth*: the projection of everything, the default of a store opened
  into an empty viewer, :mod:`..first_view`), and where the slice is, in store units.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from qtpy.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QWidget,
)

from napari_zarr_vectors.napari.lod import settings
from napari_zarr_vectors.napari.lod.controller import item_label, open_controllers
from napari_zarr_vectors.napari.npe2.first_view import set_slab, slab_thickness, space_axes
from napari_zarr_vectors.napari.values import format_value

if TYPE_CHECKING:
    from napari import Viewer
    from napari_zarr_vectors.format.api import GeometryStore
    from napari_zarr_vectors.napari.browse.targets import BrowseTarget

#: the Detail choices: (label, vertex budget; None = adaptive)
DETAIL_CHOICES: tuple[tuple[str, int | None], ...] = (
    ("Auto (adapts to this machine)", None),
    ("50,000 vertices", 50_000),
    ("100,000 vertices", 100_000),
    ("250,000 vertices", 250_000),
    ("500,000 vertices", 500_000),
    ("1,000,000 vertices", 1_000_000),
    ("2,000,000 vertices (slow without a GPU)", 2_000_000),
)


def set_detail(budget: int | None) -> None:
    """The session's vertex budget (``None``: adaptive), applied to every open store."""
    settings.configure(vertex_budget="auto" if budget is None else int(budget))
    for controller in open_controllers():
        controller.refresh(force=False)


class ViewControls(QWidget):
    """Detail, shown counts and the 2-D slab of the store a Store panel follows."""

    def __init__(self, viewer: Viewer, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.viewer = viewer
        self.target: BrowseTarget | None = None
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        self.detail = QComboBox()
        for label, budget in DETAIL_CHOICES:
            self.detail.addItem(label, budget)
        self.detail.setToolTip(
            "How many vertices the view may hold, for every open store. Auto keeps one "
            "screen update short on this machine and always shows small stores whole."
        )
        self._sync_detail()
        self.detail.currentIndexChanged.connect(self._detail_chosen)
        form.addRow("Detail:", self.detail)
        self.shown = QLabel("")
        self.shown.setWordWrap(True)
        form.addRow("Shown:", self.shown)
        row = QHBoxLayout()
        self.slab = QDoubleSpinBox()
        self.slab.setDecimals(3)
        self.slab.setRange(0.0, 1e12)
        self.slab.setKeyboardTracking(False)
        self.slab.setToolTip("Thickness of the slab a 2-D view draws around the slice")
        self.whole_depth = QCheckBox("whole depth")
        self.whole_depth.setToolTip("Draw everything along the sliced axes (a projection)")
        row.addWidget(self.slab, 1)
        row.addWidget(self.whole_depth)
        form.addRow("2-D slab:", row)
        self.slice = QLabel("")
        form.addRow("Slice:", self.slice)
        self.slab.valueChanged.connect(self._slab_chosen)
        self.whole_depth.toggled.connect(self._whole_depth_toggled)
        dims = viewer.dims.events
        for emitter in (dims.point, dims.ndisplay, dims.margin_left, dims.margin_right):
            emitter.connect(self._show_slab)

    # -- following a store ---------------------------------------------------------------
    def set_target(self, target: BrowseTarget | None) -> None:
        """Follow ``target`` (a level-of-detail controller; anything else shows no counts)."""
        old = getattr(getattr(self.target, "events", None), "refreshed", None)
        if old is not None:
            old.disconnect(self._show_counts)
        self.target = target
        signal = getattr(getattr(target, "events", None), "refreshed", None)
        if signal is not None:
            signal.connect(self._show_counts)
        self._sync_detail()
        self._show_counts()
        self._show_slab()

    def _show_counts(self) -> None:
        self.shown.setText(shown_text(self.target))

    # -- detail ----------------------------------------------------------------------------
    def _sync_detail(self) -> None:
        budget = settings.get_settings().vertex_budget
        index = self.detail.findData(budget)
        if index < 0:  # a budget set elsewhere (configure, NZV_VERTEX_BUDGET)
            self.detail.addItem(f"{budget:,} vertices", budget)
            index = self.detail.count() - 1
        self.detail.blockSignals(True)
        self.detail.setCurrentIndex(index)
        self.detail.blockSignals(False)

    def _detail_chosen(self, index: int) -> None:
        set_detail(self.detail.itemData(index))

    # -- the 2-D slab ----------------------------------------------------------------------
    def _axes(self) -> list[int]:
        """The sliced space axes of the followed store (none in 3-D, or without a store)."""
        store = getattr(self.target, "store", None)
        if store is None:
            return []
        displayed = set(self.viewer.dims.displayed)
        return [a for a in space_axes(self.viewer, store) if a not in displayed]

    def _whole(self, axes: list[int]) -> bool:
        dims = self.viewer.dims
        return all(
            min(dims.margin_left[a], dims.margin_right[a])
            >= (dims.range[a][1] - dims.range[a][0]) - 1e-9
            for a in axes
        )

    def _show_slab(self, *_: object) -> None:
        axes = self._axes()
        enabled = bool(axes)
        for w in (self.slab, self.whole_depth):
            w.setEnabled(enabled)
        if not enabled:
            self.slice.setText("3-D view: no slab" if self.target is not None else "")
            return
        whole = self._whole(axes)
        for w, value in ((self.slab, slab_thickness(self.viewer, axes)), (self.whole_depth, whole)):
            w.blockSignals(True)
            if isinstance(w, QDoubleSpinBox):  # the slab
                w.setValue(value)
            else:
                w.setChecked(bool(value))
            w.blockSignals(False)
        self.slab.setEnabled(not whole)
        assert self.target is not None  # sliced axes: a followed store (_axes)
        self.slice.setText(slice_text(self.viewer, self.target.store, axes))

    def _slab_chosen(self, value: float) -> None:
        set_slab(self.viewer, self._axes(), float(value))

    def _whole_depth_toggled(self, on: bool) -> None:
        axes = self._axes()
        if on:
            set_slab(self.viewer, axes, None)
        else:  # a slab of one tenth of the depth around the slice
            rng = self.viewer.dims.range
            set_slab(self.viewer, axes, max((rng[a][1] - rng[a][0]) / 10 for a in axes))


def shown_text(target: BrowseTarget | None) -> str:
    """ "all 5 skeletons", "1 of 5 skeletons in view (...)" -- what the layers hold."""
    share = getattr(target, "view_share", None)
    if share is None or target is None:
        return ""

    label = item_label(target.store.geometry_type)
    part = share.describe(label)
    if part:
        return part
    if share.item_kind == "vertices" or not share.items_in_view:
        return f"all {share.vertices_shown:,} vertices in view"
    return f"all {share.items_in_view:,} {label} in view"


def slice_text(viewer: Viewer, store: GeometryStore, axes: list[int]) -> str:
    """``"z = 87.5 mm (slab 35 mm)"`` for each sliced axis, in store units."""
    dims = viewer.dims
    units = dict(zip(store.axes, getattr(store, "units", None) or (), strict=False))
    parts = []
    for a in axes:
        name = dims.axis_labels[a]
        unit = units.get(name) or ""
        unit = f" {unit}" if unit else ""
        parts.append(
            f"{name} = {format_value(dims.point[a])}{unit} "
            f"(slab {format_value(dims.thickness[a])}{unit})"
        )
    return "; ".join(parts)
