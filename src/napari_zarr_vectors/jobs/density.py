"""Track (or point) density over a whole store, in the store's world placement.

:func:`density_map` counts, on a voxel grid over the store's world box (its bounds placed by
:attr:`Store.placement <napari_zarr_vectors.format.store_metadata.StoreMetadata.placement>`:
RAS mm for a TRK ingest), either

* ``"objects"``: the objects with a vertex in each voxel (each object counted once per
  voxel: dipy's ``density_map`` of streamlines), or
* ``"vertices"``: the vertices in each voxel (points, and any store without objects).

A vertex at world ``w`` lies in voxel ``floor((w - origin) / voxel + 0.5)``: voxel ``i``'s
centre is ``origin + i * voxel``, as the returned affine (voxel index -> world) says, the
convention of NIfTI and dipy. The job runs one task per chunk block (:mod:`.runner`). An
object seen in two blocks in the same voxel is counted once: a block counts by itself the
voxels that lie inside one of its chunks, and hands over the (voxel, object) pairs of the
others, which are merged as a set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..format.world import affine_box
from .blocks import BLOCK_CHUNKS, plan_blocks, read_block, references
from .runner import Cancel, ChunkFailure, Progress, Task, run_tasks

#: most voxels a density grid may have
MAX_VOXELS = 512**3


@dataclass(frozen=True)
class VoxelGrid:
    """``shape`` voxels of edge ``voxel`` whose voxel 0 is centred on ``origin`` (world
    coordinates, store axis order)."""

    origin: np.ndarray
    voxel: np.ndarray
    shape: tuple[int, ...]

    @property
    def affine(self) -> np.ndarray:
        """Voxel index -> world, ``(ndim + 1, ndim + 1)``."""
        n = len(self.shape)
        out = np.eye(n + 1)
        out[:n, :n] = np.diag(self.voxel)
        out[:n, n] = self.origin
        return out

    def index(self, world: np.ndarray) -> np.ndarray:
        return np.floor((world - self.origin) / self.voxel + 0.5).astype(np.int64)


@dataclass
class DensityMap:
    """The image (``shape`` of the grid, store axis order: ``image[i, j, k]`` is the voxel
    centred on ``affine @ (i, j, k, 1)``), what it counts, the vertices that fell outside
    the grid and the chunks that could not be read."""

    image: np.ndarray
    affine: np.ndarray
    level: int
    count: str
    space: str | None
    outside: int = 0
    failures: list[ChunkFailure] = field(default_factory=list)


@dataclass
class DensityPartial:
    """One block's share: counts of voxels inside one chunk, pairs of the others."""

    voxels: np.ndarray
    counts: np.ndarray
    pairs: np.ndarray
    outside: int
    failures: list[ChunkFailure]


def _grid(store: Any, voxel: float | list[float]) -> VoxelGrid:
    if any(t != "space" for t in store.axis_types) or store.ndim not in (2, 3):
        raise ValueError(
            f"{store.path}: a density map needs 2 or 3 space axes (axes {store.axes}, "
            f"types {store.axis_types})"
        )
    v = np.broadcast_to(np.asarray(voxel, np.float64), (store.ndim,)).copy()
    if not np.all(np.isfinite(v) & (v > 0)):
        raise ValueError(f"voxel size must be positive, not {voxel!r}")
    lo, hi = affine_box(store.placement.affine, *store.bounds)
    shape = tuple(int(n) for n in np.floor((hi - lo) / v + 0.5).astype(np.int64) + 1)
    if int(np.prod(shape, dtype=np.float64)) > MAX_VOXELS:
        raise ValueError(
            f"a voxel of {v.tolist()} makes a grid of {shape} voxels over the store's world "
            f"box {lo.tolist()} .. {hi.tolist()}: more than {MAX_VOXELS:,}; use a larger voxel"
        )
    return VoxelGrid(lo, v, shape)


def _interior(store: Any, level: int, grid: VoxelGrid, voxels: np.ndarray) -> np.ndarray:
    """Whether each voxel (``(n, ndim)`` indices) lies inside one chunk of ``level`` (its
    world box taken to the stored space, widened by the loader's slack)."""
    info = store.level(level)
    edge = np.asarray(info.chunk_shape, np.float64)
    inverse = np.linalg.inv(store.placement.affine)
    centre = grid.origin + voxels * grid.voxel
    linear, shift = inverse[:-1, :-1], inverse[:-1, -1]
    mid = centre @ linear.T + shift
    reach = np.full_like(centre, 0.5) * grid.voxel @ np.abs(linear).T
    slack = 1e-5 * edge + 1e-6 * np.abs(mid)
    lo = np.floor((mid - reach - slack - info.chunk_origin) / edge)
    hi = np.floor((mid + reach + slack - info.chunk_origin) / edge)
    return np.all(lo == hi, axis=1)


