"""The links of a 0.7 level: per chunk, flat records (``links/0``) or ragged ones
(``links/<d>``) in the chunk's blob, their attributes beside them, and the records
spanning chunks in one blob per level and delta (``cross_chunk_links/<d>``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..decode.arrays import decode_attribute, parse_attribute_dtype
from ..decode.links import decode_cross_chunk_records, decode_flat_links, decode_ragged_links
from ..discovery import candidate_deltas
from ..errors import ZVFormatError
from ..metadata import MAX_NDIM
from ..validate import int_field
from .base import Layout, LinkSet
from .keys import delta_name
from .v07_blobs import V07Blobs

#: Most endpoints a link record may have.
MAX_LINK_WIDTH = 64


class V07Links:
    """The link families of a 0.7 store's levels: their deltas, widths and records."""

    def __init__(self, layout: Layout, blobs: V07Blobs) -> None:
        self.layout = layout
        self.blobs = blobs

    def deltas(self, level: int) -> list[int]:
        deltas = set()
        if self.layout.io.listable:
            for folder in ("links", "cross_chunk_links"):
                for name in self.layout.io.list_dir(f"{level}/{folder}"):
                    try:
                        deltas.add(int(name))
                    except ValueError:
                        continue
            return sorted(deltas)
        # no listing: probe the family metadata of every delta the levels allow
        candidates = candidate_deltas(level, list(self.layout.levels))
        folders = ("links", "cross_chunk_links")
        self.layout.prefetch_docs(
            [f"{level}/{f}/{delta_name(d)}" for f in folders for d in candidates]
        )
        return [
            d
            for d in candidates
            if any(self.layout.doc(f"{level}/{f}/{delta_name(d)}") for f in folders)
        ]

    def width(self, level: int, delta: int = 0) -> int | None:
        d = delta_name(delta)
        for prefix in (f"{level}/links/{d}", f"{level}/cross_chunk_links/{d}"):
            attrs = self.layout.attrs(prefix)
            if attrs and "link_width" in attrs:
                return int_field(
                    attrs, "link_width", self.layout.src(prefix), lo=1, hi=MAX_LINK_WIDTH
                )
        return None

    def read(self, level: int, delta: int = 0, chunks: np.ndarray | None = None) -> LinkSet:
        knd = self.layout.key_ndim(level)
        width = self.width(level, delta)
        d = delta_name(delta)
        if width is None:
            stored = [
                f
                for f in ("links", "cross_chunk_links")
                if self.layout.io.list_dir(f"{level}/{f}/{d}")
            ]
            if stored:
                raise self.layout.error(
                    "link records are stored but no zarr.json gives their link_width",
                    level,
                    f"{stored[0]}/{d}",
                )
            return LinkSet.empty(2, knd)
        array = f"links/{d}"
        everything = chunks is None
        if chunks is None:
            chunks = self.layout.list_chunks(level, array)
        chunks = np.asarray(chunks, dtype=np.int64).reshape(-1, knd)
        attr_names = [
            n
            for n in (self.layout.list_attributes(level, "link") if delta == 0 else [])
            if self.layout.attribute_dtype(level, "edge", n, f"link_attributes/{n}/{d}") is not None
        ]
        attr_arrays = [f"link_attributes/{n}/{d}" for n in attr_names]
        cells = self.layout.read_cells(level, [array, *attr_arrays], chunks)
        parts: list[tuple[np.ndarray, np.ndarray]] = []
        parts_r: list[np.ndarray] = []
        attr_parts: dict[str, list[np.ndarray]] = {n: [] for n in attr_names}
        gaps: list[tuple[ZVFormatError, np.ndarray | None]] = []  # each costs its own cell
        for i, blob in enumerate(cells[array]):
            if blob is None:
                continue
            try:
                if isinstance(blob, ZVFormatError):
                    raise blob
                rows = (
                    decode_flat_links(blob, width) if delta == 0 else decode_ragged_links(blob, 2)
                )
            except ZVFormatError as exc:
                error = exc.located(
                    store=self.layout.io.name, level=level, array=array, chunk=chunks[i]
                )
                gaps.append((error, chunks[i]))
                continue
            parts_r.append(rows)
            parts.append(LinkSet.cell(chunks[i], rows))
            for n, a in zip(attr_names, attr_arrays, strict=True):
                try:
                    values = self._link_attr(level, a, cells[a][i], rows.shape[0], chunks[i])
                except ZVFormatError as exc:  # the records stand, without this value
                    gaps.append((exc, chunks[i][:0]))
                    values = missing_values(rows.shape[0])
                attr_parts[n].append(values)
        try:
            cross = self._cross_chunk(level, delta, None if everything else chunks)
        except ZVFormatError as exc:  # one blob for the level: its records may own any chunk
            gaps.append((exc.located(store=self.layout.io.name, level=level), None))
            cross = None
        if cross is not None:
            cc, cr = cross[0], cross[1]
            parts.append((cc, np.ones(len(cc), np.int64)))
            parts_r.append(cr)
            for n in attr_names:
                attr_parts[n].append(cross[2].get(n, missing_values(len(cr))))
        attrs = {n: concat_attribute(p) for n, p in attr_parts.items() if p}
        return LinkSet.of(parts, parts_r, attrs, width, knd, gaps)

    def _link_attr(
        self, level: int, array: str, blob: Any, n: int, chunk: np.ndarray
    ) -> np.ndarray:
        if blob is None:
            return missing_values(n)
        if isinstance(blob, ZVFormatError):
            raise blob
        meta = self.layout.array_attributes(level, array) or {}
        try:
            dtype = parse_attribute_dtype(str(meta.get("dtype", "float32")))
            return decode_attribute(blob, dtype, n, None)
        except ZVFormatError as exc:
            raise exc.located(
                store=self.layout.io.name, level=level, array=array, chunk=chunk
            ) from None

    def _cross_chunk(
        self, level: int, delta: int, chunks: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]] | None:
        """The level's cross-chunk records of ``delta`` (only those touching ``chunks``
        when given)."""
        d = delta_name(delta)
        prefix = f"{level}/cross_chunk_links/{d}"
        attrs = self.layout.attrs(prefix)
        if not attrs:
            if self.layout.doc(f"{prefix}/data") is not None:
                raise self.layout.error(
                    "the records are stored but their zarr.json is gone",
                    level,
                    f"cross_chunk_links/{d}",
                )
            return None
        src = self.layout.src(prefix, level, f"cross_chunk_links/{d}")
        width = int_field(attrs, "link_width", src, 2, 1, MAX_LINK_WIDTH)
        knd = int_field(attrs, "sid_ndim", src, self.layout.key_ndim(level), 1, MAX_NDIM)
        # zeros where c/0 is missing would be records of chunk 0's row 0 to itself
        blob = self.blobs.read(
            f"{prefix}/data", level, f"cross_chunk_links/{d}/data", fill_ok=False
        )
        if blob is None:
            return None
        try:
            cc, cr = decode_cross_chunk_records(blob, width, knd, delta)
        except ZVFormatError as exc:
            raise exc.located(
                store=self.layout.io.name, level=level, array=f"cross_chunk_links/{d}"
            ) from None
        n_declared = int_field(attrs, "num_links", src, None)
        if n_declared is not None and n_declared != len(cr):
            raise self.layout.error(
                f"cross-chunk links hold {len(cr)} records, metadata says {n_declared}",
                level,
                f"cross_chunk_links/{d}",
            )
        attrs_out: dict[str, np.ndarray] = {}
        for name in self.layout.io.list_dir(f"{level}/cross_chunk_link_attributes"):
            apath = f"{level}/cross_chunk_link_attributes/{name}/{d}"
            dtype = self.layout.attribute_dtype(
                level, "edge", name, f"cross_chunk_link_attributes/{name}/{d}"
            )
            raw = self.blobs.read(f"{apath}/data", level) if dtype is not None else None
            if raw is not None and dtype is not None:
                attrs_out[name] = decode_attribute(raw, dtype, len(cr), None)
        if chunks is None:
            return cc, cr, attrs_out
        keep = touches(cc, chunks, delta)
        return cc[keep], cr[keep], {k: v[keep] for k, v in attrs_out.items()}


