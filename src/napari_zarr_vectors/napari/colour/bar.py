"""Colour bars and legend counts, read from a layer's colour state (no Qt).

:func:`bar_spec` tells what a layer's continuous colouring is -- the feature, its label with
its unit, the colormap and the value range -- or ``None`` when the layer is not coloured by a
continuous value (one colour, direct colours, categories, the direction palette, the grey of
a level without the attribute). It reads what the layer draws (the colour manager's colormap
and contrast limits, a Tracks colormap's value range, a Surface's colormap and contrast
limits), so a colour chosen through napari's layer controls is shown as well as one chosen
in Colour by. :mod:`..widgets.colour_bar` draws the bars.

Names are shown as Colour by shows them (:func:`display_name`: ``group``, not ``group_id``);
the unit comes from the attribute name (:func:`unit_of`: ``length_mm`` -> ``mm``), as the
format stores no attribute units.

Legends count objects (:func:`object_counts`): a streamline store coloured by hemisphere
reads "left 163, right 137 streamlines", not a count of loaded vertices.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from napari_zarr_vectors.napari._napari_compat import colour_feature
from napari_zarr_vectors.napari.colour.defaults import COLOUR_ATTRIBUTE_NAMES
from napari_zarr_vectors.napari.colour.live import (
    FALLBACK_COLORMAP,
    colour_spec_of,
    feature_values,
    layer_kind,
)
from napari_zarr_vectors.napari.colour.spec import category_index
from napari_zarr_vectors.napari.conventions import (
    DIRECTION,
    GROUP_ID,
    GROUPS,
    OBJECT_ID,
    meta_of,
)

if TYPE_CHECKING:
    from napari.layers import Layer
    from napari.utils.colormaps import Colormap

    from napari_zarr_vectors.napari.colour.spec import ColourSpec

#: Unit suffixes of attribute names (``length_mm``, ``time_s``, ``angle_deg``) and how a
#: unit is written.
UNIT_SUFFIXES = {
    "nm": "nm",
    "um": "µm",
    "µm": "µm",
    "mm": "mm",
    "cm": "cm",
    "m": "m",
    "km": "km",
    "ms": "ms",
    "us": "µs",
    "s": "s",
    "min": "min",
    "h": "h",
    "deg": "°",
    "rad": "rad",
    "hz": "Hz",
    "pct": "%",
    "percent": "%",
}

#: Names Colour by shows for the plugin's own feature columns.
DISPLAY_NAMES = {OBJECT_ID: "object id", GROUP_ID: "group", GROUPS: "groups"}

#: Features whose colours are labels, never a value scale (no bar for them by default).
_LABEL_FEATURES = (OBJECT_ID, GROUP_ID, GROUPS, "track_id", "box")

#: What a layer's objects are called in a legend, by store geometry type.
OBJECT_NOUNS = {
    "streamline": "streamlines",
    "polyline": "polylines",
    "line": "lines",
    "skeleton": "skeletons",
    "graph": "graphs",
    "mesh": "meshes",
    "point_cloud": "point clouds",
}


@dataclass(frozen=True)
class BarSpec:
    """A colour bar: ``label`` (name and unit) over ``colormap`` from ``contrast_limits``."""

    feature: str
    label: str
    unit: str | None
    colormap: Colormap
    contrast_limits: tuple[float, float]

    @property
    def key(self) -> tuple:
        """Bars with the same key look the same (one is shown for several layers): label,
        range and colours (a Tracks colormap has a name of its own)."""
        colours = np.round(np.asarray(self.colormap.map(np.linspace(0.0, 1.0, 9))), 3)
        return self.label, self.contrast_limits, tuple(colours.ravel().tolist())

    @property
    def range_text(self) -> str:
        """``24.69 … 76.67``: the ends of the bar, four significant digits (napari's ticks are
        round numbers inside the range)."""
        lo, hi = self.contrast_limits
        return f"{lo:.4g} … {hi:.4g}"


def unit_of(name: str) -> str | None:
    """The unit an attribute name states: ``length_mm`` -> ``mm``, ``speed [um/s]`` ->
    ``um/s``, ``time (s)`` -> ``s``; ``None`` when it states none."""
    bracket = re.search(r"[\[(]([^\])]+)[\])]\s*$", name)
    if bracket:
        return bracket.group(1).strip()
    head, sep, tail = name.rpartition("_")
    if not sep or not head:
        return None
    return UNIT_SUFFIXES.get(tail.lower())


def display_name(feature: str) -> str:
    """A feature as Colour by names it (``group``, ``object id``; attributes as stored)."""
    return DISPLAY_NAMES.get(feature, feature)


def bar_label(feature: str) -> str:
    """``length_mm (mm)``: the feature's display name and, when it states one, its unit."""
    unit = unit_of(feature)
    name = display_name(feature)
    return name if unit is None or name.endswith(f"({unit})") else f"{name} ({unit})"


