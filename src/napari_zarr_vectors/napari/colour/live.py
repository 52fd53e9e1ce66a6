"""Colouring napari layers that already exist, kept through the level-of-detail data swaps
(:mod:`napari_zarr_vectors.napari.lod.swap` calls :func:`recolour` after each one).

The pure colour maths (:class:`~napari_zarr_vectors.napari.colour.spec.ColourSpec`, palettes,
category lookups) is in :mod:`napari_zarr_vectors.napari.colour.spec`; a builder's *default*
colouring of fresh layer data in :mod:`napari_zarr_vectors.napari.colour.defaults`. napari
internals are used only through :mod:`napari_zarr_vectors.napari._napari_compat`.

A user's colour-by choice
-------------------------
:func:`apply_colour` sets a layer's *own* colour properties from a
:class:`~napari_zarr_vectors.napari.colour.spec.ColourSpec` (features-driven, so they survive data
replacement) and records the spec in ``layer.metadata["zarr_vectors"]["colour"]``:

=========  ===================================================================================
Points     ``face_color`` = feature, ``face_colormap``, ``face_contrast_limits`` (categories:
           a step colormap over the values; strings: ``face_color_cycle`` = ``{value: colour}``)
Vectors    ``edge_color`` = feature, ``edge_colormap``, ``edge_contrast_limits`` (same rules)
Shapes     as Vectors, then ``refresh_colors()``
Tracks     ``color_by`` = feature, ``colormaps_dict[feature]`` = a colormap over the value range
Surface    ``vertex_values`` = feature values (string categories: their index), ``colormap``,
           ``contrast_limits``
=========  ===================================================================================

The recorded spec is the layer's colour at every level. At a level that does not store the
spec's attribute (coarse levels often keep no vertex attributes) the layer is drawn in one
plain colour, :data:`FALLBACK_COLOUR` (grey, the colour of missing values), and its
``colour_by`` metadata is ``None`` (the Colour-by legend says so). The spec itself is kept,
with its colormap and contrast limits, so colour and contrast return with the attribute.

Colour chosen elsewhere
-----------------------
Without a recorded spec, a swap keeps what the user set through napari's own layer controls
(:class:`ColourMemory`: read before a swap with :func:`capture`, re-applied after it while its
feature exists), else the builder's default colouring, with the contrast limits first used
for that feature so colours stay put across refreshes.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from napari_zarr_vectors.format.missing import OBJECT_UNKNOWN, missing_mask
from napari_zarr_vectors.napari._napari_compat import colour_feature, unlink_tracks_colour
from napari_zarr_vectors.napari.colour.defaults import LIFTED_VIRIDIS, lifted_viridis
from napari_zarr_vectors.napari.colour.spec import (
    MISSING_COLOUR,
    ColourSpec,
    categorical_colours,
    category_index,
    step_boundaries,
)
from napari_zarr_vectors.napari.conventions import (
    DIRECTION,
    GROUP_ID,
    GROUPS,
    META,
    OBJECT_ID,
    LayerMeta,
    meta_of,
)

if TYPE_CHECKING:
    from napari.layers import Layer

#: The one colour a layer is drawn in at a level without its colour-by attribute (the
#: colour of missing values: grey).
FALLBACK_COLOUR = MISSING_COLOUR

#: Name of the one-colour colormap that draws :data:`FALLBACK_COLOUR` (Tracks, Surface).
FALLBACK_COLORMAP = "zv-fallback"

#: feature columns the plugin computes (not store attributes)
PLUGIN_FEATURES = (OBJECT_ID, GROUP_ID, GROUPS, DIRECTION)


def layer_kind(layer: Layer) -> str:
    """``"points"``, ``"tracks"``, ``"vectors"``, ``"shapes"``, ``"surface"`` (or the class name)."""
    return type(layer).__name__.lower()


# --------------------------------------------------------------------------------------------
# a user's colour-by choice (ColourSpec) on a layer
# --------------------------------------------------------------------------------------------


def colour_spec_of(layer: Layer) -> ColourSpec | None:
    """The colour-by spec recorded on the layer by :func:`apply_colour` (``None``: none)."""
    meta = meta_of(layer)
    raw = None if meta is None else meta.get("colour")
    return None if not raw else ColourSpec.from_dict(raw)


def colourable_features(layer: Layer) -> list[str]:
    """Feature columns a layer can be coloured by: the store's attributes first, then the
    plugin's own columns (object id, groups, direction). napari's Tracks ``track_id`` is not
    offered: it numbers path pieces (a path cut by the view is several tracks), not objects."""
    features = getattr(layer, "features", None)
    names = [] if features is None else [str(c) for c in features.columns]
    names = [n for n in names if not (layer_kind(layer) == "tracks" and n == "track_id")]
    own = [n for n in names if n in PLUGIN_FEATURES or n.startswith("zv_")]
    return [n for n in names if n not in own] + own


def feature_values(layer: Layer, feature: str) -> np.ndarray:
    """Values of ``feature`` per row, string categories of Tracks layers decoded."""
    values = layer.features[feature].to_numpy()
    cats = (LayerMeta.from_layer(layer).categories or {}).get(feature)
    if cats is not None and values.dtype.kind in "iu":
        values = np.asarray(cats, dtype=object)[values]
    return values


def greys_unknown_objects(layer: Layer | None, feature: str) -> bool:
    """Whether colouring ``layer`` by ``feature`` draws vertices whose object the store does
    not record (``OBJECT_UNKNOWN`` object ids) in :data:`MISSING_COLOUR`: the layer has
    such vertices and ``feature`` is the object id or one of the object's attributes or
    groups (``object_columns``), of which those vertices have none."""
    if layer is None or OBJECT_ID not in layer.features:
        return False
    object_level = feature == OBJECT_ID or feature in (
        LayerMeta.from_layer(layer).object_columns or ()
    )
    return object_level and bool(np.any(layer.features[OBJECT_ID].to_numpy() == OBJECT_UNKNOWN))


def apply_colour(layer: Layer, spec: ColourSpec) -> None:
    """Colour ``layer`` by ``spec`` through the layer's own colour properties, and record the
    spec in its metadata (``colour``; ``colour_by``: the feature drawn, ``None`` when this
    level lacks it and the layer is drawn in :data:`FALLBACK_COLOUR`). Idempotent; O(rows),
    vectorised."""
    kind = layer_kind(layer)
    missing = spec.feature not in colourable_features(layer)
    if not (missing or spec.categorical):
        values = feature_values(layer, spec.feature)
        if values.dtype.kind not in "iufb":
            # text has no order for a colormap (napari raises a TypeError): its categories
            spec = categorical_colours(values, spec.feature)
    meta = meta_of(layer)
    if meta is not None:
        meta["colour"] = spec.to_dict()
        meta["colour_by"] = None if missing else spec.feature
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", UserWarning)
        if missing:
            _apply_fallback(layer)
        elif not len(layer.features):
            return
        elif kind == "points":
            _apply_colour_manager(layer, "face", spec)
        elif kind in ("vectors", "shapes"):
            _apply_colour_manager(layer, "edge", spec)
            if kind == "shapes":
                layer.refresh_colors()
        elif kind == "tracks":
            _apply_tracks(layer, spec)
        elif kind == "surface":
            _apply_surface(layer, spec)


def napari_colormap(spec: ColourSpec, codes: bool = False) -> tuple[Any, tuple[float, float]]:
    """The napari colormap and contrast limits of ``spec``.

    Continuous: the named colormap and the spec's limits. Categorical: a step colormap with
    one bin per category, centred on the category value (``codes``: on its index).
    """
    from napari.utils.colormaps import Colormap, ensure_colormap

    if not spec.categorical:
        limits = spec.contrast_limits or (0.0, 1.0)
        cmap = lifted_viridis() if spec.colormap == LIFTED_VIRIDIS else spec.colormap
        return ensure_colormap(cmap), (float(limits[0]), float(limits[1]))
    n = len(spec.categories)
    keys = np.arange(n, dtype=np.float64) if codes else np.asarray(spec.categories, np.float64)
    order = np.argsort(keys, kind="stable")
    bounds = step_boundaries(keys[order]) if n else np.array([0.0, 1.0])
    lo, hi = float(bounds[0]), float(bounds[-1])
    controls = (bounds - lo) / (hi - lo)
    controls[0], controls[-1] = 0.0, 1.0
    colours = np.asarray(spec.colours, np.float32)[order] if n else np.array([MISSING_COLOUR])
    if len(colours) == 1:  # vispy needs two colours: one category is two equal bins
        colours, controls = np.repeat(colours, 2, axis=0), np.array([0.0, 0.5, 1.0])
    digest = hashlib.sha1(repr((spec.feature, spec.categories, spec.colours)).encode()).hexdigest()
    cmap = Colormap(
        colors=colours,
        controls=controls,
        interpolation="zero",
        name=f"zv-categories-{digest[:10]}",
        nan_color=MISSING_COLOUR,
    )
    return cmap, (lo, hi)


def _numeric_categories(spec: ColourSpec) -> bool:
    return all(
        isinstance(c, (int, float, bool)) and not isinstance(c, str) for c in spec.categories
    )


def _apply_colour_manager(layer: Layer, prefix: str, spec: ColourSpec) -> None:
    values = layer.features[spec.feature].to_numpy()
    setattr(layer, f"{prefix}_color", "white")  # direct mode first: no stale mapping applies
    # booleans by cycle: napari's colormap mode takes numbers only
    if spec.categorical and not (_numeric_categories(spec) and values.dtype.kind in "iuf"):
        if layer_kind(layer) == "shapes":
            # napari's Shapes take a colour cycle as a list only (a mapping raised a
            # TypeError): each shape's category colour, given directly
            index = category_index(spec, values)
            rgba = np.tile(np.asarray(MISSING_COLOUR, np.float32), (len(values), 1))
            if spec.colours:
                rgba[index >= 0] = np.asarray(spec.colours, np.float32)[index[index >= 0]]
            setattr(layer, f"{prefix}_color", rgba)
            return
        setattr(layer, f"{prefix}_color_cycle", {**spec.mapping(), None: MISSING_COLOUR})
        setattr(layer, f"{prefix}_color", spec.feature)
        if str(getattr(layer, f"{prefix}_color_mode")).lower().endswith("colormap"):
            setattr(layer, f"{prefix}_color_mode", "cycle")
        return
    cmap, limits = _missing_grey_colormap(spec)
    setattr(layer, f"{prefix}_colormap", cmap)
    setattr(layer, f"{prefix}_contrast_limits", limits)
    setattr(layer, f"{prefix}_color", spec.feature)
    if not str(getattr(layer, f"{prefix}_color_mode")).lower().endswith("colormap"):
        setattr(layer, f"{prefix}_color_mode", "colormap")
    setattr(layer, f"{prefix}_contrast_limits", limits)


def _range_colormap_class():
    from napari.utils.colormaps import Colormap

    global _RangeColormap
    if _RangeColormap is None:

        class RangeColormap(Colormap):
            """A colormap over ``value_range`` instead of [0, 1] (Tracks have no contrast
            limits: their ``colormaps_dict`` colormaps get raw feature values)."""

            value_range: tuple[float, float] = (0.0, 1.0)

            def map(self, values):
                lo, hi = self.value_range
                v = (np.asarray(values, dtype=np.float64) - lo) / max(hi - lo, 1e-300)
                return super().map(v)

        _RangeColormap = RangeColormap
    return _RangeColormap


_RangeColormap = None


def _apply_tracks(layer: Layer, spec: ColourSpec) -> None:
    cats = (LayerMeta.from_layer(layer).categories or {}).get(spec.feature)
    if spec.categorical and cats is not None:
        # string categories are stored as this layer's codes: map code -> category colour
        sub = spec.mapping()
        colours = tuple(tuple(sub.get(c, MISSING_COLOUR)) for c in cats)
        spec = ColourSpec(spec.feature, "categorical", categories=tuple(cats), colours=colours)
        cmap, limits = napari_colormap(spec, codes=True)
    elif spec.categorical and not _numeric_categories(spec):
        return
    else:
        cmap, limits = napari_colormap(spec)
    ranged = _range_colormap_class()(
        colors=cmap.colors,
        controls=cmap.controls,
        interpolation=cmap.interpolation,
        name=f"zv-{spec.feature}",
        nan_color=MISSING_COLOUR,
        value_range=limits,
    )
    layer.colormaps_dict = {**layer.colormaps_dict, spec.feature: ranged}
    layer.color_by = spec.feature


def _apply_surface(layer: Layer, spec: ColourSpec) -> None:
    values = layer.features[spec.feature].to_numpy()
    if spec.categorical and not (
        _numeric_categories(spec) and values.dtype.kind in "iufb" and _exact_in_float32(values)
    ):
        index = category_index(spec, values).astype(np.float32)
        index[index < 0] = np.nan
        cmap, limits = napari_colormap(spec, codes=True)
        values = index
    else:  # missing values (an object unknown: the int64 marker) in the missing colour
        cmap, limits = _missing_grey_colormap(spec)
        values = _surface_values(values)
    vertices, faces = layer.data[:2]
    layer.data = (vertices, faces, values)
    layer.colormap = cmap
    layer.contrast_limits = limits


def _surface_values(values: np.ndarray) -> np.ndarray:
    """A Surface's float32 vertex values of numbers, NaN where missing (an object unknown:
    the int64 marker; a value absent), which :func:`_missing_grey_colormap` draws grey."""
    out = values.astype(np.float32)
    out[missing_mask(values)] = np.nan
    return out


def _missing_grey_colormap(spec: ColourSpec) -> tuple[Any, tuple[float, float]]:
    """:func:`napari_colormap` of ``spec`` with NaN values in :data:`MISSING_COLOUR`
    (categories' colormaps have it; napari's named ones draw NaN transparent black):
    vertices of unknown object and objects without the value grey, not invisible."""
    from napari.utils.colormaps import Colormap

    cmap, limits = napari_colormap(spec)
    if spec.categorical:
        return cmap, limits
    grey = Colormap(
        colors=cmap.colors,
        controls=cmap.controls,
        interpolation=cmap.interpolation,
        name=f"{cmap.name} (missing: grey)",
        nan_color=MISSING_COLOUR,
    )
    return grey, limits


def _exact_in_float32(values: np.ndarray) -> bool:
    """Whether a Surface's float32 vertex values hold ``values`` exactly: ids such as navis'
    body ids (1,734,350,788 and 1,734,350,908) fall between float32 steps of 128 and would
    share a category's colour, so they are drawn by their category codes instead."""
    wide = np.asarray(values, np.float64)
    return bool(np.array_equal(wide.astype(np.float32).astype(np.float64), wide, equal_nan=True))


