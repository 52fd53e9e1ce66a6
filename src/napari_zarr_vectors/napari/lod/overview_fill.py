"""The overview fill: more whole streamlines than a layer swap can hold, drawn a few at a
time into a picture that stays on screen while the view is still.

A Tracks layer on the fast draw path (:mod:`.line_draw`) holds the streamlines its vertex
budget allows: they are what picking, hover, filters and the Object table see. On a
machine without a GPU that is about one streamline in a hundred of a whole-brain
tractogram, and what limits it is not only the swap: software OpenGL takes ~0.3 s to
rasterise 20,000 overview streamlines in one frame (docs/dev/benchmarks-napari.md), and
~0.1 s for the layer's own smoothed line of ~50,000 vertices. The fill draws the layer's
own line and then the streamlines ranked next (the same stable ranks, so the same
streamlines in the same order as the budget grows) into an offscreen picture of the
canvas's size, one batch per event-loop turn of at most :data:`TURN_SECONDS` of drawing,
and shows that picture in the layer's place in the scene once the view has been still for
:data:`SETTLE_SECONDS` and the layer's own line is in it. While the picture is on screen
the layer's line is not drawn again (it is in the picture), so a frame costs one textured
quad and each turn's new batch reaches the screen at once. When the view moves, or the
layer's line changes (rows, colours, width), the picture no longer matches and is not
shown: the layer's line draws every frame, so the view follows the mouse; when it stops,
the picture is drawn again from its first batch.

The fill's streamlines are drawn, not held in the layer: the layer's features and the Object
table do not list them, but while the picture is on screen picking and hover find those in
it (:func:`rows_on_screen`). They take the layer's colours (its colour-by, through
napari's colour rule, :func:`.._napari_compat.tracks_colours`), its visibility, opacity
and displayed axes; a 1-pixel line without smoothing (what the overview's density hides).
The layer's own line goes into the picture as it draws on screen (its colours, width,
smoothing).

vispy and napari internals only: the layer's scene node (:func:`.._napari_compat.layer_canvas_node`),
``SceneCanvas.push_fbo`` / ``pop_fbo``, a visual's ``draw`` and ``Node._visible`` (a batch
is drawn without the frame the ``visible`` setter asks for).
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np

from napari_zarr_vectors.format.distinct import distinct
from napari_zarr_vectors.napari._napari_compat import (
    copy_gl_state,
    layer_canvas_node,
    tracks_colours,
    tracks_rows_view_positions,
)
from napari_zarr_vectors.napari.lod import line_draw
from napari_zarr_vectors.napari.lod.viewer_layers import later
from napari_zarr_vectors.napari.tasks import run_task

if TYPE_CHECKING:
    from collections.abc import Sequence

    from napari.layers import Layer, Tracks

    from napari_zarr_vectors.napari.lod.load_values import LoadResult, ViewShare

T = TypeVar("T")

#: vertices drawn per batch (one batch at least per turn)
BATCH_VERTICES = 15_000
#: vertices of the layer's own (smoothed, wider) line drawn per batch
OWN_BATCH_VERTICES = 6_000
#: drawing per event-loop turn, at most (a batch more only while under it)
TURN_SECONDS = 0.03
#: the view must be still this long before the picture is drawn again
SETTLE_SECONDS = 0.12

_VERT = """
attribute vec2 a_pos;
varying vec2 v_tex;
void main() {
    v_tex = (a_pos + 1.0) / 2.0;
    gl_Position = vec4(a_pos, 0.0, 1.0);
}
"""
_FRAG = """
uniform sampler2D u_tex;
uniform float u_opacity;
varying vec2 v_tex;
void main() {
    vec4 c = texture2D(u_tex, v_tex);
    gl_FragColor = vec4(c.rgb, c.a * u_opacity);
}
"""
#: "over" blending that also accumulates alpha in the offscreen picture (vispy's
#: "translucent" keeps the target's alpha, which is 0 in a cleared picture)
_OVER = ("src_alpha", "one_minus_src_alpha", "one", "one_minus_src_alpha")
#: layer events after which the fill draws in the layer's colours / look
_COLOUR_EVENTS = ("color_by", "colormap")
_LOOK_EVENTS = ("visible", "opacity")


@dataclass(frozen=True)
class FillRows:
    """What a fill draws: Tracks rows (``track_id, [t,] axes...`` in the layer's data
    order, sorted by track id) and the per-row features its colours come from."""

    rows: np.ndarray
    features: dict

    @property
    def tracks(self) -> int:
        return int(len(distinct(self.rows[:, 0]))) if len(self.rows) else 0


class OverviewFill:
    """The fill of one Tracks layer (:func:`show` makes it)."""

    def __init__(self, layer: Tracks, node: Any) -> None:
        from vispy import gloo
        from vispy.scene.visuals import create_visual_node
        from vispy.visuals import Visual

        owner = weakref.ref(self)

        class _PictureVisual(Visual):  # the offscreen picture, drawn over the whole viewport
            def __init__(self) -> None:
                Visual.__init__(self, vcode=_VERT, fcode=_FRAG)
                quad = np.array([[-1, -1], [1, -1], [-1, 1], [1, 1]], np.float32)
                self.shared_program["a_pos"] = quad
                self.shared_program["u_opacity"] = 1.0
                self._draw_mode = "triangle_strip"
                self.set_gl_state(blend=True, depth_test=False, blend_func=_OVER[:2])

            def _prepare_transforms(self, view: Any) -> None:
                return None

            def draw(self) -> None:
                fill = owner()
                if fill is not None and fill.fresh():
                    Visual.draw(self)

        self._gloo = gloo
        self._layer_ref = weakref.ref(layer)
        self.node = node
        self.picture = create_visual_node(_PictureVisual)(parent=node)
        self._fbo: Any = None
        self._size: tuple[int, ...] = (0, 0)
        self._batches: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._fill_lines = _LinePool(node)
        self._made = 0  # fill batches whose line holds them (in the layer's colours now)
        self._own_lines = _LinePool(node)
        self._own: list[Any] = []  # the layer's own line, cut into batches
        self._own_version: int | None = None  # of the line drawing they were cut from
        self._drawn = 0  # batches in the picture: the layer's own first, then the fill's
        self._key: tuple | None = None  # the view the picture was drawn for
        self._moved_at = 0.0
        self._scheduled = False
        self._closed = False
        self._features: dict = {}
        self._rows = np.empty((0, 0))
        self._derived: dict[Hashable, object] = {}
        self._making: set[Hashable] = set()
        self.tracks = 0
        self.vertices = 0
        self.sync_look()
        self._handlers: list[tuple[Any, Any]] = []
        for names, handler in ((_COLOUR_EVENTS, self.recolour), (_LOOK_EVENTS, self.sync_look)):
            for name in names:
                emitter = getattr(layer.events, name, None)
                if emitter is not None:
                    emitter.connect(handler, position="last")
                    self._handlers.append((emitter, handler))

    @property
    def layer(self) -> Tracks | None:
        return self._layer_ref()

    @property
    def complete(self) -> bool:
        """Every batch is in the picture, for the view and the layer's line on screen."""
        return (
            self._drawn == len(self._own) + len(self._batches)
            and self._key == self._view_key()
            and self._own_version == self._line_version()
        )

    # -- data ----------------------------------------------------------------------------
    def set_rows(self, fill: FillRows) -> None:
        """Draw ``fill`` from now on (the picture starts again)."""
        layer = self.layer
        self._clear_lines()
        self._batches = [] if layer is None else _batches(fill.rows)
        self.tracks = fill.tracks
        self.vertices = int(len(fill.rows))
        self._features = fill.features
        self._rows = fill.rows
        self._derived.clear()
        self._restart()

    def derived(self, key: Hashable, make: Callable[[np.ndarray], T]) -> T | None:
        """``make(rows)`` of every row of the fill (what picking derives from them: their
        world positions in a grid), made on a worker (:func:`.tasks.run_task`) the first time
        it is asked for and kept under ``key`` until the rows change; ``None`` until made."""
        if key in self._derived:
            return cast("T", self._derived[key])
        if key not in self._making:
            rows = self._rows
            self._making.add(key)

            def made(value: T) -> None:
                self._making.discard(key)
                if rows is self._rows:  # (not rows drawn since)
                    self._derived[key] = value

            run_task(make, rows, on_result=made, on_error=lambda e: self._making.discard(key))
        return None

    def recolour(self, event: object = None) -> None:
        """The layer's colour-by changed: draw again in its colours."""
        self._clear_lines()
        self._restart()

    def sync_look(self, event: object = None) -> None:
        """The picture takes the layer's visibility and opacity."""
        layer = self.layer
        if layer is not None:
            self.picture.shared_program["u_opacity"] = float(layer.opacity)
            self.picture.visible = bool(layer.visible)

    def _restart(self) -> None:
        self._drawn = 0
        self._key = None
        self._schedule(0.0)

    def _clear_lines(self) -> None:
        self._made = 0
        self._own = []
        self._own_version = None

    def _drawing(self) -> line_draw.LineDrawing | None:
        """The layer's own line drawing, when it is in this fill's node."""
        layer = self.layer
        drawing = line_draw.drawing_of(layer) if layer is not None else None
        return drawing if drawing is not None and drawing.line.parent is self.node else None

    def _line_version(self) -> int | None:
        drawing = self._drawing()
        return None if drawing is None else drawing.version

    # -- drawing -------------------------------------------------------------------------
    def _view_key(self) -> tuple | None:
        """Where the layer's data lands on the canvas now (``None``: not shown)."""
        canvas = self.node.canvas
        layer = self.layer
        if canvas is None or layer is None or not layer.visible:
            return None
        probe = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float64)
        mapped = self.node.get_transform("visual", "render").map(probe)
        return (
            tuple(np.round(mapped, 9).ravel().tolist()),
            tuple(canvas.physical_size),
            tuple(layer._slice_input.displayed),
        )

    def _schedule(self, delay: float) -> None:
        if self._scheduled or self._closed:
            return
        self._scheduled = True
        later(delay, self._turn)

    def fresh(self) -> bool:
        """Whether the picture shows the view and the layer's line on screen (called by
        each frame that draws it or the layer's line; a view that moved is noted, and the
        picture drawn again once it settles)."""
        key = self._view_key()
        version = self._line_version()
        if self._shows(key, version):
            return True
        if version != self._own_version:
            self._schedule(0.0)
            return False
        if key != self._key:
            self._moved_at = time.perf_counter()
        self._schedule(SETTLE_SECONDS)
        return False

    def _shows(self, key: tuple | None, version: int | None) -> bool:
        """Whether the picture is drawn for view ``key`` and line ``version`` (and holds the
        layer's own line at least)."""
        return (
            key is not None
            and key == self._key
            and version == self._own_version
            and self._drawn >= max(len(self._own), 1)
        )

    def rows_on_screen(self) -> FillRows | None:
        """The fill's rows in the picture on screen (the batches drawn so far) and their
        features: what picking and hover see beside the layer's own rows; ``None`` while the
        picture is not shown (the view moved, the layer's line changed)."""
        drawn = self._drawn - len(self._own)
        if drawn <= 0 or not self._shows(self._view_key(), self._line_version()):
            return None
        end = int(self._batches[drawn - 1][2][-1]) + 1
        return FillRows(
            self._rows[:end], {k: np.asarray(v)[:end] for k, v in self._features.items()}
        )

    def _turn(self) -> None:
        """One event-loop turn of drawing: a few batches into the picture (a new picture
        when the view changed), then a frame; again next turn until the picture is whole.
        Waits while the view moves."""
        self._scheduled = False
        layer = self.layer
        canvas = self.node.canvas
        key = self._view_key()
        if self._closed or layer is None or canvas is None or key is None or not self._batches:
            return
        waited = time.perf_counter() - self._moved_at
        if waited < SETTLE_SECONDS:
            self._schedule(SETTLE_SECONDS - waited)
            return
        if key != self._key or self._own_version != self._line_version():
            self._key = key
            self._drawn = 0
            self._cut_own_line()
        total = len(self._own) + len(self._batches)
        if self._drawn >= total:
            return
        self._draw_batches(canvas, layer, time.perf_counter())
        if self._drawn >= len(self._own):  # the picture is on screen: show the new batches
            canvas.update()
        if self._drawn < total:
            self._schedule(0.0)

    def _cut_own_line(self) -> None:
        """The layer's own line as it draws now, cut into batches of whole paths; the
        line is covered (not drawn) while the picture is on screen."""
        self._own = []
        drawing = self._drawing()
        self._own_version = None if drawing is None else drawing.version
        if drawing is None:
            return
        drawing.cover(self.fresh)
        line = drawing.line
        joins = _joins(line)
        self._own = [
            self._own_lines.line(k, line, _part_of(line, joins, a, b))
            for k, (a, b) in enumerate(_cuts(joins, OWN_BATCH_VERTICES))
        ]

    def _draw_batches(self, canvas: Any, layer: Tracks, start: float) -> None:
        gloo = self._gloo
        size = tuple(int(v) for v in canvas.physical_size)
        if self._fbo is None or size != self._size:
            w, h = size
            texture = gloo.Texture2D((h, w, 4), format="rgba", interpolation="nearest")
            self._fbo = gloo.FrameBuffer(color=texture, depth=gloo.RenderBuffer((h, w)))
            self._size = size
            self.picture.shared_program["u_tex"] = texture
        canvas.push_fbo(self._fbo, (0, 0), size)
        try:
            if self._drawn == 0:
                gloo.set_clear_color((0, 0, 0, 0))
                # a frame's last state may leave depth writes off, and clear obeys it: the
                # layer's own line (with its depth test) would then be hidden
                gloo.set_state(depth_mask=True)
                gloo.clear(color=True, depth=True)
            while self._drawn < len(self._own) + len(self._batches):
                _LinePool.draw(self._batch(self._drawn, layer))
                self._drawn += 1
                # the drawing itself, not only its commands, within the turn: software
                # OpenGL rasterises at the next finish, which would be the frame's
                canvas.context.flush_commands()
                gloo.gl.glFinish()
                if time.perf_counter() - start > TURN_SECONDS:
                    break
        finally:
            canvas.pop_fbo()

    def _batch(self, i: int, layer: Tracks) -> Any:
        """The vispy line of batch ``i`` of the picture (the layer's own first)."""
        own = len(self._own)
        return self._own[i] if i < own else self._line(i - own, layer)

    def _line(self, i: int, layer: Tracks) -> Any:
        """Fill batch ``i``'s vispy line (given its rows on first use, in the layer's
        colours now; batches are drawn in order)."""
        if i < self._made:
            return self._fill_lines.lines[i]
        rows, connect, index = self._batches[i]
        pos = np.asarray(tracks_rows_view_positions(layer, rows), np.float32)
        values = {name: np.asarray(v)[index] for name, v in self._features.items()}
        colours = tracks_colours(layer, values, len(rows))
        line = self._fill_lines.line(i, None, {"pos": pos, "connect": connect, "color": colours})
        self._made = i + 1
        return line

    def detach(self) -> None:
        for emitter, handler in self._handlers:
            emitter.disconnect(handler)
        self._handlers.clear()
        drawing = self._drawing()
        if drawing is not None:
            drawing.cover(None)
        self._closed = True
        self._clear_lines()
        self._fill_lines.close()
        self._own_lines.close()
        self.picture.parent = None
        self._batches = []
        self._rows = np.empty((0, 0))
        self._derived.clear()


