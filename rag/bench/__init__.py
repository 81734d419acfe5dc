"""Benchmarks and fitting tools: they print figures and write docs/BENCHMARKS.md or calibration files.

Only ``rag.cli`` imports this package; nothing in the library depends on it. Figures live in
docs/BENCHMARKS.md, never in docstrings.
"""
