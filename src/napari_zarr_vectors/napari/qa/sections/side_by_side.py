"""Pyramid QA model section: chosen levels side by side (layers, grid mode, toggle, blend)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from napari_zarr_vectors.napari.conventions import meta_of
from napari_zarr_vectors.napari.lod.view_geometry import Box
from napari_zarr_vectors.napari.lod.viewer_layers import remove_layers
from napari_zarr_vectors.napari.qa.compute import estimate_read, grid_plan
from napari_zarr_vectors.napari.qa.jobs import QATask
from napari_zarr_vectors.napari.qa.overlays import Built, side_by_side_job
from napari_zarr_vectors.napari.qa.sections.section import QASection

if TYPE_CHECKING:
    from napari.layers import Layer
    from napari.viewer import Viewer

    from napari_zarr_vectors.napari.browse.targets import BrowseTarget as Target


class SideBySideQA(QASection):
    """The side-by-side layers of chosen levels, napari's grid mode for them, the toggle
    through them and their opacity."""

    def __init__(self, viewer: Viewer, target: Target) -> None:
        super().__init__(viewer, target)
        self.side_layers: list[Layer] = []
        #: side-by-side levels in grid cells (the default: levels apart), else overlaid
        self.grid = True
        self._grid_hidden: list[Layer] = []
        self._toggle_index = -1
        self.opacity = 0.7

    def add_levels(self, levels: Sequence[int]) -> QATask | None:
        """Add ``levels`` as separate, alike-coloured layers, each capped by the vertex
        budget, in grid cells unless :attr:`grid` was turned off (when a level holds more
        than the budget, every level is read inside the visible box)."""
        store = self.store
        if store is None:
            return None
        levels = [int(lv) for lv in levels]
        if not levels:
            self.say("tick the levels to add side by side")
            return None
        budget = self.layer_budget()
        # one extent for every level: when one level is read inside the visible box (it
        # holds more than the budget), all are, so the cells compare the same region
        boxed = any(int(store.level(level).vertex_count or 0) > budget for level in levels)
        bboxes: dict[int, Box] = dict.fromkeys(levels, self.visible_box()) if boxed else {}
        to_read = 0
        for level in levels:
            to_read += estimate_read(store, level, bboxes.get(level))
        if not self._confirm_read(to_read, f"Adding level(s) {levels}"):
            return None

        def apply(built: list[Built]) -> object:
            items = [item for b in built for item in b.items]

            def then(layers: list[Layer]) -> list[Layer]:
                self._toggle_index = -1
                notes = "; ".join(f"level {b.level}: {b.note}" for b in built)
                self.say(f"added {len(layers)} layer(s) ({notes})")
                self._apply_grid(self.grid)
                self.events.side_by_side()
                return layers

            return self._add_in_turns("side by side", items, self.side_layers.append, then)

        args = (store, levels, bboxes, budget, self.opacity)
        return self._run("side by side", side_by_side_job, args, apply)

    def remove_levels(self) -> None:
        """Remove the side-by-side layers (:func:`..lod.viewer_layers.remove_layers`) and
        leave napari's grid mode (the grid setting stays for the next levels added)."""
        self._apply_grid(False)
        layers, self.side_layers = list(self.side_layers), []
        remove_layers(self.viewer, layers)
        self.events.side_by_side()

    def set_grid(self, enabled: bool) -> None:
        """Side-by-side levels in napari's grid mode, one cell per level (the default), or
        overlaid in one canvas. With levels added it applies at once, else to the levels
        added next."""
        self.grid = bool(enabled)
        side = any(lyr in self.viewer.layers for lyr in self.side_layers)
        self._apply_grid(self.grid and side)
        self.events.side_by_side()

    def _apply_grid(self, enabled: bool) -> None:
        """napari's grid mode with one cell per side-by-side level: every other layer (the
        store's own layers, the bounds box, overlays) is hidden while it is on, and shown
        again when it goes off; the camera then fits every cell (the same extent in each)."""
        grid = self.viewer.canvas.grid
        if enabled:
            side = [lyr for lyr in self.side_layers if lyr in self.viewer.layers]
            hide, stride = grid_plan(list(self.viewer.layers), side)
            for layer in hide:
                layer.visible = False
            self._grid_hidden += hide
            if stride > 1:
                # napari groups ``stride`` layers a cell counted from the top of the list
                # (negative stride): the levels go on top, level by level, the first
                # level topmost (the first cell)
                levels: dict[Any, list[Layer]] = {}
                for layer in side:
                    levels.setdefault((meta_of(layer) or {}).get("level"), []).append(layer)
                order = [lyr for group in reversed(list(levels.values())) for lyr in group]
                layers = self.viewer.layers
                layers.move_multiple([layers.index(lyr) for lyr in order], len(layers))
            grid.stride = -stride if stride > 1 else 1
            grid.enabled = True
            self.viewer.reset_view()
        elif grid.enabled or self._grid_hidden:
            # grid off first: with it on, every layer shown again rebuilds the grid's views
            grid.enabled = False
            for layer in self._grid_hidden:
                if layer in self.viewer.layers:
                    layer.visible = True
            self._grid_hidden = []

    def toggle_side_by_side(self) -> Layer | None:
        """Show the side-by-side layers one at a time, then all again. Returns the layer
        now shown alone (``None`` when all are shown)."""
        layers = [lyr for lyr in self.side_layers if lyr in self.viewer.layers]
        if not layers:
            return None
        self._toggle_index += 1
        if self._toggle_index >= len(layers):
            self._toggle_index = -1
        for i, layer in enumerate(layers):
            layer.visible = self._toggle_index in (-1, i)
        return None if self._toggle_index == -1 else layers[self._toggle_index]

    def set_opacity(self, opacity: float) -> None:
        """Opacity of the side-by-side layers (and of those added later)."""
        self.opacity = float(opacity)
        for layer in self.side_layers:
            layer.opacity = self.opacity
        self.events.side_by_side()
