"""Plugin-wide level-of-detail settings: vertex budget, chunk-cache size, debounce delay,
draw path.

Defaults come from environment variables read when the plugin is imported, and can be
changed at run time with :func:`configure` (e.g. from napari's console or a startup
script). Each opened store's controller can override the vertex budget
(``controller_for(layer).vertex_budget = n``).

================================  ============================  ==========================
environment variable              :func:`configure` keyword     default
================================  ============================  ==========================
``NZV_VERTEX_BUDGET``             ``vertex_budget``             adaptive (see below)
``NZV_CACHE_MB``                  ``cache_mb``                  512 MiB (one shared cache)
``NZV_DEBOUNCE_MS``               ``debounce_ms``               150 ms
``NZV_DRAW_PATH``                 ``draw_path``                 ``"fast"``
``NZV_OVERVIEW_VERTICES``         ``overview_vertices``         1,500,000 (0: no fill)
================================  ============================  ==========================

**The overview fill** (:mod:`.overview_fill`): on the fast draw path, a view of more
polylines or streamlines than the vertex budget holds also draws up to
``overview_vertices`` vertices of the streamlines ranked next, a few at a time into a
picture shown while the view is still; the layers hold (and pick, hover and list) what the
budget allows.

**The draw path** of streamlines and polylines (napari Tracks layers): ``"fast"`` puts a
swap's rows into the layer without napari's per-vertex work a swap does not need
(:func:`.._napari_compat.set_tracks_data_quietly`; the canvas still draws them with
napari's own vispy line); ``"napari"`` goes through napari's public ``Tracks.data`` setter
as before. The adaptive budget measures whichever is in use.

**The adaptive vertex budget.** Unless a budget is set (environment, :func:`configure`, or
per store), the budget follows the measured cost of putting data on screen on this
machine: every level-of-detail swap of at least :data:`MIN_SAMPLE_VERTICES` vertices
updates a running estimate of the UI-thread seconds per vertex of the layer swaps, on the
draw path in use, and of the swap's fixed costs (:class:`SwapCost`), and the budget is what
keeps one swap near :data:`TARGET_SWAP_SECONDS` (50 ms on average: single
swaps vary up to about twice that, so with napari's own work around a swap a UI stall stays
within about 0.1 s), between
:data:`MIN_AUTO_BUDGET` and :data:`MAX_AUTO_BUDGET`. Before the first measurement it is
:data:`DEFAULT_VERTEX_BUDGET` (60,000: about 0.1 s per swap on a 2-core machine without a
GPU, see docs/level-of-detail.md). ``configure(vertex_budget="auto")`` returns to it.
It never shrinks below the largest swap this machine already made without a visible stall
(:data:`VISIBLE_STALL_SECONDS`): what was shown once without a stall stays shown.

**Small stores are shown whole.** Under the adaptive budget a store whose whole level 0
holds at most :data:`SMALL_STORE_ROWS` layer rows (what napari draws: path rows, two ends
per segment plus the nodes of graphs and skeletons) gets at least that budget
(:func:`store_budget`): the five navis example neurons (~70,000 rows) or a tractogram of
300 streamlines are never thinned, in any view.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

#: fallback values (used when the environment variable is unset or invalid); the vertex
#: budget's is the adaptive budget's value before any swap was measured
DEFAULT_VERTEX_BUDGET = 60_000
DEFAULT_CACHE_MB = 512
DEFAULT_DEBOUNCE_MS = 150
#: how swaps put rows into Tracks layers (see module docstring)
DRAW_PATHS = ("fast", "napari")
#: vertices an overview fill draws beyond the budget (see module docstring)
DEFAULT_OVERVIEW_VERTICES = 1_500_000

#: the adaptive budget keeps one UI-thread data swap near this many seconds
TARGET_SWAP_SECONDS = 0.05
#: ... within these bounds
MIN_AUTO_BUDGET = 20_000
MAX_AUTO_BUDGET = 2_000_000
#: swaps smaller than this say little about the per-vertex cost (fixed costs dominate)
MIN_SAMPLE_VERTICES = 10_000
#: a swap that took at most this long was not a visible stall: the adaptive budget never
#: drops below the vertices of the largest such swap
VISIBLE_STALL_SECONDS = 0.1
#: under the adaptive budget, stores whose whole level 0 holds at most this many layer
#: rows are shown whole (:func:`store_budget`)
SMALL_STORE_ROWS = 250_000


def _env_int(name: str, default: int, minimum: int) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(float(raw.replace("_", "")))
    except ValueError:
        return default
    return max(value, minimum)


@dataclass
class SwapCost:
    """Running estimate of the UI-thread seconds one level-of-detail swap costs per vertex
    on this machine (an exponential average over measured swaps)."""

    seconds_per_vertex: float | None = None
    #: running estimate of the part of a swap that does not grow with its vertices
    fixed_seconds: float | None = None
    samples: int = 0
    smoothing: float = 0.2
    #: the budget last handed out: it moves only when the estimate leaves it by more than a
    #: quarter of a doubling (one step of the object-subset ladder), so that the objects
    #: shown do not change with every measurement
    current: int | None = None
    #: the most vertices one swap held without a visible stall (:data:`VISIBLE_STALL_SECONDS`)
    proven: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def observe(self, seconds: float, vertices: int, fixed_seconds: float = 0.0) -> None:
        """Record one swap of ``vertices`` vertices that took ``seconds``, of which
        ``fixed_seconds`` went to work that does not grow with the vertices (metadata,
        status, listeners of the refresh): the per-vertex estimate is of the rest, so a
        cheaper draw path shows in it at once, whatever the fixed costs."""
        if vertices < MIN_SAMPLE_VERTICES or seconds <= 0:
            return
        fixed = min(max(float(fixed_seconds), 0.0), float(seconds))
        value = max(float(seconds) - fixed, 1e-9) / float(vertices)
        with self._lock:
            if seconds <= VISIBLE_STALL_SECONDS:
                self.proven = max(self.proven, int(vertices))
            old = self.seconds_per_vertex
            self.seconds_per_vertex = value if old is None else old + self.smoothing * (value - old)
            old_fixed = self.fixed_seconds
            self.fixed_seconds = (
                fixed if old_fixed is None else old_fixed + self.smoothing * (fixed - old_fixed)
            )
            self.samples += 1

    def budget(self) -> int:
        """Vertices one swap can hold in :data:`TARGET_SWAP_SECONDS` after its fixed costs
        (at least half the target goes to the vertices; rounded to 1,000), and never fewer
        than the largest swap made without a visible stall."""
        spv = self.seconds_per_vertex
        if spv is None or spv <= 0:
            return max(DEFAULT_VERTEX_BUDGET, self.proven)
        fixed = min(self.fixed_seconds or 0.0, TARGET_SWAP_SECONDS / 2)
        n = int(round((TARGET_SWAP_SECONDS - fixed) / spv, -3))
        n = int(min(max(n, MIN_AUTO_BUDGET, self.proven), MAX_AUTO_BUDGET))
        with self._lock:
            current = self.current
            if (
                current is None
                or abs(math.log2(n / current)) > 0.25
                or n
                in (
                    MIN_AUTO_BUDGET,
                    MAX_AUTO_BUDGET,
                )
            ):
                self.current = current = n
        return int(current)


@dataclass
class LODSettings:
    """The current plugin-wide values (see module docstring). ``vertex_budget`` is ``None``
    when the budget adapts to the machine (:class:`SwapCost`)."""

    vertex_budget: int | None
    cache_mb: int
    debounce_ms: int
    draw_path: str = DRAW_PATHS[0]
    overview_vertices: int = DEFAULT_OVERVIEW_VERTICES
    swap_cost: SwapCost = field(default_factory=SwapCost)

    @property
    def fill_budget(self) -> int:
        """Vertices an overview fill may draw now (0 on napari's draw path)."""
        return int(self.overview_vertices) if self.draw_path == "fast" else 0

    @property
    def cache_bytes(self) -> int:
        return int(self.cache_mb) * 2**20


def _env_budget() -> int | None:
    raw = os.environ.get("NZV_VERTEX_BUDGET", "").strip().lower()
    if not raw or raw == "auto":
        return None
    value = _env_int("NZV_VERTEX_BUDGET", -1, 1)
    return None if value < 1 else value


def _env_draw_path() -> str:
    raw = os.environ.get("NZV_DRAW_PATH", "").strip().lower()
    return raw if raw in DRAW_PATHS else DRAW_PATHS[0]


_SETTINGS = LODSettings(
    vertex_budget=_env_budget(),
    cache_mb=_env_int("NZV_CACHE_MB", DEFAULT_CACHE_MB, 0),
    debounce_ms=_env_int("NZV_DEBOUNCE_MS", DEFAULT_DEBOUNCE_MS, 0),
    draw_path=_env_draw_path(),
    overview_vertices=_env_int("NZV_OVERVIEW_VERTICES", DEFAULT_OVERVIEW_VERTICES, 0),
)


#: callbacks told the new ``cache_bytes`` when ``cache_mb`` changes (the shared cache)
_CACHE_RESIZE: list[Callable[[int], None]] = []


def on_cache_resize(callback: Callable[[int], None]) -> None:
    """Call ``callback(cache_bytes)`` whenever :func:`configure` changes ``cache_mb``."""
    _CACHE_RESIZE.append(callback)


def get_settings() -> LODSettings:
    """The plugin-wide settings object (shared; read it, change it with :func:`configure`)."""
    return _SETTINGS


def vertex_budget() -> int:
    """Default vertex budget of a store: the configured one, else the adaptive one."""
    if _SETTINGS.vertex_budget is not None:
        return int(_SETTINGS.vertex_budget)
    return _SETTINGS.swap_cost.budget()


def store_budget(store_rows: int | None = None) -> int:
    """Default vertex budget of a store whose whole level 0 holds about ``store_rows`` layer
    rows: :func:`vertex_budget`, and under the adaptive budget at least
    :data:`SMALL_STORE_ROWS` for a store of at most that many rows (shown whole)."""
    budget = vertex_budget()
    if (
        _SETTINGS.vertex_budget is None
        and store_rows is not None
        and 0 < store_rows <= SMALL_STORE_ROWS
    ):
        budget = max(budget, SMALL_STORE_ROWS)
    return budget


def configure(
    *,
    vertex_budget: int | str | None = None,
    cache_mb: int | None = None,
    debounce_ms: int | None = None,
    draw_path: str | None = None,
    overview_vertices: int | None = None,
) -> LODSettings:
    """Change plugin-wide defaults. A new ``vertex_budget`` (``"auto"``: adapt to the
    machine) applies to open stores without a budget of their own and to stores opened later;
    ``cache_mb`` resizes the shared chunk cache (it evicts down to the new size on its next
    insertion); ``draw_path`` and ``overview_vertices`` apply from the next load."""
    if overview_vertices is not None:
        if int(overview_vertices) < 0:
            raise ValueError("overview_vertices must be >= 0")
        _SETTINGS.overview_vertices = int(overview_vertices)
    if draw_path is not None:
        if draw_path not in DRAW_PATHS:
            raise ValueError(f"draw_path must be one of {DRAW_PATHS}")
        _SETTINGS.draw_path = draw_path
    if isinstance(vertex_budget, str) and vertex_budget.strip().lower() == "auto":
        _SETTINGS.vertex_budget = None
    elif vertex_budget is not None:
        if int(vertex_budget) < 1:
            raise ValueError("vertex_budget must be at least 1")
        _SETTINGS.vertex_budget = int(vertex_budget)
    if cache_mb is not None:
        if int(cache_mb) < 0:
            raise ValueError("cache_mb must be >= 0")
        _SETTINGS.cache_mb = int(cache_mb)
        for resize in list(_CACHE_RESIZE):
            resize(_SETTINGS.cache_bytes)
    if debounce_ms is not None:
        _SETTINGS.debounce_ms = max(int(debounce_ms), 0)
    return _SETTINGS
