"""A read racing another client's write (chroma-core/chroma#4212) is repeated, nothing else is."""

import pytest
from chromadb.errors import InternalError

from rag.store import vectors

RACE = "Error executing plan: Internal error: Error creating hnsw segment reader: Nothing found on disk"


def _failing(times: int, message: str):
    calls = []

    def op():
        calls.append(1)
        if len(calls) <= times:
            raise InternalError(message)
        return "rows"

    return op, calls


def test_a_segment_still_being_written_is_read_again(monkeypatch):
    monkeypatch.setattr(vectors, "SETTLE_DELAYS_S", (0.0, 0.0, 0.0))
    op, calls = _failing(2, RACE)
    assert vectors._settled("query", op) == "rows"
    assert len(calls) == 3


def test_a_segment_that_never_settles_raises_after_the_last_wait(monkeypatch):
    monkeypatch.setattr(vectors, "SETTLE_DELAYS_S", (0.0, 0.0))
    op, calls = _failing(10, RACE)
    with pytest.raises(InternalError, match="hnsw segment reader"):
        vectors._settled("query", op)
    assert len(calls) == 3  # two waits, then the last try's error


def test_other_internal_errors_are_not_repeated(monkeypatch):
    monkeypatch.setattr(vectors, "SETTLE_DELAYS_S", (0.0, 0.0, 0.0))
    op, calls = _failing(1, "Error executing plan: collection does not exist")
    with pytest.raises(InternalError, match="does not exist"):
        vectors._settled("query", op)
    assert len(calls) == 1
