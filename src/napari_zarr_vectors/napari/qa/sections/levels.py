"""Pyramid QA model section: the level lock and the level statistics (with the link families
and whether the store has objects, which the dropped-objects and links sections read)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from napari_zarr_vectors.napari.qa.jobs import QATask, StoreFacts, store_facts
from napari_zarr_vectors.napari.qa.sections.section import QASection

if TYPE_CHECKING:
    from napari.viewer import Viewer

    from napari_zarr_vectors.napari.browse.targets import BrowseTarget as Target


class LevelsQA(QASection):
    """The level lock and the statistics of the store's levels."""

    def __init__(self, viewer: Viewer, target: Target) -> None:
        super().__init__(viewer, target)
        self.statistics: list[dict[str, Any]] = []
        self.families: list[tuple[int, int]] = []
        self.has_objects = False

    # ------------------------------------------------------------------ level lock
    def lock_level(self, level: int | None) -> None:
        """Lock the shown level (``None``: back to the automatic, zoom-driven choice)."""
        controller = self.controller
        if controller is None:
            self.say("Locking needs a layer opened with the level-of-detail engine.")
            return
        if level is not None and level not in self.levels:
            raise ValueError(
                f"{self._live_store.name} has no level {level} (levels: {self.levels})"
            )
        controller.lock_level(level)
        self.events.level()
        self.say(
            "automatic level (follows the zoom)" if level is None else f"locked at level {level}"
        )

    def lock_shown_level(self) -> None:
        """Lock the level shown now."""
        self.lock_level(self.level)

    def step_level(self, step: int) -> None:
        """Lock one level coarser (``+1``) or finer (``-1``) than the locked one (else the
        shown one: the shown one may still be loading)."""
        controller = self.controller
        if controller is None or self.single_level:
            return
        levels = self.levels
        base = controller.locked_level if controller.locked_level is not None else self.level
        i = levels.index(base) if base in levels else 0
        self.lock_level(levels[int(np.clip(i + step, 0, len(levels) - 1))])

    # ------------------------------------------------------------------ statistics
    def refresh_statistics(self) -> QATask | None:
        """Read the level statistics, the link families and whether the store has objects
        (``events.statistics`` when they are known)."""
        if self.store is None:
            return None
        self.statistics = []
        return self._run("statistics", store_facts, (self.store,), self._facts_ready)

    def _facts_ready(self, facts: StoreFacts) -> list[dict[str, Any]]:
        self.statistics, self.families, self.has_objects = facts
        self.events.statistics()
        return self.statistics