def _cuts(joins: np.ndarray, size: int) -> list[tuple[int, int]]:
    """``[a, b)`` ranges of about ``size`` rows of whole paths (``joins[i]``: row ``i``
    joins the next one)."""
    n = len(joins)
    if not n:
        return []
    ends = np.flatnonzero(~joins) + 1  # the row after each path's last
    if not len(ends) or ends[-1] != n:
        ends = np.r_[ends, n]
    at = np.searchsorted(ends, np.arange(size, n, size))
    cuts = distinct(np.r_[0, ends[np.minimum(at, len(ends) - 1)], n])
    return list(zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True))


def _batches(rows: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``rows`` cut into batches of whole tracks of about :data:`BATCH_VERTICES` rows:
    ``(rows, connect, row index)`` each (``connect``: the row joins the next one)."""
    if not len(rows):
        return []
    ids = rows[:, 0]
    joins = np.r_[ids[1:] == ids[:-1], False]
    return [(rows[a:b], joins[a:b], np.arange(a, b)) for a, b in _cuts(joins, BATCH_VERTICES)]


def _joins(line: Any) -> np.ndarray:
    """Per vertex of vispy ``line``: whether it joins the next one (its ``connect`` mask,
    or one strip)."""
    n = 0 if line.pos is None else len(line.pos)
    connect = line.connect
    if isinstance(connect, np.ndarray) and connect.ndim == 1:
        return np.asarray(connect, bool)[:n]
    return np.arange(n) < n - 1


def _part_of(line: Any, joins: np.ndarray, a: int, b: int) -> dict:
    """The ``set_data`` of rows ``[a, b)`` of vispy ``line`` (positions, breaks, colours)."""
    colour = line.color
    if isinstance(colour, np.ndarray) and colour.ndim == 2:
        colour = colour[a:b]
    return {"pos": line.pos[a:b], "connect": joins[a:b], "color": colour}


class _LinePool:
    """Hidden vispy lines under one node, each made once and given new rows when a
    picture is drawn again, until the fill ends. Not deleted and made again: a batch line
    deleted while the layer's own line is covered takes software OpenGL down (a
    segmentation fault in the picture's next draw; seen with Mesa's llvmpipe). Their
    changes and draws ask the canvas for no frame: a frame while the picture is not on
    screen draws the layer's own line, the cost the picture is there to save."""

    def __init__(self, node: Any) -> None:
        self._node = node
        self.lines: list[Any] = []

    def line(self, i: int, like: Any | None, data: dict) -> Any:
        """Line ``i`` (the next one made when ``i`` is the count) holding ``data``, drawn
        as vispy line ``like`` draws (width, smoothing, depth test) or, without one, as a
        1-pixel line over what is drawn; alpha accumulates in the picture."""
        if i == len(self.lines):
            from vispy.scene.visuals import Line

            made = Line(method="gl", antialias=False, parent=self._node)
            made.visible = False
            self.lines.append(made)
        line = self.lines[i]
        with line.events.update.blocker():
            line.set_data(**data, width=1.0 if like is None else like.width)
            line.antialias = False if like is None else like.antialias
            if like is None:
                line.set_gl_state(blend=True, depth_test=False, blend_func=_OVER)
            else:
                copy_gl_state(like, line)
                line.update_gl_state(blend=True, blend_func=_OVER)
        return line

    @staticmethod
    def draw(line: Any) -> None:
        """Draw hidden ``line`` into the framebuffer in use, without asking for a frame
        (vispy internal: ``Node._visible``; the ``visible`` setter requests a frame)."""
        line._visible = True
        try:
            line.draw()
        finally:
            line._visible = False

    def close(self) -> None:
        for line in self.lines:
            line.parent = None
        self.lines = []


