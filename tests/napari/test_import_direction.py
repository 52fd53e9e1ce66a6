"""The napari side imports one way (issue 13): no cycle among its modules, and no
function-local import of a sibling module holding a cycle together."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "src" / "napari_zarr_vectors" / "napari"


def module_name(path: Path) -> str:
    rel = path.relative_to(PKG).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join(parts) or "__init__"


def sibling_imports(path: Path) -> list[tuple[str, bool]]:
    """``(imported napari-side module, is function-local)`` for every import of the napari
    package (absolute ``napari_zarr_vectors.napari...`` imports, as the package writes them)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules = {module_name(p) for p in PKG.rglob("*.py")}
    local_nodes = {
        id(n)
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
        for n in ast.walk(f)
    }
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or not node.module:
            continue
        assert node.level == 0, f"{path.name}: relative import (the package imports absolutely)"
        parts = node.module.split(".")
        if parts[:2] != ["napari_zarr_vectors", "napari"]:
            continue
        base = ".".join(parts[2:])
        for alias in node.names:
            sub = f"{base}.{alias.name}" if base else alias.name
            name = sub if sub in modules else (base or "__init__")
            out.append((name, id(node) in local_nodes))
    return out


def graph() -> tuple[dict[str, set[str]], list[str]]:
    modules = {module_name(p): p for p in PKG.rglob("*.py")}
    edges: dict[str, set[str]] = {m: set() for m in modules}
    local: list[str] = []
    for m, path in modules.items():
        for target, is_local in sibling_imports(path):
            if target in modules and target != m:
                edges[m].add(target)
                if is_local and m not in ("__init__", "widgets"):
                    local.append(f"{m} -> {target}")
    return edges, local


def test_the_napari_side_has_no_import_cycle():
    edges, _ = graph()
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(m: str, stack: list[str]) -> bool:
        state[m] = 1
        for t in sorted(edges[m]):
            if t == "__init__":
                continue
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
    assert not cycle, " -> ".join(cycle)
    # the layering the docs describe
    assert "npe2.reader" in edges["npe2.opening"] and "npe2.attach" in edges["npe2.reader"]
    assert "lod.controller" in edges["npe2.attach"]
    assert "lod.loader" in edges["lod.controller"]
    high = {"npe2.reader", "lod.controller", "npe2.attach", "npe2.opening"}
    for low in ("lod.loader", "lod.plan", "layerdata.store_info", "lod.view_geometry"):
        assert not edges[low] & high, low


def test_no_function_local_import_of_a_sibling_module():
    _, local = graph()
    assert local == []


def test_napari_internals_are_used_only_in_the_compat_module():
    """Issue 13: every napari internal the plugin relies on lives in ``_napari_compat.py``,
    with a note on why no public API serves."""
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
    offenders = []
    for path in PKG.rglob("*.py"):
        if path.name == "_napari_compat.py":
            continue
        text = path.read_text(encoding="utf-8")
        offenders += [f"{path.name}: {name}" for name in internals if name in text]
    assert offenders == []
    compat = (PKG / "_napari_compat.py").read_text(encoding="utf-8")
    assert all(name in compat for name in internals[:-1])


QT_MODULES = ("qtpy", "PyQt5", "PyQt6", "PySide2", "PySide6", "superqt", "magicgui")


def test_pyramid_qa_model_is_qt_free():
    """``napari/qa/`` (the Pyramid QA model, its jobs and layer data) imports no Qt and no
    widget, not even inside a function: the widget and the menu actions are views of it."""
    offenders = []
    for path in sorted((PKG / "qa").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                if name.split(".")[0] in QT_MODULES or name.startswith(
                    "napari_zarr_vectors.napari.widgets"
                ):
                    offenders.append(f"{path.name}: {name}")
    assert offenders == []
    edges, _ = graph()
    for module in (m for m in edges if m.startswith("qa.")):
        assert not any(t.startswith("widgets") for t in edges[module]), module


def test_importing_the_pyramid_qa_model_loads_no_qt():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import napari_zarr_vectors.napari.qa.model\n"
        f"qt = [m for m in sys.modules if m.split('.')[0] in {QT_MODULES!r}]\n"
        "assert qt == [], qt\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
