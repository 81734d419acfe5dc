"""Fit the offline default reranker on a BEIR *train* split and write ``calibration.json``.

    python -m rag.bench.fit_reranker scifact [--split train] [--write]

For every judged query it runs the real recall (rewrite, dense + BM25, RRF) on the benchmark
knowledge base, takes the reranker's pool (top 2 * recall_k fused chunks), and labels each chunk
relevant when its document is in the qrels. It then measures each candidate ordering (RRF,
dense cosine, logistic regressions over feature sets), picks the feature set with the best
nDCG@10 that does not fall below RRF, fits a Platt scale for the dense backend, and picks the
threshold that best separates "the answer is in the pool" from "the qrels' documents removed"
(balanced accuracy). Test qrels are never read here.
"""

from __future__ import annotations

import argparse
import pickle
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from rag.config import Settings
from rag.eval.beir import beir_doc_name, iter_corpus, load_beir
from rag.eval.datasets import dataset_name, resolve_dataset
from rag.eval.metrics import mean, ndcg_at_k
from rag.retrieval.fusion import Fused
from rag.retrieval.pipeline import RERANK_POOL_FACTOR, DensePlan, acronyms_for, context, dense_plan, rerank_pool
from rag.retrieval.recall import Recall
from rag.retrieval.rerankers.base import query_cosines
from rag.retrieval.rerankers.calibration import (
    CALIBRATION_FILE,
    E5_CALIBRATION_FILE,
    Calibration,
    save_calibration,
)
from rag.retrieval.rerankers.logistic import feature_matrix
from rag.retrieval.rewrite import rewrite

FEATURE_SETS = [
    ("cos", "bm25_rel"),
    ("cos", "cos_gap", "bm25_rel"),
    ("cos", "cos_gap", "bm25_rel", "in_sparse"),
    ("cos", "cos_gap", "bm25_rel", "rr_dense", "rr_sparse"),
    ("cos", "cos_gap", "bm25_rel", "doc_max_cos", "doc_bm25_rel", "doc_hits"),
    ("cos", "cos_gap", "bm25_rel", "rr_dense", "rr_sparse", "doc_bm25_sum"),
    ("cos", "cos_gap", "bm25_rel", "rr_dense", "rr_sparse", "doc_bm25_sum", "doc_max_cos"),
]
BASE = ("cos", "cos_gap", "bm25_rel", "rr_dense", "rr_sparse")
E5_FEATURE_SETS = [
    (*BASE, "e5_cos"),
    (*BASE, "e5_cos", "e5_gap"),
    (*BASE, "e5_cos", "e5_gap", "rr_e5"),
    (*BASE, "e5_z", "rr_e5"),
    (*BASE, "e5_cos", "e5_z", "rr_e5"),
    ("cos", "cos_gap", "bm25_rel", "e5_cos", "e5_gap"),
]
REFINE = 4  # feature sets (best by logistic regression) refined listwise


@dataclass
class Pool:
    qid: str
    cands: list[Fused]
    cos: np.ndarray
    docs: list[str]  # BEIR id of each candidate
    qrels: dict[str, int]
    extra: dict[str, np.ndarray] = field(default_factory=dict)  # a second model's cosines (e5)

    def features(self, names: tuple[str, ...]) -> np.ndarray:
        return feature_matrix(names, self.cands, self.cos, getattr(self, "extra", None))

    def labels(self) -> np.ndarray:
        return np.array([1 if self.qrels.get(d, 0) > 0 else 0 for d in self.docs])

    def without_gold(self) -> Pool:
        keep = [i for i, d in enumerate(self.docs) if self.qrels.get(d, 0) <= 0]
        extra = {k: v[keep] for k, v in getattr(self, "extra", {}).items()}
        return Pool(
            self.qid, [self.cands[i] for i in keep], self.cos[keep], [self.docs[i] for i in keep], self.qrels, extra
        )


