"""The Inspector's "Why not" tab through AppTest, on a 'demo' knowledge base built here from the
probe corpus (tests/probe_support.py), with the default settings: each case is a chunk the
question did not use, the stage that excluded it, the suggested change, and its replay."""

from __future__ import annotations

import pytest
from app_support import ROOT, app_home, frame, texts
from probe_support import (
    CANTEEN_QUESTION,
    RECALL_QUESTION,
    SICK_QUESTION,
    TERM_QUESTION,
    ZH_QUESTION,
    build_probe_kb,
    prepare_cases,
)
from streamlit.testing.v1 import AppTest

from rag.config import Settings
from rag.views.highlight import md_escape

pytestmark = pytest.mark.slow
TIMEOUT = 240


@pytest.fixture(scope="module")
def turns(tmp_path_factory, embedder):
    """RAG_HOME with the probe corpus as 'demo' and one turn per case (tests/probe_support.py)."""
    with app_home(tmp_path_factory.mktemp("app-probe") / "home"):
        kb = build_probe_kb(Settings.from_env(), embedder, "demo")
        yield prepare_cases(kb, kb.settings.home)


def run(target) -> AppTest:
    at = target.run(timeout=TIMEOUT)
    assert not at.exception, [e.value for e in at.exception]
    return at


def open_why_not(case: dict, tab: str = "Why not") -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    run(at)
    at.switch_page("pages/inspector.py")
    at.query_params.update({"kb": "demo", "turn": case["turn"], "tab": tab})
    return run(at)


def test_outside_recall_k_and_the_suggested_replay_lets_it_in(turns):
    at = open_why_not(turns[RECALL_QUESTION])
    at = run(at.text_input(key="probe_search").set_value("basement"))
    assert at.selectbox(key="probe_target").value.startswith("chunk:")
    at = run(at.button(key="probe_run").click())
    assert "Excluded by recall\\_cut" in texts(at.warning)
    stages = frame(at, "passed").set_index("stage")
    assert stages.loc["dense", "passed"].startswith("no (recall_k 20)")
    assert stages.loc["rerank", "note"] == "had it been a candidate"
    assert "recall\\_k 20 → " in texts(at.markdown)
    at = run(at.button(key="probe_replay_0").click())
    assert "it is evidence" in texts(at.success)
    assert "moved in" in texts(at.markdown)


def test_cut_by_the_evidence_threshold(turns):
    case = turns[SICK_QUESTION]
    assert case["threshold_chunk"], "the default evidence floor drops a weak kept candidate for this question"
    at = open_why_not(case)
    at.text_input(key="probe_chunk").set_value(case["threshold_chunk"])
    at = run(at.button(key="probe_run").click())
    assert "Excluded by threshold" in texts(at.warning) and "evidence\\_min\\_score" in texts(at.warning)
    assert "evidence\\_min\\_score 0\\.1 → " in texts(at.markdown)
    at = run(at.button(key="probe_replay_0").click())
    assert "it is evidence" in texts(at.success)


def test_a_refusal_by_the_absent_term_rule_from_a_gold_label(turns):
    at = open_why_not(turns[TERM_QUESTION])
    at = run(at.button(key="probe_gold_0").click())  # the gold set's label for this question
    assert "employee\\_handbook\\.md" in texts(at.markdown)
    warning = texts(at.warning)
    assert md_escape("Excluded by the absent-term rule ('astronauts' in no searched chunk)") in warning
    assert "Excluded by threshold" not in warning
    assert md_escape("upload a document that covers 'astronauts' (Upload page)") in texts(at.markdown)
    assert "ask without it" not in texts(at.markdown)
    assert '<span class="rs-term"' in "\n".join(e.proto.body for e in at.get("html"))
    assert "probe_replay_0" not in [b.key for b in at.button]  # nothing that answers from those passages


def test_scores_tab_names_the_absent_term_rule_and_draws_no_rerank_threshold(turns):
    at = open_why_not(turns[TERM_QUESTION], "Scores & fallback")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Decision"] == "reject" and metrics["Decided by"] == "absent-term rule"
    assert metrics["Absent terms"] == "astronauts" and "Margin" not in metrics
    why = "Decided by the absent-term rule: 'astronauts' in no searched chunk."
    assert md_escape(why) in texts(at.markdown)
    assert md_escape(f"Why: {why}") in texts(at.warning)  # the header's Why: the same words
    chart = next(c for c in at.get("plotly_chart") if "Rerank score" in c.proto.spec)
    assert "threshold" not in chart.proto.spec.lower()  # the rerank threshold did not decide: not drawn


def test_an_older_revision_is_reported_not_active(turns):
    at = open_why_not(turns[CANTEEN_QUESTION])
    at.text_input(key="probe_chunk").set_value(turns[CANTEEN_QUESTION]["old_chunk"])
    at = run(at.button(key="probe_run").click())
    warning = texts(at.warning)
    assert "Excluded by not\\_indexed" in warning and "not active" in texts(at.markdown)
    assert "replaced by revision 2" in texts(at.markdown)
    assert "probe_replay_0" not in [b.key for b in at.button]  # nothing to replay: it is not indexed
    at.text_input(key="probe_chunk").set_value("no-such-chunk")
    at = run(at.button(key="probe_run").click())
    assert "not a chunk id" in texts(at.error)


def test_a_chinese_question_with_jieba_terms(turns):
    case = turns[ZH_QUESTION]
    at = open_why_not(case)
    at = run(at.selectbox(key="probe_target").set_value("doc:expense_policy_zh.md"))
    at = run(at.button(key="probe_run").click())
    assert "It is evidence \\[1\\]" in texts(at.success)
    bm25 = frame(at, "passed").set_index("stage").loc["BM25", "note"]
    assert "住宿" in bm25 and "出差" in bm25
    assert case["threshold_chunk"], "the default evidence floor drops a weak kept candidate for this question"
    at.text_input(key="probe_chunk").set_value(case["threshold_chunk"])
    at = run(at.button(key="probe_run").click())
    assert "Excluded by threshold" in texts(at.warning)


def test_ledger_and_sources_show_the_matched_terms(turns):
    ledger = open_why_not(turns[RECALL_QUESTION], "Candidates").dataframe(key="ledger").value
    assert ledger["bm25_terms"].str.contains("permit").any()
    sources = "\n".join(e.proto.body for e in open_why_not(turns[RECALL_QUESTION], "Sources").get("html"))
    assert '<span class="rs-term"' in sources and "BM25 term: permit" in sources
