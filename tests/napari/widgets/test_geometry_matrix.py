"""Every dock and action on every geometry (issue 37): a widget x geometry matrix.

One store per geometry, from real writers and, where the test dependencies ship it, real
data (``tests/realdata.py``, ``tests/corpus.py``): navis' five neurons as skeletons, raw
meshes and their synapses as points, the same meshes Draco-encoded, dipy's tracks300 as
streamlines, a networkx graph, the 0.9.2 fixtures' lines and polylines, tracks300 flattened
to a 2-D store, and cells moving through time. Each geometry gets ONE viewer for all its
cells (opened as a user opens a store, docks added from the plugin's menu entries), shown
in 2-D and in 3-D where the store has three space axes.

Each cell asserts on what a user gets: layer names, rows and objects shown, ids selected,
colours (distinct per object, not black on black), legend and colour-bar text against what
is drawn, the camera against an object's extent. Truth is what the writers were given.
"""

from __future__ import annotations

import contextlib
import gc
import html
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from unittest.mock import patch

import numpy as np
import pytest
from _zv_napari import DATA, layer_colours, map_categories
from _zv_viewer import cursor_at_row, drawn_on_canvas, hover
from test_object_table import assert_fitted, object_box

import napari_zarr_vectors as nzv
from napari_zarr_vectors.format.missing import OBJECT_UNKNOWN
from napari_zarr_vectors.napari import open_in_viewer
from napari_zarr_vectors.napari.browse.region import inside_polygon
from napari_zarr_vectors.napari.browse.selection import DIM_OPACITY, SELECTION_META, selection_for
from napari_zarr_vectors.napari.browse.static_filter import layer_object_ids
from napari_zarr_vectors.napari.browse.targets import (
    MAX_LAYER_NAME,
    OBJECTS_UNKNOWN,
    browse_state_of,
)
from napari_zarr_vectors.napari.colour.bar import bar_label, counted, display_name, object_noun
from napari_zarr_vectors.napari.colour.defaults import categorical_rgba, direction_colormap
from napari_zarr_vectors.napari.colour.live import (
    colour_spec_of,
    colourable_features,
    feature_values,
    greys_unknown_objects,
)
from napari_zarr_vectors.napari.colour.spec import MISSING_COLOUR
from napari_zarr_vectors.napari.layerdata.export import export_selection
from napari_zarr_vectors.napari.layerdata.placement import layer_world_positions
from napari_zarr_vectors.napari.npe2.first_view import set_slab, space_axes
from napari_zarr_vectors.napari.npe2.writer import save_layers
from napari_zarr_vectors.napari.widgets.colour import DIRECTION_LEGEND, UNKNOWN_ROW
from napari_zarr_vectors.napari.widgets.colour_bar import install_colour_bars
from napari_zarr_vectors.napari.widgets.filters import NO_ATTRIBUTES, NO_GROUPS, NO_OBJECTS

pytestmark = pytest.mark.gui

PLUGIN = "napari-zarr-vectors"
TIMEOUT = 30_000
#: Rec. 709 luma of an RGB colour: below this a colour is lost on napari's black canvas
DARK = 0.15
LUMA = np.array([0.2126, 0.7152, 0.0722])


# --------------------------------------------------------------------------------------------
# the stores: one per geometry, written once per session by real writers
# --------------------------------------------------------------------------------------------


@dataclass
class Truth:
    """What a writer was given: each object's positions (store axis order) by object id,
    and its object attributes."""

    objects: dict[int, np.ndarray]
    #: the store's object ids in writer order (the order of ``attributes``' values)
    ids: np.ndarray
    attributes: dict[str, np.ndarray] = field(default_factory=dict)
    groups: dict[int, list[int]] = field(default_factory=dict)
    #: how far a stored vertex may be from its input (Draco quantisation)
    tolerance: float = 1e-3

    @property
    def n_vertices(self) -> int:
        return int(sum(len(v) for v in self.objects.values()))


def _by_id(
    store_path: Path,
    objects: list[np.ndarray],
    attributes: dict | None = None,
    groups: dict | None = None,
    **kw,
) -> Truth:
    """Objects, object attributes and group members fed in writer order, keyed by the ids
    the store gave them (``ids``: the store's ids in writer order)."""
    ids = np.asarray(nzv.open_store(store_path).object_ids(0)).astype(np.int64)
    return Truth(
        {int(i): np.asarray(o, np.float64) for i, o in zip(ids, objects, strict=True)},
        ids=ids,
        attributes={k: np.asarray(v) for k, v in (attributes or {}).items()},
        groups={int(g): sorted(ids[list(m)].tolist()) for g, m in (groups or {}).items()},
        **kw,
    )


def _realdata(path: Path, truth) -> Truth:
    return _by_id(path, truth.objects, truth.object_attributes, truth.groups)


def _v09(name: str) -> tuple[Path, Truth]:
    import json

    path = DATA / "v09" / f"{name}.zarrvectors"
    src = json.loads((DATA / "v09" / "expected" / f"{name}.json").read_text())["input"]
    objects = [np.asarray(p, np.float64) for p in src.get("polylines", src.get("endpoints"))]
    attributes = {k: np.asarray(v) for k, v in src["object_attributes"].items()}
    return path, _by_id(path, objects, attributes, src["groups"])


