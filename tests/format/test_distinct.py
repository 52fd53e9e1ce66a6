import numpy as np
import pytest

from napari_zarr_vectors.format.distinct import distinct

RNG = np.random.default_rng(7)
CASES = {
    "int64": RNG.integers(-50, 50, 1000),
    "uint16": RNG.integers(0, 9, 300).astype(np.uint16),
    "int32 2-D": RNG.integers(0, 20, (30, 4)).astype(np.int32),
    "bool": RNG.random(50) > 0.5,
    "one": np.array([3]),
    "empty": np.empty(0, np.int64),
    "float with NaN": np.array([2.0, np.nan, 1.0, np.nan, 2.0]),
    "strings": np.array(["b", "a", "b"]),
    "list": [5, 1, 5, 3],
}


@pytest.mark.parametrize("name", CASES)
def test_distinct_is_numpy_unique(name):
    values = CASES[name]
    got, want = distinct(values), np.unique(values)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_distinct_does_not_change_its_input():
    values = np.array([3, 1, 3, 2])
    distinct(values)
    np.testing.assert_array_equal(values, [3, 1, 3, 2])
