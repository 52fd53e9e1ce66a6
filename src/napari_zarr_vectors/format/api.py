"""The reading API every geometry store implements: :class:`GeometryStore`.

:class:`~.store.Store` (a store's own geometry) and
:class:`~.composite.CompositeGeometryStore` (a geometry added to a composite store) both
implement it; :meth:`.store.Store.geometry` returns it. Code that reads "a geometry of a
store" (the napari level of detail, Pyramid QA, widgets) types its store as this Protocol,
so it works for either.

Cancelling: every read method takes ``cancel`` (a :class:`threading.Event`); once it is
set, fetches not started yet are dropped and the read raises
:class:`~.errors.ZVCancelledError`. :meth:`GeometryStore.reading` is that scope, for
callers that read several times under one event.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from threading import Event
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from .cache import ChunkCache
    from .geometry import Geometry
    from .layout import Layout
    from .metadata import LevelInfo
    from .objects import ObjectIndex


@runtime_checkable
class GeometryStore(Protocol):
    """One geometry of a ZV store: its metadata, levels and reads."""

    levels: list[LevelInfo]

    # -- the store's metadata ------------------------------------------------------------
    @property
    def path(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def remote(self) -> bool: ...
    @property
    def listable(self) -> bool: ...
    @property
    def zv_version(self) -> str: ...
    @property
    def generation(self) -> str: ...
    @property
    def ndim(self) -> int: ...
    @property
    def axes(self) -> list[str]: ...
    @property
    def axis_types(self) -> list[str]: ...
    @property
    def units(self) -> list[str | None]: ...
    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray]: ...
    @property
    def chunk_shape(self) -> np.ndarray: ...
    @property
    def base_bin_shape(self) -> np.ndarray: ...
    @property
    def geometry_type(self) -> str: ...
    @property
    def geometry_types(self) -> list[str]: ...

    # -- levels, chunks, objects ---------------------------------------------------------
    def level(self, level: int) -> LevelInfo: ...
    def chunks(self, level: int = 0) -> np.ndarray: ...
    def object_index(self, level: int = 0, strict: bool = False) -> ObjectIndex | None: ...
    def object_index_parts(self, level: int, rows_per_part: int) -> list[tuple[int, int]]: ...
    def object_index_part(
        self, level: int, start: int, stop: int, strict: bool = False
    ) -> ObjectIndex | None: ...
    def object_ids(self, level: int = 0) -> np.ndarray: ...
    def object_presence(self, level: int = 0) -> np.ndarray: ...
    def object_attributes(self, level: int = 0) -> dict[str, np.ndarray]: ...
    def object_attribute_presence(self, level: int = 0) -> dict[str, np.ndarray]: ...
    def groups(self, level: int = 0) -> dict[int, np.ndarray]: ...
    def group_names(self, level: int = 0) -> dict[int, str]: ...
    def group_attributes(self, level: int = 0) -> dict[str, np.ndarray]: ...
    def vertex_attribute_names(self, level: int = 0) -> list[str]: ...

    # -- reading -------------------------------------------------------------------------
    def reading(self, cancel: Event | None) -> contextlib.AbstractContextManager[None]:
        """Within this block, reads of the calling thread stop once ``cancel`` is set."""
        ...

    def prefetch(
        self,
        level: int,
        chunks: np.ndarray,
        cache: ChunkCache,
        *,
        attributes: bool = True,
        cancel: Event | None = None,
    ) -> int: ...

    def read(
        self,
        level: int = 0,
        bbox: Sequence[Sequence[float]] | None = None,
        object_ids: Sequence[int] | np.ndarray | None = None,
        group_ids: Sequence[int] | np.ndarray | None = None,
        *,
        chunks: np.ndarray | None = None,
        attributes: bool = True,
        strict: bool = False,
        cache: ChunkCache | None = None,
        cancel: Event | None = None,
    ) -> Geometry: ...

    def read_pieces(
        self,
        level: int,
        chunks: np.ndarray,
        *,
        fraction: float = 1.0,
        bbox: Sequence[Sequence[float]] | None = None,
        max_vertices: int | None = None,
        attributes: bool = True,
        strict: bool = False,
        cache: ChunkCache | None = None,
        cancel: Event | None = None,
    ) -> Geometry: ...


def store_layout(store: GeometryStore) -> Layout | None:
    """The layout ``store`` reads its arrays with (:class:`~.store.Store` has one); ``None``
    for an added geometry of a composite store (:class:`~.composite.CompositeGeometryStore`),
    whose arrays are read whole: it has no per-level array documents, stored-size listing,
    attribute listings or cross-level links."""
    layout: Layout | None = getattr(store, "layout", None)
    return layout
