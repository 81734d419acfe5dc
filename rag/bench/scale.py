"""`python -m rag bench scale`: a knowledge base at 1k, 10k, 100k (and 1M) chunks, and what it
costs there: query p50/p95 (English and Chinese), the time to upload one 20-page PDF into it,
peak RSS and disk.

Texts are real: SciFact abstracts and RGB-zh passages, repeated with perturbation (each chunk a
run of one passage's sentences, a sentence of another passage of its language, and in English a
tenth of the words swapped for words of the corpus), five chunks to a document, half English and
half Chinese, uploaded through the real ingest path in batches (one BM25 segment each). Their
vectors come from ``latency.HashedStandIn`` (token hashes at the real embedder's id and width):
the real model embeds ~30 chunks/s here, so 100k chunks would take about an hour and 1M a day;
Chroma's cost depends on the index size, not on what the vectors mean. Queries and the timed
upload use the real embedder. Chinese chunks get no multilingual vectors (``RAG_MULTILINGUAL_CHUNKS
=none``: e5 would embed each one), so a Chinese query runs MiniLM + BM25 (jieba) here.

Each size lives in ``<home>/bench/scale-<size>`` (kept; built when missing) and is built and
measured in processes of its own, so each peak RSS is that size's. This module prints.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import re
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rag.bench.beir import bench_home
from rag.bench.latency import HashedStandIn
from rag.config import Settings
from rag.errors import RagError
from rag.eval.datasets import resolve_dataset
from rag.eval.metrics import latency_summary
from rag.stages import Stage

SIZES = (1_000, 10_000, 100_000)  # 1_000_000 on request: about ten times the 100k build
CHUNKS_PER_DOC = 5
BATCH_CHUNKS = 5_000  # chunks per ingest call while building (at least a twentieth of the size)
PAGES = 20
RECALL = (Stage.EMBED, Stage.DENSE, Stage.BM25, Stage.RRF)
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s*")


@dataclass(frozen=True)
class Corpus:
    """Sentences of real passages per language, and real questions."""

    passages: dict[str, list[list[str]]]  # "en" / "zh" -> passages as sentences
    words: list[str]  # English words to swap in
    questions: dict[str, list[str]]

    @classmethod
    def load(cls, settings: Settings) -> Corpus:
        passages, questions = {}, {}
        for lang, name in (("en", "scifact"), ("zh", "rgb-zh")):
            root = resolve_dataset(name, settings)
            with open(root / "corpus.jsonl", encoding="utf-8") as fh:
                texts = [json.loads(line).get("text", "") for line in fh]
            passages[lang] = [s for t in texts if len(s := [x for x in _SENTENCE.split(t) if len(x) >= 8]) >= 2]
            with open(root / "queries.jsonl", encoding="utf-8") as fh:
                questions[lang] = [json.loads(line)["text"] for line in fh]
        words = sorted({w for p in passages["en"][:2000] for s in p for w in re.findall(r"[A-Za-z]{4,}", s)})
        return cls(passages, words, questions)

    def chunk(self, lang: str, rng: random.Random) -> str:
        """~500-750 characters (half that in Chinese) of perturbed real text."""
        pool = self.passages[lang]
        main, other = rng.choice(pool), rng.choice(pool)
        start = rng.randrange(len(main))
        parts = main[start : start + 4] + [rng.choice(other)]
        limit = 700 if lang == "en" else 320
        while sum(map(len, parts)) < limit // 2:
            parts.append(rng.choice(rng.choice(pool)))
        text = " ".join(parts) if lang == "en" else "".join(parts)
        if lang == "en":
            words = text.split(" ")
            for i in rng.sample(range(len(words)), len(words) // 10):
                words[i] = rng.choice(self.words)
            text = " ".join(words)
        return text[:limit]

    def document(self, i: int) -> tuple[str, bytes]:
        """Document ``i``: ``CHUNKS_PER_DOC`` sections, one chunk each (the chunker splits on headings)."""
        rng = random.Random(i)
        lang = "en" if i % 2 == 0 else "zh"
        sections = [
            f"## {'Section' if lang == 'en' else '第'} {s + 1}\n\n{self.chunk(lang, rng)}"
            for s in range(CHUNKS_PER_DOC)
        ]
        return f"doc{i:07d}.md", (f"# Document {i}\n\n" + "\n\n".join(sections)).encode("utf-8")

    def pdf(self, pages: int = PAGES, seed: int = 1) -> bytes:
        """A ``pages``-page English PDF of perturbed SciFact text (~3,000 characters a page)."""
        try:
            from reportlab.pdfgen import canvas
        except ImportError as exc:
            raise RagError(
                "The upload timing needs reportlab to write its 20-page PDF.",
                fix="pip install -r requirements-dev.txt (scripts/setup.sh dev)",
            ) from exc
        rng, buf = random.Random(seed), io.BytesIO()
        pdf = canvas.Canvas(buf)
        for page in range(pages):
            pdf.setFont("Helvetica", 10)
            words = " ".join(self.chunk("en", rng) for _ in range(5)).split()
            lines, line = [], ""
            for w in words:
                if len(line) + len(w) > 95:
                    lines.append(line)
                    line = ""
                line = f"{line} {w}".strip()
            for n, text in enumerate([f"Report page {page + 1}", *lines[:46]]):
                pdf.drawString(50, 800 - 16 * n, text)
            pdf.showPage()
        pdf.save()
        return buf.getvalue()


def scale_settings(settings: Settings, size: int) -> Settings:
    return settings.replace(
        home=bench_home(settings) / f"scale-{size}", rewrite="rules", fallback="reject", multilingual_chunks="none"
    )


def build(settings: Settings, size: int, corpus: Corpus, out=print) -> dict:
    """Bring ``scale-<size>`` up to ``size`` chunks (hashed vectors); what it took."""
    from rag.embedder import load_embedder
    from rag.ingest.pipeline import UploadItem
    from rag.kb import KnowledgeBase

    real = load_embedder(settings)
    kb = KnowledgeBase("scale", settings, HashedStandIn(real.model_id, real.dim, real.max_tokens))
    docs, have = size // CHUNKS_PER_DOC, len(kb.documents())
    step = max(BATCH_CHUNKS, size // 20) // CHUNKS_PER_DOC
    t0 = time.perf_counter()
    for start in range(have, docs, step):
        batch = [UploadItem(*corpus.document(i)) for i in range(start, min(start + step, docs))]
        bad = [r.error for r in kb.ingest(batch) if not r.ok]
        if bad:
            raise RagError(f"building scale-{size} failed: {bad[:3]}", fix="see the log (-v) for the cause")
        out(
            f"  scale-{size}: {min(start + step, docs) * CHUNKS_PER_DOC}/{size} chunks ({time.perf_counter() - t0:.0f}s)"
        )
    return {"build_s": time.perf_counter() - t0 if have < docs else None, "build_rss_mb": peak_rss_mb()}


def measure(settings: Settings, size: int, corpus: Corpus, n_queries: int = 30, pages: int = PAGES) -> dict:
    """Query p50/p95 per language, one 20-page upload (then its delete), disk, peak RSS."""
    from rag.kb import KnowledgeBase
    from rag.retrieval.pipeline import retrieve

    kb = KnowledgeBase("scale", settings)
    t = time.perf_counter()
    chunks = len(kb.bm25())
    result = {"size": size, "chunks": chunks, "open_s": time.perf_counter() - t}
    for lang, questions in corpus.questions.items():
        asked = questions[:n_queries]
        for q in asked[:5]:
            retrieve(kb, q, settings, persist=False)  # warm: models, Chroma segments
        timings = [retrieve(kb, q, settings, persist=False).timings_ms for q in asked]
        # recall (query embedding, dense, BM25, RRF): what the index's size costs; then the whole retrieve,
        # whose reranker and answerability readers read a fixed number of candidates whatever the size
        result[f"{lang}_ms"] = latency_summary(sum(t.get(s, 0.0) for s in RECALL) for t in timings)
        result[f"{lang}_full_ms"] = latency_summary(t["total"] for t in timings)
    result |= bm25_search(kb.bm25(), corpus.questions, n_queries, settings)
    data = corpus.pdf(pages)
    t = time.perf_counter()
    upload = kb.ingest_file("scale-report-20p.pdf", data)
    result |= {"upload_s": time.perf_counter() - t, "upload_chunks": upload.chunks, "upload_ok": upload.ok}
    result["upload_stages_ms"] = {str(k): round(v) for k, v in upload.timings_ms.items()}
    result["segments"] = len(kb.bm25().segments)
    t = time.perf_counter()
    kb.delete("scale-report-20p.pdf")
    result["delete_s"] = time.perf_counter() - t
    result |= {"disk_mb": disk_mb(settings.home), "serve_rss_mb": peak_rss_mb()}
    return result


def bm25_search(index, questions: dict[str, list[str]], n_queries: int, settings: Settings) -> dict:
    """BM25 alone (``BM25Index.search``, recall's k and document weight), every row scored and
    pruned (``rag.store.topk``), taking turns on each question; whether the two agreed. Timed in
    the searching thread's CPU time: on a shared machine wall time is mostly waiting for a core."""
    out: dict = {"bm25_same": True}
    k, weight = settings.recall_k, settings.bm25_doc_weight
    for lang, asked in questions.items():
        asked = asked[:n_queries]
        for q in asked[:5]:  # warm: the segments' term bounds are read on first use
            index.search(q, k, None, weight, prune=True)
        times: dict[str, list[float]] = {"scan": [], "pruned": []}
        for q in asked:
            found = []
            for mode, prune in (("scan", False), ("pruned", True)):
                t = time.thread_time()
                found.append(index.search(q, k, None, weight, prune=prune))
                times[mode].append((time.thread_time() - t) * 1000)
            out["bm25_same"] &= found[0] == found[1]
        out[f"{lang}_bm25_ms"] = {mode: latency_summary(v) for mode, v in times.items()}
    return out


def bm25_repeated(settings: Settings, corpus: Corpus, times: int, n_queries: int = 30) -> dict:
    """``bm25_search`` over the knowledge base's BM25 index repeated ``times`` times under new
    chunk ids (each copy one merged segment): ten copies of 100k give a 1M index in minutes,
    against a build through the real ingest path of about 40. Same-text copies tie, so the top
    k holds more ties than a real 1M corpus would."""
    from rag.kb import KnowledgeBase
    from rag.store.bm25 import BM25Index
    from rag.store.segments import Segment

    index = KnowledgeBase("scale", settings).bm25()
    one = Segment.merge("all", list(index.segments), index.dead)
    copies = [
        Segment(
            f"copy-{r}",
            [f"r{r}{c}" for c in one.ids],
            one.texts,
            [f"r{r}{k}" for k in one.rev_keys],
            one.chunk_rev,
            one.chunks,
            one.docs,
        )
        for r in range(times)
    ]
    repeated = BM25Index(copies, index.version)
    return {"chunks": len(repeated), "copies": times} | bm25_search(repeated, corpus.questions, n_queries, settings)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def disk_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file()) / 2**20


