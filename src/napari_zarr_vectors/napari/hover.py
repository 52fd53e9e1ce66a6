"""Hover: napari's status bar names the object under the cursor on every layer the plugin
makes, and keeps the level line of level-of-detail layers in view.

napari computes the active layer's status (``Layer.get_status``) on every mouse move (on a
status thread in the Qt viewer). Out of the box it lists a Points row's features, gives a
Tracks layer's internal ``track_id`` (it numbers path pieces, not objects: hover said 324
where Pick said object 7556) and nothing for Vectors and Surface. :func:`install` extends
the status of every layer carrying ``metadata["zarr_vectors"]`` (through
:func:`._napari_compat.extend_status`, the one internal this needs):

* **coordinates**: ``[z y x]: object 7556 (length: 42.1, group_id: 2); fa: 0.41`` -- the
  object id and object attributes of the vertex nearest the cursor within
  :data:`.browse_layers.PICK_PIXELS` screen pixels, then the rest of that row's features
  (vertex / edge attributes). The row is found exactly as the Pick widget finds it
  (:func:`.browse_layers.pick_at`), so hover and Pick name the same object on Points,
  Tracks, Vectors, Shapes and Surface alike. The plugin's computed colour columns
  (``direction``) and napari's own (``track_id``) are left out.
* **layer name**: followed by the level line of the layer's controller
  (:meth:`.controller.ZVLayerController.summary`: level, chunks, vertices, what was left out).
  The controller also writes that line to ``viewer.status`` after each load, which the next
  mouse move replaces by the layer status: the line now stays in that status instead.

Layers get the extension when they enter a viewer the plugin watches
(:func:`.session.hook_viewer`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ._napari_compat import extend_status, open_viewers
from .browse import format_value
from .browse_layers import Pick, controller_of, pick_at, pick_slab, zv_meta
from .layers import DIRECTION, GROUP_ID, GROUPS, OBJECT_ID

#: feature columns hover does not list: napari's own and the plugin's colour helpers
HIDDEN_FEATURES = frozenset(
    {"track_id", "index", "box", "zv_highlight", DIRECTION, f"zv_{DIRECTION}"}
)

#: object-level columns listed right after the object id, in this order
_OBJECT_FIRST = (GROUP_ID, GROUPS)


def install(layer: Any) -> bool:
    """Extend the status of ``layer`` when the plugin made it; returns whether it did."""
    if zv_meta(layer) is None:
        return False
    extend_status(layer, hover_status)
    return True


def hover_status(layer: Any, status: dict, position: Any, query: Mapping[str, Any]) -> dict:
    """``status`` (napari's dict for ``layer`` at ``position``) with the object under the
    cursor in ``coordinates`` and the level line after the layer name in ``layer_base``.

    ``query`` holds the other arguments of ``get_status`` (``view_direction``,
    ``dims_displayed``, ``world``)."""
    if not isinstance(status, dict):
        return status
    line = level_line(layer)
    if line and "layer_base" in status:
        status["layer_base"] = f"{status['layer_base']} · {line}"
    if position is None or "coords" not in status:
        return status
    pick = pick_under_cursor(layer, position, query)
    text = describe(layer, pick) if pick is not None else ""
    coords = status["coords"]
    status["coordinates"] = f"{coords}: {text}" if text else coords
    status["value"] = text
    return status


def level_line(layer: Any) -> str:
    """The level line of the controller driving ``layer`` ("" for static layers, whose name
    carries their level)."""
    controller = controller_of(layer)
    return "" if controller is None else controller.summary(named=False)


def pick_under_cursor(layer: Any, position: Any, query: Mapping[str, Any]) -> Pick | None:
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


def viewer_of(layer: Any) -> Any | None:
    """The open viewer holding ``layer`` (its controller's viewer when it has one)."""
    controller = controller_of(layer)
    if controller is not None and controller.viewer is not None:
        return controller.viewer
    return next((v for v in open_viewers() if any(x is layer for x in v.layers)), None)


def describe(layer: Any, pick: Pick) -> str:
    """``object 7556 (length: 42.1, group_id: 2); fa: 0.41`` for a picked row: the object id,
    the object's attributes (store object attributes and groups), then the row's own
    features. Rows without an object id list their features only."""
    meta = zv_meta(layer) or {}
    values = _decoded(pick.features, meta.get("categories") or {})
    object_columns = set(meta.get("object_columns") or ()) | set(_OBJECT_FIRST)
    shown = {k: v for k, v in values.items() if k not in HIDDEN_FEATURES and k != OBJECT_ID}
    own = [f"{k}: {format_value(v)}" for k, v in shown.items() if k not in object_columns]
    if pick.object_id is None:
        return "; ".join(own)
    first = [k for k in _OBJECT_FIRST if k in shown]
    rest = [k for k in shown if k in object_columns and k not in first]
    attrs = [f"{k}: {format_value(shown[k])}" for k in [*rest, *first]]
    text = f"object {pick.object_id}"
    if attrs:
        text += f" ({', '.join(attrs)})"
    return "; ".join([text, *own])


def _decoded(features: Mapping[str, Any], categories: Mapping[str, list]) -> dict[str, Any]:
    """Feature values with string columns of Tracks layers (stored as integer codes, their
    categories in the layer metadata) decoded back to their strings."""
    out: dict[str, Any] = {}
    for name, value in features.items():
        cats = categories.get(name)
        if cats is not None and isinstance(value, int | np.integer) and 0 <= value < len(cats):
            value = cats[int(value)]
        out[str(name)] = value
    return out
