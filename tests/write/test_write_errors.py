"""The writer's failures: a store opened as a ``file://`` URL is never written into,
a failing disk is a ``WriteError`` naming the target, and the hidden ``.partial-*`` folder a
killed write leaves behind is recognised when opened and removed by the next write beside it.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import napari_zarr_vectors as nzv
from napari_zarr_vectors.write import (
    SameStoreError,
    WriteError,
    WriteSpec,
    export_objects,
    write_store,
)
from napari_zarr_vectors.write import engine as write_engine

zv = pytest.importorskip("zarr_vectors")


def spec() -> WriteSpec:
    rng = np.random.default_rng(0)
    return WriteSpec("point_cloud", rng.random((50, 3)), axes=("x", "y", "z"), units=(None,) * 3)


def write(target, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return write_store(target, spec(), pyramid=False, **kwargs)


def entries(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# -- 5. never into the store being read, whatever its spelling -------------------------------
def test_a_store_opened_as_a_file_url_is_never_written_into(data_copy):
    src = data_copy("v07/points")
    url = "file://" + str(src)
    before = sorted(p.relative_to(src) for p in src.rglob("*"))
    with pytest.raises(SameStoreError):
        write(src / "inside.zarrvectors", sources=[url])
    store = nzv.open_store(url)
    with pytest.raises(SameStoreError):
        export_objects(store, src / "inside.zarrvectors", [1])
    assert sorted(p.relative_to(src) for p in src.rglob("*")) == before


# -- 8. disk failures name the target --------------------------------------------------------
@pytest.mark.parametrize(
    ("error", "said"),
    [
        (OSError(errno.ENOSPC, "No space left on device"), "No space left on device"),
        (OSError(errno.EROFS, "Read-only file system", "X"), "Read-only file system"),
        (PermissionError(errno.EACCES, "Permission denied", "X"), "Permission denied"),
    ],
)
def test_a_failing_disk_is_a_write_error_naming_the_target(tmp_path, monkeypatch, error, said):
    def fail(path, **kwargs):
        if error.filename == "X":
            error.filename = path  # what the OS names: the hidden folder being built
        raise error

    monkeypatch.setattr(zv, "create", fail)
    target = tmp_path / "out.zarrvectors"
    with pytest.raises(WriteError, match=said) as info:
        write(target)
    assert str(target) in str(info.value) and ".partial" not in str(info.value)
    assert entries(tmp_path) == []  # nothing left behind, not even the lock


def test_a_real_write_failure_names_the_target(tmp_path):
    """A file-size limit makes the disk itself refuse the write (EFBIG), as a full disk does."""
    script = textwrap.dedent(
        f"""
        import resource, signal, numpy as np
        from napari_zarr_vectors.write import WriteError, WriteSpec, write_store
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))
        spec = WriteSpec("point_cloud", np.random.default_rng(0).random((20000, 3)),
                         axes=("x", "y", "z"), units=(None,) * 3)
        try:
            write_store({str(tmp_path / "big.zarrvectors")!r}, spec, pyramid=False)
        except WriteError as e:
            print("WriteError:", e)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=os.environ
    )
    assert out.stdout.startswith("WriteError: could not write "), out.stdout + out.stderr
    assert "big.zarrvectors" in out.stdout and ".partial" not in out.stdout
    assert entries(tmp_path) == []


def test_an_unwritable_folder_is_refused_before_any_work(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(WriteError, match="is not writable"):
        write(tmp_path / "out.zarrvectors")


# -- 8. leftovers of killed writes ----------------------------------------------------------
def test_a_leftover_warns_on_open_and_the_next_write_removes_it(tmp_path, data_copy):
    dead = tmp_path / ".old.zarrvectors.partial-0123abcd"
    data_copy("v07/points").rename(dead)
    (tmp_path / ".older.zarrvectors.partial-89abcdef.lock").write_text("")  # lock of a dead write
    with pytest.warns(nzv.ZVLeftoverWarning, match="did not finish"):
        nzv.open_store(dead)
    # a write still running beside it holds its lock: its folder stays
    live = tmp_path / ".live.zarrvectors.partial-fedcba98"
    live.mkdir()
    release = write_engine._hold(tmp_path / f"{live.name}.lock")
    try:
        with pytest.warns(UserWarning, match="removed leftovers.*old.zarrvectors.partial"):
            write_store(tmp_path / "new.zarrvectors", spec(), pyramid=False)
        assert entries(tmp_path) == sorted([live.name, f"{live.name}.lock", "new.zarrvectors"])
    finally:
        release()
