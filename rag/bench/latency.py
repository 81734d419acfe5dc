"""`python -m rag bench query`: p50/p95 per pipeline stage at ~1k, 10k and 100k chunks, and the
pipeline's overhead over the raw cost (one query embedding + one Chroma query + one BM25 query).

Index texts are real sentences (SciFact abstracts when ``--corpus`` is given, else the demo
corpus) recombined into one-chunk documents. Their vectors come from a hashing stand-in with the
real embedder's id and width: embedding 100k chunks with the real model takes hours on a small
CPU, and Chroma's query cost depends on the index size, not on what the vectors mean. Queries are
embedded by the real model. Indexes are cached under ``<home>/bench``. This module prints.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import time
from pathlib import Path

import numpy as np

from rag.bench.beir import bench_home
from rag.config import Settings
from rag.eval.datasets import resolve_dataset
from rag.eval.metrics import latency_summary
from rag.retrieval.pipeline import retrieve
from rag.stages import TIMED_STAGES, TOTAL

SIZES = (1_000, 10_000, 100_000)
STAGES = (*TIMED_STAGES, TOTAL)
BUILD_BATCH = 1000  # documents per ingest call (at least; a tenth of the index for big ones)


class HashedStandIn:
    """Build-time embedder: token hashes projected to the real embedder's width, normalized."""

    def __init__(self, model_id: str, dim: int, max_tokens: int) -> None:
        self.model_id, self.dim, self.max_tokens = model_id, dim, max_tokens

    def embed_texts(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
                out[row, h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
            out[row] /= max(float(np.linalg.norm(out[row])), 1e-9)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_texts([text])[0]

    def token_len(self, text: str) -> int:
        return len(text.split()) + 2


def sentences(corpus: Path | None) -> list[str]:
    if corpus is not None:
        with open(corpus / "corpus.jsonl", encoding="utf-8") as fh:
            texts = [json.loads(line).get("text", "") for line in fh]
    else:
        texts = [p.read_text(encoding="utf-8", errors="ignore") for p in Path("data/demo").glob("*.md")]
    return [s for t in texts for s in re.split(r"(?<=[.!?])\s+", t) if 40 <= len(s) <= 400]


def synthetic_docs(pool: list[str], n: int, seed: int = 7) -> list[tuple[str, bytes]]:
    """``n`` one-chunk documents of ~500-700 characters, each a random mix of real sentences."""
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        parts: list[str] = []
        while sum(len(p) + 1 for p in parts) < 500:
            parts.append(rng.choice(pool))
        docs.append((f"syn{i:06d}.txt", " ".join(parts)[:700].encode("utf-8")))
    return docs


def build_index(settings: Settings, size: int, pool: list[str], out=print):
    """The cached ``lat-<size>`` knowledge base (built with the hashing stand-in when missing)."""
    from rag.embedder import load_embedder
    from rag.ingest.pipeline import UploadItem
    from rag.kb import KnowledgeBase

    real = load_embedder(settings)
    name = f"lat-{size}"
    kb = KnowledgeBase(name, settings, HashedStandIn(real.model_id, real.dim, real.max_tokens))
    have = len(kb.documents())
    docs = synthetic_docs(pool, size)
    t0 = time.perf_counter()
    step = max(BUILD_BATCH, size // 10)
    for start in range(have, size, step):
        kb.ingest([UploadItem(n, b) for n, b in docs[start : start + step]])
        out(f"  {name}: {min(start + step, size)}/{size} documents ({time.perf_counter() - t0:.0f}s)")
    return KnowledgeBase(name, settings, real)


def raw_once(kb, index, question: str, k: int, costs: dict[str, list[float]]) -> None:
    """Time the three raw operations the pipeline is built on, once."""
    t = time.perf_counter()
    vec = kb.embedder.embed_query(question)
    costs["embed"].append((time.perf_counter() - t) * 1000)
    t = time.perf_counter()
    kb.vectors.collection.query(
        query_embeddings=[vec.tolist()], n_results=k, include=["documents", "metadatas", "distances"]
    )
    costs["chroma"].append((time.perf_counter() - t) * 1000)
    t = time.perf_counter()
    index.search(question, k)
    costs["bm25"].append((time.perf_counter() - t) * 1000)


def measure(kb, questions: list[str], settings: Settings) -> dict[str, dict]:
    """Pipeline and raw operations interleaved per question, so both see the same machine load."""
    for q in questions[:5]:  # warm caches (BM25 load, acronyms, Chroma segments)
        retrieve(kb, q, settings, persist=False)
    index = kb.bm25()
    stage_ms: dict[str, list[float]] = {s: [] for s in STAGES}
    raw: dict[str, list[float]] = {"embed": [], "chroma": [], "bm25": []}
    single: list[float] = []  # totals of questions that ran one query (no rewrite): like for like
    for q in questions:
        trace = retrieve(kb, q, settings, persist=False)
        for s in STAGES:
            stage_ms[s].append(trace.timings_ms.get(s, 0.0))
        if len(trace.queries) == 1:
            single.append(trace.timings_ms.get("total", 0.0))
        raw_once(kb, index, q, settings.recall_k, raw)
    return {
        "stages": {s: latency_summary(v) for s, v in stage_ms.items()},
        "raw": {s: latency_summary(v) for s, v in raw.items()},
        "one_query": latency_summary(single),
        "rewritten_share": 1 - len(single) / max(len(questions), 1),
    }


def print_size(size: int, chunks: int, m: dict, out=print) -> float:
    out(f"\n~{size} chunks ({chunks} in the index)")
    out(f"{'stage':<8}{'p50 ms':>9}{'p95 ms':>9}")
    for s, v in m["stages"].items():
        out(f"{s:<8}{v['p50']:>9.2f}{v['p95']:>9.2f}")
    raw = sum(m["raw"][s]["p50"] for s in ("embed", "chroma", "bm25"))
    parts = ", ".join(f"{s} {m['raw'][s]['p50']:.2f}" for s in ("embed", "chroma", "bm25"))
    out(f"raw p50: {parts} = {raw:.2f} ms")
    one = m["one_query"]["p50"]
    if one is not None:
        out(
            f"overhead ratio, questions that ran one query (like for like with the raw cost): "
            f"{one:.2f} / {raw:.2f} = {one / raw:.2f} (goal <= 1.3)"
        )
    out(
        f"all questions ({m['rewritten_share']:.0%} rewritten into two queries, each embedded, searched "
        f"and fused): p50 {m['stages']['total']['p50']:.2f} ms, {m['stages']['total']['p50'] / raw:.2f}x raw"
    )
    return m["stages"]["total"]["p50"]


def bench_query(settings: Settings, corpus: Path | None, sizes=SIZES, n_queries: int = 100, out=print) -> dict:
    settings = settings.replace(home=bench_home(settings), rewrite="rules", fallback="reject")
    pool = sentences(corpus)
    rng = random.Random(11)
    questions = [rng.choice(pool)[:200] for _ in range(n_queries)]
    totals, results = {}, {}
    for size in sizes:
        kb = build_index(settings, size, pool, out)
        results[size] = measure(kb, questions, settings)
        totals[size] = print_size(size, kb.vectors.count(), results[size], out)
    if len(totals) > 1:
        lo, hi = min(totals), max(totals)
        out(f"\np50 total at {hi} / at {lo}: {totals[hi] / totals[lo]:.2f}x (goal <= 2x)")
    return results


def add_query_parser(bsub) -> argparse.ArgumentParser:
    p = bsub.add_parser("query", help="p50/p95 latency per retrieval stage at ~1k/10k/100k chunks")
    p.add_argument(
        "--corpus",
        default=None,
        help="a BEIR dataset (name in RAG_BENCH_DATA or folder) whose texts fill the indexes (default: demo)",
    )
    p.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma-separated chunk counts")
    p.add_argument("--queries", type=int, default=100)
    p.add_argument(
        "--kb",
        default="",
        help="instead: time the Inspector's why-not probe against an ask on this knowledge base (demo: gold questions)",
    )
    p.set_defaults(func=main_query)
    return p


def main_query(args: argparse.Namespace) -> int:
    if getattr(args, "kb", ""):
        from rag.bench.probe_cost import bench_probe

        bench_probe(Settings.from_env(), args.kb)
        return 0
    sizes = tuple(int(s) for s in str(getattr(args, "sizes", "")).split(",") if s) or SIZES
    corpus = resolve_dataset(args.corpus) if getattr(args, "corpus", None) else None
    bench_query(Settings.from_env(), corpus, sizes, getattr(args, "queries", 100))
    return 0
