"""Geometry types have one home (format.geometry): the enum, the sets every module uses."""

from __future__ import annotations

import pytest

from napari_zarr_vectors.format import assembly, metadata
from napari_zarr_vectors.format.geometry import (
    GEOMETRY_TYPES,
    GRAPH_TYPES,
    PATH_TYPES,
    GeometryType,
)


def test_geometry_types_are_strings_in_the_format_order():
    assert GEOMETRY_TYPES == (
        "point_cloud",
        "line",
        "polyline",
        "streamline",
        "graph",
        "skeleton",
        "mesh",
    )
    assert PATH_TYPES == ("line", "polyline", "streamline")
    assert GRAPH_TYPES == ("graph", "skeleton")
    assert all(type(t) is str for t in GEOMETRY_TYPES + PATH_TYPES + GRAPH_TYPES)


def test_the_enum_compares_hashes_and_prints_as_its_value():
    assert GeometryType.MESH == "mesh"
    assert {"mesh": 1}[GeometryType.MESH] == 1
    assert {GeometryType.LINE: 2}["line"] == 2
    assert f"{GeometryType.POINT_CLOUD}" == "point_cloud"
    assert GeometryType("skeleton") is GeometryType.SKELETON
    assert [t.value for t in GeometryType] == list(GEOMETRY_TYPES)
    with pytest.raises(ValueError):
        GeometryType("polygon")


def test_the_core_and_the_writer_share_the_sets():
    pytest.importorskip("napari_zarr_vectors.write.spec")
    from napari_zarr_vectors.write import spec

    assert metadata.GEOMETRY_TYPES is GEOMETRY_TYPES
    assert spec.GEOMETRY_TYPES is GEOMETRY_TYPES
    assert assembly.PATH_TYPES is PATH_TYPES
    assert spec.PATH_TYPES is PATH_TYPES
