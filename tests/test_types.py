"""mypy over the packages that type-check clean, with the configuration of
``pyproject.toml`` (``[tool.mypy]``): the format core (``format/``) and the writers
(``write/``) under the flags ``--strict`` enables, the whole-store jobs (``jobs/``) and the
command line (``cli.py``) at mypy's default strictness.

The napari side (``napari/``) is left out for now: it does not check clean yet (about 290
errors at the default strictness). Once it does, add it to :data:`CHECKED`.
"""

from __future__ import annotations

from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "napari_zarr_vectors"

#: The parts of the package mypy checks (paths under ``src/napari_zarr_vectors``).
CHECKED = ["format", "write", "jobs", "cli.py", "__init__.py", "__main__.py"]


def test_mypy_reports_no_errors() -> None:
    stdout, stderr, status = api.run(
        [
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            *(str(PACKAGE / part) for part in CHECKED),
        ]
    )
    assert status == 0, f"mypy reports errors (exit status {status}):\n{stdout}{stderr}"