def pipeline_pool(kb, ctx, question: str, settings: Settings) -> tuple[list[Fused], DensePlan]:
    """The candidates the pipeline's reranker scores for ``question`` (``retrieve``'s first
    attempt: rewrite, the dense retrievers ``dense_plan`` gives it, BM25, RRF, ``rerank_pool``),
    and that plan (``cjk_route``: the CJK reranker's pool)."""
    plan = rewrite(question, settings.rewrite, lambda: acronyms_for(kb), None, False)
    dense = dense_plan(kb, question, settings)
    recall = Recall(kb, ctx.vectors, plan.queries, None, settings.rrf_k, {}, dense.embedder, dense.multilingual)
    return recall.run(settings.recall_k).fused[: rerank_pool(settings.recall_k)], dense


def collect(kb, data_dir: str, split: str, settings: Settings, limit: int = 0) -> list[Pool]:
    """The reranker's pool per judged query, as the pipeline builds it."""
    data = load_beir(data_dir, split, load_corpus=False)
    to_id = {beir_doc_name(d): d for d, _ in iter_corpus(data_dir)}
    ctx = context(kb, settings)
    pools = []
    for qid in list(data.qrels)[: limit or None]:
        question = data.queries[qid]
        cands, _ = pipeline_pool(kb, ctx, question, settings)
        if not cands:
            continue
        cos = query_cosines(ctx.vectors, question, cands)
        docs = [to_id.get(c.chunk.doc_name, "") for c in cands]
        pools.append(Pool(qid, cands, np.asarray(cos, dtype=np.float64), docs, data.qrels[qid]))
    return pools


def ndcg10(pools: list[Pool], score) -> float:
    """Mean nDCG@10 of document rankings ordered by ``score(pool) -> array``."""
    vals = []
    for p in pools:
        order = np.argsort(-score(p), kind="stable")
        vals.append(ndcg_at_k(list(dict.fromkeys(p.docs[i] for i in order)), p.qrels, 10))
    return mean(vals) or 0.0


def fit_logreg(pools: list[Pool], names: tuple[str, ...]) -> tuple[np.ndarray, float]:
    from sklearn.linear_model import LogisticRegression

    x = np.concatenate([p.features(names) for p in pools])
    y = np.concatenate([p.labels() for p in pools])
    model = LogisticRegression(C=1.0, max_iter=2000).fit(x, y)
    return model.coef_[0], float(model.intercept_[0])


CA_STEPS = (0.5, 0.25, 0.1, 0.05)


def coordinate_ascent(pools: list[Pool], names: tuple[str, ...], w0: np.ndarray, rounds: int = 3) -> np.ndarray:
    """Refine weights for nDCG@10 directly (Metzler & Croft 2007, as in RankLib): one weight at a
    time, try +-step, keep any gain. Starts from ``w0`` scaled so the first weight is 1."""
    xs = {p.qid: p.features(names) for p in pools}
    w = np.asarray(w0, dtype=np.float64) / max(abs(w0[0]), 1e-9)

    def score(v: np.ndarray) -> float:
        return ndcg10(pools, lambda p: xs[p.qid] @ v)

    best = score(w)
    for _ in range(rounds):
        improved = False
        for j in range(len(names)):
            for step in CA_STEPS:
                for sign in (1.0, -1.0):
                    trial = w.copy()
                    trial[j] += sign * step
                    value = score(trial)
                    if value > best + 1e-5:
                        best, w, improved = value, trial, True
        if not improved:
            break
    return w


def platt(pools: list[Pool], names: tuple[str, ...], w: np.ndarray) -> tuple[np.ndarray, float]:
    """Scale and shift the linear score ``x @ w`` into a probability (logistic fit on the labels)."""
    from sklearn.linear_model import LogisticRegression

    s = np.concatenate([p.features(names) @ w for p in pools]).reshape(-1, 1)
    y = np.concatenate([p.labels() for p in pools])
    model = LogisticRegression(C=1.0, max_iter=2000).fit(s, y)
    return w * float(model.coef_[0][0]), float(model.intercept_[0])


def best_threshold(pos: np.ndarray, neg: np.ndarray) -> tuple[float, float]:
    """(threshold, balanced accuracy) separating answerable (``pos``) from unanswerable (``neg``)."""
    best = (0.5, 0.0)
    for t in np.round(np.arange(0.02, 0.99, 0.01), 2):
        acc = 0.5 * ((pos >= t).mean() + (neg < t).mean())
        if acc > best[1] + 1e-9:
            best = (float(t), float(acc))
    return best


