"""Benchmarks that print tables (no timed tests): `python -m benchmarks --help`."""
