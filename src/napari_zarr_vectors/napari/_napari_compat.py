"""Every use of a napari internal, in one place, each with why no public API serves.

Checked against napari 0.9.2 (the floor in ``pyproject.toml``). Each helper degrades to the
public API when the internal is gone, so a napari upgrade costs speed, not correctness.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from napari.components import LayerList
    from napari.components.overlays import ColorBarOverlay
    from napari.layers import Layer, Points, Tracks, Vectors
    from napari.layers.utils.color_manager import ColorManager
    from napari.utils.events import EventedDict

    from napari import Viewer


def set_points_data_quietly(layer: Points, data: np.ndarray) -> None:
    """Replace a Points layer's data without the public setter's per-point event payload.

    Internal: ``Points._set_data``. The public ``Points.data`` setter only adds event
    emissions carrying a Python tuple of every point index (seconds for 10^6 points); the
    caller emits one data event afterwards (:func:`emit_data_changed`).
    """
    setter = getattr(layer, "_set_data", None)
    if setter is None:
        layer.data = data
    else:
        setter(data)


def unlink_tracks_colour(layer: Tracks) -> None:
    """Point a Tracks layer's colouring at ``track_id`` without recolouring.

    Internal: ``Tracks._color_by``. A data swap resets the features, and the public
    ``color_by`` setter would warn that the current colour-by feature is gone (and recolour
    twice); the caller sets ``color_by`` again once the new features are in.
    """
    if layer.color_by != "track_id":
        layer._color_by = "track_id"


def colour_manager(layer: Layer, channel: str) -> ColorManager | None:
    """The ``ColorManager`` of a Points (``face``, ``border``) or Vectors/Shapes (``edge``)
    channel: the only place napari keeps which feature a colour follows.

    Internal: ``layer._face`` / ``layer._border`` / ``layer._edge``. No public accessor
    tells the colour-by feature of a Points face colour in napari 0.9.
    """
    return getattr(layer, f"_{channel}", None)


def colour_feature(layer: Layer, channel: str) -> str | None:
    """The feature a colour channel follows (``None``: direct colours)."""
    manager = colour_manager(layer, channel)
    props = getattr(manager, "color_properties", None)
    if props is not None:
        return props.name
    # Shapes keep it as ``_edge_color_property`` (internal) instead
    return getattr(layer, f"_{channel}_color_property", "") or None


@contextmanager
def held_back(layer: Layer) -> Iterator[None]:
    """Hold back a layer's re-slicing and every event of it and its colour managers while
    its data, features and colours are swapped (the caller refreshes once after).

    Internals: ``Layer._block_refresh`` (napari re-slices and rebuilds the canvas visual on
    every setter otherwise) and the colour managers' event groups (:func:`colour_manager`).
    """
    with ExitStack() as stack:
        block_refresh = getattr(layer, "_block_refresh", None)
        if block_refresh is not None:
            stack.enter_context(block_refresh())
        stack.enter_context(layer.events.blocker_all())
        for channel in ("face", "border", "edge"):
            events = getattr(colour_manager(layer, channel), "events", None)
            if events is not None and hasattr(events, "blocker_all"):
                stack.enter_context(events.blocker_all())
        yield


def emit_data_changed(layer: Layer) -> None:
    """Emit the one data event listeners expect after a swap (the dims and extent
    bookkeeping, layer controls).

    Internal: ``napari.layers.base._base_constants.ActionType`` (the event's ``action``
    values have no public import).
    """
    try:
        from napari.layers.base._base_constants import ActionType

        changed: Any = ActionType.CHANGED
    except ImportError:  # pragma: no cover - other napari versions
        changed = "changed"
    layer.events.data(value=layer.data, action=changed, data_indices=(), vertex_indices=((),))


@contextmanager
def uniform_symbols_fast() -> Iterator[None]:
    """While a Points layer grows, napari 0.9 re-validates the marker symbol of *every* point
    one by one (~1 us per point, 0.1 s per 100,000 points on the UI thread). All our points
    share one symbol: an array holding one symbol throughout is validated once and
    broadcast; anything else goes to napari's function.

    Internal: a temporary patch of ``napari.layers.points.points.coerce_symbols``, for the
    duration of one data swap on the UI thread.
    """
    try:
        import napari.layers.points.points as points_module
    except ImportError:  # pragma: no cover
        yield
        return
    original = getattr(points_module, "coerce_symbols", None)
    if original is None:  # pragma: no cover - napari changed: nothing to speed up
        yield
        return

    def coerce(symbol: object) -> np.ndarray:
        if isinstance(symbol, np.ndarray) and symbol.dtype == object and symbol.size > 1:
            flat = symbol.ravel().tolist()
            canon = original(np.asarray(flat[:1], dtype=object))[0]  # a Symbol member
            text = str(getattr(canon, "value", canon))
            # napari concatenates existing Symbol members with numpy strings of new points;
            # list.count compares by identity first, then as strings (fast for str and
            # numpy str elements; slow only for Symbol members, i.e. on a first growth)
            if flat.count(text) == len(flat):
                # one shared plain string ("disc"): equal to the Symbol member everywhere
                # napari compares or coerces it, and napari's canvas turns every shown
                # point's symbol into text on each update -- instant for a str
                out = np.empty(symbol.shape, dtype=object)
                out.fill(text)
                return out
        return original(symbol)

    points_module.coerce_symbols = coerce
    try:
        yield
    finally:
        points_module.coerce_symbols = original


@contextmanager
def vectorised_track_validation() -> Iterator[None]:
    """napari 0.9 validates Tracks data with a Python generator over every vertex
    (``all(t >= 0 for t in data[:, 1])``: ~0.1 us per row, 0.1 s per 10^6 rows on the UI
    thread); during one swap the same checks run vectorised.

    Internal: a temporary patch of ``TrackManager._validate_track_data``
    (``napari.layers.tracks._track_utils``), for the duration of one data swap on the UI
    thread; the checks and their messages are napari's.
    """
    try:
        from napari.layers.tracks import _track_utils
    except ImportError:  # pragma: no cover
        yield
        return
    manager: Any = getattr(_track_utils, "TrackManager", None)
    original = getattr(manager, "_validate_track_data", None)
    if original is None:  # pragma: no cover - napari changed: nothing to speed up
        yield
        return

    def validate(self: object, data: np.ndarray) -> np.ndarray:
        _check_track_rows(data)
        return data

    manager._validate_track_data = validate
    try:
        yield
    finally:
        manager._validate_track_data = original


class _LazyTree:
    """A ``scipy.spatial.cKDTree`` of ``data`` built when first used (then the tree itself
    answers every attribute)."""

    def __init__(self, tree_type: type, data: np.ndarray, *args: Any, **kwargs: Any) -> None:
        self._build = (tree_type, data, args, kwargs)
        self._tree: Any = None
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        with self._lock:
            if self._tree is None:
                tree_type, data, args, kwargs = self._build
                self._tree = tree_type(data, *args, **kwargs)
        return getattr(self._tree, name)


@contextmanager
def lazy_track_index() -> Iterator[None]:
    """napari 0.9 builds a k-d tree of every Tracks vertex on each data swap (for napari's
    own hover lookup of the nearest track, ``TrackManager.get_value``): measured on the UI
    thread, 37% of a 190,000-vertex swap (``benchmarks/bench_draw.py``). During one swap
    the tree is made lazily: built on its first query, i.e. when the cursor first hovers
    the layer after the swap, never for a view that is replaced before.

    Internal: ``TrackManager.data`` imports ``scipy.spatial.cKDTree`` when it runs; for
    the duration of one swap on the UI thread that name is a class building the same tree
    on first use (the plugin itself uses no k-d tree).
    """
    try:
        import scipy.spatial as spatial
    except ImportError:  # pragma: no cover - napari requires scipy
        yield
        return
    original = spatial.cKDTree

    def lazy(data: np.ndarray, *args: Any, **kwargs: Any) -> _LazyTree:
        return _LazyTree(original, data, *args, **kwargs)

    spatial.cKDTree = lazy
    try:
        yield
    finally:
        spatial.cKDTree = original


#: what :func:`set_tracks_data_quietly` sets on napari's ``TrackManager`` (napari 0.9)
_TRACK_MANAGER_FIELDS = (
    "_data",
    "_order",
    "_ordered_points_idx",
    "_points",
    "_kdtree",
    "_points_lookup",
    "_id2idxs",
    "_track_end_times",
    "_feature_table",
)


def set_tracks_data_quietly(layer: Tracks, data: np.ndarray, features: dict) -> bool:
    """Put ``data`` (``(N, 4 or 5)`` Tracks rows) and ``features`` into a Tracks layer with
    only the per-vertex work its users need; returns ``False`` (nothing done: use the public
    setters) when napari's internals are not the ones this was written for.

    napari's ``Tracks.data`` setter spends most of a swap's UI-thread time on work a
    level-of-detail swap does not need or does again right after (``benchmarks/bench_draw.py``,
    docs/dev/benchmarks-napari.md): a lexicographic sort and a time sort of every row (our
    rows come sorted by track id, all at one time), a copy of the rows per lookup table, a
    colour map of every vertex by ``track_id`` that the colour-by ``swap`` sets next replaces,
    a features reset, an empty graph rebuilt. Here the same fields get the same values, the
    sorts only when the rows are not in order already, the k-d tree of napari's hover lookup
    lazily (:func:`lazy_track_index`), and the colours are left to the colour-by that
    follows (:func:`ensure_tracks_coloured`). The canvas visual (napari's own single vispy
    ``Line``, ``connect`` mask and a colour per vertex) then takes the rows from the events
    the caller emits once (:func:`.lod.swap.batched`).

    Internals: ``Tracks._manager`` (``TrackManager``) and its fields
    (:data:`_TRACK_MANAGER_FIELDS`), ``TrackManager.build_tracks`` / ``build_graph`` /
    ``_fast_points_lookup``, ``Tracks._track_colors`` and ``Tracks._update_dims``.
    """
    manager = getattr(layer, "_manager", None)
    needed = ("build_tracks", "build_graph", "_fast_points_lookup", *_TRACK_MANAGER_FIELDS)
    if (
        manager is None
        or not all(hasattr(manager, name) for name in needed)
        or not hasattr(layer, "_track_colors")
        or not hasattr(layer, "_update_dims")
    ):
        return False
    from scipy.sparse import coo_matrix
    from scipy.spatial import cKDTree

    data = np.asarray(data)
    _check_track_rows(data)
    ids, times = data[:, 0], data[:, 1]
    step_id, step_t = np.diff(ids), np.diff(times)
    in_order = bool(np.all((step_id > 0) | ((step_id == 0) & (step_t >= 0))))
    order = np.arange(len(data)) if in_order else np.lexsort((times, ids))
    rows = data if in_order else data[order]
    one_time = not len(rows) or float(rows[:, 1].min()) == float(rows[:, 1].max())
    by_time = np.arange(len(rows)) if one_time else np.argsort(rows[:, 1])
    points = rows[:, 1:] if one_time else rows[by_time, 1:]
    manager._order = order
    manager._data = rows
    manager._ordered_points_idx = by_time
    manager._points = points
    manager._kdtree = _LazyTree(cKDTree, points)
    manager._points_lookup = manager._fast_points_lookup(np.round(points[:, 0]).astype(np.uint))
    track_ids = rows[:, 0].astype(np.uint32)
    manager._id2idxs = coo_matrix(
        (np.broadcast_to(1, track_ids.size), (track_ids, np.arange(track_ids.size)))
    ).tocsr()
    manager._track_end_times = None
    manager.build_tracks()
    manager.features = features
    manager.graph = {}
    manager.build_graph()
    layer._track_colors = None  # coloured by the colour-by that follows
    layer._update_dims()
    return True


def ensure_tracks_coloured(layer: Tracks) -> None:
    """Colour a Tracks layer's vertices when :func:`set_tracks_data_quietly` left them
    uncoloured and no colour-by followed (internals: ``Tracks._track_colors``,
    ``Tracks._recolor_tracks``)."""
    if getattr(layer, "_track_colors", True) is None:
        layer._recolor_tracks()


def _check_track_rows(data: np.ndarray) -> None:
    """napari's checks of Tracks rows (``TrackManager._validate_track_data``), vectorised."""
    if data.ndim != 2:
        raise ValueError("track vertices should be a NxD array")
    if data.shape[1] < 4 or data.shape[1] > 5:
        raise ValueError("track vertices should be 4 or 5-dimensional")
    ids = data[:, 0]
    if not np.array_equal(np.floor(ids), ids):
        raise ValueError("track id must be an integer")
    if not np.all(data[:, 1] >= 0):
        raise ValueError("track timestamps must be greater than zero")


