"""Shared pytest fixtures: where the fixture stores live and how to load their ground truth.

``tests/data`` is a copy of ``shared/fixtures`` (see ``tests/data/README.md``; the format notes
it cites are ``shared/format/FORMAT07.md`` and ``FORMAT09.md``):

* ``v07/<name>.zarrvectors`` + ``v07/expected/<name>.json`` -- zarr-vectors 0.7.0 stores;
* ``v09/<name>.zarrvectors`` + ``v09/expected/<name>.json`` -- zarr-vectors 0.9.2 stores;
* ``v09/v07-twins/<name>.zarrvectors`` -- the same inputs written by 0.7.0 (truth: ``v09/expected``);
* ``v09/edge-cases/`` -- hand-picked 0.9 edge cases;
* ``next/<name>.zarrvectors`` + ``next/expected/<name>.json`` -- layouts after 0.9.2 and
  zarr-vectors-tools' TRK stores (``shared/format/FORMAT-NEXT.md``).
"""

from __future__ import annotations

import json
import shutil
from functools import cache
from pathlib import Path

import pytest

DATA_DIR = Path(__file__).parent / "data"
V07_DIR = DATA_DIR / "v07"
V09_DIR = DATA_DIR / "v09"
TWINS_DIR = V09_DIR / "v07-twins"
#: layouts after zarr-vectors 0.9.2 and the TRK ingest's crs (shared/fixtures/next,
#: FORMAT-NEXT.md); ground truth in ``next/expected``
NEXT_DIR = DATA_DIR / "next"


@cache
def load_expected(version: str, name: str) -> dict:
    """Parsed ``<version>/expected/<name>.json`` (cached; treat it as read-only)."""
    with open(DATA_DIR / version / "expected" / f"{name}.json", encoding="utf-8") as fh:
        return json.load(fh)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA_DIR


@pytest.fixture(scope="session")
def v07_dir() -> Path:
    return V07_DIR


@pytest.fixture(scope="session")
def v09_dir() -> Path:
    return V09_DIR


@pytest.fixture(scope="session")
def twins_dir() -> Path:
    return TWINS_DIR


@pytest.fixture
def data_copy(tmp_path: Path):
    """``data_copy(name)`` -> a copy, to change, of the store ``tests/data/<name>.zarrvectors``."""

    def copy(name: str) -> Path:
        dst = tmp_path / Path(name).name
        shutil.copytree(DATA_DIR / f"{name}.zarrvectors", dst)
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
    grid = store.layout._grid(0, "vertices")
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
