"""Pyramid QA model section: the objects dropped between two levels (list, isolate, filter)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from napari_zarr_vectors.napari.browse.filters import IdFilter
from napari_zarr_vectors.napari.qa.compute import DroppedObjects, estimate_read
from napari_zarr_vectors.napari.qa.jobs import QATask, dropped_job, levels_holding_job
from napari_zarr_vectors.napari.qa.overlays import Built, isolate_job
from napari_zarr_vectors.napari.qa.sections.levels import LevelsQA

if TYPE_CHECKING:
    from napari.layers import Layer
    from napari.viewer import Viewer

    from napari_zarr_vectors.napari.browse.targets import BrowseTarget as Target


class DroppedObjectsQA(LevelsQA):
    """The dropped-objects list of two levels, its highlighted layers and its filter (which
    may lock the level holding the objects)."""

    def __init__(self, viewer: Viewer, target: Target) -> None:
        super().__init__(viewer, target)
        self.dropped: DroppedObjects | None = None
        self.dropped_layers: list[Layer] = []
        #: ``(was locked, lock)`` before a filter locked the level holding the objects
        self._lock_before_filter: tuple[bool, int | None] | None = None

    @property
    def can_filter(self) -> bool:
        """Whether the dropped objects can be filtered to (objects, two levels, a session)."""
        return not self.single_level and self.has_objects and self.session is not None

    def list_dropped(self, fine: int | None = None, coarse: int | None = None) -> QATask | None:
        """List the ids present at ``fine`` and absent at ``coarse`` (default: the finest
        and the coarsest level)."""
        if self.store is None or self.single_level:
            return None
        fine = self.levels[0] if fine is None else int(fine)
        coarse = self.levels[-1] if coarse is None else int(coarse)
        return self._run("dropped objects", dropped_job, (self.store, fine, coarse), self._listed)

    def _listed(self, d: DroppedObjects) -> np.ndarray:
        self.dropped = d
        self.events.dropped()
        return d.ids

    @property
    def dropped_ids(self) -> np.ndarray:
        return np.empty(0, np.int64) if self.dropped is None else self.dropped.ids

    def isolate_dropped(self, ids: Sequence[int] | np.ndarray | None = None) -> QATask | None:
        """Read objects (default: every listed dropped id) at the finer level of the listed
        pair into highlighted layers, capped by the vertex budget."""
        store = self.store
        if store is None:
            return None
        if self.dropped is None:
            self.say(
                "Nothing listed: choose the two levels and press List first (Isolate acts on "
                "the listed objects)."
            )
            return None
        ids = self.dropped_ids if ids is None else np.asarray(ids, np.int64)
        if not len(ids):
            self.say("no objects to isolate")
            return None
        pair = (self.dropped.fine, self.dropped.coarse)
        share = min(len(ids) / max(self.dropped.n_fine, 1), 1.0)
        if not self._confirm_read(
            estimate_read(store, pair[0], share=share), f"Isolating {len(ids):,} object(s)"
        ):
            return None

        def apply(built: Built) -> object:
            def then(layers: list[Layer]) -> list[Layer]:
                self.say(f"isolated at level {pair[0]}: {built.note}")
                return layers

            return self._add_in_turns("isolate", built.items, self.dropped_layers.append, then)

        return self._run("isolate", isolate_job, (store, ids, pair, self.layer_budget()), apply)

    def filter_to_dropped(self, ids: Sequence[int] | np.ndarray | None = None) -> QATask | None:
        """Show only the dropped objects ``ids`` (default: every listed one) in the store's
        layers, through the filter state the browse widgets share (ANDed with their
        filters). When the shown level holds none of them the finer level of the pair is
        locked (or, for a fixed-level layer, the status says why nothing is drawn)."""
        store, session = self.store, self.session
        if store is None or session is None:
            self.say("filtering needs a Zarr Vectors layer")
            return None
        if self.dropped is None:
            self.say("Nothing listed: choose the two levels and press List first.")
            return None
        ids = self.dropped_ids if ids is None else np.asarray(ids, np.int64)
        if not len(ids):
            self.say("no dropped objects to filter to")
            return None
        d = self.dropped
        return self._run(
            "filter",
            levels_holding_job,
            (store, ids),
            lambda holding: self._apply_filter(ids, d, holding),
        )

    def _apply_filter(self, ids: np.ndarray, d: DroppedObjects, holding: list[int]) -> str:
        session = self.session
        if session is None:
            return ""
        session.filters.id_filter = IdFilter(tuple(ids.tolist()), f"dropped {d.fine}→{d.coarse}")
        controller = self.controller
        shown = self.level if self.locked_level is None else self.locked_level
        note = ""
        if shown not in holding:
            if not holding:
                note = "; they exist at no level: nothing is drawn"
            elif controller is not None:
                lock = d.fine if d.fine in holding else holding[0]
                if self._lock_before_filter is None:
                    self._lock_before_filter = (True, controller.locked_level)
                controller.lock_level(lock)
                self.events.level()
                note = f"; locked level {lock}, where they exist (level {shown} has none of them)"
            else:
                note = f"; this layer shows level {shown}, which has none of them: nothing is drawn"
        session.apply()
        text = f"showing {len(ids):,} dropped object(s) only ({session.filters.describe()}){note}"
        self.say(text)
        return text

    def clear_filter(self) -> None:
        """Remove the dropped-objects filter (the browse widgets' filters stay) and undo the
        level lock it made."""
        session = self.session
        if session is None:
            return
        session.filters.id_filter = None
        restore, self._lock_before_filter = self._lock_before_filter, None
        if restore is not None and self.controller is not None:
            self.controller.lock_level(restore[1])
            self.events.level()
        session.apply()
        self.say(f"dropped-objects filter cleared ({session.filters.describe()})")
