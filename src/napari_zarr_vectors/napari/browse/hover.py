"""Hover: napari's status bar names the object under the cursor on every layer the plugin
makes, and keeps the level line of level-of-detail layers in view.

napari computes the active layer's status (``Layer.get_status``) on every mouse move (on a
status thread in the Qt viewer). Out of the box it lists a Points row's features, gives a
Tracks layer's internal ``track_id`` (it numbers path pieces, not objects: hover said 324
where Pick said object 7556) and nothing for Vectors and Surface. :func:`install` extends
the status of every layer carrying ``metadata["zarr_vectors"]`` (through
:func:`._napari_compat.extend_status`, the one internal this needs):

* **coordinates**: ``x 76.50, y 116.60, z 89.69 mm: object 149 (hemisphere: right,
  length_mm: 37.5, group: left posterior inferior); fa: 0.41`` -- the cursor in the store's
  axis order, names and units (:func:`store_position_text`: napari's own ``[z, y, x]`` in
  napari order, with a leading ``0`` for the time axis Tracks layers add, is replaced), then
  the object id, the object's attributes and group names, then the rest of that row's
  features (vertex / edge attributes), all decoded as the store holds them (text, not the
  codes Tracks layers keep). The row is found exactly as the Pick widget finds it
  (:func:`.pick.pick_at`) and described by the same :func:`pick_fields`, so hover
  and Pick name the same object with the same values on Points, Tracks, Vectors, Shapes and
  Surface alike. napari's own columns (``track_id``) and the plugin's computed ones
  (``direction``, :func:`hidden_columns`) are left out.
* **layer name**: followed by the level line of the layer's controller
  (:meth:`.controller.ZVLayerController.summary`: level, chunks, vertices, what was left out).
  The controller also writes that line to ``viewer.status`` after each load, which the next
  mouse move replaces by the layer status: the line now stays in that status instead.

Layers get the extension when they enter a viewer the plugin watches
(:func:`.attach.hook_viewer`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from napari_zarr_vectors.format.missing import OBJECT_UNKNOWN
from napari_zarr_vectors.napari._napari_compat import extend_status, open_viewers
from napari_zarr_vectors.napari.browse.groups import group_labels
from napari_zarr_vectors.napari.browse.pick import Pick, pick_at, pick_slab
from napari_zarr_vectors.napari.browse.table import ObjectTable
from napari_zarr_vectors.napari.browse.targets import controller_of, object_table, target_for
from napari_zarr_vectors.napari.conventions import DIRECTION, GROUP_ID, GROUPS, OBJECT_ID, meta_of
from napari_zarr_vectors.napari.coords import to_store_order
from napari_zarr_vectors.napari.values import format_value

if TYPE_CHECKING:
    import numpy.typing as npt
    from napari.layers import Layer
    from napari.viewer import Viewer

#: feature columns hover and Pick never list: napari's own and the plugin's helpers
HIDDEN_FEATURES = frozenset({"track_id", "index", "box", "zv_highlight"})


def install(layer: Layer) -> bool:
    """Extend the status of ``layer`` when the plugin made it; returns whether it did."""
    if meta_of(layer) is None:
        return False
    extend_status(layer, hover_status)
    return True


def hover_status(
    layer: Layer, status: dict, position: npt.ArrayLike | None, query: Mapping[str, Any]
) -> dict:
    """``status`` (napari's dict for ``layer`` at ``position``) with the cursor in store
    coordinates and the object under it in ``coordinates``, and the level line after the
    layer name in ``layer_base``.

    ``query`` holds the other arguments of ``get_status`` (``view_direction``,
    ``dims_displayed``, ``world``)."""
    if not isinstance(status, dict):
        return status
    line = level_line(layer)
    if line and "layer_base" in status:
        status["layer_base"] = f"{status['layer_base']} · {line}"
    if position is None or "coords" not in status:
        return status
    world = np.asarray(position, dtype=np.float64)
    if not query.get("world", False):
        world = np.asarray(layer.data_to_world(world), dtype=np.float64)
    pick = pick_under_cursor(layer, world, {**query, "world": True})
    text = describe(layer, pick) if pick is not None else ""
    coords = store_position_text(layer, world) or status["coords"]
    status["coordinates"] = f"{coords}: {text}" if text else coords
    status["value"] = text
    return status


def store_position_text(layer: Layer, world: Sequence[float] | np.ndarray | None) -> str | None:
    """``x 76.50, y 116.60, z 89.69 mm``: a world position of ``layer`` (napari axis order;
    its last axes are the layer's) in the store's axis order, with the store's axis names
    and the layer's units as napari's dims sliders write them (``mm``). Axes the store lacks
    (the time axis Tracks layers add) are left out.
    ``None`` for layers without the plugin's axis metadata."""
    meta = meta_of(layer) or {}
    axes, order = meta.get("axes"), meta.get("napari_order")
    if world is None or not axes or order is None or len(order) != len(axes):
        return None
    world = np.asarray(world, dtype=np.float64).reshape(-1)
    if len(world) < len(axes):
        return None
    # the layer's store axes are the last ones; napari axis i is store column order[i]
    to_store = np.argsort(np.asarray(order, dtype=np.int64))
    values = to_store_order(world[None, -len(axes) :], order)[0]
    symbols = [_unit_symbol(u) for u in _layer_units(layer, len(axes))]
    symbols = [symbols[i] for i in to_store]
    parts = [f"{a} {v:.2f}" for a, v in zip(axes, values.tolist(), strict=True)]
    if len(set(symbols)) == 1:
        return ", ".join(parts) + (f" {symbols[0]}" if symbols[0] else "")
    return ", ".join(f"{p} {u}" if u else p for p, u in zip(parts, symbols, strict=True))


def _layer_units(layer: Layer, n: int) -> list[object]:
    """The units of the layer's last ``n`` axes (napari order; ``None`` where unknown)."""
    units = getattr(layer, "units", None)
    units = list(units) if units is not None else []
    return units[-n:] if len(units) >= n else [None] * n


def _unit_symbol(unit: object) -> str:
    """``mm`` for napari's pint unit ``millimeter`` (as the dims sliders write it), ``""``
    for pixels and unknown units."""
    if unit is None or str(unit) in ("pixel", "dimensionless", ""):
        return ""
    try:
        return f"{unit:~}"
    except (TypeError, ValueError):
        return str(unit)


def level_line(layer: Layer) -> str:
    """The level line of the controller driving ``layer`` ("" for static layers, whose name
    carries their level)."""
    controller = controller_of(layer)
    return "" if controller is None else controller.summary(named=False)


def pick_under_cursor(
    layer: Layer, position: Sequence[float] | np.ndarray, query: Mapping[str, Any]
) -> Pick | None:
    """The row of ``layer`` nearest the cursor (world ``position``, viewer axis order), with
    the tolerance and 2-D slab the Pick widget uses; ``None`` when nothing is near."""
    viewer = viewer_of(layer)
    if viewer is None:
        return None
    position = np.asarray(position, dtype=np.float64)
    if not query.get("world", False):
        position = np.asarray(layer.data_to_world(position), dtype=np.float64)
    displayed = query.get("dims_displayed")
    if displayed is None:
        displayed = list(viewer.dims.displayed)
    view_direction = query.get("view_direction") if len(displayed) == 3 else None
    slab = None if view_direction is not None else pick_slab(viewer, [layer])
    return pick_at(
        [layer],
        position,
        displayed=list(displayed),
        zoom=float(viewer.scene.camera.zoom),
        view_direction=view_direction,
        slab=slab,
    )


def viewer_of(layer: Layer) -> Viewer | None:
    """The open viewer holding ``layer`` (its controller's viewer when it has one)."""
    controller = controller_of(layer)
    if controller is not None and controller.viewer is not None:
        return controller.viewer
    return next((v for v in open_viewers() if any(x is layer for x in v.layers)), None)


def describe(layer: Layer, pick: Pick) -> str:
    """``object 149 (hemisphere: right, length_mm: 37.5, group: left posterior inferior);
    fa: 0.41`` for a picked row (:func:`pick_fields`): the object id, the object's
    attributes and groups, then the row's own features. Rows without an object id list
    their features only, after ``object unknown`` where the store does not record it
    (:data:`~napari_zarr_vectors.format.missing.OBJECT_UNKNOWN`)."""
    object_fields, own = pick_fields(pick, object_table_of(layer))
    own_text = [f"{k}: {format_value(v)}" for k, v in own]
    if pick.object_id is None:
        unknown = pick.features.get(OBJECT_ID) == OBJECT_UNKNOWN
        return "; ".join(["object unknown", *own_text] if unknown else own_text)
    text = f"object {pick.object_id}"
    if object_fields:
        text += f" ({', '.join(f'{k}: {format_value(v)}' for k, v in object_fields)})"
    return "; ".join([text, *own_text])


def pick_fields(
    pick: Pick, table: ObjectTable | None = None
) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]]]:
    """What hover and the Pick widget say about a pick, in the store's language:
    ``(object fields, row fields)`` as ``(name, value)`` pairs.

    Object fields: the object's attributes (from ``table``, the store's object table, when
    it knows the object; else the layer's object columns) and its groups by name
    (``group`` / ``groups``: :func:`.groups.group_labels`). Row fields: the row's own
    features (vertex / edge attributes). Text stored as codes (Tracks layers) is decoded,
    and napari's and the plugin's own columns (:func:`hidden_columns`, ``object_id``,
    ``group_id``, ``groups``) are left out."""
    meta = meta_of(pick.layer) or {}
    values = _decoded(pick.features, meta.get("categories") or {})
    hidden = hidden_columns(values) | {OBJECT_ID, GROUP_ID, GROUPS}
    object_columns = set(meta.get("object_columns") or ())
    own = [(k, v) for k, v in values.items() if k not in hidden and k not in object_columns]
    if pick.object_id is None:
        return [], own
    if table is not None and table.row_of(pick.object_id) is not None:
        attrs = list(table.attributes_of(pick.object_id).items())
        stored = set(table.attributes) | {f"object_{n}" for n in table.attributes}
        own = [(k, v) for k, v in own if k not in stored]
        labels = group_labels(table) if table.has_groups else {}
        groups = [labels[g] for g in table.group_of(pick.object_id)]
    else:
        attrs = [(k, v) for k, v in values.items() if k in object_columns and k not in hidden]
        gid: Any = values.get(GROUP_ID)  # a feature value: a number or NaN
        known = gid is not None and np.isfinite(gid) and int(gid) >= 0
        groups = [f"group {int(gid)}"] if known else []
    if groups:
        attrs.append(("group" if len(groups) == 1 else "groups", ", ".join(groups)))
    return attrs, own


