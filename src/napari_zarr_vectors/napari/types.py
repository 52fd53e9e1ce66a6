"""Types the napari side shares: the stores it reads, napari layer data tuples and their
attributes. Annotations only: napari and the stores are imported for type checkers alone."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, TypedDict

import numpy as np

if TYPE_CHECKING:
    from napari_zarr_vectors.format.composite import CompositeGeometryStore
    from napari_zarr_vectors.format.store import Store

#: A store the napari side reads: a store's own geometry, or one added geometry of it.
ZVStore: TypeAlias = "Store | CompositeGeometryStore"

#: A napari layer's data: an array (Points, Tracks, Vectors), a list of arrays (Shapes), or a
#: Surface's ``(vertices, faces[, values])``.
LayerData: TypeAlias = "np.ndarray | list[np.ndarray] | tuple[np.ndarray, ...]"


class LayerAttributes(TypedDict, total=False):
    """The attributes of a napari layer data tuple this plugin reads (napari passes more)."""

    name: str
    metadata: dict[str, Any]
    #: a pandas DataFrame, or ``{name: column}``
    features: object
    scale: Sequence[float]
    translate: Sequence[float]
    rotate: np.ndarray
    shear: np.ndarray
    affine: np.ndarray
    axis_labels: Sequence[str]
    units: Sequence[object]
    shape_type: Sequence[str]
    length: float


#: A napari layer data tuple ``(data, attributes, layer type)``.
FullLayerData: TypeAlias = "tuple[LayerData, LayerAttributes, str]"
