"""The architecture ``docs/dev/architecture.md`` describes, checked against the code.

* Its module map names every module under ``src/`` and nothing that does not exist.
* Its layer table holds: a module imports its own package and the rows below it, never a row
  above it nor another entry of its own row; only the entries the table marks ``Qt`` import Qt.
* The format core (``format/``, ``write/``, the package root), the whole-store jobs (``jobs/``)
  and the command line (``cli.py``, ``__main__.py``) import no napari, Qt, magicgui or vispy,
  not even inside a function or for type checkers.
* The package has no runtime import cycle (imports for type checkers alone are not run); the
  napari side imports absolutely and never imports its own modules inside a function.
* Every napari internal the plugin relies on is used in ``napari/_napari_compat.py`` alone.

The imports are read with :mod:`ast`, function-local and ``TYPE_CHECKING`` ones included, so
nothing here imports the package.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "napari_zarr_vectors"
DOC = ROOT / "docs" / "dev" / "architecture.md"
PACKAGE = "napari_zarr_vectors"

#: Top-level names of Qt bindings and Qt-based toolkits.
QT = frozenset({"qtpy", "PyQt5", "PyQt6", "PySide2", "PySide6", "superqt", "magicgui", "vispy"})
#: What the format core never imports: napari and everything napari draws with.
NOT_IN_THE_CORE = QT | {"napari", "npe2", "app_model"}

#: Imports that break a layer rule today, ``"importing module -> imported module"`` (paths
#: under ``src/napari_zarr_vectors``). Each is a debt to pay off: move the code, then delete
#: the line. An entry that no longer occurs fails the test, so the list only shrinks.
LAYER_DEBTS = frozenset(
    {
        # the QA roles of layers are a naming convention: napari/conventions.py
        "napari/browse/targets.py -> napari/qa/compute.py",
        # the store suffix and the activity-panel entry of a write belong below both
        "napari/layerdata/export.py -> napari/npe2/writer.py",
        # the registry keeps each store's object table: the table belongs below it
        "napari/open_stores.py -> napari/browse/table.py",
        # the viewer hook installs the colour bars (a Qt timer coalesces their updates):
        # the bars' model belongs in colour/, their timer in tasks.py
        "napari/npe2/attach.py -> napari/widgets/colour_bar.py",
    }
)

#: Modules outside a ``Qt`` row of the layer table that import Qt today (same rule).
QT_DEBTS = frozenset(
    {
        "napari/layerdata/export.py",  # a file dialog and a Qt relay: widgets/ and tasks.py
        "napari/lod/controller.py",  # superqt's debounce of view events
        "napari/lod/gc_pauses.py",  # an event filter on the main window
        "napari/lod/line_draw.py",  # a vispy Line in napari's canvas (the fast draw path)
        "napari/lod/overview_fill.py",  # vispy lines drawn offscreen in napari's canvas
        "napari/lod/viewer_layers.py",  # a single-shot QTimer (the next event-loop turn)
    }
)


@dataclass(frozen=True)
class Import:
    """One import statement's target, as an absolute dotted name."""

    name: str
    local: bool  # inside a function: runs when the function is called
    typing_only: bool  # under ``if TYPE_CHECKING:``: never runs


@cache
def modules() -> dict[str, Path]:
    """``{"napari/lod/plan.py": path}`` for every module of the package."""
    return {p.relative_to(SRC).as_posix(): p for p in sorted(SRC.rglob("*.py"))}


def dotted(rel: str) -> str:
    """``"napari/lod/plan.py"`` -> ``"napari_zarr_vectors.napari.lod.plan"``."""
    parts = [PACKAGE, *rel.removesuffix(".py").split("/")]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def module_of_dotted() -> dict[str, str]:
    return {dotted(rel): rel for rel in modules()}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


