"""The server: one process's compute for every session — its options, the forward worker, the
byte-bounded cache of models and traces, the read-ahead, and the one guarded module that touches
Streamlit's internals. No page draws here."""
