"""Types the napari side shares: napari layer data tuples and their attributes. Annotations
only. The stores it reads are typed as :class:`~napari_zarr_vectors.format.api.GeometryStore`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias, TypedDict

import numpy as np

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
