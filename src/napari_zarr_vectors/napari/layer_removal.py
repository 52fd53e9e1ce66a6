"""Removing layers from a viewer without napari's per-layer stall: :func:`remove_layers`.

napari (0.9) runs a full garbage collection of the process for every layer removed from a
viewer (``VispyCanvas._clean_and_update_scenegraph``), a guard against a Windows OpenGL
driver bug. With a few hundred thousand live objects that takes 0.1-0.2 s on the UI thread
per layer. :func:`remove_layers` removes its layers in one batch (one scene-graph update)
and, except on Windows, with the objects that existed before frozen (``gc.freeze``) so that
the collection napari runs only looks at the new ones; the removed layers' objects are
unfrozen at once and freed by Python's next collection as usual.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterable
from typing import Any


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
