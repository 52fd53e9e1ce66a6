"""The command line: what each command prints and writes, and its exit codes on bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import napari_zarr_vectors as nzv
from napari_zarr_vectors.cli import EXIT, main
from napari_zarr_vectors.jobs import density_map, qa_report

SRC = Path(__file__).resolve().parents[1] / "src"


def run(*args: str) -> int:
    return main(["--quiet", *map(str, args)])


def test_info_prints_levels_counts_and_placement(data_dir, capsys):
    assert run("info", data_dir / "next/trk_crs.zarrvectors") == EXIT["ok"]
    out = capsys.readouterr().out
    assert "geometry   streamline" in out
    assert "placement  trackvis_header in RASmm" in out
    assert "x (mm, space)" in out
    rows = [line.split() for line in out.splitlines() if line[:1].isdigit()]
    assert [(r[0], r[1], r[2], r[4]) for r in rows] == [
        ("0", "2,042", "40", "40"),
        ("1", "502", "20", "40"),
    ]


def test_info_json_holds_every_level(data_dir, capsys):
    store = nzv.open_store(data_dir / "v09/mesh.zarrvectors")
    assert run("info", store.path, "--json") == 0
    info = json.loads(capsys.readouterr().out)
    assert [lv["vertices"] for lv in info["levels"]] == [lv.vertex_count for lv in store.levels]
    assert info["geometry_type"] == "mesh" and info["placement"]["source"] == "identity"


def test_qa_writes_the_report_and_the_json_of_the_job(tracks300_store, tmp_path, capsys):
    path = tracks300_store[0]
    report, out = tmp_path / "report.html", tmp_path / "out.json"
    assert run("qa", path, "--report", report, "--json", out, "--scheduler", "sync") == 0
    printed = capsys.readouterr().out
    assert printed.startswith("tracks300: verdict PASS (14 pass, 0 warn, 0 fail")
    numbers = json.loads(out.read_text())
    expected = qa_report(nzv.open_store(path)).to_json()
    assert numbers["levels"] == expected["levels"] and numbers["checks"] == expected["checks"]
    assert "14,576" in report.read_text()


def test_qa_of_a_damaged_store_exits_1_and_names_the_chunk(damaged, tmp_path, capsys):
    path, key, _ = damaged
    out = tmp_path / "out.json"
    assert run("qa", path, "--json", out) == EXIT["verdict"] == 1
    printed = capsys.readouterr().out
    assert f"FAIL level 0: every chunk reads: 1 chunk(s) could not be read: {key}" in printed
    assert json.loads(out.read_text())["failures"][0]["chunk"] == key
    assert run("qa", path, "--json", out, "--fail-on", "never") == 0


def test_density_writes_a_nifti_in_ras_mm(data_dir, tmp_path, capsys):
    nib = pytest.importorskip("nibabel")
    path = data_dir / "next/trk_crs.zarrvectors"
    out = tmp_path / "density.nii.gz"
    assert run("density", path, out, "--voxel", "2", "--scheduler", "threads") == 0
    image = nib.load(out)
    expected = density_map(nzv.open_store(path), 2.0)
    np.testing.assert_array_equal(np.asarray(image.dataobj), expected.image)
    np.testing.assert_allclose(image.affine, expected.affine)
    assert image.header.get_xyzt_units()[0] == "mm"
    assert "objects per voxel up to" in capsys.readouterr().out


def test_density_writes_a_zarr_array(data_dir, tmp_path):
    zarr = pytest.importorskip("zarr")
    path = data_dir / "v09/points.zarrvectors"
    out = tmp_path / "density.zarr"
    assert run("density", path, out, "--voxel", "5", "--count", "vertices") == 0
    array = zarr.open_array(out, mode="r")
    assert int(array[...].sum()) == nzv.open_store(path).level(0).vertex_count
    assert array.attrs["count"] == "vertices" and len(array.attrs["affine"]) == 4


def test_export_writes_the_objects_named(data_dir, tmp_path, capsys):
    pytest.importorskip("zarr_vectors")
    target = tmp_path / "two.zarrvectors"
    assert run("export", data_dir / "v09/polylines.zarrvectors", target, "--ids", "1,2") == 0
    assert sorted(nzv.open_store(target).read(0).path_object_ids.tolist()) == [0, 1]
    assert "2 object id(s) of polylines" in capsys.readouterr().out
    # an existing target is never written over: bad input
    assert run("export", data_dir / "v09/polylines.zarrvectors", target) == EXIT["usage"]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["qa", "{store}"], 2, "needs --report"),
        (["qa", "{tmp}/nothing.zarrvectors", "--json", "{tmp}/o.json"], 3, "no such store"),
        (["qa", "{readme}", "--json", "{tmp}/o.json"], 3, "not a Zarr Vectors store"),
        (["qa", "{store}", "--json", "{tmp}/no/o.json"], 2, "folder does not exist"),
        (["qa", "{store}", "--json", "{tmp}/o.json", "--scheduler", "local:0"], 2, "local:N"),
        (["density", "{store}", "{tmp}/d.png", "--voxel", "2"], 2, "NIfTI"),
        (["density", "{store}", "{tmp}/d.nii", "--voxel", "0.000001"], 2, "larger voxel"),
        (["density", "{store}", "{tmp}/d.nii", "--voxel", "2", "--level", "9"], 2, "no level 9"),
        (["export", "{store}", "{tmp}/e.zarrvectors", "--ids", "3", "x"], 2, "'x' is not"),
    ],
)
def test_bad_input_gets_a_clear_error_and_exit_code(
    data_dir, tmp_path, capsys, args, code, message
):
    names = {
        "store": str(data_dir / "v09/points.zarrvectors"),
        "tmp": str(tmp_path),
        "readme": str(SRC.parent / "README.md"),
    }
    assert run(*(a.format(**names) for a in args)) == code
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("args", [["density", "s", "o.nii", "--voxel", "-1"], ["nothing"], []])
def test_argument_errors_exit_2(args, capsys):
    with pytest.raises(SystemExit) as stop:
        main(args)
    assert stop.value.code == 2


def test_a_missing_dependency_exits_4(data_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "dask", None)
    path = data_dir / "v09/points.zarrvectors"
    assert run("qa", path, "--json", tmp_path / "o.json") == EXIT["dependency"] == 4
    assert "napari-zarr-vectors[jobs]" in capsys.readouterr().err


def test_python_dash_m_runs_the_command_line(data_dir):
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-m", "napari_zarr_vectors", "info", data_dir / "v09/graph.zarrvectors"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "geometry   graph" in done.stdout
    version = subprocess.run(
        [sys.executable, "-m", "napari_zarr_vectors", "--version"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert version.stdout.strip() == f"napari-zarr-vectors {nzv.__version__}"