def layer_canvas_node(layer: Layer) -> Any | None:
    """The vispy scene node napari draws ``layer`` with (in the first open viewer showing
    it), ``None`` without a Qt canvas holding it.

    Internal: ``Window._qt_viewer.canvas.layer_to_visual[layer].node``. A visual that must
    move, show and go with a layer is a child of that node: napari sets the node's transform
    (the layer's scale, translate, affine and displayed axes) and visibility, and drops it
    when the layer leaves the viewer. napari has no public handle to it.
    """
    for viewer in open_viewers():
        try:
            visual = viewer.window._qt_viewer.canvas.layer_to_visual.get(layer)
        except (AttributeError, RuntimeError):  # a ViewerModel, or a closed window
            continue
        if visual is not None:
            return visual.node
    return None


def tracks_line_node(node: Any) -> Any | None:
    """The line of napari's own Tracks visual (``TracksVisual._subvisuals[0]``: its tails),
    ``None`` when napari's visual is built otherwise (internal)."""
    subvisuals = getattr(node, "_subvisuals", None)
    return subvisuals[0] if subvisuals else None


def copy_gl_state(source: Any, target: Any) -> None:
    """Give vispy visual ``target`` the OpenGL state (blending, depth test) napari set on
    ``source`` for the layer's ``blending`` (internal: a visual's ``_vshare.gl_state``; napari
    picks that state from the layer's position in the layer list, too)."""
    state = getattr(getattr(source, "_vshare", None), "gl_state", None)
    if state:
        target.set_gl_state(**dict(state))