# -- one process per size and step ---------------------------------------------------------------
def _child(step: str, size: int, args: argparse.Namespace) -> dict:
    """Run ``step`` ('build' / 'measure') for ``size`` in a process of its own; its result."""
    cmd = [sys.executable, "-m", "rag.bench.scale", step, str(size), "--queries", str(args.queries)]
    if args.data:
        cmd += ["--data", args.data]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    result: dict = {}
    for line in proc.stdout:
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT ") :])
        else:
            print(line, end="", flush=True)
    if proc.wait() != 0 or not result:
        raise RagError(
            f"bench scale: {step} at {size} chunks failed (exit {proc.returncode})", fix="see the output above"
        )
    return result


def report(row: dict, out=print) -> None:
    en, zh, en_all, zh_all = row["en_ms"], row["zh_ms"], row["en_full_ms"], row["zh_full_ms"]
    built = f"built in {row['build_s']:.0f} s, " if row.get("build_s") else ""
    out(
        f"{row['size']:>9,} chunks ({row['chunks']:,} indexed, {row['segments']} BM25 segments): "
        f"recall p50/p95 en {en['p50']:.1f}/{en['p95']:.1f} ms, zh {zh['p50']:.1f}/{zh['p95']:.1f} ms "
        f"(whole retrieve en {en_all['p50']:.0f}/{en_all['p95']:.0f}, zh {zh_all['p50']:.0f}/{zh_all['p95']:.0f}); "
        f"BM25 search p50 every row / pruned en {_bm25(row, 'en')}, zh {_bm25(row, 'zh')} CPU ms"
        f"{'' if row.get('bm25_same', True) else ' (PRUNED DIFFERS)'}; "
        f"20-page upload {row['upload_s']:.2f} s ({row['upload_chunks']} chunks), delete {row['delete_s']:.2f} s; "
        f"peak RSS {row['serve_rss_mb']:.0f} MB (build {row['build_rss_mb']:.0f} MB); disk {row['disk_mb']:.0f} MB; "
        f"{built}open {row['open_s']:.1f} s"
    )


