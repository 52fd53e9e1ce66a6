"""The 0.9 container: one vlen-bytes Zarr array per logical array (FORMAT09 §2-§3)."""

from __future__ import annotations

from .v07 import V07Layout


class V09Layout(V07Layout):
    """Placeholder until the 0.9 container is implemented (issue 6)."""

    generation = "0.9"
