"""The pages' pure helpers on hand-built traces and answers: ledger, rank flow, sources, stream, charts."""

from __future__ import annotations

from rag import ask
from rag.answer import Answer, AnswerEvent, AnswerSentence, Citation, EventKind, Outcome
from rag.records import ChunkRecord
from rag.retrieval.trace import Candidate, Dropped, FallbackAction, FallbackDecision, ModelLabel, QueryRun, Trace
from rag.views.charts import decision_figure, rank_flow_figure, score_figure, timings_figure
from rag.views.chat import AnswerStream, answer_markdown, footnotes
from rag.views.conversations import NEW_CONVERSATION, asked_in, conversation_labels
from rag.views.decision import ChartLine, OperatingPoint
from rag.views.ledger import (
    filter_ledger,
    ledger_frame,
    query_frame,
    rank_flow,
    replay_frame,
    score_frame,
    timings_frame,
)
from rag.views.sources import source_views

DOC = "Intro line.\nFull-time staff get 25 days <img src=x onerror=alert(1)> of leave.\nTail text here."


def cand(cid: str, start: int, end: int, **ranks) -> Candidate:
    return Candidate(cid, "d1", "hand<book>.md", 1, ("Leave", "Annual"), DOC[start:end], start, end, **ranks)


def make_trace() -> Trace:
    kept = cand(
        "d1:1:1:1",
        12,
        72,
        dense_rank=2,
        dense_score=0.8,
        sparse_rank=1,
        sparse_score=7.5,
        fused_rank=1,
        fused_score=0.033,
        rerank_rank=1,
        rerank_score=0.9,
        final_rank=1,
        found_by=[0],
    )
    cut = cand(
        "d1:1:1:0",
        0,
        12,
        dense_rank=1,
        dense_score=0.85,
        fused_rank=2,
        fused_score=0.016,
        rerank_rank=2,
        rerank_score=0.1,
        dropped_by=Dropped.RERANK_CUT,
        found_by=[0, 1],
    )
    fusion = cand(
        "d1:1:1:2",
        72,
        len(DOC),
        sparse_rank=2,
        sparse_score=1.0,
        fused_rank=3,
        fused_score=0.01,
        dropped_by=Dropped.FUSION_CUT,
        found_by=[1],
    )
    return Trace(
        question="How many days?", kb="t", config_fingerprint="abc", index_revision=1,
        embedder=ModelLabel("st", "mini"), reranker=ModelLabel("default", "logreg", stand_in=True, note="no flag model"),
        settings={"rerank_threshold": 0.35, "rrf_k": 60},
        queries=[QueryRun("How many days?", "original", dense_ids=["d1:1:1:0", "d1:1:1:1"], sparse_ids=["d1:1:1:1"]),
                 QueryRun("How many days leave", "rewrite", "acronym", sparse_ids=["d1:1:1:2", "d1:1:1:0"])],
        candidates=[cut, fusion, kept],
        fallback=FallbackDecision(FallbackAction.ANSWER, "best 0.9 >= 0.35", 0.9, 0.35),
        timings_ms={"total": 20.0, "dense": 5.0, "embed": 10.0, "rerank": 2.0},
    )  # fmt: skip


def make_answer(trace: Trace) -> Answer:
    start = DOC.index("Full-time")
    end = DOC.index("leave.") + len("leave.")
    cite = Citation(1, 0, "d1:1:1:1", "d1", "hand<book>.md", 1, ("Leave",), start, end, 12, DOC[start:end], 0.8)
    raw = "Full-time staff get 25 days of leave. [1]"
    return Answer(
        question=trace.question, text=raw, generator=ModelLabel("extractive", "x"),
        sentences=[AnswerSentence(raw[:-4], raw, citations=[1], verified=True)], citations=[cite],
        evidence_ids=["d1:1:1:1"],
    )  # fmt: skip


