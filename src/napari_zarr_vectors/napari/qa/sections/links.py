"""Pyramid QA model section: cross-level links (fine -> coarse arrows)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from napari_zarr_vectors.napari.lod.viewer_layers import remove_layers
from napari_zarr_vectors.napari.qa.compute import estimate_read
from napari_zarr_vectors.napari.qa.jobs import QATask
from napari_zarr_vectors.napari.qa.overlays import Built, links_job
from napari_zarr_vectors.napari.qa.sections.levels import LevelsQA

if TYPE_CHECKING:
    from napari.layers import Layer
    from napari.viewer import Viewer

    from napari_zarr_vectors.napari.browse.targets import BrowseTarget as Target

#: Link scopes of :meth:`LinksQA.show_links`.
SCOPES = ("objects", "box", "all")


class LinksQA(LevelsQA):
    """The links layer: arrows of the stored links from a fine level to the next, for the
    link families the statistics found."""

    def __init__(self, viewer: Viewer, target: Target) -> None:
        super().__init__(viewer, target)
        self.links_layer: Layer | None = None

    def show_links(
        self,
        fine_level: int | None = None,
        scope: str = "objects",
        object_ids: Sequence[int] | None = None,
    ) -> QATask | None:
        """Draw fine -> coarse link arrows from ``fine_level`` (default: the finest linked
        level) for the picked objects (``scope="objects"``; ``object_ids``, default the
        picked ones), the visible box (``"box"``) or the whole level (``"all"``; asks first
        when that is most of the store), at most half the vertex budget of them (two ends an
        arrow), thinned by object."""
        store = self.store
        if store is None:
            return None
        families = dict(self.families)
        if not families:
            self.say("This store has no cross-level links.")
            return None
        fine_level = min(families) if fine_level is None else int(fine_level)
        if fine_level not in families:
            self.say(f"no stored links between levels {fine_level} and {fine_level + 1}")
            return None
        delta = families[fine_level]
        ids = bbox = None
        if scope == "objects":
            ids = list(self.object_ids if object_ids is None else object_ids)
            if not ids:
                self.say("pick an object (or type its id) first")
                return None
            self._pick(None, ids)
        elif scope == "box":
            bbox = self.visible_box()
        to_read = estimate_read(store, fine_level, bbox) if ids is None else 0
        if not self._confirm_read(to_read, f"Links of level {fine_level} ({scope})"):
            return None
        owner = fine_level if delta > 0 else fine_level + 1

        def apply(built: Built) -> object:
            old, self.links_layer = self.links_layer, None
            remove_layers(self.viewer, [old])

            def added(layer: Layer) -> None:
                self.links_layer = layer

            def then(layers: list[Layer]) -> Layer | None:
                self.say(built.note)
                self.events.links(note=built.note)
                return self.links_layer

            return self._add_in_turns("links", built.items, added, then)

        args = (store, owner, delta, ids, bbox, self.layer_budget(), scope)
        return self._run("links", links_job, args, apply)
