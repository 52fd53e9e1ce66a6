"""Store <-> layer coordinates, both ways: the formulas of napari axis order, the layer
placement and their inverse (see ``docs/coordinates.md``), pure numpy, no napari. A store's
placement as one value is :class:`.layerdata.placement.Placement`, built on these.

* napari's first axis is the slowest and its last two axes are the displayed (row, column)
  pair. Non-space store axes (time, channel, ...) lead, in store order, as sliders; space
  axes follow **reversed**: a store ``(x, y, z)`` becomes napari ``(z, y, x)``, which puts
  ``x`` horizontally and ``y`` vertically in 2-D, and ``(t, x, y)`` becomes ``(t, y, x)``
  (:func:`napari_axis_order`).
* Layer ``data`` is in *data units* = store coordinates divided by the layer ``scale``
  (:func:`store_to_layer`); world coordinates are ``data * scale``, through the layer's napari
  ``affine`` when the store has a world placement (:func:`napari_affine`).
* The inverse (:func:`layer_to_world`, :func:`to_store_order`) takes a layer's data back to
  world coordinates in store column order: the placed positions, which is what saving a
  layer writes. A store's placement as one value, both directions for points, boxes and
  layer data, is :class:`.layerdata.placement.Placement`.
* Reversing the space axes is a mirror for 2-D and 3-D stores, so mesh face winding is
  reversed with them (:func:`axis_reversal_is_mirror`, :data:`FLIP_WINDING`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: Face column order that reverses a triangle's winding (the reader mirrors axis order, the
#: writer mirrors it back: see :func:`axis_reversal_is_mirror`).
FLIP_WINDING = [0, 2, 1]


def space_axes(axis_types: Sequence[str]) -> np.ndarray:
    """Store columns whose axis type is ``"space"``, in store order."""
    return np.array([i for i, t in enumerate(axis_types) if t == "space"], dtype=np.int64)


def napari_axis_order(axis_types: Sequence[str]) -> np.ndarray:
    """The store column of each napari axis: the non-space axes (time, channel, ...) first,
    in store order (napari's sliders), then the space axes reversed (``(t, x, y, z)`` ->
    ``(t, z, y, x)``: ``x`` horizontal, ``y`` vertical in 2-D views)."""
    lead = [i for i, t in enumerate(axis_types) if t != "space"]
    return np.array([*lead, *space_axes(axis_types)[::-1].tolist()], dtype=np.int64)


def placed_order(world_order: np.ndarray, affine: np.ndarray | None) -> np.ndarray:
    """The store column of each napari data axis under a store -> world ``affine`` (store
    order): when the affine's linear part is a signed permutation with scales (TrackVis
    LSA -> RAS swaps y and z), napari data axis ``k`` holds the store column that world
    axis ``world_order[k]`` comes from, so the layer's napari affine is diagonal (napari
    slices 2-D views only along axes an affine does not mix); else ``world_order``."""
    order = np.asarray(world_order, np.int64)
    if affine is None:
        return order
    linear = np.asarray(affine, float)[:-1, :-1]
    nonzero = np.abs(linear) > 1e-12 * max(float(np.abs(linear).max()), 1e-300)
    if not (np.all(nonzero.sum(axis=0) == 1) and np.all(nonzero.sum(axis=1) == 1)):
        return order
    source = np.argmax(nonzero, axis=1)  # the store column of each world column
    return source[order]


def napari_affine(
    affine: np.ndarray, world_order: np.ndarray, order: np.ndarray, ndim: int | None = None
) -> np.ndarray:
    """A store-order ``(n + 1, n + 1)`` affine as a layer's napari ``affine``: rows in the
    napari world order (``world_order``), columns in the layer data order (``order``),
    identity on leading axes the layer adds (``ndim`` > n: the hidden time axis of tracks)."""
    n = len(order)
    rows = np.concatenate([np.asarray(world_order, np.int64), [n]])
    cols = np.concatenate([np.asarray(order, np.int64), [n]])
    moved = np.asarray(affine, float)[np.ix_(rows, cols)]
    ndim = n if ndim is None else ndim
    out = np.eye(ndim + 1)
    out[ndim - n :, ndim - n :] = moved
    return out


def store_to_layer(positions: np.ndarray, scale: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Store coordinates (store column order) -> layer data (napari axis ``k`` = store column
    ``order[k]``, in units of ``scale``, store order)."""
    order = np.asarray(order, np.int64)
    positions = np.asarray(positions, dtype=np.float64).reshape(-1, len(order))
    return (positions / np.asarray(scale, dtype=np.float64))[:, order]


def layer_to_world(
    coords: np.ndarray,
    scale: Sequence[float] | np.ndarray | None = None,
    translate: Sequence[float] | np.ndarray | None = None,
    rotate: np.ndarray | None = None,
    shear: np.ndarray | None = None,
    affine: np.ndarray | None = None,
) -> np.ndarray:
    """Layer data -> world coordinates (napari axis order), as napari draws them: ``affine``
    after scale, translate, rotate and shear (the last ``nd`` axes of each, ``nd`` the
    columns of ``coords``: the spatial axes of a Tracks layer's data)."""
    coords = np.asarray(coords, dtype=np.float64)
    nd = coords.shape[1]
    scale = _last(scale, nd, 1.0)
    translate = _last(translate, nd, 0.0)
    plain = (rotate is None or np.allclose(np.asarray(rotate, float), np.eye(nd))) and (
        shear is None or not np.any(np.asarray(shear, float))
    )
    if plain:
        world = coords * scale + translate
    else:
        from napari.utils.transforms import Affine

        inner = Affine(scale=scale, translate=translate, rotate=rotate, shear=shear, ndim=nd)
        matrix = inner.affine_matrix
        world = coords @ matrix[:nd, :nd].T + matrix[:nd, nd]
    if affine is None:
        return world
    outer = np.asarray(affine, float)
    if np.allclose(outer, np.eye(len(outer))):
        return world
    return world @ outer[-nd - 1 : -1, -nd - 1 : -1].T + outer[-nd - 1 : -1, -1]


def to_store_order(values: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Rows in napari axis order (``columns``: the store column of each) -> store column
    order. Columns only: taking world positions to the stored space is
    :meth:`.layerdata.placement.Placement.to_store_points`."""
    return np.asarray(values)[:, np.argsort(np.asarray(columns, np.int64))]


def placement_mirrors(affine: np.ndarray | None, space: np.ndarray) -> bool:
    """Whether a store -> world ``affine`` is a mirror on the ``space`` columns (a negative
    determinant): outward faces stay outward in the world only with their winding flipped."""
    if affine is None:
        return False
    return bool(np.linalg.det(np.asarray(affine, float)[np.ix_(space, space)]) < 0)


def axis_reversal_is_mirror(ndim: int) -> bool:
    """Reversing ``ndim`` (space) axes is ``ndim // 2`` swaps: a mirror when that count is
    odd."""
    return (ndim // 2) % 2 == 1


def _last(values: Sequence[float] | np.ndarray | None, nd: int, default: float) -> np.ndarray:
    """The last ``nd`` of ``values`` (``default`` everywhere when unset or too short)."""
    if values is None:
        return np.full(nd, default)
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    return values[-nd:] if len(values) >= nd else np.full(nd, default)