#: the fill of each Tracks layer
_FILLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def fill_of(layer: object) -> OverviewFill | None:
    try:
        return _FILLS.get(layer)
    except TypeError:
        return None


def rows_on_screen(layer: object) -> FillRows | None:
    """:meth:`OverviewFill.rows_on_screen` of ``layer``'s fill (``None``: no fill shown)."""
    fill = fill_of(layer)
    return None if fill is None else fill.rows_on_screen()


def show(layer: Tracks, fill: FillRows | None) -> OverviewFill | None:
    """Draw ``fill`` behind ``layer`` (``None`` or no rows: no fill). Returns the fill, or
    ``None`` when there is none (also when no canvas shows the layer)."""
    current = fill_of(layer)
    node = layer_canvas_node(layer)
    if current is not None and (fill is None or not len(fill.rows) or current.node is not node):
        current.detach()
        _FILLS.pop(layer, None)
        current = None
    if fill is None or not len(fill.rows) or node is None:
        return None
    if current is None:
        current = OverviewFill(layer, node)
        _FILLS[layer] = current
    current.set_rows(fill)
    return current


def show_result(layers: Sequence[Layer], result: LoadResult) -> ViewShare:
    """Draw a load's overview fill behind its streamline layer (or none: the layer is
    gone, napari's draw path is in use, no canvas); the share says what is drawn."""
    layer = next((x for x in layers if getattr(x, "_type_string", "") == "tracks"), None)
    fill = None
    if layer is not None and result.fill is not None and line_draw.drawing_of(layer):
        data, kwargs, _ = result.fill
        fill = FillRows(np.asarray(data), dict(kwargs.get("features", {})))
    drawn = show(layer, fill) if layer is not None else None
    return result.share if drawn is not None else result.share.without_fill()