def test_ledger_has_every_stage_and_puts_evidence_first():
    df = ledger_frame(make_trace())
    assert list(df["chunk_id"]) == ["d1:1:1:1", "d1:1:1:0", "d1:1:1:2"]
    first = df.iloc[0]
    assert (first["dense_rank"], first["bm25_rank"], first["rrf_rank"], first["rerank_rank"]) == (2, 1, 1, 1)
    assert list(df["dropped_by"]) == ["", "rerank_cut", "fusion_cut"]
    assert list(df["status"]) == ["evidence", "dropped", "dropped"]
    assert df.iloc[1]["queries"] == "q1, q2"


def test_filter_ledger_by_status_doc_and_text():
    df = ledger_frame(make_trace())
    assert len(filter_ledger(df, ["rerank_cut"])) == 1
    assert len(filter_ledger(df, ["evidence"])) == 1
    assert len(filter_ledger(df, docs=["other.md"])) == 0
    assert list(filter_ledger(df, text="TAIL")["chunk_id"]) == ["d1:1:1:2"]


def test_rank_flow_goes_from_each_retriever_to_rrf_and_on():
    flow = rank_flow(make_trace())
    kept = flow[flow["candidate"].str.endswith("#1")]
    assert dict(zip(kept["stage"], kept["rank"], strict=True)) == {
        "dense": 2,
        "BM25": 1,
        "RRF": 1,
        "rerank": 1,
        "final": 1,
    }
    fig = rank_flow_figure(flow)
    assert len(fig.data) == 3
    path = next(t for t in fig.data if t.legendgroup == "evidence")
    assert list(path.x) == [0, 2, None, 1, 2, None, 2, 3, 4]  # dense->RRF, BM25->RRF, RRF->rerank->final
    assert list(path.y) == [2, 1, None, 1, 1, None, 1, 1, 1]
    assert "<img" not in path.hovertext and "&lt;book&gt;" in path.hovertext


def test_score_and_timing_figures():
    trace = make_trace()
    fig = score_figure(score_frame(trace), ChartLine(0.35, "Rerank threshold 0.35"), 0.9)
    assert {s.x0 for s in fig.layout.shapes} == {0.35, 0.9}
    assert {s.x0 for s in score_figure(score_frame(trace), None, 0.9).layout.shapes} == {0.9}  # none decided
    point = decision_figure(OperatingPoint(0.42, 0.5, "P(answerable) 0.420 · Threshold 0.500"))
    assert [s.x0 for s in point.layout.shapes] == [0.5] and list(point.data[0].x) == [0.42]
    t = timings_frame(trace)
    assert list(t["stage"]) == ["embed", "dense", "rerank", "total"]
    assert "total 20 ms" in timings_figure(t).layout.title.text


def test_query_frame_says_what_only_each_query_found():
    q = query_frame(make_trace())
    assert list(q["dense_hits"]) == [2, 0] and list(q["bm25_hits"]) == [1, 2]
    assert q.iloc[0]["found_only_by_this"].endswith("#1")
    assert q.iloc[1]["found_only_by_this"].endswith("#2")


def test_source_views_highlight_cited_span_in_chunk_and_neighbour():
    trace = make_trace()
    answer = make_answer(trace)
    neighbour = ChunkRecord("d1:1:1:0b", "d1", 1, 1, 0, 0, 40, ("Leave",), DOC[0:40], "hand<book>.md")
    views = source_views(trace, answer, lambda cid: [neighbour])
    assert len(views) == 1 and views[0].cited_by == [1]
    assert views[0].main.marks == 1 and "<mark" in views[0].main.html
    assert "&lt;img src=x onerror=alert(1)&gt;" in views[0].main.html and "<img" not in views[0].main.html
    assert views[0].neighbours[0].marks == 1  # the span overlaps the neighbour's first 40 characters
    assert "\\<book\\>" in views[0].main.where


def test_footnotes_use_the_document_text_or_fall_back_to_the_quote():
    answer = make_answer(make_trace())
    note = footnotes(answer, lambda doc, rev: DOC)[0]
    assert note.n == 1 and "<mark" in note.html and "&lt;img" in note.html and "<img" not in note.html
    gone = footnotes(answer, lambda doc, rev: "")[0]
    assert "Full-time staff" in gone.html and "<mark" in gone.html


