"""The why-not probe on real knowledge bases (bundled embedder, real Chroma, default settings):
the stage that excluded a chunk, the smallest change, and a replay of that change letting it in."""

from __future__ import annotations

import pytest
from app_support import ANSWERABLE
from probe_support import (
    BICYCLE_NAME,
    CANTEEN_QUESTION,
    NOTES_NAME,
    NOTES_V2,
    RECALL_QUESTION,
    SICK_QUESTION,
    TERM_QUESTION,
    ZH_QUESTION,
    build_probe_kb,
)

from rag.ask import ask
from rag.config import Settings
from rag.ingest.pipeline import UploadItem
from rag.retrieval.matches import term_matches
from rag.retrieval.pipeline import context
from rag.retrieval.probe import let_in, probe, replay_change
from rag.retrieval.suggest import ChangeKind
from rag.retrieval.targets import ProbeTargetNotFound, chunk_target, document_target, search_targets
from rag.retrieval.trace import Decider, Dropped, FallbackAction
from rag.views.ledger import ledger_frame
from rag.views.probe import stage_rows, verdict


@pytest.fixture(scope="module")
def kb(tmp_path_factory, embedder):
    return build_probe_kb(Settings.from_env(env={}, home=tmp_path_factory.mktemp("probe") / "home"), embedder)


def _doc_probe(kb, question: str, doc: str, **filters):
    _, trace = ask(kb, question, filters=filters or None)
    target = document_target(kb, doc, question, context(kb, kb.settings).vectors)
    return trace, probe(kb, trace, target)


def test_outside_recall_k_names_both_ranks_and_raising_recall_k_lets_it_in(kb):
    trace, found = _doc_probe(kb, RECALL_QUESTION, BICYCLE_NAME)
    assert found.chunk_id not in trace.by_id()  # invisible in the ledger
    assert found.excluded_by is Dropped.RECALL_CUT and found.recall_k == kb.settings.recall_k
    assert found.dense.rank > kb.settings.recall_k and found.bm25.rank > kb.settings.recall_k
    assert found.dense.listed == len(kb.bm25().ids)  # ranked against every chunk, not the top k
    assert found.terms and set(found.terms) <= {"employe", "renew", "park", "permit"}
    assert found.fused_score == pytest.approx(1 / (60 + found.dense.rank) + 1 / (60 + found.bm25.rank))
    change = found.change
    assert change.kind is ChangeKind.RECALL_K and change.settings["recall_k"] == min(found.dense.rank, found.bm25.rank)
    assert f"recall_k {kb.settings.recall_k} → {change.settings['recall_k']}" in change.text
    assert let_in(replay_change(kb, trace, change), found.chunk_id)


def test_cut_by_the_evidence_threshold_and_lowering_it_lets_it_in(kb):
    _, trace = ask(kb, SICK_QUESTION)
    cut = [c for c in trace.candidates if c.dropped_by is Dropped.THRESHOLD]
    assert cut, "the default evidence floor drops a weak kept candidate for this question"
    found = probe(kb, trace, chunk_target(kb, cut[0].chunk_id))
    assert found.excluded_by is Dropped.THRESHOLD and "evidence_min_score" in found.reason
    assert found.change.kind is ChangeKind.THRESHOLD
    floor = found.change.settings["evidence_min_score"]
    assert floor <= cut[0].rerank_score < kb.settings.evidence_min_score
    assert let_in(replay_change(kb, trace, found.change), found.chunk_id)


def test_a_refusal_by_the_absent_term_rule_is_named_and_offers_no_rewrite_or_override(kb):
    trace, found = _doc_probe(kb, TERM_QUESTION, "employee_handbook.md")
    assert trace.fallback.action is FallbackAction.REJECT and trace.fallback.decided_by is Decider.ABSENT_TERMS
    assert found.excluded_by is Dropped.THRESHOLD and found.rerank_rank == 1
    assert "astronaut" in found.missing_terms
    said = verdict(found)
    assert said.startswith("Excluded by the absent-term rule ('astronauts' in no searched chunk)"), said
    assert "threshold" not in said
    # no broken question ("How many days of paid annual leave do get?"), no threshold that answers
    # the astronaut question from the employees' leave: what the documents lack, to add
    assert [c.kind for c in found.changes] == [ChangeKind.COVERAGE]
    assert "'astronauts'" in found.change.text and "Upload page" in found.change.text
    assert not found.change.replayable and not found.change.settings
    assert stage_rows(found)[-1]["note"] == "absent-term rule"


