"""Filters over an object table: :class:`RangeFilter` (numeric ``lo <= v <= hi``),
:class:`ValueFilter` (value in a set), :class:`GroupFilter` (member of any chosen group) and
:class:`IdFilter` (one of a list of ids); :func:`evaluate_filters` ANDs them into the allowed
object ids (``None`` when no filter is active); :class:`FilterState` is the filters a user set
on one store, combined (what the filter widgets share)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from napari_zarr_vectors.napari.browse.table import ObjectTable


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