def test_answer_stream_shows_only_verified_sentences_and_forgets_rejected_attempts():
    s = AnswerStream()
    s.feed(AnswerEvent(EventKind.EVIDENCE, evidence=make_trace().evidence()))
    assert s.draft_caption == ""
    s.feed(AnswerEvent(EventKind.DRAFT, text="Wrong claim [9]."))
    assert s.sentences == [] and s.draft
    assert s.draft_caption == "Draft, not yet verified: Wrong claim \\[9\\]\\."
    s.feed(AnswerEvent(EventKind.SENTENCE, sentence=AnswerSentence("a", "A fact. [1]")))
    s.feed(AnswerEvent(EventKind.REJECTED, attempt=1))
    assert s.sentences == [] and s.draft == "" and s.rejected == 1
    assert s.draft_caption == " · 1 draft(s) rejected"
    s.feed(AnswerEvent(EventKind.SENTENCE, sentence=AnswerSentence("b", "Right <b>x</b>. [1]")))
    assert s.verified_markdown == "Right \\<b\\>x\\</b\\>\\. :blue-badge[1]"
    s.feed(AnswerEvent(EventKind.FINAL, answer=make_answer(make_trace())))
    assert s.final is not None and len(s.evidence) == 1


def test_answer_markdown_badges_grouped_citations():
    assert answer_markdown("A [1, 2] B [3]") == "A :blue-badge[1]:blue-badge[2] B :blue-badge[3]"


def test_outcome_round_trips_and_reads_turns_saved_with_a_reason_prefix():
    a = make_answer(make_trace())
    assert a.outcome is Outcome.ANSWER and not a.refused
    a.outcome, a.refusal_reason = Outcome.CLARIFY, "too vague"
    back = Answer.from_json(a.to_json())
    assert back.outcome is Outcome.CLARIFY and back.refused and back.refusal_reason == "too vague"
    legacy = {k: v for k, v in a.to_dict().items() if k != "outcome"}
    cases = [
        (True, "clarify: too vague", Outcome.CLARIFY, "too vague"),
        (True, "fallback: best 0.1 < 0.35", Outcome.REFUSAL, "best 0.1 < 0.35"),
        (True, "No draft passed citation checks", Outcome.REFUSAL, "No draft passed citation checks"),
        (False, "", Outcome.ANSWER, ""),
    ]
    for refused, reason, outcome, shown in cases:
        old = Answer.from_dict({**legacy, "refused": refused, "refusal_reason": reason})
        assert (old.outcome, old.refusal_reason) == (outcome, shown)


def test_replay_frame_lists_moves():
    old = make_trace()
    new = make_trace()
    for c in new.candidates:
        c.final_rank, c.dropped_by = (1, None) if c.chunk_id == "d1:1:1:0" else (None, Dropped.THRESHOLD)
    df = replay_frame(old, new, ["d1:1:1:0"], ["d1:1:1:1"])
    assert list(df["change"]) == ["moved in", "moved out (threshold)"]
    assert df["before"].isna().tolist() == [True, False] and df["before"].iloc[1] == 1
    assert df["after"].iloc[0] == 1 and df["after"].isna().iloc[1]


def test_conversation_labels_use_first_question_and_skip_inspector():
    class T:
        def __init__(self, conv, seq, q):
            self.conversation, self.seq, self.question, self.created_at = conv, seq, q, "2025-01-02T03:04:05"

    turns = [T("a", 2, "second"), T("a", 1, "first"), T("inspector", 1, "x")]
    assert conversation_labels(["inspector", "a"], turns) == {"a": "first · 2025-01-02 03:04"}


def test_diff_summary_names_settings_fallback_and_moves():
    from rag.retrieval.replay import diff_traces
    from rag.views.ledger import diff_summary

    old, new = make_trace(), make_trace()
    new.settings = {**new.settings, "top_n": 1, "rerank_threshold": 0.95}
    new.fallback = FallbackDecision(FallbackAction.REJECT, "best 0.9 < 0.95", 0.9, 0.95)
    for c in new.candidates:
        c.final_rank, c.dropped_by = None, Dropped.THRESHOLD
    lines = diff_summary(diff_traces(old, new))
    assert "rerank\\_threshold\\: 0\\.35 → 0\\.95" in lines[0] and "top\\_n\\: None → 1" in lines[0]
    assert lines[1] == "**Fallback:** answer → reject"
    assert lines[2].startswith("**Evidence:** 0 moved in, 1 moved out")


