"""Damaged and hostile remote stores (issue 28): a 404 for a chunk the store says holds data
is reported, not read as empty; a server that never answers or sends endless bodies cannot
stretch a read past its deadline or its memory past what the metadata allows.
"""

from __future__ import annotations

import shutil
import warnings

import pytest
from _compare import DATA
from _zv_http import ZVHTTPServer

import napari_zarr_vectors as nzv
from napari_zarr_vectors.format import ZVChunkWarning, ZVFormatError
from napari_zarr_vectors.format.remote import RetryPolicy

POLICY = RetryPolicy(max_attempts=2, request_timeout=0.5, total_timeout=2.0, backoff_initial=0.01)


@pytest.mark.parametrize(
    ("rel", "missing"),
    [
        ("v09/points.zarrvectors", "0/vertices/c/0/1/0"),  # a shard nonempty_chunks lists
        ("v07/points.zarrvectors", "0/vertices/-1.-2.0/c/0"),  # a blob's bytes
    ],
)
def test_a_404_for_a_chunk_the_store_lists_is_reported(tmp_path, rel, missing):
    root = tmp_path / "served"
    shutil.copytree(DATA / rel, root / "store.zarrvectors")
    (root / "store.zarrvectors" / missing).unlink()
    with ZVHTTPServer(root) as server:
        url = f"{server.url}/store.zarrvectors"
        with pytest.warns(ZVChunkWarning, match="file is missing"):
            nzv.open_store(url, retry=POLICY).read(0)
        with pytest.raises(ZVFormatError, match=missing):
            nzv.open_store(url, retry=POLICY).read(0, strict=True)
        with warnings.catch_warnings():  # the other levels are whole
            warnings.simplefilter("error", ZVChunkWarning)
            nzv.open_store(url, retry=POLICY).read(1)
