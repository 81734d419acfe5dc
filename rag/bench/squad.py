"""SQuAD 2.0-shaped reading-comprehension sets, read as training data for the readers.

Four train sets of ``RAG_BENCH_DATA`` (``../shared/bench/README.md``): half of SQuAD 2.0 dev in
English, all of it machine-translated into Chinese, and XQuAD (the same 1,190 questions in both
languages). SQuAD 2.0's unanswerable questions were written by crowd workers to look answerable
from the very paragraph they sit on: the "same topic, no answer" case the readers must refuse.
Two more ship with the repository (``SHIPPED``, ``data/train/README.md``): everyday documents
(workplace rules, terms and conditions, guides) in Chinese and English, asked in a user's own
words, each section with a near miss it does not answer: Wikipedia is not what our users ask of.

The sets share Wikipedia articles (and the Chinese one's titles are translated), so a question's
**article** is named by its English title everywhere: the Chinese articles are matched to
XQuAD's English titles through the question ids they share. Folds are by article
(``fold_of(article)``), so holding an article out holds it out of every language at once.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from rag.bench.answer_reader import fold_of
from rag.bench.own_words import TRAIN  # the repository's training data folder

SHIPPED = {"policies-zh": TRAIN / "policies-zh.json", "policies-en": TRAIN / "policies-en.json"}
SOURCES = {  # name -> (file under the benchmark data folder, or a shipped one's own path; language)
    "squad2-en": ("squad2-dev-en/dev-v2.0.json", "en"),
    "squad2-zh": ("chinese-squad2-dev/dev-v2.0-zh.json", "zh"),
    "xquad-en": ("xquad/xquad.en.json", "en"),
    "xquad-zh": ("xquad/xquad.zh.json", "zh"),
    "policies-zh": (str(SHIPPED["policies-zh"]), "zh"),
    "policies-en": (str(SHIPPED["policies-en"]), "en"),
}
# the everyday sets' first round of documents, by writer (the letter after the language in a
# question id): all the shipped sentence reader read; the second round was written after it was
# trained (data/train/README.md)
FIRST_ROUND = {"policies-zh": "ABC", "policies-en": "DE"}
_TITLES_FROM = "xquad-en"  # English titles by question id
TWINS = {"xquad-en": "xquad-zh", "xquad-zh": "xquad-en"}  # the same questions, professionally translated


@dataclass(frozen=True)
class SquadQuestion:
    source: str
    qid: str
    article: str  # the English title: the fold key shared by every language
    title: str  # the article's title as the set writes it (a heading)
    question: str
    answers: tuple[str, ...]  # empty when impossible
    impossible: bool
    context: str  # its paragraph

    @property
    def fold(self) -> int:
        return fold_of(self.article)


def path_of(source: str, data: Path) -> Path:
    """``source``'s file: under the benchmark data folder ``data``, or in the repository (``SHIPPED``)."""
    return SHIPPED.get(source) or data / SOURCES[source][0]


def _read(path: Path) -> list[dict]:
    if not path.exists():
        fix = (
            "it ships with the repository: git checkout -- data/train"
            if path in SHIPPED.values()
            else "set RAG_BENCH_DATA (or --bench-data) to the benchmark data folder"
        )
        raise FileNotFoundError(f"{path} is missing: {fix}")
    return json.loads(path.read_text(encoding="utf-8"))["data"]


@lru_cache(maxsize=4)
def _english_titles(data: Path) -> dict[str, str]:
    """Question id -> English article title, from XQuAD's English file."""
    out = {}
    for article in _read(data / SOURCES[_TITLES_FROM][0]):
        for para in article["paragraphs"]:
            for qa in para["qas"]:
                out[qa["id"]] = article["title"]
    return out


def _titles_for(source: str, data: Path) -> dict[str, str]:
    """The English titles ``_article_key`` votes with: none for an English or a shipped set (their
    articles are their own), XQuAD's for a Chinese SQuAD-shaped one."""
    return {} if SOURCES[source][1] == "en" or source in SHIPPED else _english_titles(data)


def _article_key(source: str, article: dict, titles: dict[str, str]) -> str:
    """The English title of a set's article: its own when the set is English, else the XQuAD title
    most of its question ids carry (its own title when it shares none: then no English set has it)."""
    if SOURCES[source][1] == "en":
        return article["title"]
    votes = Counter(titles[qa["id"]] for para in article["paragraphs"] for qa in para["qas"] if qa["id"] in titles)
    return votes.most_common(1)[0][0] if votes else article["title"]


