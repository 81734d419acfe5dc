"""Tables the Retrieval Inspector shows, built from a ``Trace`` (pure pandas, no Streamlit).

``ledger_frame``: one row per candidate with every stage's rank and score.
``rank_flow``: the same ranks in long form (candidate, stage, rank) for the rank-flow chart.
``query_frame``: what each query (original, rewrite, HyDE) found on its own.
``replay_frame``: a replay's evidence moves (in, out, re-ranked) with document names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import pandas as pd

from rag.retrieval.matches import TermMatch
from rag.retrieval.trace import Candidate, Trace
from rag.stages import RANKED_STAGES, TIMED_STAGES, TOTAL, Stage
from rag.store.tokenize import token_spans
from rag.views.highlight import md_escape

STAGES = tuple(s.label for s in RANKED_STAGES)  # as the rank-flow chart shows them
_RANK_ATTR = {
    Stage.DENSE: "dense_rank",
    Stage.BM25: "sparse_rank",
    Stage.RRF: "fused_rank",
    Stage.RERANK: "rerank_rank",
    Stage.EVIDENCE: "final_rank",
}
_STAGE_ATTR = {s.label: _RANK_ATTR[s] for s in RANKED_STAGES}
LEDGER_COLUMNS = [
    "final",
    "status",
    "dropped_by",
    "dense_rank",
    "dense_score",
    "dense_model",
    "bm25_rank",
    "bm25_score",
    "rrf_rank",
    "rrf_score",
    "rerank_rank",
    "rerank_score",
    "doc",
    "page",
    "heading",
    "queries",
    "bm25_terms",
    "text",
    "chunk_id",
]
PREVIEW_CHARS = 160
TIMING_ORDER = (*TIMED_STAGES, TOTAL)


def bm25_label(settings: dict) -> str:
    """What produced a trace's BM25 scores (``settings`` as stored in the trace)."""
    weight = float(settings.get("bm25_doc_weight", 0.0) or 0.0)
    how = f"chunk score + {weight:g} x document score" if weight else "chunk score"
    return f"bm25s (Lucene BM25, k1 1.5, b 0.75): {how}"


def dense_label(trace: Trace) -> str:
    """The dense retrievers that ran (e5 for a Chinese question, the knowledge base's embedder
    for the rest), or the embedder for a trace stored before they were recorded."""
    return " + ".join(str(m.model) for m in trace.dense_models) or str(trace.embedder.model)


def ledger_columns(trace: Trace) -> dict[str, tuple[str, str, str]]:
    """column -> (header, number format or '' for text, help); the help names the model behind each score."""
    return {
        "final": ("final", "int", "Position [n] in the evidence given to the generator"),
        "status": ("status", "", "evidence, neighbour (added by expansion) or dropped"),
        "dropped_by": ("dropped by", "", "Why it is not evidence"),
        "dense_rank": ("dense #", "int", ""),
        "dense_score": ("dense score", "%.3f", f"Cosine similarity from {dense_label(trace)}"),
        "dense_model": ("dense model", "", "The embedder whose list gave the dense rank"),
        "bm25_rank": ("BM25 #", "int", ""),
        "bm25_score": ("BM25 score", "%.2f", bm25_label(trace.settings)),
        "rrf_rank": ("RRF #", "int", ""),
        "rrf_score": ("RRF score", "%.4f", "Reciprocal Rank Fusion over all queries and both retrievers"),
        "rerank_rank": ("rerank #", "int", ""),
        "rerank_score": ("rerank score", "%.3f", f"From {trace.reranker}"),
        "bm25_terms": (
            "BM25 terms",
            "",
            "Query terms BM25 matched in the chunk and what each added to its BM25 score (bm25s, one term at a "
            "time); '+doc' terms score only through its document; '(rewrite)' marks terms the rewrite added",
        ),
        "chunk_id": ("chunk id", "", ""),
    }


