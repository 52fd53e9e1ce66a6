"""The fixture stores the tests read, and where they are during a run (see ``tests/data/README.md``).

``tests/data`` tracks the ground truth (``*/expected/*.json``), ``next/source``, the READMEs and
one archive per writer generation whose stores no writer in the test dependencies can make:
``v07.tar.gz`` (zarr-vectors 0.7.0), ``v09.tar.gz`` (the 0.9.2 edge cases, whose inputs were not
kept) and ``next.tar.gz`` (layouts after 0.9.2). :func:`data_root` builds the tree the tests
read, laid out as ``tests/data`` was before the archives:

1. the tracked files are copied and the archives unpacked;
2. ``v09/<name>.zarrvectors`` is written by zarr-vectors 0.9.2 from ``v09/expected/<name>.json``
   (:func:`write_v09`);
3. ``dense/<name>.zarrvectors`` is written by ``tests/format/_dense_writer.py`` from the same
   JSON (:func:`write_dense_fixture`).

Both generated families are byte for byte the stores that were tracked before (``generated.json``
holds their digests, :func:`tree_digest`; ``tests/format/test_v09.py`` and
``tests/format/test_dense_layout.py`` check them).

Where: ``$ZV_TEST_DATA`` when set -- ``tests/conftest.py`` sets it to a fresh folder per test
session and builds the tree before the first test, so xdist workers and subprocesses find the
same one -- else a folder in the temp directory named by the hash of the inputs (benchmarks, a
shell), built once and kept. A lock file keeps two processes from building one tree; the tree is
built beside its place and renamed into it, so it is either absent or complete.
"""

from __future__ import annotations

import fcntl
import getpass
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import warnings
from functools import cache
from pathlib import Path
from types import ModuleType

import numpy as np

TRACKED = Path(__file__).resolve().parent / "data"
#: the archives, one per writer generation (``tar xzf <archive> -C <dir>`` gives the same tree)
ARCHIVES = ("v07.tar.gz", "v09.tar.gz", "next.tar.gz")
#: the stores written during the run, from ``v09/expected/<name>.json``
V09_STORES = (
    "points",
    "points_binned",
    "lines",
    "polylines",
    "streamlines",
    "graph",
    "skeleton",
    "mesh",
)
DENSE_STORES = ("points", "lines", "polylines", "streamlines", "graph", "skeleton", "mesh")
#: the environment variable naming the tree of this run
ENV = "ZV_TEST_DATA"
#: ``points`` group 1 was handed to the writer as a ``range`` (a range group: FORMAT09 §10); the
#: JSON lists its members
RANGE_GROUPS = {"points": (1,)}


def data_root() -> Path:
    """The fixture tree of this run (built on first use in any process; see the module doc)."""
    root = location()
    if not root.is_dir():
        build(root)
    return root


def location() -> Path:
    """Where :func:`data_root` puts the tree (``$ZV_TEST_DATA`` or a folder named by a hash)."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    return _hashed_location()


@cache
def _hashed_location() -> Path:
    digest = hashlib.sha256()
    for path in sorted(p for p in TRACKED.rglob("*") if p.is_file()):
        digest.update(path.relative_to(TRACKED).as_posix().encode() + b"\0" + path.read_bytes())
    for source in (Path(__file__), Path(__file__).parent / "format" / "_dense_writer.py"):
        digest.update(source.read_bytes())
    return cache_folder() / digest.hexdigest()[:16]


def cache_folder() -> Path:
    """The folder holding the trees built outside a test session and the sessions' trees."""
    return Path(tempfile.gettempdir()) / f"napari-zv-test-data-{getpass.getuser()}"


def build(root: Path) -> None:
    """Build the tree at ``root`` unless another process did (under a lock)."""
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f"{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if root.is_dir():
            return
        staging = root.parent / f"{root.name}.partial-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        # the tracked files only: no stale store a checkout left behind
        shutil.copytree(TRACKED, staging, ignore=shutil.ignore_patterns(*ARCHIVES, "*.zarrvectors"))
        for name in ARCHIVES:
            unpack(TRACKED / name, staging)
        for name in V09_STORES:
            write_v09(staging / "v09" / f"{name}.zarrvectors", name, staging)
        for name in DENSE_STORES:
            write_dense_fixture(staging / "dense" / f"{name}.zarrvectors", name, staging)
        staging.rename(root)


def unpack(archive: Path, into: Path) -> None:
    """``tar xzf archive -C into`` (the tar program: about ten times faster than
    :mod:`tarfile` with its ``data`` filter on these 15,700 small files; that is the fallback)."""
    tar = shutil.which("tar")
    if tar:
        subprocess.run([tar, "-xzf", str(archive), "-C", str(into)], check=True)
        return
    with tarfile.open(archive) as tf:
        tf.extractall(into, filter="data")


