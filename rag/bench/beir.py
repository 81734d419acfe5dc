"""`python -m rag bench beir DIR --split test`: retrieval quality per stage on a BEIR dataset.

The corpus is ingested through the real knowledge base (each document as ``<id>.md``: ``# title``,
blank line, text; chunked like any upload) into ``<home>/bench`` once, then reused (unchanged
documents are skipped). Per judged query it runs the raw dense and BM25 retrievers (deep lists,
for Recall@100) and the real pipeline (``retrieve``) for the RRF and reranked orders. Chunk
rankings become document rankings by first appearance. Figures print beside the published ones.
This module is a CLI surface: it prints.
"""

from __future__ import annotations

import argparse
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from rag.config import Settings
from rag.eval.beir import BeirData, beir_doc_name, iter_corpus, load_beir
from rag.eval.beir_import import ingest_corpus
from rag.eval.datasets import resolve_dataset
from rag.eval.metrics import latency_summary, mean, mrr, ndcg_at_k, recall_at_k
from rag.kb import KnowledgeBase
from rag.records import Hit
from rag.retrieval.fusion import RankedList, Source, rrf_fuse
from rag.retrieval.pipeline import dense_plan, retrieve
from rag.stages import Stage

log = logging.getLogger(__name__)
Out = Callable[[str], None]
DEEP_DOCS = 100  # documents needed for Recall@100

# nDCG@10 on SciFact test with off-the-shelf LlamaIndex and the same embedder (issue 3), and the
# published table (the benchmark data README): (system, nDCG@10, Recall@100 or None).
REFERENCE = {
    "scifact": {
        Stage.DENSE: "LlamaIndex VectorStoreIndex, same embedder: 0.642",
        Stage.BM25: "LlamaIndex BM25Retriever: 0.687 | Anserini flat 0.679 | BEIR multifield 0.665",
        Stage.RRF: "LlamaIndex QueryFusionRetriever reciprocal_rerank: 0.713",
        Stage.RERANK: "relative_score 0.724 | dist_based_score 0.729 | BGE-base-en-v1.5 0.741",
    }
}
PUBLISHED = {
    "scifact": [
        ("BM25 (BEIR paper, multifield)", 0.665, 0.908),
        ("BM25 flat (Anserini)", 0.679, 0.925),
        ("BM25 + cross-encoder rerank (BEIR paper)", 0.688, None),
        ("ColBERT (BEIR paper)", 0.671, None),
        ("bge-small-en-v1.5 (dense)", 0.713, 0.942),
        ("BGE-base-en-v1.5 (dense)", 0.741, 0.967),
    ]
}
STAGES = (Stage.DENSE, Stage.BM25, Stage.RRF, Stage.RERANK)


@dataclass
class StageScores:
    ndcg10: list[float | None] = field(default_factory=list)
    recall10: list[float | None] = field(default_factory=list)
    recall100: list[float | None] = field(default_factory=list)
    mrr10: list[float | None] = field(default_factory=list)

    def add(self, ranked: list[str], relevant: dict[str, int]) -> None:
        self.ndcg10.append(ndcg_at_k(ranked, relevant, 10))
        self.recall10.append(recall_at_k(ranked, relevant, 10))
        self.recall100.append(recall_at_k(ranked, relevant, 100))
        self.mrr10.append(mrr(ranked, relevant, 10))

    def means(self) -> dict[str, float]:
        return {k: mean(getattr(self, k)) or 0.0 for k in ("ndcg10", "recall10", "recall100", "mrr10")}


@dataclass
class BeirReport:
    dataset: str
    split: str
    queries: int
    chunks: int
    stages: dict[str, StageScores]
    latency_ms: list[float]
    reranker: str
    fingerprint: str
    recall_k: int

    def table(self) -> dict[str, dict[str, float]]:
        return {stage: scores.means() for stage, scores in self.stages.items()}


def bench_home(settings: Settings) -> Path:
    return settings.home / "bench"


def dataset_name(data_dir: str | Path) -> str:
    """``scifact`` for .../scifact, ``rgb-zh`` for .../rgb-zh/beir."""
    path = Path(data_dir).resolve()
    return (path.parent.name if path.name.lower() == "beir" else path.name).lower()


def default_kb_name(data_dir: str | Path) -> str:
    return re.sub(r"[^a-z0-9_-]", "-", f"beir-{dataset_name(data_dir)}")[:48]


def ingest_beir(data_dir: str | Path, settings: Settings, kb_name: str, out: Out | None = None) -> KnowledgeBase:
    """The benchmark knowledge base, ingested (or topped up) from ``data_dir``'s corpus."""
    kb = KnowledgeBase(kb_name, settings)
    ingest_corpus(kb, data_dir, progress=(lambda n, msg: out(f"  {msg}")) if out else None)
    return kb


def doc_ranking(names: Iterable[str], to_id: dict[str, str]) -> list[str]:
    """BEIR ids by first appearance of any of their chunks (chunks carry the document name)."""
    return list(dict.fromkeys(to_id[n] for n in names if n in to_id))


def query_stages(kb, question: str, settings: Settings, deep: int, to_id: dict[str, str]):
    """(stage -> document ranking, total pipeline ms) for one question."""
    dense = dense_hits(kb, question, settings, deep)
    sparse = kb.sparse_search(question, deep)
    trace = retrieve(kb, question, settings, persist=False)
    fused = sorted((c for c in trace.candidates if c.fused_rank), key=lambda c: c.fused_rank)
    reranked = sorted(fused, key=lambda c: (c.rerank_rank or 10**9, c.fused_rank))
    rankings = {
        Stage.DENSE: doc_ranking((h.chunk.doc_name for h in dense), to_id),
        Stage.BM25: doc_ranking((h.chunk.doc_name for h in sparse), to_id),
        Stage.RRF: doc_ranking((c.doc_name for c in fused), to_id),
        Stage.RERANK: doc_ranking((c.doc_name for c in reranked), to_id),
    }
    return rankings, trace.timings_ms.get("total", 0.0)


