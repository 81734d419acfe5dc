"""The why-not probe as the Inspector and ``python -m rag why`` show it (no Streamlit here).

``stage_rows``: one row per stage (dense, BM25, RRF, rerank, evidence) with the chunk's rank,
score and whether that stage let it through. ``verdict``: the first stage that excluded it and
why; for a refused question, the rule that refused it, worded by ``rag.views.decision``. ``change_lines``: the suggested changes, smallest first. ``probe_html``: the chunk's text
with the query terms BM25 matched marked (escaped like every document text).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from rag.eval.gold.builder import goldset_paths
from rag.eval.gold.goldset import load_goldset
from rag.retrieval.probe import Place, ProbeResult
from rag.retrieval.trace import Dropped, FallbackAction
from rag.stages import Stage
from rag.views.decision import Explanation, explain
from rag.views.highlight import as_written, passage_html, term_spans

STAGE_COLUMNS = ["stage", "rank", "score", "passed", "note"]


def _place(place: Place | None, k: int) -> tuple[str, float | None, str]:
    if place is None or place.rank is None:
        return "—", None, "no"
    return f"#{place.rank} of {place.listed}", place.score, "yes" if place.rank <= k else f"no (recall_k {k})"


def stage_rows(r: ProbeResult) -> list[dict]:
    """The chunk at each stage, in pipeline order; a stage it never reached says what it would have had."""
    rows = []
    if r.active:
        rank, score, passed = _place(r.dense, r.recall_k)
        note = r.dense_note or "cosine with the query, against every stored vector"
        rows.append(_row(Stage.DENSE.label, rank, score, passed, note))
        rank, score, passed = _place(r.bm25, r.recall_k)
        rows.append(_row(Stage.BM25.label, rank, score, passed, terms_line(r) or "matches no query term"))
        in_rrf = r.candidate is not None and r.candidate.fused_rank is not None
        rank = f"#{r.fused_rank}" if r.fused_rank else "—"
        note = "as fused" if in_rrf else "where its ranks would have entered RRF"
        rows.append(_row(Stage.RRF.label, rank, r.fused_score, "yes" if in_rrf else "no", note))
        traced = r.candidate is not None and r.candidate.rerank_rank is not None
        rank = f"#{r.rerank_rank} of {r.pool}" if r.rerank_rank else "—"
        note = "as reranked" if traced else "had it been a candidate"
        rows.append(_row(Stage.RERANK.label, rank, r.rerank_score, "yes" if traced else "no", note))
    final = r.candidate.final_rank if r.candidate is not None else None
    passed = "yes" if final else "no"
    note = f"[{final}]" if final else excluded_by(r)
    rows.append(_row(Stage.EVIDENCE.label, f"#{final}" if final else "—", None, passed, note))
    return rows


def _row(stage: str, rank: str, score: float | None, passed: str, note: str) -> dict:
    return {"stage": stage, "rank": rank, "score": score, "passed": passed, "note": note}


def stage_frame(r: ProbeResult) -> pd.DataFrame:
    return pd.DataFrame(stage_rows(r), columns=STAGE_COLUMNS).astype({"score": "float64"})


def refused_by(r: ProbeResult) -> Explanation | None:
    """The decision that refused the question, when that (not a stage) kept the chunk out."""
    fb = r.decision
    if r.excluded_by is not Dropped.THRESHOLD or fb is None or fb.action is FallbackAction.ANSWER:
        return None
    return explain(r.question, fb, r.answerability)


def excluded_by(r: ProbeResult) -> str:
    """What kept it out, in a few words: the decision's rule for a refused question, else the stage."""
    refusal = refused_by(r)
    if refusal is not None:
        return refusal.rule
    return r.excluded_by.value if r.excluded_by else ""


def verdict(r: ProbeResult) -> str:
    """'Excluded by recall_cut: Outside recall_k 20 ...', 'Excluded by the absent-term rule
    ('sabbatical' in no searched chunk): the question was not answered. ...' or 'It is evidence [2].'"""
    if r.excluded_by is None:
        return r.reason
    refusal = refused_by(r)
    if refusal is not None:
        return f"{refusal.exclusion} {r.reason}"
    return f"Excluded by {r.excluded_by.value}: {r.reason}"


def change_lines(r: ProbeResult) -> list[str]:
    """The suggested changes, smallest first, each with what replaying it would change."""
    out = []
    for i, c in enumerate(r.changes):
        out.append(f"{'suggested' if i == 0 else 'or'}: {c.text}" + ("" if c.replayable else " (not a replay)"))
    return out


def terms_line(r: ProbeResult) -> str:
    """'annual 3.23 · paid 1.94 · lacks: astronaut' (BM25 terms of the original question)."""
    own = {t: v for t, v in r.terms.items() if t not in r.missing_terms}
    doc = {t: v for t, v in r.terms.items() if t in r.missing_terms}
    word = as_written([*r.terms, *r.missing_terms], r.question, r.text)  # "above", not the stem "abov"
    parts = [f"{word[t]} {v:.2f}" for t, v in sorted(own.items(), key=lambda kv: -kv[1])]
    parts += [f"+doc {word[t]} {v:.2f}" for t, v in sorted(doc.items(), key=lambda kv: -kv[1])]
    lacks = ", ".join(word[t] for t in r.missing_terms)
    return " · ".join(parts) + (f" · lacks: {lacks}" if lacks else "")


def probe_html(r: ProbeResult) -> str:
    """The chunk's text, query terms it matched marked (HTML-escaped first)."""
    own = [t for t in r.terms if t not in r.missing_terms]
    return passage_html(r.text, (), terms=term_spans(r.text, own))


def probe_text(r: ProbeResult) -> str:
    """The whole probe as plain text (the CLI's output)."""
    lines = [
        f"question: {r.question}",
        f"chunk: {r.chunk_id or '(none)'} of {r.doc_name or r.doc_id} — {r.state}",
        "",
        f"{'stage':<8} {'rank':<14} {'score':>9}  {'passed':<16} note",
    ]
    for row in stage_rows(r):
        score = "" if row["score"] is None else f"{row['score']:.4f}"
        lines.append(f"{row['stage']:<8} {row['rank']:<14} {score:>9}  {row['passed']:<16} {row['note']}")
    if r.rewrite_terms:
        lines.append(f"terms the rewrite added: {', '.join(r.rewrite_terms)}")
    lines += ["", verdict(r), *change_lines(r)]
    return "\n".join(lines)


@dataclass(frozen=True)
class GoldLabel:
    """A passage a gold set labels relevant for the question: what the user expected to see."""

    doc: str
    chunk_id: str = ""
    quote: str = ""

    @property
    def label(self) -> str:
        what = f"“{self.quote[:60]}”" if self.quote else (self.chunk_id or "the document")
        return f"{self.doc}: {what}"


def gold_labels(kb, question: str) -> list[GoldLabel]:
    """The relevant passages every gold set of ``kb`` (the bundled demo sets included) labels for
    ``question`` (same words, case and spacing aside)."""
    wanted = " ".join(question.lower().split())
    out: list[GoldLabel] = []
    for path in goldset_paths(kb, bundled=True):
        if not path.exists():
            continue
        for item in load_goldset(path).items:
            if " ".join(item.question.lower().split()) == wanted:
                out += [GoldLabel(p.doc, p.chunk_id, p.quote) for p in item.relevant if p.doc or p.chunk_id]
                out += [GoldLabel(d) for d in item.expected_docs if not any(g.doc == d for g in out)]
    return list(dict.fromkeys(out))
