"""What a controller's layers show: one value, replaced after every load.

:class:`Shown` is what :class:`.controller.ZVLayerController` reports about its layers: the
level and chunks on screen and the plan key they were loaded for, the vertices drawn, the
chunks of the view not read, the chunks left out (undecodable or not fetched) and what part
of the view that is (:class:`.load_values.ViewShare`). It writes the level line
(:meth:`Shown.summary`) and the layers' metadata (:meth:`Shown.write_metadata`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from napari_zarr_vectors.napari.layerdata.build import META
from napari_zarr_vectors.napari.lod.load_values import LoadResult, ViewShare

if TYPE_CHECKING:
    from napari.layers import Layer


@dataclass(frozen=True, eq=False)
class Shown:
    """What the layers show.

    Attributes
    ----------
    level, chunks, key
        The level on screen, its ``(K, key_ndim)`` chunk coordinates (read-only) and the
        plan key they were loaded for.
    vertex_count
        The vertices drawn, counted as the budget counts.
    trimmed
        Chunks of the view not read (too many to read at once).
    unreadable, not_fetched
        Stored files of the shown chunks whose bytes do not decode, and keys of the chunks
        whose fetch failed: what the layers lack (:attr:`left_out`).
    share
        What part of the view the layers show (the object subset, what was left out).
    """

    level: int
    chunks: np.ndarray
    key: tuple | None
    vertex_count: int = 0
    trimmed: int = 0
    unreadable: tuple[str, ...] = ()
    not_fetched: tuple[str, ...] = ()
    share: ViewShare = field(default_factory=ViewShare)

    def __post_init__(self) -> None:
        self.chunks.setflags(write=False)  # handed out by ZVLayerController.chunks

    @classmethod
    def of(cls, result: LoadResult, share: ViewShare) -> Shown:
        """What ``result`` shows, of the view ``share`` (its overview fill drawn or not)."""
        return cls(
            int(result.level),
            np.array(result.chunks, np.int64),
            result.key,
            vertex_count=int(result.vertex_count),
            trimmed=int(result.trimmed),
            unreadable=tuple(f for _, f in result.unreadable),
            not_fetched=tuple(".".join(map(str, c)) for c, _ in result.failed),
            share=share,
        )

    @property
    def left_out(self) -> list[str]:
        """What the shown chunks lack: the stored file (or chunk key) of each chunk that
        could not be read, the undecodable ones first."""
        return [*self.unreadable, *self.not_fetched]

    def summary(self, name: str | None, items: str, *, locked: bool) -> str:
        """The level line: store ``name`` (if any), level (``locked``?), chunks and vertices
        shown, what part of the view that is (of ``items``, e.g. ``"streamlines"``) and what
        was left out."""
        text = (
            f"{f'{name}: ' if name is not None else ''}level {self.level}"
            f"{' (locked)' if locked else ''}, "
            f"{len(self.chunks):,} chunks, {self.vertex_count:,} vertices drawn"
        )
        for note in (self.share.describe(items), self.share.simplified_note):
            if note:
                text += f"; {note}"
        if self.trimmed:
            text += f"; {self.trimmed:,} chunks of the view not read (too many to read at once)"
        left_out = self.left_out
        if left_out:
            files = ", ".join(left_out[:3]) + (", …" if len(left_out) > 3 else "")
            text += f"; {len(left_out):,} unreadable chunk(s) left out ({files})"
        return text

    def write_metadata(self, layer: Layer, *, locked_level: int | None, budget: int) -> None:
        """Put what is shown in ``layer.metadata["zarr_vectors"]``, with the locked level and
        the vertex budget."""
        meta = layer.metadata.setdefault(META, {})
        meta["level"] = int(self.level)
        meta["chunks"] = np.asarray(self.chunks, dtype=np.int64).tolist()
        meta["locked_level"] = locked_level
        meta["vertex_budget"] = int(budget)
        meta["vertices_shown"] = int(self.vertex_count)
        # incl. the budget what is on screen was cut to (an adaptive budget moves)
        meta.update(self.share.as_metadata())
        meta["chunks_not_read"] = int(self.trimmed)
        meta["chunks_left_out"] = list(self.left_out)
