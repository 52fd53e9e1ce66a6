"""Writing a :class:`~.spec.WriteSpec` through the reference writer ``zarr-vectors``.

The reference writer (``pip install "napari-zarr-vectors[write]"``) is the one place that
knows the format's write side: this module only prepares arrays for its public API
(``zarr_vectors.create`` / ``Dataset.add_*`` / ``Dataset.build_pyramid``, plus
``zarr_vectors.building`` for groups the ``add_*`` calls do not take) and makes the write
safe:

* the store being read is never written to (:class:`SameStoreError`);
* an existing target is never overwritten (:class:`TargetExistsError`);
* a failed write leaves nothing behind: the store is built under a hidden temporary sibling
  name (``.<name>.partial-<id>``) and renamed into place only once complete; a write that
  was killed leaves that folder, which the next write into the same folder removes (a live
  write holds a lock beside its folder: :func:`clean_leftovers`);
* a failure of the disk (full, read-only, no permission) is a :class:`WriteError` naming the
  target.

The layout (chunk grid, bins) and the pyramid are chosen from the data's extent and size
(:func:`choose_cells`, :func:`choose_subcells`, :func:`choose_pyramid`).
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import uuid
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..format.distinct import distinct
from ..format.errors import MissingDependencyError, ZVError
from ..format.geometry import PATH_TYPES, GeometryType
from ..format.io import PARTIAL_NAME, local_path
from ..format.remote import describe
from .spec import SOURCE_OBJECT_ID, WriteSpec

try:
    import fcntl
except ImportError:  # Windows: leftovers with a lock file are kept
    fcntl = None  # type: ignore[assignment]

#: How to install the writing engine (named by every "missing writer" error).
WRITE_EXTRA = 'pip install "napari-zarr-vectors[write]"'

#: Vertices a level-0 chunk should hold on average (a 2-D view at high zoom touches a few).
VERTICES_PER_CHUNK = 20_000
#: Most chunks per axis the automatic layout picks.
MAX_CELLS_PER_AXIS = 64
#: Fewest bins per chunk edge (the reference writer's default).
SUBCELLS = 4
#: The automatic pyramid coarsens until a level is expected to hold at most this many
#: vertices (well inside the reader's default vertex budget of 60,000).
PYRAMID_TARGET_VERTICES = 10_000
#: Most levels the automatic pyramid adds.
PYRAMID_MAX_LEVELS = 8

#: ``progress(step, n_steps, description)``: called before each step of a write.
Progress = Callable[[int, int, str], None]


class WriteError(ZVError):
    """A store could not be written (bad input, refused target, writer failure)."""


class TargetExistsError(WriteError, FileExistsError):
    """The target path already exists: it is never overwritten."""


class SameStoreError(WriteError):
    """The target is (or lies inside) a store being read."""


class MissingWriterError(MissingDependencyError):
    """The ``write`` extra (the reference writer ``zarr-vectors``) is not installed."""


def require_writer() -> Any:
    """The ``zarr_vectors`` module, or :class:`MissingWriterError` naming the extra."""
    try:
        import zarr_vectors
    except ImportError as e:
        raise MissingWriterError(
            "Writing Zarr Vectors stores needs the reference writer zarr-vectors, "
            f"which is not installed: {WRITE_EXTRA}"
        ) from e
    return zarr_vectors


# --------------------------------------------------------------------------------------------
# layout and pyramid choice (pure)
# --------------------------------------------------------------------------------------------


def choose_cells(n_vertices: int, ndim: int) -> int:
    """Chunks per axis: about :data:`VERTICES_PER_CHUNK` vertices per chunk if spread evenly."""
    if n_vertices <= VERTICES_PER_CHUNK or ndim < 1:
        return 1
    per_axis = math.ceil((n_vertices / VERTICES_PER_CHUNK) ** (1.0 / ndim))
    return int(min(max(per_axis, 1), MAX_CELLS_PER_AXIS))


def choose_subcells(n_vertices: int, ndim: int, cells: int) -> int:
    """Bins per chunk edge: about one vertex per level-0 bin if spread evenly (so the first
    coarser level, with bins twice as large, holds several times fewer vertices), at least
    :data:`SUBCELLS`, and at most :data:`VERTICES_PER_CHUNK` bins per chunk."""
    if ndim < 1:
        return SUBCELLS
    per_chunk = n_vertices / max(cells, 1) ** ndim
    wanted = round(per_chunk ** (1.0 / ndim)) if per_chunk > 0 else SUBCELLS
    most = int(VERTICES_PER_CHUNK ** (1.0 / ndim))
    return int(min(max(wanted, SUBCELLS), max(most, SUBCELLS)))


@dataclass(frozen=True)
class PyramidPlan:
    """``build_pyramid`` arguments: per level a ``(coarsen, sparsity)`` factor and a chunk
    scale factor; ``expected_vertices`` estimates each new level's size."""

    factors: tuple[tuple[float, float], ...] = ()
    chunk_scale_factors: tuple[int, ...] = ()
    expected_vertices: tuple[int, ...] = ()

    @property
    def n_levels(self) -> int:
        return len(self.factors)


