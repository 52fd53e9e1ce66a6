"""napari-zarr-vectors: explore Zarr Vectors stores in napari.

The format core (``napari_zarr_vectors.format``) imports neither napari nor Qt, so
``import napari_zarr_vectors`` works in scripts and notebooks without a GUI stack.
"""

from .format import (
    Box,
    ChunkCache,
    Geometry,
    LevelInfo,
    MissingDependencyError,
    NotAZVStoreError,
    Plane,
    Region,
    RetryPolicy,
    Sphere,
    Store,
    UnsupportedCapabilityError,
    UnsupportedVersionError,
    ZVArgumentError,
    ZVAttributeWarning,
    ZVCancelledError,
    ZVChunkWarning,
    ZVError,
    ZVFetchError,
    ZVFormatError,
    ZVLeftoverWarning,
    ZVListingWarning,
    ZVUnknownObjectWarning,
    ZVUnsupportedDtypeError,
    count_reaching,
    open_store,
    select_objects,
)

#: The package version, written only here (pyproject.toml reads it: tool.setuptools.dynamic).
__version__ = "0.1.0"

__all__ = [
    "Box",
    "ChunkCache",
    "Geometry",
    "LevelInfo",
    "MissingDependencyError",
    "NotAZVStoreError",
    "Plane",
    "Region",
    "RetryPolicy",
    "Sphere",
    "Store",
    "UnsupportedCapabilityError",
    "UnsupportedVersionError",
    "ZVArgumentError",
    "ZVAttributeWarning",
    "ZVCancelledError",
    "ZVChunkWarning",
    "ZVError",
    "ZVFetchError",
    "ZVFormatError",
    "ZVLeftoverWarning",
    "ZVListingWarning",
    "ZVUnknownObjectWarning",
    "ZVUnsupportedDtypeError",
    "__version__",
    "open_store",
    "count_reaching",
    "select_objects",
]