def tracks_view_positions(layer: Tracks) -> np.ndarray:
    """The positions napari's Tracks visual draws, one per layer row in the layer's row
    order: the displayed axes of the rows, reversed to vispy's (x, y, z), 2-D views padded
    with a zero depth (internal: ``Tracks._view_data``; napari's own mapping)."""
    return layer._view_data


def tracks_rows_view_positions(layer: Tracks, rows: np.ndarray) -> np.ndarray:
    """Where napari's Tracks visual of ``layer`` would draw Tracks ``rows`` that the layer
    does not hold (``track_id, [t,] axes...`` in its data order): the layer's displayed axes
    of the rows, reversed to vispy's (x, y, z), 2-D views padded with a zero depth, as
    :func:`tracks_view_positions` gives for the layer's own rows (internal:
    ``Layer._slice_input.displayed``)."""
    displayed = list(layer._slice_input.displayed)
    points = np.asarray(rows, np.float64)[:, 1:][:, displayed][:, ::-1]
    if points.shape[1] == 2:
        points = np.column_stack([points, np.zeros(len(points))])
    return points


def tracks_colours(layer: Tracks, values: dict, n: int) -> np.ndarray:
    """The ``(n, 4)`` colours napari's rule (``Tracks._recolor_tracks``) gives ``n`` rows
    with feature ``values`` in ``layer``'s colour-by: its ``colormaps_dict`` entry on the
    raw values, else its ``colormap`` on the values scaled as the layer's own are (their
    minimum and range); grey without the colour-by's values."""
    from napari.utils.colormaps import AVAILABLE_COLORMAPS

    name = layer.color_by
    v = values.get(name)
    if v is None:
        return np.full((n, 4), 0.7, np.float32)
    v = np.asarray(v, np.float64)
    colormap = layer.colormaps_dict.get(name)
    if colormap is None:
        colormap = AVAILABLE_COLORMAPS[layer.colormap]
        own = np.asarray(layer.features[name], np.float64) if name in layer.features else v
        lo = float(np.min(own)) if len(own) else 0.0
        span = max(float(np.ptp(own)) if len(own) else 0.0, 1e-10)
        v = np.clip((v - lo) / span, 0.0, 1.0)
    return np.asarray(colormap.map(v), np.float32)


