"""Fit the CJK route's reranker (multilingual e5 + BM25) on the CMRC 2018 *trial* set.

    python -m rag.bench.fit_cjk_reranker ../shared/bench/cmrc2018-trial/beir --write

Questions the knowledge base's English-only embedder can't read are recalled by BM25 (jieba);
this fits the logistic model that scores that pool with e5's cosine features beside BM25's, so
the score is a probability of relevance like the default reranker's and the answerability
stage and thresholds apply to Chinese questions too. Labels: a chunk is relevant when its
document is the question's paragraph. Feature sets are compared by 5-fold cross-validated
nDCG@10 (folds by question); every feature is relative to the question's pool or a cosine, so
the probability does not shrink with the corpus (see ``FEATURE_SETS``). CMRC trial is a training set; RGB-zh is never read here.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime

import numpy as np

from rag.bench.beir import bench_home, default_kb_name, ingest_beir
from rag.bench.fit_reranker import Pool, add_e5, fit_logreg, ndcg10
from rag.bench.fit_reranker import collect as collect_pools
from rag.config import Settings
from rag.eval.datasets import dataset_name
from rag.retrieval.pipeline import rerank_pool
from rag.retrieval.rerankers.calibration import E5_CJK_CALIBRATION_FILE, Calibration, save_calibration
from rag.retrieval.rerankers.e5 import E5_MODEL

FEATURE_SETS = [
    ("e5_cos", "bm25_rel", "rr_sparse"),
    ("e5_z", "rr_e5", "bm25_rel", "rr_sparse"),
    ("e5_cos", "e5_z", "rr_e5", "bm25_rel", "rr_sparse"),
    ("e5_cos", "e5_gap", "rr_e5", "bm25_rel", "rr_sparse"),
    ("e5_cos", "e5_gap", "e5_z", "rr_e5", "bm25_rel", "rr_sparse"),
]
# Every feature is relative to the question's own pool or a cosine: none grows with the corpus.
# An absolute BM25 score (``log_bm25``, tried until 2026-12-01: CV nDCG@10 0.9895 vs 0.9893) does,
# since idf is small in a small corpus: a two-document knowledge base got P(top) 0.16 for the
# very passage that answers, and its Chinese questions were refused.


def collect(data_dir: str, settings: Settings, limit: int = 0) -> list[Pool]:
    """The CJK route's pools on the trial set (BM25 recall), each with e5's cosines."""
    home = settings.replace(home=bench_home(settings))
    kb = ingest_beir(data_dir, home, default_kb_name(data_dir))
    pools = collect_pools(kb, data_dir, "train", home, limit, dense=False)
    add_e5(pools, data_dir, "train", home)
    return pools


def cv_ndcg(pools: list[Pool], names: tuple[str, ...], folds: int = 5) -> float:
    scores = []
    for k in range(folds):
        train = [p for i, p in enumerate(pools) if i % folds != k]
        test = [p for i, p in enumerate(pools) if i % folds == k]
        w, b = fit_logreg(train, names)
        scores.append(ndcg10(test, lambda p, w=w, b=b: p.features(names) @ w + b) * len(test))
    return sum(scores) / len(pools)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rag.bench.fit_cjk_reranker", description=__doc__.split("\n")[0])
    ap.add_argument("data_dir", help="the CMRC 2018 trial set in BEIR layout (qrels/train.tsv)")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--write", action="store_true", help=f"write rag/retrieval/rerankers/{E5_CJK_CALIBRATION_FILE}")
    args = ap.parse_args(argv)
    settings = Settings.from_env()
    pools = collect(args.data_dir, settings, args.limit)
    print(f"{len(pools)} questions with a non-empty BM25 pool")
    base = {
        "BM25 order": ndcg10(pools, lambda p: -np.array([c.fused_rank for c in p.cands], dtype=float)),
        "e5 cosine": ndcg10(pools, lambda p: p.extra["e5"]),
    }
    for name, v in base.items():
        print(f"  {name:<48} nDCG@10 {v:.4f}")
    results = {}
    for names in FEATURE_SETS:
        results[names] = cv_ndcg(pools, names)
        print(f"  logreg {'+'.join(names):<41} 5-fold CV nDCG@10 {results[names]:.4f}")
    # ties (to 3 decimals) go to a set with e5's cosine: the answerability stage reads the top
    # probability as how relevant the passage is, which only an absolute measure can say
    best = max(results, key=lambda k: (round(results[k], 3), "e5_cos" in k, results[k]))
    w, b = fit_logreg(pools, best)
    cal = Calibration(
        embedder=E5_MODEL,
        features=best,
        weights=tuple(round(float(x), 6) for x in w),
        bias=round(b, 6),
        dense_platt=(1.0, 0.0),
        threshold=settings.rerank_threshold,
        fit={
            "data": f"{dataset_name(args.data_dir)} qrels/train.tsv ({len(pools)} questions), BM25 (jieba) pool of "
            f"{rerank_pool(settings.recall_k, sparse_only=True)}",
            "choice": f"best 5-fold CV nDCG@10 {results[best]:.4f} (BM25 order {base['BM25 order']:.4f}, "
            f"e5 cosine alone {base['e5 cosine']:.4f})",
            "cv_ndcg10": {"+".join(k): round(v, 4) for k, v in results.items()},
            "command": "python -m rag.bench.fit_cjk_reranker DATA_DIR --write",
            "date": datetime.now(UTC).date().isoformat(),
        },
    )
    print(f"chosen {'+'.join(best)}: weights {cal.weights} bias {cal.bias}")
    if args.write:
        print(f"wrote {save_calibration(cal, file=E5_CJK_CALIBRATION_FILE)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
