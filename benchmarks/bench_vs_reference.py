"""Reads against zarr-vectors 0.9.2's own reader and against the bytes.

    python benchmarks/bench_vs_reference.py            # 10M-vertex stores (the issue's table)
    python benchmarks/bench_vs_reference.py --quick    # 1M-vertex stores, about a minute
    python benchmarks/bench_vs_reference.py --vertices 2000000 --stores streamlines

One command. The stores are written once by zarr-vectors 0.9.2 into ``benchmarks/.work/``
(git-ignored) and reused while their parameters match; all in a 1000^3 box with 200^3 chunks
(the zarr-vectors-tools paper benchmark's set-up), unsharded, uncompressed unless said:

* ``points_ids``: N points in N/100 objects (blobs of sigma 10 around uniform centres), a
  float32 ``intensity``, bins 25^3 and the writer's own pyramid
  ``build_pyramid(factors=[(2, 1)] * 3)`` (so the coarsest level has one bin per chunk);
* ``points_bins50``: the ``points_ids`` cloud with bins of 50^3, zstd-compressed, and the
  writer's pyramid ``build_pyramid(factors=[(2, 1)] * 2)`` (the zarr-vectors-tools paper's
  binned set-up);
* ``points_default``: the ``points_ids`` cloud written with the writer's default layout (no
  ``chunk_shape``, ``bin_shape`` or ``bounds``: one chunk holding every point);
* ``points``: N uniform points, ``intensity``, no objects;
* ``streamlines``: N/100 streamlines of 100 vertices in 24 bundles (bench_scale's
  tractogram), a per-object ``bundle``;
* ``mesh`` (with ``--stores all``): N/2,500 lat-long spheres of 2,500 vertices;
* ``skeleton`` (with ``--stores all``): N/1,000 trees of 1,000 nodes (random walks that branch).

Reads (each opens the store afresh, as a script or a viewer opening a file does): the whole
of level 0, a box of 1% and of 10% of the volume, the coarsest level, one object by id.
Three readers per read, alternating inside every repeat (median of ``--repeats``), each
timed read preceded by a garbage collection and nothing else (:func:`_settle`: a user's
process does not trim its heap between reads, so neither does the benchmark). Every reader
reads the same arrays: positions, every vertex attribute and, for objects, the index:

* ``ours``: ``open_store(p).read(level, bbox=..., object_ids=...)``;
* ``0.9.2``: ``zv.open(p).level(level).select(bbox=..., objects=...).read()``;
* ``floor``: fetching and decoding only the arrays the read touches (``vertices``,
  ``vertex_fragments``, every vertex attribute over the chunks of the box, plus
  ``object_index/*`` when the store has objects and ``links/0`` when it has links), without
  assembling any geometry: the per-chunk cells file by file through numcodecs' vlen-bytes
  codec (after undoing the zstd compression where the store has it), the object index with
  zarr.

``ours+derived`` (whole-level reads of stores with objects) also asks for the per-vertex
object ids and path edges, which our reads derive only on first access.

Before timing, ours and 0.9.2's results are checked equal (the same multiset of vertices;
the same per-vertex object ids; the same paths as vertex sequences; the same edges / faces as
vertex pairs / triangles); a box read is compared on the vertices inside the box, since our
object reads of a box return whole fragments of the chunks it touches, and checked against our
whole-level read when the two differ (0.9.2's box reads of points with objects miss vertices).

Each store is timed in its own process; peak RSS of a whole level-0 read is measured in a
fresh process per reader (``VmHWM`` and its growth over the process's RSS after a warm-up
read of a small box), beside the size of the decoded arrays (positions and vertex attributes).

Results: ``benchmarks/results/bench_vs_reference[_<N>].json`` and a Markdown table on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import shutil
import subprocess
import sys
import time
import warnings
from functools import partial
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
WORK = HERE / ".work"
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))
from _memory import peak_rss_kb, rss_now_kb  # noqa: E402

CHUNK = 200.0
BOUNDS = ([0.0, 0.0, 0.0], [1000.0, 1000.0, 1000.0])
BOXES = {  # centred boxes of 1% and 10% of the volume
    "box 1%": ((392.3, 392.3, 392.3), (607.7, 607.7, 607.7)),
    "box 10%": ((267.9, 267.9, 267.9), (732.1, 732.1, 732.1)),
}
ALL_STORES = (
    "points_ids", "points_bins50", "points_default", "points", "streamlines", "mesh", "skeleton",
)  # fmt: skip
DEFAULT_STORES = ("points_ids", "points_bins50", "points_default", "points", "streamlines")


# --------------------------------------------------------------------------------------------
# the stores
# --------------------------------------------------------------------------------------------


def _quiet():
    warnings.filterwarnings("ignore")  # zarr's UnstableSpecificationWarning on vlen-bytes


def _settle() -> None:
    """What runs between two timed reads: a garbage collection, as in a user's process
    between two calls (no heap trimming: a read that leaves the heap fragmented pays for it
    in the next read, as it would for the user)."""
    gc.collect()


def _clustered_points(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """N points in N/100 objects (blobs of sigma 10 around uniform centres): positions,
    object ids and a float32 ``intensity``."""
    rng = np.random.default_rng(1)
    n_obj = max(1, n // 100)
    centres = rng.uniform(20, 980, (n_obj, 3))
    oid = rng.integers(0, n_obj, n)
    pos = np.clip(centres[oid] + rng.normal(0, 10, (n, 3)), 0, 999.9).astype(np.float32)
    return pos, oid, rng.random(n).astype(np.float32)


def write_points_ids(path: Path, n: int) -> None:
    from zarr_vectors.multiresolution.coarsen import build_pyramid
    from zarr_vectors.types.points import write_points

    pos, oid, intensity = _clustered_points(n)
    write_points(
        str(path), pos, chunk_shape=(CHUNK,) * 3, bin_shape=(25.0,) * 3, bounds=BOUNDS,
        vertex_attributes={"intensity": intensity}, object_ids=oid,
    )  # fmt: skip
    build_pyramid(str(path), factors=[(2.0, 1.0)] * 3)


def write_points_bins50(path: Path, n: int) -> None:
    from zarr_vectors.multiresolution.coarsen import build_pyramid
    from zarr_vectors.types.points import write_points

    pos, oid, intensity = _clustered_points(n)
    write_points(
        str(path), pos, chunk_shape=(CHUNK,) * 3, bin_shape=(50.0,) * 3, bounds=BOUNDS,
        vertex_attributes={"intensity": intensity}, object_ids=oid, compressor="zstd",
    )  # fmt: skip
    build_pyramid(str(path), factors=[(2.0, 1.0)] * 2)


def write_points_default(path: Path, n: int) -> None:
    from zarr_vectors.types.points import write_points

    pos, oid, intensity = _clustered_points(n)
    write_points(str(path), pos, vertex_attributes={"intensity": intensity}, object_ids=oid)


def write_points_plain(path: Path, n: int) -> None:
    from zarr_vectors.types.points import write_points

    rng = np.random.default_rng(2)
    pos = rng.uniform(0, 1000, (n, 3)).astype(np.float32)
    write_points(
        str(path), pos, chunk_shape=(CHUNK,) * 3, bounds=BOUNDS,
        vertex_attributes={"intensity": rng.random(n).astype(np.float32)},
    )  # fmt: skip


def write_streamlines(path: Path, n: int) -> None:
    from zarr_vectors.types.polylines import write_polylines

    from bench_scale import tractogram

    pts, bundle = tractogram(max(1, n // 100), 100)
    write_polylines(
        str(path), list(pts), chunk_shape=(CHUNK,) * 3, bounds=BOUNDS,
        object_attributes={"bundle": bundle},
    )  # fmt: skip


def write_mesh(path: Path, n: int) -> None:
    from zarr_vectors.types.meshes import write_mesh as zv_write_mesh

    rng = np.random.default_rng(3)
    k = 50  # 50 x 50 lat-long grid: 2,500 vertices per sphere
    n_obj = max(1, n // (k * k))
    th, ph = np.meshgrid(np.linspace(0.05, np.pi - 0.05, k), np.linspace(0, 2 * np.pi, k + 1)[:-1])
    unit = np.stack([np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.cos(th)], -1)
    unit = unit.reshape(-1, 3)
    i, j = np.meshgrid(np.arange(k), np.arange(k - 1), indexing="ij")  # i: longitude ring
    a = (i * k + j).ravel()
    b = (((i + 1) % k) * k + j).ravel()
    one = np.concatenate([np.stack([a, b, a + 1], 1), np.stack([b, b + 1, a + 1], 1)])
    centres = rng.uniform(60, 940, (n_obj, 3))
    radii = rng.uniform(10, 50, n_obj)
    pos = (centres[:, None] + radii[:, None, None] * unit[None]).reshape(-1, 3)
    faces = (one[None] + (np.arange(n_obj) * k * k)[:, None, None]).reshape(-1, 3)
    zv_write_mesh(
        str(path), pos.astype(np.float32), faces, chunk_shape=(CHUNK,) * 3, bounds=BOUNDS,
        object_ids=np.repeat(np.arange(n_obj), k * k),
    )  # fmt: skip


def write_skeleton(path: Path, n: int) -> None:
    from zarr_vectors.types.graphs import write_graph

    rng = np.random.default_rng(4)
    per = 1000
    n_obj = max(1, n // per)
    parent = np.arange(-1, per - 1)
    branch = rng.random(per) < 0.02  # now and then a node hangs off an earlier one
    parent[branch] = (rng.random(branch.sum()) * np.arange(per)[branch]).astype(np.int64)
    parent[0] = -1
    steps = rng.normal(0, 3, (n_obj, per, 3))
    pos = np.empty((n_obj, per, 3))
    pos[:, 0] = rng.uniform(150, 850, (n_obj, 3))
    for v in range(1, per):
        pos[:, v] = pos[:, parent[v]] + steps[:, v]
    pos = np.clip(pos, 0, 999.9).reshape(-1, 3).astype(np.float32)
    child = np.arange(1, per)
    one = np.stack([child, parent[1:]], 1)
    edges = (one[None] + (np.arange(n_obj) * per)[:, None, None]).reshape(-1, 2)
    write_graph(
        str(path), pos, edges, chunk_shape=(CHUNK,) * 3, bounds=BOUNDS, kind="skeleton",
        object_ids=np.repeat(np.arange(n_obj), per),
    )  # fmt: skip


WRITERS = {
    "points_ids": write_points_ids,
    "points_bins50": write_points_bins50,
    "points_default": write_points_default,
    "points": write_points_plain,
    "streamlines": write_streamlines,
    "mesh": write_mesh,
    "skeleton": write_skeleton,
}


def ensure_store(kind: str, n: int) -> Path:
    path = WORK / f"ref27_{kind}_{n}.zarrvectors"
    marker = path.with_suffix(".json")
    params = {"kind": kind, "vertices": n, "writer": "zarr-vectors 0.9.2", "chunk": CHUNK, "v": 1}
    if path.is_dir() and marker.is_file() and json.loads(marker.read_text()) == params:
        return path
    shutil.rmtree(path, ignore_errors=True)
    WORK.mkdir(parents=True, exist_ok=True)
    print(f"writing {path.name} ...", flush=True)
    t0 = time.perf_counter()
    _quiet()
    WRITERS[kind](path, n)
    print(f"  written in {time.perf_counter() - t0:.0f} s", flush=True)
    marker.write_text(json.dumps(params))
    return path


# --------------------------------------------------------------------------------------------
# the three readers
# --------------------------------------------------------------------------------------------


def reads_of(
    kind: str, n_levels: int, some_id: int
) -> list[tuple[str, int, tuple | None, list | None]]:
    """``(name, level, bbox, object ids)`` of every read timed on a store of ``kind``."""
    reads = [("whole level 0", 0, None, None)]
    if kind in ("points_ids", "points_bins50", "points", "streamlines"):  # 200^3 chunks
        reads += [(name, 0, box, None) for name, box in BOXES.items()]
    if n_levels > 1:
        reads.append(("coarsest level", n_levels - 1, None, None))
    if kind != "points":
        reads.append(("one object by id", 0, None, [some_id]))
    return reads


def ours(path: str, level: int, bbox, ids):
    import napari_zarr_vectors as nzv

    return nzv.open_store(path).read(level, bbox=bbox, object_ids=ids)


def ours_derived(path: str, level: int, bbox, ids):
    """Our read with its derived arrays (per-vertex object ids, edges) asked for too."""
    geom = ours(path, level, bbox, ids)
    _ = geom.vertex_object_ids, geom.edges
    return geom


def reference(path: str, level: int, bbox, ids):
    import zarr_vectors as zv
    from zarr_vectors.exceptions import ZVError

    kw = {}
    if bbox is not None:
        kw["bbox"] = bbox
    if ids is not None:
        kw["objects"] = ids
    try:
        return zv.open(path).level(level).select(**kw).read()
    except ZVError:  # e.g. select(objects=...) of a mesh: not supported by 0.9.2
        return None


def _arrays(level_dir: Path, links: bool) -> list[str]:
    """The arrays a read of the level fetches (relative to the level's folder)."""
    names = ["vertices", "vertex_fragments"]
    attrs = level_dir / "vertex_attributes"
    if attrs.is_dir():
        names += [f"vertex_attributes/{p.name}" for p in sorted(attrs.iterdir()) if p.is_dir()]
    if (level_dir / "object_index" / "manifests").is_dir():
        names += ["object_index/object_ids", "object_index/manifests"]
    if links and (level_dir / "links" / "0").is_dir():  # intra-level links (edges, faces)
        for meta in sorted((level_dir / "links" / "0").rglob("zarr.json")):
            if json.loads(meta.read_text()).get("node_type") == "array":
                names.append(str(meta.parent.relative_to(level_dir)))
    return names


def floor(path: str, level: int, bbox, ids, links: bool = False) -> list[np.ndarray]:
    """Fetch and decode the arrays a read touches, without assembling any geometry; the
    decoded arrays (held until the caller drops them, as a reader's result is). The per-chunk arrays (one variable-length blob per spatial
    chunk) are read file by file and decoded with numcodecs' vlen-bytes codec (zarr's own
    per-chunk path costs ~0.15 ms a chunk more, which is no part of the bytes); the
    object index's arrays with zarr."""
    import numcodecs
    import zarr

    vlen = numcodecs.VLenBytes()
    level_dir = Path(path) / str(level)
    held: list[np.ndarray] = []
    for name in _arrays(level_dir, links):
        array_dir = level_dir / name
        if name.startswith("object_index"):
            values = zarr.open_array(str(array_dir), mode="r")[...]
            held.append(values)
            continue
        meta = json.loads((array_dir / "zarr.json").read_text())
        names = [c["name"] for c in meta["codecs"]]
        if names[0] != "vlen-bytes" or not set(names[1:]) <= {"zstd"}:
            raise SystemExit(f"floor: {name} is not a vlen-bytes array (zstd at most)")
        compressors = [numcodecs.Zstd(**c.get("configuration", {})) for c in meta["codecs"][1:]]
        files = [f for f in (array_dir / "c").rglob("*") if f.is_file()]
        if bbox is not None:  # the chunks the box touches (every level: 200^3 chunks)
            lo = np.floor(np.asarray(bbox[0]) / CHUNK).astype(int)
            hi = np.floor(np.asarray(bbox[1]) / CHUNK).astype(int)
            key = [np.array(f.relative_to(array_dir / "c").parts, dtype=np.int64) for f in files]
            files = [
                f for f, k in zip(files, key, strict=True)
                if np.all(k[: len(lo)] >= lo) and np.all(k[: len(lo)] <= hi)
            ]  # fmt: skip
        for f in files:
            data = f.read_bytes()
            for codec in reversed(compressors):
                data = codec.decode(data)
            for blob in vlen.decode(data):
                held.append(np.frombuffer(blob, np.uint8))
    return held


# --------------------------------------------------------------------------------------------
# same-result checks
# --------------------------------------------------------------------------------------------


def _sorted_rows(positions: np.ndarray, extra: np.ndarray | None = None) -> np.ndarray:
    p = np.asarray(positions, dtype=np.float64)
    cols = [p[:, i] for i in range(p.shape[1])]
    if extra is not None:
        cols.append(np.asarray(extra, np.float64))
    order = np.lexsort(cols[::-1])
    return np.stack(cols, 1)[order]


def _inside(p: np.ndarray, bbox) -> np.ndarray:
    lo, hi = (np.asarray(b, np.float64) for b in bbox)
    return np.all((p >= lo) & (p <= hi), axis=1)


def same_result(kind: str, a, b, bbox, whole=None) -> str:
    """``"yes"``, or what differs, between our geometry ``a`` and 0.9.2's result ``b``
    (``whole``: our whole-level read, the truth a box read is checked against)."""
    pa, pb = np.asarray(a.positions), np.asarray(b.positions)
    if bbox is not None:  # compare the vertices inside the box
        ka, kb = _inside(pa, bbox), _inside(pb, bbox)
    else:
        ka, kb = np.ones(len(pa), bool), np.ones(len(pb), bool)
    ia = a.vertex_object_ids
    ib = None if b.object_ids is None else np.asarray(b.object_ids)
    if kind.startswith("points_") and ia is not None and ib is not None:
        same = np.array_equal(_sorted_rows(pa[ka], ia[ka]), _sorted_rows(pb[kb], ib[kb]))
    else:
        same = np.array_equal(_sorted_rows(pa[ka]), _sorted_rows(pb[kb]))
    if not same:
        if bbox is not None and whole is not None:
            pw = np.asarray(whole.positions)
            truth = _sorted_rows(pw[_inside(pw, bbox)])
            if np.array_equal(_sorted_rows(pa[ka]), truth):
                return f"ours exact; 0.9.2 wrong ({int(kb.sum())} of {len(truth)} inside)"
        return f"vertices differ ({int(ka.sum())} vs {int(kb.sum())})"
    if kind == "streamlines" and bbox is None:
        ours_paths = sorted(pa[p].tobytes() for p in a.paths)
        theirs_paths = sorted(pb[s].astype(pa.dtype).tobytes() for s in b.parts)
        if ours_paths != theirs_paths:
            return f"paths differ ({len(ours_paths)} vs {len(theirs_paths)})"
    if kind in ("mesh", "skeleton") and bbox is None:
        ea = a.faces if kind == "mesh" else a.edges
        eb = b.faces if kind == "mesh" else b.edges
        eb = np.zeros((0, ea.shape[1]), np.int64) if eb is None else np.asarray(eb)
        va = {tuple(sorted(pa[r].tobytes() for r in row)) for row in ea.tolist()}
        vb = {tuple(sorted(pb[r].tobytes() for r in row)) for row in eb.tolist()}
        if va != vb:
            return f"{'faces' if kind == 'mesh' else 'edges'} differ ({len(va)} vs {len(vb)})"
    return "yes"


# --------------------------------------------------------------------------------------------
# child processes
# --------------------------------------------------------------------------------------------


def child_time(kind: str, path: str, repeats: int, check: bool) -> dict:
    _quiet()
    import napari_zarr_vectors as nzv

    store = nzv.open_store(path)
    n_levels = store.levels[-1].index + 1
    ids = store.object_ids(0) if kind != "points" else np.zeros(1, np.int64)
    some_id = int(ids[len(ids) // 2]) if len(ids) else 0
    del store
    links = kind in ("mesh", "skeleton")
    fns = {
        "ours": ours,
        "0.9.2": reference,
        "floor": partial(floor, links=links),
        "ours+derived": ours_derived,
    }
    out = {}
    for name, level, bbox, obj in reads_of(kind, n_levels, some_id):
        entry: dict = {"level": level}
        who_runs = ["ours", "0.9.2"] if obj is not None else ["ours", "0.9.2", "floor"]
        if kind != "points" and name == "whole level 0":
            who_runs.append("ours+derived")
        if reference(path, level, bbox, obj) is None:
            who_runs.remove("0.9.2")
            entry["0.9.2"] = None
            entry["same"] = "0.9.2 cannot"
        elif check:
            a = ours(path, level, bbox, obj)
            b = reference(path, level, bbox, obj)
            whole = ours(path, level, None, None) if bbox is not None else None
            entry["same"] = same_result(kind, a, b, bbox, whole)
            entry["vertices"] = [int(a.vertex_count), len(b.positions)]
            del a, b, whole
        runs: dict[str, list[float]] = {w: [] for w in who_runs}
        for _ in range(repeats):
            for who in who_runs:
                _settle()
                t0 = time.perf_counter()
                fns[who](path, level, bbox, obj)
                runs[who].append(time.perf_counter() - t0)
        for who, ts in runs.items():
            entry[who] = float(np.median(ts))
        out[name] = entry
        line = "  ".join(f"{w} {entry[w]:.3f}" for w in runs)
        print(f"  {kind:12s} {name:18s} {line}  same: {entry.get('same', '-')}", flush=True)
    return {"reads": out, "levels": n_levels, "object": some_id}


def child_rss(kind: str, path: str, who: str) -> dict:
    _quiet()
    import zarr_vectors  # noqa: F401

    import napari_zarr_vectors  # noqa: F401

    links = kind in ("mesh", "skeleton")
    fns = {
        "ours": ours,
        "ours+derived": ours_derived,
        "0.9.2": reference,
        "floor": partial(floor, links=links),
    }
    # warm-up (imports, thread pools) on a small box, then the whole read from a settled RSS
    tiny = ((0.0, 0.0, 0.0), (50.0, 50.0, 50.0))
    with contextlib.suppress(Exception):  # a reader that cannot read a box: no warm-up
        fns[who](path, 0, tiny, None)
    base = rss_now_kb() * 1024
    t0 = time.perf_counter()
    result = fns[who](path, 0, None, None)
    seconds = time.perf_counter() - t0
    peak = peak_rss_kb() * 1024
    decoded = None
    if who.startswith("ours"):
        decoded = int(result.positions.nbytes) + sum(
            int(v.nbytes) for v in result.vertex_attributes.values()
        )
    return {"peak_rss": peak, "before": base, "seconds": seconds, "decoded": decoded}


def run_child(*args: str) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"child {args} failed")
    lines = proc.stdout.splitlines()
    for line in lines[:-1]:
        print(line, flush=True)
    return json.loads(lines[-1])


# --------------------------------------------------------------------------------------------
# the table
# --------------------------------------------------------------------------------------------

RSS_READERS = ("ours", "ours+derived", "0.9.2", "floor")
LABELS = {
    "points_ids": "{n} points with object ids",
    "points_bins50": "{n} points with object ids, 50^3 bins, zstd",
    "points_default": "{n} points with object ids, writer's default layout",
    "points": "{n} points, no objects",
    "streamlines": "{n} streamline vertices ({o})",
    "mesh": "{n} mesh vertices ({o} meshes)",
    "skeleton": "{n} skeleton nodes ({o})",
}
PER_OBJECT = {
    "points_ids": 100, "points_bins50": 100, "points_default": 100, "points": 1,
    "streamlines": 100, "mesh": 2500, "skeleton": 1000,
}  # fmt: skip


def _short(n: int) -> str:
    return f"{n / 1e6:g}M" if n >= 1_000_000 else f"{n / 1e3:g}k"


def table(result: dict) -> str:
    n = result["vertices"]
    rows = [
        "| store | read | ours s | 0.9.2 s | floor s | ours / 0.9.2 | ours / floor | same result "
        "| ours + derived s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]

    def cell(v, fmt):
        return format(v, fmt) if v else "—"

    for kind, rec in result["stores"].items():
        label = LABELS[kind].format(n=_short(n), o=_short(n // PER_OBJECT[kind]))
        for name, e in rec["reads"].items():
            fl, ref, der = e.get("floor"), e.get("0.9.2"), e.get("ours+derived")
            rows.append(
                f"| {label} | {name} | {e['ours']:.3f} | {cell(ref, '.3f')} | {cell(fl, '.3f')} "
                f"| {cell(ref and e['ours'] / ref, '.2f')} | {cell(fl and e['ours'] / fl, '.1f')} "
                f"| {e.get('same', '-')} | {cell(der, '.3f')} |"
            )
    rows += [
        "",
        "Peak RSS of a whole level-0 read, each reader in a fresh process, MB (in brackets: its "
        "growth over the process before the read); decoded = positions + vertex attributes:",
        "",
        "| store | decoded MB | ours | ours + derived | 0.9.2 | floor "
        "| ours growth / decoded | ours + derived growth / decoded |",
        "|---|---|---|---|---|---|---|---|",
    ]
    mb = 1e6
    for kind, rec in result["stores"].items():
        r = rec.get("rss")
        if not r:
            continue
        label = LABELS[kind].format(n=_short(n), o=_short(n // PER_OBJECT[kind]))
        dec = r["ours"]["decoded"]

        def growth(w, r=r):
            return r[w]["peak_rss"] - r[w]["before"]

        cells = [f"{r[w]['peak_rss'] / mb:.0f} ({growth(w) / mb:.0f})" for w in RSS_READERS]
        rows.append(
            f"| {label} | {dec / mb:.0f} | "
            + " | ".join(cells)
            + f" | {growth('ours') / dec:.2f} | {growth('ours+derived') / dec:.2f} |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1M-vertex stores")
    parser.add_argument("--vertices", type=int, default=None, help="vertices per store")
    parser.add_argument("--stores", default=",".join(DEFAULT_STORES), help="names or 'all'")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-check", action="store_true", help="skip the same-result check")
    parser.add_argument("--no-rss", action="store_true", help="skip the peak-RSS processes")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        what, kind, path, *rest = args.child
        if what == "time":
            res = child_time(kind, path, int(rest[0]), rest[1] == "1")
        else:
            res = child_rss(kind, path, rest[0])
        print(json.dumps(res))
        return

    n = args.vertices or (1_000_000 if args.quick else 10_000_000)
    kinds = ALL_STORES if args.stores == "all" else tuple(args.stores.split(","))
    result: dict = {"vertices": n, "repeats": args.repeats, "stores": {}}
    for kind in kinds:
        path = str(ensure_store(kind, n))
        rec = run_child("time", kind, path, str(args.repeats), "0" if args.no_check else "1")
        if not args.no_rss:
            rec["rss"] = {w: run_child("rss", kind, path, w) for w in RSS_READERS}
        result["stores"][kind] = rec
    RESULTS.mkdir(exist_ok=True)
    suffix = "" if n == 10_000_000 else f"_{_short(n)}"
    (RESULTS / f"bench_vs_reference{suffix}.json").write_text(json.dumps(result, indent=2))
    print()
    print(table(result))


if __name__ == "__main__":
    main()
