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
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from napari.layers import Layer

    from napari_zarr_vectors.format.api import GeometryStore
    from napari_zarr_vectors.napari.browse.table import ObjectTable


class OpenStore:
    """One open store (one geometry of it) and what is attached to it.

    ``store`` is the store object its reader opened; layers the reader did not hand over
    (made from saved layer data) get an ``opener`` instead, called once, on first use."""

    def __init__(
        self,
        store: GeometryStore | None = None,
        *,
        controller: object | None = None,
        opener: Callable[[], GeometryStore] | None = None,
    ) -> None:
        if store is None and opener is None:
            raise ValueError("an open store needs its store or an opener")
        self._store = store
        self._opener = opener
        #: the level-of-detail controller showing it (``lod.controller.ZVLayerController``;
        #: ``None``: static layers)
        self.controller = controller
        #: the browse target of static layers (``browse.targets.StaticTarget``), made on use
        self.static_target: object | None = None
        #: the widgets' shared browse state (``browse.targets.BrowseState``), made on use
        self.browse: object | None = None
        #: the level-0 object table, read on first use
        self.objects: ObjectTable | None = None

    @property
    def store(self) -> GeometryStore:
        if self._store is None:
            assert self._opener is not None
            self._store = self._opener()
        return self._store


_OPEN: weakref.WeakKeyDictionary[Layer, OpenStore] = weakref.WeakKeyDictionary()


def register(layer: Layer, entry: OpenStore) -> None:
    """``layer`` shows ``entry``'s store."""
    _OPEN[layer] = entry


def open_store_for(layer: object) -> OpenStore | None:
    """The open store ``layer`` shows (``None``: not a layer of an open store)."""
    try:
        return _OPEN.get(layer)
    except TypeError:  # unhashable / not weak-referenceable
        return None


def open_entries() -> list[OpenStore]:
    """Every open store that still has a layer, oldest first."""
    return list({id(e): e for e in list(_OPEN.values())}.values())
