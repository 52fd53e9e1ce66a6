"""npe2 writer: napari layers -> a new Zarr Vectors store (``*.zarrvectors``).

*File > Save Selected Layers...* with a ``.zarrvectors`` name, or
``viewer.layers.save(path, plugin="napari-zarr-vectors")``. Layers opened from one store save
the store's objects passing the layers' filters, read whole at level 0 as Export reads them
(the store's geometry, attributes, groups and group names; a graph's edges or nodes layer
gives the graph). Other layers are turned into one :class:`~napari_zarr_vectors.write.WriteSpec`
(:func:`~napari_zarr_vectors.napari.layerdata.inverse.spec_from_layers`, which documents the
layer -> store mapping), which :func:`napari_zarr_vectors.write.write_store` writes through
the reference writer (the ``write`` extra).

``save_layers(..., loaded_only=True)`` saves what layers opened from a store hold instead
(their geometry type, the object ids, object attributes and groups their features still
carry), and says so in a napari notification.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from napari_zarr_vectors.format.api import GeometryStore
from napari_zarr_vectors.format.distinct import distinct
from napari_zarr_vectors.napari._napari_compat import open_viewers
from napari_zarr_vectors.napari.browse.targets import is_data_meta, object_filter_of
from napari_zarr_vectors.napari.conventions import meta_of
from napari_zarr_vectors.napari.layerdata.inverse import spec_from_layers
from napari_zarr_vectors.napari.types import FullLayerData
from napari_zarr_vectors.write.engine import WriteError, write_store
from napari_zarr_vectors.write.export import export_objects

if TYPE_CHECKING:
    from napari.layers import Layer

#: The store suffix napari's save dialog and ``layers.save`` use for this writer.
SUFFIX = ".zarrvectors"


# --------------------------------------------------------------------------------------------
# npe2 entry point
# --------------------------------------------------------------------------------------------


def write_layers(path: str, layer_data: list[FullLayerData]) -> list[str]:
    """npe2 multi-layer writer: the layers as one new store at ``path``; returns its path."""
    return [str(save_layers(path, layer_data))]


def save_layers(
    path: str | os.PathLike,
    layer_data: Sequence[FullLayerData | Layer],
    *,
    pyramid: bool = True,
    validate: bool = False,
    show_progress: bool = True,
    loaded_only: bool = False,
) -> Path:
    """Write napari layers (layer objects or ``(data, attributes, type)`` tuples) as a new
    store at ``path`` (``.zarrvectors`` is added when missing).

    Layers opened from a store save **the store's data**: every object passing the
    layers' filters (isolated objects: those objects), read whole at level 0 from the store
    as *Export* reads them (:func:`store_selection`, :func:`~napari_zarr_vectors.write.
    export_objects`), with the store's attributes, groups and group names; a graph's edges
    and nodes layers, together or alone, give the graph. ``loaded_only=True`` saves what
    the layers hold instead (maybe a coarse level, maybe a few chunks), and says so in a
    napari notification, as when the store cannot be read any more.

    ``pyramid=False`` writes level 0 only. Refuses to write into a store a layer was read
    from and never replaces an existing folder (see :func:`~napari_zarr_vectors.write.
    write_store`). With ``show_progress``, napari's activity panel shows the steps.
    """
    objects: list[Any] = list(layer_data)  # napari layers or layer data tuples
    tuples = [x.as_layer_data_tuple() if hasattr(x, "as_layer_data_tuple") else x for x in objects]
    target = with_suffix(path)
    selection = store_selection(tuples, [x for x in objects if hasattr(x, "metadata")])
    store = None
    if selection is not None:
        if loaded_only:
            _notify_loaded(tuples, "as asked")
        else:
            store, reason = selection.open()
            if store is None:
                _notify_loaded(tuples, reason)
    activity = _Activity(f"Saving {target.name}") if show_progress else None
    try:
        if store is not None and selection is not None:  # a store only with a selection
            out = export_objects(
                store,
                target,
                selection.object_ids,
                pyramid=pyramid,
                validate=validate,
                progress=activity,
            )
        else:
            spec, sources = spec_from_layers(tuples)
            out = write_store(
                target,
                spec,
                pyramid=pyramid,
                sources=sources,
                validate=validate,
                progress=activity,
            )
        if activity is not None:
            activity.finish()
        return out
    finally:
        if activity is not None:
            activity.close()


@dataclass(frozen=True)
class StoreSelection:
    """What saving layers opened from one store writes: ``object_ids`` of the store at
    ``path`` (its geometry ``geometry_type``), ``None`` for all of them."""

    path: str
    geometry_type: str | None
    object_ids: np.ndarray | None

    def open(self) -> tuple[GeometryStore | None, str]:
        """``(store, "")``, or ``(None, why)`` when the store cannot be read any more."""
        from napari_zarr_vectors.format.errors import ZVError
        from napari_zarr_vectors.format.store import open_store

        try:
            store = open_store(self.path)
            kind = self.geometry_type
            return (store.geometry(kind) if kind and kind != store.geometry_type else store), ""
        except (ZVError, OSError, KeyError, ValueError) as e:
            return None, f"its store cannot be read ({e})"


def store_selection(
    layer_data: Sequence[FullLayerData], layers: Sequence[Layer] = ()
) -> StoreSelection | None:
    """The store objects that saving these layers writes, or ``None`` when they are not
    (only) layers opened from a store (store bounds boxes are left out; Pyramid QA overlays
    and levels added side by side are saved as they are).

    Data layers give the objects passing their filter (their level-of-detail controller's,
    or that of the browse widgets' static target), no filter: every object; isolated
    objects give themselves. The layers are found by their metadata among ``layers`` and
    the open viewers' layers (napari's writer hands over data tuples only).
    Layers of several stores are refused (:class:`WriteError`): a store holds one geometry.
    """
    metas = [m for m in (meta_of(t[1]) or {} for t in layer_data) if m.get("role") != "bounds"]
    if not metas or not all(m.get("path") for m in metas):
        return None
    isolated = [m for m in metas if m.get("role") == "isolated" and m.get("object_id") is not None]
    data = [m for m in metas if is_data_meta(m)]
    if len(isolated) + len(data) != len(metas):
        return None  # QA overlays: what they show
    stores = sorted({(str(m["path"]), m.get("geometry_type")) for m in metas}, key=str)
    if len(stores) > 1:
        names = ", ".join(f"{Path(p).name} ({k})" for p, k in stores)
        raise WriteError(
            f"a Zarr Vectors store holds one geometry: select the layers of one store "
            f"to save (got {names})"
        )
    ids: list[np.ndarray] = [np.array([int(m["object_id"]) for m in isolated], np.int64)]
    for meta in data:
        allowed = _filter_of(meta, layers)
        if allowed is None:
            ids = []
            break
        ids.append(np.asarray(allowed, np.int64))
    chosen = distinct(np.concatenate(ids)) if ids else None
    return StoreSelection(stores[0][0], stores[0][1], chosen)


def _filter_of(meta: dict[str, Any], layers: Sequence[Layer]) -> np.ndarray | None:
    """The object filter of the layer whose ``metadata["zarr_vectors"]`` is ``meta``."""
    candidates = list(layers)
    for viewer in open_viewers():
        candidates += list(viewer.layers)
    for layer in candidates:
        if meta_of(layer) is meta:
            return object_filter_of(layer)
    return None


def _notify_loaded(layer_data: Sequence[FullLayerData], reason: str) -> None:
    """A napari notification (a toast in the viewer) that layers opened from a store are
    saved as loaded, not as their store's objects whole."""
    from napari.utils.notifications import show_warning

    parts = []
    for _, attributes, _ in layer_data:
        meta = meta_of(attributes) or {}
        if meta.get("path") and meta.get("role") != "bounds":
            count = meta.get("vertex_count")
            held = f"{int(count):,} vertices" if count is not None else "what it holds"
            parts.append(f"{attributes.get('name')!r} ({held} of level {meta.get('level', 0)})")
    show_warning(
        f"Saving only what is loaded, {reason}: {', '.join(parts)}, not the store's objects "
        "whole at full resolution (maybe a coarse level, maybe a few chunks)."
    )


def with_suffix(path: str | os.PathLike) -> Path:
    """``path`` ending in ``.zarrvectors`` (added when missing)."""
    target = Path(os.fspath(path))
    return target if target.name.endswith(SUFFIX) else target.with_name(target.name + SUFFIX)


class _Activity:
    """A napari progress bar (activity panel) driven by the engine's step callback."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.bar: Any = None
        self.closed = False

    def __call__(self, step: int, n_steps: int, description: str) -> None:
        if self.closed:  # a late step after the write ended
            return
        from napari.utils import progress

        if self.bar is None:
            self.bar = progress(total=n_steps, desc=self.title)
        bar = self.bar
        if n_steps != bar.total:  # a read of unknown length (0: busy) before the write
            bar.total = n_steps
        bar.set_description(f"{self.title}: {description}")
        if step > bar.n:
            bar.update(step - bar.n)

    def finish(self) -> None:
        bar = self.bar
        if bar is not None and bar.total and bar.n < bar.total:
            bar.update(bar.total - bar.n)

    def close(self) -> None:
        self.closed = True
        bar, self.bar = self.bar, None
        if bar is not None:
            bar.close()
