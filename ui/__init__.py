"""Streamlit-side helpers: `state` owns caching and session keys, `figures` draws (no streamlit)."""