@cache
def imports(rel: str) -> tuple[Import, ...]:
    """Every import of one module (relative ones resolved), ``from X import y`` as ``X.y``."""
    tree = ast.parse(modules()[rel].read_text(encoding="utf-8"))
    here = dotted(rel).split(".")
    package = here if rel.endswith("__init__.py") else here[:-1]
    found: list[Import] = []

    def visit(node: ast.AST, local: bool, typing_only: bool) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            local = True
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, local, True)
            for child in node.orelse:
                visit(child, local, typing_only)
            return
        if isinstance(node, ast.Import):
            found.extend(Import(a.name, local, typing_only) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package[: len(package) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            found.extend(Import(f"{base}.{a.name}", local, typing_only) for a in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child, local, typing_only)

    visit(tree, False, False)
    return tuple(found)


def target_module(name: str) -> str | None:
    """The module of the package an imported dotted name lives in (``None`` outside it)."""
    known = module_of_dotted()
    parts = name.split(".")
    while parts:
        hit = known.get(".".join(parts))
        if hit is not None:
            return hit
        parts.pop()
    return None


def package_imports(rel: str, *, runtime: bool = False) -> set[str]:
    """Modules of the package that ``rel`` imports (only those that run, with ``runtime``)."""
    out = set()
    for imp in imports(rel):
        if runtime and imp.typing_only:
            continue
        target = target_module(imp.name)
        if target is not None and target != rel:
            out.add(target)
    return out


def section(title: str) -> str:
    """The text of one ``## title`` section of the architecture page."""
    text = DOC.read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"{DOC.name} has no '## {title}' section"
    return match.group(1)


@dataclass(frozen=True)
class Row:
    layer: int
    entries: tuple[str, ...]  # "napari/lod/" (a package) or "napari/tasks.py" (a module)
    qt: bool


@cache
def layer_table() -> tuple[Row, ...]:
    rows = []
    for line in section("Layers").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].isdigit():
            entries = tuple(re.findall(r"`([^`]+)`", cells[1]))
            rows.append(Row(int(cells[0]), entries, cells[2].lower() == "yes"))
    assert rows, "the Layers table of the architecture page has no rows"
    return tuple(rows)


def entry_of(rel: str) -> tuple[str, Row]:
    """The layer-table entry a module belongs to (the longest entry that contains it)."""
    best: tuple[str, Row] | None = None
    for row in layer_table():
        for entry in row.entries:
            inside = rel.startswith(entry) if entry.endswith("/") else rel == entry
            if inside and (best is None or len(entry) > len(best[0])):
                best = (entry, row)
    assert best is not None, f"{rel} is in no row of the Layers table of {DOC.name}"
    return best


def docstring_only(path: Path) -> bool:
    body = ast.parse(path.read_text(encoding="utf-8")).body
    return len(body) == 1 and isinstance(body[0], ast.Expr)


def test_the_module_map_names_every_module_and_only_modules_that_exist():
    """Every module is in the map; a package ``__init__`` that is only a docstring is named
    by its folder (``napari/lod/``)."""
    named = set(re.findall(r"`([\w/]+(?:\.py|/))`", section("Module map")))
    assert named, "the module map names no module"
    wanted = {
        rel.removesuffix("__init__.py") if docstring_only(path) else rel
        for rel, path in modules().items()
    }
    missing = sorted(wanted - named)
    assert missing == [], f"modules the map in {DOC.name} does not describe: {missing}"
    gone = sorted(n for n in named if not (SRC / n).exists())
    assert gone == [], f"{DOC.name} names modules that do not exist: {gone}"


def test_every_module_is_in_one_layer_and_the_table_names_what_exists():
    entries = [e for row in layer_table() for e in row.entries]
    assert len(entries) == len(set(entries)), "an entry is in two rows"
    assert [e for e in entries if not (SRC / e).exists()] == []
    for rel in modules():
        entry_of(rel)  # fails when a module is in no row


def layer_violations() -> set[str]:
    found = set()
    for rel in modules():
        entry, row = entry_of(rel)
        for target in package_imports(rel):
            other, other_row = entry_of(target)
            if other != entry and other_row.layer >= row.layer:
                found.add(f"{rel} -> {target}")
    return found


def test_imports_go_down_the_layer_table():
    """A module imports its own package and rows below; entries of one row are independent."""
    found = layer_violations()
    assert sorted(found - LAYER_DEBTS) == [], "imports up (or across) the layer table"
    assert sorted(LAYER_DEBTS - found) == [], "paid-off debts: delete them from LAYER_DEBTS"


def test_only_the_rows_marked_qt_import_qt():
    found = set()
    for rel in modules():
        if entry_of(rel)[1].qt:
            continue
        found |= {rel for imp in imports(rel) if imp.name.split(".")[0] in QT}
    assert sorted(found - QT_DEBTS) == [], "Qt imported outside the rows marked Qt"
    assert sorted(QT_DEBTS - found) == [], "paid-off debts: delete them from QT_DEBTS"


def test_the_format_core_imports_no_napari_or_qt():
    core = [
        r
        for r in modules()
        if r.startswith(("format/", "write/", "jobs/"))
        or r in ("__init__.py", "cli.py", "__main__.py")
    ]
    assert {"format/store.py", "write/engine.py", "jobs/qa.py", "cli.py"} <= set(core)
    offenders = [
        f"{rel}: {imp.name}"
        for rel in core
        for imp in imports(rel)
        if imp.name.split(".")[0] in NOT_IN_THE_CORE
        or target_module(imp.name) in {r for r in modules() if r.startswith("napari/")}
    ]
    assert offenders == []


def test_the_package_has_no_runtime_import_cycle():
    edges = {rel: package_imports(rel, runtime=True) for rel in modules()}
    # a package's ``__init__`` runs before its modules: re-exports there are not cycles
    edges = {m: {t for t in ts if not t.endswith("__init__.py")} for m, ts in edges.items()}
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(m: str, stack: list[str]) -> bool:
        state[m] = 1
        for t in sorted(edges[m]):
            if state.get(t) == 1:
                cycle.extend([*stack, m, t])
                return True
            if t not in state and visit(t, [*stack, m]):
                return True
        state[m] = 2
        return False

    for m in sorted(edges):
        if m not in state and visit(m, []):
            break
    assert cycle == [], " -> ".join(cycle)


def test_the_checks_see_the_imports_they_check():
    """The reader of imports resolves relative, function-local and type-checking imports."""
    store = {i.name for i in imports("format/store.py")}
    assert "napari_zarr_vectors.format.composite.CompositeGeometryStore" in store
    assert "format/errors.py" in package_imports("format/store.py")
    compat = imports("napari/_napari_compat.py")
    assert any(i.local and i.name.startswith("napari.") for i in compat)
    assert entry_of("napari/widgets/actions.py")[1].qt
    assert not entry_of("format/store.py")[1].qt


@cache
def defined_names() -> frozenset[str]:
    """Every dotted name a docstring may point at: modules, their top-level names, and
    ``Class.member`` of their classes."""
    out = set()
    for rel, path in modules().items():
        mod = dotted(rel)
        out.add(mod)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                for b in node.body:
                    if isinstance(b, ast.FunctionDef | ast.AsyncFunctionDef):
                        out.add(f"{mod}.{node.name}.{b.name}")
                    elif isinstance(b, ast.AnnAssign) and isinstance(b.target, ast.Name):
                        out.add(f"{mod}.{node.name}.{b.target.id}")
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                out.add(f"{mod}.{node.name}")
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                out |= {f"{mod}.{t.id}" for t in targets if isinstance(t, ast.Name)}
            elif isinstance(node, ast.ImportFrom | ast.Import):
                out |= {f"{mod}.{(a.asname or a.name).split('.')[0]}" for a in node.names}
    return frozenset(out)


def test_cross_references_in_docstrings_name_what_exists():
    """``:mod:`` / ``:class:`` / ``:func:`` / ... references of the package resolve: a full
    name exactly, a ``.relative`` one as a suffix of some name (Sphinx's rule)."""
    names = defined_names()
    suffixes = {"." + n.split(".", i)[-1] for n in names for i in range(n.count(".") + 1)}
    broken = []
    for rel, path in modules().items():
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for ref in re.findall(r":(?:mod|class|func|data|meth|attr|exc):`~?([^`]+)`", line):
                if ref.startswith("."):
                    ok = "." + ref.lstrip(".") in suffixes
                elif ref.startswith(PACKAGE):
                    ok = ref in names
                else:
                    continue  # another package's name
                if not ok:
                    broken.append(f"{rel}:{i}: {ref}")
    assert broken == []


def test_the_napari_side_imports_absolutely_and_not_inside_functions():
    """Imports inside the napari side are absolute, and none of its own modules is imported
    inside a function (a function-local import hides a cycle); the package ``__init__`` files
    that load their names lazily are the exception."""
    napari_side = [rel for rel in modules() if rel.startswith("napari/")]
    relative = []
    for rel in napari_side:
        tree = ast.parse(modules()[rel].read_text(encoding="utf-8"))
        relative += [rel for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]
    assert relative == []
    lazy = {"napari/__init__.py", "napari/widgets/__init__.py"}
    local = [
        f"{rel} -> {target_module(imp.name)}"
        for rel in napari_side
        if rel not in lazy
        for imp in imports(rel)
        if imp.local and (target_module(imp.name) or "").startswith("napari/")
    ]
    assert local == []


def test_napari_internals_are_used_only_in_the_compat_module():
    """Every napari internal the plugin relies on lives in ``_napari_compat.py``, with a note
    on why no public API serves."""
    internals = (
        "._set_data",
        "._color_by",
        "_block_refresh",
        "_instances",
        "coerce_symbols",
        "_validate_track_data",
        "_base_constants",
        "_max_vectors_thumbnail",
        "_activate_on_insert",
        "._qt_viewer",
        "._qt_window",
        'getattr(layer, f"_',
    )
    offenders = [
        f"{rel}: {name}"
        for rel, path in modules().items()
        if rel.startswith("napari/") and rel != "napari/_napari_compat.py"
        for name in internals
        if name in path.read_text(encoding="utf-8")
    ]
    assert offenders == []
    compat = modules()["napari/_napari_compat.py"].read_text(encoding="utf-8")
    assert all(name in compat for name in internals[:-1])


@pytest.mark.parametrize(
    ("module", "forbidden"),
    [
        (f"{PACKAGE}.format", NOT_IN_THE_CORE),
        (f"{PACKAGE}.write", NOT_IN_THE_CORE),
        (f"{PACKAGE}.cli", NOT_IN_THE_CORE),
        # napari itself loads vispy's colour module: at run time only the Qt side counts
        (f"{PACKAGE}.napari.qa.model", QT - {"vispy"}),
    ],
)
def test_importing_loads_none_of(module, forbidden):
    """At run time too: importing the format core loads no napari and no Qt, and importing
    the Pyramid QA model loads no Qt (checked in a fresh interpreter)."""
    code = (
        "import sys\n"
        f"import {module}\n"
        f"found = sorted({{m for m in sys.modules if m.split('.')[0] in {sorted(forbidden)!r}}})\n"
        "assert found == [], found\n"
    )
    path = os.pathsep.join(filter(None, [str(SRC.parent), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}  # the tree under test, wherever it is installed
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr


def test_the_docs_name_code_that_exists():
    """Every ``napari_zarr_vectors.…`` name in the README and ``docs/`` (and every name a
    ``from napari_zarr_vectors… import`` line of their examples takes) is defined."""
    names = defined_names()
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    broken = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        found = set(re.findall(rf"\b{PACKAGE}(?:\.\w+)*", text))
        for module, taken in re.findall(
            rf"^\s*from ({PACKAGE}[\w.]*) import ([\w, ]+)$", text, re.M
        ):
            found |= {f"{module}.{name.strip()}" for name in taken.split(",") if name.strip()}
        broken += [f"{page.name}: {n}" for n in sorted(found) if n not in names]
    assert broken == []


# --------------------------------------------------------------------------------------------
# the test tree (docs/dev/architecture.md, "The tests")
# --------------------------------------------------------------------------------------------

TESTS = ROOT / "tests"


def _test_sources() -> list[Path]:
    """The Python files of the test tree (not the fixture stores under ``tests/data``)."""
    return sorted(p for p in TESTS.rglob("*.py") if TESTS / "data" not in p.parents)


def _imported_names(path: Path) -> set[str]:
    """Every module name ``path`` imports (function-local imports included)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_the_napari_tests_mirror_the_subpackages():
    napari_tests = TESTS / "napari"
    folders = {p.name for p in napari_tests.iterdir() if p.is_dir() and p.name != "__pycache__"}
    subpackages = {p.parent.name for p in (SRC / "napari").glob("*/__init__.py")}
    assert folders <= subpackages, sorted(folders - subpackages)


def test_test_files_import_test_files_of_their_own_folder_only():
    """Shared helpers are modules (``tests/*.py``, ``tests/napari/_zv_*.py``), not test files:
    a test file found on ``sys.path`` only because another folder's test ran first breaks
    when its importer runs alone."""
    where = {p.stem: p.parent for p in _test_sources() if p.name.startswith("test_")}
    wrong = [
        f"{path.relative_to(ROOT)} -> {name}"
        for path in _test_sources()
        for name in sorted(_imported_names(path))
        if name in where and where[name] != path.parent
    ]
    assert wrong == []


def test_the_tests_import_nothing_from_the_benchmarks():
    benchmarks = {p.stem for p in (ROOT / "benchmarks").glob("*.py")}
    wrong = [
        f"{path.relative_to(ROOT)} -> {name}"
        for path in _test_sources()
        for name in sorted(_imported_names(path))
        if name.split(".")[0] in benchmarks | {"benchmarks"}
    ]
    loaded = [
        str(path.relative_to(ROOT))
        for path in _test_sources()
        if re.search(r"""["']benchmarks["']\s*/|["']benchmarks/\w+\.py["']""", path.read_text())
    ]
    assert wrong == [] and loaded == []
