"""The reading pairs both Chinese readers and the English answer reader are fit on: a question
and a window of a passage, labelled by whether the window holds an answer.

From CMRC 2018 trial's BEIR view (``train_questions``, ``pairs``): per question, its own
paragraph's window, a window centred on its answer, the paragraph gutted of its answer sentences
(``hard_negatives.gut``), windows of its own paragraph around other sentences and the other
paragraphs sharing most of its characters. From SQuAD-shaped sets (``squad_pairs``,
``squad_split``, by article fold): the same for an answerable question, and an unanswerable one's
own window as a negative. ``crossed`` asks an XQuAD question's pairs in the other language, where
no word is shared and only meaning ties question and passage. ``paraphrased`` asks any of them
again in Cilin synonyms.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from rag.bench import squad
from rag.bench.answer_reader import READER_FOLDS
from rag.bench.hard_negatives import gut
from rag.bench.own_words import rounds_of
from rag.bench.squad import SquadQuestion
from rag.bench.synonyms import paraphrase
from rag.errors import BenchDataNotFound
from rag.eval.beir import iter_corpus, iter_queries, load_qrels
from rag.readers.reader import focus, grams
from rag.retrieval.answerability.terms import sentences

OTHERS = 1  # other paragraphs per question

DEFAULT_DATA = Path("../shared/bench/cmrc2018-trial/beir")


def cmrc_beir(folder: Path) -> Path:
    """``folder`` when it holds CMRC 2018 trial's BEIR form; else a clear error naming the
    command that builds it from the raw file beside it."""
    if (folder / "corpus.jsonl").exists() and (folder / "qrels" / "train.tsv").exists():
        return folder
    raw = folder.parent / "cmrc2018_trial.json"
    raise BenchDataNotFound(
        f"No CMRC 2018 trial BEIR set at {folder} (corpus.jsonl, queries.jsonl, qrels/train.tsv).",
        fix=f"Build it: python -m rag eval import-squad {raw} {folder} (cmrc2018_trial.json from "
        "https://github.com/ymcui/cmrc2018), or pass --data with the folder that holds it.",
    )


@dataclass(frozen=True)
class Pair:
    qid: str
    question: str
    window: str
    heading: str  # the paragraph's title (as a BEIR chunk's heading path holds it)
    label: int
    role: str  # own / answer / gutted / other


def _answer_window(text: str, answer: str) -> str:
    """A window centred on the answer's first occurrence (the answer sentence and its neighbours)."""
    at = text.find(answer)
    return focus(answer, text[max(at - 150, 0) : at + 150]) if at >= 0 else ""


def holds(window: str, answers: list[str]) -> int:
    return int(any(a in window for a in answers))


def _inner_windows(question: str, text: str, title: str, answers: list[str], n: int) -> list[str]:
    """Up to ``n`` windows of the own paragraph around sentences that don't hold the answer, those
    sharing most of the question first: same article, same topic, no answer."""
    q = grams(question) - grams(title)
    sents = [s for s in sentences(text) if not holds(s, answers)]
    sents.sort(key=lambda s: -len(q & grams(s)))
    return [w for w in (focus(s, text) for s in sents[:n]) if not holds(w, answers)]


@dataclass(frozen=True)
class TrainQuestion:
    """A CMRC question with one paragraph of its own that holds an answer string."""

    qid: str
    question: str
    answers: list[str]
    text: str  # its own paragraph
    title: str
    gutted: str  # the paragraph with its answer sentences cut out (``hard_negatives.gut``)
    near: list  # the ``others`` other paragraphs (BEIR docs) sharing most of the question's characters


def train_questions(data: Path, others: int = OTHERS) -> Iterator[TrainQuestion]:
    """The questions of a CMRC-shaped BEIR view (train qrels) both readers are fit on."""
    corpus = dict(iter_corpus(data))
    by_doc = {d: grams(doc.text) for d, doc in corpus.items()}
    qrels = load_qrels(data, "train")
    for qid, question, meta in iter_queries(data):
        own = [d for d, g in qrels.get(qid, {}).items() if g > 0 and d in corpus]
        answers = [str(a).strip() for a in (meta or {}).get("answers") or [] if str(a).strip()]
        if len(own) != 1 or not answers:
            continue
        text, title = corpus[own[0]].text, corpus[own[0]].title
        gutted = gut(text, answers)
        if gutted is None:
            continue
        q = grams(question)
        near = sorted((d for d in corpus if d != own[0]), key=lambda d: (-len(q & by_doc[d]), d))[:others]
        yield TrainQuestion(qid, question, answers, text, title, gutted, [corpus[d] for d in near])