def _fallback_colormap() -> Any:
    from napari.utils.colormaps import Colormap

    return Colormap(
        [FALLBACK_COLOUR, FALLBACK_COLOUR], name=FALLBACK_COLORMAP, nan_color=FALLBACK_COLOUR
    )


def _apply_fallback(layer: Layer) -> None:
    """Draw the whole layer in :data:`FALLBACK_COLOUR` (Tracks: a one-colour colormap on
    ``track_id``, the one column every Tracks layer has; Surface: a one-colour colormap)."""
    kind = layer_kind(layer)
    grey = np.asarray(FALLBACK_COLOUR, np.float32)
    if kind == "points":
        layer.face_color = grey
    elif kind in ("vectors", "shapes"):
        layer.edge_color = grey
    elif kind == "tracks":
        layer.colormaps_dict = {**layer.colormaps_dict, "track_id": _fallback_colormap()}
        layer.color_by = "track_id"
    elif kind == "surface":
        layer.colormap = _fallback_colormap()


def _shows_fallback(layer: Layer) -> bool:
    kind = layer_kind(layer)
    if kind in ("points", "vectors", "shapes"):
        prefix = "face" if kind == "points" else "edge"
        if not str(getattr(layer, f"{prefix}_color_mode")).lower().endswith("direct"):
            return False
        colours = np.asarray(getattr(layer, f"{prefix}_color"), np.float32).reshape(-1, 4)
        return bool(np.all(colours == np.asarray(FALLBACK_COLOUR, np.float32)))
    if kind == "tracks":
        cmap = layer.colormaps_dict.get("track_id")
        return layer.color_by == "track_id" and getattr(cmap, "name", "") == FALLBACK_COLORMAP
    if kind == "surface":
        return getattr(layer.colormap, "name", "") == FALLBACK_COLORMAP
    return True