def test_answer_without_a_calibrated_score_says_so(make_kb):
    """With reranker ``none`` the fused order has no calibrated score: the chat says the evidence
    was not scored. A Chinese question on the English-only embedder is scored (e5 + BM25), so
    it gets no such note."""
    from rag.retrieval.pipeline import retrieve
    from rag.views.chat import unscored_note

    kb = make_kb("zh")
    kb.ingest_file(
        "leave.md", "# 休假\n\n全职员工每年享有二十五天带薪年假。\n\nEmployees get 25 days of paid leave.".encode()
    )
    zh = retrieve(kb, "全职员工每年有多少天带薪年假？", persist=False)
    assert zh.fallback.action is FallbackAction.ANSWER and zh.reranker.backend == "e5"
    assert "dense skipped" in zh.reranker.note and unscored_note(zh) == ""
    unscored = retrieve(kb, "How many days of paid leave do employees get?", kb.settings.replace(reranker="none"))
    note = unscored_note(unscored)
    assert unscored.fallback.action is FallbackAction.ANSWER and "not scored" in note
    en = retrieve(kb, "How many days of paid leave do employees get?", persist=False)
    assert en.reranker.backend == "default" and unscored_note(en) == ""
    refused = make_trace()
    refused.fallback = FallbackDecision(FallbackAction.REJECT, "weak", 0.1, 0.59)
    assert unscored_note(refused) == "" and unscored_note(None) == ""


def test_override_fields_come_from_settings_and_take_a_traces_values():
    from rag.config import Settings
    from rag.views.forms import OVERRIDABLE, override_fields

    defaults = {f.name: f for f in override_fields()}
    assert tuple(defaults) == OVERRIDABLE
    base = Settings()
    assert all(f.value == getattr(base, f.name) for f in defaults.values())
    assert all(f.help for f in defaults.values()) and defaults["reranker"].is_choice
    assert "rerank_threshold" not in defaults  # it decides nothing while every script has a fitted model
    traced = {f.name: f for f in override_fields({"top_n": 8, "answerable_threshold": 0.4, "reranker": "gone"})}
    assert traced["top_n"].value == 8 and traced["answerable_threshold"].value == 0.4
    assert traced["reranker"].value == base.reranker  # an unknown backend falls back to the default
    assert {f.name: f.value for f in override_fields(base.replace(recall_k=33))}["recall_k"] == 33


def test_documents_frame_has_one_row_per_document_with_provenance():
    from rag.records import DocumentRecord
    from rag.views.documents import DOCUMENT_COLUMNS, documents_frame

    doc = DocumentRecord(
        "d1", "kb", "a.md", "ab" * 32, 2, "markdown", "1", 10, 1, 3, "2026-01-01", "bundled:x", ("hr",), "2025-01-01"
    )
    df = documents_frame([doc])
    assert list(df["name"]) == ["a.md"] and df.iloc[0]["hash"] == "ab" * 6 and df.iloc[0]["tags"] == "hr"
    assert set(DOCUMENT_COLUMNS) <= set(df.columns)


def test_a_refusal_shows_the_closest_passages_ranked_and_escaped():
    """A turn that kept no evidence lists its best reranked candidates (not cited, rank order,
    the scoring model named); a turn with evidence lists none (its cards show it)."""
    from rag.views.chat import closest_markdown, closest_passages
    from rag.views.highlight import md_escape

    answered = make_trace()
    assert closest_passages(answered) == [] and closest_markdown(answered) == ""
    refused = make_trace()
    for c in refused.candidates:
        c.final_rank = None
    refused.fallback = FallbackDecision(FallbackAction.REJECT, "weak", 0.3, 0.5)
    assert [c.chunk_id for c in closest_passages(refused)] == ["d1:1:1:1", "d1:1:1:0"]  # the unreranked one left out
    assert [c.chunk_id for c in closest_passages(refused, k=1)] == ["d1:1:1:1"]
    md = closest_markdown(refused)
    assert md.index("rank 1") < md.index("rank 2") and "rerank 0.90" in md and "[1]" not in md
    assert "\\<img" in md and "<img" not in md.replace("\\<img", "")  # source text is escaped
    assert md_escape("default:logreg (stand-in: no flag model)") in md  # the model behind the scores
    assert closest_passages(None) == []


