"""Raw vertex payloads of a local store's plain vlen-bytes cells are read from their files
straight into the packed positions; every cell that cannot be read so (damaged, empty,
missing, past the capacity, a read that fails) is read the ordinary way, so that the
result and what is reported are those of a read without it."""

from __future__ import annotations

import json
import struct
import warnings
from pathlib import Path

import numpy as np
import pytest

import napari_zarr_vectors as nzv
from data_paths import data_root
from napari_zarr_vectors.format import io as zio
from napari_zarr_vectors.format import loading
from napari_zarr_vectors.format.layout.v09 import V09Layout

DATA = data_root()
STORES = ["v09/streamlines", "v09/points_binned", "v09/skeleton", "next/points_categorical"]


@pytest.fixture(autouse=True)
def _small_cells_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cells of the test stores hold a few rows: read in place all the same."""
    monkeypatch.setattr(loading, "IN_PLACE_MIN_BYTES", 0)


def _read(path: Path, in_place: bool, monkeypatch: pytest.MonkeyPatch, **kw):
    """A whole read (or ``kw``), with in-place reads on or off, and its warnings' texts."""
    with monkeypatch.context() as m:
        if not in_place:
            m.setattr(V09Layout, "reads_in_place", lambda self, level, array: False)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            geom = nzv.open_store(path).read(0, **kw)
    return geom, sorted(str(w.message) for w in caught)


def _same(a, b) -> None:
    np.testing.assert_array_equal(a.positions, b.positions)
    assert a.positions.dtype == b.positions.dtype
    np.testing.assert_array_equal(a.path_object_ids, b.path_object_ids)
    assert len(a.paths) == len(b.paths)
    for x, y in zip(a.paths, b.paths, strict=True):
        np.testing.assert_array_equal(x, y)
    assert sorted(a.vertex_attributes) == sorted(b.vertex_attributes)
    for k, v in a.vertex_attributes.items():
        np.testing.assert_array_equal(v, b.vertex_attributes[k])


def _cells(path: Path) -> list[Path]:
    return sorted(p for p in (path / "0" / "vertices" / "c").rglob("*") if p.is_file())


@pytest.mark.parametrize("name", STORES)
def test_plain_cells_are_read_in_place_and_give_the_rows_of_an_ordinary_read(
    name: str, monkeypatch: pytest.MonkeyPatch
):
    path = DATA / f"{name}.zarrvectors"
    counted: list[np.ndarray] = []
    real = V09Layout.read_payloads_into

    def spy(self, level, array, chunks, sink):
        done = real(self, level, array, chunks, sink)
        counted.append(done)
        return done

    monkeypatch.setattr(V09Layout, "read_payloads_into", spy)
    got, said = _read(path, True, monkeypatch)
    assert counted and all(d.all() for d in counted)  # every (non-empty) cell in place
    assert sum(len(d) for d in counted) == len(_cells(path))
    monkeypatch.undo()
    plain, plain_said = _read(path, False, monkeypatch)
    _same(got, plain)
    assert said == plain_said == []


def _damage(cell: Path, kind: str) -> None:
    data = cell.read_bytes()
    count, length = struct.unpack_from("<II", data)
    payload = data[8:]
    if kind == "not whole rows":
        cell.write_bytes(struct.pack("<II", 1, length + 4) + payload + b"\0\0\0\0")
    elif kind == "two elements":
        cell.write_bytes(struct.pack("<II", 2, length) + payload)
    elif kind == "length past the end":
        cell.write_bytes(struct.pack("<II", 1, length + 12) + payload)
    elif kind == "length short of the end":
        cell.write_bytes(struct.pack("<II", 1, length - 12) + payload)
    elif kind == "truncated head":
        cell.write_bytes(data[:6])
    elif kind == "empty file":
        cell.write_bytes(b"")
    elif kind == "empty element":
        cell.write_bytes(struct.pack("<II", 1, 0))
    elif kind == "missing":
        cell.unlink()
    elif kind == "directory":
        cell.unlink()
        cell.mkdir()
    elif kind == "outside its chunk":
        rows = np.frombuffer(payload, np.float32).copy()
        rows[0] = 1e9
        cell.write_bytes(data[:8] + rows.tobytes())
    else:  # pragma: no cover - a kind the test does not know
        raise AssertionError(kind)


