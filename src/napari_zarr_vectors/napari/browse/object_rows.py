"""The rows of the *Object table* dock: one per object of a store, as numpy columns.

Pure numpy over an :class:`~napari_zarr_vectors.napari.browse.table.ObjectTable` (no Qt, no
napari): the dock's virtual Qt model asks it for the text of the cells it draws, its row
order after a sort and its rows matching a search, so nothing is held per row but numpy
values.

* Columns: the object id, each object attribute (multi-channel attributes split into
  ``name[i]``; text decoded and kept as codes into its sorted values), and the names of the
  object's groups (:func:`~napari_zarr_vectors.napari.browse.groups.group_labels`). A header
  names the attribute's unit where the store declares one (:func:`attribute_units`).
* :meth:`ObjectRows.order` -- a stable sort by one column, missing values last either way.
* :meth:`ObjectRows.matches` -- a search: every whitespace-separated term must match a
  column of the row: a case-insensitive substring of a text column, or the leading digits
  of an integer column (the id, ``body_id``...).
* :func:`write_csv` -- rows and columns with a header, values as stored.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from napari_zarr_vectors.format.api import store_layout
from napari_zarr_vectors.napari.browse.groups import group_labels
from napari_zarr_vectors.napari.browse.table import ObjectTable

if TYPE_CHECKING:
    from napari_zarr_vectors.format.api import GeometryStore

#: Column kinds.
ID, INTEGER, FLOAT, TEXT = "id", "integer", "float", "text"

#: Text of a cell without a value.
MISSING_TEXT = "—"

#: ``10**k`` for the decimal digits of an int64.
_POW10 = 10 ** np.arange(19, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class Column:
    """One column: ``values`` (numbers) or ``codes`` into ``categories`` (text, ``-1`` =
    no value); ``present`` marks rows holding a value."""

    name: str
    header: str
    kind: str
    values: np.ndarray
    present: np.ndarray
    categories: np.ndarray = field(default_factory=lambda: np.empty(0, str))
    #: decimals shown for a float column (``None``: 4 significant digits)
    decimals: int | None = None
    #: integers shown with thousands separators (counts), not bare (ids, codes)
    grouped: bool = False

    @property
    def numeric(self) -> bool:
        return self.kind != TEXT

    @cached_property
    def folded(self) -> np.ndarray:
        """The categories in lower case (what a search compares)."""
        return np.char.lower(self.categories)

    def text(self, row: int) -> str:
        """The cell's text, as the table shows it."""
        if not self.present[row]:
            return MISSING_TEXT
        if self.kind == TEXT:
            return str(self.categories[self.values[row]])
        value = self.values[row]
        if self.kind == FLOAT:
            if not np.isfinite(value):
                return str(value)
            if self.decimals is None:
                return f"{float(value):.4g}"
            return f"{float(value):,.{self.decimals}f}"
        return f"{int(value):,}" if self.grouped else str(int(value))

    def raw(self) -> np.ndarray:
        """Every row's value as text, as stored (``""`` where there is none): what a CSV
        holds. Floats keep their shortest round-trip form."""
        if self.kind == TEXT:
            out = np.where(self.present, self.categories[np.maximum(self.values, 0)], "")
        else:
            out = np.where(self.present, self.values.astype(str), "")
        return out.astype(str)

    def sort_key(self, descending: bool) -> np.ndarray:
        """A key whose ascending stable order is the column's order (reversed when
        ``descending``; equal values keep their row order either way)."""
        v = self.values
        if not descending:
            return v
        if v.dtype.kind == "f":
            return -v
        return ~v.astype(np.int64)  # order-reversing, no overflow


