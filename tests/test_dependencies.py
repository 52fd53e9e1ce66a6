"""The declared dependencies equal the imports.

Scans ``src/`` for absolute imports (``ast``), maps each import name to the distribution that
provides it (``importlib.metadata.packages_distributions()`` of this environment) and compares
with ``pyproject.toml``:

* every import the code needs is a ``[project] dependencies`` entry. A module the code treats
  as optional may instead come from an optional extra: the code checks for it somewhere
  (``try: import X`` / ``except ImportError``, e.g. ``decode_draco``, ``require_writer``)
  and imports it nowhere at module level, so importing the package never needs it;
* every ``[project] dependencies`` entry is imported somewhere, and every entry of a runtime
  extra is imported (guarded) or is a backend the code reaches without importing it
  (:data:`NOT_IMPORTED`, each with its reason).
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from functools import cache
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = "napari_zarr_vectors"

#: Extras that install tools for developing the package, not code it imports.
DEVELOPMENT_EXTRAS = {"test", "dev", "docs"}

#: Extra dependencies the code uses without importing them, with the reason.
NOT_IMPORTED = {
    "pyqt6": "the Qt binding behind qtpy (`qt` extra); the code imports qtpy",
    "s3fs": "fsspec's s3:// backend, which fsspec loads by protocol name (`s3` extra)",
}

IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError"}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(n, ast.Name) and n.id in IMPORT_ERRORS for n in names)


def scan_imports(root: Path) -> dict[str, dict[str, tuple[bool, bool]]]:
    """Top-level module name -> {"file:line": (guarded, local)} for every absolute import
    under ``root``, standard library and this package left out. ``guarded``: the import sits
    in the body of a ``try`` that catches ``ImportError``; ``local``: inside a function."""
    found: dict[str, dict[str, tuple[bool, bool]]] = {}

    def visit(node: ast.AST, guarded: bool, local: bool, where: Path) -> None:
        if isinstance(node, ast.Try):
            inner = guarded or any(_catches_import_error(h) for h in node.handlers)
            for child in node.body:
                visit(child, inner, local, where)
            for child in [*node.handlers, *node.orelse, *node.finalbody]:
                visit(child, guarded, local, where)
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            local = True
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            top = name.split(".")[0]
            if top in sys.stdlib_module_names or top == PACKAGE:
                continue
            key = f"{where.relative_to(ROOT).as_posix()}:{node.lineno}"
            found.setdefault(top, {})[key] = (guarded, local)
        for child in ast.iter_child_nodes(node):
            visit(child, guarded, local, where)

    for path in sorted(root.rglob("*.py")):
        visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), False, False, path)
    return found


def is_optional(where: dict[str, tuple[bool, bool]]) -> bool:
    """The code checks for the module and never imports it at module level unguarded."""
    return any(g for g, _ in where.values()) and all(g or local for g, local in where.values())


def declared() -> tuple[set[str], dict[str, set[str]]]:
    """(required distributions, extra -> distributions), canonical names."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    required = {canonical(Requirement(r).name) for r in project.get("dependencies", [])}
    extras = {
        extra: {canonical(Requirement(r).name) for r in reqs}
        for extra, reqs in project.get("optional-dependencies", {}).items()
    }
    return required, extras


@cache
def _packages_distributions() -> dict[str, list[str]]:
    return packages_distributions()


def distributions_of(module: str) -> set[str]:
    return {canonical(d) for d in _packages_distributions().get(module, [])}


IMPORTS = scan_imports(SRC)
REQUIRED, EXTRAS = declared()
RUNTIME_EXTRAS = {e: deps for e, deps in EXTRAS.items() if e not in DEVELOPMENT_EXTRAS}
OPTIONAL = set().union(*RUNTIME_EXTRAS.values()) if RUNTIME_EXTRAS else set()


def test_the_scan_sees_the_imports_it_should():
    """The scan itself: known imports found, guarded ones told apart, stdlib left out."""
    assert "numpy" in IMPORTS and "zarr" in IMPORTS and "napari" in IMPORTS
    assert "json" not in IMPORTS and PACKAGE not in IMPORTS
    assert all(guarded for guarded, _ in IMPORTS["DracoPy"].values())
    assert is_optional(IMPORTS["DracoPy"])
    assert not is_optional(IMPORTS["numpy"])
    assert not is_optional({"a.py:1": (True, False), "b.py:9": (False, False)})
    assert is_optional({"a.py:1": (True, True), "b.py:9": (False, True)})


@pytest.mark.parametrize("module", sorted(IMPORTS))
def test_every_import_is_declared(module):
    dists = distributions_of(module)
    assert dists, f"{module!r} (imported at {sorted(IMPORTS[module])}) is not installed"
    where = IMPORTS[module]
    if is_optional(where):
        assert dists & (REQUIRED | OPTIONAL), (
            f"{module!r} (optional import at {sorted(where)}) is in neither [project] "
            f"dependencies nor an optional extra: declare one of {sorted(dists)}"
        )
    else:
        assert dists & REQUIRED, (
            f"{module!r} is needed (imported at {sorted(where)}, not guarded by an "
            f"ImportError check): declare one of {sorted(dists)} in [project] dependencies"
        )


def _imported_distributions() -> set[str]:
    return set().union(*(distributions_of(m) for m in IMPORTS))


@pytest.mark.parametrize("dist", sorted(REQUIRED))
def test_every_required_dependency_is_imported(dist):
    assert dist in _imported_distributions(), (
        f"{dist!r} is in [project] dependencies but nothing under src/ imports it"
    )


@pytest.mark.parametrize(
    ("extra", "dist"), sorted((e, d) for e, deps in RUNTIME_EXTRAS.items() for d in deps)
)
def test_every_runtime_extra_is_imported_or_a_known_backend(extra, dist):
    if dist in NOT_IMPORTED:
        assert dist not in _imported_distributions(), (
            f"{dist!r} is imported now: drop it from NOT_IMPORTED"
        )
        return
    assert dist in _imported_distributions(), (
        f"{dist!r} (extra {extra!r}) is not imported under src/: remove it, or say in "
        f"NOT_IMPORTED how the code uses it"
    )
    if dist not in REQUIRED:
        needed = sorted(
            m for m in IMPORTS if dist in distributions_of(m) and not is_optional(IMPORTS[m])
        )
        assert not needed, f"{dist!r} is optional ({extra!r}) but {needed} are imported as needed"
