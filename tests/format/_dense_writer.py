"""A writer of the spec's own physical form, from the seed text only (test helper).

Seed 002 ("Chunk arrays") describes every ZV array as one Zarr array whose first dimensions
index the chunk grid, followed by the payload, padded with the fill value, with one Zarr chunk
per spatial chunk. FORMAT07 §9 item 4 notes that no writer produces it. This module writes it:

* chunk grid: ``floor((p - bounds_min) / chunk_shape)`` (seed 000 §6.2), grid shape
  ``floor(extent / chunk_shape) + 1`` so that a vertex on ``bounds_max`` has a cell;
* ``vertices``: ``(*grid, N_max, D)`` float32, fill 0.0, chunk ``(1, …, 1, N_max, D)``,
  blosc(zstd, bitshuffle) (the seed's default); rows in fragment order;
* ``vertex_fragments``: one ZVFG v1 blob per cell (range fragments; magic ``0x5A564647``),
  stored as a ``(*grid, B_max)`` uint8 grid, fill 0, no compression ("bytes written directly");
* ``attributes/<name>``: ``(*grid, N_max[, K])``, the seed's path (not ``vertex_attributes``);
* ``links/0``: ``(*grid, E_max, W)`` int32, fill -1, chunk-local rows, for records whose
  endpoints share a cell; other records go to ``cross_chunk_links/0/data`` (seed 001: flat int64
  records, per endpoint the chunk coordinates then the row), as a 1-D uint8 Zarr array;
* ``object_index/data`` + ``object_index/offsets`` (seed 002: concatenated manifests and int64
  byte offsets; manifests in mode 0: ``u32 B`` then per block ``i64[sid_ndim] chunk, u8 0,
  i64 fragment``), group attributes ``zv_array``, ``num_objects``, ``sid_ndim``;
* ``object_attributes/<name>``: ``(n_objects[, K])``;
* ``groupings``: ``(n_groups, max_group_size)`` int64, fill -1, chunk ``(1, max_group_size)``.

Fragments: a point cloud without objects has one fragment per cell; objects get one fragment
per (object, cell); a path (line, polyline, streamline) gets one per maximal run of consecutive
path vertices inside a cell, so its manifest lists the runs in traversal order; a skeleton also
starts a fragment at every root, so that the implicit sequential parent rule never gives a root
a parent (every other parent is a stored link).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import zarr
from zarr.codecs import BloscCodec

PATH_TYPES = ("line", "polyline", "streamline")
LINK_WIDTH = {"graph": 2, "skeleton": 2, "mesh": 3}


def _fragment_blob(ranges: Sequence[tuple[int, int]]) -> bytes:
    """A ZVFG v1 blob of range fragments ``(start, count)`` (seed 003 §7.3)."""
    f = len(ranges)
    head = struct.pack("<IHHII", 0x5A564647, 1, 0, f, f)
    bitmap_len = (f + 7) // 8
    bits = np.packbits(np.ones(f, np.uint8), bitorder="little").tobytes()[:bitmap_len]
    bits += bytes((bitmap_len + 7) // 8 * 8 - bitmap_len)
    table = np.asarray(ranges, "<i8").reshape(-1, 2).tobytes()
    return head + bits + table + np.zeros(1, "<u4").tobytes()


def _group(path: Path, attrs: dict | None = None) -> None:
    path.mkdir(parents=True, exist_ok=True)
    doc = {"zarr_format": 3, "node_type": "group", "attributes": attrs or {}}
    (path / "zarr.json").write_text(json.dumps(doc))


def _array(root: Path, name: str, data: np.ndarray, chunks, fill, compress: bool = True) -> None:
    arr = zarr.create_array(
        store=str(root),
        name=name,
        shape=data.shape,
        chunks=chunks,
        dtype=data.dtype,
        fill_value=fill,
        compressors=[BloscCodec(cname="zstd", shuffle="bitshuffle")] if compress else None,
        zarr_format=3,
    )
    arr[...] = data


def write_dense(
    path: str | Path,
    geometry_type: str,
    positions: np.ndarray,
    chunk_shape: Sequence[float],
    *,
    object_ids: np.ndarray | None = None,
    paths: Mapping[int, np.ndarray] | None = None,
    edges: np.ndarray | None = None,
    faces: np.ndarray | None = None,
    vertex_attributes: Mapping[str, np.ndarray] | None = None,
    object_attributes: Mapping[str, np.ndarray] | None = None,
    groups: Mapping[int, Sequence[int]] | None = None,
    n_max_slack: int = 3,
) -> Path:
    """Write one level-0 store in the seed-002 dense form; returns its path."""
    root = Path(path)
    pos = np.asarray(positions, np.float32)
    n, ndim = pos.shape
    cs = np.asarray(chunk_shape, np.float64)
    lo, hi = pos.min(0).astype(np.float64), pos.max(0).astype(np.float64)
    grid = tuple(int(g) for g in np.floor((hi - lo) / cs).astype(np.int64) + 1)
    cell = np.floor((pos - lo) / cs).astype(np.int64)
    cell = np.minimum(cell, np.asarray(grid) - 1)
    oid = None if object_ids is None else np.asarray(object_ids, np.int64)

    # runs: (cell, object, [vertex indices]) in manifest order per object
    runs: list[tuple[tuple[int, ...], int, np.ndarray]] = []
    if geometry_type in PATH_TYPES:
        for o in sorted(paths or {}):
            idx = np.asarray(paths[o], np.int64)
            if idx.size == 0:
                continue
            c = cell[idx]
            brk = np.r_[True, np.any(c[1:] != c[:-1], axis=1)]
            for part in np.split(idx, np.flatnonzero(brk)[1:]):
                runs.append((tuple(cell[part[0]].tolist()), int(o), part))
    else:
        roots = np.zeros(n, bool)
        if geometry_type == "skeleton" and edges is not None:
            roots[:] = True
            roots[np.asarray(edges)[:, 0]] = False
        owner = np.zeros(n, np.int64) if oid is None else oid
        order = np.lexsort((np.arange(n), *cell.T[::-1], owner))
        key = np.column_stack([owner[order], cell[order]])
        brk = np.r_[True, np.any(key[1:] != key[:-1], axis=1)] | roots[order]
        for part in np.split(order, np.flatnonzero(brk)[1:]):
            runs.append((tuple(cell[part[0]].tolist()), int(owner[part[0]]), part))

    cells: dict[tuple[int, ...], list[np.ndarray]] = {}
    row_of = np.full(n, -1, np.int64)
    manifests: dict[int, list[tuple[tuple[int, ...], int]]] = {}
    frag_ranges: dict[tuple[int, ...], list[tuple[int, int]]] = {}
    for c, o, part in runs:
        rows = cells.setdefault(c, [])
        start = sum(len(p) for p in rows)
        rows.append(part)
        row_of[part] = np.arange(start, start + len(part))
        frag_ranges.setdefault(c, []).append((start, len(part)))
        manifests.setdefault(o, []).append((c, len(frag_ranges[c]) - 1))

    n_max = max(sum(len(p) for p in v) for v in cells.values()) + n_max_slack
    one = (1,) * ndim
    verts = np.zeros((*grid, n_max, ndim), np.float32)
    blobs = {c: _fragment_blob(r) for c, r in frag_ranges.items()}
    b_max = max(len(b) for b in blobs.values()) + 8
    frags = np.zeros((*grid, b_max), np.uint8)
    for c, parts in cells.items():
        idx = np.concatenate(parts)
        verts[c][: len(idx)] = pos[idx]
        frags[c][: len(blobs[c])] = np.frombuffer(blobs[c], np.uint8)

    level = root / "0"
    _group(
        root,
        {
            "zarr_vectors": {
                "zv_version": "0.7.0",
                "geometry_types": [geometry_type],
                "chunk_shape": cs.tolist(),
                "bounds": [lo.tolist(), hi.tolist()],
                "base_bin_shape": None,
                "links_convention": "explicit_links",
            },
            "multiscales": [
                {
                    "axes": [{"name": a, "type": "space"} for a in "xyz"[:ndim]],
                    "datasets": [
                        {
                            "path": "0",
                            "coordinateTransformations": [{"type": "scale", "scale": [1.0] * ndim}],
                        }
                    ],
                }
            ],
        },
    )
    _group(level, {"zarr_vectors_level": {"vertex_count": int(n), "level": 0}})
    _array(root, "0/vertices", verts, (*one, n_max, ndim), 0.0)
    _array(root, "0/vertex_fragments", frags, (*one, b_max), 0, compress=False)

    for name, values in (vertex_attributes or {}).items():
        v = np.asarray(values)
        if v.dtype.kind not in "biuf":
            continue
        width = v.shape[1:]
        out = np.zeros((*grid, n_max, *width), v.dtype)
        for c, parts in cells.items():
            idx = np.concatenate(parts)
            out[c][: len(idx)] = v[idx]
        _group(level / "attributes")
        _array(root, f"0/attributes/{name}", out, (*one, n_max, *width), 0)

    if geometry_type in LINK_WIDTH:
        w = LINK_WIDTH[geometry_type]
        recs = np.asarray(faces if geometry_type == "mesh" else edges, np.int64).reshape(-1, w)
        rc = cell[recs]  # (M, W, D)
        same = np.all(rc == rc[:, :1], axis=(1, 2))
        intra: dict[tuple[int, ...], list[np.ndarray]] = {}
        for r in np.flatnonzero(same):
            intra.setdefault(tuple(rc[r, 0].tolist()), []).append(row_of[recs[r]])
        e_max = max((len(v) for v in intra.values()), default=0) + n_max_slack
        links = np.full((*grid, e_max, w), -1, np.int32)
        for c, rows in intra.items():
            links[c][: len(rows)] = np.asarray(rows)
        _group(level / "links")
        _array(root, "0/links/0", links, (*one, e_max, w), -1)
        cross = recs[~same]
        if len(cross):
            rec = np.concatenate([cell[cross], row_of[cross][..., None]], axis=2)
            blob = np.ascontiguousarray(rec, "<i8").reshape(-1).view(np.uint8)
            _group(level / "cross_chunk_links")
            _group(
                level / "cross_chunk_links" / "0",
                {"zv_array": "cross_chunk_links", "link_width": w, "sid_ndim": ndim},
            )
            _array(root, "0/cross_chunk_links/0/data", blob, (max(len(blob), 1),), 0, False)

    if manifests:
        num = int(max(manifests)) + 1
        blobs_m = []
        for o in range(num):
            entries = manifests.get(o, [])
            m = struct.pack("<I", len(entries))
            for c, f in entries:
                m += np.asarray(c, "<i8").tobytes() + b"\x00" + struct.pack("<q", f)
            blobs_m.append(m)
        data = np.frombuffer(b"".join(blobs_m), np.uint8)
        offsets = np.cumsum([0] + [len(m) for m in blobs_m[:-1]]).astype(np.int64)
        _group(
            level / "object_index",
            {"zv_array": "object_index", "num_objects": num, "sid_ndim": ndim},
        )
        _array(root, "0/object_index/data", data, (max(len(data), 1),), 0, False)
        _array(root, "0/object_index/offsets", offsets, (max(num, 1),), 0, False)

    for name, values in (object_attributes or {}).items():
        v = np.asarray(values)
        if v.dtype.kind not in "biuf":
            continue
        _group(level / "object_attributes")
        _array(root, f"0/object_attributes/{name}", v, v.shape, 0)

    if groups:
        g_max = max(len(m) for m in groups.values()) or 1
        table = np.full((int(max(groups)) + 1, g_max), -1, np.int64)
        for g, members in groups.items():
            table[g, : len(members)] = members
        _array(root, "0/groupings", table, (1, g_max), -1)
    return root
