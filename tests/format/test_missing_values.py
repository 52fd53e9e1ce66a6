"""Values by object id with one missing marker per dtype kind (format.missing)."""

from __future__ import annotations

import numpy as np

from napari_zarr_vectors.format.geometry import Geometry, GeometryType
from napari_zarr_vectors.format.missing import missing_mask, missing_value, take_by_id
from napari_zarr_vectors.write.spec import spec_from_geometry

IDS = np.array([2, 0, 5, -1])  # 5 and -1 name no row


def test_floats_miss_as_nan():
    out = take_by_id(np.array([0.5, 1.5, 2.5]), IDS)
    np.testing.assert_array_equal(out[:2], [2.5, 0.5])
    assert np.isnan(out[2:]).all()
    assert missing_mask(out).tolist() == [False, False, True, True]


def test_unsigned_ints_miss_as_their_maximum_never_zero():
    values = np.array([0, 7, 9], np.uint16)
    out = take_by_id(values, IDS)
    assert out.dtype == np.uint16
    assert out.tolist() == [9, 0, 65535, 65535]
    assert missing_mask(out).tolist() == [False, False, True, True]  # 0 is a value


def test_signed_ints_miss_as_their_minimum():
    out = take_by_id(np.array([-1, 0, 3], np.int32), IDS)
    assert out.tolist() == [3, -1, np.iinfo(np.int32).min, np.iinfo(np.int32).min]
    assert missing_mask(out).tolist() == [False, False, True, True]


def test_text_and_booleans_miss_as_none():
    out = take_by_id(np.array(["a", "b", "c"]), IDS)
    assert out.tolist() == ["c", "a", None, None]
    flags = take_by_id(np.array([True, False, True]), IDS)
    assert flags.tolist() == [True, True, None, None]
    assert missing_mask(flags).tolist() == [False, False, True, True]
    assert missing_value(np.dtype(bool)) is None


def test_as_float_and_an_explicit_fill():
    out = take_by_id(np.array([1, 2, 3], np.uint8), IDS, as_float=True)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out[:2], [3.0, 1.0])
    assert np.isnan(out[2:]).all()
    assert take_by_id(np.array([4, 5, 6]), IDS, fill=-1).tolist() == [6, 4, -1, -1]


def test_multichannel_rows_miss_whole():
    values = np.array([[1.0, 2.0], [3.0, 4.0]])
    out = take_by_id(values, np.array([1, 3]))
    assert out.shape == (2, 2)
    assert missing_mask(out).tolist() == [False, True]


def test_all_ids_present_is_plain_indexing():
    values = np.array([10, 20, 30], np.uint8)
    assert take_by_id(values, np.array([2, 2, 0])).tolist() == [30, 30, 10]


def test_a_writer_spec_keeps_the_markers_for_objects_beyond_the_attribute_table():
    geometry = Geometry(
        geometry_type=GeometryType.POINT_CLOUD,
        level=0,
        positions=np.zeros((3, 3)),
        vertex_object_ids=np.array([0, 1, 5]),
    )
    table = {
        "u": np.array([10, 11], np.uint16),
        "i": np.array([3, 4], np.int32),
        "f": np.array([1.5, 2.5]),
        "name": np.array(["a", "b"]),
        "flag": np.array([True, True]),
    }
    spec = spec_from_geometry(geometry, axes=("x", "y", "z"), object_attributes=table)
    np.testing.assert_array_equal(spec.object_table_ids, [0, 1, 5])
    got = spec.object_attributes
    np.testing.assert_array_equal(got["u"], [10, 11, np.iinfo(np.uint16).max])
    np.testing.assert_array_equal(got["i"], [3, 4, np.iinfo(np.int32).min])
    np.testing.assert_array_equal(got["f"], [1.5, 2.5, np.nan])
    assert got["name"].tolist() == ["a", "b", ""] and got["flag"].tolist() == [True, True, False]
    assert missing_mask(got["u"]).tolist() == [False, False, True]
