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
for ``*.zarrvectors/`` and ``*.zv/`` (zarr-vectors' canonical and short store suffixes), and
for NIfTI images, the first time any of its code runs (plugin activation, a read, a sample), for each pattern the
user has not already chosen a reader for: :func:`register_reader_preference`. Folders with
any other name still open through napari's reader dialog, which offers this plugin whenever
:func:`napari_get_reader` recognises the folder.
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
from napari_zarr_vectors.format.api import GeometryStore
from napari_zarr_vectors.napari.layerdata.build import (
    LayerData,
    bounds_box_layer,
    layers_from_geometry,
)
from napari_zarr_vectors.napari.layerdata.store_info import store_info
from napari_zarr_vectors.napari.lod import view_geometry
from napari_zarr_vectors.napari.lod.cache import shared_cache
from napari_zarr_vectors.napari.lod.loader import Loader, LoadRequest
from napari_zarr_vectors.napari.lod.settings import store_budget
from napari_zarr_vectors.napari.npe2 import nifti
from napari_zarr_vectors.napari.npe2.attach import install_viewer_hooks, register_pending

#: npe2 plugin name (must match ``napari.yaml``).
PLUGIN_NAME = "napari-zarr-vectors"

#: Reader-preference patterns napari matches against directories (note the trailing slash):
#: zarr-vectors' canonical store suffix and its accepted short form.
READER_PATTERNS = ("*.zarrvectors/", "*.zv/")

#: The canonical one of :data:`READER_PATTERNS`.
READER_PATTERN = READER_PATTERNS[0]

#: Store-name suffixes that make a URL worth asking the core about.
STORE_SUFFIXES = (".zarrvectors", ".zv")

#: A camera-less overview that reads more vertices than this (whole chunks) is loaded in the
#: background by the controller when a viewer will show it: the reader returns the bounds.
BACKGROUND_READ_VERTICES = 2_000_000

PathLike = str | os.PathLike
#: What napari passes a reader: one path, or a list of them.
Paths = PathLike | list[PathLike] | tuple[PathLike, ...]
#: npe2's "read, but no layers" sentinel, and what a reader returns.
NoLayers = tuple[None]
ReadLayers = list[LayerData | NoLayers]


def napari_get_reader(path: Paths) -> Callable | None:
    """npe2 ``get_reader`` hook: a reader function for one ZV store path, else ``None``.

    The function returned is :func:`read_for_napari`: a store claimed here that cannot be
    opened is reported with the core's own message, not napari's "refused the file"."""
    if isinstance(path, (list, tuple)):
        if len(path) != 1:
            return None
        path = path[0]
    if not is_zarr_vectors_path(path):
        return None
    return read_for_napari


def is_zarr_vectors_path(path: PathLike) -> bool:
    """Whether ``path`` is a ZV store root (or its root ``zarr.json``), or names one.

    Local paths: reads the root ``zarr.json`` only and looks for a ``zarr_vectors`` block; a
    folder named ``*.zarrvectors`` or ``*.zv`` is claimed whatever its ``zarr.json`` holds
    (missing, not JSON, no ``zarr_vectors`` block), so that opening it says why it is no
    readable store. URLs: asks the core (metadata only) when the URL names such a store, and
    claims it unless the core fails for another reason than the store's content.
    """
    text = os.fspath(path)
    if "://" in text:
        if not any(suffix in text for suffix in STORE_SUFFIXES):
            return False
        try:
            nzv.open_store(text)
        except nzv.ZVError:
            return True  # the reader reports what is wrong with it
        except Exception:  # noqa: BLE001 - unreachable, a bug, ...: not ours to report
            return False
        return True
    local = Path(text)
    if local.name.endswith(STORE_SUFFIXES) and local.is_dir():
        return True
    root_json = _root_json(local)
    if root_json is None:
        return False
    try:
        with open(root_json, "rb") as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return False
    attrs = meta.get("attributes") if isinstance(meta, dict) else None
    return isinstance(attrs, dict) and isinstance(attrs.get("zarr_vectors"), dict)


def read_for_napari(path: Paths, stack: bool = False) -> ReadLayers:
    """What napari calls to read a path :func:`napari_get_reader` claimed:
    :func:`read_zarr_vectors`, with a store that cannot be opened or read (any
    :class:`~napari_zarr_vectors.ZVError`) shown as a napari error notification carrying the
    core's message (file, level, array, chunk) and no layers. Raising instead would reach
    the user only as napari's generic "Tried opening with napari-zarr-vectors, but failed"."""
    try:
        return read_zarr_vectors(path, stack)
    except nzv.ZVError as e:
        # the folder's name first (napari's toast shows the first ~40 characters); the
        # core's message names the full path
        name = os.fspath(path[0] if isinstance(path, (list, tuple)) else path).rstrip("/")
        _notify_error(f"Cannot open {name.rsplit('/', 1)[-1]}: {e}")
        return [(None,)]  # npe2's "read, but no layers" sentinel


def read_zarr_vectors(
    path: Paths,
    stack: bool = False,
    *,
    level: int | None = None,
    vertex_budget: int | None = None,
) -> ReadLayers:
    """Open a ZV store as layer data tuples (the store bounds box first, then the data).

    Without ``level`` (what napari calls), the layers are **level-of-detail** layers: the
    first read is the overview a 1000-pixel view of the whole store would show (the level
    whose bins that view resolves, :func:`.plan.plan_level`, and a stable part of its objects
    within ``vertex_budget``, default :func:`.settings.vertex_budget`), and once the layers
    are inserted into a
    ``napari.Viewer`` a :class:`.controller.ZVLayerController` takes over and loads what
    the view shows (docs/level-of-detail.md). Each layer's
    ``metadata["zarr_vectors"]["session"]`` links it to that controller.

    With ``level``, the whole level is read into static layers (their names carry the
    level).

    A composite store (several geometries, ``store.geometry_types``) gives one set of layers
    per geometry, each with its own level of detail (the bounds box comes with the first);
    a geometry the core cannot read is named in a warning and left out.

    A store whose decoding needs a missing optional dependency (e.g. DracoPy) produces a
    napari error notification and no layers. Corrupt chunks are skipped by the core, which
    emits a :class:`~napari_zarr_vectors.ZVChunkWarning` naming each one.
    """
    if isinstance(path, (list, tuple)):
        path = path[0]
    path = _store_root(Path(os.fspath(path))) if "://" not in os.fspath(path) else path
    register_reader_preference()
    store = nzv.open_store(path)
    if level is not None:
        install_viewer_hooks()  # the open viewers give the static layers their hover status
    out: ReadLayers = []
    for kind in store.geometry_types:
        try:
            part = store.geometry(kind)
        except nzv.ZVFormatError as e:
            warnings.warn(f"{store.name}: geometry {kind!r} left out: {e}", stacklevel=2)
            continue
        first = part is store
        if level is None:
            out += _read_lod(part, vertex_budget, with_bounds=first)
        elif first or any(lv.index == int(level) for lv in part.levels):
            out += _read_static(part, int(level), with_bounds=first)
    return out


def _read_static(
    store: GeometryStore, level: int, with_bounds: bool = True
) -> Sequence[LayerData | NoLayers]:
    info = store_info(store, level)
    try:
        geometry, dropped = view_geometry.finite_geometry(store.read(level=level))
    except nzv.MissingDependencyError as e:
        return _missing_dependency(store, e)
    if dropped:
        warnings.warn(view_geometry.nonfinite_message(store.name, level, dropped), stacklevel=2)
    if not geometry.vertex_count:
        _notify_info(f"{store.name}: level {level} holds no vertices; showing its bounds only.")
    out = layers_from_geometry(geometry, info, bounds_layer=with_bounds)
    token = register_pending(store, None, len(out), None)  # the layers find this store
    for _, kwargs, _ in out:
        kwargs["metadata"]["zarr_vectors"]["session"] = token
    return out


def _read_lod(
    store: GeometryStore, vertex_budget: int | None, with_bounds: bool = True
) -> Sequence[LayerData | NoLayers]:
    """Level-of-detail layers of one geometry of a store (``with_bounds``: with the bounds
    box, which a composite store's first geometry brings)."""
    loader = Loader(store, shared_cache())
    budget = int(vertex_budget) if vertex_budget is not None else store_budget(loader.whole_rows)
    request = LoadRequest(budget=budget, force=True)
    plan, _ = loader.plan(request)
    big = float(plan.estimates.sum()) > BACKGROUND_READ_VERTICES
    if with_bounds and big and install_viewer_hooks():
        # a big overview: the bounds now, the data from the controller's worker instead of a
        # frozen window while it decodes; its progress is in the status bar (no toast left
        # over the canvas)
        bounds = bounds_box_layer(store_info(store, plan.level, lod=True, objects=False))
        empty = np.empty((0, store.levels[0].key_ndim), np.int64)
        token = register_pending(store, loader, 1, (plan.level, empty, None), vertex_budget)
        bounds[1]["metadata"]["zarr_vectors"]["session"] = token
        return [bounds]
    try:
        result = loader.load(request)
    except nzv.MissingDependencyError as e:
        return _missing_dependency(store, e)
    assert result is not None
    for chunk, message in result.failed:
        warnings.warn(
            f"{store.name}: level {result.level} chunk {'.'.join(map(str, chunk))} left out: "
            f"{message}",
            nzv.ZVChunkWarning,
            stacklevel=3,
        )
    if not result.vertex_count:
        _notify_info(
            f"{store.name}: the overview (level {result.level}) holds no vertices; "
            "zoom in to load data."
        )
    out = [bounds_box_layer(loader.info(result.level))] if with_bounds else []
    out += result.layer_data
    if not out:  # nothing in the overview: the controller adds layers once data is in view
        return []
    token = register_pending(
        store,
        loader,
        len(out),
        (result.level, result.chunks, result.key),
        vertex_budget,
        result.share,
    )
    for _, kwargs, _ in out:
        kwargs["metadata"]["zarr_vectors"]["session"] = token
    return out


def _missing_dependency(store: GeometryStore, e: Exception) -> ReadLayers:
    hint = "" if "pip install" in str(e) else " (pip install 'napari-zarr-vectors[draco]')"
    _notify_error(f"Cannot open {store.name}: {e}{hint}")
    return [(None,)]  # npe2's "read, but no layers" sentinel


def register_reader_preference() -> bool:
    """Make this plugin napari's reader for ``*.zarrvectors/`` and ``*.zv/`` folders and
    for NIfTI images (:data:`.nifti.READER_PATTERNS`).

    Leaves alone each pattern the user already associated with a reader. Returns whether the
    settings changed. Safe to call repeatedly (dict lookups once set).
    """
    from napari.settings import get_settings

    plugins = get_settings().plugins
    current = plugins.extension2reader
    patterns = (*READER_PATTERNS, *nifti.READER_PATTERNS)
    missing = [pattern for pattern in patterns if pattern not in current]
    if not missing:
        return False
    plugins.extension2reader = {**current, **dict.fromkeys(missing, PLUGIN_NAME)}
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


def _notify_error(message: str) -> None:
    from napari.utils.notifications import show_error

    show_error(message)


def _notify_info(message: str) -> None:
    from napari.utils.notifications import show_info

    show_info(message)
