"""Stores: Chroma vectors (embedded or server), BM25 index, SQLite catalog."""