def hidden_columns(features: Mapping[str, object]) -> frozenset[str]:
    """Columns of ``features`` hover and Pick do not list: :data:`HIDDEN_FEATURES` and the
    plugin's computed direction colour (``direction``; ``zv_direction`` when a store
    attribute is called ``direction``, which is then listed)."""
    computed = f"zv_{DIRECTION}" if f"zv_{DIRECTION}" in features else DIRECTION
    return HIDDEN_FEATURES | {computed}


def object_table_of(layer: Layer) -> ObjectTable | None:
    """The level-0 object table of the store ``layer`` shows (read once per open store), or
    ``None`` when there is no store to read it from."""
    viewer = viewer_of(layer)
    target = target_for(viewer, layer) if viewer is not None else None
    try:
        return None if target is None else object_table(target)
    except Exception:  # noqa: BLE001 - no readable store (e.g. a layer built in memory)
        return None


def _decoded(features: Mapping[str, object], categories: Mapping[str, list]) -> dict[str, Any]:
    """Feature values with string columns of Tracks layers (stored as integer codes, their
    categories in the layer metadata) decoded back to their strings."""
    out: dict[str, Any] = {}
    for name, value in features.items():
        cats = categories.get(name)
        if cats is not None and isinstance(value, int | np.integer) and 0 <= value < len(cats):
            value = cats[int(value)]
        out[str(name)] = value
    return out
