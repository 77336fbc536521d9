"""Streamlit-side helpers: `state` owns caching and session keys, `figures` draws (no streamlit)."""

import os

# Before ui.state imports torch: huge pages for traces (see vit_core/__init__.py).
os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")