def ratios(lo: dict, hi: dict) -> str:
    """The largest size's p50 over the smallest's, for the whole retrieve and the recall stages."""
    parts = [
        f"{label} en {hi[f'en{key}']['p50'] / lo[f'en{key}']['p50']:.2f}x, zh {hi[f'zh{key}']['p50'] / lo[f'zh{key}']['p50']:.2f}x"
        for label, key in (("whole retrieve", "_full_ms"), ("recall stages", "_ms"))
    ]
    return f"p50 at {hi['size']:,} / at {lo['size']:,} chunks (goal at 1M: <= 2.5x 1k): " + "; ".join(parts)


def _bm25(row: dict, lang: str) -> str:
    got = row.get(f"{lang}_bm25_ms")
    return f"{got['scan']['p50']:.1f}/{got['pruned']['p50']:.1f}" if got else "-"


def main(args: argparse.Namespace) -> int:
    sizes = [int(s) for s in str(args.sizes).split(",") if s.strip()]
    if not sizes or min(sizes) < CHUNKS_PER_DOC:
        raise RagError(
            f"--sizes {args.sizes!r}: give chunk counts of at least {CHUNKS_PER_DOC}", fix="e.g. --sizes 1000,10000"
        )
    print(
        "bench scale: SciFact + RGB-zh text repeated with perturbation; vectors of the built chunks are hashed "
        "stand-ins (HashedStandIn), queries and the timed upload use the real embedder; no multilingual vectors"
    )
    rows = []
    for size in sizes:
        row = _child("build", size, args) | _child("measure", size, args)
        report(row)
        rows.append(row)
    if len(rows) > 1:
        print(ratios(rows[0], rows[-1]))
    return 0


