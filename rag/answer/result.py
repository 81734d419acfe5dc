"""What an answer is: sentences, citations with source spans, refusal, warnings, timings.

Everything here round-trips through ``to_dict`` / ``from_dict`` (plain JSON types), so a
chat turn can be stored in the catalog and reopened after a restart.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import Enum, StrEnum
from typing import Any

from rag.records import EvidencePassage, ModelLabel


class IssueCode(StrEnum):
    """Why a sentence, a citation or a whole draft was not accepted."""

    OUT_OF_RANGE = "out_of_range"  # [n] names no evidence chunk
    QUOTE_NOT_FOUND = "quote_not_found"  # quoted text is not in the cited chunk
    NUMBER_MISMATCH = "number_mismatch"  # a number in the sentence is not in the cited chunk
    NEGATION_MISMATCH = "negation_mismatch"  # the sentence negates what the chunk says (or vice versa)
    UNSUPPORTED = "unsupported"  # support score under the threshold
    UNCITED = "uncited"  # a factual sentence without any [n]
    NO_ANSWER = "no_answer"  # the draft holds no cited claim (the generator declined)
    NO_EVIDENCE = "no_evidence"  # nothing to answer from
    INJECTION = "injection"  # evidence contains instruction-like text (warning only)
    EXTRACTIVE_FALLBACK = (
        "extractive_fallback"  # no drafted answer passed; the evidence sentences are shown (warning only)
    )


class Outcome(StrEnum):
    """What the app showed for a question."""

    ANSWER = "answer"  # a cited answer whose every claim passed validation
    REFUSAL = "refusal"  # the fixed refusal text: weak evidence, or no draft passed validation
    CLARIFY = "clarify"  # a question back: the question was too vague to search well


class SentenceKind(StrEnum):
    CLAIM = "claim"  # states something; must carry verified citations
    GAP = "gap"  # says what the evidence does not cover; no numbers, no quotes
    CONNECTIVE = "connective"  # a short lead-in ("In short:"); no numbers


@dataclass
class Issue:
    code: IssueCode
    message: str
    sentence: str = ""
    n: int | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Issue:
        return cls(**{**d, "code": IssueCode(d["code"])})


@dataclass
class Citation:
    """One accepted [n] in one sentence, mapped to the supporting span of the source document."""

    n: int
    sentence: int  # index into Answer.sentences
    chunk_id: str
    doc_id: str
    doc_name: str
    page: int
    heading_path: tuple[str, ...]
    start: int  # character offsets of the supporting span in the document's normalized text
    end: int
    chunk_char_start: int  # where the chunk starts in the document (span in chunk = start - this)
    quote: str  # the supporting text itself
    support: float
    valid: bool = True
    source_deleted: bool = False  # its document was deleted: the quote is gone, the ids and offsets stay

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Citation:
        return cls(**{**d, "heading_path": tuple(d["heading_path"])})


@dataclass
class AnswerSentence:
    text: str  # without citation markers
    raw: str  # as shown, with markers
    kind: SentenceKind = SentenceKind.CLAIM
    citations: list[int] = field(default_factory=list)
    verified: bool = False
    support: float | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AnswerSentence:
        return cls(**{**d, "kind": SentenceKind(d["kind"])})


@dataclass
class DraftRejection:
    attempt: int
    draft: str
    issues: list[Issue]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DraftRejection:
        return cls(attempt=d["attempt"], draft=d["draft"], issues=[Issue.from_dict(i) for i in d["issues"]])


@dataclass
class Answer:
    question: str
    text: str  # markdown with [n] markers; rag.retrieval.fallback.REFUSAL_TEXT when refused
    generator: ModelLabel
    sentences: list[AnswerSentence] = field(default_factory=list)
    citations: list[Citation] = field(default_factory=list)
    evidence_ids: list[str] = field(default_factory=list)  # chunk id of [1], [2], ...
    outcome: Outcome = Outcome.ANSWER
    refusal_reason: str = ""  # why it is not an answer (the fallback's reason, or the validation failure)
    warnings: list[Issue] = field(default_factory=list)
    drafts_rejected: list[DraftRejection] = field(default_factory=list)
    attempts: int = 0
    support_threshold: float = 0.0
    timings_ms: dict[str, float] = field(default_factory=dict)

    @property
    def refused(self) -> bool:
        """True for a refusal and for a question back: no claim is shown as an answer."""
        return self.outcome is not Outcome.ANSWER

    def citations_for(self, n: int) -> list[Citation]:
        return [c for c in self.citations if c.n == n]

    def to_dict(self) -> dict[str, Any]:
        return json.loads(self.to_json())

    def to_json(self) -> str:
        return json.dumps(asdict(self), default=_enum_value, ensure_ascii=False)

    @classmethod
    def from_json(cls, blob: str) -> Answer:
        return cls.from_dict(json.loads(blob))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Answer:
        d = dict(d)
        d["generator"] = ModelLabel(**d["generator"])
        d["sentences"] = [AnswerSentence.from_dict(s) for s in d["sentences"]]
        d["citations"] = [Citation.from_dict(c) for c in d["citations"]]
        d["warnings"] = [Issue.from_dict(w) for w in d["warnings"]]
        d["drafts_rejected"] = [DraftRejection.from_dict(r) for r in d["drafts_rejected"]]
        if "outcome" in d:
            d["outcome"] = Outcome(d["outcome"])
        else:  # stored before Outcome existed: the kind was a prefix of refusal_reason
            d["outcome"], d["refusal_reason"] = _legacy_outcome(d.pop("refused", False), d.get("refusal_reason", ""))
        return cls(**d)


def _legacy_outcome(refused: bool, reason: str) -> tuple[Outcome, str]:
    """Chat turns saved by earlier versions: ``refused`` plus a ``clarify: `` / ``fallback: `` prefix."""
    for prefix, outcome in (("clarify: ", Outcome.CLARIFY), ("fallback: ", Outcome.REFUSAL)):
        if reason.startswith(prefix):
            return outcome, reason[len(prefix) :]
    return (Outcome.REFUSAL if refused else Outcome.ANSWER), reason


class EventKind(StrEnum):
    EVIDENCE = "evidence"  # the numbered evidence, before any answer text
    DRAFT = "draft"  # unverified text delta; show only as a marked draft, if at all
    SENTENCE = "sentence"  # a sentence that passed validation (provisional until FINAL)
    REJECTED = "rejected"  # the attempt failed: discard its sentences; a retry or refusal follows
    FINAL = "final"  # the Answer; its text is what to show


@dataclass
class AnswerEvent:
    kind: EventKind
    attempt: int = 0
    text: str = ""
    sentence: AnswerSentence | None = None
    evidence: list[EvidencePassage] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)
    answer: Answer | None = None


def _enum_value(obj: Any) -> Any:
    if isinstance(obj, Enum):
        return obj.value
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")
