"""A real LlamaIndex LLM that replays queued replies: the fake for tests enters through the LLM interface."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.bridge.pydantic import Field
from llama_index.core.llms import CustomLLM
from llama_index.core.llms.callbacks import llm_completion_callback

from rag.errors import LLMError


class ScriptedLLM(CustomLLM):
    """Answers each call with the next queued reply and records the prompt it was given.

    Chat calls go through LlamaIndex's own ``messages_to_prompt`` and ``stream_chat``
    plumbing; streamed replies arrive in ``delta_chars``-sized pieces.
    """

    replies: list[str] = Field(default_factory=list, description="Replies to give, in order.")
    prompts: list[str] = Field(default_factory=list, description="Prompts received, in order.")
    delta_chars: int = Field(default=7, description="Characters per streamed delta.")
    model_name: str = Field(default="scripted", description="Name shown in labels.")
    is_stand_in: bool = True

    def __init__(self, replies: list[str] | None = None, **kwargs: Any) -> None:
        super().__init__(replies=list(replies or []), **kwargs)

    @classmethod
    def class_name(cls) -> str:
        return "ScriptedLLM"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=32768, num_output=1024, model_name=self.model_name)

    def queue(self, *replies: str) -> None:
        self.replies.extend(replies)

    def _next(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if not self.replies:
            raise LLMError("ScriptedLLM has no reply left for this call.", fix="Queue one reply per expected call.")
        return self.replies.pop(0)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._next(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        reply = self._next(prompt)
        step = max(1, self.delta_chars)

        def gen() -> CompletionResponseGen:
            for i in range(0, len(reply), step):
                yield CompletionResponse(text=reply[: i + step], delta=reply[i : i + step])

        return gen()
