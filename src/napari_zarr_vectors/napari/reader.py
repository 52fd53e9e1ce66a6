"""npe2 reader: a Zarr Vectors store path -> napari layer data tuples.

``napari_get_reader`` answers "not mine" (``None``) after reading at most one small file,
the root ``zarr.json``. Everything else goes through the format core
(:func:`napari_zarr_vectors.open_store`); the layer mapping lives in :mod:`.layers`.

Reader preference
-----------------
ZV roots carry an OME-style ``multiscales`` block, and napari offers *every* reader that
accepts directories for a directory, so napari's builtin reader and napari-ome-zarr also
qualify for a ``.zarrvectors`` folder: napari then asks the user to choose (drag and drop)
or raises ``MultipleReaderError`` (``viewer.open``). A plugin cannot change that choice
before napari runs any of its code, so the plugin registers itself as the preferred reader
for ``*.zarrvectors/`` the first time any of its code runs (plugin activation, a read, a
sample) unless the user already chose a reader for that pattern: :func:`register_reader_preference`.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import napari_zarr_vectors as nzv

from .layers import LayerData, StoreInfo, layers_from_geometry

#: npe2 plugin name (must match ``napari.yaml``).
PLUGIN_NAME = "napari-zarr-vectors"

#: Reader-preference pattern napari matches against directories (note the trailing slash).
READER_PATTERN = "*.zarrvectors/"

#: Open the finest level with at most this many vertices (else the coarsest level).
VERTEX_BUDGET = 200_000

PathLike = str | os.PathLike


def napari_get_reader(path: PathLike | Sequence[PathLike]) -> Callable | None:
    """npe2 ``get_reader`` hook: a reader function for one ZV store path, else ``None``."""
    if isinstance(path, (list, tuple)):
        if len(path) != 1:
            return None
        path = path[0]
    if not is_zarr_vectors_path(path):
        return None
    return read_zarr_vectors


def is_zarr_vectors_path(path: PathLike) -> bool:
    """Whether ``path`` is a ZV store root (or its root ``zarr.json``).

    Local paths: reads the root ``zarr.json`` only and looks for a ``zarr_vectors`` block.
    URLs: asks the core (metadata only) when the URL names a ``.zarrvectors`` store.
    """
    text = os.fspath(path)
    if "://" in text:
        if ".zarrvectors" not in text:
            return False
        try:
            nzv.open_store(text)
        except Exception:  # noqa: BLE001 - any failure means "not mine"
            return False
        return True
    root_json = _root_json(Path(text))
    if root_json is None:
        return False
    try:
        with open(root_json, "rb") as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return False
    attrs = meta.get("attributes") if isinstance(meta, dict) else None
    return isinstance(attrs, dict) and isinstance(attrs.get("zarr_vectors"), dict)


def read_zarr_vectors(
    path: PathLike | Sequence[PathLike], stack: bool = False, *, level: int | None = None
) -> list[LayerData]:
    """Open a ZV store as layer data tuples (the store bounds box first, then the data).

    ``level`` defaults to :func:`choose_level` (finest level within :data:`VERTEX_BUDGET`).
    A store whose decoding needs a missing optional dependency (e.g. DracoPy) produces a
    napari error notification and no layers. Corrupt chunks are skipped by the core, which
    emits a :class:`~napari_zarr_vectors.ZVChunkWarning` naming each one.
    """
    if isinstance(path, (list, tuple)):
        path = path[0]
    path = _store_root(Path(os.fspath(path))) if "://" not in os.fspath(path) else path
    register_reader_preference()
    store = nzv.open_store(path)
    if level is None:
        level = choose_level(store.levels, VERTEX_BUDGET)
    info = store_info(store, level)
    try:
        geometry = store.read(level=level)
    except nzv.MissingDependencyError as e:
        hint = "" if "pip install" in str(e) else " (pip install 'napari-zarr-vectors[draco]')"
        _notify_error(f"Cannot open {store.name}: {e}{hint}")
        return [(None,)]  # npe2's "read, but no layers" sentinel
    if not geometry.vertex_count:
        _notify_info(f"{store.name}: level {level} holds no vertices; showing its bounds only.")
    return layers_from_geometry(geometry, info)


def choose_level(levels: Sequence[Any], budget: int = VERTEX_BUDGET) -> int:
    """The finest level whose ``vertex_count`` fits ``budget``, else the coarsest known one.

    Levels with an unknown (``None``) vertex count never fit; when no count is known at all,
    level 0 is used. A later issue replaces this with view-driven loading.
    """
    ordered = sorted(levels, key=lambda lv: lv.index)
    known = [lv for lv in ordered if lv.vertex_count is not None]
    for lv in known:
        if lv.vertex_count <= budget:
            return int(lv.index)
    if not known:
        return int(ordered[0].index) if ordered else 0
    return int(min(known, key=lambda lv: (lv.vertex_count, -lv.index)).index)


def store_info(store: Any, level: int) -> StoreInfo:
    """The store facts the layer builders need (metadata, object attributes, groups)."""
    lo, hi = store.bounds
    return StoreInfo(
        path=str(store.path),
        name=str(store.name),
        geometry_type=str(store.geometry_type),
        axes=tuple(str(a) for a in store.axes),
        units=tuple(store.units) if store.units is not None else (None,) * store.ndim,
        bounds=(np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)),
        level=int(level),
        scale=_layer_scale(store),
        object_attributes=_optional(store.object_attributes, level),
        groups=_optional(store.groups, level),
    )


def register_reader_preference() -> bool:
    """Make this plugin napari's reader for ``*.zarrvectors/`` folders.

    Does nothing when the user already associated a reader with that pattern. Returns whether
    the settings changed. Safe to call repeatedly (a dict lookup once set).
    """
    from napari.settings import get_settings

    plugins = get_settings().plugins
    current = plugins.extension2reader
    if READER_PATTERN in current:
        return False
    plugins.extension2reader = {**current, READER_PATTERN: PLUGIN_NAME}
    return True


def on_activate(context: Any = None) -> None:
    """npe2 ``on_activate`` hook: register the reader preference (see module docstring)."""
    register_reader_preference()


# --------------------------------------------------------------------------------------------


def _root_json(path: Path) -> Path | None:
    if path.name == "zarr.json" and path.is_file():
        return path
    candidate = path / "zarr.json"
    return candidate if candidate.is_file() else None


def _store_root(path: Path) -> Path:
    return path.parent if path.name == "zarr.json" else path


def _layer_scale(store: Any) -> np.ndarray:
    """World units per layer data unit: level-0 bin shape, else chunk shape, else 1."""
    ndim = int(store.ndim)
    for candidate in (
        getattr(store.levels[0], "bin_shape", None) if store.levels else None,
        store.chunk_shape,
    ):
        if candidate is None:
            continue
        scale = np.asarray(candidate, dtype=float).reshape(-1)
        if scale.shape == (ndim,) and np.all(np.isfinite(scale)) and np.all(scale > 0):
            return scale
    return np.ones(ndim)


def _optional(getter: Callable[[int], dict], level: int) -> dict:
    """``getter(level)`` as a dict; a table the core cannot read is left out with a warning
    (the geometry still opens, without those features)."""
    try:
        return dict(getter(level) or {})
    except nzv.ZVError as e:
        warnings.warn(f"{getter.__name__} of level {level} left out: {e}", stacklevel=3)
        return {}


def _notify_error(message: str) -> None:
    from napari.utils.notifications import show_error

    show_error(message)


def _notify_info(message: str) -> None:
    from napari.utils.notifications import show_info

    show_info(message)