def choose_pyramid(
    n_vertices: int,
    extent: Sequence[float] | np.ndarray,
    chunk_shape: Sequence[float] | np.ndarray,
    bin_shape: Sequence[float] | np.ndarray,
    *,
    target: int = PYRAMID_TARGET_VERTICES,
    max_levels: int = PYRAMID_MAX_LEVELS,
) -> PyramidPlan:
    """Coarsening levels from the data's extent and size.

    Each level doubles the bin edge. A level holds at most one metavertex per occupied bin,
    so it is expected to hold ``min(previous, bins over the extent)`` vertices. Levels are
    added while the previous one is above ``target`` and the new one is expected to be at
    least 10 % smaller; once a bin would outgrow its chunk, chunks double too.
    """
    extent = np.maximum(np.asarray(extent, np.float64), 0.0)
    chunk = np.asarray(chunk_shape, np.float64).copy()
    bins = np.asarray(bin_shape, np.float64).copy()
    factors: list[tuple[float, float]] = []
    scales: list[int] = []
    expected: list[int] = []
    estimate = int(n_vertices)
    while estimate > target and len(factors) < max_levels:
        new_bins = bins * 2.0
        n_bins = float(np.prod(np.maximum(np.ceil(extent / new_bins), 1.0)))
        new_estimate = int(min(estimate, n_bins))
        if new_estimate > 0.9 * estimate:
            break
        scale = 2 if np.any(new_bins > chunk * (1 + 1e-9)) else 1
        chunk = chunk * scale
        bins = new_bins
        factors.append((2.0, 1.0))
        scales.append(scale)
        expected.append(new_estimate)
        estimate = new_estimate
    return PyramidPlan(tuple(factors), tuple(scales), tuple(expected))


# --------------------------------------------------------------------------------------------
# safety
# --------------------------------------------------------------------------------------------


def check_target(
    target: str | os.PathLike[str], sources: Iterable[str | os.PathLike[str]] = ()
) -> Path:
    """The absolute target path, after refusing what would destroy data.

    Raises :class:`SameStoreError` when ``target`` is one of ``sources`` (stores being read)
    or lies inside one, :class:`TargetExistsError` when it exists, :class:`WriteError` for
    remote targets and missing parent folders.
    """
    text = local_path(os.fspath(target))
    if text is None:
        raise WriteError(f"only local folders can be written, not {os.fspath(target)!r}")
    path = Path(text).expanduser().resolve()
    for source in sources:
        src = local_path(os.fspath(source))  # a store opened as file://... is local too
        if src is None:
            continue
        src_path = Path(src).expanduser().resolve()
        if path == src_path or src_path in path.parents:
            raise SameStoreError(
                f"refusing to write {path}: it is the store being read ({src_path}). "
                "Choose a new name."
            )
    if path.exists() or path.is_symlink():
        raise TargetExistsError(
            f"{path} already exists and is never overwritten: choose a new name, or remove it "
            "first."
        )
    if not path.parent.is_dir():
        raise WriteError(f"cannot write {path}: folder {path.parent} does not exist")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise WriteError(f"cannot write {path}: folder {path.parent} is not writable")
    return path


