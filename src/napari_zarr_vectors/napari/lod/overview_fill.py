"""The overview fill: more whole streamlines than a layer swap can hold, drawn a few at a
time into a picture that stays on screen while the view is still.

A Tracks layer on the fast draw path (:mod:`.line_draw`) holds the streamlines its vertex
budget allows: they are what picking, hover, filters and the Object table see, and what
every frame draws. On a machine without a GPU that is about one streamline in a hundred
of a whole-brain tractogram, and what limits it is not only the swap: software OpenGL
takes ~0.3 s to rasterise 20,000 overview streamlines in one frame
(docs/dev/benchmarks-napari.md). The fill draws the streamlines ranked next (the same
stable ranks, so the same streamlines in the same order as the budget grows) into an
offscreen picture of the canvas's size, one batch per event-loop turn of at most
:data:`TURN_SECONDS` of drawing, and shows that picture behind nothing but the layer's own
line, in the layer's place in the scene: once the view has been still for
:data:`SETTLE_SECONDS`, each turn adds a batch. When the view moves the picture no longer
matches it and is not shown (the layer's own streamlines draw every frame, so the view
never stalls while it moves); when it stops, the picture is drawn again from its first
batch.

The fill's streamlines are drawn, not held: they are not picked or hovered, and the
layer's features do not list them. They take the layer's colours (its colour-by, through
napari's colour rule, :func:`.._napari_compat.tracks_colours`), its visibility, opacity
and displayed axes; a 1-pixel line without smoothing (what the overview's density hides).

vispy and napari internals only: the layer's scene node (:func:`.._napari_compat.layer_canvas_node`),
``SceneCanvas.push_fbo`` / ``pop_fbo`` and a visual's ``draw``.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from napari_zarr_vectors.napari._napari_compat import (
    layer_canvas_node,
    tracks_colours,
    tracks_rows_view_positions,
)
from napari_zarr_vectors.napari.lod.viewer_layers import later

if TYPE_CHECKING:
    from napari.layers import Tracks

#: vertices drawn per batch (one batch at least per turn)
BATCH_VERTICES = 15_000
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
        return int(len(np.unique(self.rows[:, 0]))) if len(self.rows) else 0


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
        self._lines: list[Any] = []
        self._drawn = 0  # batches in the picture
        self._key: tuple | None = None  # the view the picture was drawn for
        self._moved_at = 0.0
        self._scheduled = False
        self._closed = False
        self._features: dict = {}
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
        """Every batch is in the picture, for the view on screen."""
        return self._drawn == len(self._batches) and self._key == self._view_key()

    # -- data ----------------------------------------------------------------------------
    def set_rows(self, fill: FillRows) -> None:
        """Draw ``fill`` from now on (the picture starts again)."""
        layer = self.layer
        self._clear_lines()
        self._batches = [] if layer is None else _batches(fill.rows)
        self.tracks = fill.tracks
        self.vertices = int(len(fill.rows))
        self._features = fill.features
        self._restart()

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
        for line in self._lines:
            line.parent = None
        self._lines = []

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
        """Whether the picture shows the view on screen (called by each frame that draws
        it; a view that moved is noted, and the picture drawn again once it settles)."""
        key = self._view_key()
        if key is not None and key == self._key and self._drawn:
            return True
        if key != self._key:
            self._moved_at = time.perf_counter()
        self._schedule(SETTLE_SECONDS)
        return False

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
        if key != self._key:
            self._key = key
            self._drawn = 0
        if self._drawn >= len(self._batches):
            return
        self._draw_batches(canvas, layer, time.perf_counter())
        canvas.update()
        if self._drawn < len(self._batches):
            self._schedule(0.0)

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
                gloo.clear(color=True, depth=True)
            while self._drawn < len(self._batches):
                line = self._line(self._drawn, layer)
                line.visible = True
                line.draw()
                line.visible = False
                self._drawn += 1
                # the drawing itself, not only its commands, within the turn: software
                # OpenGL rasterises at the next finish, which would be the frame's
                canvas.context.flush_commands()
                gloo.gl.glFinish()
                if time.perf_counter() - start > TURN_SECONDS:
                    break
        finally:
            canvas.pop_fbo()

    def _line(self, i: int, layer: Tracks) -> Any:
        """Batch ``i``'s vispy line (made on first use, in the layer's colours now)."""
        if i < len(self._lines):
            return self._lines[i]
        from vispy.scene.visuals import Line

        rows, connect, index = self._batches[i]
        pos = np.asarray(tracks_rows_view_positions(layer, rows), np.float32)
        values = {name: np.asarray(v)[index] for name, v in self._features.items()}
        colours = tracks_colours(layer, values, len(rows))
        line = Line(
            pos=pos, connect=connect, color=colours, method="gl", antialias=False, parent=self.node
        )
        line.visible = False
        line.set_gl_state(blend=True, depth_test=False, blend_func=_OVER)
        self._lines.append(line)
        return line

    def detach(self) -> None:
        for emitter, handler in self._handlers:
            emitter.disconnect(handler)
        self._handlers.clear()
        self._closed = True
        self._clear_lines()
        self.picture.parent = None
        self._batches = []


def _batches(rows: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``rows`` cut into batches of whole tracks of about :data:`BATCH_VERTICES` rows:
    ``(rows, connect, row index)`` each (``connect``: the row joins the next one)."""
    n = len(rows)
    if not n:
        return []
    ids = rows[:, 0]
    joins = np.r_[ids[1:] == ids[:-1], False]
    track_ends = np.flatnonzero(~joins) + 1  # the row after each track's last
    at = np.searchsorted(track_ends, np.arange(BATCH_VERTICES, n, BATCH_VERTICES))
    cuts = np.unique(np.r_[0, track_ends[np.minimum(at, len(track_ends) - 1)], n])
    return [
        (rows[a:b], joins[a:b], np.arange(a, b)) for a, b in zip(cuts[:-1], cuts[1:], strict=True)
    ]


#: the fill of each Tracks layer
_FILLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def fill_of(layer: object) -> OverviewFill | None:
    try:
        return _FILLS.get(layer)
    except TypeError:
        return None


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