def status_of(c: Candidate) -> str:
    if c.kept:
        return "neighbour" if c.expanded_from else "evidence"
    return "dropped"


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def terms_text(text: str, match: TermMatch | None, question: str = "") -> str:
    """'annual 3.23 · paid 1.94 · +doc how 0.53': each term as the chunk writes it (or else as the
    question does: a term only its document has), best first."""
    if match is None:
        return ""
    surface: dict[str, str] = {}
    for source in (text or "", question):
        for term, start, end in token_spans(source):
            surface.setdefault(term, source[start:end].lower())
    parts = [
        f"{'+doc ' if term in match.via_document else ''}{surface.get(term, term)} {value:.2f}"
        + (" (rewrite)" if term in match.rewrite else "")
        for term, value in sorted({**match.terms, **match.via_document}.items(), key=lambda kv: -kv[1])
    ]
    return " · ".join(parts)


def _row(c: Candidate, match: TermMatch | None = None, question: str = "") -> dict:
    return {
        "final": c.final_rank,
        "status": status_of(c),
        "dropped_by": c.dropped_by.value if c.dropped_by else "",
        "doc": c.doc_name or c.doc_id,
        "page": c.page,
        "heading": " › ".join(c.heading_path),
        "dense_rank": c.dense_rank,
        "dense_score": c.dense_score,
        "dense_model": c.dense_model,
        "bm25_rank": c.sparse_rank,
        "bm25_score": c.sparse_score,
        "rrf_rank": c.fused_rank,
        "rrf_score": c.fused_score,
        "rerank_rank": c.rerank_rank,
        "rerank_score": c.rerank_score,
        "queries": ", ".join(f"q{i + 1}" for i in c.found_by),
        "bm25_terms": terms_text(c.text, match, question),
        "text": preview(c.text),
        "chunk_id": c.chunk_id,
    }


def ledger_frame(trace: Trace, matches: Mapping[str, TermMatch] | None = None) -> pd.DataFrame:
    """Every candidate, evidence first (by final rank), then by rerank, RRF rank; with ``matches``
    (``rag.retrieval.matches``) the BM25 terms each one matched."""
    rows = [_row(c, (matches or {}).get(c.chunk_id), trace.question) for c in trace.candidates]
    df = pd.DataFrame(rows, columns=LEDGER_COLUMNS)
    for col in ("final", "dense_rank", "bm25_rank", "rrf_rank", "rerank_rank", "page"):
        df[col] = df[col].astype("Int64")
    for col in ("dense_score", "bm25_score", "rrf_score", "rerank_score"):
        df[col] = df[col].astype("float64")
    order = ["final", "rerank_rank", "rrf_rank"]
    return df.sort_values(order, na_position="last", kind="stable").reset_index(drop=True)


def filter_ledger(
    df: pd.DataFrame, statuses: Iterable[str] = (), docs: Iterable[str] = (), text: str = ""
) -> pd.DataFrame:
    """Rows whose status and document are among those given (all when empty) and that contain ``text``."""
    statuses, docs = list(statuses), list(docs)
    mask = pd.Series(True, index=df.index)
    if statuses:
        mask &= df["status"].isin(statuses) | df["dropped_by"].isin(statuses)
    if docs:
        mask &= df["doc"].isin(docs)
    if text.strip():
        needle = text.strip().lower()
        hay = (df["text"] + " " + df["heading"] + " " + df["doc"]).str.lower()
        mask &= hay.str.contains(needle, regex=False)
    return df[mask].reset_index(drop=True)


def status_options(df: pd.DataFrame) -> list[str]:
    """Statuses and drop reasons present, for the filter widget."""
    seen = list(dict.fromkeys([*df["status"], *(d for d in df["dropped_by"] if d)]))
    return seen


def label(c: Candidate) -> str:
    """Short readable name of a candidate for charts and legends."""
    where = f"{c.doc_name or c.doc_id} p.{c.page}"
    return f"{where} #{c.chunk_id.rsplit(':', 1)[-1]}"


def rank_flow(trace: Trace, limit: int = 25) -> pd.DataFrame:
    """Long form (candidate, stage, rank, status) for the candidates that reached the reranker.

    Limited to the ``limit`` best by RRF rank so the chart stays readable; neighbours added by
    expansion have no retrieval ranks and are left out.
    """
    ranked = [c for c in trace.candidates if c.fused_rank is not None]
    ranked.sort(key=lambda c: c.fused_rank)
    rows = []
    for c in ranked[:limit]:
        for stage in STAGES:
            rank = getattr(c, _STAGE_ATTR[stage])
            if rank is not None:
                rows.append({"candidate": label(c), "stage": stage, "rank": rank, "status": status_of(c)})
    return pd.DataFrame(rows, columns=["candidate", "stage", "rank", "status"])