def dense_hits(kb, question: str, settings: Settings, deep: int) -> list:
    """The dense stage as the pipeline runs it (``dense_plan``), ``deep`` long: the embedder's list,
    the multilingual one, or both fused by RRF."""
    plan = dense_plan(kb, question, settings)
    lists = []
    if plan.embedder:
        lists.append(kb.dense_search(kb.embedder.embed_query(question), deep))
    if plan.multilingual is not None:
        lists.append(kb.dense_search(plan.multilingual.vectors([question])[0], deep, multilingual=True))
    if len(lists) < 2:
        return lists[0] if lists else []
    fused = rrf_fuse([RankedList(0, Source.DENSE, hits) for hits in lists], settings.rrf_k)
    return [Hit(f.chunk, f.fused_score) for f in fused]


def bench_beir(
    data_dir: str | Path,
    split: str = "test",
    settings: Settings | None = None,
    kb_name: str | None = None,
    limit: int = 0,
    out: Out = print,
) -> BeirReport:
    """Ingest (once) and score every stage on ``split``; prints progress and returns the report."""
    base = settings or Settings.from_env()
    data: BeirData = load_beir(data_dir, split, load_corpus=False)
    settings = base.replace(home=bench_home(base), fallback="reject")  # fixed config: no wider retries
    name = kb_name or default_kb_name(data_dir)
    out(f"{data.name}/{split}: ingesting into {settings.home} (kb '{name}'; unchanged documents are skipped)")
    kb = ingest_beir(data_dir, settings, name, out)
    to_id = {beir_doc_name(doc_id): doc_id for doc_id, _ in iter_corpus(data_dir)}
    stages = {s: StageScores() for s in STAGES}
    latency: list[float] = []
    deep = DEEP_DOCS * 3  # chunks: a document has ~2-3
    qids = list(data.qrels)[: limit or None]
    for i, qid in enumerate(qids, 1):
        rankings, ms = query_stages(kb, data.queries[qid], settings, deep, to_id)
        latency.append(ms)
        for stage, ranked in rankings.items():
            stages[stage].add(ranked[:DEEP_DOCS], data.qrels[qid])
        if i % 100 == 0:
            out(f"  {i}/{len(qids)} queries")
    chunks = sum(d.chunks for d in kb.documents())
    label = str(retrieve(kb, data.queries[qids[0]], settings, persist=False).reranker) if qids else ""
    return BeirReport(
        dataset_name(data_dir),
        split,
        len(qids),
        chunks,
        stages,
        latency,
        label,
        settings.fingerprint(),
        settings.recall_k,
    )


def print_report(report: BeirReport, out: Out = print) -> None:
    ref = REFERENCE.get(report.dataset.lower(), {})
    out(f"\n{report.dataset} {report.split}: {report.queries} queries, {report.chunks} chunks")
    out(f"reranker {report.reranker}; config {report.fingerprint}; recall_k {report.recall_k} per retriever")
    out(f"{'stage':<10}{'nDCG@10':>9}{'R@10':>8}{'R@100':>8}{'MRR@10':>8}   reference (nDCG@10)")
    for stage, m in report.table().items():
        out(
            f"{stage:<10}{m['ndcg10']:>9.4f}{m['recall10']:>8.4f}{m['recall100']:>8.4f}{m['mrr10']:>8.4f}"
            f"   {ref.get(stage, '')}"
        )
    out(f"(rrf and reranked rank only the pipeline's candidates: R@100 is over <= {4 * report.recall_k} chunks)")
    lat = latency_summary(report.latency_ms)
    if lat["p50"] is not None:
        out(f"pipeline latency per query: p50 {lat['p50']:.1f} ms, p95 {lat['p95']:.1f} ms")
    for system, ndcg, r100 in PUBLISHED.get(report.dataset.lower(), []):
        out(f"  published: {system:<42} nDCG@10 {ndcg:.3f}" + (f"  R@100 {r100:.3f}" if r100 else ""))


def add_beir_parser(bsub) -> argparse.ArgumentParser:
    """Register ``bench beir`` on the CLI's bench subparsers."""
    p = bsub.add_parser("beir", help="retrieval quality per stage on a BEIR dataset (dense, BM25, RRF, reranked)")
    p.add_argument(
        "data_dir",
        help="a dataset name in RAG_BENCH_DATA (e.g. scifact) or a BEIR folder (corpus.jsonl, queries.jsonl, qrels/)",
    )
    p.add_argument("--split", default="test")
    p.add_argument("--kb", default=None, help="benchmark knowledge base name (default beir-<dataset>)")
    p.add_argument("--limit", type=int, default=0, help="only the first N judged queries")
    p.add_argument("--recall-k", type=int, default=0, help="override recall_k for this run")
    p.set_defaults(func=main_beir)
    return p


def main_beir(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    if getattr(args, "recall_k", 0):
        settings = settings.replace(recall_k=args.recall_k)
    data_dir = resolve_dataset(args.data_dir, settings)
    report = bench_beir(data_dir, args.split, settings, getattr(args, "kb", None), getattr(args, "limit", 0))
    print_report(report)
    return 0
