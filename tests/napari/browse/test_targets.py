"""Browse targets and the open-store registry: a layer leads to the store object its reader
opened (the geometry it shows, for a composite store), never to a second store opened from
its path; both targets implement one interface with one event system."""

from __future__ import annotations

import numpy as np
import pytest

import napari_zarr_vectors as nzv
from napari_zarr_vectors.napari import open_in_viewer
from napari_zarr_vectors.napari.browse.targets import (
    BrowseTarget,
    StaticTarget,
    browse_state_of,
    open_store_of,
    target_for,
)
from napari_zarr_vectors.napari.lod.controller import ZVLayerController, controller_for
from napari_zarr_vectors.napari.lod.viewer_layers import make_layer
from napari_zarr_vectors.napari.npe2.reader import read_zarr_vectors
from napari_zarr_vectors.napari.open_stores import open_store_for

pytest.importorskip("zarr_vectors")
from composite_stores import NODES, write_composite  # noqa: E402

POINTS = np.array([[5.0, 5.0, 5.0], [60.0, 60.0, 60.0], [80.0, 20.0, 40.0]], np.float32)


@pytest.fixture
def opens(monkeypatch):
    """Paths ``nzv.open_store`` opened during the test."""
    seen: list[str] = []
    real = nzv.open_store

    def counting(path, *args, **kwargs):
        seen.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(nzv, "open_store", counting)
    return seen


def kind_of(layer) -> str:
    return layer.metadata["zarr_vectors"]["geometry_type"]


@pytest.mark.gui
def test_static_layers_of_an_added_geometry_lead_to_that_geometry(
    make_napari_viewer, tmp_path, opens
):
    path = tmp_path / "c.zarrvectors"
    write_composite(path, POINTS)
    viewer = make_napari_viewer()
    for data, kwargs, kind in read_zarr_vectors(path, level=0):
        viewer.add_layer(make_layer(data, kwargs, kind))
    assert len(opens) == 1  # the reader's own open
    graph = next(lay for lay in viewer.layers if kind_of(lay) == "graph")
    cloud = next(lay for lay in viewer.layers if kind_of(lay) == "point_cloud")
    store = open_store_of(graph)
    assert store.geometry_type == "graph" and store.levels[0].vertex_count == len(NODES)
    assert open_store_of(cloud).geometry_type == "point_cloud"
    graph_target, cloud_target = target_for(viewer, graph), target_for(viewer, cloud)
    assert isinstance(graph_target, StaticTarget) and graph_target.store is store
    assert graph_target is not cloud_target
    assert all(kind_of(lay) == "graph" for lay in graph_target.layers)
    assert sorted(map(tuple, graph_target.store.read(0).positions.tolist())) == sorted(
        map(tuple, NODES.astype(float).tolist())
    )
    # the browse state reads the object table of the open store, once
    assert browse_state_of(graph_target).table.n_objects == 0
    assert browse_state_of(cloud_target) is browse_state_of(target_for(viewer, cloud))
    assert len(opens) == 1  # nothing opened the store again from its path


@pytest.mark.gui
def test_level_of_detail_layers_lead_to_their_controllers_store(
    make_napari_viewer, tmp_path, opens, qtbot
):
    path = tmp_path / "c.zarrvectors"
    write_composite(path, POINTS)
    viewer = make_napari_viewer()
    open_in_viewer(viewer, path, first_view=False)
    graph = [lay for lay in viewer.layers if kind_of(lay) == "graph"]
    assert graph
    controller = controller_for(graph[0])
    assert isinstance(controller, ZVLayerController)
    assert open_store_of(graph[0]) is controller.store
    assert controller.store.geometry_type == "graph"
    assert target_for(viewer, graph[0]) is controller
    assert open_store_for(graph[0]) is controller.open_store
    assert len(opens) == 1


@pytest.mark.gui
def test_both_targets_implement_the_browse_target_interface(make_napari_viewer, tmp_path):
    path = tmp_path / "c.zarrvectors"
    write_composite(path, POINTS)
    viewer = make_napari_viewer()
    for data, kwargs, kind in read_zarr_vectors(path, level=0):
        viewer.add_layer(make_layer(data, kwargs, kind))
    static = target_for(viewer, viewer.layers[-1])
    controller = open_in_viewer(viewer, path, first_view=False)
    for target in (static, controller):
        members = [m for m in dir(BrowseTarget) if not m.startswith("_")]
        members += list(BrowseTarget.__annotations__)
        assert all(hasattr(target, m) for m in members), target
    assert static.controller is None and controller.controller is controller
    # one event system: a filter on the static target is announced like a controller's
    seen = []
    static.events.refreshed.connect(lambda: seen.append(static.object_filter))
    static.set_object_filter(np.array([1, 2]))
    assert [s.tolist() for s in seen] == [[1, 2]]