def pairs(data: Path, inner: int = 0, others: int = OTHERS) -> list[Pair]:
    out: list[Pair] = []
    for t in train_questions(data, others):
        qid, question, answers, text, title = t.qid, t.question, t.answers, t.text, t.title
        w = focus(question, text, title)
        out.append(Pair(qid, question, w, title, holds(w, answers), "own"))
        aw = _answer_window(text, answers[0])
        if aw and aw != w and holds(aw, answers):
            out.append(Pair(qid, question, aw, title, 1, "answer"))
        out.append(Pair(qid, question, focus(question, t.gutted, title), title, 0, "gutted"))
        for w in _inner_windows(question, text, title, answers, inner):
            out.append(Pair(qid, question, w, title, 0, "inner"))
        for doc in t.near:
            w = focus(question, doc.text, doc.title)
            out.append(Pair(qid, question, w, doc.title, holds(w, answers), "other"))
    return out


def squad_pairs(questions: list[SquadQuestion]) -> list[Pair]:
    """Pairs from SQuAD-shaped questions: an answerable one's own window (label: it holds an answer),
    a window centred on its answer and its paragraph gutted of the answer sentences (a negative);
    an unanswerable one's own window, a negative written to look answerable from that paragraph."""
    out: list[Pair] = []
    for q in questions:
        w = focus(q.question, q.context, q.title)
        if q.impossible:
            out.append(Pair(q.qid, q.question, w, q.title, 0, "impossible"))
            continue
        answers = list(q.answers)
        out.append(Pair(q.qid, q.question, w, q.title, holds(w, answers), "own"))
        aw = _answer_window(q.context, answers[0])
        if aw and aw != w and holds(aw, answers):
            out.append(Pair(q.qid, q.question, aw, q.title, 1, "answer"))
        gutted = gut(q.context, answers)
        if gutted is not None:
            out.append(Pair(q.qid, q.question, focus(q.question, gutted, q.title), q.title, 0, "gutted"))
    return out


def crossed(questions: list[SquadQuestion], twins: dict[str, str]) -> list[Pair]:
    """``squad_pairs`` of ``questions`` (windows chosen with the question's own words, as the
    pipeline chooses them) with each question asked as its twin in the other language asks it
    (``squad.twin_questions``): the same labels, no shared word. Questions without a twin are left out."""
    return [replace(p, question=twins[p.qid]) for p in squad_pairs([q for q in questions if q.qid in twins])]


def squad_split(sources: list[str], data: Path, per_source: int, seed: int = 13, first_round: bool = False):
    """(fit questions, held-out questions) of the SQuAD-shaped ``sources``: the fit ones from the
    articles of ``READER_FOLDS`` (at most ``per_source`` per source, drawn at random; 0: all),
    the held-out ones from the other articles (at most ``per_source // 2``); ``first_round``: of
    a set written in rounds, the first round's documents only (``squad.first_round``)."""
    fit, held = [], []
    for source in sources:
        qs = [q for q in squad.load(source, data) if not first_round or squad.first_round(source, q.qid)]
        rng = random.Random(f"{seed}:{source}")
        train = [q for q in qs if q.fold in READER_FOLDS]
        other = [q for q in qs if q.fold not in READER_FOLDS]
        rng.shuffle(train)
        rng.shuffle(other)
        fit += train[: per_source or None]
        held += other[: (per_source // 2) or None]
    return fit, held


def own_worded(items: list[Pair], rounds: int = 1) -> list[Pair]:
    """``items`` whose question has a rewrite in a user's own words (``own_words.rounds_of``), each
    asked in those words, once per round that rewrites it: the same windows (chosen with the
    question's own words) and labels."""
    return [replace(p, question=own[p.qid]) for own in rounds_of(rounds) for p in items if p.qid in own]


def paraphrased(items: list[Pair], seed: int) -> list[Pair]:
    """``items`` again, each question with Cilin synonyms swapped in (one paraphrase per question,
    so its own window and its negatives are read against the same words); questions without a
    word Cilin knows are left out."""
    rng, by_q = random.Random(seed), {}
    for p in items:
        if p.qid not in by_q:
            by_q[p.qid] = paraphrase(p.question, rng)
    return [replace(p, question=by_q[p.qid]) for p in items if by_q[p.qid]]
