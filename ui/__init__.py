"""Streamlit-side helpers: `state` owns caching and session keys, `figures` draws (no streamlit)."""

import os

# Before ui.state imports torch: huge pages for traces (see vit_core/__init__.py).
os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")
# The server shares two cores with other sessions (and, in a test, with the browser). By default
# OpenMP's idle torch threads spin; when another process holds a core, a 2-thread forward pass
# then waits on a descheduled spinner: ViT-B/16 traced in 0.86 s instead of 0.27 s next to one
# busy core. Sleeping threads keep it at 0.53 s there, and cost little on idle cores (README
# "Performance"). Must be set before torch loads libgomp.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
