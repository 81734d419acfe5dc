"""`python -m rag ask "question" --kb NAME [--trace]`: the answer, its citations and spans, the trace."""

from __future__ import annotations

from rag.cli.kb import add_kb_argument
from rag.config import Settings
from rag.retrieval.answerability import compared
from rag.retrieval.trace import Trace


def add_parser(sub) -> None:
    s = sub.add_parser("ask", help="answer a question from a knowledge base, with checked citations")
    s.add_argument("question")
    add_kb_argument(s)
    s.add_argument("--trace", action="store_true", help="print the candidate table")
    s.add_argument("--conversation", default="cli")
    s.set_defaults(func=run)


def run(args) -> int:
    from rag.ask import ask
    from rag.kb import KnowledgeBase
    from rag.llm import build_llm

    settings = Settings.from_env()
    kb = KnowledgeBase(args.kb, settings, create=False)
    llm = build_llm(settings)
    turn, trace = ask(kb, args.question, settings, llm=llm, conversation=args.conversation, principal=args.principal)
    answer = turn.answer
    print(answer.text)
    print()
    if answer.refused:
        print(f"[{turn.outcome.value}] {answer.refusal_reason}")
    for c in answer.citations:
        state = "ok" if c.valid else "REJECTED"
        print(f"[{c.n}] {state} {c.doc_name} p.{c.page} chars {c.start}-{c.end} support={c.support:.2f}")
        print(f'     "{c.quote[:160]}"')
    fb = trace.fallback
    if fb is not None:
        score = (
            f"none vs threshold {fb.threshold:.3f}"
            if fb.best_score is None
            else compared(fb.best_score, fb.threshold, named="threshold")
        )
        print(f"\nfallback: {fb.action.value} (best {score}; {fb.reason})")
    print(f"generator: {answer.generator}  reranker: {trace.reranker}  trace: {trace.id}")
    if args.trace:
        print_trace(trace)
    return 0


def _fmt(rank, score) -> str:
    return "      -      " if rank is None else f"{rank:>3} {score:9.4f}"


def print_trace(trace: Trace) -> None:
    print(f"\nqueries: {[q.text for q in trace.queries]}")
    print("timings ms: " + ", ".join(f"{k}={v:.1f}" for k, v in trace.timings_ms.items()))
    print(f"{'chunk':30} {'dense':>13} {'bm25':>13} {'rrf':>13} {'rerank':>13} final  dropped_by")
    order = sorted(trace.candidates, key=lambda c: (c.final_rank or 10**6, c.fused_rank or 10**6))
    for c in order:
        final = f"{c.final_rank:>5}" if c.final_rank else "    -"
        dropped = c.dropped_by.value if c.dropped_by else ""
        print(
            f"{c.chunk_id:30} {_fmt(c.dense_rank, c.dense_score)} {_fmt(c.sparse_rank, c.sparse_score)} "
            f"{_fmt(c.fused_rank, c.fused_score)} {_fmt(c.rerank_rank, c.rerank_score)} {final}  {dropped}"
        )


def add_calibrate_parser(sub) -> None:
    s = sub.add_parser("calibrate-support", help="choose support_threshold on a gold set (train/demo only)")
    s.add_argument("gold")
    s.add_argument("--kb", default="demo")
    s.set_defaults(func=run_calibrate)


def run_calibrate(args) -> int:
    from rag.bench.calibrate_support import calibrate, claim_pairs
    from rag.eval.gold.goldset import load_goldset
    from rag.kb import KnowledgeBase

    kb = KnowledgeBase(args.kb, Settings.from_env(), create=False)
    positives, negatives = claim_pairs(load_goldset(args.gold), kb)
    cal = calibrate(positives, negatives, kb.embedder.embed_texts)
    print(f"{len(positives)} supported and {len(negatives)} unsupported claims")
    print(f"threshold {cal.threshold:.2f}  balanced accuracy {cal.balanced_accuracy:.3f}")
    print("supported:   " + " ".join(f"{x:.2f}" for x in sorted(cal.positives)))
    print("unsupported: " + " ".join(f"{x:.2f}" for x in sorted(cal.negatives)))
    return 0
