"""What a level-of-detail load is asked for and gives back (:mod:`.loader` plans and runs
it, :mod:`.load_steps` fetches and assembles it, :mod:`.controller` puts it on screen)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from napari_zarr_vectors.format.geometry import Geometry
from napari_zarr_vectors.napari.layerdata.build import LayerData
from napari_zarr_vectors.napari.lod import plan as lod


@dataclass(frozen=True)
class LoadRequest:
    """What to load. ``view=None`` means "the whole store, as a fitted 3-D view would see
    it" (the reader's first read, before any camera exists)."""

    generation: int = 0
    view: lod.ViewState | None = None
    budget: int = lod.DEFAULT_VERTEX_BUDGET
    locked: int | None = None
    allowed_ids: np.ndarray | None = None
    #: the :attr:`LoadResult.key` on screen: a plan with the same key is not loaded again
    current_key: tuple | None = None
    force: bool = False
    #: nothing is on screen yet: a load of several batches first shows a preview built
    #: from its first batch (the chunks nearest the view centre), see :attr:`Progress.preview`
    progressive: bool = False
    #: vertices beyond ``budget`` that an overview fill may draw (:mod:`.overview_fill`):
    #: the streamlines ranked next, drawn but not held by the layer (polylines and
    #: streamlines without a locked level; 0: none)
    fill_budget: int = 0


@dataclass(frozen=True)
class Progress:
    """Yielded after each fetched batch."""

    generation: int
    level: int
    done: int
    total: int
    #: a progressive load's first picture: its first batch, within the batch's estimated
    #: share of the budget (the final result replaces it); for polylines and streamlines at
    #: level 0 without an object filter, their path pieces (:meth:`.load_steps.LoadSteps.pieces`)
    preview: LoadResult | None = None


@dataclass(frozen=True)
class ViewShare:
    """What part of a view the layers show: the object subset (:mod:`.view_geometry`) and
    what the budget left out."""

    #: objects ranked below it are shown; 1 = every object in view
    fraction: float = 1.0
    #: what the subset counts ("objects", "vertices" for point clouds, "pieces" for a
    #: preview of path pieces) and how many of them the view holds (estimated from the part
    #: read when ``fraction < 1``; 0 when unknown) / shows
    item_kind: str = "objects"
    items_in_view: int = 0
    items_shown: int = 0
    #: vertices the layers would hold with every object in view (estimated likewise) / hold
    vertices_in_view: int = 0
    vertices_shown: int = 0
    #: the vertex budget the load was cut to
    budget: int = 0
    #: the counts are exact (every object in view was read), not scaled up from a part
    exact: bool = False
    #: paths were simplified to the screen (:mod:`.simplify`) with this tolerance (store
    #: units; 0: every stored vertex is drawn), keeping this part of the vertices in view
    simplify_tolerance: float = 0.0
    simplified_keep: float = 1.0
    #: of ``items_shown`` / beyond ``vertices_shown``: the objects and vertices an overview
    #: fill draws (:mod:`.overview_fill`: drawn, not held by the layers: not picked, not in
    #: their features), and the fraction the layers alone show
    items_filled: int = 0
    vertices_filled: int = 0
    layer_fraction: float = 1.0

    @property
    def left_out(self) -> int:
        """Vertices of the view the budget left out (estimated)."""
        return max(
            int(self.vertices_in_view) - int(self.vertices_shown) - int(self.vertices_filled), 0
        )

    def without_fill(self) -> ViewShare:
        """The share when no fill is drawn: what the layers hold."""
        if not self.items_filled and not self.vertices_filled:
            return self
        return dataclasses.replace(
            self,
            fraction=self.layer_fraction,
            items_shown=self.items_shown - self.items_filled,
            items_filled=0,
            vertices_filled=0,
        )

    def describe(self, label: str) -> str:
        """``"showing 1 of 5 skeletons in view (...)"`` when the counts are exact,
        ``"showing 1,105 of ~200,000 streamlines in view (0.55%; ...)"`` when estimated (a
        percentage only of many), with how many of them the layers hold when an overview
        fill draws the rest; empty when the layers show all. ``label`` names the store's
        objects. (The vertices left out are in :meth:`as_metadata`.)"""
        if self.item_kind == "pieces":
            return f"a first look: pieces of the {label} in the chunks read so far"
        held_part = ""
        if self.items_filled:
            held = self.items_shown - self.items_filled
            held_part = f"{held:,} of them held by the layer, the rest drawn once the view is still"
        if self.fraction >= 1.0:
            return (
                f"showing all {self.items_shown:,} {label} in view ({held_part})"
                if held_part
                else ""
            )
        noun = "points" if self.item_kind == "vertices" else label
        about = "" if self.exact else "~"
        pct = 100.0 * self.items_shown / max(self.items_in_view, 1)
        share = f"{pct:.2g}%; " if pct < 10 else f"{pct:.0f}%; "
        if self.items_in_view < 1000:
            share = ""
        if held_part:
            share += f"{held_part}; "
        return (
            f"showing {self.items_shown:,} of {about}{self.items_in_view:,} {noun} in view "
            f"({share}zoom in, or raise Detail in the Store panel, for more)"
        )

    def as_metadata(self) -> dict[str, Any]:
        """The figures layers carry in ``metadata["zarr_vectors"]``."""
        return {
            "shown_fraction": float(self.fraction),
            "subset_of": self.item_kind,
            "items_in_view": int(self.items_in_view),
            "items_shown": int(self.items_shown),
            "items_filled": int(self.items_filled),
            "vertices_filled": int(self.vertices_filled),
            "vertices_in_view": int(self.vertices_in_view),
            "vertices_left_out": int(self.left_out),
            "loaded_budget": int(self.budget),
            "simplified": bool(self.simplify_tolerance > 0),
            "simplify_tolerance": float(self.simplify_tolerance),
            "simplified_keep": float(self.simplified_keep),
        }

    @property
    def simplified_note(self) -> str:
        """``"paths simplified to the screen (41% of their vertices)"`` when they were,
        else empty."""
        if self.simplify_tolerance <= 0:
            return ""
        return (
            f"paths simplified to the screen ({100 * self.simplified_keep:.2g}% of their vertices)"
        )


@dataclass
class LoadResult:
    """A finished load: the level, chunks and layer data to put on screen."""

    generation: int
    level: int
    chunks: np.ndarray  # (K, key_ndim) chunks shown
    key: tuple
    geometry: Geometry | None = None
    layer_data: list[LayerData] = field(default_factory=list)
    #: vertices the layers hold (:func:`resident_vertices`)
    vertex_count: int = 0
    #: chunks the view needed but the budget left out
    trimmed: int = 0
    #: chunks that failed to load and were left out: ``(chunk, error message)``
    failed: list[tuple[tuple[int, ...], str]] = field(default_factory=list)
    #: chunks left out because their bytes do not decode, on every load that needs them
    #: (the core warns only the first time): ``(chunk, stored file)``
    unreadable: list[tuple[tuple[int, ...], str]] = field(default_factory=list)
    #: ``True`` when the plan equals what is on screen: nothing to update
    unchanged: bool = False
    #: the store-order box the geometry was cropped to (``None``: whole chunks)
    crop: tuple[np.ndarray, np.ndarray] | None = None
    #: what part of the view the layers show (the object subset, what was left out)
    share: ViewShare = field(default_factory=lambda: ViewShare())
    #: the overview fill's Tracks layer data (:attr:`LoadRequest.fill_budget`; ``None``: none)
    fill: LayerData | None = None
