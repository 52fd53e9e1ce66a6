"""napari adapter for Zarr Vectors stores: the npe2 reader, layer mapping and sample data.

A thin layer over the napari-free format core (:mod:`napari_zarr_vectors.format`): it never
parses store bytes itself.
"""

from .reader import napari_get_reader, read_zarr_vectors, register_reader_preference

__all__ = ["napari_get_reader", "read_zarr_vectors", "register_reader_preference"]