def _prob(names, w, b, p: Pool) -> np.ndarray:
    z = p.features(names) @ w + b
    return 1.0 / (1.0 + np.exp(-z))


def cross_validated(pools: list[Pool], names: tuple[str, ...], folds: int = 5, seed: int = 0) -> float:
    """Mean nDCG@10 on held-out queries of the listwise fit made on the other folds."""
    order = np.random.RandomState(seed).permutation(len(pools))
    parts = np.array_split(order, folds)
    total = 0.0
    for f, held in enumerate(parts):
        train = [pools[i] for j, part in enumerate(parts) if j != f for i in part]
        w = coordinate_ascent(train, names, fit_logreg(train, names)[0])
        total += ndcg10([pools[i] for i in held], lambda p, w=w: p.features(names) @ w) * len(held)
    return total / max(len(pools), 1)


def measure(
    pools: list[Pool],
    out=print,
    only: tuple[str, ...] = (),
    sets: list[tuple[str, ...]] = FEATURE_SETS,
    cv: bool = False,
) -> tuple[tuple[str, ...], np.ndarray, float, dict]:
    """nDCG@10 on ``pools`` of every candidate; returns the chosen (features, weights, bias, table).

    With ``cv`` the listwise candidates are also scored by 5-fold cross-validation on the same
    pools, and the choice goes by that held-out figure instead of the in-sample one."""
    table = {"none (RRF order)": ndcg10(pools, lambda p: -np.array([c.fused_rank for c in p.cands], float))}
    table["dense cosine"] = ndcg10(pools, lambda p: p.cos)
    if pools and "e5" in getattr(pools[0], "extra", {}):
        table["e5 cosine"] = ndcg10(pools, lambda p: p.extra["e5"])
    fits = {}
    for names in sets:
        w, b = fit_logreg(pools, names)
        fits["logreg " + "+".join(names)] = (names, w, b)
    by_lr = sorted(fits, key=lambda k: -ndcg10(pools, lambda p, f=fits[k]: _prob(*f, p)))
    for key in by_lr[:REFINE]:  # refine the best feature sets listwise, then calibrate
        names, w, _ = fits[key]
        fits["listwise+platt " + "+".join(names)] = (names, *platt(pools, names, coordinate_ascent(pools, names, w)))
    for key, (names, w, b) in fits.items():
        table[key] = ndcg10(pools, lambda p, n=names, w=w, b=b: _prob(n, w, b, p))
    held_out = {}
    if cv:
        for key in fits:
            if key.startswith("listwise"):
                held_out[key] = table["5-fold CV " + key] = cross_validated(pools, fits[key][0])
    for name, value in table.items():
        out(f"  {name:<90} nDCG@10 {value:.4f}")
    ok = [k for k in fits if table[k] >= table["none (RRF order)"] and (not only or fits[k][0] == only)]
    if held_out and not only:
        ok = [k for k in ok if k in held_out]
    if not ok:
        raise SystemExit("no candidate reaches the RRF order on train; keep reranker=none")
    chosen = max(ok, key=lambda k: held_out.get(k, table[k]))
    return *fits[chosen], table


def cached_pools(path: str | Path | None, make) -> list[Pool]:
    """The pools pickled at ``path`` when it exists, else ``make()``'s, pickled there."""
    if path and Path(path).exists():
        return pickle.loads(Path(path).read_bytes())  # noqa: S301 - a file this command wrote
    pools = make()
    if path:
        Path(path).write_bytes(pickle.dumps(pools))
    return pools


