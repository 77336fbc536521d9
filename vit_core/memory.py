"""Let a process reuse the memory its last trace freed (glibc only; a no-op elsewhere).

A trace keeps every intermediate alive (~170 MB for ViT-B/16). With glibc's defaults, freed
blocks of that size go back to the kernel (a dynamic mmap threshold and heap trimming), so the next
trace gets fresh memory again, and on this project's VM fresh memory costs ~2.5 ms per MB of kernel
time. Measured with `python -m benchmarks --only trace`: run_trace / plain forward on ViT-B/16
1.02-1.16 with the defaults, 0.95-1.01 after `keep_freed_memory()` (five runs each, 2026-11-22).

The price: the process keeps its peak heap instead of returning it (about one trace more).
The app calls this once (ui/worker.py), as does the benchmark; library users may opt in.
"""

from __future__ import annotations

import ctypes
import ctypes.util

MMAP_THRESHOLD = 32 << 20  # blocks above this still come from (and go back to) the kernel


def keep_freed_memory() -> bool:
    """Ask glibc to keep freed memory for reuse: no trimming, a fixed 32 MB mmap threshold.

    Returns False where the C library has no mallopt (not glibc, e.g. macOS or musl's stub).
    """
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3
    return bool(mallopt(m_mmap_threshold, MMAP_THRESHOLD)) and bool(
        mallopt(m_trim_threshold, 2**31 - 1))
