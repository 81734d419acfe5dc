"""Gold sets: questions with labelled evidence, one JSON object per line (docs/GOLDSETS.md).

A line looks like::

    {"id": "leave-1", "question": "How many days of annual leave do employees get?",
     "expected_docs": ["employee_handbook.md"],
     "relevant": [{"doc": "employee_handbook.md", "quote": "25 working days of paid annual leave", "grade": 2}],
     "reference_answer": "25 working days", "key_facts": ["25 working days"], "tags": ["handbook"]}

Evidence (``relevant``, ``hard_negatives``) is a list of passages, each one of:

* ``{"doc": D, "quote": Q}``: a verbatim quote, anchored to a character span of D's
  normalized text by :func:`rag.eval.gold.anchoring.anchor_goldset` (survives re-chunking);
* ``{"doc": D, "start": S, "end": E}``: the span ``text[S:E]`` of D's normalized text;
* ``{"doc": D}``: the whole document (BEIR-style document-level labels);
* ``{"chunk_id": C}``: one chunk of one index revision (does not survive re-chunking).

``D`` is a document name or id. Relevant passages may carry ``grade`` (an integer >= 1,
default 1) for graded relevance, and any passage may carry ``page`` (1-based), checked
when the gold set is anchored. Loading checks types and keys and raises
:class:`~rag.errors.GoldSetError` naming the line and the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rag.errors import GoldSetError
from rag.eval.gold.goldcheck import PASSAGE_KEYS, Where, check_item, read_line


@dataclass(frozen=True)
class Passage:
    """A piece of labelled evidence: a quote, a character span, a whole document, or a chunk."""

    doc: str = ""
    quote: str = ""
    start: int | None = None
    end: int | None = None
    chunk_id: str = ""
    grade: int = 1
    page: int | None = None

    @property
    def kind(self) -> str:
        """``chunk`` | ``span`` (start/end known) | ``quote`` (not yet anchored) | ``document``."""
        if self.chunk_id:
            return "chunk"
        if self.start is not None:
            return "span"
        return "quote" if self.quote else "document"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form, leaving out fields at their defaults."""
        out: dict[str, Any] = {}
        for key in PASSAGE_KEYS:
            value = getattr(self, key)
            if value not in ("", None) and not (key == "grade" and value == 1):
                out[key] = value
        return out


@dataclass(frozen=True)
class GoldItem:
    """One question of a gold set. ``line`` is where it was read from (0 when built in code)."""

    id: str
    question: str
    expected_docs: tuple[str, ...] = ()
    relevant: tuple[Passage, ...] = ()
    hard_negatives: tuple[Passage, ...] = ()
    should_refuse: bool = False
    reference_answer: str = ""
    tags: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict, hash=False)
    key_facts: tuple[str, ...] = ()  # short strings a correct answer contains ("USD 320", "director")
    line: int = field(default=0, compare=False)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "question": self.question}
        if self.expected_docs:
            out["expected_docs"] = list(self.expected_docs)
        if self.relevant:
            out["relevant"] = [p.to_dict() for p in self.relevant]
        if self.hard_negatives:
            out["hard_negatives"] = [p.to_dict() for p in self.hard_negatives]
        if self.should_refuse:
            out["should_refuse"] = True
        if self.reference_answer:
            out["reference_answer"] = self.reference_answer
        if self.tags:
            out["tags"] = list(self.tags)
        if self.meta:
            out["meta"] = self.meta
        if self.key_facts:
            out["key_facts"] = list(self.key_facts)
        return out


@dataclass
class GoldSet:
    name: str
    items: list[GoldItem]
    source: str = ""

    def __len__(self) -> int:
        return len(self.items)

    def by_id(self) -> dict[str, GoldItem]:
        return {item.id: item for item in self.items}

    def answerable(self) -> list[GoldItem]:
        return [item for item in self.items if not item.should_refuse]

    def refusals(self) -> list[GoldItem]:
        return [item for item in self.items if item.should_refuse]

    def with_items(self, items: Iterable[GoldItem]) -> GoldSet:
        return replace(self, items=list(items))


def load_goldset(path: str | Path, name: str | None = None) -> GoldSet:
    """Read and validate a gold-set JSONL file (UTF-8). Raises ``GoldSetError`` naming the line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise GoldSetError(f"Gold set file '{path}' does not exist.", fix="Check the path.") from None
    except UnicodeDecodeError as err:
        raise GoldSetError(f"{path.name}: not UTF-8 text ({err.reason} at byte {err.start}).") from None
    return parse_goldset(text.splitlines(), name=name or path.stem, source=path.name)


def parse_goldset(lines: Iterable[str], name: str = "gold", source: str = "gold set") -> GoldSet:
    """Parse JSONL lines (blank lines are skipped) into a validated ``GoldSet``."""
    items = []
    for lineno, raw in enumerate(lines, start=1):
        if raw.strip():
            items.append(parse_item(raw, lineno, source))
    gold = GoldSet(name=name, items=items, source=source)
    validate(gold)
    return gold


def validate(gold: GoldSet) -> GoldSet:
    """Check every item as if it were read from a file (so sets built in code, e.g. by the
    Inspector, obey the same rules), that the set is non-empty and that ids are unique."""
    where = gold.source or gold.name
    if not gold.items:
        raise GoldSetError(f"{where}: the gold set has no questions.", fix="Add at least one JSON line.")
    seen: dict[str, GoldItem] = {}
    for item in gold.items:
        at = Where(where, item.line)
        check_item(json.loads(json.dumps(item.to_dict())), at)
        if item.id in seen:
            first = seen[item.id]
            raise at.field_error(
                "id",
                f"'{item.id}' is already used" + (f" on line {first.line}" if first.line else "") + ". "
                "Give every question its own id.",
            )
        seen[item.id] = item
    return gold


def save_goldset(gold: GoldSet, path: str | Path) -> Path:
    """Write ``gold`` as UTF-8 JSONL (one item per line, defaults left out). Returns the path."""
    validate(gold)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "".join(json.dumps(item.to_dict(), ensure_ascii=False) + "\n" for item in gold.items)
    path.write_text(body, encoding="utf-8")
    return path


def parse_item(raw: str, lineno: int = 0, source: str = "gold set") -> GoldItem:
    """Parse one JSON line into a ``GoldItem``; every problem names ``source``, the line and the field."""
    at = Where(source, lineno)
    values = check_item(read_line(raw, at), at)
    values["relevant"] = tuple(Passage(**p) for p in values["relevant"])
    values["hard_negatives"] = tuple(Passage(**p) for p in values["hard_negatives"])
    return GoldItem(**values, line=lineno)
