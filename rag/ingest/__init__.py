"""Ingestion: parse -> normalize -> chunk -> embed -> publish.

Entry points: ``rag.ingest.safety.check_upload``, ``rag.ingest.parsers.parse_file`` and
``rag.ingest.chunking.chunk_document``. Kept import-free so light callers stay light.
"""
