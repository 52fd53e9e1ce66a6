"""The napari-free format core: open ZV stores and read geometry (no napari or Qt imports)."""

from .cache import ChunkCache
from .errors import (
    MissingDependencyError,
    NotAZVStoreError,
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
)
from .geometry import Geometry
from .metadata import LevelInfo
from .pyramid import (
    CrossLevelSegments,
    bin_boxes,
    chunk_boxes,
    cross_level_segments,
    dropped_objects,
    level_statistics,
)
from .regions import Box, Plane, Region, Sphere
from .remote import RetryPolicy
from .select import count_reaching, select_objects
from .store import Store, open_store

__all__ = [
    "Box",
    "ChunkCache",
    "CrossLevelSegments",
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
    "bin_boxes",
    "chunk_boxes",
    "cross_level_segments",
    "dropped_objects",
    "level_statistics",
    "open_store",
    "count_reaching",
    "select_objects",
]
