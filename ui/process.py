"""Process tuning for the app's server (and the benchmark, which measures the app's setting).

Importing this module changes nothing; `tune()` does, once, for the process that calls it. It is
called first thing by `app.py` and by `python -m benchmarks`, never by `vit_core` or `ui.state`,
so a notebook or a training job that imports the library keeps its own settings.

What it sets, and why (measured on this project's 2-core VM, README "Performance"):
- `THP_MEM_ALLOC_ENABLE=1`: transparent huge pages in torch's CPU allocator. Measured when a
  trace still kept every intermediate alive (~170 MB for ViT-B/16; the lean trace keeps ~8 MB),
  so each trace touched fresh memory: huge pages cut its page faults ~5x (run_trace / timm
  1.23 -> 1.09). A full trace (`lean=False`) still does. Torch reads it once, when it loads.
- `OMP_WAIT_POLICY=PASSIVE`: idle OpenMP threads sleep instead of spinning. When another process
  holds a core, a 2-thread pass otherwise waits on a descheduled spinner (ViT-B/16 traced in
  0.86 s instead of 0.27 s next to one busy core; 0.53 s with sleeping threads). libgomp reads
  it when torch loads.
- `keep_freed_memory()`: glibc keeps freed memory for the next trace instead of returning it to
  the kernel, where fresh memory costs ~2.5 ms per MB of kernel time on this VM. run_trace / plain
  forward on ViT-B/16: 1.02-1.16 with glibc's defaults, 0.95-1.01 with it (five runs each,
  2026-11-22). The price: the process keeps its peak heap (about one trace more).
- At most ARENAS malloc arenas. glibc gives threads that meet in malloc arenas of their own (up
  to 8 per core), and Streamlit runs every script run on a new thread: with freed memory kept,
  each arena kept its own peak, and 30 students on ViT-B/16 grew the server to 4.1 GB with a
  1 GB cache.

The two environment variables only take effect if torch has not been imported yet; `tune()`
reports which settings are in force. Either can be overridden by setting it before the start.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

MMAP_THRESHOLD = 32 << 20  # blocks above this still come from (and go back to) the kernel
ARENAS = 2  # malloc arenas the threads share
ENVIRONMENT = {"THP_MEM_ALLOC_ENABLE": "1", "OMP_WAIT_POLICY": "PASSIVE"}
_done: dict[str, bool] | None = None


def keep_freed_memory() -> bool:
    """Ask glibc to keep freed memory for reuse: no trimming, a fixed 32 MB mmap threshold, and
    at most ARENAS arenas to keep it in.

    Returns False where the C library has no mallopt (not glibc, e.g. macOS or musl's stub).
    """
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_threshold, m_arena_max = -1, -3, -8
    return bool(mallopt(m_mmap_threshold, MMAP_THRESHOLD)) and bool(
        mallopt(m_trim_threshold, 2**31 - 1)) and bool(mallopt(m_arena_max, ARENAS))


def tune() -> dict[str, bool]:
    """Apply the settings above to this process (once; later calls return the first answer).

    Returns:
        {"environment": the variables were set before torch loaded, "keep_freed_memory": glibc
        agreed to keep freed memory}.
    """
    global _done
    if _done is None:
        early = "torch" not in sys.modules
        for name, value in ENVIRONMENT.items():
            os.environ.setdefault(name, value)
        _done = {"environment": early, "keep_freed_memory": keep_freed_memory()}
    return _done


def memory_is_kept() -> bool:
    """Whether this process asked glibc to keep freed memory (the worker warms memory only then)."""
    return bool(_done and _done["keep_freed_memory"])
