"""Evidence shaping: dedupe, neighbour expansion within a character budget, lost-in-the-middle order.

Input is the reranked, kept candidates strongest first. Duplicates (same chunk id, or the same
text after whitespace/case folding) are dropped with ``Dropped.DEDUPE``; candidates past the
budget with ``Dropped.BUDGET`` (the strongest one is always kept). Remaining budget goes to the
neighbours (previous and next chunk of the same document revision) of the strongest first; a
neighbour sits beside its parent so the text reads on. Groups are then placed strongest at
both ends, weakest in the middle (Liu et al. 2023, "Lost in the Middle"), and numbered
``final_rank`` 1..n in that order, which is the order the generator sees.
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
    """A kept candidate and the neighbours added for it, in document order."""

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
        group.members.sort(key=lambda c: (c.char_start, c.chunk_id))
    return groups


def ends_first(items: Sequence) -> list:
    """Strongest at both ends: [1, 2, 3, 4, 5] -> [1, 3, 5, 4, 2]."""
    return list(items[0::2]) + list(items[1::2])[::-1]


def shape(
    ranked: Sequence[Candidate],
    budget: int,
    neighbours: NeighboursFn | None = None,
    pool: dict[str, Candidate] | None = None,
) -> list[Candidate]:
    """The evidence in final order with ``final_rank`` set; ``pool`` receives neighbour rows."""
    pool = {} if pool is None else pool
    kept = dedupe_and_budget(ranked, budget)
    ordered = [m for g in ends_first(expand(kept, neighbours, budget, pool)) for m in g.members]
    for i, cand in enumerate(ordered, start=1):
        cand.final_rank = i
    return ordered