def add_scale_parser(bsub) -> argparse.ArgumentParser:
    p = bsub.add_parser("scale", help="query p50/p95, a 20-page upload, peak RSS and disk at 1k..1M chunks")
    p.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma-separated chunk counts (1000000 for 1M)")
    p.add_argument("--queries", type=int, default=30, help="timed questions per language and size")
    p.add_argument("--data", default="", help="folder holding scifact/ and rgb-zh/ (default RAG_BENCH_DATA)")
    p.set_defaults(func=main)
    return p


def _run_step(argv: list[str]) -> None:
    p = argparse.ArgumentParser(prog="python -m rag.bench.scale")
    p.add_argument("step", choices=["build", "measure", "bm25"])
    p.add_argument("size", type=int)
    p.add_argument("--repeat", type=int, default=10, help="bm25: copies of the size's index searched as one")
    p.add_argument("--queries", type=int, default=50)
    p.add_argument("--data", default="")
    args = p.parse_args(argv)
    settings = Settings.from_env()
    if args.data:
        settings = settings.replace(bench_data=args.data)
    corpus = Corpus.load(settings)
    settings = scale_settings(settings, args.size)
    if args.step == "build":
        result = build(settings, args.size, corpus)
    elif args.step == "bm25":
        result = bm25_repeated(settings, corpus, args.repeat, args.queries)
    else:
        result = measure(settings, args.size, corpus, args.queries)
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    _run_step(sys.argv[1:])
