"""Hybrid retrieval: dense + BM25 recall, RRF fusion, rerank, fallback, rewrite, evidence shaping."""