@contextmanager
def thumbnail_kept(layer: Layer) -> Iterator[None]:
    """Within the block, ``layer``'s layer-list thumbnail keeps its picture instead of being
    redrawn from every row: napari's Tracks thumbnail copies and maps all rows on each refresh
    (measured: 0.35 of 0.88 s of a 279,288-vertex swap, ``benchmarks/bench_draw.py``), and
    shows a black square for a tractogram anyway.

    Internal: ``Layer._update_thumbnail`` (an instance attribute of that name shadows the
    method for the block).
    """
    if not callable(getattr(layer, "_update_thumbnail", None)):
        yield
        return
    layer._update_thumbnail = lambda: None
    try:
        yield
    finally:
        del layer._update_thumbnail


def open_viewers() -> list[Viewer]:
    """Every open ``napari.Viewer`` (the reader never sees the viewer it reads for).

    Internal: ``napari.Viewer._instances``; falls back to the public ``current_viewer()``
    (which only knows the most recent one).
    """
    try:
        from napari import Viewer, current_viewer
    except ImportError:  # pragma: no cover
        return []
    viewers = list(getattr(Viewer, "_instances", ()))
    if not viewers:
        current = current_viewer()
        viewers = [current] if current is not None else []
    return viewers


def extend_status(
    layer: Layer, extend: Callable[[Layer, dict, npt.ArrayLike | None, dict], dict]
) -> None:
    """Pass what napari's status bar shows for ``layer`` through
    ``extend(layer, status, position, query)`` (``query``: the other keyword arguments of
    ``get_status``: ``view_direction``, ``dims_displayed``, ``world``). Idempotent.

    Internal: napari has no hook to add to a layer's status. ``Layer.get_status`` is what the
    viewer calls on each mouse move (from the Qt viewer's status thread); an instance
    attribute of that name shadows the class's method for this one layer. ``extend`` runs
    off the UI thread while the UI thread may be swapping the layer's data: an error there
    (a row the new data no longer has) leaves napari's own status for that mouse move.
    """
    if "get_status" in vars(layer):
        return
    method = type(layer).get_status
    ref = weakref.ref(layer)  # the layer holds this function: no reference cycle

    def get_status(position: npt.ArrayLike | None = None, **query: object) -> dict:
        target = ref()
        status = method(target, position, **query)
        try:
            return extend(target, status, position, query)
        except (IndexError, KeyError, ValueError):  # a swap under way (see above)
            return status

    layer.get_status = get_status


