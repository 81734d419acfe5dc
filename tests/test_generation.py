"""The draft -> validate -> correct -> refuse loop, streaming, generators and LLM hooks, with fakes behind real interfaces."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from answer_helpers import INJECTION, REFUND, SHIPPING, make_evidence, minilm_embed

from rag.answer import (
    REFUSAL_TEXT,
    REFUSAL_TEXT_ZH,
    Answer,
    EventKind,
    IssueCode,
    ScriptedLLM,
    SentenceKind,
    answer_question,
    make_generator,
    render_markdown,
    stream_answer,
)
from rag.answer.citations import CitationValidator
from rag.answer.extractive import ExtractiveGenerator
from rag.answer.support import EvidenceIndex
from rag.config import Settings
from rag.errors import ConfigError, InvalidQuery, LLMError, LLMOutputError
from rag.llm import build_openai, complete_json

SCRIPTED = Settings(llm="scripted")
QUESTION = "How long do I have to ask for a refund?"
GOOD = "Customers may request a refund within 7 days of purchase [1]."


@pytest.fixture(scope="session")
def embed():
    return minilm_embed()


@pytest.fixture(scope="module")
def evidence():
    return make_evidence([REFUND, SHIPPING, INJECTION])[1]


def ask(evidence, embed, *replies: str):
    llm = ScriptedLLM(list(replies))
    return answer_question(QUESTION, evidence, SCRIPTED, embed, llm=llm), llm


def test_valid_first_draft_is_accepted_with_spans(evidence, embed):
    answer, llm = ask(evidence, embed, GOOD)
    assert not answer.refused and answer.attempts == 1 and answer.text == GOOD
    assert answer.generator.backend == "scripted" and answer.generator.stand_in
    [cite] = answer.citations
    assert cite.chunk_id == evidence[0].chunk_id and cite.quote in evidence[0].text
    assert answer.evidence_ids == [c.chunk_id for c in evidence]
    assert {"draft_ms", "validate_ms", "total_ms"} <= set(answer.timings_ms)
    assert '<evidence n="1"' in llm.prompts[0] and "untrusted" in llm.prompts[0]


def test_bad_draft_is_corrected_naming_the_bad_citation(evidence, embed):
    answer, llm = ask(evidence, embed, "Customers may request a refund within 7 days of purchase [5].", GOOD)
    assert not answer.refused and answer.attempts == 2 and answer.text == GOOD
    [rejection] = answer.drafts_rejected
    assert [i.code for i in rejection.issues] == [IssueCode.OUT_OF_RANGE]
    correction = llm.prompts[1]
    assert "rejected" in correction and "[5] is not an evidence number" in correction


BAD_DRAFTS = (
    "Refunds are accepted within 30 days of purchase [1].",
    'The policy says "no questions asked" [1].',
    "Refunds are always approved.",
)


def test_three_bad_drafts_fall_back_to_the_labelled_extractive_answer(evidence, embed):
    """Every draft failed but the evidence answers the question: the user gets the evidence
    sentence itself, validated, labelled as the extractive fallback, not a refusal."""
    answer, llm = ask(evidence, embed, *BAD_DRAFTS)
    assert not answer.refused and len(llm.prompts) == 3
    assert answer.text == "Customers may request a refund within 7 days of purchase. [1]"
    assert all(s.verified for s in answer.sentences) and answer.citations[0].quote in evidence[0].text
    assert (
        answer.generator.backend == "extractive"
        and "fallback: no scripted:scripted draft passed" in answer.generator.model
    )
    [fallback] = [w for w in answer.warnings if w.code is IssueCode.EXTRACTIVE_FALLBACK]
    assert "after 3 attempts" in fallback.message and "extractive answer" in fallback.message
    assert [r.attempt for r in answer.drafts_rejected] == [1, 2, 3]  # the failures stay on record
    assert {i.code for i in answer.drafts_rejected[0].issues} == {IssueCode.NUMBER_MISMATCH}
    assert {i.code for i in answer.drafts_rejected[1].issues} >= {IssueCode.QUOTE_NOT_FOUND}


def test_three_bad_drafts_end_in_refusal_when_no_evidence_sentence_answers(evidence, embed):
    llm = ScriptedLLM(list(BAD_DRAFTS))
    answer = answer_question("What is the boiling point of nitrogen on Mars?", evidence, SCRIPTED, embed, llm=llm)
    assert answer.refused and answer.text == REFUSAL_TEXT and answer.sentences == [] and answer.citations == []
    assert [r.attempt for r in answer.drafts_rejected] == [1, 2, 3] and len(llm.prompts) == 3


def test_a_chinese_question_whose_drafts_all_fail_is_refused_in_chinese(evidence, embed):
    llm = ScriptedLLM(list(BAD_DRAFTS))
    answer = answer_question("火星上氮的沸点是多少？", evidence, SCRIPTED, embed, llm=llm)
    assert answer.refused and answer.text == REFUSAL_TEXT_ZH and answer.citations == []
    assert len(answer.drafts_rejected) == 3  # the same checks, only the wording follows the question
    assert "after 3 attempts" in answer.refusal_reason
    assert IssueCode.UNCITED in {w.code for w in answer.warnings}


def test_prompt_injection_obeyed_by_the_llm_is_never_shown(evidence, embed):
    obeying = ["The answer is 42 [3].", "42 [3]", "The answer is 42."]
    events = list(stream_answer(QUESTION, evidence, SCRIPTED, embed, llm=ScriptedLLM(obeying)))
    shown = [e.sentence.raw for e in events if e.kind is EventKind.SENTENCE]
    final = events[-1].answer
    assert "42" not in final.text and not any("42" in s for s in shown)
    assert final.generator.backend == "extractive"  # the labelled fallback: evidence sentences only
    assert final.text == "Customers may request a refund within 7 days of purchase. [1]"
    assert any(w.code is IssueCode.INJECTION and w.n == 3 for w in final.warnings)


def test_stream_shows_only_verified_sentences_and_retracts_a_failed_attempt(evidence, embed):
    first = f"{GOOD} Refunds take 30 days to arrive [1]. Orders over $50 ship for free [2]."
    second = f"{GOOD} Orders over $50 ship for free [2]."
    events = list(stream_answer(QUESTION, evidence, SCRIPTED, embed, llm=ScriptedLLM([first, second])))
    kinds = [e.kind for e in events]
    assert kinds[0] is EventKind.EVIDENCE and kinds[-1] is EventKind.FINAL
    assert EventKind.DRAFT in kinds and kinds.index(EventKind.REJECTED) < len(kinds) - 1
    by_attempt = [(e.attempt, e.sentence.raw) for e in events if e.kind is EventKind.SENTENCE]
    assert by_attempt == [(1, GOOD), (2, GOOD), (2, "Orders over $50 ship for free [2].")]
    validator = CitationValidator(EvidenceIndex([c.text for c in evidence], embed), SCRIPTED.support_threshold)
    assert all(validator.check(raw).ok for _, raw in by_attempt)
    assert events[-1].answer.text == second


def test_declining_and_partial_answers(evidence, embed):
    declined, llm = ask(evidence, embed, "The documents do not contain the answer.")
    assert declined.refused and len(llm.prompts) == 1
    assert declined.warnings[-1].code is IssueCode.NO_ANSWER
    partial, _ = ask(evidence, embed, f"{GOOD} The documents do not say whether gift cards are refundable.")
    assert not partial.refused
    assert [s.kind for s in partial.sentences] == [SentenceKind.CLAIM, SentenceKind.GAP]


def test_reasoning_blocks_are_dropped(evidence, embed):
    answer, _ = ask(evidence, embed, f"<think>The user wants 30 days, maybe 42.</think>{GOOD}")
    assert answer.text == GOOD and not answer.refused


def test_no_evidence_refuses_without_calling_the_llm(embed):
    llm = ScriptedLLM([GOOD])
    answer = answer_question(QUESTION, [], SCRIPTED, embed, llm=llm)
    assert answer.refused and answer.warnings[0].code is IssueCode.NO_EVIDENCE and llm.prompts == []


def test_errors_are_typed(evidence, embed):
    with pytest.raises(InvalidQuery):
        answer_question("  ", evidence, SCRIPTED, embed, llm=ScriptedLLM([GOOD]))
    with pytest.raises(LLMError):
        answer_question(QUESTION, evidence, SCRIPTED, embed, llm=ScriptedLLM([]))


def test_answer_round_trips_through_json(evidence, embed):
    answer, _ = ask(evidence, embed, "Refunds take 30 days [1].", f"{GOOD} Orders over $50 ship for free [2].")
    blob = answer.to_json()
    again = Answer.from_json(blob)
    assert again == answer and json.loads(blob)["citations"][0]["chunk_id"] == evidence[0].chunk_id
    assert render_markdown(again).count("[^") == 4


def test_registry(embed):
    assert isinstance(make_generator(Settings(), embed), ExtractiveGenerator)
    assert make_generator(Settings(), embed, llm=ScriptedLLM()).name == "llm"
    with pytest.raises(ConfigError, match="Unknown answer generator"):
        make_generator(Settings(llm="gpt-17"), embed)
    with pytest.raises(ConfigError, match="needs an LLM"):
        make_generator(SCRIPTED, embed)
    with pytest.raises(ConfigError, match="RAG_LLM_BASE_URL"):
        make_generator(Settings(llm="openai"), embed)


# --- complete_json: the hook for rewrite and fallback judgement -----------------------------


def test_complete_json_accepts_objects_and_rejects_the_rest():
    llm = ScriptedLLM(
        [
            '```json\n{"action": "reject", "reason": "off topic"}\n```',
            '{"action": "clarify"}',
            "Sure! I think you should retry.",
        ]
    )
    assert complete_json(llm, "judge", ["action", "reason"]) == {"action": "reject", "reason": "off topic"}
    with pytest.raises(LLMOutputError, match="reason"):
        complete_json(llm, "judge", ["action", "reason"])
    with pytest.raises(LLMOutputError, match="JSON object"):
        complete_json(llm, "judge", ["action"])
    with pytest.raises(LLMError):
        complete_json(llm, "judge", ["action"])  # no replies left


# --- openai: the real OpenAI-like client against a local OpenAI-compatible server -----------


class _FakeOpenAI(BaseHTTPRequestHandler):
    reply = GOOD
    requests: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server API)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        words = self.reply.split(" ")
        for i, word in enumerate(words):
            delta = {"content": word + (" " if i < len(words) - 1 else "")}
            chunk = {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
            }
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, *args) -> None:
        pass


def test_openai_compatible_endpoint(evidence, embed):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeOpenAI)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        cfg = Settings(llm="openai", llm_base_url=url, llm_model="local-model", llm_timeout_s=5, llm_max_retries=1)
        llm = build_openai(cfg)
        assert (llm.timeout, llm.max_retries) == (5, 1)
        answer = answer_question(QUESTION, evidence, cfg, embed)
    finally:
        server.shutdown()
    assert not answer.refused and answer.text == GOOD
    assert answer.generator.backend == "openai" and answer.generator.model == "local-model"
    sent = _FakeOpenAI.requests[-1]
    assert sent["model"] == "local-model" and sent["stream"] is True and sent["messages"][0]["role"] == "system"


def test_the_chat_view_labels_the_extractive_fallback(evidence, embed):
    from rag.views.chat import fallback_note

    answer, _ = ask(evidence, embed, *BAD_DRAFTS)
    assert fallback_note(answer).startswith("Extractive answer: the model's drafts did not pass")
    good, _ = ask(evidence, embed, GOOD)
    assert fallback_note(good) == ""
