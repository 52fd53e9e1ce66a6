"""Box tests of a chunk's rows that know the rows' extent: only the sides that cut it."""

from __future__ import annotations

import numpy as np

from napari_zarr_vectors.format.query import column_extremes, inside_box, inside_box_within


def _rows(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rows = rng.uniform(200, 400, (5000, 3)).astype(np.float32)
    rows[rng.integers(0, 5000, 7), rng.integers(0, 3, 7)] = np.nan
    rows[rng.integers(0, 5000, 3), 1] = np.inf
    return rows


def test_inside_box_within_agrees_with_inside_box_for_every_kind_of_cut() -> None:
    rows = _rows(5)
    extent = column_extremes(rows)
    assert np.isnan(extent[0]).any()  # NaN rows: every side is tested
    boxes = [
        ((150, 150, 150), (450, 450, 450)),  # around the rows
        ((267.9, 150, 150), (450, 450, 332.1)),  # cuts two sides
        ((250, 250, 250), (350, 350, 350)),  # cuts every side
        ((500, 0, 0), (600, 600, 600)),  # beside them
    ]
    for lo, hi in boxes:
        lo, hi = np.array(lo, float), np.array(hi, float)
        want = inside_box(rows, lo, hi)
        got = inside_box_within(rows, lo, hi, extent)
        got = np.full(len(rows), got) if isinstance(got, bool) else got
        np.testing.assert_array_equal(got, want)


def test_rows_whose_extent_is_inside_or_beside_the_box_are_not_tested() -> None:
    rows = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    extent = column_extremes(rows)
    assert inside_box_within(rows, np.array([0.0, 0.0]), np.array([5.0, 5.0]), extent) is True
    assert inside_box_within(rows, np.array([3.5, 0.0]), np.array([5.0, 5.0]), extent) is False
    assert inside_box_within(rows, np.array([2.0, 0.0]), np.array([5.0, 5.0]), extent).tolist() == [
        False,
        True,
    ]
    # an unknown extent: every row tested
    assert inside_box_within(rows, np.array([0.0, 0.0]), np.array([5.0, 5.0]), None).tolist() == [
        True,
        True,
    ]
