"""Answer metrics that can fail: key facts, citations against gold spans, off-topic sentences,
validation failures.

Per question (``answer_counts``), from the anchored gold item and the answer as shown:

* **key facts**: how many of the item's ``key_facts`` occur in the shown answer (token
  sequence match, :func:`rag.eval.metrics.contains_answer`; a refusal holds none);
* **citations on gold**: shown citations whose supporting span falls on a ``relevant`` span of
  the question (see :func:`on_gold`);
* **gold spans cited**: grade-2 relevant spans that at least one shown citation falls on;
* **off-topic sentences**: shown claim sentences none of whose citations falls on a relevant
  span (gap statements and lead-ins cite nothing and are not counted);
* **drafts**: attempts the generator made, how many the validator rejected, and why (the
  issue codes of the rejected drafts' failed checks, e.g. uncited, unsupported, number mismatch).

The citation figures need span-level labels (quotes, spans or chunk ids); an item whose
relevant labels are whole documents gets ``None`` there, never a free 1.0.

Over a run (``quality_summary``): key-fact recall and citation recall are means over
answerable questions (each question counts once, a refusal scores 0); citation precision and
the off-topic share pool citations and sentences over answered questions; validation failures
are shares of the questions that drafted at least once, and the share of all drafts rejected
with its reasons pooled.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from rag.answer.citations import strip_citations
from rag.answer.result import Answer, Citation, SentenceKind
from rag.eval.gold.goldset import GoldItem, Passage
from rag.eval.metrics import contains_answer, mean

GOLD_GRADE = 2  # citation recall counts the spans graded 2 ("answers the question")
MIN_OVERLAP_SHARE = 0.5  # a citation falls on a gold span when they share half of the shorter one


@dataclass(frozen=True)
class AnswerCounts:
    """The per-question counts the run summary pools (see the module docstring)."""

    key_facts: int
    key_facts_found: int
    citations_on_gold: int | None
    sentences_shown: int
    sentences_off_topic: int | None
    gold_spans: int | None
    gold_spans_cited: int | None
    drafts: int
    drafts_rejected: int
    rejection_reasons: dict[str, int]


def on_gold(citation: Citation, passage: Passage) -> bool:
    """The citation's document span falls on the labelled passage: same document and an overlap
    of at least half of the shorter span (a chunk-id label matches the cited chunk)."""
    if passage.kind == "chunk":
        return citation.chunk_id == passage.chunk_id
    if passage.kind != "span" or passage.doc not in (citation.doc_name, citation.doc_id):
        return False
    start, end = passage.start or 0, passage.end or 0
    overlap = min(end, citation.end) - max(start, citation.start)
    shorter = min(end - start, citation.end - citation.start)
    return overlap > 0 and overlap >= MIN_OVERLAP_SHARE * shorter


def span_labelled(item: GoldItem) -> bool:
    """The item has relevant labels finer than whole documents (needed for the citation figures)."""
    return bool(item.relevant) and all(p.kind in ("span", "chunk") for p in item.relevant)


def key_facts_found(text: str, facts: Sequence[str]) -> int:
    plain = strip_citations(text)
    return sum(1 for fact in facts if contains_answer(plain, fact))


def answer_counts(item: GoldItem, answer: Answer) -> AnswerCounts:
    """Counts for one anchored gold item and its answer (a refusal shows nothing)."""
    shown = not answer.refused
    cites = list(answer.citations) if shown else []
    claims = [i for i, s in enumerate(answer.sentences) if s.kind is SentenceKind.CLAIM] if shown else []
    labelled = span_labelled(item)
    on = [c for c in cites if any(on_gold(c, p) for p in item.relevant)]
    gold = [p for p in item.relevant if p.grade >= GOLD_GRADE]
    on_topic = {c.sentence for c in on}
    return AnswerCounts(
        key_facts=len(item.key_facts),
        key_facts_found=key_facts_found(answer.text, item.key_facts) if shown else 0,
        citations_on_gold=len(on) if labelled else None,
        sentences_shown=len(claims),
        sentences_off_topic=sum(1 for i in claims if i not in on_topic) if labelled else None,
        gold_spans=len(gold) if labelled else None,
        gold_spans_cited=sum(1 for p in gold if any(on_gold(c, p) for c in cites)) if labelled else None,
        drafts=answer.attempts,
        drafts_rejected=len(answer.drafts_rejected),
        rejection_reasons=rejection_reasons(answer),
    )


def rejection_reasons(answer: Answer) -> dict[str, int]:
    """Issue code -> how many failed checks of the rejected drafts carried it."""
    counts: Counter[str] = Counter(i.code.value for r in answer.drafts_rejected for i in r.issues)
    return dict(counts.most_common())


def quality_summary(questions: Sequence[Any]) -> dict[str, Any]:
    """Run-level answer metrics from ``QuestionResult``s (errors already left out)."""
    answerable = [q for q in questions if not q.should_refuse and q.kind != "retrieval"]  # answers ran
    with_facts = [q for q in answerable if q.key_facts]
    labelled = [q for q in answerable if q.citations_on_gold is not None]
    answered = [q for q in labelled if not q.refused]
    with_gold = [q for q in labelled if q.gold_spans]
    cited = sum(q.citations_shown for q in answered)
    sentences = sum(q.sentences_shown for q in answered)
    drafted = [q for q in questions if q.drafts]
    return {
        "key_fact_recall": mean(q.key_facts_found / q.key_facts for q in with_facts),
        "key_fact_questions": len(with_facts),
        "citation_precision": _share(sum(q.citations_on_gold for q in answered), cited),
        "citations": cited,
        "citation_recall": mean((q.gold_spans_cited or 0) / q.gold_spans for q in with_gold),
        "gold_span_questions": len(with_gold),
        "off_topic_share": _share(sum(q.sentences_off_topic for q in answered), sentences),
        "sentences": sentences,
        "drafted": len(drafted),
        "first_draft_rejected": sum(1 for q in drafted if q.drafts_rejected),
        "all_drafts_rejected": sum(1 for q in drafted if q.drafts_rejected >= q.drafts),
        "rejection_rate_first": _share(sum(1 for q in drafted if q.drafts_rejected), len(drafted)),
        "rejection_rate_final": _share(sum(1 for q in drafted if q.drafts_rejected >= q.drafts), len(drafted)),
        "drafts": sum(q.drafts for q in drafted),
        "drafts_rejected": sum(q.drafts_rejected for q in drafted),
        "draft_rejection_share": _share(sum(q.drafts_rejected for q in drafted), sum(q.drafts for q in drafted)),
        "rejection_reasons": _pooled(q.rejection_reasons for q in drafted),
    }


def _pooled(counts: Iterable[dict[str, int]]) -> dict[str, int]:
    total: Counter[str] = Counter()
    for c in counts:
        total.update(c or {})
    return dict(total.most_common())


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None
