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
    """``(imported napari-side module, is function-local)`` for every relative import."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = module_name(path).split(".")
    package = here[:-1] if path.name != "__init__.py" else here
    local_nodes = {
        id(n)
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
        for n in ast.walk(f)
    }
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue
        base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
        if node.level - 1 > len(package):
            continue  # outside the napari package (e.g. ..format)
        target = [*base, *(node.module.split(".") if node.module else [])]
        names = (
            [".".join([*target, a.name]) for a in node.names]
            if node.module is None
            else [".".join(target)]
        )
        for name in names:
            out.append((name.strip(".") or "__init__", id(node) in local_nodes))
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
    assert "reader" in edges["opening"] and "session" in edges["reader"]
    assert "controller" in edges["session"] and "loader" in edges["controller"]
    for low in ("loader", "lod", "store_info", "view_geometry", "layers", "settings"):
        assert not edges[low] & {"reader", "controller", "session", "opening"}, low


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
