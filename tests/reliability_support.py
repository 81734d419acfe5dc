"""Helpers for the reliability tests: a cheap deterministic embedder, a tiny real model, and an audit.

The embedder is not what these tests test: ``HashEmbedder`` (hashed bag of words, no torch)
keeps subprocess start-up to the cost of importing ``rag`` so that many kill points fit in
the time budget; ``make_tiny_model`` writes a real (random-weight) sentence-transformers model
for the tests that drive the real CLI, which loads its embedder from settings.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import re
import shutil
import subprocess
import threading
from pathlib import Path

import numpy as np

from rag.embedder import Embedder, bundled_path
from rag.ingest.chunking import estimate_tokens

HASH_MODEL_ID = "test-hash-embedder"
ROOT = Path(__file__).resolve().parent.parent
DRIVER = ROOT / "tests" / "reliability_driver.py"
_WORD = re.compile(r"\w+")


class HashEmbedder(Embedder):
    """Hashed bag-of-words vectors (unit length): deterministic, shared words -> similar vectors."""

    def __init__(self, dim: int = 32) -> None:
        super().__init__(model_id=HASH_MODEL_ID, dim=dim, max_tokens=256, li_model=None)

    def embed_texts(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "little")
                out[row, h % self.dim] += 1.0 if h & 1 << 31 else -1.0
            out[row, 0] += 1e-3  # never the zero vector
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def token_len(self, text: str) -> int:
        return estimate_tokens(text) + 2


# -- deterministic documents ------------------------------------------------------------------
def marker(doc: int, version: int) -> str:
    return f"d{doc}v{version}marker"


def doc_text(doc: int, version: int, sections: int = 4) -> bytes:
    """Markdown whose every paragraph carries the (doc, version) marker; 2-3 chunks per section."""
    lines = [f"# Document {doc}", ""]
    for s in range(sections + doc % 3):
        lines += [f"## Section {s}", ""]
        for p in range(3):
            words = " ".join(f"w{(doc * 31 + s * 7 + p * 3 + k) % 97}" for k in range(40))
            lines += [f"Paragraph {p} of section {s} ({marker(doc, version)}): {words}.", ""]
    return "\n".join(lines).encode()


# -- audit --------------------------------------------------------------------------------------
def audit(kb) -> dict:
    """Where catalog, Chroma and BM25 stand for ``kb``; ``problems`` lists every disagreement."""
    cat = kb.catalog
    active = cat.active_revisions(kb.name)
    catalog_ids = {r["id"] for r in cat.active_chunk_rows(kb.name)}
    items = list(kb.vectors.all_items())
    chroma_active = {cid for cid, _, m in items if active.get(str(m["doc_id"])) == m["revision"]}
    chroma_other = sorted(cid for cid, _, m in items if active.get(str(m["doc_id"])) != m["revision"])
    bm25_ids = set(kb.bm25().ids)
    problems = []
    if catalog_ids != chroma_active:
        problems.append(f"catalog vs chroma: {sorted(catalog_ids ^ chroma_active)[:5]}")
    if catalog_ids != bm25_ids:
        problems.append(f"catalog vs bm25: {sorted(catalog_ids ^ bm25_ids)[:5]}")
    if chroma_other:
        problems.append(f"chroma holds inactive vectors: {chroma_other[:5]}")
    problems += _revision_problems(kb, active, {cid: text for cid, text, _ in items})
    problems += _bm25_problems(kb)
    states = dict(cat.q("SELECT state, COUNT(*) FROM revisions WHERE kb=? GROUP BY state", kb.name))
    if states.get("writing") or states.get("retired"):
        problems.append(f"unfinished revisions: {states}")
    jobs = dict(cat.q("SELECT status, COUNT(*) FROM jobs WHERE kb=? GROUP BY status", kb.name))
    if jobs.get("running"):
        problems.append(f"jobs still running: {jobs}")
    hashes = {r["name"]: r["content_hash"] for r in cat.q(_ACTIVE_HASHES, kb.name)}
    return {"problems": problems, "hashes": hashes, "jobs": jobs, "states": states, "chunks": len(catalog_ids)}


def _bm25_problems(kb) -> list[str]:
    """The BM25 directory holds what its manifest names and nothing else, and its segments score
    as one index over the active chunks does."""
    from rag.store.bm25 import BM25Index

    index, problems = kb.bm25(), []
    manifest = kb.bm25_dir / "manifest.json"
    named = set(json.loads(manifest.read_text())["segments"]) if manifest.exists() else set()
    files = {p.name for p in kb.bm25_dir.iterdir()} if kb.bm25_dir.exists() else set()
    if files - named - {"manifest.json"} or named - files:
        problems.append(f"bm25 directory {sorted(files)} vs its manifest {sorted(named)}")
    active = sorted(kb.catalog.active_revisions(kb.name).items())
    flat = BM25Index.build(sorted(kb._index_items(active)), index.version)
    for query in ("Paragraph section", "w3 w17 w40 Document"):
        got, want = index.search(query, 50, doc_weight=1.0), flat.search(query, 50, doc_weight=1.0)
        if [h.chunk_id for h in got] != [h.chunk_id for h in want] or any(
            abs(a.score - b.score) > 1e-9 * max(1.0, abs(b.score)) for a, b in zip(got, want, strict=True)
        ):
            problems.append(f"bm25 segments score {query!r} unlike one index over the active chunks")
    return problems


_ACTIVE_HASHES = (
    "SELECT d.name, r.content_hash FROM documents d JOIN revisions r ON r.kb=d.kb AND r.doc_id=d.id "
    "AND r.revision=d.active_revision WHERE d.kb=?"
)


def _revision_problems(kb, active: dict[str, int], chroma_text: dict[str, str]) -> list[str]:
    """Every active revision has its text, all its chunks, and Chroma holds the same chunk texts."""
    problems = []
    for doc_id, rev in active.items():
        row = kb.catalog.q(
            "SELECT chunks, text FROM revisions WHERE kb=? AND doc_id=? AND revision=?", kb.name, doc_id, rev
        )
        chunks = kb.catalog.doc_chunks(kb.name, doc_id, rev)
        if not row or row[0]["text"] is None or row[0]["chunks"] != len(chunks):
            problems.append(f"revision {doc_id}:{rev} incomplete")
            continue
        text = row[0]["text"]
        for c in chunks:
            if chroma_text.get(c["id"]) != text[c["char_start"] : c["char_end"]]:
                problems.append(f"chunk {c['id']} text differs between catalog and chroma")
                break
    return problems


def check_hits(hits, where: str) -> list[str]:
    """Problems in one retriever call: two revisions of a document, or a chunk without its text."""
    problems, seen = [], {}
    for h in hits:
        c = h.chunk
        if seen.setdefault(c.doc_id, c.revision) != c.revision:
            problems.append(f"{where}: two revisions of {c.doc_id} ({seen[c.doc_id]} and {c.revision})")
        if not c.text.strip() or c.id != f"{c.doc_id}:{c.revision}:{c.page}:{c.idx}":
            problems.append(f"{where}: chunk {c.id} without its text")
        versions = set(re.findall(r"d(\d+)v(\d+)marker", c.text))
        if len({v for _, v in versions}) > 1:
            problems.append(f"{where}: chunk {c.id} mixes versions {versions}")
    return problems


# -- a tiny real sentence-transformers model -------------------------------------------------------
def make_tiny_model(target: Path) -> Path:
    """A 1-layer, 32-d BERT with the bundled MiniLM tokenizer, saved as a sentence-transformers dir."""
    if (target / "modules.json").exists():
        return target
    import torch
    from sentence_transformers import SentenceTransformer, models
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    raw = target.parent / (target.name + "-bert")
    config = BertConfig(
        vocab_size=30522, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64
    )
    BertModel(config).save_pretrained(raw)
    src = bundled_path("bundled:all-MiniLM-L6-v2")
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(src / name, raw / name)
    word = models.Transformer(str(raw), max_seq_length=256)
    model = SentenceTransformer(modules=[word, models.Pooling(32, "mean")], device="cpu")
    model.save(str(target))
    return target


def read_json_line(line: str, prefix: str) -> dict:
    assert line.startswith(prefix), line
    return json.loads(line[len(prefix) :])


def probe_queries(kb) -> list[str]:
    """Query every document's markers: only its active revision answers, older versions never do."""
    problems = []
    active = kb.catalog.active_revisions(kb.name)
    for doc_id, rev in active.items():
        found = {int(v) for _, v in re.findall(r"d(\d+)v(\d+)marker", kb.document_text(doc_id, rev))}
        docs = set(re.findall(r"d(\d+)v\d+marker", kb.document_text(doc_id, rev)))
        for d in docs:
            for v in range(max(found) + 1):
                term = marker(int(d), v)
                sparse = [h for h in kb.sparse_search(term, 50) if h.chunk.doc_id == doc_id]
                dense = kb.dense_search(kb.embedder.embed_query(term), 20)
                problems += check_hits(sparse, f"sparse {term}") + check_hits(dense, f"dense {term}")
                problems += [
                    f"dense {term}: inactive {h.chunk.id}"
                    for h in dense
                    if active.get(h.chunk.doc_id) != h.chunk.revision
                ]
                if v in found and not sparse:
                    problems.append(f"sparse {term}: active revision {doc_id}:{rev} not found")
                if v not in found and sparse:
                    problems.append(f"sparse {term}: old version visible in {sparse[0].chunk.id}")
    return problems


# -- subprocesses -------------------------------------------------------------------------------
def child_env(**extra: str) -> dict[str, str]:
    """This environment without RAG_* settings, able to import rag and the test helpers."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env |= {"PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'tests'}", "HF_HUB_OFFLINE": "1"}
    return env | {"TOKENIZERS_PARALLELISM": "false"} | extra


class Lines:
    """Stdout lines of a child, read in a thread so that the test can wait with a timeout."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.q: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, args=(proc,), daemon=True).start()

    def _pump(self, proc: subprocess.Popen) -> None:
        for line in proc.stdout:
            self.q.put(line.rstrip("\n"))
        self.q.put(None)

    def next(self, timeout: float = 120) -> str | None:
        return self.q.get(timeout=timeout)
