"""The 0.7 container: one tiny ``uint8`` Zarr array per spatial chunk (FORMAT07 §1, §4, §5)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import zarr

from ..codecs import decode_bytes_chunk
from ..decode.arrays import decode_attribute, parse_dtype
from ..decode.groups import decode_csr_groups
from ..decode.links import decode_cross_chunk_records, decode_flat_links, decode_ragged_links
from ..decode.manifests import split_flat_manifests, split_offset_manifests
from ..errors import ZVFormatError, chunk_key
from .base import GroupTable, Layout, LinkSet, ObjectAttribute, ObjectTable
from .keys import delta_name, parse_chunk_keys

_ATTRIBUTE_DIRS = {
    "vertex": "vertex_attributes",
    "object": "object_attributes",
    "group": "group_attributes",
    "link": "link_attributes",
    "fragment": "fragment_attributes",
}


class V07Layout(Layout):
    """Reads stores written in the 0.7 layout."""

    generation = "0.7"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._json = lru_cache(maxsize=1024)(self._json_uncached)

    # -- low-level blob access ----------------------------------------------------------
    def _json_uncached(self, key: str) -> dict[str, Any] | None:
        return self.io.get_json(key)

    def _attrs(self, prefix: str) -> dict[str, Any] | None:
        doc = self._json(f"{prefix}/zarr.json")
        return None if doc is None else (doc.get("attributes") or {})

    def _decode_blob(
        self, meta_raw: bytes | None, data_raw: bytes | None, where: str
    ) -> bytes | None:
        """Payload of one blob array from its ``zarr.json`` and ``c/0`` bytes."""
        if meta_raw is None:
            return None
        meta = self.io.parse_json(meta_raw, where)
        if meta.get("node_type") != "array":
            raise ZVFormatError(f"{where} is not a Zarr array")
        shape = meta.get("shape") or [0]
        n = int(shape[0]) if shape else 0
        if n < 0:
            raise ZVFormatError(f"{where} has a negative shape")
        if data_raw is None:  # zarr does not store an all-fill chunk: n zero bytes
            return bytes(n)
        payload = decode_bytes_chunk(data_raw, meta.get("codecs") or [{"name": "bytes"}], n)
        if len(payload) != n:
            raise ZVFormatError(f"blob decodes to {len(payload)} bytes, its shape says {n}")
        return payload

    def _blobs(self, prefixes: Sequence[str]) -> list[bytes | ZVFormatError | None]:
        keys: list[str] = []
        for p in prefixes:
            keys += [f"{p}/zarr.json", f"{p}/c/0"]
        raw = self.io.get_many(keys)
        out: list[bytes | ZVFormatError | None] = []
        for i, p in enumerate(prefixes):
            try:
                out.append(self._decode_blob(raw[2 * i], raw[2 * i + 1], p))
            except ZVFormatError as exc:
                out.append(exc)
        return out

    def _blob(
        self, prefix: str, level: int | None = None, array: str | None = None
    ) -> bytes | None:
        res = self._blobs([prefix])[0]
        if isinstance(res, ZVFormatError):
            raise res.located(store=self.io.name, level=level, array=array or prefix)
        return res

    # -- grid arrays -------------------------------------------------------------------
    def list_chunks(self, level: int, array: str = "vertices") -> np.ndarray:
        names = [n for n in self.io.list_dir(f"{level}/{array}") if n != "zarr.json"]
        return parse_chunk_keys(names, self.key_ndim(level))

    def array_attributes(self, level: int, array: str) -> dict[str, Any] | None:
        return self._attrs(f"{level}/{array}")

    def read_cells(
        self, level: int, arrays: Sequence[str], chunks: np.ndarray
    ) -> dict[str, list[bytes | ZVFormatError | None]]:
        keys = [chunk_key(c) for c in np.asarray(chunks)]
        prefixes = [f"{level}/{a}/{k}" for a in arrays for k in keys]
        flat = self._blobs(prefixes)
        out: dict[str, list[bytes | ZVFormatError | None]] = {}
        for i, a in enumerate(arrays):
            cells = flat[i * len(keys) : (i + 1) * len(keys)]
            out[a] = [
                c.located(store=self.io.name, level=level, array=a, chunk=k)
                if isinstance(c, ZVFormatError)
                else c
                for c, k in zip(cells, keys, strict=True)
            ]
        return out

    def list_attributes(self, level: int, kind: str) -> list[str]:
        folder = _ATTRIBUTE_DIRS[kind]
        return [n for n in self.io.list_dir(f"{level}/{folder}") if n != "zarr.json"]

    # -- links -------------------------------------------------------------------------
    def link_deltas(self, level: int) -> list[int]:
        deltas = set()
        for folder in ("links", "cross_chunk_links"):
            for name in self.io.list_dir(f"{level}/{folder}"):
                try:
                    deltas.add(int(name))
                except ValueError:
                    continue
        return sorted(deltas)

    def link_width(self, level: int, delta: int = 0) -> int | None:
        d = delta_name(delta)
        for prefix in (f"{level}/links/{d}", f"{level}/cross_chunk_links/{d}"):
            attrs = self._attrs(prefix)
            if attrs and "link_width" in attrs:
                return int(attrs["link_width"])
        return None

    def read_links(self, level: int, delta: int = 0, chunks: np.ndarray | None = None) -> LinkSet:
        knd = self.key_ndim(level)
        width = self.link_width(level, delta)
        if width is None:
            return LinkSet.empty(2, knd)
        d = delta_name(delta)
        array = f"links/{d}"
        if chunks is None:
            chunks = self.list_chunks(level, array)
        chunks = np.asarray(chunks, dtype=np.int64).reshape(-1, knd)
        attr_names = self.list_attributes(level, "link") if delta == 0 else []
        attr_arrays = [f"link_attributes/{n}/{d}" for n in attr_names]
        cells = self.read_cells(level, [array, *attr_arrays], chunks)
        parts_c, parts_r = [], []
        attr_parts: dict[str, list[np.ndarray]] = {n: [] for n in attr_names}
        for i, blob in enumerate(cells[array]):
            if blob is None:
                continue
            if isinstance(blob, ZVFormatError):
                raise blob
            try:
                rows = (
                    decode_flat_links(blob, width) if delta == 0 else decode_ragged_links(blob, 2)
                )
            except ZVFormatError as exc:
                raise exc.located(
                    store=self.io.name, level=level, array=array, chunk=chunks[i]
                ) from None
            parts_r.append(rows)
            parts_c.append(np.broadcast_to(chunks[i], (rows.shape[0], rows.shape[1], knd)))
            for n, a in zip(attr_names, attr_arrays, strict=True):
                attr_parts[n].append(
                    self._link_attr(level, a, cells[a][i], rows.shape[0], chunks[i])
                )
        cross = self._cross_chunk(level, delta, chunks)
        if cross is not None:
            cc, cr = cross[0], cross[1]
            parts_c.append(cc)
            parts_r.append(cr)
            for n in attr_names:
                attr_parts[n].append(cross[2].get(n, _missing(len(cr))))
        if not parts_r:
            return LinkSet.empty(width, knd)
        attrs = {n: _concat_attr(p) for n, p in attr_parts.items() if p}
        return LinkSet(np.concatenate(parts_c).astype(np.int64), np.concatenate(parts_r), attrs)

    def _link_attr(
        self, level: int, array: str, blob: Any, n: int, chunk: np.ndarray
    ) -> np.ndarray:
        if blob is None:
            return _missing(n)
        if isinstance(blob, ZVFormatError):
            raise blob
        meta = self.array_attributes(level, array) or {}
        try:
            return decode_attribute(blob, parse_dtype(meta.get("dtype", "float32")), n, None)
        except ZVFormatError as exc:
            raise exc.located(store=self.io.name, level=level, array=array, chunk=chunk) from None

    def _cross_chunk(
        self, level: int, delta: int, chunks: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]] | None:
        d = delta_name(delta)
        prefix = f"{level}/cross_chunk_links/{d}"
        attrs = self._attrs(prefix)
        if not attrs:
            return None
        width = int(attrs.get("link_width", 2))
        knd = int(attrs.get("sid_ndim", self.key_ndim(level)))
        blob = self._blob(f"{prefix}/data", level, f"cross_chunk_links/{d}/data")
        if blob is None:
            return None
        try:
            cc, cr = decode_cross_chunk_records(blob, width, knd)
        except ZVFormatError as exc:
            raise exc.located(
                store=self.io.name, level=level, array=f"cross_chunk_links/{d}"
            ) from None
        n_declared = attrs.get("num_links")
        if n_declared is not None and int(n_declared) != len(cr):
            raise self.error(
                f"cross-chunk links hold {len(cr)} records, metadata says {n_declared}",
                level,
                f"cross_chunk_links/{d}",
            )
        attrs_out: dict[str, np.ndarray] = {}
        for name in self.io.list_dir(f"{level}/cross_chunk_link_attributes"):
            meta = self._attrs(f"{level}/cross_chunk_link_attributes/{name}/{d}") or {}
            raw = self._blob(f"{level}/cross_chunk_link_attributes/{name}/{d}/data", level)
            if raw is not None:
                attrs_out[name] = decode_attribute(
                    raw, parse_dtype(meta.get("dtype", "float32")), len(cr), None
                )
        keep = _touches(cc, chunks, delta)
        return cc[keep], cr[keep], {k: v[keep] for k, v in attrs_out.items()}

    # -- objects and groups -------------------------------------------------------------
    def read_object_table(self, level: int) -> ObjectTable | None:
        attrs = self._attrs(f"{level}/object_index")
        if attrs is None:
            return None
        n = int(attrs.get("num_objects", 0))
        knd = int(attrs.get("sid_ndim", self.key_ndim(level)))
        where = f"{level}/object_index"
        if attrs.get("layout") == "vlen_manifests_v1" or self._json(f"{where}/manifests/zarr.json"):
            manifests = self._vlen_items(f"{where}/manifests", n, level)
        else:
            data = self._blob(f"{where}/data", level, "object_index/data") or b""
            offsets = self._blob(f"{where}/offsets", level, "object_index/offsets")
            try:
                if offsets is not None:
                    offs = np.frombuffer(offsets, "<i8") if len(offsets) % 8 == 0 else None
                    if offs is None or offs.size != n:
                        raise ZVFormatError(f"object index offsets do not hold {n} int64 values")
                    manifests = split_offset_manifests(data, offs)
                else:
                    manifests = split_flat_manifests(data, knd, n)
            except ZVFormatError as exc:
                raise exc.located(
                    store=self.io.name, level=level, array="object_index/data"
                ) from None
        return ObjectTable(np.arange(n, dtype=np.int64), manifests)

    def _vlen_items(self, path: str, n: int, level: int) -> list[bytes]:
        try:
            arr = zarr.open_array(store=self.io.store, path=path, mode="r")
        except Exception as exc:  # zarr raises many types for broken arrays
            raise self.error(f"cannot open vlen-bytes array: {exc}", level, path) from None
        if arr.ndim != 1 or arr.shape[0] < n:
            raise self.error(f"object index holds {arr.shape} manifests, expected {n}", level, path)
        try:
            items = arr[:n]
        except Exception as exc:
            raise self.error(f"cannot read vlen-bytes array: {exc}", level, path) from None
        return [bytes(b) if b is not None else b"" for b in items]

    def read_object_attributes(self, level: int) -> dict[str, ObjectAttribute]:
        out: dict[str, ObjectAttribute] = {}
        for name in self.list_attributes(level, "object"):
            prefix = f"{level}/object_attributes/{name}"
            meta = self._attrs(prefix) or {}
            data, mask = self._blobs([f"{prefix}/data", f"{prefix}/present_mask"])
            for part in (data, mask):
                if isinstance(part, ZVFormatError):
                    raise part.located(
                        store=self.io.name, level=level, array=f"object_attributes/{name}"
                    )
            if data is None:
                continue
            values = self._shaped(data, meta, level, f"object_attributes/{name}")
            present = None
            if mask is not None:
                present = np.frombuffer(mask, np.uint8).astype(bool)
                if present.size != values.shape[0]:
                    raise self.error(
                        "present_mask length differs from the attribute",
                        level,
                        f"object_attributes/{name}/present_mask",
                    )
            out[name] = ObjectAttribute(values, present, meta)
        return out

    def _shaped(self, raw: bytes, meta: dict[str, Any], level: int, array: str) -> np.ndarray:
        try:
            dtype = parse_dtype(meta.get("dtype", "float64"))
        except ZVFormatError as exc:
            raise exc.located(store=self.io.name, level=level, array=array) from None
        if len(raw) % dtype.itemsize:
            raise self.error(f"{len(raw)} bytes are not whole {dtype} values", level, array)
        values = np.frombuffer(raw, dtype)
        shape = meta.get("shape")
        if shape:
            shape = tuple(int(s) for s in shape)
            if int(np.prod(shape)) != values.size:
                raise self.error(
                    f"{values.size} values do not fill shape {list(shape)}", level, array
                )
            values = values.reshape(shape)
        return values

    def read_groups(self, level: int) -> GroupTable | None:
        attrs = self._attrs(f"{level}/groups")
        if attrs is None:
            return None
        n_groups = int(attrs.get("num_groups", 0))
        data, offsets = self._blobs([f"{level}/groups/data", f"{level}/groups/offsets"])
        for part in (data, offsets):
            if isinstance(part, ZVFormatError):
                raise part.located(store=self.io.name, level=level, array="groups")
        try:
            groups = decode_csr_groups(data or b"", offsets or b"", n_groups)
        except ZVFormatError as exc:
            raise exc.located(store=self.io.name, level=level, array="groups") from None
        return GroupTable(groups, {})

    def read_group_attributes(self, level: int) -> dict[str, np.ndarray]:
        out = {}
        for name in self.list_attributes(level, "group"):
            prefix = f"{level}/group_attributes/{name}"
            raw = self._blob(f"{prefix}/data", level, f"group_attributes/{name}")
            if raw is not None:
                out[name] = self._shaped(
                    raw, self._attrs(prefix) or {}, level, f"group_attributes/{name}"
                )
        return out


def _missing(n: int) -> np.ndarray:
    return np.full(n, np.nan)


def _concat_attr(parts: list[np.ndarray]) -> np.ndarray:
    if any(p.dtype.kind == "f" and np.isnan(p).any() for p in parts) and any(
        p.dtype.kind != "f" for p in parts
    ):
        parts = [p.astype(np.float64) for p in parts]
    widths = {p.shape[1:] for p in parts if p.size}
    if len(widths) > 1:  # a missing (scalar NaN) part next to multi-channel parts
        shape = max(widths, key=len)
        parts = [p if p.shape[1:] == shape else np.full((len(p), *shape), np.nan) for p in parts]
    return np.concatenate(parts)


def _touches(cc: np.ndarray, chunks: np.ndarray, delta: int) -> np.ndarray:
    """Records with an owning-level endpoint in ``chunks``."""
    if len(cc) == 0:
        return np.zeros(0, dtype=bool)
    wanted = {tuple(c) for c in chunks.tolist()}
    cols = range(cc.shape[1]) if delta == 0 else range(1)
    keep = np.zeros(len(cc), dtype=bool)
    for k in cols:
        keep |= np.fromiter((tuple(c) in wanted for c in cc[:, k].tolist()), bool, len(cc))
    return keep
