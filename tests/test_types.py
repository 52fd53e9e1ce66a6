"""mypy over the whole package, with the configuration of ``pyproject.toml``
(``[tool.mypy]``): the format core (``format/``) and the writers (``write/``) under the flags
``--strict`` enables; the whole-store jobs (``jobs/``), the command line (``cli.py``) and the
napari side (``napari/``: the npe2 hooks in ``napari/npe2/``, the level of detail, the
browse, colour and QA models, the widgets) at mypy's default strictness, the napari side
with no unused ``type: ignore`` either. Any new error fails the test.
"""

from __future__ import annotations

from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "napari_zarr_vectors"

#: The parts of the package mypy checks (paths under ``src/napari_zarr_vectors``).
CHECKED = ["format", "write", "jobs", "napari", "cli.py", "__init__.py", "__main__.py"]


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
