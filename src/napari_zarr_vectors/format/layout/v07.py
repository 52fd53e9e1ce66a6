"""The 0.7 container: one tiny ``uint8`` Zarr array per spatial chunk (FORMAT07 §1, §4, §5)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import zarr

from ..decode.arrays import parse_attribute_dtype, text_values
from ..decode.groups import decode_csr_groups, repeated_members
from ..decode.manifests import split_flat_manifests, split_offset_manifests
from ..discovery import level_chunk_grid
from ..errors import ZVChunkWarning, ZVError, ZVFetchError, ZVFormatError, chunk_key
from ..metadata import MAX_NDIM
from ..validate import Source, check_zarr_array_doc, int_field, int_list, str_field
from .base import GroupTable, Layout, LinksFromPart, ObjectAttribute, ObjectTable
from .keys import parse_chunk_keys, sort_chunks
from .v07_blobs import V07Blobs
from .v07_links import V07Links

_ATTRIBUTE_DIRS = {
    "vertex": "vertex_attributes",
    "object": "object_attributes",
    "group": "group_attributes",
    "link": "link_attributes",
    "fragment": "fragment_attributes",
}


class V07Layout(LinksFromPart, Layout):
    """Reads stores written in the 0.7 layout."""

    generation = "0.7"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.blobs = V07Blobs(self.io)
        self.links = V07Links(self, self.blobs)
        self._known: dict[tuple[int, str], set[tuple[int, ...]]] = {}

    # -- metadata ----------------------------------------------------------------------
    def prefetch_metadata(self, level: int) -> None:
        names = [
            n
            for n in self.io.list_dir_known(f"{level}/vertex_attributes") or ()
            if n != "zarr.json"
        ]
        nodes = [*self.LEVEL_NODES, *(f"vertex_attributes/{n}" for n in names)]
        self.prefetch_docs([f"{level}/{n}" for n in nodes])

    # -- grid arrays -------------------------------------------------------------------
    def list_chunks(self, level: int, array: str = "vertices") -> np.ndarray:
        if self.io.listable:
            names = [n for n in self.io.list_dir(f"{level}/{array}") if n != "zarr.json"]
            chunks = parse_chunk_keys(names, self.key_ndim(level))
        else:
            chunks = self._probe_chunks(level, array)
        if self.io.remote:  # see _first_array_first
            with self._lock:
                self._known[(level, array)] = {tuple(c) for c in chunks.tolist()}
        return chunks

    def _probe_chunks(self, level: int, array: str) -> np.ndarray:
        """Chunks of an unlistable store: every candidate key of the level's grid whose blob
        ``zarr.json`` exists (FORMAT07 §1.4: no key directory = no data). Candidates whose
        probe keeps failing are kept (and reported): reading them tries again."""
        try:
            candidates = level_chunk_grid(self.root, self.levels[level])
        except ZVError as exc:
            raise self.error(str(exc), level, array) from None
        prefixes = [f"{level}/{array}/{chunk_key(c)}" for c in candidates]
        raws = self.io.fetch_many([f"{p}/zarr.json" for p in prefixes])
        keep = np.zeros(len(candidates), dtype=bool)
        failed = []
        probed = {}
        for i, (p, raw) in enumerate(zip(prefixes, raws, strict=True)):
            if raw is None:
                continue
            keep[i] = True
            if isinstance(raw, ZVFetchError):
                failed.append(chunk_key(candidates[i]))
            else:
                probed[p] = raw
        self.blobs.remember(probed)
        if failed:
            warnings.warn(
                f"{self.io.name} level {level}: could not probe {len(failed)} candidate "
                f"chunk(s) of {array} ({', '.join(failed[:8])}{' ...' if len(failed) > 8 else ''}); "
                "they are read (and reported) when requested",
                ZVChunkWarning,
                stacklevel=4,
            )
        return sort_chunks(candidates[keep])

    def read_cells(
        self, level: int, arrays: Sequence[str], chunks: np.ndarray
    ) -> dict[str, list[bytes | ZVFormatError | None]]:
        chunks = np.asarray(chunks, dtype=np.int64).reshape(-1, self.key_ndim(level))
        keys = [chunk_key(c) for c in chunks]
        wanted = [(a, i) for a in arrays for i in range(len(keys))]
        if self.io.remote and len(arrays) > 1:
            wanted = self._first_array_first(level, arrays, chunks)
        # zeros where c/0 is missing are no vertices (all at the origin) outside the origin's
        # chunk, and no links anywhere (self-loops of row 0): the file is gone, not elided
        at_origin = ~np.any(chunks[:, chunks.shape[1] - self.root.ndim :], axis=1)

        def blobs(cells: list[tuple[str, int]]) -> list[bytes | ZVFormatError | None]:
            fill_ok = [
                not a.startswith("links/") and (a != "vertices" or bool(at_origin[i]))
                for a, i in cells
            ]
            return self.blobs.read_many([f"{level}/{a}/{keys[i]}" for a, i in cells], fill_ok)

        found = dict(zip(wanted, blobs(wanted), strict=True))
        if len(wanted) < len(arrays) * len(keys):  # second round: the rest of the found chunks
            head = arrays[0]
            rest = [
                (a, i)
                for i in range(len(keys))
                if isinstance(found.get((head, i)), bytes) and (arrays[1], i) not in found
                for a in arrays[1:]
            ]
            found.update(zip(rest, blobs(rest), strict=True))
        out: dict[str, list[bytes | ZVFormatError | None]] = {}
        for a in arrays:
            cells = [found.get((a, i)) for i in range(len(keys))]
            out[a] = [
                c.located(store=self.io.name, level=level, array=a, chunk=k)
                if isinstance(c, ZVFormatError)
                else c
                for c, k in zip(cells, keys, strict=True)
            ]
        return out

    def _first_array_first(
        self, level: int, arrays: Sequence[str], chunks: np.ndarray
    ) -> list[tuple[str, int]]:
        """Remote reads: the cells to fetch in a first round. Chunks known to exist (from
        :meth:`list_chunks`) get every array at once; the others get only ``arrays[0]``,
        and the rest of their arrays only if that exists, so that probing an empty
        candidate costs two requests instead of two per array."""
        with self._lock:
            known = self._known.get((level, arrays[0]), set())
        first = []
        for i, c in enumerate(chunks.tolist()):
            first += [(a, i) for a in arrays] if tuple(c) in known else [(arrays[0], i)]
        return first

    def list_attributes(self, level: int, kind: str) -> list[str]:
        folder = _ATTRIBUTE_DIRS[kind]
        names = self.io.list_dir_known(f"{level}/{folder}")
        if names is None:
            return self.unlisted_attributes(kind)
        return [n for n in names if n != "zarr.json"]

    # -- objects and groups -------------------------------------------------------------
    def read_object_table(self, level: int) -> ObjectTable | None:
        attrs = self.attrs(f"{level}/object_index")
        if attrs is None:
            self.warn_if_listed(level, "object_index", "object index")
            return None
        where = f"{level}/object_index"
        src = self.src(where, level, "object_index")
        n = int_field(attrs, "num_objects", src)
        knd = int_field(attrs, "sid_ndim", src, self.key_ndim(level), 1, MAX_NDIM)
        if attrs.get("layout") == "vlen_manifests_v1" or self.doc(f"{where}/manifests"):
            manifests = self._vlen_items(f"{where}/manifests", n, level)
        else:
            data = self.blobs.read(f"{where}/data", level, "object_index/data") or b""
            offsets = self.blobs.read(f"{where}/offsets", level, "object_index/offsets")
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
        doc = self.doc(path)
        if doc is None:
            raise self.error("the vlen-bytes array has no zarr.json", level, path)
        check_zarr_array_doc(doc, self.src(path, level))
        try:
            arr = zarr.open_array(store=self.io.store, path=path, mode="r")
        except Exception as exc:  # zarr raises many types for broken arrays
            raise self.error(f"cannot open vlen-bytes array: {exc}", level, path) from None
        if arr.ndim != 1 or arr.shape[0] < n:
            raise self.error(f"object index holds {arr.shape} manifests, expected {n}", level, path)
        try:
            items = cast(np.ndarray, arr[:n])  # (a slice of a 1-D array: an array)
        except Exception as exc:
            raise self.error(f"cannot read vlen-bytes array: {exc}", level, path) from None
        return [bytes(b) if b is not None else b"" for b in items]

    def read_object_attributes(self, level: int) -> dict[str, ObjectAttribute]:
        out: dict[str, ObjectAttribute] = {}
        names = self.list_attributes(level, "object")
        # the level's object count, for attributes whose zarr.json lost its shape
        rows = (self.attrs(f"{level}/object_index") or {}).get("num_objects") if names else None
        for name in names:
            prefix = f"{level}/object_attributes/{name}"
            meta = self.attrs(prefix) or {}
            data, mask = self.blobs.read_many([f"{prefix}/data", f"{prefix}/present_mask"])
            if isinstance(data, ZVFormatError):
                raise data.located(
                    store=self.io.name, level=level, array=f"object_attributes/{name}"
                )
            if isinstance(mask, ZVFormatError):
                raise mask.located(
                    store=self.io.name, level=level, array=f"object_attributes/{name}"
                )
            array = f"object_attributes/{name}"
            if data is None:
                self.warn_missing(level, array)
                continue
            if not self._declares_dtype(meta, level, "object", name, array):
                continue
            if self.attribute_dtype(level, "object", name, array, "float64") is None:
                continue
            values = self._shaped(data, meta, level, array, rows)
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

    def _declares_dtype(
        self, meta: dict[str, Any], level: int, kind: str, name: str, array: str
    ) -> bool:
        """Whether an object or group attribute's ``zarr.json`` records its dtype, as the 0.7
        writer always does (FORMAT07 §5.8): without it the bytes cannot be decoded (read as
        the default they would be other numbers), so the attribute is left out."""
        if "dtype" in meta:
            return True
        error = self.error("its zarr.json records no dtype", level, array)
        self.left_out(kind, name, error)
        return False

    def _shaped(
        self, raw: bytes, meta: dict[str, Any], level: int, array: str, rows: Any = None
    ) -> np.ndarray:
        """The values of an object or group attribute, shaped as its ``zarr.json`` says. The
        0.7 writer always records ``shape``; without it (a damaged document) the values are
        shaped by ``rows`` (the level's object or group count) when they divide into them,
        with a :class:`ZVChunkWarning`."""
        try:
            dtype = parse_attribute_dtype(
                str_field(
                    meta,
                    "dtype",
                    Source(self.io.name, f"{level}/{array}/zarr.json", level),
                    "float64",
                )
            )
        except ZVFormatError as exc:
            raise exc.located(store=self.io.name, level=level, array=array) from None
        if len(raw) % dtype.itemsize:
            raise self.error(f"{len(raw)} bytes are not whole {dtype} values", level, array)
        values = text_values(np.frombuffer(raw, dtype))
        shape = meta.get("shape")
        if shape:
            shape = tuple(
                int_list(shape, "shape", Source(self.io.name, f"{level}/{array}/zarr.json", level))
            )
            if int(np.prod(shape, dtype=object)) != values.size:
                raise self.error(
                    f"{values.size} values do not fill shape {list(shape)}", level, array
                )
            values = values.reshape(shape)
        elif isinstance(rows, int) and rows > 0 and values.size != rows:
            if values.size % rows:
                raise self.error(
                    f"{values.size} values without a shape do not divide into {rows} rows",
                    level,
                    array,
                )
            values = values.reshape(rows, values.size // rows)
            warnings.warn(
                f"{self.error('its zarr.json records no shape', level, array)}: its "
                f"{values.size} values are read as {list(values.shape)} (one row per entry)",
                ZVChunkWarning,
                stacklevel=3,
            )
        return values

    def read_groups(self, level: int) -> GroupTable | None:
        attrs = self.attrs(f"{level}/groups")
        if attrs is None:
            self.warn_if_listed(level, "groups", "groups")
            return None
        n_groups = int_field(attrs, "num_groups", self.src(f"{level}/groups", level), 0)
        data, offsets = self.blobs.read_many([f"{level}/groups/data", f"{level}/groups/offsets"])
        if isinstance(data, ZVFormatError):
            raise data.located(store=self.io.name, level=level, array="groups")
        if isinstance(offsets, ZVFormatError):
            raise offsets.located(store=self.io.name, level=level, array="groups")
        try:
            groups = decode_csr_groups(data or b"", offsets or b"", n_groups)
        except ZVFormatError as exc:
            raise exc.located(store=self.io.name, level=level, array="groups") from None
        repeated = repeated_members(groups)
        if repeated:
            g, oid, times = repeated[0]
            warnings.warn(
                f"{self.error('groups list an object more than once', level, 'groups/data')}: "
                f"{len(repeated)} group(s), e.g. group {g} lists object {oid} {times} times "
                "(the writer stores each member once; zeroed or damaged bytes?)",
                ZVChunkWarning,
                stacklevel=2,
            )
        return GroupTable(groups, {})

    def read_group_attributes(self, level: int) -> dict[str, np.ndarray]:
        out = {}
        for name in self.list_attributes(level, "group"):
            prefix = f"{level}/group_attributes/{name}"
            array = f"group_attributes/{name}"
            meta = self.attrs(prefix) or {}
            if not self._declares_dtype(meta, level, "group", name, array):
                continue
            if self.attribute_dtype(level, "group", name, array, "float64") is None:
                continue
            raw = self.blobs.read(f"{prefix}/data", level, array)
            if raw is None:
                self.warn_missing(level, array)
            else:
                rows = (self.attrs(f"{level}/groups") or {}).get("num_groups")
                out[name] = self._shaped(raw, meta, level, array, rows)
        return out
