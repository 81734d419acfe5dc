"""Benchmarks and fitting tools: they print figures. Only ``rag.cli`` imports this package."""
