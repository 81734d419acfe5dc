"""Input caps that are not about files (those are checked in rag.ingest.safety and the parsers)."""

from __future__ import annotations

from rag.config import Settings
from rag.errors import InvalidQuery, LimitExceeded


def check_query(query: str, settings: Settings, allow_empty: bool = False) -> str:
    """The question, unchanged. Raises InvalidQuery when empty, LimitExceeded over ``max_query_chars``.

    Check before any embedding or tokenizing, so that an oversized question costs nothing.
    """
    if not isinstance(query, str):
        raise ValueError(f"query must be a str, got {type(query).__name__}")
    if not allow_empty and not query.strip():
        raise InvalidQuery("The question is empty.")
    if len(query) > settings.max_query_chars:
        raise LimitExceeded(
            f"The question is {len(query):,} characters long; the limit is {settings.max_query_chars:,}.",
            fix="Ask a shorter question; to ask about a long text, upload it as a document first.",
        )
    return query
