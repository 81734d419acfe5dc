"""Read BEIR-layout datasets (corpus, queries, qrels) and turn them into gold sets.

A BEIR folder holds ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl``
(``_id``, ``text``, optional ``metadata``) and ``qrels/<split>.tsv`` (``query-id``,
``corpus-id``, ``score``; header line optional). Either JSONL file may be gzipped
(``corpus.jsonl.gz``). The corpus is read line by line (:func:`iter_corpus`), so a large
one can be ingested without holding it all in memory.

Each corpus document becomes one Markdown knowledge-base document named ``beir_doc_name(id)``
(``<id>.md``): the title as a level-1 heading, a blank line, the body (:func:`beir_document`).
The title is thus every chunk's heading path and is indexed with each of them, as for any
uploaded document with headings.
Gold labels are whole-document labels with the qrels score as grade.
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple

from rag.errors import DatasetError
from rag.eval.gold.goldset import GoldItem, GoldSet, Passage, validate

log = logging.getLogger(__name__)


class BeirDoc(NamedTuple):
    title: str
    text: str


@dataclass
class BeirData:
    name: str
    split: str
    corpus: dict[str, BeirDoc]
    queries: dict[str, str]  # only the queries judged in this split
    qrels: dict[str, dict[str, int]]  # query id -> {doc id: grade}
    query_meta: dict[str, dict[str, Any]] = field(default_factory=dict)


def load_beir(path: str | Path, split: str = "test", load_corpus: bool = True) -> BeirData:
    """Load a BEIR folder for one qrels split. With ``load_corpus=False`` the corpus stays on
    disk (stream it with :func:`iter_corpus`)."""
    root = Path(path)
    if not root.is_dir():
        raise DatasetError(f"'{root}' is not a folder.")
    qrels = load_qrels(root, split)
    queries: dict[str, str] = {}
    meta: dict[str, dict[str, Any]] = {}
    for qid, text, qmeta in iter_queries(root):
        if qid in qrels:
            queries[qid] = text
            if qmeta:
                meta[qid] = qmeta
    missing = [qid for qid in qrels if qid not in queries]
    if missing:
        log.warning("%d judged queries of %s/%s are not in queries.jsonl; dropped", len(missing), root.name, split)
        qrels = {qid: rels for qid, rels in qrels.items() if qid in queries}
    corpus = dict(iter_corpus(root)) if load_corpus else {}
    return BeirData(name=root.name, split=split, corpus=corpus, queries=queries, qrels=qrels, query_meta=meta)


def iter_corpus(path: str | Path) -> Iterator[tuple[str, BeirDoc]]:
    """``(doc id, BeirDoc)`` for each line of the corpus, streamed."""
    for lineno, obj in _iter_jsonl(_find(Path(path), "corpus.jsonl")):
        doc_id = _field(obj, "_id", lineno, "corpus.jsonl")
        text = obj.get("text")
        if not isinstance(text, str):
            raise DatasetError(f"corpus.jsonl, line {lineno}: field 'text' must be a string.")
        yield str(doc_id), BeirDoc(str(obj.get("title") or ""), text)


def iter_queries(path: str | Path) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """``(query id, text, metadata)`` for each line of ``queries.jsonl``."""
    for lineno, obj in _iter_jsonl(_find(Path(path), "queries.jsonl")):
        qid = _field(obj, "_id", lineno, "queries.jsonl")
        if "text" in obj and not str(obj["text"]).strip():  # e.g. CMRC 2018 trial TRIAL_776_QUERY_4
            log.warning("queries.jsonl, line %d: query %s has an empty text; skipped", lineno, qid)
            continue
        text = _field(obj, "text", lineno, "queries.jsonl")
        meta = obj.get("metadata")
        yield str(qid), str(text), meta if isinstance(meta, dict) else {}


def load_qrels(path: str | Path, split: str) -> dict[str, dict[str, int]]:
    """``{query id: {doc id: score}}`` from ``qrels/<split>.tsv`` (a header line is skipped)."""
    file = Path(path) / "qrels" / f"{split}.tsv"
    if not file.is_file():
        found = sorted(p.stem for p in (Path(path) / "qrels").glob("*.tsv"))
        raise DatasetError(f"No qrels for split '{split}' ({file}). Splits found: {found or 'none'}.")
    qrels: dict[str, dict[str, int]] = {}
    with file.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            cols = line.rstrip("\n").split("\t")
            if not line.strip() or (lineno == 1 and len(cols) in (3, 4) and not _is_int(cols[-1])):
                continue
            if len(cols) not in (3, 4) or not _is_int(cols[-1]):
                raise DatasetError(f"{file.name}, line {lineno}: expected 'query-id<TAB>corpus-id<TAB>score'.")
            qid, doc_id = cols[0], cols[-2]  # 4 columns: TREC style 'qid 0 docid score'
            qrels.setdefault(qid, {})[doc_id] = int(cols[-1])
    return qrels


def beir_doc_name(doc_id: str) -> str:
    """The knowledge-base document name of a BEIR document (unsafe characters become '_')."""
    return re.sub(r"[^\w.-]", "_", doc_id) + ".md"


def beir_document(doc_id: str, doc: BeirDoc) -> tuple[str, bytes]:
    """``(file name, UTF-8 bytes)`` to ingest for one BEIR document: ``# title``, blank line, text."""
    title = " ".join(doc.title.split())
    body = f"# {title}\n\n{doc.text}" if title else doc.text
    return beir_doc_name(doc_id), body.encode("utf-8")


