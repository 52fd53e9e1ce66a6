"""napari adapter for Zarr Vectors stores: the npe2 reader, layer mapping, sample data and
view-driven level of detail.

A thin layer over the napari-free format core (:mod:`napari_zarr_vectors.format`): it never
parses store bytes itself.
"""

from napari_zarr_vectors.napari.lod.controller import ZVLayerController, controller_for
from napari_zarr_vectors.napari.lod.settings import configure
from napari_zarr_vectors.napari.npe2.opening import open_in_viewer
from napari_zarr_vectors.napari.npe2.reader import (
    napari_get_reader,
    read_zarr_vectors,
    register_reader_preference,
)

__all__ = [
    "ZVLayerController",
    "configure",
    "controller_for",
    "napari_get_reader",
    "open_in_viewer",
    "read_zarr_vectors",
    "register_reader_preference",
]
