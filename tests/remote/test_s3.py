"""Reading the fixture stores from ``s3://`` (moto's S3 server on 127.0.0.1, a bucket the
test creates). Skipped when moto's server mode or s3fs is not installed.

S3 can list, so everything (attribute names included) must equal the local read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator

import pytest
from _compare import DATA, STORES, assert_same_geometry, assert_same_tables, quiet

import napari_zarr_vectors as nzv

moto_server = pytest.importorskip("moto.server", reason="moto[server] is not installed")
s3fs = pytest.importorskip("s3fs", reason="s3fs is not installed")
pytest.importorskip("flask", reason="moto's server mode needs flask (moto[server])")

BUCKET = "zv-fixtures"
#: One store of each layout and kind of content (moto takes ~15 ms per object to upload):
#: 0.7 graph (intra + cross-chunk links), mesh (faces), streamlines (paths); 0.9 skeleton,
#: mesh and a sharded, compressed point cloud (byte-range reads).
S3_STORES = [
    "v07/graph.zarrvectors",
    "v07/mesh.zarrvectors",
    "v07/streamlines.zarrvectors",
    "v09/skeleton.zarrvectors",
    "v09/mesh.zarrvectors",
    "v09/edge-cases/shard_zstd.zarrvectors",
]
assert set(S3_STORES) <= set(STORES)


@pytest.fixture(scope="module")
def s3() -> Iterator[dict]:
    """A moto S3 server on an ephemeral loopback port, holding ``S3_STORES``; yields the
    ``storage_options`` to reach it."""
    for var in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
        os.environ.pop(var, None)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        opts = {
            "key": "testing",
            "secret": "testing",
            "client_kwargs": {"endpoint_url": f"http://{host}:{port}"},
        }
        fs = s3fs.S3FileSystem(**opts)
        fs.mkdir(BUCKET)
        for rel in S3_STORES:
            fs.put(str(DATA / rel), f"{BUCKET}/{rel}", recursive=True)
        fs.invalidate_cache()
        yield opts
    finally:
        server.stop()


@pytest.mark.parametrize("rel", S3_STORES)
def test_s3_read_equals_local(s3, rel):
    remote = nzv.open_store(f"s3://{BUCKET}/{rel}", storage_options=s3)
    assert remote.remote and remote.listable
    local = quiet(nzv.open_store, DATA / rel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for lv in local.levels:
            want = quiet(local.read, lv.index)
            got = remote.read(lv.index)
            assert_same_geometry(got, want)
            assert_same_tables(remote, local, lv.index)
            assert remote.chunks(lv.index).tolist() == local.chunks(lv.index).tolist()


def test_s3_missing_store_is_not_a_store(s3):
    with pytest.raises(nzv.NotAZVStoreError):
        nzv.open_store(f"s3://{BUCKET}/nothing.zarrvectors", storage_options=s3)


def test_s3_credentials_from_fsspec_configuration(s3):
    """Credentials follow fsspec's conventions: here ``FSSPEC_S3`` (a JSON dict of
    S3FileSystem arguments) instead of ``storage_options``."""
    script = (
        "import napari_zarr_vectors as nzv;"
        f"s = nzv.open_store('s3://{BUCKET}/v09/skeleton.zarrvectors');"
        "print(s.read(0).vertex_count)"
    )
    env = {**os.environ, "FSSPEC_S3": json.dumps(s3)}
    out = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    want = quiet(nzv.open_store, DATA / "v09/skeleton.zarrvectors").read(0).vertex_count
    assert int(out.stdout.strip()) == want
