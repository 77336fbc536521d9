"""Process settings for the app's server (and the benchmark, which measures the app's setting).

Importing this module changes nothing; `tune()` does, once, for the process that calls it. It is
called first thing by `app.py` and by `python -m benchmarks`, never by `vit_core` or
`ui.serving.state`,
so a notebook or a training job that imports the library keeps its own settings.

`OMP_WAIT_POLICY=PASSIVE`: idle OpenMP threads sleep instead of spinning. When another process
(a second replica) holds a core, a 2-thread pass otherwise waits on a descheduled spinner
(ViT-B/16 traced in 0.86 s instead of 0.27 s next to one busy core; 0.53 s with sleeping
threads). libgomp reads it when torch loads, so it takes effect only if torch has not been
imported yet; a value set before the start wins.
"""

from __future__ import annotations

import os
import sys

ENVIRONMENT = {"OMP_WAIT_POLICY": "PASSIVE"}


def tune() -> bool:
    """Set ENVIRONMENT for this process; True if torch was not loaded yet (so it takes effect)."""
    for name, value in ENVIRONMENT.items():
        os.environ.setdefault(name, value)
    return "torch" not in sys.modules