def bar_spec(layer: Layer) -> BarSpec | None:
    """The colour bar of ``layer``'s colouring, ``None`` unless it is continuous."""
    meta = meta_of(layer)
    if meta is not None and meta.get("role") == "bounds":
        return None
    spec = colour_spec_of(layer)
    if spec is not None and spec.categorical:
        return None
    state = _drawn_colormap(layer)
    if state is None:
        return None
    feature, cmap, limits = state
    if _is_flat(cmap):  # one colour (an isolated object, a Dissect bundle): no scale to read
        return None
    chosen = spec is not None and spec.feature == feature
    if _is_step(cmap) or feature is None or (feature in _LABEL_FEATURES and not chosen):
        return None
    if feature.endswith(DIRECTION):
        return None
    lo, hi = (float(v) for v in limits)
    return BarSpec(feature, bar_label(feature), unit_of(feature), cmap, (lo, hi))


def _is_flat(cmap: Colormap) -> bool:
    """Whether every colour of ``cmap`` is the same."""
    colours = np.asarray(cmap.colors, np.float64)
    return bool(len(colours) and np.all(colours == colours[0]))


def _drawn_colormap(layer: Layer) -> tuple[str | None, Colormap, tuple[float, float]] | None:
    """``(feature, colormap, contrast limits)`` the layer draws with, ``None`` when it draws
    no colormap over a feature."""
    kind = layer_kind(layer)
    if kind in ("points", "vectors", "shapes"):
        channel = "face" if kind == "points" else "edge"
        if not str(getattr(layer, f"{channel}_color_mode")).lower().endswith("colormap"):
            return None
        limits = getattr(layer, f"{channel}_contrast_limits")
        if limits is None:
            return None
        return colour_feature(layer, channel), getattr(layer, f"{channel}_colormap"), limits
    if kind == "tracks":
        feature = layer.color_by
        cmap = layer.colormaps_dict.get(feature)
        if feature == "track_id" or feature not in layer.features:
            return None
        if cmap is None:  # napari's own: the layer colormap over the values' range
            from napari.utils.colormaps import ensure_colormap

            values = np.asarray(layer.features[feature], np.float64)
            values = values[np.isfinite(values)]
            if not len(values):
                return None
            return feature, ensure_colormap(layer.colormap), (values.min(), values.max())
        return feature, _plain(cmap), getattr(cmap, "value_range", (0.0, 1.0))
    if kind == "surface":
        meta = meta_of(layer) or {}
        return meta.get("colour_by"), layer.colormap, tuple(layer.contrast_limits)
    return None


def _plain(cmap: Colormap) -> Colormap:
    """A Tracks colormap over a value range as a plain napari colormap over [0, 1]."""
    from napari.utils.colormaps import Colormap

    return Colormap(
        colors=cmap.colors,
        controls=cmap.controls,
        interpolation=cmap.interpolation,
        name=cmap.name,
        nan_color=cmap.nan_color,
    )


