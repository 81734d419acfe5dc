"""Same-topic unanswerable questions from a reading-comprehension set: the question's own
paragraph with the sentences that hold its answer cut out.

Filtering a question's paragraph out (``bench refusal``'s *removed* condition) leaves other
paragraphs, which on CMRC are other Wikipedia articles: easy to tell apart. What a user meets
(and RGB-zh tests) is harder: passages about the very subject that do not say the answer. This
module builds that from a *training* set with answer annotations (CMRC 2018 trial: each
question's ``metadata.answers`` are spans of its paragraph). For each question it writes one
extra document, ``<paragraph id>~<question id>``: the paragraph, same title, without every
sentence that overlaps an occurrence of an answer. The *removed* condition then searches the
corpus less the paragraph, plus this gutted copy.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from rag.answer.sentences import split_sentences
from rag.eval.beir import iter_corpus, iter_queries, load_qrels
from rag.text.script import CJK, script_of

GUTTED_SEP = "~"  # <paragraph id>~<question id>
MIN_LEFT_CHARS = 40  # a gutted paragraph shorter than this says nothing: the question is skipped


@dataclass(frozen=True)
class HardCorpus:
    folder: Path  # BEIR-layout folder: corpus.jsonl (originals + gutted copies)
    gutted: dict[str, str]  # question id -> id of its gutted paragraph
    originals: frozenset[str]  # ids of the original paragraphs


def gut(text: str, answers: list[str]) -> str | None:
    """``text`` without the sentences that overlap any occurrence of any answer; None when no
    answer occurs in it or too little is left."""
    spans = []
    for answer in (a.strip() for a in answers):
        start = text.find(answer) if answer else -1
        while start >= 0:
            spans.append((start, start + len(answer)))
            start = text.find(answer, start + 1)
    if not spans:
        return None
    kept = [s.text for s in split_sentences(text) if not any(a < s.end and s.start < b for a, b in spans)]
    left = ("" if script_of(text) == CJK else " ").join(kept)
    return left if len(left) >= MIN_LEFT_CHARS else None


def build(source: Path, split: str, out_dir: Path) -> HardCorpus:
    """Write (once; rewritten when the source changes) the hard corpus of ``source``'s ``split``."""
    corpus = dict(iter_corpus(source))
    qrels = load_qrels(source, split)
    gutted: dict[str, str] = {}
    rows = [{"_id": doc_id, "title": doc.title, "text": doc.text} for doc_id, doc in corpus.items()]
    for qid, _text, meta in iter_queries(source):
        positives = [d for d, g in qrels.get(qid, {}).items() if g > 0 and d in corpus]
        answers = (meta or {}).get("answers") or []
        if len(positives) != 1 or not answers:
            continue
        doc = corpus[positives[0]]
        left = gut(doc.text, [str(a) for a in answers])
        if left is None:
            continue
        gid = f"{positives[0]}{GUTTED_SEP}{qid}"
        gutted[qid] = gid
        rows.append({"_id": gid, "title": doc.title, "text": left})
    out_dir.mkdir(parents=True, exist_ok=True)
    body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    target = out_dir / "corpus.jsonl"
    if not target.exists() or target.read_text(encoding="utf-8") != body:
        target.write_text(body, encoding="utf-8")
    return HardCorpus(out_dir, gutted, frozenset(corpus))
