"""Integration: the real SmolLM2-135M-Instruct through llama.cpp. Whatever it says, only validated sentences are shown."""

from __future__ import annotations

import pytest
from conftest import require

require("llama_cpp")
require("llama_index.llms.llama_cpp")

from answer_helpers import INJECTION, REFUND, SHIPPING, make_evidence, minilm_embed  # noqa: E402

from rag.answer import REFUSAL_TEXT, EventKind, SentenceKind, stream_answer  # noqa: E402
from rag.answer.citations import CitationValidator  # noqa: E402
from rag.answer.prompt import answer_messages  # noqa: E402
from rag.answer.support import EvidenceIndex  # noqa: E402
from rag.config import Settings  # noqa: E402
from rag.errors import LLMOutputError, ModelUnavailable  # noqa: E402
from rag.llm import SMOLLM2_FILE, build_llama_cpp, complete_json  # noqa: E402

pytestmark = pytest.mark.slow
LOCAL = Settings(llm="llama-cpp")


@pytest.fixture(scope="module")
def smollm2():
    try:
        return build_llama_cpp(LOCAL)
    except ModelUnavailable as err:
        pytest.fail(f"bundled model missing: {err} (scripts/setup.sh dev installs it)", pytrace=False)


def test_prompt_uses_the_models_chat_template(smollm2):
    _, evidence = make_evidence([REFUND])
    prompt = smollm2.messages_to_prompt(answer_messages("How long?", evidence))
    assert prompt.startswith("<|im_start|>system\n") and prompt.endswith("<|im_start|>assistant\n")
    assert '<evidence n="1"' in prompt


def test_only_validated_sentences_reach_the_answer(smollm2):
    doc, evidence = make_evidence([REFUND, SHIPPING, INJECTION])
    embed = minilm_embed()
    events = list(stream_answer("How long do I have to request a refund?", evidence, LOCAL, embed, llm=smollm2))
    answer = events[-1].answer
    if answer.generator.backend == "extractive":  # every SmolLM2 draft failed: the labelled fallback
        assert answer.drafts_rejected and "fallback" in answer.generator.model
        assert any(w.code.value == "extractive_fallback" for w in answer.warnings)
    else:
        assert answer.generator.backend == "llama-cpp" and answer.generator.model == SMOLLM2_FILE
    validator = CitationValidator(EvidenceIndex([c.text for c in evidence], embed), LOCAL.support_threshold)
    for event in events:
        if event.kind is EventKind.SENTENCE:
            assert validator.check(event.sentence.raw).ok, event.sentence.raw
    assert "42" not in answer.text
    if answer.refused:
        assert answer.text == REFUSAL_TEXT and not answer.sentences and not answer.citations
        return
    for sentence in answer.sentences:
        assert sentence.kind is not SentenceKind.CLAIM or sentence.verified
        assert validator.check(sentence.raw).ok
    for cite in answer.citations:
        assert doc[cite.start : cite.end] == cite.quote


def test_complete_json_with_a_real_model_returns_the_keys_or_raises_typed(smollm2):
    prompt = 'Reply with JSON only, like {"action": "answer"}. Is "refund window" a question about refunds?'
    try:
        out = complete_json(smollm2, prompt, ["action"])
    except LLMOutputError:
        return
    assert "action" in out