KINDS = [
    "not whole rows",
    "two elements",
    "length past the end",
    "length short of the end",
    "truncated head",
    "empty file",
    "empty element",
    "missing",
    "directory",
    "outside its chunk",
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", ["v09/streamlines", "next/points_categorical"])
def test_a_damaged_cell_is_read_and_reported_as_without_in_place_reads(
    name: str, kind: str, data_copy, monkeypatch: pytest.MonkeyPatch
):
    path = data_copy(name)
    clean = nzv.open_store(path).read(0)
    cells = _cells(path)
    _damage(cells[len(cells) // 2], kind)
    got, said = _read(path, True, monkeypatch)
    plain, plain_said = _read(path, False, monkeypatch)
    _same(got, plain)
    assert said == plain_said
    if kind in ("empty element",):
        assert got.vertex_count < clean.vertex_count  # the chunk holds nothing now
    elif kind == "outside its chunk":  # the one far vertex is missing, the chunk is read
        assert said and got.vertex_count == clean.vertex_count
        assert np.isnan(got.positions).any(axis=1).sum() == 1
    else:  # the chunk is reported and left out, the others read
        assert said and got.vertex_count < clean.vertex_count
    assert got.vertex_count > 0


@pytest.mark.parametrize("declared", ["one", "half"])
def test_cells_past_the_declared_vertex_count_are_copied_in(
    declared: str, data_copy, monkeypatch: pytest.MonkeyPatch
):
    """A level whose ``vertex_count`` is too small: the cells that do not fit the rows
    allocated for it are fetched and copied (the array grown), with the same rows."""
    path = data_copy("v09/streamlines")
    clean = nzv.open_store(path).read(0)
    meta = path / "0" / "zarr.json"
    doc = json.loads(meta.read_text())
    block = doc["attributes"].get("zarr_vectors_level") or doc["attributes"]
    block["vertex_count"] = 1 if declared == "one" else clean.vertex_count // 2
    meta.write_text(json.dumps(doc))
    got, said = _read(path, True, monkeypatch)
    _same(got, clean)
    assert said == []


def test_a_file_that_cannot_be_read_whole_is_read_the_ordinary_way(
    data_copy, monkeypatch: pytest.MonkeyPatch
):
    """A read into the claimed rows that comes back short gives the rows back (the next
    cell is read over them) and the cell is fetched and copied instead."""
    path = data_copy("v09/streamlines")
    clean = nzv.open_store(path).read(0)
    victim = str(_cells(path)[1])
    real = zio.LocalFile.read_into
    short: list[str] = []

    def flaky(self, start, out):
        if self.path == victim:
            short.append(self.path)
            out[:8] = b"\xff" * 8  # garbage where the rows were claimed
            return False
        return real(self, start, out)

    monkeypatch.setattr(zio.LocalFile, "read_into", flaky)
    got, said = _read(path, True, monkeypatch)
    assert short == [victim]
    _same(got, clean)
    assert said == []


def test_local_file_reads_into_memory_and_says_when_the_file_is_short(tmp_path: Path):
    f = tmp_path / "cell"
    f.write_bytes(bytes(range(20)))
    out = bytearray(8)
    file = zio.LocalFile.open(str(f))
    assert file is not None and file.size == 20
    with file:
        assert file.read_into(4, memoryview(out))
        assert bytes(out) == bytes(range(4, 12))
        assert file.read(16, 20) == bytes(range(16, 20))
        assert not file.read_into(15, memoryview(bytearray(8)))  # 5 bytes left
    assert zio.LocalFile.open(str(tmp_path / "nothing")) is None
    assert zio.LocalFile.open(str(tmp_path)) is None  # a directory holds no cell


@pytest.mark.parametrize(("least", "in_place"), [(0, True), (1 << 16, False)])
def test_only_chunks_of_many_rows_on_average_are_read_in_place(
    least: int, in_place: bool, monkeypatch: pytest.MonkeyPatch
):
    """A read whose chunks hold fewer than ``IN_PLACE_MIN_BYTES`` of vertices on average
    (a coarse level, these small stores) fetches them with the other arrays."""
    monkeypatch.setattr(loading, "IN_PLACE_MIN_BYTES", least)
    calls: list[int] = []
    real = V09Layout.read_payloads_into

    def spy(self, level, array, chunks, sink):
        calls.append(len(chunks))
        return real(self, level, array, chunks, sink)

    monkeypatch.setattr(V09Layout, "read_payloads_into", spy)
    path = DATA / "v09/streamlines.zarrvectors"
    geom = nzv.open_store(path).read(0)
    assert (sum(calls) == len(_cells(path))) if in_place else calls == []
    assert geom.vertex_count == 394  # what the level's vertex_count says
