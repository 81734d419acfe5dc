"""Fit the CJK route's reranker (multilingual e5 + BM25) on training questions of more than one kind.

    python -m rag.bench.fit_cjk_reranker [--bench-data ../shared/bench] [--cache pools.pkl] [--write]

A Chinese question on a knowledge base whose embedder is English-only is recalled by the
multilingual dense retriever and BM25 (jieba), fused by RRF; this fits the logistic model that
orders the top of that pool, so the score is a probability of relevance like the default
reranker's and the answerability stage and thresholds apply to Chinese questions too. A chunk is
relevant when its document is the question's own paragraph or section.

The pools are the pipeline's (``rag.bench.fit_reranker.pipeline_pool``), over three
training sources (:func:`sources`), each a kind of question a user asks:
- ``cmrc``: CMRC 2018 trial as written (every fold), questions that repeat their passage's words;
- ``cmrc-own``: the same questions rewritten in a user's own words (``rag.bench.own_words``, both
  rounds), folds 0-2;
- ``policies-zh``: the everyday Chinese documents' answerable questions (``data/train``), asked in
  a user's own words, folds 0-2.
Fit on CMRC as written alone, whose questions repeat their passage's words, BM25 carries the
model, and a question asked in other words than its answer is ordered below same-topic passages
that share its words (docs/BENCHMARKS.md, "Chinese (CJK) reranker"). Besides e5's cosine to the
whole chunk, the features read its cosine to the chunk's best sentence (``e5_sent``, each sentence
under the chunk's headings: ``rerankers.e5.sentence_cosines``): a question in other words than
its passage is closer to the sentence that answers it than to the chunk around it.
A feature set is chosen by the mean over the sources of 5-fold
cross-validated nDCG@10 (folds by question, each source weighed alike), and the fit is then judged
on what it never saw: folds 3-4 of ``cmrc-own`` and ``policies-zh`` (``sources(held=True)``). Every feature is
relative to the question's pool, a rank or a cosine, so the probability does not shrink with the
corpus. Training sets only: RGB-zh and the demo's gold sets are never read here.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from rag.bench import own_words, squad
from rag.bench.answer_reader import READER_FOLDS, fold_of
from rag.bench.beir import bench_home, default_kb_name, ingest_beir
from rag.bench.fit_reranker import Pool, cached_pools, fit_logreg, ndcg10, pipeline_pool
from rag.config import Settings
from rag.eval.beir import beir_doc_name, iter_corpus, load_beir
from rag.retrieval.pipeline import context, rerank_pool
from rag.retrieval.rerankers import e5_encoder
from rag.retrieval.rerankers.calibration import E5_CJK_CALIBRATION_FILE, Calibration, save_calibration
from rag.retrieval.rerankers.e5 import E5_MODEL, e5_signals, sentence_cosines

FEATURE_SETS = [
    ("e5_z", "rr_e5", "bm25_rel", "rr_sparse"),
    ("e5_cos", "e5_z", "rr_e5", "bm25_rel", "rr_sparse"),
    ("e5_cos", "e5_z", "rr_e5", "rr_dense", "bm25_rel", "rr_sparse"),
    ("e5_cos", "e5_z", "rr_e5", "rr_dense", "bm25_rel"),
    ("e5_cos", "e5_z", "rr_e5", "rr_dense"),
    ("e5_cos", "e5_gap", "e5_z", "rr_e5", "rr_dense", "bm25_rel", "rr_sparse"),
    # and each candidate's best sentence (``e5.sentence_cosines``)
    ("e5_cos", "e5_z", "rr_e5", "bm25_rel", "rr_sparse", "e5_sent"),
    ("e5_cos", "e5_z", "rr_e5", "bm25_rel", "rr_sparse", "e5_sent", "e5_sent_z"),
    ("e5_cos", "e5_z", "rr_e5", "bm25_rel", "rr_sparse", "e5_sent", "rr_e5_sent"),
    ("e5_cos", "e5_z", "rr_e5", "bm25_rel", "rr_sparse", "e5_sent", "e5_sent_z", "rr_e5_sent"),
    ("e5_sent", "e5_sent_z", "rr_e5_sent", "bm25_rel", "rr_sparse"),
]
# Every feature is relative to the question's own pool, a rank or a cosine: none grows with the
# corpus. An absolute BM25 score (``log_bm25``, tried until 2026-12-01) does, since idf is small in
# a small corpus: a two-document knowledge base got P(top) 0.16 for the very passage that answers.
CMRC = "cmrc2018-trial/beir"


@dataclass(frozen=True)
class Source:
    """One kind of training question: its corpus (a BEIR folder) and question id -> text."""

    name: str
    data_dir: Path
    questions: dict[str, str]
    qrels: dict[str, dict[str, int]]


def _cmrc(bench_data: Path, folds: frozenset[int] | None, rounds: int) -> tuple[Path, dict, dict]:
    data_dir = bench_data / CMRC
    beir = load_beir(data_dir, "train", load_corpus=False)
    keep = [q for q in beir.qrels if folds is None or fold_of(q) in folds]
    if not rounds:
        return data_dir, {q: beir.queries[q] for q in keep}, {q: beir.qrels[q] for q in keep}
    questions, qrels = {}, {}
    for n, words in enumerate(own_words.rounds_of(rounds), 1):
        for q in keep:
            if q in words:
                questions[f"{q}~{n}"], qrels[f"{q}~{n}"] = words[q], beir.qrels[q]
    return data_dir, questions, qrels


def _policies(bench_data: Path, out_dir: Path, folds: frozenset[int]) -> tuple[Path, dict, dict]:
    data_dir = squad.beir_view("policies-zh", bench_data, out_dir)
    beir = load_beir(data_dir, "train", load_corpus=False)
    keep = [
        q for q, m in beir.query_meta.items() if q in beir.qrels and not m.get("impossible") and m.get("fold") in folds
    ]
    return data_dir, {q: beir.queries[q] for q in keep}, {q: beir.qrels[q] for q in keep}


def sources(bench_data: Path, out_dir: Path, held: bool = False) -> list[Source]:
    """The fit sources (``held``: the held-out ones, folds 3-4 in a user's own words)."""
    fit_folds = frozenset(READER_FOLDS)
    held_folds = frozenset(range(5)) - fit_folds
    if held:
        return [
            Source("cmrc-own folds 3-4", *_cmrc(bench_data, held_folds, 1)),
            Source("policies-zh folds 3-4", *_policies(bench_data, out_dir, held_folds)),
        ]
    return [
        Source("cmrc", *_cmrc(bench_data, None, 0)),
        Source("cmrc-own", *_cmrc(bench_data, fit_folds, 2)),
        Source("policies-zh", *_policies(bench_data, out_dir, fit_folds)),
    ]


def collect(source: Source, settings: Settings, progress: Callable[[str], None] = print) -> list[Pool]:
    """The CJK route's pool per question, as the pipeline builds it, with e5's cosines (a question
    that does not take that route is left out)."""
    home = settings.replace(home=bench_home(settings))
    kb = ingest_beir(source.data_dir, home, default_kb_name(source.data_dir))
    to_id = {beir_doc_name(d): d for d, _ in iter_corpus(source.data_dir)}
    ctx, encoder = context(kb, home), e5_encoder(home)
    pools = []
    for i, (qid, question) in enumerate(source.questions.items(), 1):
        cands, dense = pipeline_pool(kb, ctx, question, home)
        if not dense.cjk_route:  # mostly Latin ("MIT OpenCourseWare指什么？"): the default reranker's
            continue
        if dense.multilingual is None:
            raise SystemExit(f"{source.name}: no multilingual vectors to recall {question!r} by: {dense.note}")
        if cands:
            docs = [to_id.get(c.chunk.doc_name, "") for c in cands]
            pool = Pool(qid, cands, np.zeros(len(cands)), docs, source.qrels[qid])
            pool.extra = e5_signals(encoder, question, cands)
            pools.append(pool)
        if i % 200 == 0:
            progress(f"  {source.name}: {i}/{len(source.questions)} questions")
    return pools


def cv_ndcg(pools: list[Pool], names: tuple[str, ...], folds: int = 5) -> float:
    scores = []
    for k in range(folds):
        train = [p for i, p in enumerate(pools) if i % folds != k]
        test = [p for i, p in enumerate(pools) if i % folds == k]
        w, b = fit_logreg(train, names)
        scores.append(ndcg10(test, _scorer(names, w, b)) * len(test))
    return sum(scores) / len(pools)


def _balanced(pools: dict[str, list[Pool]]) -> list[Pool]:
    """Every source's pools, repeated so that each weighs as much as the largest in the fit."""
    most = max(len(p) for p in pools.values())
    return [p for ps in pools.values() for p in ps * max(1, round(most / len(ps)))]


def _scorer(names: tuple[str, ...], w: np.ndarray, b: float) -> Callable[[Pool], np.ndarray]:
    return lambda p: p.features(names) @ w + b


def _baselines(pools: list[Pool]) -> dict[str, float]:
    return {
        "fused (RRF) order": ndcg10(pools, lambda p: -np.array([c.fused_rank for c in p.cands], dtype=float)),
        "e5 cosine": ndcg10(pools, lambda p: p.extra["e5"]),
        "dense rank": ndcg10(pools, lambda p: np.array([1.0 / (c.dense_rank or 1e9) for c in p.cands])),
    }


def _pools(src: Source, settings: Settings, cache: Path | None) -> list[Pool]:
    """``src``'s pools, pickled beside ``cache`` (one file per source) when given; pools pickled
    before the sentence features existed get their sentences' cosines added."""
    path = cache.with_name(f"{cache.stem}-{src.name.replace(' ', '_')}{cache.suffix}") if cache else None
    pools = cached_pools(path, lambda: collect(src, settings))
    encoder = e5_encoder(settings.replace(home=bench_home(settings)))
    for p in pools:
        if "e5_sent" not in p.extra:
            p.extra["e5_sent"] = sentence_cosines(encoder, encoder.query(src.questions[p.qid]), p.cands)
    return pools


# e5's cosines to the chunk and to its best sentence: the only features that say how close a passage
# is rather than how it ranks among the others
ABSOLUTE = ("e5_cos", "e5_sent")


def absolute(names: tuple[str, ...], weights: np.ndarray) -> bool:
    """Whether a fit's probability rises with e5's absolute closeness: it weighs an absolute cosine
    and none of them negatively. The answerability stage reads the top probability as how relevant
    the passage is, and the evidence floor drops what scores low, which only an absolute measure
    can say: with e5's cosine weighed negatively beside its z-score (a pool of 40 fits so), a pool
    whose best passage is far from the question would score its top higher, not lower."""
    used = [w for n, w in zip(names, weights, strict=True) if n in ABSOLUTE]
    return bool(used) and min(used) >= 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rag.bench.fit_cjk_reranker", description=__doc__.split("\n")[0])
    ap.add_argument("--bench-data", type=Path, default=None, help="the benchmark data folder (RAG_BENCH_DATA)")
    ap.add_argument("--cache", type=Path, default=None, help="pickle the pools per source here (reused when present)")
    ap.add_argument("--write", action="store_true", help=f"write rag/retrieval/rerankers/{E5_CJK_CALIBRATION_FILE}")
    args = ap.parse_args(argv)
    settings = Settings.from_env()
    bench_data = args.bench_data or Path(settings.bench_data)
    derived = bench_home(settings) / "derived"
    fit = {s.name: _pools(s, settings, args.cache) for s in sources(bench_data, derived)}
    held = {s.name: _pools(s, settings, args.cache) for s in sources(bench_data, derived, held=True)}
    for name, pools in {**fit, **held}.items():
        base = "  ".join(f"{k} {v:.4f}" for k, v in _baselines(pools).items())
        print(f"{name}: {len(pools)} questions with a non-empty pool; nDCG@10 {base}")
    results: dict[tuple[str, ...], dict[str, float]] = {}
    fits: dict[tuple[str, ...], tuple[np.ndarray, float]] = {}
    for names in FEATURE_SETS:
        per = {name: cv_ndcg(pools, names) for name, pools in fit.items()}
        fits[names] = fit_logreg(_balanced(fit), names)
        score = _scorer(names, *fits[names])
        scored = {name: ndcg10(pools, score) for name, pools in held.items()}
        results[names] = per | {f"held out: {k}": v for k, v in scored.items()}
        cv = "  ".join(f"{k} {v:.4f}" for k, v in per.items())
        ho = "  ".join(f"{k} {v:.4f}" for k, v in scored.items())
        mark = "" if absolute(names, fits[names][0]) else " (not absolute)"
        print(f"  {'+'.join(names):<52} CV {np.mean(list(per.values())):.4f} ({cv}) | {ho}{mark}")
    # chosen on the fit sources only (the held-out folds report), among the sets that are
    # ``absolute``; ties (to 3 decimals) go to the higher mean
    mean_cv = {k: float(np.mean([v[s] for s in fit])) for k, v in results.items()}
    best = max((k for k in mean_cv if absolute(k, fits[k][0])), key=lambda k: (round(mean_cv[k], 3), mean_cv[k]))
    w, b = fits[best]
    cal = Calibration(
        embedder=E5_MODEL,
        features=best,
        weights=tuple(round(float(x), 6) for x in w),
        bias=round(b, 6),
        dense_platt=(1.0, 0.0),
        threshold=settings.rerank_threshold,
        fit={
            "data": ", ".join(f"{name} ({len(pools)} questions)" for name, pools in fit.items())
            + f"; the pipeline's pool of {rerank_pool(settings.recall_k)} "
            "(multilingual dense + BM25, RRF), each source weighed alike",
            "choice": f"best mean 5-fold CV nDCG@10 over the sources {mean_cv[best]:.4f} among the fits "
            "that weigh e5's absolute cosines positively",
            "cv_ndcg10": {"+".join(k): {s: round(x, 4) for s, x in v.items()} for k, v in results.items()},
            "command": "python -m rag.bench.fit_cjk_reranker --write",
            "date": datetime.now(UTC).date().isoformat(),
        },
    )
    print(f"chosen {'+'.join(best)}: weights {cal.weights} bias {cal.bias}")
    if args.write:
        print(f"wrote {save_calibration(cal, file=E5_CJK_CALIBRATION_FILE)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
