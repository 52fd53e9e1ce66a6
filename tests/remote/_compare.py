"""Remote read == local read: comparison helpers shared by the remote tests."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

import napari_zarr_vectors as nzv
from data_paths import data_root

DATA = data_root()

#: Every fixture store, as a path relative to the fixture tree (``data_paths``).
STORES = sorted(
    str(p.relative_to(DATA))
    for pattern in ("v07/*.zarrvectors", "v09/*.zarrvectors", "v09/*/*.zarrvectors")
    for p in DATA.glob(pattern)
)


def store_levels() -> list[tuple[str, int]]:
    """``(store, level)`` for every level of every fixture store."""
    out = []
    for rel in STORES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            store = nzv.open_store(DATA / rel)
        out += [(rel, lv.index) for lv in store.levels]
    return out


def _equal_values(a: np.ndarray, b: np.ndarray, what: str) -> None:
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (what, a.shape, b.shape, a.dtype, b.dtype)
    if a.dtype.kind in "fc":
        np.testing.assert_array_equal(a, b, err_msg=what)  # NaN == NaN here
    else:
        assert a.tolist() == b.tolist(), what


def assert_same_geometry(remote: Any, local: Any, attributes: bool = True) -> None:
    """Positions, object ids, edges, faces, paths (and attributes) are identical."""
    _equal_values(remote.positions, local.positions, "positions")
    if local.vertex_object_ids is None:
        assert remote.vertex_object_ids is None
    else:
        _equal_values(remote.vertex_object_ids, local.vertex_object_ids, "vertex_object_ids")
    _equal_values(remote.edges, local.edges, "edges")
    _equal_values(remote.faces, local.faces, "faces")
    assert len(remote.paths) == len(local.paths), "paths"
    for i, (p, q) in enumerate(zip(remote.paths, local.paths, strict=True)):
        _equal_values(p, q, f"path {i}")
    _equal_values(remote.path_object_ids, local.path_object_ids, "path_object_ids")
    if attributes:
        assert sorted(remote.vertex_attributes) == sorted(local.vertex_attributes)
        for name, values in local.vertex_attributes.items():
            _equal_values(remote.vertex_attributes[name], values, f"vertex attribute {name}")
        assert sorted(remote.edge_attributes) == sorted(local.edge_attributes)
        for name, values in local.edge_attributes.items():
            _equal_values(remote.edge_attributes[name], values, f"edge attribute {name}")


def assert_same_tables(remote: Any, local: Any, level: int) -> None:
    """Object ids, object attributes, groups and group attributes are identical."""
    _equal_values(remote.object_ids(level), local.object_ids(level), "object ids")
    r_attrs, l_attrs = remote.object_attributes(level), local.object_attributes(level)
    assert sorted(r_attrs) == sorted(l_attrs), "object attribute names"
    for name, values in l_attrs.items():
        _equal_values(r_attrs[name], values, f"object attribute {name}")
    r_groups, l_groups = remote.groups(level), local.groups(level)
    assert sorted(r_groups) == sorted(l_groups), "groups"
    for g, members in l_groups.items():
        _equal_values(r_groups[g], members, f"group {g}")
    r_gattrs, l_gattrs = remote.group_attributes(level), local.group_attributes(level)
    assert sorted(r_gattrs) == sorted(l_gattrs), "group attribute names"
    for name, values in l_gattrs.items():
        _equal_values(r_gattrs[name], values, f"group attribute {name}")


def quiet(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Call ``fn`` with warnings silenced; returns the result or the raised exception."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - compared by the caller
            return exc
