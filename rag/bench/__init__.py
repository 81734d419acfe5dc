"""Benchmarks and fitting tools; only rag/cli imports this package."""
