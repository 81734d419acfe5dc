"""`python -m rag bench citations [--limit N]`: do the answer's citations land on the gold evidence sentences?

SciFact's claims file (``claims_test300.jsonl`` beside the BEIR files) names, per claim and cited
abstract, the sentences that support or contradict the claim. Each claim with such sentences is
asked against the benchmark knowledge base (``<home>/bench``, shared with ``bench beir`` and
``bench refusal``): retrieval as configured, then the answer (extractive unless ``RAG_LLM`` says
otherwise). Every shown citation is one cited sentence; it counts as **on gold** when its supporting
span overlaps a gold evidence sentence of the cited abstract by at least half of the shorter of the
two (the overlap rule of the demo's citation precision, ``rag.eval.runs.answer_quality``).

Prints ``citations scifact: cited sentences on gold evidence A/N (0.xxx) · on a gold abstract
B/N (0.xxx) · claims with a gold citation C/M · refused R/M``: the first figure is the citation
precision; the second separates a wrong abstract (retrieval) from a wrong sentence in the right
abstract (sentence choice).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rag.answer import answer_question
from rag.answer.result import Answer
from rag.bench.beir import bench_home, default_kb_name, ingest_beir
from rag.config import Settings
from rag.errors import DatasetError
from rag.eval.beir import beir_doc_name
from rag.eval.datasets import resolve_dataset
from rag.eval.runs.answer_quality import MIN_OVERLAP_SHARE
from rag.llm import build_llm
from rag.retrieval.pipeline import retrieve
from rag.retrieval.trace import FallbackAction

CLAIMS_FILE = "claims_test300.jsonl"  # SciFact test claims with gold evidence sentences per abstract


@dataclass(frozen=True)
class Claim:
    id: str
    text: str
    evidence: dict[str, list[str]]  # KB document name -> its gold evidence sentences


@dataclass
class CitationCounts:
    claims: int = 0
    refused: int = 0
    claims_on_gold: int = 0  # answered claims with at least one citation on a gold sentence
    cited: int = 0  # shown citations (one [n] in one sentence)
    on_gold_doc: int = 0  # ... citing an abstract that has gold sentences for the claim
    on_gold: int = 0  # ... whose span falls on one of those sentences
    misses: list[str] = field(default_factory=list)  # claim ids answered with no gold citation

    def line(self, name: str) -> str:
        answered = self.claims - self.refused
        return (
            f"citations {name}: cited sentences on gold evidence {self.on_gold}/{self.cited} "
            f"({_share(self.on_gold, self.cited)}) · on a gold abstract {self.on_gold_doc}/{self.cited} "
            f"({_share(self.on_gold_doc, self.cited)}) · claims with a gold citation "
            f"{self.claims_on_gold}/{answered} · refused {self.refused}/{self.claims}"
        )


def _share(a: int, n: int) -> str:
    return f"{a / n:.3f}" if n else "n/a"


def load_claims(folder: Path, limit: int = 0) -> Iterator[Claim]:
    """Claims that have gold evidence sentences, in file order (the first ``limit``)."""
    path = folder / CLAIMS_FILE
    if not path.is_file():
        raise DatasetError(f"No {CLAIMS_FILE} in {folder}.", fix="Use the SciFact folder of the shared bench data.")
    n = 0
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            evidence = {beir_doc_name(d): list(s) for d, s in (row.get("evidence_text") or {}).items() if s}
            if not evidence:
                continue
            yield Claim(str(row["id"]), row["claim"], evidence)
            n += 1
            if limit and n >= limit:
                return


def gold_spans(doc_text: str, sentences: list[str]) -> list[tuple[int, int]]:
    """Character spans of the gold sentences in the document's text (a sentence not found is left out)."""
    spans = []
    for sentence in sentences:
        start = doc_text.find(sentence.strip())
        if start >= 0:
            spans.append((start, start + len(sentence.strip())))
    return spans


def falls_on(start: int, end: int, spans: list[tuple[int, int]]) -> bool:
    for s, e in spans:
        overlap = min(e, end) - max(s, start)
        if overlap > 0 and overlap >= MIN_OVERLAP_SHARE * min(e - s, end - start):
            return True
    return False


def score_answer(kb, claim: Claim, answer: Answer, counts: CitationCounts) -> None:
    hit = False
    for cite in answer.citations:
        counts.cited += 1
        sentences = claim.evidence.get(cite.doc_name)
        if not sentences:
            continue
        counts.on_gold_doc += 1
        if falls_on(cite.start, cite.end, gold_spans(kb.document_text(cite.doc_id), sentences)):
            counts.on_gold += 1
            hit = True
    counts.claims_on_gold += hit
    if not hit:
        counts.misses.append(claim.id)


def run(settings: Settings, limit: int, out=print) -> CitationCounts:
    folder = resolve_dataset("scifact", settings)
    home = settings.replace(home=bench_home(settings))
    out(f"scifact: knowledge base '{default_kb_name(folder)}' in {home.home} (ingested once, then reused)")
    kb = ingest_beir(folder, home, default_kb_name(folder), out)
    llm = build_llm(home)
    counts = CitationCounts()
    for claim in load_claims(folder, limit):
        counts.claims += 1
        trace = retrieve(kb, claim.text, home, persist=False)
        fb = trace.fallback
        if fb is not None and fb.action in (FallbackAction.CLARIFY, FallbackAction.REJECT):
            counts.refused += 1
            continue
        answer = answer_question(claim.text, trace.passages(), home, kb.embedder.embed_texts, llm)
        if answer.refused:
            counts.refused += 1
            continue
        score_answer(kb, claim, answer, counts)
    return counts


def add_citations_parser(bsub) -> None:
    p = bsub.add_parser("citations", help="SciFact: share of cited sentences that are gold evidence sentences")
    p.add_argument("--limit", type=int, default=100, help="only the first N claims with gold evidence (0: all)")
    p.set_defaults(func=main)


def main(args) -> int:
    settings = Settings.from_env()
    print(f"config {settings.fingerprint()} · reranker {settings.reranker} · answers {settings.llm}")
    counts = run(settings, args.limit)
    print(counts.line("scifact"))
    return 0
