"""The one registry from a layer to everything about the open store it shows.

Every layer the plugin made from a store (data layers, the bounds box) maps to one
:class:`OpenStore`: the store object the reader opened (one geometry of it,
:class:`~napari_zarr_vectors.format.api.GeometryStore`), the level-of-detail controller
showing it (``None`` for static layers), and the browse state the widgets share. Nothing
opens a store again from its path: whoever needs the store of a layer asks here.

The registry holds layers weakly: an entry lives as long as one of its layers.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from napari.layers import Layer

    from napari_zarr_vectors.format.api import GeometryStore
    from napari_zarr_vectors.napari.browse.table import ObjectTable


@dataclass(eq=False)
class OpenStore:
    """One open store (one geometry of it) and what is attached to it."""

    store: GeometryStore
    #: the level-of-detail controller showing it (``lod.controller.ZVLayerController``;
    #: ``None``: static layers)
    controller: object | None = None
    #: the browse target of static layers (``browse.targets.StaticTarget``), made on use
    static_target: object | None = None
    #: the widgets' shared browse state (``browse.targets.BrowseState``), made on use
    browse: object | None = None
    #: the level-0 object table, read on first use
    objects: ObjectTable | None = None


_OPEN: weakref.WeakKeyDictionary[Layer, OpenStore] = weakref.WeakKeyDictionary()


def register(layer: Layer, entry: OpenStore) -> None:
    """``layer`` shows ``entry``'s store."""
    _OPEN[layer] = entry


def open_store_for(layer: object) -> OpenStore | None:
    """The open store ``layer`` shows (``None``: not a layer of an open store)."""
    try:
        return _OPEN.get(layer)  # type: ignore[call-overload]
    except TypeError:  # unhashable / not weak-referenceable
        return None


def open_entries() -> list[OpenStore]:
    """Every open store that still has a layer, oldest first."""
    return list({id(e): e for e in list(_OPEN.values())}.values())
