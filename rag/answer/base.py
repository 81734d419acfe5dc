"""The generator contract: one method that drafts an answer, and a name -> class registry.

A generator only drafts. Validation, corrections, refusal, spans and timing are done once
for all of them by ``loop.py``: a draft is never shown until its sentences pass.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from llama_index.core.llms import LLM

from rag.answer.result import Issue
from rag.answer.support import Embed, EvidenceIndex
from rag.config import Settings
from rag.errors import ConfigError
from rag.records import EvidencePassage, ModelLabel
from rag.text.question import QuestionAnalysis, reading


@dataclass
class DraftRequest:
    question: str
    evidence: Sequence[EvidencePassage]  # [n] is evidence[n - 1]
    index: EvidenceIndex  # sentences, tokens and vectors of the evidence
    attempt: int = 1
    previous: list[tuple[str, list[Issue]]] = field(default_factory=list)  # rejected drafts and why
    analysis: QuestionAnalysis | None = None  # the ask's one reading; None: read from ``question``
    declined: list[str] = field(default_factory=list)  # a generator that found no answer says here why

    def __post_init__(self) -> None:
        self.analysis = reading(self.question, self.analysis)

    @property
    def reading(self) -> QuestionAnalysis:
        """The question's one reading (``analysis``, set by ``__post_init__``)."""
        return reading(self.question, self.analysis)


class Generator(ABC):
    """Drafts an answer with [n] citations. Subclasses implement ``draft`` only."""

    name: str = ""

    def __init__(self, label: ModelLabel) -> None:
        self.label = label

    def label_for(self, question: str) -> ModelLabel:
        """The models that answer ``question`` (a generator may use more for some languages)."""
        return self.label

    @abstractmethod
    def draft(self, request: DraftRequest) -> Iterator[str]:
        """Yield the draft's text in pieces (whole text or streamed deltas)."""

    @classmethod
    @abstractmethod
    def build(cls, settings: Settings, embed: Embed | None, llm: LLM | None) -> Generator:
        """Construct from settings; ``llm`` overrides the one settings would build."""


GENERATORS: dict[str, type[Generator]] = {}


def register(name: str) -> Callable[[type[Generator]], type[Generator]]:
    def add(cls: type[Generator]) -> type[Generator]:
        cls.name = name
        GENERATORS[name] = cls
        return cls

    return add


def generator_name(settings: Settings, llm: LLM | None = None) -> str:
    """Registry key for ``settings.llm``: 'none' means extractive, unless an ``llm`` is passed in."""
    if settings.llm in ("none", "extractive"):
        return "extractive" if llm is None else "llm"
    return settings.llm


def make_generator(settings: Settings, embed: Embed | None, llm: LLM | None = None) -> Generator:
    """The generator ``settings.llm`` names; an unknown name raises ConfigError."""
    import rag.answer.chat  # noqa: F401  (registers the LLM-backed generators)
    import rag.answer.extractive  # noqa: F401

    name = generator_name(settings, llm)
    if name not in GENERATORS:
        known = ", ".join(sorted(GENERATORS))
        raise ConfigError(f"Unknown answer generator '{name}' (RAG_LLM). Known: {known}.")
    return GENERATORS[name].build(settings, embed, llm)