def missing_values(n: int) -> np.ndarray:
    """``n`` rows of a link attribute without values (NaN)."""
    return np.full(n, np.nan)


def concat_attribute(parts: list[np.ndarray]) -> np.ndarray:
    """Attribute parts joined; missing parts (NaN) next to text make an ``object`` array with
    ``None`` there, next to integers or booleans a float array."""
    if any(p.dtype.kind in "USO" for p in parts) and any(p.dtype.kind == "f" for p in parts):
        parts = [
            np.full(p.shape, None, object) if p.dtype.kind == "f" else p.astype(object)
            for p in parts
        ]
        return np.concatenate(parts)
    if any(p.dtype.kind == "f" and np.isnan(p).any() for p in parts) and any(
        p.dtype.kind != "f" for p in parts
    ):
        parts = [p.astype(np.float64) for p in parts]
    widths = {p.shape[1:] for p in parts if p.size}
    if len(widths) > 1:  # a missing (scalar NaN) part next to multi-channel parts
        shape = max(widths, key=len)
        parts = [p if p.shape[1:] == shape else np.full((len(p), *shape), np.nan) for p in parts]
    return np.concatenate(parts)


def touches(cc: np.ndarray, chunks: np.ndarray, delta: int) -> np.ndarray:
    """Records with an owning-level endpoint in ``chunks``."""
    if len(cc) == 0:
        return np.zeros(0, dtype=bool)
    wanted = {tuple(c) for c in chunks.tolist()}
    cols = range(cc.shape[1]) if delta == 0 else range(1)
    keep = np.zeros(len(cc), dtype=bool)
    for k in cols:
        keep |= np.fromiter((tuple(c) in wanted for c in cc[:, k].tolist()), bool, len(cc))
    return keep
