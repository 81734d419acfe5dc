"""Ragscope library: ingestion, hybrid retrieval with a full trace, cited answers, evaluation."""

__version__ = "0.1.0"
