"""The fast draw path of streamline and polyline layers: one vispy line for the rows of a
napari Tracks layer.

napari's Tracks layer stays the layer users see and use (its rows and features serve
picking, hover, filters, selection, the colour bar and the layer controls; its
``metadata["zarr_vectors"]`` says what is shown). What napari would draw for it is drawn
instead by a single ``vispy.scene.visuals.Line`` (``method="gl"``: one line strip per
path through a ``connect`` mask, a colour per vertex), a child of the layer's node in
napari's scene (:func:`.._napari_compat.layer_canvas_node`): it moves with the layer's
transform (scale, translate, affine, displayed axes) and leaves the canvas with the layer.
Its positions, mask and colours are the ones napari's own visual would get
(``Tracks._view_data``, ``track_connex``, ``track_colors``: the colours of the layer's
colour-by, which the colour bar describes); napari's own tails are switched off
(``display_tail = False``) while the line draws.

Measured (``benchmarks/bench_draw.py``, docs/dev/benchmarks-napari.md): the line and its
frame cost a fraction of napari's Tracks visual per vertex; the data swap itself takes
:func:`.._napari_compat.set_tracks_data_quietly`.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np

from napari_zarr_vectors.napari._napari_compat import (
    copy_gl_state,
    layer_canvas_node,
    tracks_line_node,
    tracks_view_positions,
)

if TYPE_CHECKING:
    from napari.layers import Tracks

#: smoothed lines of the layer's tail width, as napari's Tracks visual draws them (without,
#: vispy's "gl" lines are one pixel wide whatever the width; measured at 400,000 vertices in
#: software OpenGL: one frame 1.1 s smoothed, 0.5 s not, 2.1 s napari's Tracks visual)
ANTIALIAS = True

#: the line drawing of each Tracks layer on the fast path
_DRAWINGS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

#: layer events after which the line follows the layer's look / colours / rows
_LOOK_EVENTS = ("visible", "opacity", "blending", "tail_width")
_COLOUR_EVENTS = ("color_by", "colormap")
_ROW_EVENTS = ("rebuild_tracks",)


class LineDrawing:
    """The vispy line drawing one Tracks layer's rows (:func:`follow` makes it)."""

    def __init__(self, layer: Tracks, node: Any) -> None:
        self._layer_ref = weakref.ref(layer)
        self._napari_line = tracks_line_node(node)
        self.line = _coverable_line()(method="gl", antialias=ANTIALIAS, parent=node)
        #: bumped whenever what the line draws changes (rows, colours, width, blending)
        self.version = 0
        self._look: tuple[float, str] | None = None
        self._handlers: list[tuple[Any, Any]] = []
        for names, handler in (
            (_LOOK_EVENTS, self.sync_look),
            (_COLOUR_EVENTS, self.sync_colours),
            (_ROW_EVENTS, self.sync_rows),
        ):
            for name in names:
                emitter = getattr(layer.events, name, None)
                if emitter is not None:
                    # after napari's own handlers (napari sets the node's GL state first)
                    emitter.connect(handler, position="last")
                    self._handlers.append((emitter, handler))
        layer.display_tail = False  # napari's own line would draw every row a second time
        self.sync_rows()
        self.sync_look()

    @property
    def layer(self) -> Tracks | None:
        return self._layer_ref()

    def sync_rows(self, event: object = None) -> None:
        """Positions, path breaks and colours from the layer (after a swap, a 2-D/3-D
        switch)."""
        layer = self.layer
        if layer is None:
            return
        pos = np.asarray(tracks_view_positions(layer), dtype=np.float32)
        connect = np.asarray(layer.track_connex, dtype=bool)
        self.line.set_data(pos=pos, connect=connect, color=self._colours(layer, len(pos)))
        self.version += 1

    def sync_colours(self, event: object = None) -> None:
        """The colours of the layer's colour-by (napari's ``track_colors``)."""
        layer = self.layer
        if layer is None:
            return
        pos = self.line.pos
        colours = layer.track_colors
        if pos is None or colours is None or len(colours) != len(pos):
            return  # new rows under way: sync_rows colours them
        self.line.set_data(color=np.asarray(colours, dtype=np.float32))
        self.version += 1

    def sync_look(self, event: object = None) -> None:
        """Visibility, opacity, blending and width of the layer."""
        layer = self.layer
        if layer is None:
            return
        self.line.visible = bool(layer.visible)
        self.line.opacity = float(layer.opacity)
        if self._napari_line is not None:
            copy_gl_state(self._napari_line, self.line)
        self.line.set_data(width=float(layer.tail_width))
        look = (float(layer.tail_width), str(layer.blending))
        if look != self._look:  # what a picture of the line holds (opacity is applied over it)
            self._look = look
            self.version += 1

    def cover(self, covered: Callable[[], bool] | None) -> None:
        """Skip the line in frames for which ``covered()`` is true (a picture on screen
        already shows it: :mod:`.overview_fill`); ``None``: draw it in every frame."""
        self.line.covered = covered

    @staticmethod
    def _colours(layer: Tracks, n: int) -> np.ndarray:
        colours = layer.track_colors
        if colours is None or len(colours) != n:  # not coloured yet: napari's grey
            return np.ones((n, 4), np.float32)
        return np.asarray(colours, dtype=np.float32)

    def detach(self) -> None:
        """Stop drawing: the line leaves the scene, napari's own tails draw again."""
        for emitter, handler in self._handlers:
            emitter.disconnect(handler)
        self._handlers.clear()
        self.line.parent = None
        layer = self.layer
        if layer is not None:
            layer.display_tail = True


@cache
def _coverable_line() -> type:
    """vispy's scene ``Line``, skipped in a frame for which its ``covered()`` is true."""
    from vispy.scene.visuals import Line

    class CoverableLine(Line):
        covered: Callable[[], bool] | None = None

        def draw(self) -> None:
            if self.covered is None or not self.covered():
                super().draw()

    return CoverableLine


def drawing_of(layer: object) -> LineDrawing | None:
    """The line drawing ``layer`` (``None``: napari draws it)."""
    try:
        return _DRAWINGS.get(layer)
    except TypeError:
        return None


def follow(layer: Tracks) -> LineDrawing | None:
    """Draw ``layer`` with a vispy line from now on (``None``: no canvas shows the layer
    yet, napari draws it). Idempotent; a layer moved to another canvas gets a new line."""
    node = layer_canvas_node(layer)
    drawing = drawing_of(layer)
    if drawing is not None and drawing.line.parent is node and node is not None:
        return drawing
    if drawing is not None:
        drawing.detach()
        _DRAWINGS.pop(layer, None)
    if node is None:
        return None
    drawing = LineDrawing(layer, node)
    _DRAWINGS[layer] = drawing
    return drawing


def release(layer: object) -> None:
    """Let napari draw ``layer`` again (the ``"napari"`` draw path)."""
    drawing = drawing_of(layer)
    if drawing is not None:
        drawing.detach()
        _DRAWINGS.pop(layer, None)