def density_block(
    store: Any, level: int, chunks: np.ndarray, *, grid: VoxelGrid, count: str, chain: bool
) -> DensityPartial:
    """One task: the density of one block of ``level``'s own data. ``chain``: the level is
    one of an additive chain, whose other levels may hold the same objects in the same
    voxels: every (voxel, object) pair is handed over."""
    block = read_block(store, level, chunks)
    loaded = block.loaded
    empty = np.empty(0, np.int64)
    if not loaded.n_rows:
        return DensityPartial(empty, empty, np.empty((0, 2), np.int64), 0, block.failures)
    world = store.placement.apply(np.asarray(loaded.positions))
    idx = grid.index(world)
    shape = np.asarray(grid.shape)
    inside = np.all((idx >= 0) & (idx < shape), axis=1) & np.all(np.isfinite(world), axis=1)
    flat = np.full(len(idx), -1, np.int64)
    flat[inside] = np.ravel_multi_index(tuple(idx[inside].T), grid.shape)
    outside = int(np.count_nonzero(~inside))
    if count == "vertices":
        voxels, counts = np.unique(flat[inside], return_counts=True)
        return DensityPartial(voxels, counts, np.empty((0, 2), np.int64), outside, block.failures)
    index = store.object_index(level)
    refs = references(loaded, index)
    rows, ids = refs.rows, refs.row_ids(index)
    vox = flat[rows]
    keep = vox >= 0
    pairs = np.unique(np.stack([vox[keep], ids[keep]], axis=1), axis=0)
    voxels, first = np.unique(pairs[:, 0], return_index=True)
    if chain:
        inner = np.zeros(len(voxels), bool)
    else:
        inner = _interior(store, level, grid, np.stack(np.unravel_index(voxels, grid.shape), 1))
    counts = np.diff(np.r_[first, len(pairs)])
    edge_voxels = voxels[~inner]
    at_edge = np.isin(pairs[:, 0], edge_voxels)
    return DensityPartial(voxels[inner], counts[inner], pairs[at_edge], outside, block.failures)


def density_map(
    store: Any,
    voxel: float | list[float],
    *,
    level: int = 0,
    count: str = "auto",
    scheduler: Any = None,
    cancel: Cancel = None,
    progress: Progress | None = None,
    block_chunks: int = BLOCK_CHUNKS,
    num_workers: int | None = None,
) -> DensityMap:
    """The density image of ``level`` (an additive level: its whole chain) on a grid of
    ``voxel`` world units (one size, or one per axis). ``count``: ``"objects"``,
    ``"vertices"``, or ``"auto"`` (objects when the level has an object index). Raises
    ``ValueError`` for a store without 2 or 3 space axes or a grid of more than
    :data:`MAX_VOXELS` voxels."""
    grid = _grid(store, voxel)
    chain = store.refinement_chain(level)
    if count == "auto":
        count = "objects" if store.object_index(level) is not None else "vertices"
    if count not in ("objects", "vertices"):
        raise ValueError(f"count is 'objects', 'vertices' or 'auto', not {count!r}")
    if count == "objects" and any(store.object_index(lv) is None for lv in chain):
        raise ValueError(f"{store.path} level {level} has no objects: count vertices")
    image = np.zeros(int(np.prod(grid.shape)), np.int64)
    pairs: list[np.ndarray] = []
    outside = 0

    def merge(part: DensityPartial) -> None:
        nonlocal outside
        np.add.at(image, part.voxels, part.counts)
        if len(part.pairs):
            pairs.append(part.pairs)
        outside += part.outside
        failures.extend(part.failures)

    failures: list[ChunkFailure] = []
    tasks = [
        Task(density_block, lv, block, {"grid": grid, "count": count, "chain": len(chain) > 1})
        for lv in chain
        for block in plan_blocks(store, lv, block_chunks)
    ]
    failures += run_tasks(
        store,
        tasks,
        merge,
        scheduler=scheduler,
        cancel=cancel,
        progress=progress,
        text=f"density of {store.name} level {level}",
        num_workers=num_workers,
    )
    if pairs:
        edge = np.unique(np.concatenate(pairs), axis=0)
        image += np.bincount(edge[:, 0], minlength=image.size)
    top = int(image.max(initial=0))
    dtype = np.int32 if top <= np.iinfo(np.int32).max else np.int64
    failures.sort(key=lambda f: (f.level, f.chunk))
    return DensityMap(
        image.reshape(grid.shape).astype(dtype),
        grid.affine,
        level,
        count,
        store.placement.space,
        outside,
        failures,
    )
