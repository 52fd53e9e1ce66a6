"""3-D regions for dissection: :class:`Box`, :class:`Sphere` and :class:`Plane` (napari-free).

A region lives in a store's coordinates (store axis order, store units: ``space="store"``)
or in the world the store's ``crs`` places them in (``space="world"``,
:attr:`.store_metadata.StoreMetadata.placement`). Every test is closed (a point on the
surface is inside) and vectorised over many points, segments or boxes:

* :meth:`Region.contains` -- which points lie inside;
* :meth:`Region.meets_segments` -- which segments ``a -> b`` meet it (a segment that passes
  through a box or sphere without a vertex inside it meets it);
* :meth:`Region.meets_boxes` -- which axis-aligned boxes it meets (used to find the chunks
  a region can reach).

A :class:`Plane` is the slab of its ``thickness`` around it (``0``: the plane itself): a
segment meets it when its ends lie on both sides (or on it), a vertex is inside when it lies
in the slab.

:func:`.select.select_objects` combines regions into a selection of a store's objects.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: the spaces a region may be given in
SPACES = ("store", "world")

#: :meth:`Region.meets_sweeps` keeps a sweep whose ``t`` interval is empty by less than this
#: (the rounding of its divisions: it may keep too many, never too few)
SWEEP_SLACK = 1e-9

#: the most bisection steps of :meth:`Sphere.meets_sweeps` (a sweep left undecided after
#: them is kept)
SWEEP_STEPS = 60


def _size(value: float, what: str) -> float:
    """A finite number >= 0 (a radius, a thickness)."""
    out = float(value)
    if not np.isfinite(out) or out < 0:
        raise ValueError(f"{what} must be a finite number >= 0, not {value!r}")
    return out


def _vector(values: Sequence[float] | np.ndarray, what: str) -> np.ndarray:
    out = np.asarray(values, dtype=np.float64).reshape(-1)
    if out.size == 0 or not np.all(np.isfinite(out)):
        raise ValueError(f"{what} must be finite numbers, not {np.asarray(values).tolist()}")
    return out


class Region:
    """The base of the regions: the tests every region implements. ``space`` is
    ``"store"`` (store order and units) or ``"world"`` (the placement the store's ``crs``
    gives)."""

    space: str

    def __init__(self, space: str, ndim: int) -> None:
        if space not in SPACES:
            raise ValueError(f"space must be one of {SPACES}, not {space!r}")
        self.space = space
        self._ndim = ndim

    @property
    def ndim(self) -> int:
        """The number of coordinates (the store's axes)."""
        return self._ndim

    def contains(self, points: np.ndarray) -> np.ndarray:
        """``(N,)`` bool: which rows of the ``(N, ndim)`` points lie inside (closed)."""
        raise NotImplementedError

    def meets_segments(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``(M,)`` bool: which segments from the rows of ``a`` to those of ``b`` meet it."""
        raise NotImplementedError

    def meets_boxes(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """``(K,)`` bool: which closed axis-aligned boxes ``[lo, hi]`` it meets."""
        raise NotImplementedError

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """The closed axis-aligned box holding the region."""
        raise NotImplementedError

    def meets_sweeps(
        self, lo_a: np.ndarray, hi_a: np.ndarray, lo_b: np.ndarray, hi_b: np.ndarray
    ) -> np.ndarray:
        """``(K,)`` bool: whether some segment from a point of the closed box
        ``[lo_a, hi_a]`` to a point of ``[lo_b, hi_b]`` (rows of each; a box may be a point)
        may meet the region: never ``False`` when one does (exact for a box and a plane; a
        sphere is taken as its :meth:`bounds`), and ``False`` for a box with a NaN. The
        points of such segments at ``t`` along them fill the box ``(1 - t) A + t B``; it
        meets :meth:`bounds` for some ``t`` in ``[0, 1]`` when the ``t`` where, on every
        axis, its low side is below the region's high one and its high side above the
        region's low one overlap. Tighter than the box around both (two cells meeting at
        a corner of the region sweep past it)."""
        lo_a, hi_a = _rows(lo_a, self.ndim), _rows(hi_a, self.ndim)
        lo_b, hi_b = _rows(lo_b, self.ndim), _rows(hi_b, self.ndim)
        r_lo, r_hi = self.bounds()
        t_lo, t_hi = np.zeros(len(lo_a)), np.ones(len(lo_a))
        ok = np.isfinite(lo_a).all(axis=1) & np.isfinite(hi_a).all(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            for k in range(self.ndim):
                # lo_a + t (lo_b - lo_a) <= r_hi (sign +1), hi_a + t (hi_b - hi_a) >= r_lo
                # (sign -1): sign t d <= sign room, a bound above t where sign d > 0
                for d, room, sign in (
                    (lo_b[:, k] - lo_a[:, k], r_hi[k] - lo_a[:, k], 1),
                    (hi_b[:, k] - hi_a[:, k], r_lo[k] - hi_a[:, k], -1),
                ):
                    t = room / d
                    ok &= (d != 0) | (sign * room >= 0)
                    np.minimum(t_hi, np.where(sign * d > 0, t, np.inf), out=t_hi)
                    np.maximum(t_lo, np.where(sign * d < 0, t, -np.inf), out=t_lo)
        meets: np.ndarray = ok & (t_lo <= t_hi + SWEEP_SLACK)
        return meets

    def outcodes(self, points: np.ndarray) -> np.ndarray:
        """``(N,)`` uint32 codes (Cohen-Sutherland) of the points against :meth:`bounds`: a
        bit per side they lie beyond, ``0`` when inside. A segment whose two codes share a
        bit cannot meet the region, nor can a point with a code: the quick test that leaves
        few for the exact ones."""
        lo, hi = _thresholds(points.dtype, *self.bounds())
        # built in bytes while the bits fit them (a quarter of the memory moved), then widened
        small = np.dtype(np.uint8 if self.ndim <= 4 else np.uint32)
        code: np.ndarray = np.zeros(len(points), small)
        for k in range(self.ndim):
            col = points[:, k]
            for side, bit in ((col < lo[k], 2 * k), (col > hi[k], 2 * k + 1)):
                np.bitwise_or(code, side.view(np.uint8).astype(small) << small.type(bit), out=code)
        return code.astype(np.uint32, copy=False)

    def contains_coded(self, points: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """:meth:`contains` of ``points`` whose :meth:`outcodes` are ``codes``: only those
        without a code are tested."""
        inside = np.zeros(len(points), bool)
        at = np.flatnonzero(codes == 0)
        inside[at] = self.contains(points[at])
        return inside

    def box_codes(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """``(K,)`` uint32 codes of the closed boxes ``[lo, hi]``, as :meth:`outcodes` of
        points: a bit per side the **whole** box lies beyond. Two boxes sharing a bit lie in
        one half-space outside the region: no segment from a point of one to a point of the
        other meets it."""
        below = np.uint32(sum(1 << (2 * k) for k in range(self.ndim)))
        return (self.outcodes(hi) & below) | (self.outcodes(lo) & ~below)

    def check_ndim(self, ndim: int, store: str) -> None:
        """Raise ``ValueError`` when the region does not have ``ndim`` coordinates."""
        if self.ndim != ndim:
            raise ValueError(
                f"{self!r} has {self.ndim} coordinates, {store} has {ndim} axes "
                "(regions are given in store axis order)"
            )


def _thresholds(dtype: np.dtype, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``lo`` and ``hi`` (float64) as values of ``dtype`` that compare alike with its
    values: the least float32 not below ``lo`` (``x < lo`` exactly when ``x`` is below
    it), the greatest not above ``hi``; float64 for points of any other dtype. Comparing
    float32 columns with float32 values halves what :meth:`Region.outcodes` moves."""
    if dtype != np.float32:
        return np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    with np.errstate(over="ignore"):
        lo32, hi32 = np.asarray(lo, np.float32), np.asarray(hi, np.float32)
    lo32 = np.where(lo32 < lo, np.nextafter(lo32, np.float32(np.inf)), lo32)
    hi32 = np.where(hi32 > hi, np.nextafter(hi32, np.float32(-np.inf)), hi32)
    return lo32.astype(np.float32), hi32.astype(np.float32)


def _rows(points: np.ndarray, ndim: int) -> np.ndarray:
    return np.asarray(points, dtype=np.float64).reshape(-1, ndim)


class Box(Region):
    """The closed axis-aligned box ``[lo, hi]``."""

    def __init__(
        self,
        lo: Sequence[float] | np.ndarray,
        hi: Sequence[float] | np.ndarray,
        space: str = "store",
    ) -> None:
        low, high = _vector(lo, "Box lo"), _vector(hi, "Box hi")
        if low.size != high.size:
            raise ValueError(f"Box lo {low.tolist()} and hi {high.tolist()} differ in length")
        if np.any(low > high):
            raise ValueError(f"Box lo {low.tolist()} exceeds hi {high.tolist()}")
        super().__init__(space, low.size)
        self.lo = low
        self.hi = high

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        return self.lo, self.hi

    def contains(self, points: np.ndarray) -> np.ndarray:
        p = _rows(points, self.ndim)
        inside: np.ndarray = np.all((p >= self.lo) & (p <= self.hi), axis=1)
        return inside

    def meets_segments(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The slab method: the part of ``[0, 1]`` where the segment is inside every
        axis's slab is not empty."""
        a, b = _rows(a, self.ndim), _rows(b, self.ndim)
        d = b - a
        t_in = np.zeros(len(a))
        t_out = np.ones(len(a))
        ok = np.ones(len(a), bool)
        with np.errstate(divide="ignore", invalid="ignore"):
            for k in range(self.ndim):
                flat = d[:, k] == 0
                ok &= ~flat | ((a[:, k] >= self.lo[k]) & (a[:, k] <= self.hi[k]))
                t1 = (self.lo[k] - a[:, k]) / d[:, k]
                t2 = (self.hi[k] - a[:, k]) / d[:, k]
                near = np.where(flat, -np.inf, np.minimum(t1, t2))
                far = np.where(flat, np.inf, np.maximum(t1, t2))
                np.maximum(t_in, near, out=t_in)
                np.minimum(t_out, far, out=t_out)
        return ok & (t_in <= t_out)

    def meets_boxes(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        lo, hi = _rows(lo, self.ndim), _rows(hi, self.ndim)
        meets: np.ndarray = np.all((lo <= self.hi) & (hi >= self.lo), axis=1)
        return meets

    def contains_coded(self, points: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """A point lies in the box exactly when it has no code (its bounds are the box;
        float32 points are compared with float32 values that compare alike)."""
        inside: np.ndarray = codes == 0
        return inside

    def __repr__(self) -> str:
        return f"Box(lo={self.lo.tolist()}, hi={self.hi.tolist()}, space={self.space!r})"


class Sphere(Region):
    """The closed ball of ``radius`` around ``center``."""

    def __init__(
        self, center: Sequence[float] | np.ndarray, radius: float, space: str = "store"
    ) -> None:
        c = _vector(center, "Sphere center")
        super().__init__(space, c.size)
        self.center = c
        self.radius = _size(radius, "Sphere radius")

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        return self.center - self.radius, self.center + self.radius

    def contains(self, points: np.ndarray) -> np.ndarray:
        p = _rows(points, self.ndim) - self.center
        inside: np.ndarray = np.einsum("ij,ij->i", p, p) <= self.radius**2
        return inside

    def meets_segments(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The point of the segment nearest the centre is inside."""
        a, b = _rows(a, self.ndim), _rows(b, self.ndim)
        d = b - a
        ac = self.center - a
        dd = np.einsum("ij,ij->i", d, d)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(dd > 0, np.einsum("ij,ij->i", ac, d) / dd, 0.0)
        t = np.clip(t, 0.0, 1.0)
        near = ac - t[:, None] * d
        meets: np.ndarray = np.einsum("ij,ij->i", near, near) <= self.radius**2
        return meets

    def meets_boxes(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        lo, hi = _rows(lo, self.ndim), _rows(hi, self.ndim)
        gap = np.clip(self.center, lo, hi) - self.center
        meets: np.ndarray = np.einsum("ij,ij->i", gap, gap) <= self.radius**2
        return meets

    def meets_sweeps(
        self, lo_a: np.ndarray, hi_a: np.ndarray, lo_b: np.ndarray, hi_b: np.ndarray
    ) -> np.ndarray:
        """The sweeps that meet the sphere's :meth:`bounds` (:meth:`Region.meets_sweeps`),
        then those whose box at some ``t`` meets the sphere itself. The squared distance
        ``g(t)`` from the centre to the box at ``t`` is convex in ``t`` (the boxes at every
        ``t`` form one convex set) and has a continuous derivative, so a bisection on the
        sign of ``g'`` keeps an interval holding its least value, and the tangents at the
        interval's ends bound that value from below: a sweep is kept once a box it passes
        lies within the radius, dropped once that bound exceeds the radius; after
        :data:`SWEEP_STEPS` steps the rest are kept (never ``False`` when a segment meets
        the sphere)."""
        meets = super().meets_sweeps(lo_a, hi_a, lo_b, hi_b)
        at = np.flatnonzero(meets)
        la, ha = _rows(lo_a, self.ndim)[at], _rows(hi_a, self.ndim)[at]
        dl, dh = _rows(lo_b, self.ndim)[at] - la, _rows(hi_b, self.ndim)[at] - ha
        c = self.center
        scale = 1.0 + self.radius + float(np.abs(c).max(initial=0))
        scale = scale + np.abs(la).max(axis=1, initial=0) + np.abs(dl).max(axis=1, initial=0)
        reach = self.radius**2 + SWEEP_SLACK * scale**2  # (the rounding of the squares)

        def g(t: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            """The squared distance at ``t`` of the sweeps ``k``, and its derivative."""
            above = np.maximum(la[k] + t[:, None] * dl[k] - c, 0.0)  # the box beyond c
            below = np.maximum(c - ha[k] - t[:, None] * dh[k], 0.0)  # c beyond the box
            value = np.einsum("ij,ij->i", above, above) + np.einsum("ij,ij->i", below, below)
            slope = 2 * (np.einsum("ij,ij->i", above, dl[k]) - np.einsum("ij,ij->i", below, dh[k]))
            return value, slope

        every = np.arange(at.size)
        t0, t1 = np.zeros(at.size), np.ones(at.size)
        (g0, s0), (g1, s1) = g(t0, every), g(t1, every)
        # a least value at an end (the slope there points out of [0, 1]): decided by it
        inside = np.minimum(g0, g1) <= reach
        at_end = (s0 >= 0) | (s1 <= 0)
        meets[at[at_end & ~inside]] = False
        open_ = every[~at_end & ~inside]
        for _ in range(SWEEP_STEPS):
            if not open_.size:
                break
            mid = (t0[open_] + t1[open_]) / 2
            gm, sm = g(mid, open_)
            right = sm <= 0  # the least value lies right of mid (or at it)
            for t, gv, sv, side in ((t0, g0, s0, right), (t1, g1, s1, ~right)):
                k = open_[side]
                t[k], gv[k], sv[k] = mid[side], gm[side], sm[side]
            # the tangents at both ends meet at the interval's lower bound of g
            a, b = t0[open_], t1[open_]
            ga, sa, gb, sb = g0[open_], s0[open_], g1[open_], s1[open_]
            with np.errstate(divide="ignore", invalid="ignore"):
                cross = np.clip((gb - ga + sa * a - sb * b) / (sa - sb), a, b)
            bound = np.where(sa < sb, ga + sa * (cross - a), np.maximum(ga, gb))
            met, missed = gm <= reach[open_], bound > reach[open_]
            meets[at[open_[missed & ~met]]] = False
            open_ = open_[~met & ~missed]
        return meets

    def __repr__(self) -> str:
        return f"Sphere(center={self.center.tolist()}, radius={self.radius}, space={self.space!r})"


class Plane(Region):
    """The plane through ``point`` with ``normal`` (any length but zero), or the closed slab
    of ``thickness`` centred on it."""

    def __init__(
        self,
        point: Sequence[float] | np.ndarray,
        normal: Sequence[float] | np.ndarray,
        thickness: float = 0.0,
        space: str = "store",
    ) -> None:
        p, n = _vector(point, "Plane point"), _vector(normal, "Plane normal")
        if p.size != n.size:
            raise ValueError(f"Plane point {p.tolist()} and normal {n.tolist()} differ in length")
        length = float(np.linalg.norm(n))
        if length == 0:
            raise ValueError("Plane normal must not be zero")
        super().__init__(space, p.size)
        self.point = p
        self.normal = n
        self.thickness = _size(thickness, "Plane thickness")
        self._unit = n / length

    def _side(self, points: np.ndarray) -> np.ndarray:
        """Signed distance of each point from the plane."""
        distance: np.ndarray = (_rows(points, self.ndim) - self.point) @ self._unit
        return distance

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Everywhere (a plane is unbounded): :meth:`outcodes` are its sides instead."""
        return np.full(self.ndim, -np.inf), np.full(self.ndim, np.inf)

    def outcodes(self, points: np.ndarray) -> np.ndarray:
        """``1`` below the slab, ``2`` above it, ``0`` in it (exact)."""
        side = self._side(points)
        half = self.thickness / 2
        return (side < -half).astype(np.uint32) | ((side > half).astype(np.uint32) << 1)

    def box_codes(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """``1`` for a box wholly below the slab, ``2`` above it, ``0`` when it meets it."""
        lo, hi = _rows(lo, self.ndim), _rows(hi, self.ndim)
        side = self._side((lo + hi) / 2)
        reach = (hi - lo) / 2 @ np.abs(self._unit)
        half = self.thickness / 2
        below = (side + reach < -half).astype(np.uint32)
        codes: np.ndarray = below | ((side - reach > half).astype(np.uint32) << 1)
        return codes

    def meets_sweeps(
        self, lo_a: np.ndarray, hi_a: np.ndarray, lo_b: np.ndarray, hi_b: np.ndarray
    ) -> np.ndarray:
        """Exact: the two boxes span a range of signed distances that meets the slab's."""
        low, high = [], []
        for lo, hi in ((lo_a, hi_a), (lo_b, hi_b)):
            lo, hi = _rows(lo, self.ndim), _rows(hi, self.ndim)
            side = self._side((lo + hi) / 2)
            reach = (hi - lo) / 2 @ np.abs(self._unit)
            low.append(side - reach)
            high.append(side + reach)
        half = self.thickness / 2
        meets: np.ndarray = (np.minimum(*low) <= half) & (np.maximum(*high) >= -half)
        return meets

    def contains(self, points: np.ndarray) -> np.ndarray:
        inside: np.ndarray = np.abs(self._side(points)) <= self.thickness / 2
        return inside

    def meets_segments(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        sa, sb = self._side(a), self._side(b)
        half = self.thickness / 2
        meets: np.ndarray = (np.minimum(sa, sb) <= half) & (np.maximum(sa, sb) >= -half)
        return meets

    def meets_boxes(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        lo, hi = _rows(lo, self.ndim), _rows(hi, self.ndim)
        centre = (lo + hi) / 2 - self.point
        reach = (hi - lo) / 2 @ np.abs(self._unit)
        meets: np.ndarray = np.abs(centre @ self._unit) <= reach + self.thickness / 2
        return meets

    def __repr__(self) -> str:
        return (
            f"Plane(point={self.point.tolist()}, normal={self.normal.tolist()}, "
            f"thickness={self.thickness}, space={self.space!r})"
        )