_THUMBNAIL = "_max_vectors_thumbnail"
_THUMBNAIL_LOCK = threading.Lock()  # layers are also constructed on worker threads


def with_small_vectors_thumbnail(make: Callable[[], Vectors], vectors: int) -> Vectors:
    """``make()`` (it builds a Vectors layer), the layer's layer-list thumbnail drawn from
    at most ``vectors`` vectors while it is built and afterwards.

    Internal: ``Vectors._max_vectors_thumbnail`` (the class attribute is read while the layer
    is constructed). napari draws the thumbnail from up to 1,024 vectors with a Python loop
    per pixel of each, several times while a layer is added; no public setting limits it.
    """
    from napari.layers import Vectors

    if not isinstance(getattr(Vectors, _THUMBNAIL, None), int):
        return make()
    with _THUMBNAIL_LOCK:
        default = getattr(Vectors, _THUMBNAIL)
        setattr(Vectors, _THUMBNAIL, min(vectors, default))
        try:
            layer = make()
        finally:
            setattr(Vectors, _THUMBNAIL, default)
    setattr(layer, _THUMBNAIL, min(vectors, default))
    return layer


@contextmanager
def inserted_unselected(layers: LayerList) -> Iterator[None]:
    """Layers inserted into ``layers`` (a viewer's layer list) within the block do not take
    the selection.

    Internal: ``SelectableEventedList._activate_on_insert``. napari selects every layer it
    inserts, which rebuilds the layer controls shown (~15 ms); ``viewer.add_layer`` has no
    option to keep the selection. Without the internal the layers are selected as napari
    does.
    """
    activate = getattr(layers, "_activate_on_insert", None)
    if not isinstance(activate, bool):
        yield
        return
    layers._activate_on_insert = False
    try:
        yield
    finally:
        layers._activate_on_insert = activate


