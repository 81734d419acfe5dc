"""The everyday-documents training sets that ship in data/train (``policies-zh``, ``policies-en``):
SQuAD 2.0-shaped, read by the readers' fits and by ``bench refusal`` without the benchmark data
folder, their BEIR view rebuilt when the file changes."""

from __future__ import annotations

import json
import os
import re

import pytest

from rag.bench import squad
from rag.bench.refusal import SETS, set_folder
from rag.config import Settings
from rag.errors import DatasetError
from rag.eval.beir import beir_doc_name, beir_to_goldset, iter_corpus, iter_queries, load_beir
from rag.eval.beir_import import only_folds
from rag.readers.reader import grams


@pytest.mark.parametrize("source", sorted(squad.SHIPPED))
def test_every_answer_is_a_span_of_its_own_section_and_nothing_is_dropped(source):
    raw = json.loads(squad.SHIPPED[source].read_text(encoding="utf-8"))["data"]
    qas = [qa for a in raw for p in a["paragraphs"] for qa in p["qas"]]
    loaded = squad.load(source, squad.TRAIN)  # no benchmark data folder needed
    assert len(loaded) == len(qas)  # load drops a question whose answer is not in its paragraph
    assert len({q.qid for q in loaded}) == len(loaded)
    impossible = [q for q in loaded if q.impossible]
    assert 0.2 < len(impossible) / len(loaded) < 0.5  # near misses beside the answerable ones
    assert all(qa.get("missing") for qa in qas if qa["is_impossible"])  # each says what the document lacks


@pytest.mark.parametrize("source", sorted(squad.SHIPPED))
def test_articles_spread_over_every_fold_so_readers_and_the_decision_fit_on_different_ones(source):
    loaded = squad.load(source, squad.TRAIN)
    assert {q.fold for q in loaded} == {0, 1, 2, 3, 4}


@pytest.mark.parametrize("source", sorted(squad.SHIPPED))
def test_questions_are_asked_in_other_words_than_their_section(source):
    """The point of the sets: an answerable question shares little of its wording with its section
    (words in English, characters and character pairs in Chinese), where a question copied from
    the text around its answer shares nearly all of it."""
    loaded = [q for q in squad.load(source, squad.TRAIN) if not q.impossible]
    tokens = (lambda s: set(re.findall(r"[a-z0-9]+", s.lower()))) if squad.SOURCES[source][1] == "en" else grams

    def shared(question: str, context: str) -> float:
        return len(tokens(question) & tokens(context)) / max(len(tokens(question)), 1)

    own = [shared(q.question, q.context) for q in loaded]
    assert sum(own) / len(own) < 0.45
    # the measure fails a set whose questions copy their section: the text around each answer
    at = [q.context.find(q.answers[0]) for q in loaded]
    copied = [shared(q.context[max(i - 20, 0) : i + 20], q.context) for q, i in zip(loaded, at, strict=True)]
    assert sum(copied) / len(copied) > 0.8


def test_refusal_sets_ask_the_shipped_files_without_the_benchmark_data(tmp_path):
    settings = Settings.from_env().replace(home=tmp_path / "home", bench_data=str(tmp_path / "no-bench-data"))
    folder = set_folder(SETS["policies-zh"], settings)
    docs = dict(iter_corpus(folder))
    meta = {qid: m for qid, _t, m in iter_queries(folder)}
    assert len(docs) == sum(len(a["paragraphs"]) for a in squad._read(squad.SHIPPED["policies-zh"]))
    assert any(m["impossible"] for m in meta.values()) and any(m["answers"] for m in meta.values())


def test_beir_view_is_written_again_when_its_source_changes(tmp_path):
    data, derived = tmp_path / "bench", tmp_path / "derived"
    path = data / squad.SOURCES["squad2-en"][0]
    path.parent.mkdir(parents=True)

    def write(question: str, mtime: float) -> None:
        qa = {"id": "q1", "question": question, "is_impossible": True, "answers": []}
        body = {"data": [{"title": "T", "paragraphs": [{"context": "Some text about T.", "qas": [qa]}]}]}
        path.write_text(json.dumps(body), encoding="utf-8")
        os.utime(path, (mtime, mtime))

    write("What is T?", 1_000_000)
    folder = squad.beir_view("squad2-en", data, derived)
    assert [t for _q, t, _m in iter_queries(folder)] == ["What is T?"]
    write("Where is T?", 1_000_000)  # not newer than the view: kept as written
    assert [t for _q, t, _m in iter_queries(squad.beir_view("squad2-en", data, derived))] == ["What is T?"]
    write("Where is T?", 4_000_000_000)  # edited after the view was written
    assert [t for _q, t, _m in iter_queries(squad.beir_view("squad2-en", data, derived))] == ["Where is T?"]


def test_a_gold_set_of_held_out_folds_asks_near_misses_as_questions_to_refuse(tmp_path):
    settings = Settings.from_env().replace(home=tmp_path / "home", bench_data=str(tmp_path / "no-bench-data"))
    data = load_beir(set_folder(SETS["policies-zh"], settings), "train", load_corpus=False)
    held = only_folds(data, frozenset({3, 4}))
    assert 0 < len(held.queries) < len(data.queries)
    assert {m["fold"] for m in held.query_meta.values()} == {3, 4}
    gold = beir_to_goldset(held)
    refuse = [g for g in gold.items if g.should_refuse]
    assert len(refuse) == sum(m["impossible"] for m in held.query_meta.values()) > 0
    assert all(not g.relevant and not g.reference_answer for g in refuse)
    assert all(g.reference_answer and g.relevant for g in gold.items if not g.should_refuse)
    assert only_folds(data, frozenset()) is data


def test_an_article_scope_searches_a_question_s_own_organisation_only(tmp_path):
    """``bench refusal --scope article``: an everyday question is asked over its organisation's
    documents (the knowledge base one source would make), and removed, over them less its own
    section; a set whose passages are not named by article is refused before anything is read."""
    from rag.bench.refusal import plain_filters, run_set

    settings = Settings.from_env().replace(home=tmp_path / "home", bench_data=str(tmp_path / "no-bench-data"))
    folder = set_folder(SETS["policies-en"], settings)
    docs = {beir_doc_name(d): doc for d, doc in iter_corpus(folder)}
    positives = {"policies-en-3-2.md"}
    as_is, removed = plain_filters(set(docs), by_article=True)("q", positives)
    organisation = {docs[d].title.split(" – ")[0] for d in as_is["doc_ids"]}
    assert len(organisation) == 1 and docs["policies-en-3-2.md"].title.startswith(organisation.pop())
    assert positives < as_is["doc_ids"] and 1 < len(as_is["doc_ids"]) < len(docs) / 10
    assert removed["doc_ids"] == as_is["doc_ids"] - positives
    assert {squad.article_of(d) for d in as_is["doc_ids"]} == {"policies-en-3"}
    assert plain_filters(set(docs))("q", positives) == (None, {"doc_ids": set(docs) - positives})
    with pytest.raises(DatasetError, match="--scope article needs a SQuAD-shaped set"):
        run_set(SETS["scifact"], settings, scope="article")
