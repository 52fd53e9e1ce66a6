"""Helpers shared by the viewer tests (make_napari_viewer, Qt under Xvfb): opening a fixture
store with level of detail and waiting for its loads, docking the plugin's widgets, napari's
hover status and Pick at a drawn vertex, the colour bars on the canvas."""

from __future__ import annotations

import numpy as np
import pytest
from _zv_napari import DATA, layer_colours

from napari_zarr_vectors.napari import controller_for, open_in_viewer
from napari_zarr_vectors.napari.browse.pick import pick_at
from napari_zarr_vectors.napari.browse.targets import StaticTarget
from napari_zarr_vectors.napari.colour.live import feature_values
from napari_zarr_vectors.napari.layerdata.placement import layer_world_positions
from napari_zarr_vectors.napari.lod.viewer_layers import next_turn
from napari_zarr_vectors.napari.npe2.reader import PLUGIN_NAME

# --------------------------------------------------------------------------------------------
# opening and waiting
# --------------------------------------------------------------------------------------------


def a_turn(qtbot, timeout: int = 5_000) -> None:
    """Wait for a later turn of the event loop: the plugin's work posted for the next turn
    before this call (:func:`next_turn`: a store's first view, a released frame, the QA
    overlays' redraw) has run, and Qt's posted events (layouts, paints) with it."""
    ran: list[bool] = []
    next_turn(lambda: ran.append(True))
    qtbot.waitUntil(lambda: bool(ran), timeout=timeout)


def open_zv(viewer, qtbot, version: str, name: str, **options):
    """Open a fixture store with level of detail; returns its browse target once loaded."""
    path = DATA / version / f"{name}.zarrvectors"
    target = open_in_viewer(viewer, path, first_view=False, **options)
    # a 3-D view of the whole store: every chunk is in view (a 2-D view loads one slab)
    viewer.dims.ndisplay = 3
    viewer.reset_view()
    settle(qtbot, target)
    viewer.layers.selection.active = target.layers[0]
    return target


def settle(qtbot, target, timeout: int = 10_000) -> None:
    """Wait until the target has no pending or running refresh."""
    if isinstance(target, StaticTarget):
        return
    qtbot.waitUntil(lambda: not target.is_loading, timeout=timeout)


def dropped(viewer, qtbot, path, timeout: int = 30_000):
    """Open ``path`` as a drop does and wait for the first picture to settle."""
    layers = viewer.open(str(path), plugin=PLUGIN_NAME)
    c = controller_for(layers[-1])
    assert c is not None
    a_turn(qtbot)  # the first view is set up in the next event-loop turn
    qtbot.waitUntil(lambda: not c.is_loading, timeout=timeout)
    return c


def opened_3d(viewer, qtbot, path, kind: str | None):
    """The whole store at level 0 in a 3-D view (every object loaded); returns the
    controller and its ``kind`` layer (made the active layer; ``None``: no layer)."""
    c = open_in_viewer(viewer, path, first_view=False, lock_level=0, vertex_budget=500_000)
    viewer.dims.ndisplay = 3
    viewer.reset_view()
    settle(qtbot, c, timeout=30_000)
    if kind is None:
        return c, None
    layer = next(lyr for lyr in c.layers if type(lyr).__name__ == kind)
    viewer.layers.selection.active = layer
    return c, layer


# --------------------------------------------------------------------------------------------
# docks
# --------------------------------------------------------------------------------------------

DOCK_NAMES = {
    "StorePanel": "Store panel",
    "GroupFilterWidget": "Group filter",
    "AttributeFilterWidget": "Object attribute filter",
    "ColourByWidget": "Colour by",
    "PickWidget": "Pick and isolate",
}


def dock(viewer, widget_class):
    widget = widget_class(viewer)
    name = DOCK_NAMES.get(widget_class.__name__, widget_class.__name__)
    viewer.window.add_dock_widget(widget, area="right", name=name)
    return widget


# --------------------------------------------------------------------------------------------
# hover, pick, colours
# --------------------------------------------------------------------------------------------


def hover(viewer, layer, world: np.ndarray) -> dict:
    """napari's status for ``layer`` with the cursor at ``world`` (viewer axis order), asked
    the way the viewer asks on a mouse move."""
    return layer.get_status(
        world,
        view_direction=np.asarray(viewer.scene.camera.view_direction),
        dims_displayed=list(viewer.dims.displayed),
        world=True,
    )


def cursor_at_row(viewer, layer, row: int) -> np.ndarray:
    """A world position (viewer axes) on the drawn vertex of feature row ``row``; the
    non-spatial leading axes (Tracks' time) at the viewer's current point."""
    pts, rows = layer_world_positions(layer)
    vertex = pts[np.flatnonzero(rows == row)[0]]
    position = np.asarray(viewer.dims.point, dtype=np.float64).copy()
    position[-len(vertex) :] = vertex
    return position


def pick_in_3d(viewer, layer, position: np.ndarray):
    """What Pick picks on ``layer`` at ``position`` in a 3-D view (along the camera ray)."""
    return pick_at(
        [layer],
        position,
        displayed=list(viewer.dims.displayed),
        zoom=viewer.scene.camera.zoom,
        view_direction=np.asarray(viewer.scene.camera.view_direction),
    )


def assert_one_colour_per_category(layer, feature, spec):
    values = feature_values(layer, feature)
    colours = np.round(layer_colours(layer), 5)
    assert len(colours) == len(values)
    seen = {}
    for v in np.unique(values.astype(str) if values.dtype.kind == "O" else values):
        mask = (values.astype(str) if values.dtype.kind == "O" else values) == v
        unique = np.unique(colours[mask], axis=0)
        assert len(unique) == 1, (feature, v, unique)
        seen[v] = tuple(unique[0])
    assert len(set(seen.values())) == len(seen), "two categories share a colour"
    mapping = {str(k): tuple(np.round(c, 5)) for k, c in spec.mapping().items()}
    for v, c in seen.items():
        assert mapping[str(v)] == pytest.approx(c, abs=1e-4)


def drawn_on_canvas(viewer, layer) -> bool:
    """Whether the canvas holds a visible colour-bar visual for ``layer``."""
    visuals = viewer.window._qt_viewer.canvas._layer_overlay_to_visual.get(layer, {})
    return any(
        type(v).__name__ == "VispyColorBarOverlay" and v.node.visible for v in visuals.values()
    )