def score_frame(trace: Trace) -> pd.DataFrame:
    """Rerank scores with each candidate's status (the distribution chart's data)."""
    rows = [
        {"candidate": label(c), "rerank_score": c.rerank_score, "status": status_of(c)}
        for c in trace.candidates
        if c.rerank_score is not None
    ]
    return pd.DataFrame(rows, columns=["candidate", "rerank_score", "status"])


def timings_frame(trace: Trace) -> pd.DataFrame:
    """Per-stage milliseconds in pipeline order (unknown stages after, total last)."""
    known = [k for k in TIMING_ORDER if k in trace.timings_ms and k != "total"]
    extra = sorted(k for k in trace.timings_ms if k not in TIMING_ORDER)
    keys = known + extra + (["total"] if "total" in trace.timings_ms else [])
    return pd.DataFrame({"stage": keys, "ms": [float(trace.timings_ms[k]) for k in keys]})


def query_frame(trace: Trace) -> pd.DataFrame:
    """One row per query: its kind, why it was added, how many hits each retriever gave, what only it found."""
    rows = []
    by_id = trace.by_id()
    for i, q in enumerate(trace.queries):
        mine = set(q.dense_ids) | set(q.sparse_ids)
        others = set()
        for j, other in enumerate(trace.queries):
            if j != i:
                others |= set(other.dense_ids) | set(other.sparse_ids)
        only = [cid for cid in [*q.dense_ids, *q.sparse_ids] if cid in mine - others]
        names = [label(by_id[cid]) for cid in dict.fromkeys(only) if cid in by_id]
        rows.append(
            {
                "query": f"q{i + 1}",
                "kind": q.kind,
                "text": q.text,
                "reason": q.reason,
                "dense_hits": len(q.dense_ids),
                "bm25_hits": len(q.sparse_ids),
                "found_only_by_this": "; ".join(names[:8]) + (" …" if len(names) > 8 else ""),
            }
        )
    return pd.DataFrame(rows)


def replay_frame(old: Trace, new: Trace, moved_in: Sequence[str], moved_out: Sequence[str]) -> pd.DataFrame:
    """The evidence of both traces side by side: in both, moved in, moved out, with ranks."""
    old_by, new_by = old.by_id(), new.by_id()
    rows = []
    for c in new.evidence():
        prev = old_by.get(c.chunk_id)
        change = "moved in" if c.chunk_id in moved_in else "kept"
        rows.append(_replay_row(c, change, prev.final_rank if prev else None, c.final_rank))
    for cid in moved_out:
        c = old_by[cid]
        now = new_by.get(cid)
        why = f"moved out ({now.dropped_by.value})" if now is not None and now.dropped_by else "moved out"
        rows.append(_replay_row(c, why, c.final_rank, None))
    df = pd.DataFrame(rows, columns=["change", "before", "after", "doc", "page", "text", "chunk_id"])
    return df.astype({"before": "Int64", "after": "Int64", "page": "Int64"})


def diff_summary(diff) -> list[str]:
    """Markdown lines (escaped) saying what a replay changed: settings, fallback, evidence moves."""
    changed = ", ".join(f"{k}: {a} → {b}" for k, (a, b) in diff.settings_changed.items()) or "none"
    lines = [f"**Settings changed:** {md_escape(changed)}"]
    if diff.fallback:
        lines.append(f"**Fallback:** {md_escape(diff.fallback[0])} → {md_escape(diff.fallback[1])}")
    lines.append(
        f"**Evidence:** {len(diff.moved_in)} moved in, {len(diff.moved_out)} moved out, "
        f"{len(diff.rank_changes)} re-ordered; {len(diff.rerank_changes)} rerank ranks changed."
    )
    return lines


def _replay_row(c: Candidate, change: str, before: int | None, after: int | None) -> dict:
    return {
        "change": change,
        "before": before,
        "after": after,
        "doc": c.doc_name or c.doc_id,
        "page": c.page,
        "text": preview(c.text, 100),
        "chunk_id": c.chunk_id,
    }
