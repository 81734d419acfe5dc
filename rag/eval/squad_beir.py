"""SQuAD-shaped reading-comprehension files (CMRC 2018's ``cmrc2018_trial.json``) as a BEIR set.

    python -m rag eval import-squad ../shared/bench/cmrc2018-trial/cmrc2018_trial.json ../shared/bench/cmrc2018-trial/beir

Each paragraph becomes one passage (``_id`` = the paragraph's id, the article's ``title``, its
``context`` as ``text``), each question a query whose ``metadata.answers`` are its answer texts
(in the file's order, each once), and ``qrels/<split>.tsv`` names the one paragraph it was asked
on. This is the form the Chinese fits read (``rag.bench.fit_cjk_reader``,
``fit_cjk_sentence_reader``, ``fit_cjk_reranker``, the CMRC refusal sets); ``RAG_BENCH_DATA``
finds it as ``cmrc2018-trial`` (``rag.eval.datasets``). Unanswerable questions (SQuAD 2.0's
``is_impossible``) have no paragraph to name and are refused: this converter is for sets where
every question is answered by its paragraph.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

from rag.errors import BenchDataNotFound


class Converted(NamedTuple):
    passages: int
    queries: int


def convert(source: Path, out: Path, split: str = "train") -> Converted:
    """Write ``out/corpus.jsonl``, ``out/queries.jsonl`` and ``out/qrels/<split>.tsv`` from the
    SQuAD-shaped ``source``; returns how many passages and queries were written."""
    if not source.is_file():
        raise BenchDataNotFound(
            f"No SQuAD-shaped file at {source}.",
            fix="Pass the path of cmrc2018_trial.json (https://github.com/ymcui/cmrc2018, squad-style-data/).",
        )
    try:
        articles = json.loads(source.read_text(encoding="utf-8"))["data"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{source}: not a SQuAD-shaped file ({{'data': [{{'paragraphs': ...}}]}}): {exc}") from exc
    corpus, queries, qrels = [], [], []
    seen: set[str] = set()
    for a_no, article in enumerate(articles):
        for p_no, para in enumerate(article.get("paragraphs", [])):
            pid = str(para.get("id") or f"{article.get('id', a_no)}_{p_no}")
            if pid in seen:
                raise ValueError(f"{source}: paragraph id {pid!r} appears twice; ids must be unique")
            seen.add(pid)
            corpus.append({"_id": pid, "title": article.get("title", ""), "text": para["context"]})
            for qa in para.get("qas", []):
                answers = list(dict.fromkeys(a["text"] for a in qa.get("answers", [])))
                if qa.get("is_impossible") or not answers:
                    raise ValueError(
                        f"{source}: question {qa.get('id')!r} has no answer; this converter names the "
                        "paragraph that answers each question, so a set with unanswerable ones is not for it"
                    )
                queries.append({"_id": qa["id"], "text": qa["question"], "metadata": {"answers": answers}})
                qrels.append((qa["id"], pid))
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    _jsonl(out / "corpus.jsonl", corpus)
    _jsonl(out / "queries.jsonl", queries)
    lines = ["query-id\tcorpus-id\tscore", *(f"{q}\t{p}\t1" for q, p in qrels)]
    (out / "qrels" / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Converted(len(corpus), len(queries))


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
