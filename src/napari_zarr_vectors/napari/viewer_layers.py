"""Making and removing the plugin's layers without napari's avoidable UI-thread costs.

* :func:`make_layer` is ``Layer.create`` with a cheaper layer-list thumbnail for Vectors
  layers: napari draws that thumbnail from up to 1,024 vectors with a Python loop per pixel
  of each (8-13 ms per update for chunk outlines, three or four updates while a layer is
  added); ours are drawn from :data:`THUMBNAIL_VECTORS`.
* :func:`remove_layers`: napari (0.9) runs a full garbage collection of the process for
  every layer removed from a viewer (``VispyCanvas._clean_and_update_scenegraph``), a guard
  against a Windows OpenGL driver bug. With a few hundred thousand live objects that takes
  0.1-0.2 s on the UI thread per layer. :func:`remove_layers` removes its layers in one
  batch (one scene-graph update) and, except on Windows, with the objects that existed
  before frozen (``gc.freeze``) so that the collection napari runs only looks at the new
  ones; the removed layers' objects are unfrozen at once and freed by Python's next
  collection as usual.
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Iterable
from typing import Any

#: vectors a Vectors layer's layer-list thumbnail is drawn from (napari: 1,024)
THUMBNAIL_VECTORS = 64

_THUMBNAIL = "_max_vectors_thumbnail"  # napari's (private) knob
_THUMBNAIL_LOCK = threading.Lock()  # layers are also constructed on worker threads


def make_layer(data: Any, kwargs: dict[str, Any], kind: str) -> Any:
    """``napari.layers.Layer.create(data, kwargs, kind)``, a Vectors layer with
    its thumbnail drawn from at most :data:`THUMBNAIL_VECTORS` vectors."""
    from napari.layers import Layer, Vectors

    if kind != "vectors" or not isinstance(getattr(Vectors, _THUMBNAIL, None), int):
        return Layer.create(data, kwargs, kind)
    with _THUMBNAIL_LOCK:  # the class default, for the thumbnails drawn while constructing
        default = getattr(Vectors, _THUMBNAIL)
        setattr(Vectors, _THUMBNAIL, min(THUMBNAIL_VECTORS, default))
        try:
            layer = Layer.create(data, kwargs, kind)
        finally:
            setattr(Vectors, _THUMBNAIL, default)
    setattr(layer, _THUMBNAIL, min(THUMBNAIL_VECTORS, default))
    return layer


def remove_layers(viewer: Any, layers: Iterable[Any]) -> None:
    """Remove those of ``layers`` that ``viewer`` holds (each once; ``None`` and absent
    layers are skipped), in one batch."""
    present = list({id(x): x for x in layers if x is not None and x in viewer.layers}.values())
    if not present:
        return
    freeze = sys.platform != "win32"
    if freeze:
        gc.freeze()
    try:
        with viewer.layers.batched_update():
            for layer in present:
                viewer.layers.remove(layer)
    finally:
        if freeze:
            gc.unfreeze()
