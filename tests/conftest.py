"""Shared pytest fixtures: where the fixture stores live and how to load their ground truth.

The stores are not tracked one file at a time: :mod:`data_paths` builds the tree from the
archives and writers named in ``tests/data/README.md``, once per session, before the first test
(:func:`pytest_configure`), into a folder named by ``$ZV_TEST_DATA`` (this session sets it, so
subprocesses and xdist workers read the same tree; it is removed at the end). The tree's layout
(format notes: ``shared/format/FORMAT07.md``, ``FORMAT09.md``):

* ``v07/<name>.zarrvectors`` + ``v07/expected/<name>.json`` -- zarr-vectors 0.7.0 stores;
* ``v09/<name>.zarrvectors`` + ``v09/expected/<name>.json`` -- zarr-vectors 0.9.2 stores;
* ``v09/v07-twins/<name>.zarrvectors`` -- the same inputs written by 0.7.0 (truth: ``v09/expected``);
* ``v09/edge-cases/`` -- hand-picked 0.9 edge cases;
* ``dense/<name>.zarrvectors`` -- the seed-002 dense form of the 0.9 inputs (``_dense_writer``);
* ``next/<name>.zarrvectors`` + ``next/expected/<name>.json`` -- layouts after 0.9.2 and
  zarr-vectors-tools' TRK stores (``shared/format/FORMAT-NEXT.md``).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from functools import cache
from pathlib import Path

import pytest

from data_paths import ENV, cache_folder, data_root

#: the session's tree, when this process chose its place (removed at the end of the session)
_SESSION_TREE: list[Path] = []
_BUILD_SECONDS: list[float] = []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_tree(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)
    for leftover in root.parent.glob(f"{root.name}.*"):  # the lock, a partial build
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)


def pytest_configure(config: pytest.Config) -> None:
    """Build the fixture tree once for the session (the controller chooses a fresh folder,
    workers and subprocesses inherit it through ``$ZV_TEST_DATA``)."""
    if not os.environ.get(ENV) and not hasattr(config, "workerinput"):
        folder = cache_folder()
        for old in folder.glob("session-*"):  # trees of sessions that were killed
            pid = old.name.removeprefix("session-").split(".")[0]
            if pid.isdigit() and not _alive(int(pid)):
                _remove_tree(folder / f"session-{pid}")
        root = folder / f"session-{os.getpid()}"
        _remove_tree(root)
        os.environ[ENV] = str(root)
        _SESSION_TREE.append(root)
    start = time.perf_counter()
    data_root()
    _BUILD_SECONDS.append(time.perf_counter() - start)


def pytest_report_header(config: pytest.Config) -> str:
    return f"fixture stores: {data_root()} (ready in {_BUILD_SECONDS[0]:.1f} s)"


def pytest_unconfigure(config: pytest.Config) -> None:
    for root in _SESSION_TREE:
        _remove_tree(root)
        os.environ.pop(ENV, None)


@cache
def load_expected(version: str, name: str) -> dict:
    """Parsed ``<version>/expected/<name>.json`` (cached; treat it as read-only)."""
    with open(data_root() / version / "expected" / f"{name}.json", encoding="utf-8") as fh:
        return json.load(fh)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return data_root()


@pytest.fixture(scope="session")
def v07_dir() -> Path:
    return data_root() / "v07"


@pytest.fixture(scope="session")
def v09_dir() -> Path:
    return data_root() / "v09"


@pytest.fixture(scope="session")
def twins_dir() -> Path:
    return data_root() / "v09" / "v07-twins"


@pytest.fixture
def data_copy(tmp_path: Path):
    """``data_copy(name)`` -> a copy, to change, of the fixture store ``<name>.zarrvectors``."""

    def copy(name: str) -> Path:
        dst = tmp_path / Path(name).name
        shutil.copytree(data_root() / f"{name}.zarrvectors", dst)
        return dst

    return copy


@pytest.fixture
def damaged(data_copy):
    """``(path, key, rows)``: a copy of the 0.9 streamline store whose level-0 chunk ``key``
    is replaced by three bytes (it cannot be decoded), and the vertex rows it held."""
    import napari_zarr_vectors as nzv
    from napari_zarr_vectors.format.pyramid import load_rows

    path = data_copy("v09/streamlines")
    store = nzv.open_store(path)
    chunk = store.chunks(0)[0]
    rows = load_rows(store, 0, chunk[None], strict=True).n_rows
    grid = store.layout.grids.open(0, "vertices")
    key = grid.keys((chunk - grid.origin)[None])[0]
    (path / key).write_bytes(b"\x01\x02\x03")
    return path, ".".join(str(int(c)) for c in chunk), rows


@pytest.fixture(scope="session")
def expected():
    """``expected(version, name)`` -> the parsed ground-truth JSON."""
    return load_expected


@pytest.fixture(scope="session")
def tracks300_store(tmp_path_factory):
    """``(path, truth)``: dipy's tracks300.trk written by zarr-vectors 0.9.2 (see realdata)."""
    pytest.importorskip("dipy")
    pytest.importorskip("zarr_vectors")
    from realdata import write_tracks300

    path = tmp_path_factory.mktemp("realdata") / "tracks300.zarrvectors"
    return path, write_tracks300(path)