@dataclass(frozen=True, eq=False)
class ObjectRows:
    """The table's columns (``columns[0]`` is the object id), row-aligned with ``ids``."""

    ids: np.ndarray
    columns: tuple[Column, ...]
    _orders: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_table(
        cls,
        table: ObjectTable,
        units: Mapping[str, str] | None = None,
        group_label_by: str | None = None,
    ) -> ObjectRows:
        """The rows of ``table``; ``units`` (``{attribute: unit}``) go in the headers."""
        units = units or {}
        ids = np.asarray(table.ids, np.int64)
        n = len(ids)
        columns = [Column("object id", "object id", ID, ids, np.ones(n, bool))]
        for name, values in table.attributes.items():
            present = np.asarray(table.present.get(name, np.ones(n, bool)), bool)
            base = name.split("[", 1)[0]
            unit = units.get(name) or units.get(base)
            header = f"{name} ({unit})" if unit else name
            columns.append(_column(name, header, np.asarray(values), present))
        if table.has_groups:
            columns.append(_group_column(table, ids, group_label_by))
        return cls(ids, tuple(columns))

    @property
    def n(self) -> int:
        return int(self.ids.size)

    @property
    def headers(self) -> list[str]:
        return [c.header for c in self.columns]

    def order(self, column: int, descending: bool = False) -> np.ndarray:
        """Row indices sorted by ``column`` (stable; rows without a value last), cached."""
        key = (column, descending)
        if key not in self._orders:
            col = self.columns[column]
            with_value = np.flatnonzero(col.present)
            sort_key = col.sort_key(descending)[with_value]
            ranked = with_value[np.argsort(sort_key, kind="stable")]
            self._orders[key] = np.concatenate([ranked, np.flatnonzero(~col.present)])
        return self._orders[key]

    def matches(self, query: str) -> np.ndarray | None:
        """Row mask of the rows matching every term of ``query`` (``None``: no terms)."""
        terms = query.split()
        if not terms:
            return None
        mask = np.ones(self.n, bool)
        for term in terms:
            hit = np.zeros(self.n, bool)
            for col in self.columns:
                if col.kind == TEXT:
                    hit |= _text_match(col, term)
                elif col.kind in (ID, INTEGER):
                    hit |= _leading_digits(col.values, col.present, term)
            mask &= hit
        return mask

    def rows_of(self, object_ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """Rows of ``object_ids`` (ids not in the table are left out), in the ids' order."""
        rows = _rows_of(self.ids, np.asarray(object_ids, np.int64).reshape(-1))
        return rows[rows >= 0]


_rows: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def cached_rows(store: GeometryStore, table: ObjectTable) -> ObjectRows | None:
    """The rows :func:`store_rows` made for ``store`` and ``table`` (``None``: not yet)."""
    cached = _rows.get(store)
    return cached[1] if cached is not None and cached[0] is table else None


def store_rows(store: GeometryStore, table: ObjectTable) -> ObjectRows:
    """The rows of ``store``'s object table ``table`` with its units (cached per store)."""
    rows = cached_rows(store, table)
    if rows is not None:
        return rows
    rows = ObjectRows.from_table(table, attribute_units(store))
    with contextlib.suppress(TypeError):
        _rows[store] = (table, rows)
    return rows


def write_csv(
    target: str | os.PathLike | io.TextIOBase,
    rows: ObjectRows,
    order: np.ndarray | None = None,
    columns: Sequence[int] | None = None,
) -> int:
    """Write ``rows`` (those of ``order``, default all) and ``columns`` (default all) with
    a header line of their headers to ``target`` (a path or an open text file). Values are
    as stored: numbers in full, text decoded, nothing where there is no value. Returns
    the number of rows written."""
    order = np.arange(rows.n) if order is None else np.asarray(order, np.int64)
    columns = range(len(rows.columns)) if columns is None else columns
    chosen = [rows.columns[c] for c in columns]
    cells = [c.raw()[order] for c in chosen]
    if isinstance(target, io.TextIOBase):
        _write(target, [c.header for c in chosen], cells)
    else:
        with open(target, "w", newline="", encoding="utf-8") as fh:
            _write(fh, [c.header for c in chosen], cells)
    return int(order.size)


def _write(fh: io.TextIOBase, header: list[str], cells: list[np.ndarray]) -> None:
    out = csv.writer(fh)
    out.writerow(header)
    out.writerows(zip(*(c.tolist() for c in cells), strict=True))


def attribute_units(store: GeometryStore, level: int = 0) -> dict[str, str]:
    """``{object attribute: unit}`` for the attributes whose array declares a ``unit``
    (zarr-vectors copies a schema's declared unit there), as a short symbol (``mm``)."""
    out: dict[str, str] = {}
    layout = store_layout(store)
    if layout is None:  # an added geometry of a composite store: no attribute arrays
        return out
    try:
        names = layout.list_attributes(level, "object")
    except Exception:  # noqa: BLE001 - a store without a readable attribute list
        return out
    for name in names:
        try:
            meta = layout.array_attributes(level, f"object_attributes/{name}") or {}
        except Exception:  # noqa: BLE001 - one unreadable array: no unit for it
            continue
        unit = meta.get("unit")
        if isinstance(unit, str) and unit:
            out[name] = unit_symbol(unit)
    return out


def unit_symbol(unit: str) -> str:
    """``mm`` for ``millimeter`` (pint's short form), the text itself when pint does not
    know it."""
    try:
        import pint

        return f"{pint.Unit(unit):~}" or unit
    except Exception:  # noqa: BLE001 - not a pint unit: show it as written
        return unit


# --------------------------------------------------------------------------------------------
# building columns
# --------------------------------------------------------------------------------------------


def _column(name: str, header: str, values: np.ndarray, present: np.ndarray) -> Column:
    kind = values.dtype.kind
    if kind == "f":
        return Column(name, header, FLOAT, values, present, decimals=_decimals(values, present))
    if kind in "iu" and (kind == "i" or values.max(initial=0) <= np.iinfo(np.int64).max):
        ints = values.astype(np.int64)
        grouped = not name.lower().endswith("id")
        return Column(name, header, INTEGER, ints, present, grouped=grouped)
    if kind == "S":
        values = np.char.decode(values, "utf-8", "replace")
    text = values.astype(str) if present.all() else np.where(present, values, "").astype(str)
    codes, categories = _factorize(text)
    codes, categories = _case_insensitive(codes, categories)
    return Column(name, header, TEXT, np.where(present, codes, -1), present, categories)


def _factorize(text: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, distinct values)`` of a string array: strings are hashed to 64-bit keys
    (their characters times random odd weights), which sort much faster than the strings;
    a collision (checked) falls back to sorting the strings."""
    text = np.ascontiguousarray(text)
    width = text.dtype.itemsize // 4
    if not len(text) or not width:
        return np.zeros(len(text), np.int64), np.asarray([""] if len(text) else [], str)
    chars = text.view(np.uint32).reshape(len(text), width).astype(np.uint64)
    weights = np.random.default_rng(0).integers(1, 2**63, width, dtype=np.uint64) | np.uint64(1)
    key = (chars * weights).sum(axis=1, dtype=np.uint64)
    _, first, codes = np.unique(key, return_index=True, return_inverse=True)
    if np.array_equal(text[first][codes], text):
        return codes.astype(np.int64), text[first]
    categories, codes = np.unique(text, return_inverse=True)
    return codes.astype(np.int64), categories


def _case_insensitive(codes: np.ndarray, categories: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Re-number text codes so that their order is the case-insensitive order."""
    order = np.lexsort((categories, np.char.lower(categories)))
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank[codes], categories[order]


def _decimals(values: np.ndarray, present: np.ndarray) -> int | None:
    """Decimals showing a float column's typical value with 4 significant digits (the same
    for every row, so decimal points line up); ``None`` for very large or small values."""
    v = np.abs(values[present].astype(np.float64))
    v = v[np.isfinite(v) & (v > 0)]
    if not v.size:
        return 2
    typical = float(np.median(v))
    if typical >= 1e7 or typical < 1e-4:
        return None
    return int(np.clip(3 - np.floor(np.log10(typical)), 0, 6))


def _group_column(table: ObjectTable, ids: np.ndarray, by: str | None) -> Column:
    """The names of each object's groups (``a, b`` for an object in two), as text codes."""
    labels = group_labels(table, by)
    gids = table.group_ids()
    members = [np.asarray(table.groups[g], np.int64).reshape(-1) for g in gids]
    which = np.repeat(np.arange(len(gids), dtype=np.int64), [len(m) for m in members])
    rows = _rows_of(ids, np.concatenate(members) if members else np.empty(0, np.int64))
    found = rows >= 0
    # (row, group) pairs, each once, sorted by row then group
    pairs = np.sort(rows[found] * len(gids) + which[found])
    pairs = pairs[np.r_[True, np.diff(pairs) != 0]] if len(pairs) else pairs
    rows, which = pairs // max(len(gids), 1), pairs % max(len(gids), 1)
    # one random 64-bit word per group, XORed per object: the key of its set of groups
    words = np.random.default_rng(0).integers(1, 2**63, len(gids), dtype=np.int64)
    key = np.zeros(len(ids), np.int64)
    np.bitwise_xor.at(key, rows, words[which])
    present = key != 0
    _, first, codes = np.unique(key, return_index=True, return_inverse=True)
    starts = np.searchsorted(rows, first)
    ends = np.searchsorted(rows, first, side="right")
    names = [
        ", ".join(labels[gids[k]] for k in which[s:e]) for s, e in zip(starts, ends, strict=True)
    ]
    categories = np.asarray(names, dtype=str)
    codes, categories = _case_insensitive(codes.astype(np.int64), categories)
    header = "groups" if bool(np.any(np.diff(rows) == 0)) else "group"
    return Column(header, header, TEXT, np.where(present, codes, -1), present, categories)


def _rows_of(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Row of each of ``wanted`` in ``ids`` (``-1`` when absent): a direct lookup when the
    ids are dense, else a binary search."""
    if not len(ids):
        return np.full(len(wanted), -1, np.int64)
    lo, hi = int(ids.min()), int(ids.max())
    if lo >= 0 and hi < 4 * len(ids) + 1024:
        where = np.full(hi + 1, -1, np.int64)
        where[ids] = np.arange(len(ids))
        ok = (wanted >= 0) & (wanted <= hi)
        out = np.full(len(wanted), -1, np.int64)
        out[ok] = where[wanted[ok]]
        return out
    sorter = np.argsort(ids, kind="stable")
    pos = np.clip(np.searchsorted(ids, wanted, sorter=sorter), 0, len(ids) - 1)
    rows = sorter[pos]
    return np.where(ids[rows] == wanted, rows, -1)


# --------------------------------------------------------------------------------------------
# searching
# --------------------------------------------------------------------------------------------


def _text_match(col: Column, term: str) -> np.ndarray:
    """Rows whose text contains ``term`` (case-insensitive)."""
    if not len(col.categories):
        return np.zeros(len(col.values), bool)
    hit = np.char.find(col.folded, term.lower()) >= 0
    return col.present & hit[np.maximum(col.values, 0)]


def _leading_digits(values: np.ndarray, present: np.ndarray, term: str) -> np.ndarray:
    """Rows whose decimal form starts with ``term`` (all digits; ``722`` finds 722817260)."""
    if not term.isdigit() or len(term) > 18 or (len(term) > 1 and term[0] == "0"):
        return np.zeros(len(values), bool)
    wanted, k = int(term), len(term)
    v = values.astype(np.int64)
    digits = np.maximum(np.searchsorted(_POW10, v, side="right"), 1)
    shift = digits - k
    ok = present & (v >= 0) & (shift >= 0)
    out = np.zeros(len(v), bool)
    out[ok] = v[ok] // _POW10[shift[ok]] == wanted
    return out
