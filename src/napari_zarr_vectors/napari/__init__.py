"""napari adapter for Zarr Vectors stores: the npe2 reader, layer mapping, sample data and
view-driven level of detail.

A thin layer over the napari-free format core (:mod:`napari_zarr_vectors.format`): it never
parses store bytes itself.
"""

from .controller import ZVLayerController, controller_for
from .opening import open_in_viewer
from .reader import napari_get_reader, read_zarr_vectors, register_reader_preference
from .settings import configure

__all__ = [
    "ZVLayerController",
    "configure",
    "controller_for",
    "napari_get_reader",
    "open_in_viewer",
    "read_zarr_vectors",
    "register_reader_preference",
]