@pytest.fixture(scope="session")
def neurons_store(tmp_path_factory):
    """``(path, truth)``: navis' five example neurons as one 0.9.2 skeleton store."""
    pytest.importorskip("navis")
    pytest.importorskip("zarr_vectors")
    from realdata import write_navis_neurons

    path = tmp_path_factory.mktemp("realdata") / "neurons.zarrvectors"
    return path, write_navis_neurons(path)


@pytest.fixture(scope="session")
def neurons_text_store(tmp_path_factory):
    """``(path, truth)``: the five neurons with ``node_type`` handed to the writer as a numpy
    string array, which zarr-vectors 0.9.2 stores as text (``<U6``), unlike the ``object``
    array of :func:`neurons_store`, whose text it does not store."""
    pytest.importorskip("navis")
    pytest.importorskip("zarr_vectors")
    from realdata import write_navis_neurons

    path = tmp_path_factory.mktemp("realdata") / "neurons_text.zarrvectors"
    return path, write_navis_neurons(path, node_type_as="str")


@pytest.fixture(scope="session")
def meshes_store(tmp_path_factory):
    """``(path, truth)``: navis' five example neurons as meshes in one 0.9.2 mesh store (one
    shared ``name``)."""
    pytest.importorskip("navis")
    pytest.importorskip("zarr_vectors")
    from realdata import write_navis_meshes

    path = tmp_path_factory.mktemp("realdata") / "meshes.zarrvectors"
    return path, write_navis_meshes(path)


@pytest.fixture(scope="session")
def draco_meshes_store(tmp_path_factory):
    """``(path, source)``: navis' five neuron meshes Draco-encoded by zarr-vectors 0.9.2 in
    10 um chunks (:func:`corpus.zv_meshes`): some chunks' one fragment several neurons name."""
    pytest.importorskip("navis")
    pytest.importorskip("DracoPy")
    from corpus import zv_meshes

    path = tmp_path_factory.mktemp("realdata") / "meshes-draco.zarrvectors"
    return path, zv_meshes(path, "draco", 10000.0)


@pytest.fixture(scope="session")
def shared_chunk_mesh_store(tmp_path_factory):
    """``(path, vertices, owner, object_attributes)``: a raw mesh whose middle chunk's one
    fragment two objects name whole (:func:`corpus.zv_mesh_shared_chunk`)."""
    pytest.importorskip("zarr_vectors")
    from corpus import zv_mesh_shared_chunk

    path = tmp_path_factory.mktemp("shared-chunk") / "mesh.zarrvectors"
    return (path, *zv_mesh_shared_chunk(path))


@pytest.fixture(scope="session")
def synapses_store(tmp_path_factory):
    """``(path, truth)``: the five neurons' 14,836 synapses as one 0.9.2 point store."""
    pytest.importorskip("navis")
    pytest.importorskip("zarr_vectors")
    from realdata import write_navis_synapses

    path = tmp_path_factory.mktemp("realdata") / "synapses.zarrvectors"
    return path, write_navis_synapses(path)


@pytest.fixture(scope="session")
def neurons_radius_store(tmp_path_factory):
    """``(path, truth)``: the five neurons with each node's navis ``radius`` (nm) and
    ``node_type`` as text: the skeleton a scientist exports from navis."""
    pytest.importorskip("navis")
    pytest.importorskip("zarr_vectors")
    from realdata import write_navis_neurons

    path = tmp_path_factory.mktemp("realdata") / "neurons_radius.zarrvectors"
    return path, write_navis_neurons(path, node_type_as="str", with_radius=True)