def clean_leftovers(folder: Path) -> list[Path]:
    """Remove the leftovers of writes into ``folder`` that did not finish (hidden
    ``.<name>.partial-<id>`` folders, and their lock files, that no running write holds);
    returns the folders removed. Without ``fcntl`` (Windows), folders whose lock file is
    still there are kept."""
    removed: list[Path] = []
    try:
        names = sorted(p.name for p in folder.iterdir())
    except OSError:
        return removed
    for name in names:
        base = name[: -len(".lock")] if name.endswith(".lock") else name
        if not PARTIAL_NAME.match(base):
            continue
        leftover, lock = folder / base, folder / f"{base}.lock"
        if name == lock.name and leftover.exists():
            continue  # seen with its folder
        if leftover.is_symlink() or _in_use(lock):
            continue
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)
            if leftover.exists():
                continue
            removed.append(leftover)
        with contextlib.suppress(OSError):
            lock.unlink()
    return removed


def _in_use(lock: Path) -> bool:
    """Whether a running write holds ``lock`` (a missing lock is held by nobody)."""
    if not lock.exists():
        return False
    if fcntl is None:
        return True
    try:
        fd = os.open(lock, os.O_RDWR)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # releases the lock
    return False


def _hold(lock: Path) -> Callable[[], None]:
    """Create and hold ``lock`` while a write runs; returns its release."""
    fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o644)
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def release() -> None:
        os.close(fd)
        with contextlib.suppress(OSError):
            lock.unlink()

    return release


# --------------------------------------------------------------------------------------------
# the write
# --------------------------------------------------------------------------------------------


