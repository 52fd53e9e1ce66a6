"""The object table of a store (one row per object, never per vertex) and attribute
summaries: what the filter and colour widgets read. Pure, vectorised numpy over object-id
tables; no napari, no Qt, no store I/O beyond building an :class:`ObjectTable` from a
:class:`~napari_zarr_vectors.format.store.Store`.

* :class:`ObjectTable` -- level-0 object ids, their attributes (multi-channel attributes split
  into ``name[i]`` columns) and group membership.
* :func:`summarise` -- an attribute's kind, histogram-informed bounds or categories.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from napari_zarr_vectors.format.api import GeometryStore
from napari_zarr_vectors.format.distinct import distinct
from napari_zarr_vectors.format.missing import missing_mask, take_by_id
from napari_zarr_vectors.napari.conventions import split_channels
from napari_zarr_vectors.napari.values import (
    CATEGORICAL,
    MAX_CATEGORIES,
    attribute_kind,
    py_scalar,
    unique_counts,
)

#: Bins of the histogram shown above a range slider.
HISTOGRAM_BINS = 24


# --------------------------------------------------------------------------------------------
# object table
# --------------------------------------------------------------------------------------------


T = TypeVar("T")
D = TypeVar("D")


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
    def from_store(cls, store: GeometryStore, level: int = 0) -> ObjectTable:
        """The object table of ``store`` at ``level`` (default: level 0, every object).

        Tables the store cannot read are left empty (the widgets then say so) rather than
        failing: a store without objects gives an empty table.
        """
        ids = np.asarray(safe_read(store.object_ids, level, np.empty(0, np.int64)), dtype=np.int64)
        by_id = safe_read(store.object_attributes, level, {})
        presence = safe_read(store.object_attribute_presence, level, {})
        attributes: dict[str, np.ndarray] = {}
        present: dict[str, np.ndarray] = {}
        for name, values in by_id.items():
            values = np.asarray(values)
            rows = take_by_id(values, ids)
            flags = np.asarray(presence.get(name, np.ones(len(values), bool)))
            ok = take_by_id(flags, ids, fill=False)
            ok = np.asarray(ok, dtype=bool) & ~missing_mask(rows)
            for col, col_values in split_channels(name, rows).items():
                attributes[col] = col_values
                present[col] = ok
        groups = {
            int(g): np.asarray(m, dtype=np.int64).ravel()
            for g, m in safe_read(store.groups, 0, {}).items()
        }
        names = {int(g): str(n) for g, n in safe_read(store.group_names, 0, {}).items()}
        gattrs = {
            str(k): np.asarray(v) for k, v in safe_read(store.group_attributes, 0, {}).items()
        }
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
        members = np.concatenate([distinct(m) for m in self.groups.values()])
        return bool(len(members) > len(distinct(members)))

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
            name: (py_scalar(values[row]) if self.present[name][row] else None)
            for name, values in self.attributes.items()
        }


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


def summarise(name: str, values: np.ndarray, present: np.ndarray | None = None) -> AttributeSummary:
    """Summary of a column: kind, bounds and histogram (numeric) or categories (categorical)."""
    values = np.asarray(values)
    ok = np.ones(len(values), bool) if present is None else np.asarray(present, bool)
    ok = ok & ~missing_mask(values)
    kept = values[ok]
    n_unique = None
    if values.dtype.kind in "iu":
        n_unique = len(distinct(kept))
    kind = attribute_kind(kept, n_unique)
    common: dict[str, Any] = dict(
        name=name,
        dtype=str(values.dtype),
        kind=kind,
        n_present=int(ok.sum()),
        n_missing=int((~ok).sum()),
        integer=values.dtype.kind in "iub",
    )
    if kind == CATEGORICAL:
        cats, counts = unique_counts(kept)
        lo = hi = None
        if values.dtype.kind in "iuf" and len(kept):
            lo, hi = float(kept.min()), float(kept.max())
        return AttributeSummary(
            **common,
            lo=lo,
            hi=hi,
            categories=tuple(py_scalar(c) for c in cats[:MAX_CATEGORIES]),
            counts=tuple(int(c) for c in counts[:MAX_CATEGORIES]),
        )
    finite = kept[np.isfinite(kept.astype(np.float64))] if len(kept) else kept
    if not len(finite):
        return AttributeSummary(**common)
    lo, hi = float(finite.min()), float(finite.max())
    hist, edges = np.histogram(finite.astype(np.float64), bins=HISTOGRAM_BINS, range=(lo, hi))
    return AttributeSummary(**common, lo=lo, hi=hi, histogram=hist, edges=edges)


def safe_read(getter: Callable[[int], T | None], level: int, default: D) -> T | D:
    """``getter(level)``, or ``default`` when the store cannot answer (no table, bad table)."""
    try:
        out = getter(level)
    except Exception:  # noqa: BLE001 - a missing or unreadable table means "none"
        return default
    return default if out is None else out
