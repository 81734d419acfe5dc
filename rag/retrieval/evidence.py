"""Evidence shaping: dedupe, neighbour expansion within a character budget, strongest first.

Input is the reranked, kept candidates strongest first. Duplicates (same chunk id, or the same
text after whitespace/case folding) are dropped with ``Dropped.DEDUPE``; candidates past the
budget with ``Dropped.BUDGET`` (the strongest one is always kept). Remaining budget goes to the
neighbours (previous and next chunk of the same document revision) of the strongest first.
The evidence is numbered ``final_rank`` 1..n strongest first: each kept candidate in rerank
order, followed by the neighbours added for it (in document order). That is the order the
generator sees, the order Chat and the Inspector show, and so the [n] an answer cites: an
answer from the best passage cites [1]. (A "lost in the middle" order, strongest at both ends,
would number the second-best passage last, and a neighbour before the passage it was added for.)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag.records import ChunkRecord
from rag.retrieval.trace import Candidate, Dropped

NeighboursFn = Callable[[str], list[ChunkRecord]]


@dataclass
class Group:
    """A kept candidate, then the neighbours added for it in document order."""

    anchor: Candidate
    members: list[Candidate]


def text_key(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def candidate_from_chunk(chunk: ChunkRecord, parent: str) -> Candidate:
    return Candidate.from_chunk(chunk, expanded_from=parent)


def dedupe_and_budget(ranked: Sequence[Candidate], budget: int) -> list[Candidate]:
    """Kept candidates within the budget; marks the others' ``dropped_by``."""
    kept: list[Candidate] = []
    ids: set[str] = set()
    texts: set[str] = set()
    used = 0
    for cand in ranked:
        key = text_key(cand.text)
        if cand.chunk_id in ids or key in texts:
            cand.dropped_by = Dropped.DEDUPE
            continue
        if kept and used + len(cand.text) > budget:
            cand.dropped_by = Dropped.BUDGET
            continue
        kept.append(cand)
        ids.add(cand.chunk_id)
        texts.add(key)
        used += len(cand.text)
    return kept


def expand(kept: list[Candidate], neighbours: NeighboursFn | None, budget: int, pool: dict[str, Candidate]):
    """Groups of anchor + neighbours within what is left of ``budget``.

    ``pool`` maps chunk ids to candidates already in the trace (a neighbour that was a candidate
    reuses its row); new neighbour rows are added to it."""
    groups = [Group(c, [c]) for c in kept]
    used = sum(len(c.text) for c in kept)
    present = {c.chunk_id for c in kept}
    texts = {text_key(c.text) for c in kept}
    for group in groups if neighbours else []:
        for chunk in neighbours(group.anchor.chunk_id):
            if chunk.id in present or text_key(chunk.text) in texts or used + len(chunk.text) > budget:
                continue
            cand = pool.get(chunk.id) or candidate_from_chunk(chunk, group.anchor.chunk_id)
            cand.expanded_from, cand.dropped_by = group.anchor.chunk_id, None
            pool[chunk.id] = cand
            group.members.append(cand)
            present.add(chunk.id)
            texts.add(text_key(chunk.text))
            used += len(chunk.text)
        group.members[1:] = sorted(group.members[1:], key=lambda c: (c.char_start, c.chunk_id))
    return groups


def shape(
    ranked: Sequence[Candidate],
    budget: int,
    neighbours: NeighboursFn | None = None,
    pool: dict[str, Candidate] | None = None,
) -> list[Candidate]:
    """The evidence in final order with ``final_rank`` set; ``pool`` receives neighbour rows."""
    pool = {} if pool is None else pool
    kept = dedupe_and_budget(ranked, budget)
    ordered = [m for g in expand(kept, neighbours, budget, pool) for m in g.members]
    for i, cand in enumerate(ordered, start=1):
        cand.final_rank = i
    return ordered