def write_store(
    target: str | os.PathLike[str],
    spec: WriteSpec,
    *,
    pyramid: bool | PyramidPlan = True,
    sources: Iterable[str | os.PathLike[str]] = (),
    validate: bool = False,
    progress: Progress | None = None,
) -> Path:
    """Write ``spec`` as a new Zarr Vectors store at ``target``; returns its path.

    Parameters
    ----------
    target
        A local folder that does not exist yet (conventionally ``*.zarrvectors``).
    spec
        What to write (store order, store units).
    pyramid
        ``True`` (default): coarser levels chosen by :func:`choose_pyramid`; ``False``:
        level 0 only; a :class:`PyramidPlan`: exactly those levels.
    sources
        Paths of stores being read: writing into (or inside) one is refused.
    validate
        Run the reference writer's ``validate()`` on the result and raise
        :class:`WriteError` listing its errors (before the store is moved into place).
    progress
        ``progress(step, n_steps, description)`` before each step.

    Raises
    ------
    MissingWriterError
        Without the ``write`` extra.
    SameStoreError, TargetExistsError, WriteError
        Refused targets, invalid input, a failed write (nothing is left behind).
    """
    path = check_target(target, sources)
    label = f"{spec.name!r}" if spec.name else "the data"
    if not spec.vertex_count:
        raise WriteError(f"{label} holds no vertices: nothing to write")
    if not np.isfinite(spec.positions).all():
        raise WriteError(f"{label} has non-finite coordinates (NaN or infinity)")
    zv = require_writer()
    from zarr_vectors.api import Axis, Layout, Schema

    lo, hi = spec.resolved_bounds()
    cells = choose_cells(spec.vertex_count, spec.ndim)
    subcells = choose_subcells(spec.vertex_count, spec.ndim, cells)
    extent = hi - lo
    chunk_shape = np.where(extent > 0, extent / cells, 1.0)
    plan = pyramid if isinstance(pyramid, PyramidPlan) else None
    if plan is None:
        plan = (
            choose_pyramid(spec.vertex_count, extent, chunk_shape, chunk_shape / subcells)
            if pyramid
            else PyramidPlan()
        )
    steps = ["create the store", f"write {spec.vertex_count:,} vertices"]
    if plan.n_levels:
        steps.append(f"build {plan.n_levels} coarser level(s)")
    if validate:
        steps.append("validate")
    steps.append("move into place")

    def step(i: int) -> None:
        if progress is not None:
            progress(i, len(steps), steps[i])

    assert spec.axis_types is not None  # (WriteSpec sets them)
    axes = tuple(
        Axis(str(name), unit or None, kind)
        for name, unit, kind in zip(spec.axes, spec.units, spec.axis_types, strict=True)
    )
    schema = Schema(
        ndim=spec.ndim,
        bounds=(tuple(float(v) for v in lo), tuple(float(v) for v in hi)),
        axes=axes,
        kind=spec.geometry_type,
        layout=Layout(cells=cells, subcells=subcells),
    )
    tmp = path.parent / f".{path.name}.partial-{uuid.uuid4().hex[:8]}"
    release = None
    try:
        release = _hold(tmp.with_name(f"{tmp.name}.lock"))  # no other write cleans tmp
        gone = clean_leftovers(path.parent)
        if gone:
            names = ", ".join(p.name for p in gone)
            warnings.warn(
                f"removed leftovers of unfinished writes in {path.parent}: {names}", stacklevel=2
            )
        step(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ds = zv.create(str(tmp), schema=schema)
            step(1)
            _add_geometry(ds, spec)
            i = 2
            if plan.n_levels:
                step(i)
                ds.build_pyramid(
                    factors=list(plan.factors),
                    chunk_scale_factors=list(plan.chunk_scale_factors),
                )
                i += 1
            if validate:
                step(i)
                result = ds.validate()
                errors = list(getattr(result, "errors", []) or [])
                if errors:
                    raise WriteError(
                        f"the written store fails validation: {'; '.join(map(str, errors))}"
                    )
                i += 1
        step(i)
        if path.exists():
            raise TargetExistsError(f"{path} appeared while writing; it is left untouched")
        os.rename(tmp, path)
    except BaseException as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(e, (ZVError, KeyboardInterrupt)):
            raise
        if isinstance(e, OSError):  # a full or read-only disk, a permission: name the target
            raise WriteError(f"could not write {path}: {e.strerror or describe(e)}") from e
        if isinstance(e, (ValueError, TypeError)) or type(e).__module__.startswith("zarr_vectors"):
            raise WriteError(f"could not write {path.name}: {e}") from e
        raise
    finally:
        if release is not None:
            release()
    return path


def _add_geometry(ds: Any, spec: WriteSpec) -> None:
    """One ``Dataset.add_*`` call for ``spec``, then groups / group attributes."""
    kind = spec.geometry_type
    vattrs = {k: _vertex_attribute(v) for k, v in spec.vertex_attributes.items()}
    categories: dict[str, list[str]] = {}
    if kind != GeometryType.POINT_CLOUD:  # only the point writer dictionary-encodes text itself
        for k, v in list(vattrs.items()):
            if v.dtype.kind == "O":
                cats, codes = np.unique(v.astype(str), return_inverse=True)
                vattrs[k] = codes.reshape(v.shape).astype(np.int32)
                categories[k] = cats.tolist()
    for k, v in spec.edge_attributes.items():
        if np.asarray(v).dtype.kind in "OUS":
            raise WriteError(f"edge attribute {k!r} holds text: only numbers can be written")
    groups = _dense_groups(spec.groups)
    groups_written = False
    ids: np.ndarray | None
    if kind in PATH_TYPES:
        assert spec.lengths is not None  # (a path spec's: WriteSpec checks them)
        order, ids, oattrs, groups = _number_paths(spec, groups)
        lengths = spec.lengths[order]
        rows = _rows_in_order(spec.lengths, order)
        positions = spec.positions[rows]
        vattrs = {k: v[rows] for k, v in vattrs.items()}
        if kind == GeometryType.LINE:
            if np.any(lengths != 2):
                raise WriteError("every line needs exactly two vertices")
            m = len(lengths)
            ds.add_lines(
                positions.reshape(m, 2, spec.ndim),
                attributes={k: v.reshape(m, 2, *v.shape[1:]) for k, v in vattrs.items()} or None,
                object_attributes=oattrs or None,
            )
        else:
            if np.any(lengths < 1):
                raise WriteError("a path needs at least one vertex")
            cuts = np.cumsum(lengths)[:-1]
            ds.add_polylines(
                np.split(positions, cuts),
                attributes={k: np.split(v, cuts) for k, v in vattrs.items()} or None,
                object_attributes=oattrs or None,
                groups=groups or None,
                streamlines=kind == GeometryType.STREAMLINE,
            )
            groups_written = True
    else:
        ids = None if spec.object_ids is None else np.asarray(spec.object_ids, np.int64)
        oattrs = (
            {k: _object_attribute(v) for k, v in spec.object_attributes.items()}
            if ids is not None
            else {}
        )
        if kind == GeometryType.POINT_CLOUD:
            ds.add_points(
                spec.positions,
                attributes=vattrs or None,
                object_ids=ids,
                object_attributes=oattrs or None,
                groups=groups if ids is not None and groups else None,
            )
            groups_written = True
        elif kind == GeometryType.MESH:
            ds.add_mesh(
                spec.positions,
                np.asarray(spec.faces, np.int64).reshape(-1, 3),
                attributes=vattrs or None,
                object_ids=ids,
                object_attributes=oattrs or None,
            )
        else:
            positions = spec.positions
            edges = np.asarray(spec.edges, np.int64).reshape(-1, 2)
            if kind == GeometryType.SKELETON:
                order = _tree_order(edges, len(positions), ids)
                rank = np.empty(len(order), np.int64)
                rank[order] = np.arange(len(order))
                positions, edges = positions[order], rank[edges]
                vattrs = {k: v[order] for k, v in vattrs.items()}
                ids = None if ids is None else ids[order]
            ds.add_graph(
                positions,
                edges,
                attributes=vattrs or None,
                edge_attributes={k: _vertex_attribute(v) for k, v in spec.edge_attributes.items()}
                or None,
                object_ids=ids,
                object_attributes=oattrs or None,
                tree=kind == GeometryType.SKELETON,
            )
    _write_groups(ds, groups if not groups_written else {}, spec.group_attributes)
    if groups and spec.group_names:
        # one name per group row (rows 0..G-1, see _dense_groups), unnamed rows as the
        # reference writer names them
        names = {int(g): str(n) for g, n in spec.group_names.items()}
        ds.level(0).groups.name_rows([names.get(g, f"group_{g}") for g in range(len(groups))])
    level0: Any = ds.level(0).store if categories else None  # (used when there are some)
    for k, labels in categories.items():
        # the dictionary encoding the point writer uses (codes + categories on the array)
        level0.write_array_meta(
            f"vertex_attributes/{k}",
            {"encoding": "dictionary", "categories": labels, "ordered": False},
        )


def _tree_order(edges: np.ndarray, n: int, object_ids: np.ndarray | None) -> np.ndarray:
    """Skeleton nodes ordered by (object, depth): each tree's root first.

    zarr-vectors 0.9.2 stores only the parents its implicit rule cannot imply; given nodes in
    an order where a root follows another tree's nodes in the same chunk, it reads that root
    back with an invented parent (seen on tests/data/v09/skeleton: 125 edges for 124). Roots
    first avoids it. Depths by pointer jumping (log2(depth) vectorised steps).
    """
    parent = np.full(n, -1, np.int64)
    parent[edges[:, 0]] = edges[:, 1]
    anc = parent.copy()
    dist = (parent >= 0).astype(np.int64)
    for _ in range(64):
        live = anc >= 0
        if not live.any():
            break
        up = anc[live]
        dist[live] = dist[live] + dist[up]
        anc[live] = anc[up]
    else:
        raise WriteError("skeleton edges contain a cycle: write it as a graph")
    obj = np.zeros(n, np.int64) if object_ids is None else object_ids
    return np.lexsort((dist, obj))


def _write_groups(
    ds: Any, groups: dict[int, list[int]], group_attributes: dict[str, np.ndarray]
) -> None:
    if not groups and not group_attributes:
        return
    from zarr_vectors.building import (
        get_resolution_level,
        write_groupings,
        write_groupings_attributes,
    )

    level0 = get_resolution_level(ds.store, 0)
    if groups:
        write_groupings(level0, groups)
    for name, values in group_attributes.items():
        write_groupings_attributes(level0, str(name), _object_attribute(np.asarray(values)))


def _dense_groups(groups: dict[int, np.ndarray]) -> dict[int, list[int]]:
    """Groups keyed 0..G-1 (the writer's rule): missing group ids become empty groups."""
    if not groups:
        return {}
    top = max(int(g) for g in groups)
    out: dict[int, list[int]] = {g: [] for g in range(top + 1)}
    for g, members in groups.items():
        if int(g) >= 0:
            out[int(g)] = distinct(np.asarray(members, np.int64).ravel()).tolist()
    return out


def _number_paths(
    spec: WriteSpec, groups: dict[int, list[int]]
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray], dict[int, list[int]]]:
    """Object order and attributes for a path store.

    The reference writer numbers paths 0..n-1 in the order given. Objects are written in
    ascending id order, so ids 0..n-1 survive exactly; other ids are kept in the object
    attribute :data:`SOURCE_OBJECT_ID` (and groups are renumbered to match).
    """
    assert spec.lengths is not None  # (a path spec's: WriteSpec checks them)
    n = len(spec.lengths)
    ids = (
        np.arange(n, dtype=np.int64)
        if spec.object_ids is None
        else np.asarray(spec.object_ids, np.int64).reshape(-1)
    )
    if len(ids) != n:
        raise WriteError(f"{len(ids)} object ids for {n} paths")
    attrs = {k: _object_attribute(np.asarray(v)) for k, v in spec.object_attributes.items()}
    for k, v in attrs.items():
        if len(v) != n:
            raise WriteError(f"object attribute {k!r} has {len(v)} rows for {n} objects")
    unique = distinct(ids).size == n
    order = np.argsort(ids, kind="stable") if unique else np.arange(n)
    attrs = {k: v[order] for k, v in attrs.items()}
    written = ids[order]
    if not np.array_equal(written, np.arange(n)):
        attrs[SOURCE_OBJECT_ID] = written
    new_groups: dict[int, list[int]] = {}
    if groups:
        if unique:
            for g, members in groups.items():
                m = np.asarray(members, np.int64)
                m = m[np.isin(m, written)]
                new_groups[g] = np.sort(np.searchsorted(written, m)).tolist()
        else:
            warnings.warn(
                "object ids repeat between paths: groups left out", UserWarning, stacklevel=3
            )
    return order, written, attrs, new_groups