def add_e5(pools: list[Pool], data_dir: str, split: str, settings: Settings) -> None:
    """Attach e5-small's cosine for every candidate (through the backend's passage cache)."""
    from rag.retrieval.rerankers import e5_encoder

    encoder = e5_encoder(settings)
    queries = load_beir(data_dir, split, load_corpus=False).queries
    for i, p in enumerate(pools, 1):
        p.extra = {"e5": encoder.cosines(queries[p.qid], [c.chunk.index_text for c in p.cands])}
        if i % 100 == 0:
            print(f"  e5: {i}/{len(pools)} queries")


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "data_dir",
        help="a dataset name in RAG_BENCH_DATA (e.g. scifact) or a BEIR folder (corpus.jsonl, queries.jsonl, qrels/)",
    )
    ap.add_argument("--split", default="train")
    ap.add_argument("--kb", default=None)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--write", action="store_true", help="write calibration.json")
    ap.add_argument("--features", default="", help="choose this measured feature set (comma-separated; say why)")
    ap.add_argument("--threshold", type=float, default=None, help="use this threshold (say why in --why)")
    ap.add_argument("--why", default="", help="the reason for --features / --threshold, kept in calibration.json")
    ap.add_argument("--cache", default=None, help="pickle file to keep the collected pools in (reused when present)")
    ap.add_argument("--backend", choices=("default", "e5"), default="default", help="which calibration to fit")
    ap.add_argument("--cv", action="store_true", help="choose by 5-fold cross-validation on the split (slower)")
    args = ap.parse_args(argv)
    if args.split == "test":
        raise SystemExit("fit on train only; test is for reporting")
    return args


def _threshold(pools: list[Pool], names, w, b, args) -> tuple[float, str]:
    pos = np.array([_prob(names, w, b, p).max() for p in pools if p.labels().any()])
    neg = np.array([(_prob(names, w, b, q).max() if q.cands else 0.0) for q in (p.without_gold() for p in pools)])
    thr, bal = best_threshold(pos, neg)
    note = f"max balanced accuracy on {args.split}, gold present vs gold removed: {thr:.2f} ({bal:.3f})"
    if args.threshold is not None:
        thr = args.threshold
        note += f"; set to {thr:.2f} ({0.5 * ((pos >= thr).mean() + (neg < thr).mean()):.3f} on {args.split})"
    return thr, note


def main(argv: list[str] | None = None) -> int:
    from rag.bench.beir import bench_home, default_kb_name, ingest_beir

    args = _parse(argv)
    args.data_dir = str(resolve_dataset(args.data_dir))
    base = Settings.from_env()
    settings = base.replace(home=bench_home(base))

    def fresh() -> list[Pool]:
        kb = ingest_beir(args.data_dir, settings, args.kb or default_kb_name(args.data_dir), print)
        return collect(kb, args.data_dir, args.split, settings, args.limit)

    pools = cached_pools(args.cache, fresh)
    print(f"{len(pools)} {args.split} queries, pools of <= {settings.recall_k * RERANK_POOL_FACTOR} chunks")
    sets, file = FEATURE_SETS, CALIBRATION_FILE
    if args.backend == "e5":
        add_e5(pools, args.data_dir, args.split, settings)
        sets, file = FEATURE_SETS[3:4] + E5_FEATURE_SETS, E5_CALIBRATION_FILE
    names, w, b, table = measure(pools, only=tuple(f for f in args.features.split(",") if f), sets=sets, cv=args.cv)
    dense_w, dense_b = fit_logreg(pools, ("cos",))
    thr, note = _threshold(pools, names, w, b, args)
    print(f"chosen {'+'.join(names)}; {note}")
    cal = Calibration(
        embedder=settings.embed_model,
        features=names,
        weights=tuple(round(float(x), 5) for x in w),
        bias=round(b, 5),
        dense_platt=(round(float(dense_w[0]), 5), round(dense_b, 5)),
        threshold=thr,
        fit={
            "data": f"{dataset_name(args.data_dir)} qrels/{args.split}.tsv ({len(pools)} queries)",
            "how": (
                "chunk label = its document is in the qrels; pool = the reranker's candidates. Logistic regression "
                "per feature set; the best few refined by coordinate ascent on nDCG@10 and Platt-scaled; the "
                "best on train that does not fall below the RRF order is chosen"
            ),
            "threshold": note,
            "choice": args.why
            or ("best 5-fold cross-validated nDCG@10 on train" if args.cv else "best nDCG@10 on train"),
            "settings": f"recall_k={settings.recall_k} rrf_k={settings.rrf_k} chunk_size={settings.chunk_size}",
            "train_ndcg10": {k: round(v, 4) for k, v in table.items()},
            "command": (
                f"python -m rag.bench.fit_reranker DATA_DIR --split train --backend {args.backend}"
                + (" --cv" if args.cv else "")
                + " --write"
            ),
            "date": datetime.now(UTC).date().isoformat(),
        },
    )
    if args.write:
        print(f"wrote {save_calibration(cal, file=file)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