def test_a_real_refusal_keeps_its_closest_passages(make_kb):
    """On a real KB the absent-term refusal (default threshold) keeps no evidence, and the
    closest passage it shows is the one on the topic."""
    from rag.retrieval.pipeline import retrieve
    from rag.views.chat import closest_passages

    kb = make_kb("closest")
    kb.ingest_file(
        "handbook.md",
        b"# Leave\n\nFull-time employees receive 25 working days of paid annual leave per calendar year.\n\n"
        b"# Travel\n\nEconomy class is booked for flights under six hours.",
    )
    trace = retrieve(kb, "How many days of paid sabbatical do employees get?", persist=False)
    assert trace.fallback.action is not FallbackAction.ANSWER and trace.evidence() == []
    closest = closest_passages(trace)
    assert closest and "annual leave" in closest[0].text and closest[0].rerank_rank == 1


def test_display_frame_leaves_no_missing_value_in_a_cell():
    import pandas as pd

    from rag.views.tables import display_frame

    df = pd.DataFrame({"rank": [1.0, None], "score": [0.51234, None], "ok": [True, None], "name": ["a", "b"]})
    shown = display_frame(df)
    assert shown.to_dict("list") == {"rank": ["1", ""], "score": ["0.512", ""], "ok": ["yes", ""], "name": ["a", "b"]}
    assert not shown.isna().any().any()
    assert display_frame(df[["name"]]).equals(df[["name"]])  # a column without gaps keeps its type


def test_ledger_names_a_term_only_the_document_has_as_the_question_does():
    from rag.retrieval.matches import TermMatch
    from rag.views.ledger import terms_text

    match = TermMatch(terms={"claim": 1.5}, via_document={"abov": 0.5})
    assert terms_text("Claims need a receipt.", match, "Who approves claims above USD 10,000?") == (
        "claims 1.50 · +doc above 0.50"
    )


def test_ledger_names_the_dense_model_of_each_candidate():
    from dataclasses import replace

    from rag.records import ModelLabel
    from rag.views.ledger import dense_label, ledger_columns

    trace = make_trace()
    assert dense_label(trace) == str(trace.embedder.model)  # a trace stored before dense models were recorded
    e5 = ModelLabel(backend="e5torch", model="multilingual-e5-small (bf16)")
    trace.dense_models = [e5]
    trace.candidates = [replace(c, dense_model=str(e5.model)) for c in trace.candidates]
    df = ledger_frame(trace)
    assert set(df["dense_model"]) == {"multilingual-e5-small (bf16)"}
    assert ledger_columns(trace)["dense_score"][2] == "Cosine similarity from multilingual-e5-small (bf16)"


def test_answer_stream_takes_the_ask_stream_events_the_chat_page_gets():
    s = AnswerStream()
    assert s.status_label == "Retrieving evidence…"
    trace = make_trace()
    trace.timings_ms["total"] = 41.6
    assert s.take(ask.TraceReady(trace)) is None and s.status_label == "Retrieved in 42 ms"
    evidence = AnswerEvent(EventKind.EVIDENCE, evidence=trace.evidence())
    assert s.take(ask.Answering(evidence)) is EventKind.EVIDENCE and len(s.evidence) == 1
    sentence = AnswerEvent(EventKind.SENTENCE, sentence=AnswerSentence("a", "A fact. [1]"))
    assert s.take(ask.Answering(sentence)) is EventKind.SENTENCE and s.sentences == ["A fact. [1]"]
    assert s.take(object()) is None and s.sentences == ["A fact. [1]"]  # the stored turn: nothing to show


def test_a_question_goes_to_the_conversation_shown_or_to_a_new_id():
    assert asked_in("c-kept") == "c-kept"
    first, second = asked_in(NEW_CONVERSATION), asked_in(NEW_CONVERSATION)
    assert first.startswith("c-") and first != second