def first_round(source: str, qid: str) -> bool:
    """Whether question ``qid`` of ``source`` is of its first round (``FIRST_ROUND``; a set written
    in one round: always)."""
    return source not in FIRST_ROUND or qid[2:3] in FIRST_ROUND[source]


def load(source: str, data: Path) -> list[SquadQuestion]:
    """Every question of ``source`` (a key of ``SOURCES``) under ``data``, answers that occur in
    their paragraph only (a translated answer that doesn't is dropped, and so is its question
    when none is left)."""
    titles = _titles_for(source, data)
    out = []
    for article in _read(path_of(source, data)):
        key = _article_key(source, article, titles)
        title = article["title"].replace("_", " ")
        for para in article["paragraphs"]:
            context = para["context"]
            for qa in para["qas"]:
                impossible = bool(qa.get("is_impossible"))
                answers = tuple(
                    dict.fromkeys(a["text"].strip() for a in qa.get("answers", []) if a["text"].strip() in context)
                )
                if not impossible and not answers:
                    continue
                out.append(
                    SquadQuestion(source, qa["id"], key, title, qa["question"].strip(), answers, impossible, context)
                )
    return out


def article_of(doc_name: str) -> str:
    """The article of a ``beir_view`` passage, from its name (``<source>-<article>-<paragraph>``,
    as a document name or with its ``.md``)."""
    return doc_name.removesuffix(".md").rsplit("-", 1)[0]


def beir_view(source: str, data: Path, out_dir: Path) -> Path:
    """``source`` as a BEIR-layout folder under ``out_dir`` (written once; rewritten when missing),
    for ``bench refusal``: one document per paragraph (``<article>-<paragraph>``, titled by its
    article), every question with ``metadata`` {answers, impossible, fold}, and ``qrels/train.tsv``
    naming each question's own paragraph (an unanswerable one's too: the paragraph it was written
    to look answerable from); written again when the source file is newer (a shipped set edited)."""
    folder = out_dir / f"{source}-beir"
    stamp, src = folder / "qrels" / "train.tsv", path_of(source, data)
    if stamp.exists() and (not src.exists() or src.stat().st_mtime <= stamp.stat().st_mtime):
        return folder
    titles = _titles_for(source, data)
    tmp = out_dir / f".{source}-beir.tmp"
    (tmp / "qrels").mkdir(parents=True, exist_ok=True)
    with (
        (tmp / "corpus.jsonl").open("w", encoding="utf-8") as corpus,
        (tmp / "queries.jsonl").open("w", encoding="utf-8") as queries,
        (tmp / "qrels" / "train.tsv").open("w", encoding="utf-8") as qrels,
    ):
        qrels.write("query-id\tcorpus-id\tscore\n")
        for a, article in enumerate(_read(src)):
            fold = fold_of(_article_key(source, article, titles))
            for p, para in enumerate(article["paragraphs"]):
                doc = f"{source}-{a}-{p}"
                row = {"_id": doc, "title": article["title"].replace("_", " "), "text": para["context"]}
                corpus.write(json.dumps(row, ensure_ascii=False) + "\n")
                for qa in para["qas"]:
                    impossible = bool(qa.get("is_impossible"))
                    answers = [x["text"].strip() for x in qa.get("answers", []) if x["text"].strip() in para["context"]]
                    if not impossible and not answers:
                        continue
                    meta = {"answers": answers, "impossible": impossible, "fold": fold}
                    queries.write(
                        json.dumps({"_id": qa["id"], "text": qa["question"], "metadata": meta}, ensure_ascii=False)
                        + "\n"
                    )
                    qrels.write(f"{qa['id']}\t{doc}\t1\n")
    if folder.exists():
        import shutil

        shutil.rmtree(folder)
    tmp.rename(folder)
    return folder


def twin_questions(source: str, data: Path) -> dict[str, str]:
    """Question id -> the same question as ``source``'s twin set (``TWINS``) asks it, in the other
    language: XQuAD's English and Chinese share their ids."""
    if source not in TWINS:
        raise ValueError(f"{source} has no twin in another language (sets with one: {', '.join(TWINS)})")
    return {q.qid: q.question for q in load(TWINS[source], data)}