def colour_matches(layer: Layer, spec: ColourSpec) -> bool:
    """Whether ``layer`` is still coloured by ``spec`` (cheap: compares settings, not colours);
    at a level without the spec's attribute, whether it is drawn in :data:`FALLBACK_COLOUR`.

    Tracks layers with string categories always need re-applying after a data swap: their
    codes are per load (``metadata["zarr_vectors"]["categories"]``).
    """
    kind = layer_kind(layer)
    if spec.feature not in colourable_features(layer):
        return _shows_fallback(layer)
    meta = meta_of(layer) or {}
    if meta.get("colour_by") != spec.feature:
        return False
    if kind in ("points", "vectors", "shapes"):
        prefix = "face" if kind == "points" else "edge"
        if colour_feature(layer, prefix) != spec.feature:
            return False
        mode = str(getattr(layer, f"{prefix}_color_mode")).lower()
        if mode.endswith("cycle"):
            return spec.categorical
        if not mode.endswith("colormap"):
            return False
        cmap, limits = _missing_grey_colormap(spec)
        current = getattr(layer, f"{prefix}_colormap")
        got = getattr(layer, f"{prefix}_contrast_limits")
        return current.name == cmap.name and got is not None and np.allclose(got, limits)
    if kind == "tracks":
        if spec.feature in meta.get("categories", {}):
            return False
        cmap = layer.colormaps_dict.get(spec.feature)
        return layer.color_by == spec.feature and cmap is not None and hasattr(cmap, "value_range")
    if kind == "surface":
        values = layer.features[spec.feature].to_numpy()
        if values.dtype.kind not in "iufb":
            return False
        cmap, limits = _missing_grey_colormap(spec)
        return (
            layer.colormap.name == cmap.name
            and np.allclose(layer.contrast_limits, limits)
            and len(layer.vertex_values) == len(values)
            and np.array_equal(
                np.asarray(layer.vertex_values), _surface_values(values), equal_nan=True
            )
        )
    return True