def tree_digest(path: Path) -> str:
    """SHA-256 of a folder's files: their paths (relative, sorted) and their bytes."""
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(file.relative_to(path).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()


def recorded_digests() -> dict[str, str]:
    """``generated.json``: relative path of each generated store -> :func:`tree_digest` of the
    store that was tracked before it was generated."""
    return json.loads((TRACKED / "generated.json").read_text(encoding="utf-8"))


# -- zarr-vectors 0.9.2 ------------------------------------------------------------------------
def _f32(values: list) -> np.ndarray:
    """JSON floats as float32 (a null is the NaN the writer was given)."""
    if values and not isinstance(values[0], list):
        return np.array([np.nan if v is None else v for v in values], np.float32)
    return np.asarray(values, np.float32)


def _attrs(values: dict, ints: tuple[str, ...]) -> dict[str, np.ndarray]:
    return {k: np.asarray(v, np.int32) if k in ints else _f32(v) for k, v in values.items()}


def write_v09(path: Path, name: str, root: Path) -> Path:
    """Write ``v09/<name>.zarrvectors`` with zarr-vectors 0.9.2 from the ``input`` and ``writer``
    of ``root/v09/expected/<name>.json``: the writer call, then (lines, graphs, meshes, whose
    writers take no groups) the groups and their names, then ``build_pyramid``."""
    import zarr_vectors as zv
    from zarr_vectors.core.arrays import write_groupings, write_groupings_attributes
    from zarr_vectors.core.store import get_resolution_level, open_store, update_level_metadata
    from zarr_vectors.multiresolution.coarsen import build_pyramid
    from zarr_vectors.types.graphs import write_graph
    from zarr_vectors.types.lines import write_lines
    from zarr_vectors.types.meshes import write_mesh
    from zarr_vectors.types.points import write_points
    from zarr_vectors.types.polylines import write_polylines

    d = json.loads((root / "v09" / "expected" / f"{name}.json").read_text(encoding="utf-8"))
    inp, w, gtype, out = d["input"], d["writer"], d["geometry_type"], str(path)
    grid = {
        "chunk_shape": tuple(w["chunk_shape"]),
        "bin_shape": tuple(w["bin_shape"]),
        "bounds": (w["bounds"][0], w["bounds"][1]),
    }
    if w["shard_shape"]:
        grid["shard_shape"] = tuple(w["shard_shape"])
    raw_va = inp.get("vertex_attributes", {})
    paths = gtype in ("polyline", "streamline")  # their vertex attributes: one list a path
    va = (
        {}
        if paths
        else {k: np.asarray(v, np.uint8) if k == "rgb" else _f32(v) for k, v in raw_va.items()}
    )
    oa = _attrs(inp.get("object_attributes", {}), ("label",))
    ga = _attrs(inp.get("group_attributes", {}), ("code",))
    groups: dict[int, list[int] | range] = {int(k): v for k, v in inp.get("groups", {}).items()}
    for gid in RANGE_GROUPS.get(name, ()):
        groups[gid] = range(groups[gid][0], groups[gid][-1] + 1)
    ids = {}
    if "vertex_object_ids" in inp:
        ids["object_ids"] = np.asarray(inp["vertex_object_ids"], np.int64)
    late_groups = not paths and gtype != "point_cloud"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if gtype == "point_cloud":
            write_points(
                out, _f32(inp["positions"]), vertex_attributes=va or None,
                object_attributes=oa or None, groups=groups or None,
                group_attributes=ga or None, **ids, **grid,
            )  # fmt: skip
        elif gtype == "line":
            write_lines(
                out, _f32(inp["endpoints"]), vertex_attributes=va, object_attributes=oa, **grid
            )
        elif paths:
            write_polylines(
                out, [_f32(p) for p in inp["polylines"]],
                vertex_attributes={k: [_f32(x) for x in v] for k, v in raw_va.items()},
                object_attributes=oa, groups=groups, group_attributes=ga,
                geometry_type=gtype, **grid,
            )  # fmt: skip
        elif gtype in ("graph", "skeleton"):
            write_graph(
                out, _f32(inp["positions"]), np.asarray(inp["edges"], np.int64), kind=gtype,
                vertex_attributes=va, object_attributes=oa,
                link_attributes={k: _f32(v) for k, v in inp["link_attributes"].items()},
                **ids, **grid,
            )  # fmt: skip
        else:
            write_mesh(
                out, _f32(inp["vertices"]), np.asarray(inp["faces"], np.int64),
                vertex_attributes=va, object_attributes=oa, **ids, **grid,
            )  # fmt: skip
        if late_groups and groups:
            level = get_resolution_level(open_store(out, mode="r+"), 0)
            write_groupings(level, groups)
            for key, values in ga.items():
                write_groupings_attributes(level, key, values)
            update_level_metadata(level, add_arrays_present=["groups", "group_attributes"])
        if inp.get("group_names"):
            zv.open(out, mode="r+").level(0).groups.name_rows(inp["group_names"])
        p = w["pyramid"]
        build_pyramid(
            out,
            factors=[tuple(f) for f in p["factors"]],
            chunk_scale_factors=p["chunk_scale_factors"],
            sparsity_seed=p["sparsity_seed"],
        )
    return path


# -- the seed-002 dense form -------------------------------------------------------------------
def _format_helper(name: str) -> ModuleType:
    """``tests/format/<name>.py`` as the module ``name`` (the one ``tests/format`` imports)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, TRACKED.parent / "format" / f"{name}.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def write_dense_fixture(path: Path, name: str, root: Path | None = None, **kw) -> Path:
    """Write ``dense/<name>.zarrvectors`` (``_dense_writer``) from the 0.9.2 truth of ``name``
    (``root/v09/expected``; ``kw`` overrides the writer's arguments)."""
    truth = _format_helper("_truth")
    expected = (root or data_root()) / "v09" / "expected" / f"{name}.json"
    t = truth.twin_truth(name, json.loads(expected.read_text(encoding="utf-8")))
    return _format_helper("_dense_writer").write_dense(
        path,
        t.geometry_type,
        t.positions,
        kw.pop("chunk_shape", t.chunk_shape),
        object_ids=t.object_ids,
        paths=t.paths,
        edges=t.edges,
        faces=t.faces,
        vertex_attributes=t.vertex_attributes,
        object_attributes=t.object_attributes,
        groups=t.groups,
        **kw,
    )