def _rows_in_order(lengths: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Vertex rows of the objects in ``order`` (objects stored back to back)."""
    starts = np.cumsum(lengths) - lengths
    new_lengths = lengths[order]
    total = int(new_lengths.sum())
    new_starts = np.cumsum(new_lengths) - new_lengths
    return np.repeat(starts[order] - new_starts, new_lengths) + np.arange(total)


def _vertex_attribute(values: Any) -> np.ndarray:
    """Numbers as they are (bool as uint8); text as an object array of ``str``."""
    array = np.asarray(values)
    if array.dtype.kind == "b":
        return array.astype(np.uint8)
    if array.dtype.kind in "OUS":
        return _text(array).astype(object)
    return array


def _object_attribute(values: Any) -> np.ndarray:
    """Numbers as they are (bool as int8); text as fixed-width ``str`` (the writer cannot
    store object arrays per object)."""
    array = np.asarray(values)
    if array.dtype.kind == "b":
        return array.astype(np.int8)
    if array.dtype.kind in "OUS":
        return _text(array)
    return array


def _text(values: np.ndarray) -> np.ndarray:
    """``str`` array, missing values (``None``, NaN) as ``""``."""
    flat = values.astype(object).ravel()
    missing = np.asarray((flat == None) | (flat != flat), dtype=bool)  # noqa: E711 - elementwise
    flat[missing] = ""
    return flat.astype(str).reshape(values.shape)
