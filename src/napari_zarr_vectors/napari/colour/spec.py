"""Colour specs and palettes: a user's colour-by choice (:class:`ColourSpec`, stored in a
layer's metadata), categorical palettes and lookups, step boundaries. Pure numpy, no napari."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from napari_zarr_vectors.format.missing import missing_mask
from napari_zarr_vectors.napari.values import (
    CATEGORICAL,
    MAX_CATEGORIES,
    format_value,
    py_scalar,
    unique_counts,
)

#: Distinct colours for categories (Glasbey-like, readable on black); more categories reuse
#: golden-ratio hues.
CATEGORY_PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#bcbd22",
    "#17becf",
    "#ffdd44",
    "#aec7e8",
    "#ffbb78",
    "#98df8a",
    "#ff9896",
    "#c5b0d5",
    "#c49c94",
    "#f7b6d2",
    "#dbdb8d",
    "#9edae5",
    "#7f7f7f",
)

#: Colour of objects whose value is missing (absent at the level, NaN, ``None``), and of
#: vertices whose object the store does not record (``OBJECT_UNKNOWN``: no object's colour
#: or value applies), by default and in Colour by of object-level features.
MISSING_COLOUR = (0.5, 0.5, 0.5, 1.0)


@dataclass(frozen=True)
class ColourSpec:
    """A colour-by choice for one layer feature.

    ``mode`` is ``"continuous"`` (``colormap`` over ``contrast_limits``) or ``"categorical"``
    (``categories[i]`` gets ``colours[i]``; other values :data:`MISSING_COLOUR`).
    ``labels`` are the legend texts of the categories.
    """

    feature: str
    mode: str = "continuous"
    colormap: str = "viridis"
    contrast_limits: tuple[float, float] | None = None
    categories: tuple = ()
    colours: tuple = ()
    labels: tuple = ()

    @property
    def categorical(self) -> bool:
        return self.mode == CATEGORICAL

    def mapping(self) -> dict[Any, tuple[float, float, float, float]]:
        """``{category: rgba}``."""
        return {c: tuple(col) for c, col in zip(self.categories, self.colours, strict=False)}

    def legend(self, counts: Mapping[Any, int] | None = None) -> list[tuple[str, tuple, int]]:
        """``[(label, rgba, count), ...]`` (counts from ``counts``, else 0)."""
        counts = counts or {}
        labels = self.labels or tuple(format_value(c) for c in self.categories)
        return [
            (lab, tuple(col), int(counts.get(c, 0)))
            for c, col, lab in zip(self.categories, self.colours, labels, strict=False)
        ]

    def with_values(self, values: np.ndarray) -> ColourSpec:
        """This categorical spec with the present values of ``values`` it lacks added as
        categories after its own, which keep their colours (the palette continues as
        :func:`categorical_colours` would colour them); itself when it lacks none."""
        values = np.asarray(values)
        distinct, _ = unique_counts(values[~missing_mask(values)])
        known = set(self.categories)
        new = [c for c in (py_scalar(d) for d in distinct) if c not in known]
        if not new:
            return self
        n = len(self.categories) + len(new)
        cols = palette(min(n, MAX_CATEGORIES))
        added = tuple(
            tuple(map(float, cols[i % len(cols)])) for i in range(len(self.categories), n)
        )
        return replace(
            self,
            categories=(*self.categories, *new),
            colours=(*self.colours, *added),
            labels=(*self.labels, *(format_value(c) for c in new)) if self.labels else (),
        )

    def with_contrast(self, lo: float, hi: float) -> ColourSpec:
        return replace(self, contrast_limits=(float(lo), float(hi)))

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (layer metadata)."""
        return {
            "feature": self.feature,
            "mode": self.mode,
            "colormap": self.colormap,
            "contrast_limits": None if self.contrast_limits is None else list(self.contrast_limits),
            "categories": [py_scalar(c) for c in self.categories],
            "colours": [list(map(float, c)) for c in self.colours],
            "labels": list(self.labels),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ColourSpec:
        return cls(
            feature=d["feature"],
            mode=d.get("mode", "continuous"),
            colormap=d.get("colormap", "viridis"),
            contrast_limits=None
            if d.get("contrast_limits") is None
            else tuple(d["contrast_limits"]),
            categories=tuple(d.get("categories", ())),
            colours=tuple(tuple(c) for c in d.get("colours", ())),
            labels=tuple(d.get("labels", ())),
        )


def palette(n: int) -> np.ndarray:
    """``(n, 4)`` distinct RGBA colours (the fixed palette, then golden-ratio hues)."""
    base = np.array([_hex_rgba(h) for h in CATEGORY_PALETTE], dtype=np.float32)
    if n <= len(base):
        return base[:n]
    more = golden_hues(np.arange(n - len(base)), offset=0.05, saturation=0.65)
    return np.concatenate([base, more])


def golden_hues(keys: np.ndarray, offset: float, saturation: float) -> np.ndarray:
    """``(N, 4)`` RGBA colours, one per number of ``keys``: hues a golden-ratio step apart
    (``offset`` + key x 0.618..., so neighbouring keys differ most), full value, HSV -> RGB;
    NaN keys count as 0."""
    keys = np.nan_to_num(np.asarray(keys, dtype=np.float64), nan=0.0)
    hue = np.mod(keys * 0.618033988749895 + offset, 1.0)
    k = np.mod(np.array([5.0, 3.0, 1.0])[None, :] + hue[:, None] * 6.0, 6.0)
    rgb = 1.0 - saturation * np.clip(np.minimum(k, 4.0 - k), 0.0, 1.0)
    return np.column_stack([rgb, np.ones(len(keys))]).astype(np.float32)


def categorical_colours(
    values: np.ndarray, feature: str, labels: Mapping[Any, str] | None = None
) -> ColourSpec:
    """A categorical :class:`ColourSpec`: one palette colour per distinct present value
    (sorted), at most :data:`MAX_CATEGORIES` (more distinct values share colours cyclically)."""
    values = np.asarray(values)
    kept = values[~missing_mask(values)]
    distinct, _ = unique_counts(kept)
    cats = [py_scalar(c) for c in distinct]
    cols = palette(min(len(cats), MAX_CATEGORIES))
    colours = tuple(tuple(map(float, cols[i % len(cols)])) for i in range(len(cats)))
    labs = tuple((labels or {}).get(c, format_value(c)) for c in cats)
    return ColourSpec(
        feature=feature, mode=CATEGORICAL, categories=tuple(cats), colours=colours, labels=labs
    )


def continuous_colours(values: np.ndarray, feature: str, colormap: str = "viridis") -> ColourSpec:
    """A continuous :class:`ColourSpec` over the range of ``values`` that shows them
    (:func:`display_range`)."""
    return ColourSpec(feature=feature, colormap=colormap, contrast_limits=display_range(values))


#: Percentiles of :func:`display_range` when a few outliers would squeeze the rest.
ROBUST_PERCENTILES = (1.0, 99.0)


def display_range(values: np.ndarray) -> tuple[float, float]:
    """The finite range of ``values`` (:func:`finite_range`), unless a few outliers span
    most of it (the 1st..99th percentiles cover under half of it: a skeleton's soma radius
    beside its thin neurites puts 98 % of the nodes at the dark end of any colormap): then
    those percentiles, the outliers drawn in the end colours."""
    lo, hi = finite_range(values)
    v = np.asarray(values)
    if v.dtype.kind not in "iuf" or hi <= lo:
        return lo, hi
    v = v[np.isfinite(v)].astype(np.float64)
    if not len(v):
        return lo, hi
    p_lo, p_hi = (float(p) for p in np.percentile(v, ROBUST_PERCENTILES))
    if p_hi > p_lo and p_hi - p_lo < 0.5 * (hi - lo):
        return p_lo, p_hi
    return lo, hi


def category_index(spec: ColourSpec, values: np.ndarray) -> np.ndarray:
    """Index of each value in ``spec.categories`` (``-1`` when not a category)."""
    values = np.asarray(values)
    cats = list(spec.categories)
    if values.dtype.kind in "iufb" and all(isinstance(c, (int, float, bool)) for c in cats):
        keys = np.asarray(cats, dtype=np.float64)
        v = values.astype(np.float64)
    else:
        keys = np.asarray([str(c) for c in cats])
        v = values.astype(str)
    order = np.argsort(keys, kind="stable")
    pos = np.searchsorted(keys[order], v)
    pos = np.clip(pos, 0, len(keys) - 1)
    found = keys[order][pos] == v
    return np.where(found, order[pos], -1)


def step_boundaries(categories: Sequence[float] | np.ndarray) -> np.ndarray:
    """Bin edges putting each sorted numeric category alone in its bin (midpoints between
    neighbours, half a gap beyond the ends): the controls of a step colormap."""
    u = np.asarray(sorted(categories), dtype=np.float64)
    if len(u) == 0:
        return np.array([0.0, 1.0])
    if len(u) == 1:
        return np.array([u[0] - 0.5, u[0] + 0.5])
    gaps = np.diff(u)
    half = 0.5 * float(gaps.min()) if gaps.min() > 0 else 0.5
    mids = 0.5 * (u[:-1] + u[1:])
    return np.concatenate([[u[0] - half], mids, [u[-1] + half]])


def finite_range(values: np.ndarray) -> tuple[float, float]:
    """Finite ``(min, max)`` of ``values`` (``(0, 1)`` when none; widened when equal)."""
    values = np.asarray(values)
    if values.dtype.kind not in "iufb":
        return 0.0, 1.0
    v = values.astype(np.float64)
    v = v[np.isfinite(v)]
    if not len(v):
        return 0.0, 1.0
    lo, hi = float(v.min()), float(v.max())
    return (lo, hi) if hi > lo else (lo, lo + 1.0)


def value_counts(values: np.ndarray) -> dict[Any, int]:
    """``{value: count}`` of the present values."""
    values = np.asarray(values)
    cats, counts = unique_counts(values[~missing_mask(values)])
    return {py_scalar(c): int(n) for c, n in zip(cats, counts, strict=False)}


def _hex_rgba(h: str) -> tuple[float, float, float, float]:
    h = h.lstrip("#")
    return (int(h[0:2], 16) / 255, int(h[2:4], 16) / 255, int(h[4:6], 16) / 255, 1.0)