def forget_colour(layer: Layer) -> None:
    """Remove the colour-by spec :func:`apply_colour` recorded on ``layer`` and the feature
    it drew (its colours stay until the layer's next swap, :func:`recolour`, draws the
    builder's, and the builder's ``colour_by`` comes back with them)."""
    meta = meta_of(layer)
    if meta is not None:
        meta.pop("colour", None)
        meta.pop("colour_by", None)


@dataclass(frozen=True)
class OpeningColour:
    """What a layer drew when it was opened, every row of it (:func:`opening_colour`): what
    "(default)" draws again where no level-of-detail controller reloads the layer."""

    colour_by: str | None  # the layer metadata's ``colour_by``
    values: dict[str, Any]  # the layer's colour attributes (per-row arrays: every row)


#: the colour attributes :func:`opening_colour` keeps, by layer kind (Surface: the values
#: and their colormap; Tracks: the feature and colormaps)
_OPENING_ATTRS = {
    "points": ("face_color", "border_color"),
    "vectors": ("edge_color",),
    "shapes": ("edge_color", "face_color"),
    "surface": ("vertex_values", "colormap", "contrast_limits"),
    "tracks": ("colormaps_dict", "color_by", "colormap"),
}
#: the per-row ones, sliced to the rows a filter keeps
_PER_ROW = {"edge_color", "face_color", "border_color", "vertex_values"}


