"""A benchmark process's resident memory, read from ``/proc/self`` (Linux).

``ru_maxrss`` is not used: it survives ``exec``, so a child started by fork and exec (every
benchmark's timed process, every dask worker) reports its parent's peak when that is higher.
"""

from __future__ import annotations

import os
import resource


def rss_now_kb() -> int:
    """This process's resident memory now, in KiB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def peak_rss_kb() -> int:
    """This process image's peak resident memory (``VmHWM``), in KiB; ``ru_maxrss`` where
    ``/proc`` is not there."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def peak_rss_mb() -> float:
    """:func:`peak_rss_kb` in MiB."""
    return peak_rss_kb() / 1024
