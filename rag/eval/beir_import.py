"""Import a BEIR dataset as a knowledge base plus a gold set; the one BEIR ingest loop.

The corpus is streamed and ingested in batches (``INGEST_BATCH`` documents per
``KnowledgeBase.ingest`` call), each document as ``<id>.md`` (``# title``, blank line, text:
:func:`rag.eval.beir.beir_document`, the same files ``python -m rag bench beir`` ingests).
Documents already in the knowledge base under that name are not read again, so an
interrupted import resumes and a finished one costs a corpus scan. ``python -m rag bench``
ingests through the same loop (``ingest_corpus``).

With ``limit`` only the first N corpus documents are ingested and the gold set keeps the
queries whose relevant documents are all among them (hard negatives outside are dropped).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rag.eval.beir import BeirData, beir_doc_name, beir_document, beir_to_goldset, iter_corpus, load_beir
from rag.eval.gold.goldset import GoldSet
from rag.ingest.pipeline import UploadItem

if TYPE_CHECKING:
    from rag.kb import KnowledgeBase

log = logging.getLogger(__name__)
INGEST_BATCH = 500
ImportProgress = Callable[[int, str], None]  # (documents seen, message)


@dataclass
class BeirImport:
    gold: GoldSet
    documents: int  # corpus documents considered
    ingested: int  # added in this import
    present: int  # already in the knowledge base
    failed: list[str] = field(default_factory=list)  # document names that could not be ingested
    dropped_queries: int = 0  # judged queries left out (relevant documents not ingested)


def import_beir(
    kb: KnowledgeBase,
    path: str | Path,
    split: str = "test",
    limit: int = 0,
    progress: ImportProgress | None = None,
    name: str | None = None,
    folds: frozenset[int] = frozenset(),
) -> BeirImport:
    """Ingest the corpus of the BEIR folder ``path`` into ``kb`` and build the ``split`` gold set
    (named ``name``, default ``<folder>-<split>``); with ``folds``, only the questions whose
    ``metadata.fold`` is one of them (a SQuAD-shaped set's held-out articles)."""
    data = only_folds(load_beir(path, split, load_corpus=False), folds)
    corpus = ingest_corpus(kb, path, limit, progress)
    lost = set(corpus.failed)
    kept = {d for d in corpus.kept if beir_doc_name(d) not in lost}
    restricted, dropped = restrict(data, kept)
    gold = beir_to_goldset(restricted, name=name or f"{data.name}-{split}")
    present = corpus.seen - corpus.ingested - len(corpus.failed)
    return BeirImport(gold, corpus.seen, corpus.ingested, present, corpus.failed, dropped)


@dataclass
class CorpusIngest:
    seen: int  # corpus documents read
    ingested: int  # added now
    kept: set[str] = field(default_factory=set)  # BEIR ids read (present or ingested or failed)
    failed: list[str] = field(default_factory=list)  # document names that could not be ingested


def ingest_corpus(
    kb: KnowledgeBase, path: str | Path, limit: int = 0, progress: ImportProgress | None = None
) -> CorpusIngest:
    """The one BEIR ingest loop (import and benchmarks): stream ``path``'s corpus into ``kb`` in
    batches, skipping documents already there by name; ``limit`` reads only the first N."""
    present = {d.name for d in kb.documents()}
    out = CorpusIngest(0, 0)
    batch: list[UploadItem] = []
    for doc_id, doc in iter_corpus(path):
        if limit and out.seen >= limit:
            break
        out.seen += 1
        out.kept.add(doc_id)
        doc_name, body = beir_document(doc_id, doc)
        if doc_name not in present:
            batch.append(UploadItem(doc_name, body))
        if len(batch) >= INGEST_BATCH:
            out.ingested += _ingest(kb, batch, out.failed)
            batch = []
            if progress:
                progress(out.seen, f"{out.seen} documents read, {out.ingested} ingested")
    if batch:
        out.ingested += _ingest(kb, batch, out.failed)
    if progress:
        progress(out.seen, f"{out.seen} documents read, {out.ingested} ingested, {len(out.failed)} failed")
    return out


def _ingest(kb: KnowledgeBase, batch: list[UploadItem], failed: list[str]) -> int:
    results = kb.ingest(batch)
    for r in results:
        if not r.ok:
            log.warning("could not ingest %s: %s", r.name, r.error)
            failed.append(r.name)
    return sum(1 for r in results if r.ok)


def only_folds(data: BeirData, folds: frozenset[int]) -> BeirData:
    """``data`` with only the queries whose ``metadata.fold`` is in ``folds`` (all when empty)."""
    if not folds:
        return data
    keep = {q for q, m in data.query_meta.items() if m.get("fold") in folds}
    return BeirData(
        data.name,
        data.split,
        data.corpus,
        {q: t for q, t in data.queries.items() if q in keep},
        {q: r for q, r in data.qrels.items() if q in keep},
        {q: m for q, m in data.query_meta.items() if q in keep},
    )


def restrict(data: BeirData, doc_ids: set[str]) -> tuple[BeirData, int]:
    """``data`` with only the queries whose relevant documents are all in ``doc_ids`` and
    judgements pointing inside it; returns it and how many judged queries were dropped."""
    qrels: dict[str, dict[str, int]] = {}
    for qid, rels in data.qrels.items():
        positives = [d for d, score in rels.items() if score > 0]
        if positives and all(d in doc_ids for d in positives):
            qrels[qid] = {d: s for d, s in rels.items() if d in doc_ids}
    meta = {}
    for qid, m in data.query_meta.items():
        if qid in qrels:
            meta[qid] = {**m, "neg_ids": [n for n in m.get("neg_ids", []) if str(n) in doc_ids]}
    queries = {qid: text for qid, text in data.queries.items() if qid in qrels}
    restricted = BeirData(data.name, data.split, {}, queries, qrels, meta)
    return restricted, len(data.qrels) - len(qrels)