def opening_colour(layer: Layer) -> OpeningColour:
    """The layer's colours now (copies), to draw again with :func:`restore_opening_colour`."""
    values: dict[str, Any] = {}
    for attr in _OPENING_ATTRS.get(layer_kind(layer), ()):
        value = getattr(layer, attr)
        values[attr] = (
            np.array(value, copy=True)
            if attr in _PER_ROW
            else dict(value)
            if isinstance(value, dict)
            else value
        )
    return OpeningColour(LayerMeta.from_layer(layer).colour_by, values)


def restore_opening_colour(
    layer: Layer, opening: OpeningColour, keep: np.ndarray | None = None
) -> None:
    """Forget the layer's colour choice (:func:`forget_colour`) and draw ``opening`` again,
    of the rows ``keep`` (a mask of the opened rows: those a filter left; ``None``: all)."""
    forget_colour(layer)
    meta = meta_of(layer)
    if meta is not None and opening.colour_by is not None:
        meta["colour_by"] = opening.colour_by
    kind = layer_kind(layer)
    values = {
        attr: value[..., keep]
        if attr == "vertex_values" and keep is not None
        else value[keep]
        if attr in _PER_ROW and keep is not None
        else value
        for attr, value in opening.values.items()
    }
    if kind == "surface":
        vertices, faces = layer.data[:2]
        layer.data = (vertices, faces, values["vertex_values"])
        layer.colormap = values["colormap"]
        layer.contrast_limits = values["contrast_limits"]
    elif kind == "tracks":
        layer.colormaps_dict = values["colormaps_dict"]
        if values["color_by"] in layer.properties_to_color_by:
            layer.color_by = values["color_by"]
        layer.colormap = values["colormap"]
    else:
        for attr, value in values.items():
            setattr(layer, attr, value)


