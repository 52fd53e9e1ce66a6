"""The napari-free format core: open ZV stores and read geometry (no napari or Qt imports)."""

from .cache import ChunkCache
from .errors import (
    MissingDependencyError,
    NotAZVStoreError,
    UnsupportedVersionError,
    ZVChunkWarning,
    ZVError,
    ZVFormatError,
)
from .geometry import Geometry
from .metadata import LevelInfo
from .store import Store, open_store

__all__ = [
    "ChunkCache",
    "Geometry",
    "LevelInfo",
    "MissingDependencyError",
    "NotAZVStoreError",
    "Store",
    "UnsupportedVersionError",
    "ZVChunkWarning",
    "ZVError",
    "ZVFormatError",
    "open_store",
]