def test_a_document_outside_the_filters_is_reported_and_dropping_the_filter_lets_it_in(kb):
    trace, found = _doc_probe(kb, ANSWERABLE, "employee_handbook.md", tags=["parking"])
    assert found.excluded_by is Dropped.FILTER and found.filtered == ["tags"]
    assert found.dense.rank == 1 and found.bm25.rank == 1  # where it would stand without the filter
    assert found.change.kind is ChangeKind.FILTER and found.change.filters == {}
    assert let_in(replay_change(kb, trace, found.change), found.chunk_id)


def test_chinese_question_probes_with_jieba_terms(kb):
    trace, found = _doc_probe(kb, ZH_QUESTION, "expense_policy_zh.md")
    assert found.excluded_by is None and found.candidate.kept
    assert {"出差", "住宿", "每晚"} <= set(found.terms) and found.dense is None and found.dense_note
    cut = next(c for c in trace.candidates if not c.kept and c.fused_rank)
    other = probe(kb, trace, chunk_target(kb, cut.chunk_id))
    assert other.excluded_by is cut.dropped_by and other.reason and other.changes
    parked = probe(kb, trace, document_target(kb, BICYCLE_NAME, ZH_QUESTION, context(kb, kb.settings).vectors))
    assert parked.excluded_by is Dropped.RECALL_CUT and parked.bm25.rank is None
    assert parked.change.kind is ChangeKind.NONE  # no setting lets in a chunk sharing no term


def test_bad_input_says_what_to_do(kb):
    with pytest.raises(ProbeTargetNotFound, match="Did you mean 'bicycles.md'.*python -m rag docs"):
        document_target(kb, "bicycle.md", RECALL_QUESTION, context(kb, kb.settings).vectors)
    with pytest.raises(ProbeTargetNotFound, match="not a chunk id.*doc:revision:page:index"):
        chunk_target(kb, "bicycles")
    with pytest.raises(ProbeTargetNotFound, match="no document 'nosuchdoc' was ever ingested"):
        chunk_target(kb, "nosuchdoc:1:1:0")
    assert {t.doc_name for t in search_targets(kb, "basement")} == {BICYCLE_NAME}


def test_an_older_revision_and_a_deleted_document_are_not_indexed(tmp_path, embedder):
    kb = build_probe_kb(Settings.from_env(env={}, home=tmp_path / "home"), embedder, "revs")
    _, before = ask(kb, CANTEEN_QUESTION)
    old = before.evidence()[0]
    assert old.doc_name == NOTES_NAME
    kb.ingest([UploadItem(NOTES_NAME, NOTES_V2.encode(), ("facilities",))])  # re-uploaded: revision 2
    found = probe(kb, before, chunk_target(kb, old.chunk_id))
    assert found.excluded_by is Dropped.NOT_INDEXED and not found.active
    assert found.state.startswith("not active") and "revision 2" in found.state
    assert found.change.kind is ChangeKind.REVISION and not found.change.replayable
    assert found.text == old.text  # still shown, from the trace
    _, after = ask(kb, CANTEEN_QUESTION)
    current = probe(kb, after, document_target(kb, NOTES_NAME, CANTEEN_QUESTION, context(kb, kb.settings).vectors))
    assert current.active and current.chunk_id.split(":")[1] == "2" and current.excluded_by is None
    kb.delete(BICYCLE_NAME)
    gone = probe(kb, after, document_target(kb, BICYCLE_NAME, CANTEEN_QUESTION, context(kb, kb.settings).vectors))
    assert gone.excluded_by is Dropped.NOT_INDEXED and "deleted" in gone.state
    assert gone.change.kind is ChangeKind.REINDEX and BICYCLE_NAME in gone.change.text


def test_ledger_terms_are_bm25s_contributions_of_each_candidate(kb):
    _, trace = ask(kb, RECALL_QUESTION)
    matches = term_matches(kb, trace)
    scored = [c for c in trace.candidates if c.sparse_score]
    assert scored and all(c.chunk_id in matches for c in trace.candidates)
    for c in scored:
        assert matches[c.chunk_id].total == pytest.approx(c.sparse_score, rel=1e-4)
    lot = next(c for c in scored if c.doc_name.startswith("parking_lot"))
    assert {"park", "permit", "renew", "employe"} <= set(matches[lot.chunk_id].terms)
    shown = ledger_frame(trace, matches).set_index("chunk_id").loc[lot.chunk_id, "bm25_terms"]
    assert "parking" in shown and "permit" in shown and "renew" in shown
