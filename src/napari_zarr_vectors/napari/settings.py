"""Plugin-wide level-of-detail settings: vertex budget, chunk-cache size, debounce delay.

Defaults come from environment variables read when the plugin is imported, and can be
changed at run time with :func:`configure` (e.g. from napari's console or a startup
script). Each opened store's controller can override the vertex budget
(``controller_for(layer).vertex_budget = n``).

================================  ============================  ==========================
environment variable              :func:`configure` keyword     default
================================  ============================  ==========================
``NZV_VERTEX_BUDGET``             ``vertex_budget``             60,000 vertices per store
``NZV_CACHE_MB``                  ``cache_mb``                  512 MiB (one shared cache)
``NZV_DEBOUNCE_MS``               ``debounce_ms``               150 ms
================================  ============================  ==========================

The default budget keeps one data update (napari rebuilding a Points, Vectors or Tracks
layer on the UI thread, about 1.5 us per point for Points in a 3-D view) under 0.1 s on a
2-core machine without a GPU, and the first frame of any store well under a second; see
docs/level-of-detail.md.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

#: fallback values (used when the environment variable is unset or invalid)
DEFAULT_VERTEX_BUDGET = 60_000
DEFAULT_CACHE_MB = 512
DEFAULT_DEBOUNCE_MS = 150


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
class LODSettings:
    """The current plugin-wide values (see module docstring)."""

    vertex_budget: int
    cache_mb: int
    debounce_ms: int

    @property
    def cache_bytes(self) -> int:
        return int(self.cache_mb) * 2**20


_SETTINGS = LODSettings(
    vertex_budget=_env_int("NZV_VERTEX_BUDGET", DEFAULT_VERTEX_BUDGET, 1),
    cache_mb=_env_int("NZV_CACHE_MB", DEFAULT_CACHE_MB, 0),
    debounce_ms=_env_int("NZV_DEBOUNCE_MS", DEFAULT_DEBOUNCE_MS, 0),
)


def get_settings() -> LODSettings:
    """The plugin-wide settings object (shared; read it, change it with :func:`configure`)."""
    return _SETTINGS


def vertex_budget() -> int:
    """Default vertex budget of a newly opened store."""
    return int(_SETTINGS.vertex_budget)


def configure(
    *,
    vertex_budget: int | None = None,
    cache_mb: int | None = None,
    debounce_ms: int | None = None,
) -> LODSettings:
    """Change plugin-wide defaults. A new ``vertex_budget`` applies to stores opened later
    (and to open ones that never got their own); ``cache_mb`` resizes the shared chunk
    cache (it evicts down to the new size on its next insertion)."""
    if vertex_budget is not None:
        if int(vertex_budget) < 1:
            raise ValueError("vertex_budget must be at least 1")
        _SETTINGS.vertex_budget = int(vertex_budget)
    if cache_mb is not None:
        if int(cache_mb) < 0:
            raise ValueError("cache_mb must be >= 0")
        _SETTINGS.cache_mb = int(cache_mb)
        from .loader import shared_cache

        shared_cache().max_bytes = _SETTINGS.cache_bytes  # the next insertion evicts down
    if debounce_ms is not None:
        _SETTINGS.debounce_ms = max(int(debounce_ms), 0)
    return _SETTINGS
