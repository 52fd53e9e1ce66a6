"""Browsing a store by meaning: object tables, filters, group labels, colour tables, picking.

Pure, vectorised numpy over **object-id tables** (one row per object, never per vertex): no
napari, no Qt, no store I/O beyond building an :class:`ObjectTable` from a
:class:`~napari_zarr_vectors.format.store.Store`. The widgets in ``napari/widgets/`` and the
layer glue in :mod:`.browse_layers` are thin shells over these functions.

* :class:`ObjectTable` -- level-0 object ids, their attributes (multi-channel attributes split
  into ``name[i]`` columns) and group membership.
* Filters -- :class:`RangeFilter` (numeric ``lo <= v <= hi``), :class:`ValueFilter` (value in
  a set), :class:`GroupFilter` (member of any chosen group) and :class:`IdFilter` (one of a
  list of ids); :func:`evaluate_filters` ANDs them into the allowed object ids (``None`` when no filter is active).
* :class:`FilterState` -- the filters a user set on one store, combined (what the filter
  widgets share).
* Group labels (:func:`group_labels`), attribute summaries with histogram-informed bounds
  (:func:`summarise`), categorical colour tables and legends (:func:`categorical_colours`,
  :class:`ColourSpec`), and picking the vertex under the cursor (:func:`nearest_row`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

#: Attribute kinds: a range slider for "numeric", a multi-select for "categorical".
NUMERIC = "numeric"
CATEGORICAL = "categorical"

#: An integer attribute with at most this many distinct values is offered as categorical.
MAX_INTEGER_CATEGORIES = 32

#: A categorical control / legend lists at most this many values.
MAX_CATEGORIES = 256

#: Bins of the histogram shown above a range slider.
HISTOGRAM_BINS = 24

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

#: Colour of objects whose value is missing (absent at the level, NaN, ``None``).
MISSING_COLOUR = (0.5, 0.5, 0.5, 1.0)


# --------------------------------------------------------------------------------------------
# object table
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ObjectTable:
    """One row per object of a store (level 0): ids, attribute columns, groups.

    ``attributes[name]`` and ``present[name]`` are aligned with ``ids``. Group membership is
    kept as ``{group id: member ids}``; :meth:`members` turns a set of groups into a row mask.
    """

    ids: np.ndarray
    attributes: Mapping[str, np.ndarray] = field(default_factory=dict)
    present: Mapping[str, np.ndarray] = field(default_factory=dict)
    groups: Mapping[int, np.ndarray] = field(default_factory=dict)
    group_names: Mapping[int, str] = field(default_factory=dict)
    group_attributes: Mapping[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def from_store(cls, store: Any, level: int = 0) -> ObjectTable:
        """The object table of ``store`` at ``level`` (default: level 0, every object).

        Tables the store cannot read are left empty (the widgets then say so) rather than
        failing: a store without objects gives an empty table.
        """
        ids = np.asarray(_safe(store.object_ids, level, np.empty(0, np.int64)), dtype=np.int64)
        by_id = _safe(store.object_attributes, level, {})
        presence = _safe(store.object_attribute_presence, level, {})
        attributes: dict[str, np.ndarray] = {}
        present: dict[str, np.ndarray] = {}
        for name, values in by_id.items():
            values = np.asarray(values)
            rows = _take_rows(values, ids)
            ok = _take_rows(np.asarray(presence.get(name, np.ones(len(values), bool))), ids)
            ok = np.asarray(ok, dtype=bool) & ~_missing(rows)
            for col, col_values in split_channels(name, rows).items():
                attributes[col] = col_values
                present[col] = ok
        groups = {
            int(g): np.asarray(m, dtype=np.int64).ravel()
            for g, m in _safe(store.groups, 0, {}).items()
        }
        names = {int(g): str(n) for g, n in _safe(store.group_names, 0, {}).items()}
        gattrs = {str(k): np.asarray(v) for k, v in _safe(store.group_attributes, 0, {}).items()}
        return cls(ids, attributes, present, groups, names, gattrs)

    @property
    def n_objects(self) -> int:
        return int(self.ids.size)

    @property
    def has_groups(self) -> bool:
        return bool(self.groups)

    def group_ids(self) -> list[int]:
        return sorted(self.groups)

    def members(self, group_ids: Iterable[int], ungrouped: bool = False) -> np.ndarray:
        """Row mask: objects in any of ``group_ids`` (and in no group, when ``ungrouped``)."""
        chosen = [self.groups[g] for g in group_ids if g in self.groups]
        mask = (
            np.isin(self.ids, np.concatenate(chosen)) if chosen else np.zeros(self.n_objects, bool)
        )
        if ungrouped:
            mask |= ~self.grouped()
        return mask

    def grouped(self) -> np.ndarray:
        """Row mask: objects in at least one group."""
        if not self.groups:
            return np.zeros(self.n_objects, bool)
        return np.isin(self.ids, np.concatenate(list(self.groups.values())))

    def groups_overlap(self) -> bool:
        """Whether some object is in several groups."""
        if not self.groups:
            return False
        members = np.concatenate([np.unique(m) for m in self.groups.values()])
        return bool(len(members) > len(np.unique(members)))

    def group_counts(self) -> dict[int, int]:
        """``{group id: number of its members that are objects of the table}``."""
        return {g: int(np.isin(m, self.ids).sum()) for g, m in sorted(self.groups.items())}

    def group_of(self, object_id: int) -> list[int]:
        """Groups holding ``object_id`` (ascending)."""
        return [g for g, m in sorted(self.groups.items()) if np.any(m == object_id)]

    def row_of(self, object_id: int) -> int | None:
        hit = np.flatnonzero(self.ids == int(object_id))
        return int(hit[0]) if hit.size else None

    def attributes_of(self, object_id: int) -> dict[str, Any]:
        """``{column: value}`` of one object (``None`` where it holds no value)."""
        row = self.row_of(object_id)
        if row is None:
            return {}
        return {
            name: (_py(values[row]) if self.present[name][row] else None)
            for name, values in self.attributes.items()
        }


def split_channels(name: str, values: np.ndarray) -> dict[str, np.ndarray]:
    """One column per channel: ``name`` or ``name[0]``, ``name[1]``, ... (the layer feature
    naming of :mod:`.layers`)."""
    values = np.asarray(values)
    if values.ndim <= 1:
        return {name: values.reshape(-1)}
    flat = values.reshape(len(values), -1)
    if flat.shape[1] == 1:
        return {name: flat[:, 0]}
    return {f"{name}[{i}]": flat[:, i] for i in range(flat.shape[1])}


# --------------------------------------------------------------------------------------------
# attribute summaries
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AttributeSummary:
    """What a filter or colour control needs to know about one column.

    ``lo``/``hi`` are the finite extremes of the present values (histogram-informed bounds:
    the histogram shows where the values are), ``categories`` the distinct values with their
    ``counts`` (categorical columns only).
    """

    name: str
    dtype: str
    kind: str
    n_present: int
    n_missing: int
    lo: float | None = None
    hi: float | None = None
    histogram: np.ndarray | None = None
    edges: np.ndarray | None = None
    categories: tuple = ()
    counts: tuple = ()
    integer: bool = False

    def sparkline(self) -> str:
        """The histogram as a one-line bar chart (``▁▂▃▅▇``)."""
        if self.histogram is None or not len(self.histogram):
            return ""
        bars = "▁▂▃▄▅▆▇█"
        top = max(int(self.histogram.max()), 1)
        idx = np.ceil(self.histogram / top * (len(bars) - 1)).astype(int)
        return "".join(
            " " if h == 0 else bars[i] for h, i in zip(self.histogram, idx, strict=False)
        )


def attribute_kind(values: np.ndarray, n_unique: int | None = None) -> str:
    """``"categorical"`` for strings, booleans and integer codes with few distinct values,
    else ``"numeric"``."""
    values = np.asarray(values)
    if values.dtype.kind not in "iuf":
        return CATEGORICAL
    if values.dtype.kind in "iu":
        if n_unique is None:
            n_unique = len(np.unique(values))
        return CATEGORICAL if n_unique <= MAX_INTEGER_CATEGORIES else NUMERIC
    return NUMERIC


def summarise(name: str, values: np.ndarray, present: np.ndarray | None = None) -> AttributeSummary:
    """Summary of a column: kind, bounds and histogram (numeric) or categories (categorical)."""
    values = np.asarray(values)
    ok = np.ones(len(values), bool) if present is None else np.asarray(present, bool)
    ok = ok & ~_missing(values)
    kept = values[ok]
    n_unique = None
    if values.dtype.kind in "iu":
        n_unique = len(np.unique(kept))
    kind = attribute_kind(kept, n_unique)
    common = dict(
        name=name,
        dtype=str(values.dtype),
        kind=kind,
        n_present=int(ok.sum()),
        n_missing=int((~ok).sum()),
        integer=values.dtype.kind in "iub",
    )
    if kind == CATEGORICAL:
        cats, counts = _unique_counts(kept)
        lo = hi = None
        if values.dtype.kind in "iuf" and len(kept):
            lo, hi = float(kept.min()), float(kept.max())
        return AttributeSummary(
            **common,
            lo=lo,
            hi=hi,
            categories=tuple(_py(c) for c in cats[:MAX_CATEGORIES]),
            counts=tuple(int(c) for c in counts[:MAX_CATEGORIES]),
        )
    finite = kept[np.isfinite(kept.astype(np.float64))] if len(kept) else kept
    if not len(finite):
        return AttributeSummary(**common)
    lo, hi = float(finite.min()), float(finite.max())
    hist, edges = np.histogram(finite.astype(np.float64), bins=HISTOGRAM_BINS, range=(lo, hi))
    return AttributeSummary(**common, lo=lo, hi=hi, histogram=hist, edges=edges)


# --------------------------------------------------------------------------------------------
# filters
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RangeFilter:
    """Objects whose ``name`` is within ``[lo, hi]`` (missing values fail)."""

    name: str
    lo: float
    hi: float

    def mask(self, table: ObjectTable) -> np.ndarray:
        values = np.asarray(table.attributes[self.name])
        ok = np.asarray(table.present.get(self.name, np.ones(len(values), bool)), bool)
        v = values.astype(np.float64)
        with np.errstate(invalid="ignore"):
            return ok & (v >= self.lo) & (v <= self.hi)


@dataclass(frozen=True)
class ValueFilter:
    """Objects whose ``name`` is one of ``values`` (missing values fail)."""

    name: str
    values: tuple

    def mask(self, table: ObjectTable) -> np.ndarray:
        values = np.asarray(table.attributes[self.name])
        ok = np.asarray(table.present.get(self.name, np.ones(len(values), bool)), bool)
        wanted = np.asarray(list(self.values), dtype=values.dtype if len(self.values) else None)
        if values.dtype.kind in "OUS":
            return ok & np.isin(values.astype(str), np.asarray(list(self.values), dtype=str))
        return ok & np.isin(values, wanted)


@dataclass(frozen=True)
class GroupFilter:
    """Objects in any of ``groups`` (plus objects in no group when ``ungrouped``)."""

    groups: tuple[int, ...]
    ungrouped: bool = False

    def mask(self, table: ObjectTable) -> np.ndarray:
        return table.members(self.groups, self.ungrouped)


@dataclass(frozen=True)
class IdFilter:
    """Objects whose id is one of ``ids`` (e.g. Pyramid QA's objects dropped between two
    levels); ``label`` says where the ids come from."""

    ids: tuple[int, ...]
    label: str = "chosen objects"

    def mask(self, table: ObjectTable) -> np.ndarray:
        return np.isin(table.ids, np.asarray(self.ids, dtype=np.int64))


Filter = RangeFilter | ValueFilter | GroupFilter | IdFilter


def evaluate_filters(table: ObjectTable, filters: Sequence[Filter]) -> np.ndarray | None:
    """Object ids passing every filter (AND), ascending; ``None`` when there is no filter."""
    if not filters:
        return None
    mask = np.ones(table.n_objects, bool)
    for f in filters:
        mask &= f.mask(table)
    return np.sort(table.ids[mask])


@dataclass
class FilterState:
    """The filters one user set on one store: one group filter and one filter per attribute.

    :meth:`allowed` is what goes to ``controller.set_object_filter``.
    """

    table: ObjectTable
    group_filter: GroupFilter | None = None
    attribute_filters: dict[str, RangeFilter | ValueFilter] = field(default_factory=dict)
    #: an explicit id list (Pyramid QA's *Filter shown layer*), ANDed with the others
    id_filter: IdFilter | None = None

    @property
    def filters(self) -> list[Filter]:
        out: list[Filter] = [] if self.group_filter is None else [self.group_filter]
        out += [] if self.id_filter is None else [self.id_filter]
        return out + list(self.attribute_filters.values())

    @property
    def active(self) -> bool:
        return bool(self.filters)

    def allowed(self) -> np.ndarray | None:
        return evaluate_filters(self.table, self.filters)

    def n_passing(self) -> int:
        allowed = self.allowed()
        return self.table.n_objects if allowed is None else int(allowed.size)

    def set_attribute_filter(self, name: str, f: RangeFilter | ValueFilter | None) -> None:
        if f is None:
            self.attribute_filters.pop(name, None)
        else:
            self.attribute_filters[name] = f

    def clear(self) -> None:
        self.group_filter = None
        self.id_filter = None
        self.attribute_filters.clear()

    def describe(self) -> str:
        """``"7 of 12 objects pass"`` (or ``"all 12 objects"`` without filters)."""
        n = self.table.n_objects
        if not self.active:
            return f"all {n:,} objects shown"
        return f"{self.n_passing():,} of {n:,} objects pass"


# --------------------------------------------------------------------------------------------
# groups
# --------------------------------------------------------------------------------------------

#: Label choice meaning "the store's group names".
GROUP_NAMES = "name"
#: Label choice meaning "just the group id".
GROUP_ID_LABEL = "group id"


def group_label_choices(table: ObjectTable) -> list[str]:
    """What group labels can be made of: names (when the store has them), string
    attributes, the bare id, then the other group attributes."""
    choices = [GROUP_NAMES] if table.group_names else []
    strings = [k for k, v in table.group_attributes.items() if np.asarray(v).dtype.kind in "OUS"]
    others = [k for k in table.group_attributes if k not in strings]
    return choices + strings + [GROUP_ID_LABEL] + others


def default_group_label(table: ObjectTable) -> str:
    """Names when the store has them, else a string attribute, else the bare id."""
    return group_label_choices(table)[0]


def group_labels(table: ObjectTable, by: str | None = None) -> dict[int, str]:
    """``{group id: label}``; ``by`` is one of :func:`group_label_choices` (default
    :func:`default_group_label`). Groups without a value fall back to ``"group <id>"``."""
    by = default_group_label(table) if by is None else by
    out: dict[int, str] = {}
    values = table.group_attributes.get(by) if by not in (GROUP_NAMES, GROUP_ID_LABEL) else None
    for g in table.group_ids():
        label = None
        if by == GROUP_NAMES:
            label = table.group_names.get(g)
        elif values is not None and 0 <= g < len(values):
            label = format_value(values[g])
        out[g] = label if label not in (None, "") else f"group {g}"
    return out


# --------------------------------------------------------------------------------------------
# colour
# --------------------------------------------------------------------------------------------


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

    def with_contrast(self, lo: float, hi: float) -> ColourSpec:
        return replace(self, contrast_limits=(float(lo), float(hi)))

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (layer metadata)."""
        return {
            "feature": self.feature,
            "mode": self.mode,
            "colormap": self.colormap,
            "contrast_limits": None if self.contrast_limits is None else list(self.contrast_limits),
            "categories": [_py(c) for c in self.categories],
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
    extra = np.arange(n - len(base), dtype=np.float64)
    hue = np.mod(extra * 0.618033988749895 + 0.05, 1.0)
    sat, val = 0.65, 1.0
    k = np.mod(np.array([5.0, 3.0, 1.0])[None, :] + hue[:, None] * 6.0, 6.0)
    rgb = val - val * sat * np.clip(np.minimum(k, 4.0 - k), 0.0, 1.0)
    more = np.column_stack([rgb, np.ones(len(extra))]).astype(np.float32)
    return np.concatenate([base, more])


def categorical_colours(
    values: np.ndarray, feature: str, labels: Mapping[Any, str] | None = None
) -> ColourSpec:
    """A categorical :class:`ColourSpec`: one palette colour per distinct present value
    (sorted), at most :data:`MAX_CATEGORIES` (more distinct values share colours cyclically)."""
    values = np.asarray(values)
    kept = values[~_missing(values)]
    cats, _ = _unique_counts(kept)
    cats = [_py(c) for c in cats]
    cols = palette(min(len(cats), MAX_CATEGORIES))
    colours = tuple(tuple(map(float, cols[i % len(cols)])) for i in range(len(cats)))
    labs = tuple((labels or {}).get(c, format_value(c)) for c in cats)
    return ColourSpec(
        feature=feature, mode=CATEGORICAL, categories=tuple(cats), colours=colours, labels=labs
    )


def continuous_colours(values: np.ndarray, feature: str, colormap: str = "viridis") -> ColourSpec:
    """A continuous :class:`ColourSpec` over the finite range of ``values``."""
    return ColourSpec(feature=feature, colormap=colormap, contrast_limits=finite_range(values))


def map_categories(spec: ColourSpec, values: np.ndarray) -> np.ndarray:
    """``(N, 4)`` colours of ``values`` under a categorical spec (vectorised lookup)."""
    values = np.asarray(values)
    out = np.tile(np.asarray(MISSING_COLOUR, np.float32), (len(values), 1))
    if not spec.categories:
        return out
    cols = np.asarray(spec.colours, dtype=np.float32)
    index = category_index(spec, values)
    hit = index >= 0
    out[hit] = cols[index[hit]]
    return out


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


def step_boundaries(categories: Sequence[float]) -> np.ndarray:
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
    cats, counts = _unique_counts(values[~_missing(values)])
    return {_py(c): int(n) for c, n in zip(cats, counts, strict=False)}


# --------------------------------------------------------------------------------------------
# picking
# --------------------------------------------------------------------------------------------


def nearest_row(
    positions: np.ndarray,
    position: Sequence[float],
    displayed: Sequence[int],
    tolerance: float,
    *,
    view_direction: Sequence[float] | None = None,
    slab: Sequence[float] | None = None,
) -> int | None:
    """Row of ``positions`` (``(N, D)`` world coordinates) nearest the cursor, or ``None``.

    2-D views (``view_direction`` is ``None``): distance on the displayed axes, among rows
    whose non-displayed coordinates lie within ``slab`` (half-thickness per axis) of
    ``position``. 3-D views: distance to the ray through ``position`` along
    ``view_direction`` (displayed axes); among rows within ``tolerance`` of the ray, the one
    nearest the camera wins. Only rows within ``tolerance`` are considered.
    """
    pts = np.asarray(positions, dtype=np.float64)
    if pts.ndim != 2 or not len(pts):
        return None
    pos = np.asarray(position, dtype=np.float64)[-pts.shape[1] :]
    disp = [d - (len(position) - pts.shape[1]) for d in displayed]
    disp = [d for d in disp if 0 <= d < pts.shape[1]]
    if not disp:
        return None
    ok = np.ones(len(pts), bool)
    if view_direction is None and slab is not None:
        slab = np.asarray(slab, dtype=np.float64)[-pts.shape[1] :]
        for ax in range(pts.shape[1]):
            if ax not in disp:
                ok &= np.abs(pts[:, ax] - pos[ax]) <= slab[ax]
    d = pts[:, disp] - pos[disp]
    if view_direction is None:
        dist = np.sqrt((d * d).sum(1))
        dist[~ok] = np.inf
        best = int(np.argmin(dist))
        return best if dist[best] <= tolerance else None
    ray = np.asarray(view_direction, dtype=np.float64)[-len(disp) :]
    ray = ray / max(float(np.linalg.norm(ray)), 1e-12)
    along = d @ ray
    perp = np.sqrt(np.maximum((d * d).sum(1) - along**2, 0.0))
    close = perp <= tolerance
    if not close.any():
        return None
    candidates = np.flatnonzero(close)
    return int(candidates[np.argmin(along[candidates])])


# --------------------------------------------------------------------------------------------
# store summary
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LevelSummary:
    index: int
    chunk_shape: tuple[float, ...]
    bin_shape: tuple[float, ...]
    vertex_count: int | None
    object_count: int | None
    coarsening: str


@dataclass(frozen=True)
class StoreSummary:
    """What the store panel shows (metadata plus per-level counts)."""

    name: str
    path: str
    zv_version: str
    geometry_type: str
    axes: tuple[str, ...]
    units: tuple[str | None, ...]
    bounds: tuple[tuple[float, ...], tuple[float, ...]]
    levels: tuple[LevelSummary, ...]
    vertex_attributes: tuple[tuple[str, str], ...]
    object_attributes: tuple[tuple[str, str], ...]
    n_objects: int
    groups: tuple[tuple[int, str, int], ...]
    group_attributes: tuple[tuple[str, str], ...]
    #: where the layers place the stored coordinates ("" = as stored)
    placement: str = ""


def store_summary(store: Any, counts: bool = True) -> StoreSummary:
    """Metadata of ``store`` for the store panel. ``counts`` also reads each level's object
    index to count its objects (the panel does that off the UI thread)."""
    levels = []
    for lv in store.levels:
        n_obj = None
        if counts:
            presence = _safe(store.object_presence, lv.index, None)
            n_obj = None if presence is None or not len(presence) else int(np.sum(presence))
        levels.append(
            LevelSummary(
                index=int(lv.index),
                chunk_shape=tuple(float(v) for v in np.ravel(lv.chunk_shape)),
                bin_shape=tuple(float(v) for v in np.ravel(lv.bin_shape)),
                vertex_count=None if lv.vertex_count is None else int(lv.vertex_count),
                object_count=n_obj,
                coarsening=str(getattr(lv, "coarsening_method", "") or ""),
            )
        )
    vattrs = []
    try:
        from napari_zarr_vectors.format.loading import attribute_specs

        specs = {spec.name: spec for spec in attribute_specs(store.layout, 0)}
        for name in store.vertex_attribute_names(0):
            spec = specs.get(name)
            if spec is None:  # left out by the core (it warned why)
                vattrs.append((name, "unreadable, left out"))
                continue
            text = spec.categories is not None or spec.dtype.kind in "US"
            dtype = "str" if text else str(np.dtype(spec.dtype))
            vattrs.append((spec.name, dtype if not spec.width else f"{dtype} × {spec.width}"))
    except Exception:  # noqa: BLE001 - metadata we cannot read is left out
        vattrs = [(n, "?") for n in _safe(store.vertex_attribute_names, 0, [])]
    oattrs = [
        (name, _dtype_text(np.asarray(v)))
        for name, v in _safe(store.object_attributes, 0, {}).items()
    ]
    table = ObjectTable.from_store(store, 0) if counts else None
    labels = group_labels(table) if table is not None else {}
    gcounts = table.group_counts() if table is not None else {}
    groups = tuple((g, labels.get(g, f"group {g}"), gcounts.get(g, 0)) for g in sorted(gcounts))
    gattrs = [
        (name, _dtype_text(np.asarray(v)))
        for name, v in _safe(store.group_attributes, 0, {}).items()
    ]
    lo, hi = store.bounds
    return StoreSummary(
        name=str(store.name),
        path=str(store.path),
        zv_version=str(store.zv_version),
        geometry_type=str(store.geometry_type),
        axes=tuple(store.axes),
        units=tuple(store.units),
        bounds=(tuple(float(v) for v in lo), tuple(float(v) for v in hi)),
        levels=tuple(levels),
        vertex_attributes=tuple(vattrs),
        object_attributes=tuple(oattrs),
        n_objects=0 if table is None else table.n_objects,
        groups=groups,
        group_attributes=tuple(gattrs),
        placement=_placement(store),
    )


_PLACEMENT_SOURCES = {
    "trackvis_header": "TrackVis voxmm → RAS mm from headers/trk",
    "crs_affine": "the crs affine",
    "coordinate_offset": "coordinate_offset",
    "baked": "stored in it already",
}


def _placement(store: Any) -> str:
    """What ``store.placement`` does, in words ("" when positions are shown as stored)."""
    placement = _safe(lambda _: store.placement, 0, None)
    if placement is None or placement.source == "identity":
        return ""
    space = placement.space or "world"
    how = _PLACEMENT_SOURCES.get(placement.source, placement.source)
    return f"{space} ({how}{'' if placement.exact else ', best effort'})"


def _dtype_text(values: np.ndarray) -> str:
    kind = "str" if values.dtype.kind in "OUS" else str(values.dtype)
    if values.ndim > 1:
        return f"{kind} × {int(np.prod(values.shape[1:]))}"
    return kind


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def format_value(value: Any) -> str:
    """Compact text for a value: ``1.5``, ``7``, ``"left"``, ``(1, 2)``."""
    if value is None:
        return "—"
    arr = np.asarray(value)
    if arr.ndim >= 1:
        return "(" + ", ".join(format_value(v) for v in arr.ravel().tolist()) + ")"
    v = arr.item() if isinstance(arr, np.ndarray) else value
    if isinstance(v, float):
        return "nan" if not np.isfinite(v) else f"{v:.6g}"
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return str(v)


def _missing(values: np.ndarray) -> np.ndarray:
    """Row mask of missing values: NaN, ``None``, or the 0.9 integer absence sentinels."""
    values = np.asarray(values)
    if values.dtype.kind == "f":
        m = np.isnan(values)
    elif values.dtype.kind == "i":
        m = values == np.iinfo(values.dtype).min
    elif values.dtype.kind == "u":
        m = values == np.iinfo(values.dtype).max
    elif values.dtype.kind == "O":
        m = np.equal(values, None)
    else:
        m = np.zeros(values.shape, bool)
    if m.ndim > 1:
        m = m.reshape(len(values), -1).any(1)
    return m


def _unique_counts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values = np.asarray(values)
    if not len(values):
        return np.empty(0), np.empty(0, np.int64)
    if values.dtype.kind == "O":
        values = values.astype(str)
    return np.unique(values, return_counts=True)


def _take_rows(values: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """``values[ids]`` where ids beyond ``values`` give missing values."""
    ok = (ids >= 0) & (ids < len(values))
    if ok.all():
        return values[ids]
    if values.dtype.kind == "f":
        fill: Any = np.nan
    elif values.dtype.kind == "i":
        fill = np.iinfo(values.dtype).min
    elif values.dtype.kind == "u":
        fill = np.iinfo(values.dtype).max
    elif values.dtype.kind == "b":
        fill = False
    else:
        fill = None
    out = np.full((len(ids), *values.shape[1:]), fill, dtype=values.dtype)
    out[ok] = values[ids[ok]]
    return out


def _py(value: Any) -> Any:
    """numpy scalar -> Python scalar (dict keys, JSON)."""
    return value.item() if isinstance(value, np.generic) else value


def _hex_rgba(h: str) -> tuple[float, float, float, float]:
    h = h.lstrip("#")
    return (int(h[0:2], 16) / 255, int(h[2:4], 16) / 255, int(h[4:6], 16) / 255, 1.0)


def _safe(getter: Any, level: int, default: Any) -> Any:
    """``getter(level)``, or ``default`` when the store cannot answer (no table, bad table)."""
    try:
        out = getter(level)
    except Exception:  # noqa: BLE001 - a missing or unreadable table means "none"
        return default
    return default if out is None else out