def _is_step(cmap: Colormap) -> bool:
    """Category colormaps, the direction palette and the one-grey fallback."""
    name = str(getattr(cmap, "name", ""))
    return (
        str(getattr(cmap, "interpolation", "")).lower().endswith("zero")
        or name == FALLBACK_COLORMAP
        or name.startswith("zv-categories")
    )


def default_colouring_name(layer: Layer | None) -> str:
    """What a layer is drawn in before any Colour-by choice: ``stored rgb``, ``direction``,
    ``object id``, ``length_mm (mm)``, ``one colour``."""
    meta = meta_of(layer)
    source = meta.get("colour_by") if meta is not None else None
    if not source:
        return "one colour"
    if source.lower() in COLOUR_ATTRIBUTE_NAMES:
        return f"stored {source}"
    if source.endswith(DIRECTION):
        return DIRECTION
    return bar_label(source)


def object_noun(layer: Layer | None) -> str:
    """What the legend calls a layer's objects (``streamlines``; ``objects`` by default)."""
    meta = meta_of(layer)
    geometry = meta.get("geometry_type") if meta is not None else None
    return OBJECT_NOUNS.get(str(geometry), "objects")


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun`` (a plural of :data:`OBJECT_NOUNS`, ``objects``, ``rows``, ...),
    in the singular for one: ``"1 mesh"``, ``"1 point cloud"``, ``"2 streamlines"``."""
    if n != 1:
        return f"{n:,} {noun}"
    return f"1 {noun[:-2] if noun.endswith('shes') else noun.removesuffix('s')}"


def object_counts(
    layer: Layer,
    spec: ColourSpec,
    shown: np.ndarray | None = None,
    *,
    also: Sequence[tuple[Layer, np.ndarray | None]] = (),
) -> dict:
    """``{category: number of objects}`` of ``spec``'s categories among ``layer``'s rows
    (``shown``: a row mask) and those of the layers ``also`` (``(layer, shown)``: the other
    layers of the same objects, e.g. a skeleton's nodes beside its edges, whose roots no edge
    row holds), each object counted once per category it has rows in; rows without an object
    id (pieces of a preview) count one each. Vectorised: runs of rows of one object and value
    are cut to their first row (an object's rows are mostly together), then the distinct
    (category, object) pairs are counted."""
    if not spec.categories:
        return {}
    parts, offset = [], 0
    for lay, mask in ((layer, shown), *also):
        codes, ids, n_rows = _category_runs(lay, spec, mask, offset)
        parts.append(np.column_stack([codes, ids]))
        offset += n_rows
    pairs = np.unique(np.concatenate(parts), axis=0)
    counts = np.bincount(pairs[:, 0], minlength=len(spec.categories))
    return {c: int(n) for c, n in zip(spec.categories, counts.tolist(), strict=True) if n}


def _category_runs(
    layer: Layer, spec: ColourSpec, shown: np.ndarray | None, offset: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """``(category codes, object ids, rows of the layer)`` of the runs of ``layer``'s rows of
    one object and value (known categories only); id-less rows get ids
    ``-1 - offset - row``."""
    values = feature_values(layer, spec.feature)
    rows = np.arange(len(values))
    ids = (
        np.asarray(layer.features[OBJECT_ID].to_numpy(), np.int64)
        if OBJECT_ID in layer.features
        else np.full(len(values), -1, np.int64)
    )
    ids = np.where(ids >= 0, ids, -1 - offset - rows)
    if shown is not None:
        values, ids = values[shown], ids[shown]
    run_start = np.ones(len(values), bool)
    run_start[1:] = (ids[1:] != ids[:-1]) | (values[1:] != values[:-1])
    codes = category_index(spec, values[run_start])
    ids = ids[run_start]
    known = codes >= 0
    return codes[known], ids[known], len(rows)
