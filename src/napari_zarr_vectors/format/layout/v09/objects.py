"""The objects and groups of a 0.9 level: the object index (a vlen ``manifests`` array or
the dense ``manifest_spans`` + ``manifest_blocks``, with ``object_ids``), object
attributes, groups (``groups`` + ``group_ranges``) and group attributes."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from ...decode.arrays import text_values
from ...decode.manifests import Mode0Manifests, dense_manifests, join_manifests
from ...decode.vlen import PackedBlobs, blob_sizes
from ...distinct import distinct
from ...errors import ZVChunkWarning, ZVFormatError
from ...validate import MAX_COORD, int_field, int_list, list_field, mapping_field
from ..base import GroupTable, Layout, ObjectAttribute, ObjectRows, ObjectTable
from .cells import cell_value
from .plain import PlainArrays

#: Most object ids one ``group_ranges`` entry may span.
MAX_GROUP_RANGE = 1 << 26


class ObjectsAndGroups:
    """The object index, object attributes, groups and group attributes of a 0.9 store's
    levels, read from their plain arrays."""

    def __init__(self, layout: Layout, plain: PlainArrays) -> None:
        self.layout = layout
        self.plain = plain

    def table(self, level: int) -> ObjectTable | None:
        attrs = self.layout.attrs(f"{level}/object_index")
        if attrs is None:
            self.layout.warn_if_listed(level, "object_index", "object index")
            return None
        if self._dense_index(level, attrs):
            return self._dense_table(level, attrs)
        manifests, ids = self.plain.read(
            level, ["object_index/manifests", "object_index/object_ids"], manifests=True
        )
        if manifests is None:
            raise self.layout.error(
                "the object index has no manifests array", level, "object_index"
            )
        shape = manifests.shape if isinstance(manifests, np.ndarray) else (len(manifests),)
        n = self._manifest_count(level, attrs, shape)
        # (1-D: the manifests, packed or as an object array of bytes)
        blobs = cast(Sequence[bytes], manifests[:n])
        self._check_unwritten_rows(level, attrs, n, np.arange(n), blobs)
        ids = cast(np.ndarray | None, ids)  # (int64 ids: not packed)
        return ObjectTable(self._row_ids(level, ids, n, attrs), blobs)

    def rows(self, level: int) -> ObjectRows | ObjectTable | None:
        """A vlen index read in chunks of rows (what 0.9 writers produce): ``object_ids``
        whole (checked as the whole table's are), the manifests chunk by chunk later."""
        attrs = self.layout.attrs(f"{level}/object_index")
        if attrs is None or self._dense_index(level, attrs):
            return self.table(level)
        path = "object_index/manifests"
        arr = self.plain.open(f"{level}/{path}", level)
        if arr is None:
            raise self.layout.error(
                "the object index has no manifests array", level, "object_index"
            )
        n = self._manifest_count(level, attrs, arr.shape)
        per_chunk = self.plain.vlen_rows_direct(level, path, arr)
        if per_chunk is None or per_chunk < 1:
            return self.table(level)
        (ids,) = self.plain.read(level, ["object_index/object_ids"])
        row_ids = self._row_ids(level, ids, n, attrs)

        def manifests(rows: np.ndarray) -> ObjectTable:
            rows = np.asarray(rows, np.int64)
            cells = distinct(rows // per_chunk)
            # a run of rows (a part of the index): its chunks' manifests read packed, as
            # the whole index's are, not one Python object per row
            run = len(rows) > 1 and bool(np.all(np.diff(rows) == 1))
            pieces = self.plain.checked_chunks(
                level, path, arr, (per_chunk,), cells[:, None], "manifests" if run else "objects"
            )
            if pieces is None:  # a fetch that kept failing: reported as a whole read does
                whole = self.table(level)
                assert whole is not None  # (the index's attributes were read)
                return ObjectTable(row_ids[rows], [whole.manifests[r] for r in rows.tolist()])
            blobs: Sequence[bytes]
            if run:
                first = int(rows[0]) - int(cells[0]) * per_chunk
                joined = join_manifests(cast(list[Mode0Manifests | PackedBlobs], pieces))
                blobs = cast(Sequence[bytes], joined[first : first + len(rows)])
            else:
                at = np.searchsorted(cells, rows // per_chunk).tolist()
                local = (rows % per_chunk).tolist()
                blobs = [cell_value(pieces[c][r]) or b"" for c, r in zip(at, local, strict=True)]
            self._check_unwritten_rows(level, attrs, n, rows, blobs)
            return ObjectTable(row_ids[rows], blobs)

        return ObjectRows(row_ids, manifests, per_chunk)

    def _manifest_count(self, level: int, attrs: dict[str, Any], shape: Sequence[int]) -> int:
        """``num_objects`` of a vlen index, checked against its manifests array's shape."""
        if len(shape) != 1:
            raise self.layout.error(
                f"manifests array has shape {list(shape)}", level, "object_index/manifests"
            )
        src = self.layout.src(f"{level}/object_index", level, "object_index")
        n = int_field(attrs, "num_objects", src, shape[0])
        if shape[0] < n:
            raise self.layout.error(
                f"object index holds {shape[0]} manifests, expected {n}",
                level,
                "object_index/manifests",
            )
        return n

    def _check_unwritten_rows(
        self, level: int, attrs: dict[str, Any], n: int, rows: np.ndarray, blobs: Sequence[bytes]
    ) -> None:
        """Warn when the manifests ``blobs`` of index rows ``rows`` that read as the fill
        value (no bytes: their chunk is not stored) are more than ``num_present`` allows:
        a manifest holds at least its block count, so at most ``n`` minus those rows hold
        one, and ``num_present`` counts the rows that do. Their objects read as objects
        without geometry (the gap); the geometry itself is read."""
        empty = blob_sizes(blobs) == 0
        lost = int(np.count_nonzero(empty))
        if not lost:
            return
        src = self.layout.src(f"{level}/object_index", level, "object_index")
        present = int_field(attrs, "num_present", src, None, 0, None)
        if present is None or n - lost >= present:
            return
        path = "object_index/manifests"
        arr = self.plain.open(f"{level}/{path}", level)
        per_chunk = getattr(arr.metadata.chunk_grid, "chunk_shape", None) if arr else None
        chunk = key = None
        if per_chunk and arr is not None:  # (a chunk shape is read from the array)
            chunk = (int(np.asarray(rows)[empty][0]) // int(per_chunk[0]),)
            key = f"{level}/{path}/{arr.metadata.encode_chunk_key(chunk)}"
        error = ZVFormatError(
            f"{lost} manifest rows read as the fill value (their chunk is not stored), but "
            f"num_present says {present} of the {n} objects hold a manifest",
            store=self.layout.io.name,
            level=level,
            array=path,
            chunk=chunk,
            key=key,
        )
        warnings.warn(f"objects left without geometry: {error}", ZVChunkWarning, stacklevel=3)

    def _row_ids(
        self, level: int, ids: np.ndarray | None, n: int, attrs: dict[str, Any]
    ) -> np.ndarray:
        """Object id of each of ``n`` index rows: the ``object_ids`` array whenever it
        exists, whatever the index's ``layout`` label says (tools' coarse levels label it
        ``vlen_manifests_v1``, FORMAT-NEXT §9.4), else the row number. Ids the index
        (``attrs``) says are sorted must ascend."""
        if ids is None:  # 0.7-style identity rows
            return np.arange(n, dtype=np.int64)
        if ids.ndim != 1 or ids.shape[0] < n or ids.dtype.kind not in "iu":
            raise self.layout.error(
                f"object_ids {ids.dtype} {list(ids.shape)} do not cover {n} manifests",
                level,
                "object_index/object_ids",
            )
        row_ids = ids[:n].astype(np.int64)
        if n and row_ids.min() < 0:  # -1 means "no object" wherever ids are read
            raise self.layout.error(
                f"object_ids holds the negative id {int(row_ids.min())}",
                level,
                "object_index/object_ids",
            )
        if not np.all(row_ids[1:] > row_ids[:-1]):
            if distinct(row_ids).size != n:
                raise self.layout.error("object_ids repeat an id", level, "object_index/object_ids")
            if attrs.get("object_ids_sorted") is True:
                raise self.layout.error(
                    "object_ids do not ascend, but the index says object_ids_sorted",
                    level,
                    "object_index/object_ids",
                )
        return row_ids

    def _dense_index(self, level: int, attrs: dict[str, Any]) -> bool:
        """Whether the level's object index is ``dense_manifests_v1`` (FORMAT-NEXT §4,
        upstream ``is_dense``): the label says so, else the arrays present decide (a vlen
        ``manifests`` array wins over ``manifest_spans``). Decided per level: one store
        may mix the two."""
        if attrs.get("layout") == "dense_manifests_v1":
            return True
        self.layout.prefetch_docs(
            [f"{level}/object_index/{n}" for n in ("manifests", "manifest_spans")]
        )
        return (
            self.layout.doc(f"{level}/object_index/manifests") is None
            and self.layout.doc(f"{level}/object_index/manifest_spans") is not None
        )

    def _dense_table(self, level: int, attrs: dict[str, Any]) -> ObjectTable:
        """A dense object index (``manifest_spans`` + ``manifest_blocks`` + ``object_ids``)
        as the same :class:`ObjectTable` a vlen index gives."""
        names = ["manifest_spans", "manifest_blocks", "object_ids"]
        spans, blocks, ids = self.plain.read(level, [f"object_index/{n}" for n in names])
        if spans is None or blocks is None:
            name = names[0] if spans is None else names[1]
            raise self.layout.error(
                f"the dense object index has no {name} array", level, "object_index"
            )
        src = self.layout.src(f"{level}/object_index", level, "object_index")
        n = int_field(attrs, "num_objects", src, spans.shape[0] if spans.ndim else 0)
        if spans.ndim != 2 or spans.shape[0] < n:
            raise self.layout.error(
                f"manifest_spans of shape {list(spans.shape)} do not cover {n} objects",
                level,
                "object_index/manifest_spans",
            )
        try:
            blobs = dense_manifests(spans[:n], blocks, self.layout.key_ndim(level))
        except ZVFormatError as exc:
            raise exc.located(
                store=self.layout.io.name, level=level, array="object_index"
            ) from None
        return ObjectTable(self._row_ids(level, ids, n, attrs), blobs)

    def attributes(self, level: int) -> dict[str, ObjectAttribute]:
        names = self.layout.list_attributes(level, "object")
        paths = [f"object_attributes/{n}" for n in names]
        index = self.layout.attrs(f"{level}/object_index") or {}
        rows = int_field(
            index, "num_objects", self.layout.src(f"{level}/object_index", level), None
        )

        def check(shape: Sequence[int], path: str) -> None:
            if not len(shape) or (rows is not None and shape[0] != rows):
                raise self.layout.error(
                    f"object attribute of shape {list(shape)} for {rows} object rows", level, path
                )

        for path in paths:  # refused before anything is read
            arr = self.plain.open(f"{level}/{path}", level)
            if arr is not None:
                check(arr.shape, path)
        values = self.plain.read(level, paths)
        out: dict[str, ObjectAttribute] = {}
        for name, path, vals in zip(names, paths, values, strict=True):
            if vals is None:
                self.layout.warn_missing(level, path)
                continue
            check(vals.shape, path)
            arr = self.plain.open(f"{level}/{path}", level)
            assert arr is not None
            vals = text_values(vals)
            out[name] = ObjectAttribute(
                vals,
                _present(vals, arr.metadata.fill_value),
                self.layout.attrs(f"{level}/{path}") or {},
            )
        return out

    def groups(self, level: int) -> GroupTable | None:
        doc = self.layout.doc(f"{level}/groups")
        if doc is None:
            self.layout.warn_if_listed(level, "groups", "groups")
            return None
        if doc.get("node_type") != "array":
            raise self.layout.error("groups is not a Zarr array", level, "groups")
        attrs = self.layout.attrs(f"{level}/groups") or {}
        src = self.layout.src(f"{level}/groups", level, "groups")
        ranges = mapping_field(attrs, "group_ranges", src)
        (rows,) = self.plain.read(level, ["groups"])
        rows = np.asarray(rows, dtype=object).reshape(-1)
        n_groups = int_field(attrs, "num_groups", src, rows.size, 0, rows.size + len(ranges))
        members: dict[int, np.ndarray] = {}
        for g in range(n_groups):
            raw = cell_value(rows[g]) if g < rows.size else None
            raw = raw or b""
            if len(raw) % 8:
                raise self.layout.error(
                    f"group {g} holds {len(raw)} bytes, not whole int64 ids", level, "groups"
                )
            members[g] = np.frombuffer(raw, "<i8").astype(np.int64)
        for key, bounds in ranges.items():
            try:
                g = int(key)
                lo, hi = int_list(bounds, f"group_ranges.{key}", src, None, 0, MAX_COORD)[:2]
            except (TypeError, ValueError):
                raise self.layout.error(
                    f"unreadable group range {key!r}: {bounds!r}", level, "groups"
                ) from None
            if hi < lo:
                raise self.layout.error(f"group {g} range {lo}..{hi} is reversed", level, "groups")
            if hi - lo > MAX_GROUP_RANGE:
                raise src.error(f"group_ranges.{key}", f"spans {hi - lo} ids")
            extra = np.arange(lo, hi, dtype=np.int64)
            members[g] = np.concatenate([members.get(g, np.empty(0, np.int64)), extra])
        listed = list_field(attrs, "group_names", src, [])
        if not all(n is None or isinstance(n, str) for n in listed):
            raise src.error("group_names", "is not a list of names (strings or null)")
        names = {g: n for g, n in enumerate(listed) if n is not None}
        return GroupTable(members, names)

    def group_attributes(self, level: int) -> dict[str, np.ndarray]:
        names = self.layout.list_attributes(level, "group")
        values = self.plain.read(level, [f"group_attributes/{n}" for n in names])
        for n, v in zip(names, values, strict=True):
            if v is None:
                self.layout.warn_missing(level, f"group_attributes/{n}")
        return {n: text_values(v) for n, v in zip(names, values, strict=True) if v is not None}


def _present(values: np.ndarray, fill: Any) -> np.ndarray:
    """Rows that hold a value: not equal to the fill sentinel in every channel (NaN-aware)."""
    flat = values.reshape(values.shape[0], -1) if values.ndim else values.reshape(1, 1)
    fill_arr = np.asarray(fill)
    if values.dtype.kind == "f" and fill_arr.dtype.kind == "f" and np.isnan(fill_arr):
        absent = np.isnan(flat)
    else:
        absent = (
            flat == fill_arr.astype(values.dtype) if fill is not None else np.zeros_like(flat, bool)
        )
    present: np.ndarray = ~np.all(absent, axis=1)
    return present