def reapply_colour(layer: Layer) -> bool:
    """Re-apply the layer's recorded colour spec if a data swap lost it (the fallback colour
    where the level lacks its attribute); returns whether it did."""
    spec = colour_spec_of(layer)
    if spec is None or colour_matches(layer, spec):
        return False
    apply_colour(layer, spec)
    return True


# --------------------------------------------------------------------------------------------
# colour kept across data swaps
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChannelColour:
    """The colouring of one colour channel of a live layer (face, edge, tracks, surface), as
    :func:`capture` reads it (a fresh layer's *default* colouring is the builders' own, in
    :mod:`napari_zarr_vectors.napari.colour.defaults`)."""

    mode: str  # "direct", "cycle", "colormap"
    feature: str | None
    colormap: str | None
    contrast_limits: tuple[float, ...] | None
    uniform: tuple[float, ...] | None  # the one direct colour, when all rows share it
    fingerprint: int | None  # direct per-row colours: hash of the array


@dataclass(frozen=True)
class LayerColour:
    """A layer's colouring as :func:`capture` reads it: its colour channel and point size."""

    channel: ChannelColour | None
    size: float | None = None


@dataclass
class ColourMemory:
    """What one layer's swaps need to keep its colour: the colouring the last swap left and
    what the user changed since (through napari's layer controls)."""

    applied: LayerColour  # what the last swap left on the layer
    intent: ChannelColour | None = None  # the colouring the user chose (None: the builder's)
    size: float | None = None  # the point size the user chose (None: the builder's)
    limits: dict[str, Any] = field(default_factory=dict)  # first contrast limits per feature

    def observe(self, before: LayerColour) -> None:
        """Record what the user changed since the last swap (``before`` vs ``applied``)."""
        if before.channel != self.applied.channel:
            channel = before.channel
            # per-row direct colours cannot be carried to other rows: the builder's then
            reusable = channel is not None and (channel.mode != "direct" or channel.uniform)
            self.intent = channel if reusable else None
        if before.size is not None and before.size != self.applied.size:
            self.size = before.size


def _channel_attr(kind: str) -> str | None:
    return {"points": "face", "vectors": "edge", "shapes": "edge"}.get(kind)