def folds_arg(text: str) -> frozenset[int]:
    """A ``--folds`` value ("3,4") as fold numbers; an argparse type, so a bad one is a clear usage error."""
    try:
        return frozenset(int(f) for f in text.split(",") if f.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"fold numbers separated by commas (e.g. 3,4), not {text!r}") from None


def beir_to_goldset(data: BeirData, name: str | None = None) -> GoldSet:
    """One gold item per judged query: score > 0 -> relevant (grade = score), score <= 0 and
    ``metadata.neg_ids`` -> hard negatives, ``metadata.answer`` (or SQuAD-style ``metadata.answers``,
    alternatives) -> reference answer; SQuAD 2.0's ``metadata.impossible`` -> a question that must
    be refused (its judged passage is the one it was written to look answerable from)."""
    items = [_item(data, qid, text) for qid, text in data.queries.items()]
    gold = GoldSet(name=name or f"{data.name}-{data.split}", items=items, source=f"BEIR {data.name}/{data.split}")
    return validate(gold)


def _item(data: BeirData, qid: str, text: str) -> GoldItem:
    rels = data.qrels.get(qid, {})
    meta = data.query_meta.get(qid, {})
    if meta.get("impossible"):
        tags = ("beir", data.name, data.split, "impossible")
        return GoldItem(id=qid, question=text, should_refuse=True, tags=tags, meta={"beir_query_id": qid})
    positives = [doc for doc, score in rels.items() if score > 0]
    negatives = [doc for doc, score in rels.items() if score <= 0]
    negatives += [str(n) for n in meta.get("neg_ids", []) if str(n) not in rels]
    answers = meta.get("answer")  # RGB: every item required (a nested list gives alternatives)
    if not answers and meta.get("answers"):  # SQuAD-style (CMRC 2018): the annotators' alternatives
        answers = [list(meta["answers"])]
    return GoldItem(
        id=qid,
        question=text,
        expected_docs=tuple(beir_doc_name(d) for d in positives),
        relevant=tuple(Passage(doc=beir_doc_name(d), grade=rels[d]) for d in positives),
        hard_negatives=tuple(Passage(doc=beir_doc_name(d)) for d in negatives),
        reference_answer=format_answers(answers) if answers else "",
        tags=("beir", data.name, data.split),
        meta={"beir_query_id": qid} | ({"answers": answers} if answers else {}),
    )


def format_answers(answers: Any) -> str:
    """RGB-style answers as text: top-level items are all required ('; '), nested lists are
    alternatives (' / ')."""
    if isinstance(answers, str):
        return answers
    parts = [" / ".join(map(str, a)) if isinstance(a, list) else str(a) for a in answers]
    return "; ".join(parts)


def _find(root: Path, name: str) -> Path:
    for candidate in (root / name, root / f"{name}.gz"):
        if candidate.is_file():
            return candidate
    raise DatasetError(f"'{root}' has no {name} (or {name}.gz).")


def _open(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open(encoding="utf-8")


def _iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with _open(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as err:
                raise DatasetError(f"{path.name}, line {lineno}: not valid JSON ({err.msg}).") from None
            if not isinstance(obj, dict):
                raise DatasetError(f"{path.name}, line {lineno}: expected a JSON object.")
            yield lineno, obj


def _field(obj: dict[str, Any], key: str, lineno: int, file: str) -> Any:
    value = obj.get(key)
    if value is None or value == "":
        raise DatasetError(f"{file}, line {lineno}: field '{key}' is missing.")
    return value


def _is_int(text: str) -> bool:
    return bool(re.fullmatch(r"-?\d+", text.strip()))
