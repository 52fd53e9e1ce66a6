"""Store panel: what the selected layer's store holds.

On top, the view controls (:mod:`.view_controls`): Detail (the vertex budget), what is
shown, the 2-D slab. Below: geometry type, axes and units, bounds, levels (chunk and bin
shapes, vertex and object counts), vertex / object / group attribute names and dtypes,
groups. Metadata shows at once;
per-level object counts need each level's object index and are read off the UI thread.
"""

from __future__ import annotations

import html
from functools import partial
from typing import TYPE_CHECKING, Any

from qtpy.QtCore import Qt
from qtpy.QtWidgets import QCheckBox, QLabel, QScrollArea

from napari_zarr_vectors.napari.browse.store_summary import StoreSummary, store_summary
from napari_zarr_vectors.napari.browse.targets import open_store_of
from napari_zarr_vectors.napari.conventions import meta_of
from napari_zarr_vectors.napari.layerdata.placement import Placement, show_stored_space
from napari_zarr_vectors.napari.npe2.opening import open_in_viewer
from napari_zarr_vectors.napari.tasks import LoadJob, run_task
from napari_zarr_vectors.napari.values import format_value
from napari_zarr_vectors.napari.widgets._browse_base import ZVBrowseWidget
from napari_zarr_vectors.napari.widgets.view_controls import ViewControls

if TYPE_CHECKING:
    from napari.layers import Layer

    from napari import Viewer
    from napari_zarr_vectors.format.api import GeometryStore


class StorePanel(ZVBrowseWidget):
    """Dock widget: a summary of the selected layer's store."""

    accept_isolated = True

    def __init__(self, napari_viewer: Viewer) -> None:
        super().__init__(napari_viewer)
        # custom Qt: the panel has no controls, only a scrollable rich-text table, which
        # magicgui has no widget for
        self.body = QLabel()
        self.body.setTextFormat(Qt.TextFormat.RichText)
        self.body.setWordWrap(True)
        self.body.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.body.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.view_controls = ViewControls(self.viewer)
        self.layout().addWidget(self.view_controls)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.body)
        self.layout().addWidget(scroll)
        #: shown for a store with a world placement (crs, coordinate_offset)
        self.stored_space = QCheckBox("Show stored coordinates (not the world placement)")
        self.stored_space.setToolTip(
            "The store's crs places its positions in the world (e.g. TrackVis voxmm -> RAS mm); "
            "check to show them as stored instead."
        )
        self.stored_space.setVisible(False)
        self.stored_space.toggled.connect(self._stored_space_toggled)
        self.layout().addWidget(self.stored_space)
        self.summary: StoreSummary | None = None
        self._worker: LoadJob | None = None
        self._on_active()

    def _target_changed(self) -> None:
        self.view_controls.set_target(self.target)
        if self.layer is None:
            self.summary = None
            self.body.setText("")
            return
        store = self.store if self.target is not None else open_store_of(self.layer)
        assert store is not None  # a target: its store
        placed = Placement.of(store, stored_space=False).affine is not None
        self.stored_space.blockSignals(True)
        self.stored_space.setChecked(placed and Placement.of(store).stored_space)
        self.stored_space.blockSignals(False)
        self.stored_space.setVisible(placed)
        self.summary = store_summary(store, counts=False)
        self.body.setText(summary_html(self.summary, counting=True))
        self._count(store, self.layer)

    def _count(self, store: GeometryStore, layer: Layer) -> None:
        """Read per-level object counts and groups in the background, then show them."""
        if self._worker is not None:
            self._worker.quit()
        self._worker = run_task(
            partial(store_summary, store, counts=True),
            on_result=partial(self._counted, layer=layer),
        )

    def _counted(self, summary: StoreSummary, layer: Layer) -> None:
        if layer is not self.layer:
            return
        self.summary = summary
        self.body.setText(summary_html(summary))
        self._worker = None

    def _filters_changed(self) -> None:
        pass

    def _stored_space_toggled(self, on: bool) -> None:
        """Show the store in its stored space or in the world: its layers (data, bounds
        box, Pyramid QA overlays) are opened again, with level of detail, with or without
        the placement (a placement that permutes axes also orders the layer data, so the
        layers cannot just drop their affine)."""
        meta = meta_of(self.layer)
        if meta is None:
            return
        path: Any = meta.get("path")  # its store's
        show_stored_space(path, on)
        for layer in list(self.viewer.layers):
            if (meta_of(layer) or {}).get("path") == path:
                self.viewer.layers.remove(layer)
        target = open_in_viewer(self.viewer, path)
        if target.layers:
            self.viewer.layers.selection.active = target.layers[0]


