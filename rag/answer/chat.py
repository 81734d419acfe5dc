"""LLM-backed generators: the same chat prompt for llama.cpp, OpenAI-compatible and scripted LLMs.

They differ only in how the LlamaIndex LLM is built (``llm.py``); a retry replays the
conversation with the rejected draft and a correction naming the failed citations.
"""

from __future__ import annotations

from collections.abc import Iterator

from llama_index.core.llms import LLM

from rag.answer.base import DraftRequest, Generator, register
from rag.answer.prompt import answer_messages, correction_messages
from rag.answer.support import Embed
from rag.config import Settings
from rag.errors import ConfigError
from rag.llm import build_llama_cpp, build_openai, llm_label, stream_chat_text


@register("llm")
class LLMGenerator(Generator):
    """Drafts with any LlamaIndex LLM passed in."""

    def __init__(self, llm: LLM, settings: Settings) -> None:
        super().__init__(llm_label(settings, llm))
        self.llm = llm

    @classmethod
    def build(cls, settings: Settings, embed: Embed | None, llm: LLM | None) -> Generator:
        if llm is None:
            raise ConfigError(f"Answer generator '{cls.name}' needs an LLM.")
        return cls(llm, settings)

    def draft(self, request: DraftRequest) -> Iterator[str]:
        messages = answer_messages(request.question, request.evidence)
        for draft, issues in request.previous:
            messages = correction_messages(messages, draft, issues, len(request.evidence))
        yield from stream_chat_text(self.llm, messages)


@register("llama-cpp")
class LlamaCppGenerator(LLMGenerator):
    """A local GGUF (default: the bundled SmolLM2-135M-Instruct) through llama.cpp."""

    @classmethod
    def build(cls, settings: Settings, embed: Embed | None, llm: LLM | None) -> Generator:
        return cls(llm or build_llama_cpp(settings), settings)


@register("openai")
class OpenAIGenerator(LLMGenerator):
    """Any OpenAI-compatible endpoint, with the configured timeout and retries."""

    @classmethod
    def build(cls, settings: Settings, embed: Embed | None, llm: LLM | None) -> Generator:
        return cls(llm or build_openai(settings), settings)


@register("scripted")
class ScriptedGenerator(LLMGenerator):
    """Tests: replays a ScriptedLLM's queued replies (must be passed in as ``llm``)."""
