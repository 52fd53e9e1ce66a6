"""Damage that several test modules make to copies of stores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import zarr


def name_a_missing_fragment(path: Path, fragment: int = 999) -> None:
    """Make the last entry of the first manifest of a 0.9 store's level 0 name
    ``fragment`` of its chunk, a fragment the chunk does not hold."""
    arr = zarr.open_array(path / "0/object_index/manifests", mode="r+")
    items = arr[:]
    raw = bytearray(items[0])  # mode 0: u32 entry count, then (key_ndim int64 chunk, int64 frag)
    raw[-8:] = np.int64(fragment).tobytes()
    items[0] = bytes(raw)
    arr[:] = items
