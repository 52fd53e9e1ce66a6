"""napari's progress bar for one store's loads."""

from __future__ import annotations

import time
from typing import Any

from napari_zarr_vectors.napari.lod.load_values import Progress

#: a load shows a progress bar once it has run this long
SHOW_AFTER_SECONDS = 0.25


class LoadProgress:
    """The progress bar of the loads of the store named ``name``: shown once a load has
    run :data:`SHOW_AFTER_SECONDS`, closed when it ends."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._bar: Any = None
        self._started_at = 0.0

    def start(self) -> None:
        """A load starts (its bar, if any, shows after :data:`SHOW_AFTER_SECONDS`)."""
        self._started_at = time.perf_counter()

    def update(self, p: Progress) -> None:
        if self._bar is None and time.perf_counter() - self._started_at > SHOW_AFTER_SECONDS:
            self._open(p)
        if self._bar is not None:
            self._bar.n = p.done
            self._bar.update(0)

    def _open(self, p: Progress) -> None:
        try:
            from napari.utils import progress

            self._bar = progress(total=p.total, desc=f"{self._name}: level {p.level}", gui=True)
        except Exception:  # noqa: BLE001 - progress is a nicety
            self._bar = None

    def close(self) -> None:
        bar, self._bar = self._bar, None
        if bar is not None:
            bar.close()