def _write_2d(path: Path) -> Truth:
    """tracks300 seen from above: each streamline's (x, y), a 2-D 0.9.2 streamline store with
    the text attribute ``hemisphere``."""
    import zarr_vectors as zv

    from realdata import tracks300_streamlines

    lines = [s[:, :2].copy() for s in tracks300_streamlines()]
    every = np.concatenate(lines)
    hemisphere = np.where(np.stack([s.mean(0) for s in lines])[:, 0] > 0, "right", "left")
    lo, hi = np.floor(every.min(0)) - 1, np.ceil(every.max(0)) + 1
    schema = zv.Schema(
        ndim=2,
        bounds=(tuple(map(float, lo)), tuple(map(float, hi))),
        axes=tuple(zv.Axis(name=n, unit="millimeter") for n in "xy"),
        kind="streamline",
        layout=zv.Layout(cells=(4, 4)),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zv.create(str(path), schema=schema).add_polylines(
            lines, object_attributes={"hemisphere": hemisphere}, streamlines=True
        )
    return _by_id(path, lines, attributes={"hemisphere": hemisphere})


def _write_time(path: Path) -> Truth:
    """Twelve cells moving through ten time points, axes (t, x, y, z) in seconds and
    micrometres, with the object attribute ``speed``."""
    import zarr_vectors as zv

    rng = np.random.default_rng(11)
    tracks = []
    for _ in range(12):
        xyz = np.cumsum(rng.normal(0, 3, (10, 3)), axis=0) + rng.uniform(20, 80, 3)
        tracks.append(np.column_stack([np.arange(10.0), xyz]).astype(np.float32))
    speed = np.array(
        [np.linalg.norm(np.diff(t[:, 1:], axis=0), axis=1).mean() for t in tracks], np.float32
    )
    axes = (
        zv.Axis("t", "second", "time"),
        zv.Axis("x", "micrometer"),
        zv.Axis("y", "micrometer"),
        zv.Axis("z", "micrometer"),
    )
    schema = zv.Schema(
        4,
        ((0, 0, 0, 0), (9, 100, 100, 100)),
        axes=axes,
        layout=zv.Layout(cell_size=(10, 50, 50, 50)),
        kind="polyline",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zv.create(str(path), schema=schema).add_polylines(
            tracks, object_attributes={"speed": speed}
        )
    return _by_id(path, tracks, attributes={"speed": speed})


@pytest.fixture(scope="session")
def matrix_stores(
    tmp_path_factory,
    tracks300_store,
    neurons_radius_store,
    meshes_store,
    synapses_store,
    draco_meshes_store,
):
    """``{geometry: (path, Truth)}``: the matrix's stores, written once."""
    pytest.importorskip("DracoPy")
    from corpus import navis_meshes, zv_graph

    folder = tmp_path_factory.mktemp("matrix")
    stores = {
        "points": (synapses_store[0], _realdata(*synapses_store)),
        "lines": _v09("lines"),
        "polylines": _v09("polylines"),
        "streamlines": (tracks300_store[0], _realdata(*tracks300_store)),
        "skeleton": (neurons_radius_store[0], _realdata(*neurons_radius_store)),
        "mesh": (meshes_store[0], _realdata(*meshes_store)),
    }
    draco = draco_meshes_store[0]
    verts, _, ids = navis_meshes()
    # 11-bit quantisation per 10 um chunk: a vertex moves up to ~5 nm
    stores["mesh_draco"] = (
        draco,
        _by_id(draco, [verts[ids == i] for i in np.unique(ids)], tolerance=10.0),
    )
    graph = folder / "graph.zarrvectors"
    source = zv_graph(graph)
    stores["graph"] = (graph, _by_id(graph, [source.positions]))
    plane = folder / "tracks300-xy.zarrvectors"
    stores["plane"] = (plane, _write_2d(plane))
    cells = folder / "cells-t.zarrvectors"
    stores["time"] = (cells, _write_time(cells))
    return stores


@dataclass(frozen=True)
class Geometry:
    #: napari layer type of the layer the user browses (the store's first data layer)
    kind: str
    #: what the Object table's isolate calls one object
    noun: str
    ndisplays: tuple[int, ...] = (2, 3)


GEOMETRIES: dict[str, Geometry] = {
    "points": Geometry("Points", "points"),
    "lines": Geometry("Vectors", "lines"),
    "polylines": Geometry("Tracks", "polyline"),
    "streamlines": Geometry("Tracks", "streamline"),
    "graph": Geometry("Vectors", "graph"),
    "skeleton": Geometry("Vectors", "skeleton"),
    "mesh": Geometry("Surface", "mesh"),
    "mesh_draco": Geometry("Surface", "mesh"),
    "plane": Geometry("Shapes", "streamline", ndisplays=(2,)),
    "time": Geometry("Tracks", "polyline"),
}


# --------------------------------------------------------------------------------------------
# one viewer per geometry
# --------------------------------------------------------------------------------------------


@dataclass
class Opened:
    name: str
    viewer: object
    target: object
    path: Path
    truth: Truth
    docks: dict = field(default_factory=dict)
    #: the browsed layer's colours and the Colour by legend before any colour was chosen
    opened_colours: tuple[np.ndarray, str] | None = None

    @property
    def layer(self):
        """The store layer the user browses (the first of the geometry's kind)."""
        kind = GEOMETRIES[self.name].kind
        return next(lay for lay in self.target.layers if type(lay).__name__ == kind)

    def dock(self, name: str):
        """The plugin's dock ``name``, added from its menu entry on first use."""
        if name not in self.docks:
            _, widget = self.viewer.window.add_plugin_dock_widget(PLUGIN, name)
            self.docks[name] = getattr(widget, "__wrapped__", widget)
        return self.docks[name]


@pytest.fixture(scope="module")
def _settings(tmp_path_factory):
    """A fresh napari settings profile for the module's viewers (the developer's own is
    neither read nor changed)."""
    import napari.settings as napari_settings

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(napari_settings, "_SETTINGS", None)
        napari_settings.get_settings(tmp_path_factory.mktemp("settings") / "settings.yaml")
        yield


@pytest.fixture(scope="module")
def opened(request, qapp, matrix_stores, _settings):
    """The geometry's store opened in its own viewer (level 0, every object loaded), shared
    by every cell of that geometry; the viewer is closed after its last cell."""
    import napari

    name = request.param
    path, truth = matrix_stores[name]
    with _app_of_its_own(f"matrix-{name}"):
        viewer = napari.Viewer(show=False)
        target = open_in_viewer(viewer, path, lock_level=0, vertex_budget=500_000)
        session = Opened(name, viewer, target, Path(path), truth)
        yield session
        for widget in session.docks.values():
            tasks = [getattr(widget, a, None) for a in ("_job", "_worker", "_rows_job")]
            for job in (t for t in tasks if t is not None):
                job.quit()
        viewer.close()
        gc.collect()


@contextlib.contextmanager
def _app_of_its_own(name: str):
    """napari's application model for one shared viewer, as napari's ``mock_app_model``
    fixture makes one per test: the plugins' actions are registered in it, not in the
    process-wide app (where a second registration, after a test's fixture cleared
    ``_initialize_plugins``' cache, raises)."""
    from app_model import Application
    from napari._app_model._app import NapariApplication, _napari_names
    from napari._qt._qapp_model.qactions import init_qactions
    from napari.plugins import _initialize_plugins

    app = NapariApplication(name)
    app.injection_store.namespace = _napari_names
    _initialize_plugins.cache_clear()
    init_qactions.cache_clear()
    try:
        with patch.object(NapariApplication, "get_app_model", return_value=app):
            yield app
    finally:
        Application.destroy(name)
        _initialize_plugins.cache_clear()
        init_qactions.cache_clear()


def settle(qtbot, target) -> None:
    qtbot.waitUntil(lambda: not target.is_loading, timeout=TIMEOUT)


def show(o: Opened, qtbot, ndisplay: int) -> None:
    """The state every cell starts from: ``ndisplay``, no selection, filter, colour choice
    or derived layer, the whole depth in 2-D, the whole store in view."""
    viewer, target = o.viewer, o.target
    session = browse_state_of(target)
    selection_for(target).clear()
    if session.filters.active:
        session.filters.clear()
        session.apply()
    if session.colour is not None:
        o.dock("Colour by").feature.value = None
    derived = [
        lay
        for lay in viewer.layers
        if lay not in target.layers
        and (lay.metadata.get("zarr_vectors") or {}).get("role") != "bounds"
    ]
    for lay in derived:
        viewer.layers.remove(lay)
    viewer.dims.ndisplay = ndisplay
    if ndisplay == 2:
        set_slab(viewer, space_axes(viewer, target.store), None)
    viewer.reset_view()
    viewer.layers.selection.active = o.layer
    settle(qtbot, target)


def drawn_ids(layer) -> np.ndarray:
    """Object ids the layer draws (shown Points only)."""
    ids = layer_object_ids(layer)
    if type(layer).__name__ == "Points":
        ids = ids[np.asarray(layer.shown, bool)]
    return np.unique(ids)


def all_drawn_ids(target) -> np.ndarray:
    parts = [drawn_ids(lay) for lay in target.layers if layer_object_ids(lay) is not None]
    return np.unique(np.concatenate(parts)) if parts else np.empty(0, np.int64)


def napari_order(o: Opened, xyz: np.ndarray) -> np.ndarray:
    """Store-order positions (x, y, z / t, x, y, z) as napari world rows (z, y, x /
    t, z, y, x): the space axes reversed behind the others."""
    store = o.target.store
    types = getattr(store, "axis_types", None) or ("space",) * store.ndim
    space = [i for i, t in enumerate(types) if t == "space"]
    other = [i for i, t in enumerate(types) if t != "space"]
    return np.asarray(xyz, np.float64)[:, other + space[::-1]]


def displayed_of(o: Opened, xyz: np.ndarray) -> np.ndarray:
    """The two displayed world columns of store-order positions (2-D view)."""
    world = napari_order(o, xyz)
    shift = o.viewer.dims.ndim - world.shape[1]
    return world[:, [d - shift for d in o.viewer.dims.displayed]]


def smallest_object(o: Opened) -> int:
    """The object with the most vertices among the smaller half (a small, real one)."""
    sizes = {k: len(v) for k, v in o.truth.objects.items()}
    order = sorted(sizes, key=sizes.get)
    return int(order[len(order) // 2]) if len(order) > 1 else int(order[0])


def n_objects(o: Opened) -> int:
    return len(o.truth.objects)


def objects_unknown(o: Opened) -> bool:
    """The store does not record which vertex is whose (zarr-vectors 0.9.2 Draco chunks:
    one fragment every object in the chunk names): object-level actions are off."""
    return browse_state_of(o.target).objects_unknown is not None


def unknown_text(o: Opened) -> str:
    """What object-level actions say on a store of unknown objects: why, for this store
    (the Draco store's chunks are Draco-encoded)."""
    text = browse_state_of(o.target).objects_unknown
    assert text is not None and text.startswith(f"{OBJECTS_UNKNOWN}: its ")
    draco = o.name == "mesh_draco"
    assert ("Draco-encoded mesh chunks" in text) == draco, text
    assert ("raw (not Draco-encoded) mesh chunks" in text) == (not draco), text
    return text


def store_vertices(o: Opened) -> int:
    """Vertices the store holds at level 0 (as decoded: Draco reorders and adds some)."""
    return int(nzv.open_store(o.path).read(0).vertex_count)


def drawn_vertices(o: Opened) -> int:
    """Vertices the store's data layers hold (one feature row each)."""
    return sum(len(ids) for ids in map(layer_object_ids, o.target.layers) if ids is not None)


def unknown_row(o: Opened) -> int:
    """A vertex of the browsed layer whose object the store does not record."""
    rows = np.flatnonzero(layer_object_ids(o.layer) == OBJECT_UNKNOWN)
    assert rows.size, "no vertex of unknown object drawn"
    return int(rows[len(rows) // 2])


# --------------------------------------------------------------------------------------------
# the cells
# --------------------------------------------------------------------------------------------


def cell_store_panel(o: Opened, qtbot, ndisplay: int) -> None:
    panel = o.dock("Store panel")
    store = o.target.store
    qtbot.waitUntil(lambda: panel._worker is None, timeout=TIMEOUT)
    text = panel.body.text()
    assert f"— {store.geometry_type}, ZV " in text
    axes_row = next(r for r in text.split("<br>") if r.startswith("<b>Axes:</b> "))
    assert [a.split(" (")[0] for a in axes_row[len("<b>Axes:</b> ") :].split(", ")] == list(
        store.axes
    )
    assert f"{n_objects(o):,}" in text
    assert (OBJECTS_UNKNOWN in text) == objects_unknown(o)
    if objects_unknown(o):  # and why, as true for the store (Draco-encoded or raw)
        assert html.escape(unknown_text(o)) in text, text
    assert f"<b>{store.name}</b>" in panel.header.text() or store.name in panel.header.text()
    shown = panel.view_controls.shown.text()
    assert shown.startswith("all ") and "in view" in shown, shown
    if ndisplay == 3:
        assert panel.view_controls.slice.text() == "3-D view: no slab"
        assert not panel.view_controls.whole_depth.isEnabled()
        return
    # 2-D: the whole depth is what show() set, and the slice names the sliced axis
    controls = panel.view_controls
    sliced = [a for a in space_axes(o.viewer, store) if a not in o.viewer.dims.displayed]
    assert controls.whole_depth.isEnabled() == bool(sliced)
    if not sliced:  # a 2-D store: no space axis to slice, no slab to set
        assert not controls.slab.isEnabled()
        return
    assert controls.whole_depth.isChecked()
    label = o.viewer.dims.axis_labels[sliced[0]]
    assert controls.slice.text().startswith(f"{label} = ")
    # a thin slab draws fewer objects' vertices, the whole depth all of them again
    controls.whole_depth.setChecked(False)
    settle(qtbot, o.target)
    assert not controls.whole_depth.isChecked() and controls.slab.isEnabled()
    assert "(slab " in controls.slice.text()
    controls.whole_depth.setChecked(True)
    settle(qtbot, o.target)
    if objects_unknown(o):  # every vertex drawn again, whoever's it is
        assert drawn_vertices(o) == store_vertices(o)
        return
    assert len(all_drawn_ids(o.target)) == n_objects(o)


def cell_object_table(o: Opened, qtbot, ndisplay: int) -> None:
    table = o.dock("Object table")
    qtbot.waitUntil(lambda: table.model.rows is not None, timeout=TIMEOUT)
    n = n_objects(o)
    assert table.model.rowCount() == n
    assert table.count.text() == f"{n:,} of {n:,} objects"
    ids = table.model.object_ids(np.arange(n))
    assert sorted(ids.tolist()) == sorted(o.truth.objects)
    # search by an id: exactly that row
    oid = smallest_object(o)
    table.search.setText(str(oid))
    table.apply_search()
    found = table.model.object_ids(np.arange(table.model.rowCount())).tolist()
    assert oid in found and all(str(i).startswith(str(oid)) for i in found)
    table.search.setText("")
    table.apply_search()
    if objects_unknown(o):
        return _object_table_unknown(o, table, oid, ndisplay)
    # a row selected: the object lights up on the canvas, in every layer that draws it
    table.select_ids([oid])
    assert table.selected_ids().tolist() == [oid]
    assert table.count.text().endswith("· 1 selected")
    (highlight,) = [lay for lay in o.viewer.layers if SELECTION_META in lay.metadata]
    assert set(np.unique(highlight.features["object_id"]).tolist()) == {oid}
    assert highlight.visible and highlight.blending == "translucent"
    # a click on the canvas on another object selects its row
    other = next(k for k in o.truth.objects if k != oid) if n > 1 else oid
    layer = o.layer
    rows = np.flatnonzero(layer_object_ids(layer) == other)
    position = cursor_at_row(o.viewer, layer, int(rows[len(rows) // 2]))
    view = o.viewer.scene.camera.view_direction if ndisplay == 3 else None
    picked = table.pick(position, list(o.viewer.dims.displayed), view)
    assert picked is not None
    assert table.selected_ids().tolist() == [picked]


def _object_table_unknown(o: Opened, table, oid: int, ndisplay: int) -> None:
    """Objects unknown: the rows are the store's, its object actions are off and say why, a
    row selected lights no vertex up (none is known to be its), a click on a vertex of
    unknown object selects no row."""
    assert table.status.text() == unknown_text(o)
    for button in (table.zoom_button, table.isolate_button, table.export_button):
        assert not button.isEnabled() and button.toolTip() == unknown_text(o)
    table.select_ids([oid])
    assert table.selected_ids().tolist() == [oid]
    lit = [lay for lay in o.viewer.layers if SELECTION_META in lay.metadata and lay.visible]
    lit_ids = [layer_object_ids(lay) for lay in lit]
    assert all(set(np.unique(i).tolist()) <= {oid} for i in lit_ids if i is not None)
    lit_vertices = sum(len(i) for i in lit_ids if i is not None)
    assert lit_vertices == int(np.count_nonzero(layer_object_ids(o.layer) == oid))
    position = cursor_at_row(o.viewer, o.layer, unknown_row(o))
    view = o.viewer.scene.camera.view_direction if ndisplay == 3 else None
    assert table.pick(position, list(o.viewer.dims.displayed), view) is None
    assert table.selected_ids().tolist() == []


def cell_zoom_to(o: Opened, qtbot, ndisplay: int) -> None:
    table = o.dock("Object table")
    qtbot.waitUntil(lambda: table.model.rows is not None, timeout=TIMEOUT)
    oid = smallest_object(o)
    table.select_ids([oid])
    if objects_unknown(o):  # nothing framed: the store does not say where the object is
        camera = (o.viewer.camera.center, o.viewer.camera.zoom)
        assert table.zoom_to() is None
        assert table.status.text() == unknown_text(o)
        assert (o.viewer.camera.center, o.viewer.camera.zoom) == camera
        return
    job = table.zoom_to()
    qtbot.waitUntil(lambda: job.done, timeout=TIMEOUT)
    assert table.status.text() == "framed 1 object"
    lo, hi = (
        object_box(o.viewer, o.truth.objects[oid][:, -3:])
        if o.target.store.ndim >= 3
        else (
            None,
            None,
        )
    )
    if lo is None:  # a 2-D store: (y, x)
        v = o.truth.objects[oid][:, ::-1]
        lo, hi = v.min(0), v.max(0)
    if o.viewer.dims.ndim > len(lo):  # the time axis in front: the current point
        lead = np.asarray(o.viewer.dims.point)[: o.viewer.dims.ndim - len(lo)]
        lo, hi = np.r_[lead, lo[-3:]], np.r_[lead, hi[-3:]]
    assert_fitted(o.viewer, lo, hi)


def cell_isolate(o: Opened, qtbot, ndisplay: int) -> None:
    table = o.dock("Object table")
    qtbot.waitUntil(lambda: table.model.rows is not None, timeout=TIMEOUT)
    oid = smallest_object(o)
    table.select_ids([oid])
    if objects_unknown(o):  # refused, in this dock and in Pick and isolate
        before = len(o.viewer.layers)
        assert table.isolate() == []
        assert table.status.text() == unknown_text(o)
        pick = o.dock("Pick and isolate")
        assert pick.isolate(oid) is None and pick.status.text() == unknown_text(o)
        assert not pick.isolate_button.isEnabled() and not pick.object_id.isEnabled()
        assert len(o.viewer.layers) == before
        return
    jobs = table.isolate()
    assert table.status.text() == "isolating 1 object …"
    qtbot.waitUntil(lambda: all(j is not None and j.done for j in jobs), timeout=TIMEOUT)
    qtbot.waitUntil(lambda: "isolating" not in table.status.text(), timeout=TIMEOUT)
    n = len(o.truth.objects[oid])
    assert table.status.text() == f"isolated 1 object: {n:,} vertices at full resolution"
    isolated = [
        lay
        for lay in o.viewer.layers
        if (lay.metadata.get("zarr_vectors") or {}).get("role") == "isolated"
    ]
    assert isolated
    # named by the object and the part it shows, whole in napari's layer list
    noun = GEOMETRIES[o.name].noun
    names = sorted(lay.name for lay in isolated)
    who = {name.rsplit(" ", 2)[0] for name in names}
    assert len(who) == 1 and who <= {f"#{oid}", f"object {oid}"}, names
    assert any(name.endswith(f" {noun} (isolated)") for name in names), names
    assert all(len(name) <= MAX_LAYER_NAME for name in names), names
    for lay in isolated:
        assert set(np.unique(layer_object_ids(lay)).tolist()) == {oid}
        drawn = layer_colours(lay)
        assert len(drawn) and not np.allclose(drawn[:, :3], 1.0)  # not white
        assert (drawn[:, :3] @ LUMA).min() > DARK, lay.name  # seen on black
    pts = np.concatenate([layer_world_positions(lay)[0] for lay in isolated])
    want = napari_order(o, o.truth.objects[oid])[:, -pts.shape[1] :]
    assert len(np.unique(np.round(pts, 3), axis=0)) == len(np.unique(np.round(want, 3), axis=0))


def cell_export(o: Opened, qtbot, ndisplay: int, tmp_path: Path) -> None:
    table = o.dock("Object table")
    qtbot.waitUntil(lambda: table.model.rows is not None, timeout=TIMEOUT)
    chosen = sorted(o.truth.objects)[:2]
    table.select_ids(chosen)
    job = export_selection(
        table, tmp_path / "chosen.zarrvectors", ids=np.asarray(chosen), pyramid=False
    )
    if objects_unknown(o):  # some objects of it cannot be told from the others
        assert job is None and table.status.text() == f"not exported: {unknown_text(o)}"
        assert not (tmp_path / "chosen.zarrvectors").exists()
        return
    qtbot.waitUntil(lambda: job.done, timeout=TIMEOUT)
    assert table.status.text().startswith(f"exported {len(chosen)} selected object")
    out = nzv.open_store(tmp_path / "chosen.zarrvectors")
    assert out.geometry_type == o.target.store.geometry_type
    assert len(out.object_ids(0)) == len(chosen)
    assert out.read(0).vertex_count == sum(len(o.truth.objects[k]) for k in chosen)


def _box_ids(o: Opened, corners: np.ndarray) -> list[int]:
    return sorted(
        k for k, v in o.truth.objects.items() if inside_polygon(displayed_of(o, v), corners).any()
    )


def _middle_box(o: Opened, fraction: float) -> np.ndarray:
    every = displayed_of(o, np.concatenate(list(o.truth.objects.values())))
    lo, hi = every.min(0), every.max(0)
    mid, half = (lo + hi) / 2, (hi - lo) * fraction / 2
    (y0, x0), (y1, x1) = mid - half, mid + half
    return np.array([[y0, x0], [y0, x1], [y1, x1], [y1, x0]])


def _on_canvas(viewer, corners: np.ndarray) -> np.ndarray:
    out = np.tile(np.asarray(viewer.dims.point, float), (len(corners), 1))
    out[:, list(viewer.dims.displayed)] = corners
    return out


def cell_region_box(o: Opened, qtbot, ndisplay: int) -> None:
    widget = o.dock("Select by region")
    if objects_unknown(o):
        return _region_unknown(o, widget, "box")
    region = widget.draw("box")
    assert region is not None and region.mode == "add_rectangle"
    if ndisplay == 3:  # regions are drawn on the 2-D view: the dock says it switched
        assert o.viewer.dims.ndisplay == 2
        assert widget.status.text() == "Switched to 2-D: regions are drawn on the 2-D view."
        set_slab(o.viewer, space_axes(o.viewer, o.target.store), None)
        settle(qtbot, o.target)
    box = _middle_box(o, 0.5)
    want = _box_ids(o, box)
    region.add_rectangles(_on_canvas(o.viewer, box))
    assert region not in o.viewer.layers
    assert widget.selection.ids.tolist() == want
    assert widget.summary.text() == f"{len(want):,} of {n_objects(o):,} objects selected"
    # show only: the store draws exactly the selection; off: every object again
    widget.show_only.setChecked(True)
    settle(qtbot, o.target)
    assert all_drawn_ids(o.target).tolist() == want
    widget.show_only.setChecked(False)
    settle(qtbot, o.target)
    assert len(all_drawn_ids(o.target)) == n_objects(o)
    # dim the rest: the store fades, the selection is drawn whole over it
    layer = o.layer
    opacity = layer.opacity
    widget.dim_rest.setChecked(True)
    assert layer.opacity == pytest.approx(opacity * DIM_OPACITY)
    qtbot.waitUntil(lambda: widget._worker is not None and widget._worker.done, timeout=TIMEOUT)
    over = [
        lay
        for lay in o.viewer.layers
        if (lay.metadata.get("zarr_vectors") or {}).get("role") == "selected"
    ]
    assert over
    assert set(np.unique(np.concatenate([layer_object_ids(lay) for lay in over])).tolist()) == set(
        want
    )
    widget.dim_rest.setChecked(False)
    assert layer.opacity == pytest.approx(opacity)
    widget.clear()
    assert widget.summary.text().startswith("No objects selected")


def _region_unknown(o: Opened, widget, tool: str) -> None:
    """Objects unknown: no region is drawn (it would select objects by vertices the store
    does not attribute), the tools are off and say why, nothing is selected."""
    assert widget.status.text() == unknown_text(o)
    for button in (widget.box_button, widget.lasso_button, widget.show_only):
        assert not button.isEnabled() and button.toolTip() == unknown_text(o)
    before = len(o.viewer.layers)
    assert widget.draw(tool) is None and len(o.viewer.layers) == before
    outline = np.tile(np.asarray(o.viewer.dims.point, float), (4, 1))
    assert widget.select_region(outline, tool).size == 0
    assert widget.selection.ids.size == 0
    assert widget.status.text() == unknown_text(o)
    assert drawn_vertices(o) == store_vertices(o)


def cell_region_lasso(o: Opened, qtbot, ndisplay: int) -> None:
    widget = o.dock("Select by region")
    if objects_unknown(o):
        return _region_unknown(o, widget, "lasso")
    region = widget.draw("lasso")
    assert region is not None and region.mode == "add_polygon_lasso"
    widget._end_drawing()
    if ndisplay == 3:
        set_slab(o.viewer, space_axes(o.viewer, o.target.store), None)
        settle(qtbot, o.target)
    (y0, x0), _, (y1, x1), _ = _middle_box(o, 0.7)
    triangle = np.array([[y0, x0], [y0, x1], [y1, (x0 + x1) / 2]])
    ids = widget.select_region(_on_canvas(o.viewer, triangle), "lasso")
    assert ids.tolist() == _box_ids(o, triangle)
    assert widget.summary.text() == f"{len(ids):,} of {n_objects(o):,} objects selected"


def _expected_default(layer) -> np.ndarray | None:
    meta = layer.metadata["zarr_vectors"]
    if meta.get("colour_by") == "object_id":
        return categorical_rgba(layer.features["object_id"].to_numpy())
    return None


def _unknown_in_grey(o: Opened, layer, drawn: np.ndarray) -> None:
    """Vertices of unknown object (a store that does not record them) are drawn in the
    legends' "object unknown" grey, the known ones not."""
    unknown = layer_object_ids(layer) == OBJECT_UNKNOWN
    assert unknown.any() == objects_unknown(o)
    grey = np.isclose(drawn, MISSING_COLOUR, atol=0.01).all(axis=1)
    np.testing.assert_array_equal(grey[unknown], True)


def cell_colour_default(o: Opened, qtbot, ndisplay: int) -> None:
    widget = o.dock("Colour by")
    bars = install_colour_bars(o.viewer)
    layer = o.layer
    default = widget.feature.null_string
    assert default.endswith(" (default)")
    assert widget.feature.native.itemText(0) == default
    drawn = layer_colours(layer)
    assert np.percentile(drawn[:, :3] @ LUMA, 5) > DARK  # the default shows on black
    want = _expected_default(layer)
    if want is not None:  # one colour per object: the legend lists them
        np.testing.assert_allclose(drawn, want, atol=0.02)
        every = np.unique(layer.features["object_id"].to_numpy())
        ids = every[every != OBJECT_UNKNOWN]  # an object the store does not record: no id
        text = widget.legend.text()
        assert (
            f"each of the {counted(len(ids), object_noun(layer))} loaded in its own colour" in text
        )
        assert (UNKNOWN_ROW in text) == objects_unknown(o), text
        assert str(OBJECT_UNKNOWN) not in text
        _unknown_in_grey(o, layer, drawn)
        first = ids[:20]  # neighbouring ids get distinct colours
        rows = layer.features["object_id"].to_numpy()
        per_object = {tuple(np.round(drawn[rows == i][0], 2)) for i in first}
        assert len(per_object) == len(first)
    bars.refresh()
    if layer in bars.shown:  # a default by a value: the bar says which
        assert bars.titles.text.startswith(default.removesuffix(" (default)"))
    else:
        assert not bars.titles.visible or layer not in bars.shown


def cell_colour_restore(o: Opened, qtbot, ndisplay: int) -> None:
    """An attribute chosen, then "(default)": the layer draws the colours it opened with
    again, and the legend says so."""
    widget = o.dock("Colour by")
    layer = o.layer
    if o.opened_colours is None:  # before any cell chose a colour: the opening colours
        o.opened_colours = (layer_colours(layer).copy(), widget.legend.text())
    colours, legend = o.opened_colours
    np.testing.assert_allclose(layer_colours(layer), colours, atol=1e-6)
    default = (layer.metadata.get("zarr_vectors") or {}).get("colour_by")
    offered = [c for c in widget.feature.choices if c is not None]
    feature = next((c for c in offered if c != default), offered[0])
    mode = "categorical" if feature == default else "auto"  # a choice the default is not
    spec = widget.colour_by(feature, mode=mode)
    assert spec is not None and widget.legend.text() != legend
    widget.feature.value = None
    settle(qtbot, o.target)
    qtbot.waitUntil(lambda: widget.legend.text() == legend, timeout=TIMEOUT)
    np.testing.assert_allclose(layer_colours(layer), colours, atol=1e-6)
    assert (layer.metadata.get("zarr_vectors") or {}).get("colour_by") == default
    assert all(colour_spec_of(lay) is None for lay in o.target.layers)


def cell_colour_by(o: Opened, qtbot, ndisplay: int) -> None:
    """Every attribute the dock offers, each in its automatic mode."""
    widget = o.dock("Colour by")
    bars = install_colour_bars(o.viewer)
    offered = [c for c in widget.feature.choices if c is not None]
    assert offered, "nothing to colour by"
    assert "track_id" not in offered
    for feature in offered:
        spec = widget.colour_by(feature)
        assert spec is not None, feature
        layers = widget.layers()
        assert layers, (feature, [colourable_features(lay) for lay in o.target.layers])
        legend = widget.legend.text()
        if feature.endswith("direction"):  # the direction palette: no scale, no bar
            assert legend == f"<b>direction</b>: {DIRECTION_LEGEND}"
            bars.refresh()
            assert not any(lay in bars.shown for lay in layers)
        for layer in layers:
            drawn = layer_colours(layer)
            if feature.endswith("direction"):
                codes = np.asarray(feature_values(layer, feature), np.float64)
                want = direction_colormap().map(codes)
                np.testing.assert_allclose(drawn, want, atol=0.02, err_msg=layer.name)
            elif spec.categorical:
                want = map_categories(spec, feature_values(layer, feature))
                np.testing.assert_allclose(
                    drawn, want, atol=0.02, err_msg=f"{feature} {layer.name}"
                )
                assert len({tuple(np.round(c, 3)) for c in spec.colours}) == len(spec.categories)
            luma = drawn[:, :3] @ LUMA
            assert np.percentile(luma, 5) > DARK, (feature, layer.name, np.percentile(luma, 5))
            if greys_unknown_objects(layer, feature):  # an object-level feature
                _unknown_in_grey(o, layer, drawn)
                assert legend.endswith(f"<br>{UNKNOWN_ROW}"), legend
            else:
                assert UNKNOWN_ROW not in legend, legend
        if feature.endswith("direction"):
            continue
        if spec.categorical:
            assert legend.startswith(f"<b>{display_name(feature)}</b><br>"), legend
            for label, _rgba, _ in spec.legend(None)[:5]:
                assert f"■</span> {label}" in legend, (label, legend)
            bars.refresh()
            assert not any(lay in bars.shown for lay in layers)
        else:
            assert legend.startswith(f"<b>{bar_label(feature)}</b>: "), legend
            bars.refresh()
            shown = [lay for lay in layers if lay in bars.shown]
            assert shown, feature
            assert bars.titles.visible and bars.titles.text.startswith(bar_label(feature))
            assert bars.shown[shown[0]].contrast_limits == pytest.approx(spec.contrast_limits)


def cell_colour_bar_on_canvas(o: Opened, qtbot, ndisplay: int) -> None:
    """A value puts a bar on the canvas, titled with the attribute and the range drawn; a
    text attribute asked for as a value is drawn by its categories (no bar)."""
    widget = o.dock("Colour by")
    bars = install_colour_bars(o.viewer)
    offered = [c for c in widget.feature.choices if c is not None]
    texts = [c for c in offered if widget._values(c).dtype.kind not in "iufb"]
    numbers = [c for c in offered if c not in texts and c not in ("object_id", "group_id")]
    feature = (numbers or ["object_id"])[0]
    spec = widget.colour_by(feature, mode="continuous")
    assert not spec.categorical
    layer = next(lay for lay in widget.layers() if lay in o.target.layers)
    qtbot.waitUntil(lambda: layer in bars.shown, timeout=TIMEOUT)
    assert bars.shown[layer].label == bar_label(feature)
    assert bars.shown[layer].contrast_limits == pytest.approx(spec.contrast_limits)
    assert bars.titles.text.split("\n")[0] == bar_label(feature)
    qtbot.waitUntil(lambda: drawn_on_canvas(o.viewer, layer), timeout=TIMEOUT)
    for text in texts:
        spec = widget.colour_by(text, mode="continuous")
        assert spec.categorical and widget.mode.value == "categorical", text
        want = map_categories(spec, feature_values(layer, text))
        np.testing.assert_allclose(layer_colours(layer), want, atol=0.02, err_msg=text)
        qtbot.waitUntil(lambda: layer not in bars.shown, timeout=TIMEOUT)


def cell_pick_hover(o: Opened, qtbot, ndisplay: int) -> None:
    pick = o.dock("Pick and isolate")
    layer = o.layer
    if objects_unknown(o):
        return _pick_unknown(o, pick, ndisplay)
    ids = layer_object_ids(layer)
    for oid in sorted(set(np.unique(ids).tolist()))[:: max(1, n_objects(o) // 3)][:3]:
        rows = np.flatnonzero(ids == oid)
        row = int(rows[len(rows) // 2])
        position = cursor_at_row(o.viewer, layer, row)
        view = o.viewer.scene.camera.view_direction if ndisplay == 3 else None
        hit = pick.pick(position, list(o.viewer.dims.displayed), view)
        assert hit is not None and hit.object_id is not None
        if ndisplay == 2:
            assert hit.object_id == oid  # in a projection the vertex under the cursor
        info = pick.info.text()
        assert f"<b>Object {hit.object_id}</b>" in info, info
        assert "track_id" not in info and "direction" not in info
        assert pick.object_chosen() == hit.object_id
        # the picked vertex is one the writer was given
        xyz = np.asarray(hit.position, np.float64)
        truth = napari_order(o, o.truth.objects[hit.object_id])[:, -len(xyz) :]
        assert np.abs(truth - xyz).max(axis=1).min() <= o.truth.tolerance, xyz
        status = hover(o.viewer, layer, position)
        assert "object " in status["coordinates"], status
        if ndisplay == 2:
            assert (
                f"object {oid} " in status["coordinates"]
                or f"object {oid}" in status["coordinates"]
            )


def _pick_unknown(o: Opened, pick, ndisplay: int) -> None:
    """Objects unknown: a vertex is picked where it is, and Pick and hover say its object is
    not known (no object id is made up); the dock says why it isolates nothing."""
    layer = o.layer
    row = unknown_row(o)
    position = cursor_at_row(o.viewer, layer, row)
    view = o.viewer.scene.camera.view_direction if ndisplay == 3 else None
    hit = pick.pick(position, list(o.viewer.dims.displayed), view)
    assert hit is not None and hit.object_id is None
    info = pick.info.text()
    assert "<b>Object unknown</b>" in info and html.escape(unknown_text(o)) in info, info
    assert pick.object_chosen() is None and pick.status.text() == unknown_text(o)
    xyz = np.asarray(hit.position, np.float64)  # a vertex the writer was given
    every = napari_order(o, np.concatenate(list(o.truth.objects.values())))[:, -len(xyz) :]
    assert np.abs(every - xyz).max(axis=1).min() <= o.truth.tolerance, xyz
    status = hover(o.viewer, layer, position)
    assert "object unknown" in status["coordinates"], status
    assert "object -" not in status["coordinates"], status


def cell_filters(o: Opened, qtbot, ndisplay: int) -> None:
    groups = o.dock("Group filter")
    attrs = o.dock("Object attribute filter")
    n = n_objects(o)
    if o.truth.groups:
        g = sorted(o.truth.groups)[0]
        groups.set_checked([g])
        settle(qtbot, o.target)
        want = o.truth.groups[g]
        assert all_drawn_ids(o.target).tolist() == want
        assert groups.count.text() == f"{len(want):,} of {n:,} objects pass"
        groups.set_checked(None)
        settle(qtbot, o.target)
    else:
        assert groups.message.text() in (NO_GROUPS, NO_OBJECTS), groups.message.text()
    if not o.truth.attributes:
        assert attrs.message.text() in (NO_ATTRIBUTES, NO_OBJECTS), attrs.message.text()
        assert attrs.controls.isHidden()
        return
    assert set(attrs.choose.choices) == set(o.truth.attributes)
    ids = o.truth.ids
    for name in o.truth.attributes:  # every attribute, by its own kind of control
        values = np.asarray(o.truth.attributes[name])
        row = attrs.add_filter(name)
        if row.summary.kind == "categorical":
            first = sorted(set(values.tolist()))[0]
            row.set_values([first])
            want = np.sort(ids[values == first])
        else:
            values = values.astype(np.float64)
            lo, hi = float(values.min()), float(np.median(values))
            row.set_range(lo, hi)
            want = np.sort(ids[(values >= lo) & (values <= hi)])
        settle(qtbot, o.target)
        np.testing.assert_array_equal(all_drawn_ids(o.target), want, err_msg=name)
        passing = (
            f"{len(want):,} of {n:,} objects pass" if len(want) < n else f"all {n:,} objects shown"
        )
        assert attrs.count.text() == passing
        attrs.clear_filters()
        settle(qtbot, o.target)
    assert len(all_drawn_ids(o.target)) == n


def cell_pyramid_qa(o: Opened, qtbot, ndisplay: int) -> None:
    qa = o.dock("Pyramid QA")
    qa.confirm = lambda text: True
    model = qa.model
    assert model is not None
    store = o.target.store
    levels = list(range(len(store.levels)))

    def run(task):
        assert task is not None
        qtbot.waitUntil(lambda: task.done, timeout=TIMEOUT)
        assert task.error is None, task.error
        return task.result

    run(model.refresh_statistics())
    table = qa.stats_box.stats_table
    assert table.verticalHeaderItem(0).text() == "stored vertices"
    stored = [table.item(0, c).text() for c in range(table.columnCount())]
    assert stored == [f"{store.levels[lv].vertex_count:,}" for lv in levels]
    if len(levels) == 1:
        assert "single level" in qa.info_label.text()
        return
    dropped = run(model.list_dropped(0, levels[-1]))
    assert qa.dropped_box is not None
    assert set(np.asarray(dropped).tolist()) <= set(o.truth.objects)
    layers = run(model.add_levels(levels))
    assert len(layers) == len(levels)
    for lv, lay in zip(levels, layers, strict=True):
        kept = int(table.item(1, lv).text().split(" / ")[0].replace(",", ""))
        # a line coarsened to one vertex is kept but has no segment: the note says how many
        collapsed = 0
        if store.geometry_type == "line":
            collapsed = int(np.count_nonzero(store.read(lv).paths.lengths < 2))
        assert len(np.unique(layer_object_ids(lay))) == kept - collapsed
        note = next(part for part in model.status.split("; ") if f"level {lv}: " in part)
        said = f": {kept:,} objects ({collapsed:,} coarsened to one vertex: no segment drawn)"
        assert (said in note) == bool(collapsed), note
    model.remove_levels()


def cell_save(o: Opened, qtbot, ndisplay: int, tmp_path: Path) -> None:
    data = [lay for lay in o.target.layers if len(getattr(lay, "data", ()))]
    if objects_unknown(o):  # every vertex saved, without the objects it cannot tell apart
        with pytest.warns(nzv.ZVUnknownObjectWarning, match="written without objects"):
            saved = save_layers(tmp_path / "saved", data, show_progress=False)
        out = nzv.open_store(saved)
        assert out.geometry_type == o.target.store.geometry_type
        assert out.read(0).vertex_count == store_vertices(o)
        assert len(out.object_ids(0)) <= 1
        return
    out = nzv.open_store(save_layers(tmp_path / "saved", data, show_progress=False))
    assert out.geometry_type == o.target.store.geometry_type
    assert list(out.axes) == list(o.target.store.axes)
    assert len(out.object_ids(0)) == n_objects(o)
    assert out.read(0).vertex_count == o.truth.n_vertices


def cell_dissect(o: Opened, qtbot, ndisplay: int) -> None:
    widget = o.dock("Dissect")
    if objects_unknown(o):  # no region can count objects by vertices nobody owns
        assert widget.dissection is None and widget.count_label.text() == unknown_text(o)
        assert widget.add_region("box") is None
        assert not any(b.isEnabled() for b in widget.add_buttons.values())
        return
    d = widget.dissection
    assert d is not None
    while d.regions:
        widget.region_list.setCurrentRow(0)
        widget.remove_region()
    widget.test_combo.setCurrentText("vertex")
    store = o.target.store
    every = np.concatenate(list(o.truth.objects.values()))
    types = getattr(store, "axis_types", None) or ("space",) * store.ndim
    space = [i for i, t in enumerate(types) if t == "space"]
    xyz = every[:, space]
    centre = np.median(xyz, axis=0)
    size = np.ptp(xyz, axis=0) * 0.3
    spec = widget.add_region("box")
    lo, hi = (np.asarray(b, np.float64) for b in store.bounds)
    whole = [i for i in range(store.ndim) if i not in space]  # a new box spans all time
    np.testing.assert_allclose(spec.center[whole], (lo[whole] + hi[whole]) / 2)
    np.testing.assert_allclose(spec.size[whole], (hi - lo)[whole])
    if whole:  # space-only numbers for a store with time: refused, not drawn wrong
        with pytest.raises(ValueError, match=f"has {len(space)} coordinates"):
            d.update(len(d.regions) - 1, center=centre, size=size)
    center, extent = spec.center.copy(), spec.size.copy()
    center[space], extent[space] = centre, size
    d.update(len(d.regions) - 1, center=center, size=extent)
    qtbot.waitUntil(lambda: not d.counting, timeout=TIMEOUT)
    assert d.result is not None, widget.count_label.text()
    lo, hi = centre - size / 2, centre + size / 2
    want = sorted(
        k
        for k, v in o.truth.objects.items()
        if ((v[:, space] >= lo) & (v[:, space] <= hi)).all(axis=1).any()
    )
    assert d.result.tolist() == want
    assert widget.count_label.text().startswith(
        f"{len(want):,} of {n_objects(o):,} objects selected"
    )
    np.testing.assert_array_equal(selection_for(o.target).ids, want)
    widget.remove_region()


CELLS: dict[str, Callable] = {
    "store_panel": cell_store_panel,
    "object_table": cell_object_table,
    "zoom_to": cell_zoom_to,
    "isolate": cell_isolate,
    "export": cell_export,
    "region_box": cell_region_box,
    "region_lasso": cell_region_lasso,
    "colour_default": cell_colour_default,
    "colour_restore": cell_colour_restore,
    "colour_by": cell_colour_by,
    "colour_bar": cell_colour_bar_on_canvas,
    "pick_hover": cell_pick_hover,
    "filters": cell_filters,
    "pyramid_qa": cell_pyramid_qa,
    "save": cell_save,
    "dissect": cell_dissect,
}

#: cells that do not depend on the view: run once, in 3-D (2-D for 2-D stores)
VIEW_FREE = {"export", "save", "pyramid_qa", "dissect", "colour_by"}

#: cell id -> the reason a cell is known to fail (strict xfail: it must fail until fixed)
KNOWN: dict[str, str] = {}


def _cells():
    for geometry, spec in GEOMETRIES.items():
        for cell in CELLS:
            views = spec.ndisplays[-1:] if cell in VIEW_FREE else spec.ndisplays
            for nd in views:
                name = f"{geometry}-{cell}-{nd}d"
                marks = []
                if name in KNOWN:
                    marks.append(pytest.mark.xfail(strict=True, reason=KNOWN[name]))
                yield pytest.param(geometry, cell, nd, id=name, marks=marks)


@pytest.mark.parametrize(
    ("opened", "cell", "ndisplay"), list(_cells()), indirect=["opened"], scope="module"
)
def test_cell(opened, cell, ndisplay, qtbot, tmp_path):
    show(opened, qtbot, ndisplay)
    fn = CELLS[cell]
    if cell in ("export", "save"):
        fn(opened, qtbot, ndisplay, tmp_path)
    else:
        fn(opened, qtbot, ndisplay)
