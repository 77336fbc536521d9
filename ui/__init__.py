"""Streamlit-side helpers: `state` owns caching, `keys` the session keys, `figures` draws
(no streamlit), `process` tunes the server process (only when app.py calls it). Importing any of
them changes nothing in the process."""
