"""Fixtures of the job tests: a store with one damaged chunk."""

from __future__ import annotations

import pytest

import napari_zarr_vectors as nzv
from napari_zarr_vectors.format.pyramid import load_rows


@pytest.fixture
def damaged(data_copy):
    """``(path, key, rows)``: a copy of the 0.9 streamline store whose level-0 chunk ``key``
    is replaced by three bytes (it cannot be decoded), and the vertex rows it held."""
    path = data_copy("v09/streamlines")
    store = nzv.open_store(path)
    chunk = store.chunks(0)[0]
    rows = load_rows(store, 0, chunk[None], strict=True).n_rows
    grid = store.layout._grid(0, "vertices")
    key = grid.keys((chunk - grid.origin)[None])[0]
    (path / key).write_bytes(b"\x01\x02\x03")
    return path, ".".join(str(int(c)) for c in chunk), rows
