"""A builder's default colouring of fresh layer data (worker side, no live layer): colour
attributes, ids, direction colours, contrast limits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from napari_zarr_vectors.format.distinct import distinct
from napari_zarr_vectors.format.missing import OBJECT_UNKNOWN
from napari_zarr_vectors.napari.colour.spec import MISSING_COLOUR, display_range, golden_hues
from napari_zarr_vectors.napari.conventions import DIRECTION, GROUP_ID, OBJECT_ID

#: Store attribute names treated as per-vertex colours when they have 3 or 4 channels.
COLOUR_ATTRIBUTE_NAMES = ("rgb", "rgba", "color", "colour", "colors", "colours")

#: Number of quantisation levels per channel of the direction colour palette (8**3 colours).
_DIRECTION_LEVELS = 8

DEFAULT_COLORMAP = "viridis"

#: viridis without its darkest fifth, whose purple vanishes on a black canvas: what Colour
#: by draws numbers in unless another colormap is chosen (:func:`lifted_viridis`).
LIFTED_VIRIDIS = "viridis (lifted)"


@dataclass(frozen=True)
class DefaultColour:
    """A default colouring: a float feature + colormap, or a direct colour (name or (N, 4)).

    ``source`` names the feature the colours come from (also for direct colours).
    """

    feature: str | None = None
    colormap: Any = DEFAULT_COLORMAP
    contrast_limits: tuple[float, float] | None = None
    direct: Any = None
    source: str | None = None


def default_point_colour(
    vertex_attributes: Mapping[str, np.ndarray],
    features: dict[str, np.ndarray],
    name: str | None,
) -> DefaultColour:
    """A fresh Points layer's colouring: a 3- or 4-channel colour attribute as is, else the
    scalar feature ``name`` (the builder's pick), else distinct object colours, else blue."""
    for name_, values in vertex_attributes.items():
        values = np.asarray(values)
        if (
            name_.lower() in COLOUR_ATTRIBUTE_NAMES
            and values.ndim == 2
            and values.shape[1] in (3, 4)
        ):
            return DefaultColour(direct=_as_rgba(values), source=name_)
    if name is None and OBJECT_ID in features and n_unique(features[OBJECT_ID]) > 1:
        name = OBJECT_ID
    return (
        default_colour_by(features, name) if name is not None else DefaultColour(direct="#40c0ff")
    )


def direction_colour(features: Mapping[str, np.ndarray]) -> DefaultColour:
    """Colour segments by their ``direction`` feature (see :func:`direction_feature`)."""
    direction = next((k for k in (f"zv_{DIRECTION}", DIRECTION) if k in features), None)
    if direction is None:
        return DefaultColour(direct="#40c0ff")
    return DefaultColour(
        feature=direction,
        colormap=direction_colormap(),
        contrast_limits=(0.0, 1.0),
        source=direction,
    )


def default_colour_by(features: Mapping[str, np.ndarray], name: str) -> DefaultColour:
    """Colour by feature ``name``: ids get distinct direct colours, float columns a colormap
    linked to the feature, other numbers direct colormap colours (napari would guess
    "categorical" for integer columns and warn); numbers in :func:`lifted_viridis`, as
    Colour by draws them."""
    values = np.asarray(features[name])
    if name in (OBJECT_ID, GROUP_ID):
        return DefaultColour(direct=categorical_rgba(values), source=name)
    limits = display_range(values)
    # the low end of plain viridis (a near-black purple) vanishes on napari's black canvas
    cmap = lifted_viridis()
    if values.dtype.kind == "f":
        return DefaultColour(feature=name, colormap=cmap, contrast_limits=limits, source=name)
    scaled = np.clip((values.astype(np.float64) - limits[0]) / (limits[1] - limits[0]), 0, 1)
    return DefaultColour(direct=cmap.map(scaled), source=name)


#: Hue offset and saturation of the colours of object ids (:func:`categorical_rgba`).
_ID_HUE_OFFSET, _ID_SATURATION = 0.1, 0.75

#: Name of the hue ring a Surface draws object ids with (:func:`id_hue_colormap`).
ID_HUE_COLORMAP = "zv-object-ids"


def categorical_rgba(ids: np.ndarray) -> np.ndarray:
    """Distinct, stable colours per integer id (golden-ratio hue steps, HSV -> RGB), all
    at full value: every one stands out on a black canvas. ``OBJECT_UNKNOWN`` (a vertex
    whose object the store does not record) is no object's: :data:`.spec.MISSING_COLOUR`."""
    ids = np.asarray(ids)
    rgba = golden_hues(ids, offset=_ID_HUE_OFFSET, saturation=_ID_SATURATION)
    rgba[ids == OBJECT_UNKNOWN] = MISSING_COLOUR
    return rgba


def id_hues(ids: np.ndarray) -> np.ndarray:
    """Per id, the value in [0, 1) that :func:`id_hue_colormap` maps to the id's colour of
    :func:`categorical_rgba` (a Surface colours vertices through a colormap only); NaN (the
    colormap's :data:`.spec.MISSING_COLOUR`) for ``OBJECT_UNKNOWN``."""
    ids = np.asarray(ids)
    keys = np.nan_to_num(ids.astype(np.float64), nan=0.0)
    hues = np.mod(keys * 0.618033988749895 + _ID_HUE_OFFSET, 1.0).astype(np.float32)
    hues[ids == OBJECT_UNKNOWN] = np.nan
    return hues


def id_hue_colormap():
    """The hue ring of :func:`categorical_rgba` as a 256-step colormap over [0, 1]: object
    ids of a Surface drawn in the colours the other layers draw them in, the same whatever
    ids a load holds (contrast limits 0 .. 1, no per-load range); NaN (an object unknown:
    :func:`id_hues`) in :data:`.spec.MISSING_COLOUR`."""
    from napari.utils.colormaps import Colormap

    n = 256
    colours = golden_hues((np.arange(n) + 0.5) / n / 0.618033988749895, 0.0, _ID_SATURATION)
    return Colormap(
        colours,
        controls=np.linspace(0.0, 1.0, n + 1),
        interpolation="zero",
        name=ID_HUE_COLORMAP,
        nan_color=MISSING_COLOUR,
    )


def edge_colour_kwargs(colour: DefaultColour) -> dict[str, Any]:
    if colour.feature is None:
        return {"edge_color": colour.direct}
    kwargs: dict[str, Any] = {"edge_color": colour.feature, "edge_colormap": colour.colormap}
    if colour.contrast_limits is not None:
        kwargs["edge_contrast_limits"] = colour.contrast_limits
    return kwargs


def n_unique(values: np.ndarray) -> int:
    """How many distinct values."""
    return len(distinct(values)) if len(values) else 0


def _as_rgba(values: np.ndarray) -> np.ndarray:
    rgba = np.asarray(values, dtype=np.float32)
    if np.asarray(values).dtype.kind in "iu" or rgba.max(initial=0) > 1.0:
        rgba = rgba / 255.0
    if rgba.shape[1] == 3:
        rgba = np.column_stack([rgba, np.ones(len(rgba), np.float32)])
    return np.clip(rgba, 0.0, 1.0)


def lifted_viridis():
    """:data:`LIFTED_VIRIDIS`, registered with napari (``ensure_colormap`` by its name then
    finds it, and napari's layer controls list it)."""
    from napari.utils.colormaps import AVAILABLE_COLORMAPS, Colormap, ensure_colormap

    cmap = AVAILABLE_COLORMAPS.get(LIFTED_VIRIDIS)
    if cmap is None:
        colours = ensure_colormap("viridis").map(np.linspace(0.2, 1.0, 256))
        cmap = ensure_colormap(Colormap(colours, name=LIFTED_VIRIDIS))
    return cmap


def direction_colormap():
    """Quantised |direction| -> RGB palette (x red, y green, z blue), as a step colormap."""
    from napari.utils.colormaps import Colormap

    n = _DIRECTION_LEVELS
    levels = np.arange(n) / (n - 1)
    r, g, b = np.meshgrid(levels, levels, levels, indexing="ij")
    rgb = np.column_stack([r.ravel(), g.ravel(), b.ravel()])
    # lift dark colours so every direction stays visible on black
    rgb = 0.25 + 0.75 * rgb
    colours = np.column_stack([rgb, np.ones(len(rgb))])
    return Colormap(
        colours,
        controls=np.linspace(0.0, 1.0, len(colours) + 1),
        interpolation="zero",
        name=DIRECTION,
    )


def direction_feature(vectors: np.ndarray) -> tuple[np.ndarray, Any]:
    """Per-row value in [0, 1] that the direction colormap maps to the row's direction colour.

    Colour = |unit direction| in store axis order (x red, y green, z blue; the diffusion-MRI
    convention), each channel quantised to ``_DIRECTION_LEVELS`` steps.
    """
    vectors = np.asarray(vectors, dtype=np.float64)
    rgb = np.zeros((len(vectors), 3))
    k = min(vectors.shape[1], 3) if vectors.ndim == 2 else 0
    norm = np.linalg.norm(vectors, axis=1, keepdims=True) if len(vectors) else np.ones((0, 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        unit = np.where(norm > 0, np.abs(vectors) / np.where(norm > 0, norm, 1), 0.0)
    rgb[:, :k] = unit[:, :k]
    n = _DIRECTION_LEVELS
    q = np.clip(np.rint(rgb * (n - 1)), 0, n - 1).astype(np.int64)
    index = (q[:, 0] * n + q[:, 1]) * n + q[:, 2]
    return (index + 0.5) / n**3, direction_colormap()


def flat_colormap(name: str, rgba: Sequence[float]):
    from napari.utils.colormaps import Colormap

    return Colormap([rgba, rgba], name=name)
