"""The layers of one opened store, as its :class:`.controller.ZVLayerController` holds them.

:class:`StoreLayers` keeps the data layers (held weakly, by role) and the bounds box, the
colouring each layer was last given (:class:`~napari_zarr_vectors.napari.colour.live.ColourMemory`,
so colours survive level changes) and the seconds the last swap spent on the layers' data.
:meth:`StoreLayers.swap_in` puts a finished load's layer data into them on the UI thread.
"""

from __future__ import annotations

import time
import uuid
import weakref
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from napari_zarr_vectors.napari.colour.live import ColourMemory, capture, forget_colour
from napari_zarr_vectors.napari.conventions import meta_of
from napari_zarr_vectors.napari.layerdata.build import META, LayerData
from napari_zarr_vectors.napari.lod.swap import batched, new_layer, swap, swap_empty
from napari_zarr_vectors.napari.open_stores import OpenStore, register

if TYPE_CHECKING:
    from napari.layers import Layer

    from napari import Viewer
    from napari_zarr_vectors.format.api import GeometryStore


class StoreLayers:
    """The data layers and bounds box of one opened store (held weakly).

    Parameters
    ----------
    store
        The opened store (what an emptied layer is emptied for).
    open_store
        What the layers share about the store (:mod:`..open_stores`): each added layer is
        registered with it.
    """

    def __init__(self, store: GeometryStore, open_store: OpenStore) -> None:
        self._store = store
        self._open_store = open_store
        self._refs: dict[str, weakref.ref] = {}
        self._bounds_ref: weakref.ref | None = None
        self._colour: dict[str, ColourMemory] = {}
        #: of the last swap, the seconds spent swapping the layers' data
        self.seconds = 0.0

    @property
    def layers(self) -> list[Layer]:
        """The data layers (not the bounds box), in the order they were added."""
        out = [r() for r in self._refs.values()]
        return [layer for layer in out if layer is not None]

    @property
    def bounds_layer(self) -> Any:
        return None if self._bounds_ref is None else self._bounds_ref()

    def add(self, layer: Layer) -> bool:
        """Hold ``layer`` under the role its ``metadata["zarr_vectors"]["role"]`` names (the
        bounds box under its own); whether it is a data layer."""
        meta = layer.metadata.setdefault(META, {})
        role = meta.get("role", f"layer{len(self._refs)}")
        if role == "bounds":
            self.add_bounds(layer)
            return False
        self._refs[role] = weakref.ref(layer)
        register(layer, self._open_store)
        self._colour[role] = ColourMemory(applied=capture(layer))
        return True

    def add_bounds(self, layer: Layer) -> None:
        self._bounds_ref = weakref.ref(layer)
        register(layer, self._open_store)

    def forget_colours(self) -> None:
        """Forget every colour choice on the data layers (the next swap draws the builders'
        default colours)."""
        for role, ref in self._refs.items():
            layer = ref()
            if layer is not None:
                forget_colour(layer)
                self._colour[role] = ColourMemory(applied=capture(layer))

    def swap_in(
        self,
        viewer: Viewer | None,
        layer_data: Sequence[LayerData],
        add: Callable[[Layer], None],
    ) -> None:
        """Swap ``layer_data`` into the layers of their roles (UI thread): a layer without
        data is emptied, one the user deleted is left alone, a role new to the view gets a
        new layer that ``add`` manages and puts in ``viewer``."""
        new = {meta_of(kw)["role"]: (data, kw, kind) for data, kw, kind in layer_data}  # type: ignore[index]  # the loader's layer data carry their block
        present = {id(layer) for layer in viewer.layers} if viewer is not None else set()
        for role in list(self._refs):
            layer = self._layer(role)
            if layer is None or id(layer) not in present:  # deleted by the user: leave it
                new.pop(role, None)
                continue
            if role in new:
                self._update_layer(role, layer, new.pop(role))
            else:
                self._empty_layer(role, layer)
        for role, item in new.items():  # roles the view had no data for until now
            if viewer is None:
                break
            data, kwargs, kind = item
            meta = kwargs.setdefault("metadata", {}).setdefault(META, {})
            meta["session"] = self._session_token()
            t0 = time.perf_counter()
            new_layer(
                data,
                kwargs,
                kind,
                add=add,
                fill=partial(self._update_layer, role, item=item),
            )
            self.seconds += time.perf_counter() - t0

    def _layer(self, role: str) -> Any:
        ref = self._refs.get(role)
        return None if ref is None else ref()

    def _session_token(self) -> str:
        for layer in self.layers:
            token = (meta_of(layer) or {}).get("session")
            if token:
                return token
        return uuid.uuid4().hex

    def _update_layer(self, role: str, layer: Layer, item: LayerData) -> None:
        data, kwargs, kind = item
        memory = self._colour[role]
        memory.observe(capture(layer))
        t0 = time.perf_counter()
        with batched(layer):
            swap(layer, data, kwargs, memory)
        self.seconds += time.perf_counter() - t0
        memory.applied = capture(layer)
        meta = layer.metadata.setdefault(META, {})
        new_meta = kwargs.get("metadata", {}).get(META, {})
        for key in ("vertex_count", "colour_by", "categories", "object_columns"):
            if key in new_meta:
                meta[key] = new_meta[key]

    def _empty_layer(self, role: str, layer: Layer) -> None:
        memory = self._colour[role]
        memory.observe(capture(layer))
        with batched(layer):
            swap_empty(layer, self._store)
        memory.applied = capture(layer)
        layer.metadata.setdefault(META, {})["vertex_count"] = 0