#: napari's Tracks controls that act on time (tails, heads, ids, completed tracks, the track
#: graph): meaningless for tracks that all sit at t = 0.
TRACKS_TIME_CONTROLS = (
    "_tail_length_slider_control",
    "_head_length_slider_control",
    "_tail_display_checkbox_control",
    "_id_checkbox_control",
    "_graph_checkbox_control",
    "_hide_completed_tracks_checkbox_control",
)


def hide_layer_controls(viewer: Viewer, layer: Layer, controls: tuple[str, ...]) -> int:
    """Hide the rows ``controls`` (attribute names of napari's control wrappers) of
    ``layer``'s layer-controls panel; returns how many widgets were hidden (0: no Qt window,
    no panel yet, or napari renamed them).

    Internal: ``Window._qt_viewer.controls.widgets[layer]`` and its ``_..._control``
    wrappers' ``get_widget_controls()``. napari offers no way to hide a layer's controls.
    """
    try:
        panel = viewer.window._qt_viewer.controls.widgets[layer]
    except (AttributeError, KeyError, RuntimeError):
        return 0
    hidden = 0
    for name in controls:
        wrapper = getattr(panel, name, None)
        if wrapper is None:
            continue
        for row in wrapper.get_widget_controls():
            for widget in row:
                widget.setVisible(False)
                hidden += 1
    return hidden


def canvas_widget(viewer: Viewer) -> Any | None:
    """The Qt widget of ``viewer``'s canvas, ``None`` without a Qt window (or viewer).

    Internal: ``Window._qt_viewer.canvas.native``. Holding the canvas's repaint for an
    event-loop turn needs its widget; napari exposes no handle to it.
    """
    try:
        return viewer.window._qt_viewer.canvas.native
    except (AttributeError, RuntimeError):  # a ViewerModel, or a closed window
        return None


def main_window(viewer: Viewer) -> Any | None:
    """The Qt main window of ``viewer``, ``None`` without one.

    Internal: ``Window._qt_window``. Closing it (its close button) leaves the layers in the
    viewer, so no public event says the viewer is gone; a Qt event filter on the window
    does.
    """
    try:
        return viewer.window._qt_window
    except (AttributeError, RuntimeError):  # a ViewerModel, or a closed window
        return None


def slider_total_label(viewer: Viewer, axis: int) -> Any | None:
    """The label after dims slider ``axis`` that shows its number of steps, ``None``
    without a Qt window or such a slider.

    Internal: ``Window._qt_viewer.dims.slider_widgets[axis].totslice_label``. napari's slider
    shows a step index only; the world position (with its unit) has no public place there.
    """
    try:
        return viewer.window._qt_viewer.dims.slider_widgets[axis].totslice_label
    except (AttributeError, IndexError, RuntimeError):
        return None


def napari_colour_bar(layer: Layer) -> ColorBarOverlay | None:
    """napari's own colour-bar overlay of ``layer``'s colouring, ``None`` where napari has
    none (Tracks, Shapes, Vectors). Public: ``Points.face_colorbar``, ``layer.colorbar`` of
    Image and Surface."""
    for name in ("face_colorbar", "colorbar"):
        bar = getattr(layer, name, None)
        if bar is not None:
            return bar
    return None


def layer_overlays(layer: Layer) -> EventedDict:
    """The overlays napari draws over ``layer`` (a dict; adding an overlay draws it, tiled
    with napari's own in the canvas corner, hidden with the layer, gone with it).

    Internal: ``Layer._overlays``. napari has no public way to add an overlay to a layer;
    a colour bar over a layer that napari gives none (Tracks, Shapes, Vectors) is one.
    """
    return layer._overlays