def capture(layer: Layer) -> LayerColour:
    """Read a layer's colouring (before a swap, and after it as the new baseline)."""
    kind = layer_kind(layer)
    attr = _channel_attr(kind)
    if attr is not None:
        size = None
        if kind == "points":
            sizes = np.asarray(layer.size, dtype=float)
            size = float(sizes[0]) if sizes.size else float(layer.current_size)
        return LayerColour(_capture_manager(layer, attr), size)
    if kind == "tracks":
        return LayerColour(
            ChannelColour("colormap", layer.color_by, str(layer.colormap), None, None, None)
        )
    if kind == "surface":
        cmap = layer.colormap
        return LayerColour(
            ChannelColour(
                "colormap",
                LayerMeta.from_layer(layer).colour_by,
                getattr(cmap, "name", str(cmap)),
                tuple(float(v) for v in layer.contrast_limits),
                None,
                None,
            )
        )
    return LayerColour(None)


def _capture_manager(layer: Layer, attr: str) -> ChannelColour:
    mode = str(getattr(layer, f"{attr}_color_mode"))
    feature = colour_feature(layer, attr)
    cmap = getattr(layer, f"{attr}_colormap", None)
    limits = getattr(layer, f"{attr}_contrast_limits", None)
    uniform = fingerprint = None
    if mode == "direct":
        colours = np.asarray(getattr(layer, f"{attr}_color"), dtype=np.float32).reshape(-1, 4)
        if len(colours) and np.all(colours == colours[0]):
            uniform = tuple(float(c) for c in colours[0])
        elif len(colours):
            fingerprint = hash(colours.tobytes())
    return ChannelColour(
        mode,
        feature if mode != "direct" else None,
        getattr(cmap, "name", None),
        None if limits is None or mode == "direct" else tuple(float(v) for v in limits),
        uniform,
        fingerprint,
    )


def release_colour(layer: Layer, features: Collection[str]) -> None:
    """Before new data goes in: unlink a colour-by feature the new ``features`` lack (napari
    would warn that it was dropped, and recolour twice)."""
    kind = layer_kind(layer)
    attr = _channel_attr(kind)
    if attr is not None:
        current = colour_feature(layer, attr)
        if current is not None and current not in features:
            setattr(layer, f"{attr}_color", "white")
    elif kind == "tracks":
        unlink_tracks_colour(layer)  # napari resets features on a data swap


def surface_values(data: tuple, kwargs: dict, memory: ColourMemory) -> tuple:
    """A swapped Surface's ``(vertices, faces, values)``: the values of the feature the user
    chose through napari (``memory.intent``) when the new features have it, else the
    builder's."""
    vertices, faces, values = data
    intent = memory.intent
    features = kwargs.get("features", {})
    if intent is not None and intent.feature in features:
        chosen = np.asarray(features[intent.feature])
        if chosen.dtype.kind in "iufb":  # text is drawn by its codes once recoloured
            values = chosen.astype(np.float32)
    return vertices, faces, values


def recolour(layer: Layer, kwargs: dict, memory: ColourMemory) -> None:
    """After a data swap (new data and features in): colour ``layer`` by its recorded spec
    (:func:`apply_colour`; the fallback colour where this level lacks the attribute), else as
    the user chose through napari (``memory.intent``) when that still applies to the new
    features, else as the builder proposes (``kwargs``, with the contrast limits first used
    for that feature). Point sizes stay what they were.

    The ``colour_by`` (and Tracks' per-load ``categories``) of ``kwargs``' metadata are what
    the layer records afterwards."""
    kind = layer_kind(layer)
    new_meta = kwargs.setdefault("metadata", {}).setdefault(META, {})
    if kind == "points":
        _keep_point_size(layer, kwargs, memory)
    spec = colour_spec_of(layer)
    if spec is not None:
        meta = meta_of(layer)
        assert meta is not None  # it holds the spec
        if "categories" in new_meta:
            meta["categories"] = new_meta["categories"]
        reapply_colour(layer)
        new_meta["colour_by"] = meta.get("colour_by")
        return
    features = kwargs.get("features", {})
    intent = memory.intent
    chosen = intent  # what the user chose, even when its feature is missing here
    if intent is not None and intent.mode != "direct" and intent.feature not in features:
        intent = None  # e.g. a coarse level without that attribute: the builder's default
    attr = _channel_attr(kind)
    if attr is not None:
        target = intent if intent is not None else _builder_colour(attr, kwargs, memory)
        _apply_colour(layer, attr, target)
    elif kind == "tracks":
        for name, cmap in (kwargs.get("colormaps_dict") or {}).items():
            layer.colormaps_dict.setdefault(name, cmap)
        colour_by = intent.feature if intent is not None else kwargs.get("color_by", "track_id")
        if colour_by not in layer.properties_to_color_by:
            colour_by = "track_id"
        layer.color_by = colour_by
        cmap = intent.colormap if intent is not None else _name_of(kwargs.get("colormap"))
        if cmap and layer.colormap != cmap:
            layer.colormap = cmap
    elif kind == "surface":
        name = intent.feature if intent is not None else new_meta.get("colour_by")
        # a colormap suits any feature; none chosen: the builder's
        cmap = chosen.colormap if chosen is not None else None
        builder_cmap = kwargs.get("colormap")
        if cmap and getattr(layer.colormap, "name", None) != cmap:
            layer.colormap = cmap
        elif (
            not cmap
            and builder_cmap is not None
            and getattr(layer.colormap, "name", None) != _name_of(builder_cmap)
        ):
            layer.colormap = builder_cmap
        if intent is not None and intent.contrast_limits is not None:
            layer.contrast_limits = intent.contrast_limits
        elif name is not None:
            limits = memory.limits.setdefault(name, kwargs.get("contrast_limits"))
            if limits is not None:
                layer.contrast_limits = limits
        meta = meta_of(layer)
        assert meta is not None  # a layer of the plugin's (the swap's)
        meta["colour_by"] = new_meta["colour_by"] = name


