"""Dock widgets and layer actions of the plugin (Qt; loaded only when napari asks for them).

Each widget lives in its own module (``pyramid``: *Pyramid QA*, ...); nothing is imported
eagerly, so one widget's imports never affect another's.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PyramidQAWidget"]


def __getattr__(name: str) -> Any:
    if name == "PyramidQAWidget":
        from napari_zarr_vectors.napari.widgets import pyramid

        return getattr(pyramid, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