def summary_html(s: StoreSummary, counting: bool = False) -> str:
    """The panel text (rich text)."""
    esc = html.escape
    axes = ", ".join(
        f"{esc(a)} ({esc(u)})" if u else esc(a) for a, u in zip(s.axes, s.units, strict=False)
    )
    lo, hi = s.bounds
    bounds = ", ".join(
        f"{esc(a)} {format_value(a0)} … {format_value(a1)}"
        for a, a0, a1 in zip(s.axes, lo, hi, strict=False)
    )
    rows = [
        f"<b>{esc(s.name)}</b> — {esc(s.geometry_type)}, ZV {esc(s.zv_version)}",
        f"<small>{esc(s.path)}</small>",
        f"<b>Axes:</b> {axes}",
        f"<b>Bounds:</b> {bounds}",
    ]
    if s.placement:
        rows.append(f"<b>World placement:</b> {esc(s.placement)}")
    pending = "…" if counting else "—"
    level_rows = "".join(
        "<tr>"
        f"<td>{lv.index}</td>"
        f"<td>{_shape(lv.chunk_shape)}</td>"
        f"<td>{_shape(lv.bin_shape)}</td>"
        f"<td align='right'>{'—' if lv.vertex_count is None else f'{lv.vertex_count:,}'}</td>"
        f"<td align='right'>{pending if lv.object_count is None else f'{lv.object_count:,}'}</td>"
        "</tr>"
        for lv in s.levels
    )
    rows.append(
        "<b>Levels</b><table cellspacing='0' cellpadding='2'>"
        "<tr><th>level</th><th>chunk</th><th>bin</th><th>vertices</th><th>objects</th></tr>"
        f"{level_rows}</table>"
    )
    rows.append("<b>Vertex attributes:</b> " + _attrs(s.vertex_attributes, "none"))
    if counting:
        rows.append("<b>Objects:</b> counting…")
    elif not s.n_objects:
        rows.append("<b>Objects:</b> this store has no objects")
    else:
        rows.append(f"<b>Objects:</b> {s.n_objects:,}")
    if s.objects_unknown:
        rows.append(f"<i>{esc(s.objects_unknown)}</i>")
    rows.append(
        "<b>Object attributes:</b> "
        + _attrs(s.object_attributes, "this store has no object attributes")
    )
    if counting:
        rows.append("<b>Groups:</b> counting…")
    elif not s.groups:
        rows.append("<b>Groups:</b> this store has no groups")
    else:
        items = "".join(
            f"<li>{esc(label)} (id {g}): {n:,} objects</li>" for g, label, n in s.groups
        )
        rows.append(f"<b>Groups:</b> {len(s.groups)}<ul style='margin:0'>{items}</ul>")
        rows.append("<b>Group attributes:</b> " + _attrs(s.group_attributes, "none"))
    return "<br>".join(rows)


def _shape(values: tuple[float, ...]) -> str:
    return " × ".join(format_value(v) for v in values)


def _attrs(pairs: tuple[tuple[str, str], ...], empty: str) -> str:
    if not pairs:
        return empty
    return ", ".join(f"{html.escape(n)} <i>({html.escape(d)})</i>" for n, d in pairs)