def _name_of(colormap: Any) -> str | None:
    """A colormap's name (napari ``Colormap`` objects and names alike)."""
    return None if colormap is None else str(getattr(colormap, "name", colormap))


def _keep_point_size(layer: Layer, kwargs: dict, memory: ColourMemory) -> None:
    """The user's point size if they changed it, else the builder's size for this level."""
    size = memory.size if memory.size is not None else kwargs.get("size")
    if size is None:
        return
    size = float(size)
    sizes = np.asarray(layer.size, dtype=float)
    if sizes.size and not np.all(sizes == size):
        layer.size = size
    layer.current_size = size


def _builder_colour(attr: str, kwargs: dict, memory: ColourMemory) -> Any:
    """The colouring a builder proposes: a :class:`ChannelColour` for a colour-by feature (with
    the contrast limits first seen for it), else the direct colour(s) as given."""
    colour = kwargs.get(f"{attr}_color")
    features = kwargs.get("features", {})
    if isinstance(colour, str) and colour in features:
        cmap = kwargs.get(f"{attr}_colormap")
        limits = kwargs.get(f"{attr}_contrast_limits")
        if limits is not None:
            limits = memory.limits.setdefault(colour, tuple(float(v) for v in limits))
        return ChannelColour("colormap", colour, getattr(cmap, "name", cmap), limits, None, None)
    return colour


def _apply_colour(layer: Layer, attr: str, target: ChannelColour | str | np.ndarray | None) -> None:
    """Colour ``layer``'s ``attr`` channel: a :class:`ChannelColour` (feature or uniform), or
    direct colour(s) (a name or an ``(N, 4)`` array); changes only what differs."""
    if target is None:
        return
    if not isinstance(target, ChannelColour):
        setattr(layer, f"{attr}_color", target)
        return
    if target.mode == "direct":
        if target.uniform is not None:
            setattr(layer, f"{attr}_color", np.asarray(target.uniform, dtype=np.float32))
        return
    current = _capture_manager(layer, attr)
    if current.feature != target.feature or current.mode != target.mode:
        setattr(layer, f"{attr}_color", target.feature)
        setattr(layer, f"{attr}_color_mode", target.mode)
    if target.mode != "colormap":
        return
    if target.colormap and current.colormap != target.colormap:
        setattr(layer, f"{attr}_colormap", target.colormap)
    if target.contrast_limits is not None:
        limits = getattr(layer, f"{attr}_contrast_limits", None)
        if limits is None or tuple(float(v) for v in limits) != tuple(target.contrast_limits):
            setattr(layer, f"{attr}_contrast_limits", target.contrast_limits)
