"""`python -m rag bench query --kb demo`: what the Inspector's why-not probe costs next to an ask.

For every question of the demo gold set (tune split) it times one ask (retrieve + extractive
answer, not saved) and then two probes of the same trace, each with its target found the way the
Inspector finds one (a document name -> its best chunk): the gold document, and a document the
evidence did not use (usually outside recall_k, so the probe also retrieves once more with the
wider recall_k it suggests). The first probe after an index change reads every stored vector
once; that load is timed on its own. This module prints.
"""

from __future__ import annotations

import time

from rag.ask import ask
from rag.config import Settings
from rag.demo import DEMO_GOLD_TUNE, ensure_demo_kb
from rag.eval.gold.goldset import load_goldset
from rag.eval.metrics import latency_summary
from rag.retrieval.pipeline import context
from rag.retrieval.probe import probe
from rag.retrieval.targets import document_target


def _ms(fn):
    t = time.perf_counter()
    out = fn()
    return out, (time.perf_counter() - t) * 1000


def measure(kb, questions: list[tuple[str, str]], settings: Settings) -> dict[str, dict]:
    """p50/p95 of an ask and of each probe kind over ``questions`` ((question, gold document))."""
    vectors = context(kb, settings).vectors
    names = [d.name for d in kb.documents()]
    _, load_ms = _ms(lambda: kb.dense_scores(vectors.query_vector(questions[0][0])))
    for q, _ in questions[:3]:  # warm: models, caches, the reranker's vectors
        ask(kb, q, settings, persist=False)
    times: dict[str, list[float]] = {"ask": [], "probe gold doc": [], "probe unused doc": []}
    for q, gold in questions:
        (_, trace), ms = _ms(lambda q=q: ask(kb, q, settings, persist=False))
        times["ask"].append(ms)
        used = {c.doc_name for c in trace.evidence()}
        unused = next((n for n in names if n not in used), names[0])
        for kind, doc in (("probe gold doc", gold or names[0]), ("probe unused doc", unused)):
            _, ms = _ms(
                lambda doc=doc, trace=trace: probe(kb, trace, document_target(kb, doc, trace.question, vectors))
            )
            times[kind].append(ms)
    out = {k: latency_summary(v) for k, v in times.items()}
    out["load"] = {"p50": load_ms, "p95": load_ms, "max": load_ms}
    return out


def bench_probe(settings: Settings, kb_name: str = "demo", out=print) -> dict[str, dict]:
    settings = settings.replace(fallback="auto")
    kb = ensure_demo_kb(settings) if kb_name == "demo" else None
    if kb is None:
        from rag.kb import KnowledgeBase

        kb = KnowledgeBase(kb_name, settings, create=False)
    items = [i for i in load_goldset(DEMO_GOLD_TUNE).items if not i.should_refuse] if kb_name == "demo" else []
    questions = [(i.question, (i.expected_docs or ("",))[0]) for i in items]
    if not questions:
        raise ValueError(f"no gold questions for knowledge base '{kb_name}' (the demo gold set is for 'demo')")
    m = measure(kb, questions, settings)
    chunks = len(kb.bm25().ids)
    out(f"why-not probe vs ask on '{kb.name}' ({chunks} chunks, {len(questions)} gold questions), ms")
    out(f"{'':<18}{'p50':>9}{'p95':>9}{'max':>9}")
    for k in ("ask", "probe gold doc", "probe unused doc"):
        out(f"{k:<18}{m[k]['p50']:>9.1f}{m[k]['p95']:>9.1f}{m[k]['max']:>9.1f}")
    ask_p50 = m["ask"]["p50"]
    for stat in ("p50", "p95", "max"):
        worst = max(m["probe gold doc"][stat], m["probe unused doc"][stat])
        out(f"why-not probe {stat} / ask p50: {worst:.1f} / {ask_p50:.1f} = {worst / ask_p50:.3f}x (goal <= 2x)")
    out(f"stored vectors read once per index revision (first probe): {m['load']['p50']:.1f} ms")
    return m
