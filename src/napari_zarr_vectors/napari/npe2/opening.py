"""Opening a store in a viewer from a script: :func:`open_in_viewer`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from napari_zarr_vectors.napari.conventions import meta_of
from napari_zarr_vectors.napari.lod.controller import ZVLayerController, controller_for
from napari_zarr_vectors.napari.lod.viewer_layers import make_layer
from napari_zarr_vectors.napari.npe2.attach import hook_viewer, keep_view
from napari_zarr_vectors.napari.npe2.reader import read_zarr_vectors

if TYPE_CHECKING:
    from napari import Viewer


def open_in_viewer(viewer: Viewer, path: Any, **options: Any) -> ZVLayerController:
    """Open a ZV store in ``viewer`` with level of detail; returns its controller.

    ``options``: ``vertex_budget`` (this store's budget), ``lock_level`` (start locked),
    ``object_filter`` (allowed object ids), ``first_view`` (default ``True``: on a viewer
    with no layers, show the whole store first, as a drop does, :mod:`.first_view`: 3-D
    for three space axes, a 2-D slab of the whole depth, the camera fitted; a viewer that
    holds layers keeps its view; ``False``: the caller's view is always kept).
    """
    budget = options.pop("vertex_budget", None)
    first_view = bool(options.pop("first_view", True))
    locked = options.pop("lock_level", None)
    allowed = options.pop("object_filter", None)
    if options:
        raise TypeError(f"unknown options: {sorted(options)}")
    hook_viewer(viewer)
    layer_data = read_zarr_vectors(path, vertex_budget=budget)
    if not first_view:
        for token in {(meta_of(t[1]) or {}).get("session") for t in layer_data if len(t) == 3}:
            if token is not None:  # (no session is kept under None)
                keep_view(token)
    added = []
    for data, kwargs, kind in (t for t in layer_data if len(t) == 3):
        layer = make_layer(data, kwargs, kind)
        viewer.add_layer(layer)
        added.append(layer)
    controller = next((c for c in map(controller_for, added) if c is not None), None)
    if controller is None:
        raise RuntimeError(f"no layers to manage for {path}")
    if locked is not None or allowed is not None:
        controller.set_view(lock_level=locked, object_filter=allowed)
    return controller
