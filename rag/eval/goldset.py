"""Gold sets: questions with labelled evidence, one JSON object per line (docs/GOLDSETS.md).

A line looks like::

    {"id": "leave-1", "question": "How many days of annual leave do employees get?",
     "expected_docs": ["employee_handbook.md"],
     "relevant": [{"doc": "employee_handbook.md", "quote": "25 working days of paid annual leave", "grade": 2}],
     "reference_answer": "25 working days", "tags": ["handbook"]}

Evidence (``relevant``, ``hard_negatives``) is a list of passages, each one of:

* ``{"doc": D, "quote": Q}``: a verbatim quote, anchored to a character span of D's
  normalized text by :func:`rag.eval.anchoring.anchor_goldset` (survives re-chunking);
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

ITEM_KEYS = (
    "id",
    "question",
    "expected_docs",
    "relevant",
    "hard_negatives",
    "should_refuse",
    "reference_answer",
    "tags",
    "meta",
)
PASSAGE_KEYS = ("doc", "quote", "start", "end", "chunk_id", "grade", "page")


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
    """Check what one line cannot: the set is non-empty and ids are unique. Returns ``gold``."""
    where = gold.source or gold.name
    if not gold.items:
        raise GoldSetError(f"{where}: the gold set has no questions.", fix="Add at least one JSON line.")
    seen: dict[str, int] = {}
    for item in gold.items:
        if item.id in seen:
            raise GoldSetError(
                f"{where}, line {item.line}: field 'id': '{item.id}' is already used on line {seen[item.id]}. "
                "Give every question its own id."
            )
        seen[item.id] = item.line
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
    at = _Where(source, lineno)
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as err:
        raise at.error(f"not valid JSON ({err.msg} at column {err.colno}). Each line must be one JSON object.")
    if not isinstance(obj, dict):
        raise at.error(f"expected a JSON object, got {_kind(obj)}. Each line must be one {{...}} object.")
    _check_keys(obj, ITEM_KEYS, at, "")
    item = GoldItem(
        id=_item_id(obj, at),
        question=_text(obj, "question", at, required=True),
        expected_docs=tuple(_strings(obj, "expected_docs", at)),
        relevant=tuple(_passages(obj, "relevant", at)),
        hard_negatives=tuple(_passages(obj, "hard_negatives", at)),
        should_refuse=_flag(obj, "should_refuse", at),
        reference_answer=_text(obj, "reference_answer", at),
        tags=tuple(_strings(obj, "tags", at)),
        meta=_meta(obj, at),
        line=lineno,
    )
    if item.should_refuse and item.relevant:
        raise at.error(
            "field 'relevant': a question with \"should_refuse\": true cannot have relevant passages. "
            "Remove the passages or set should_refuse to false."
        )
    return item


@dataclass(frozen=True)
class _Where:
    source: str
    line: int

    def error(self, what: str) -> GoldSetError:
        return GoldSetError(f"{self.source}, line {self.line}: {what}")

    def field_error(self, name: str, what: str) -> GoldSetError:
        return self.error(f"field '{name}' {what}")


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "true/false", type(None): "null"}
    return names.get(type(value), "a number")


def _check_keys(obj: dict[str, Any], allowed: tuple[str, ...], at: _Where, prefix: str) -> None:
    for key in obj:
        if key not in allowed:
            raise at.field_error(
                f"{prefix}{key}",
                f"is not part of the format. Allowed: {', '.join(allowed)}. "
                "Rename it, or move free-form data under \"meta\".",
            )


def _item_id(obj: dict[str, Any], at: _Where) -> str:
    value = obj.get("id")
    if value is None:
        raise at.field_error("id", "is missing. Add a unique \"id\" string, e.g. \"id\": \"q1\".")
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value.strip():
        raise at.field_error("id", f"must be a non-empty string, got {_kind(value)}.")
    return value.strip()


def _text(obj: dict[str, Any], key: str, at: _Where, required: bool = False) -> str:
    value = obj.get(key)
    if value is None:
        if required:
            raise at.field_error(key, f"is missing. Add \"{key}\": \"...\" (a non-empty string).")
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise at.field_error(key, f"must be a non-empty string, got {_kind(value)}.")
    return value.strip()


def _flag(obj: dict[str, Any], key: str, at: _Where) -> bool:
    value = obj.get(key, False)
    if not isinstance(value, bool):
        raise at.field_error(key, f"must be true or false, got {_kind(value)}.")
    return value


def _strings(obj: dict[str, Any], key: str, at: _Where) -> list[str]:
    value = obj.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise at.field_error(key, f"must be a list of non-empty strings, e.g. \"{key}\": [\"a\", \"b\"].")
    return [v.strip() for v in value]


def _meta(obj: dict[str, Any], at: _Where) -> dict[str, Any]:
    value = obj.get("meta", {})
    if not isinstance(value, dict):
        raise at.field_error("meta", f"must be an object, got {_kind(value)}.")
    return value


def _passages(obj: dict[str, Any], key: str, at: _Where) -> list[Passage]:
    value = obj.get(key, [])
    if not isinstance(value, list):
        raise at.field_error(key, f"must be a list of passages ({{\"doc\": ..., \"quote\": ...}}), got {_kind(value)}.")
    return [_passage(p, f"{key}[{i}]", at, graded=key == "relevant") for i, p in enumerate(value)]


def _passage(obj: Any, name: str, at: _Where, graded: bool) -> Passage:
    if not isinstance(obj, dict):
        raise at.field_error(name, f"must be an object like {{\"doc\": \"file.md\", \"quote\": \"...\"}}, got {_kind(obj)}.")
    _check_keys(obj, PASSAGE_KEYS, at, f"{name}.")
    ints = {k: _int(obj, k, f"{name}.{k}", at) for k in ("start", "end", "grade", "page")}
    strs = {k: obj.get(k, "") for k in ("doc", "quote", "chunk_id")}
    for key, value in strs.items():
        if not isinstance(value, str):
            raise at.field_error(f"{name}.{key}", f"must be a string, got {_kind(value)}.")
    if ints["grade"] is not None and not graded:
        raise at.field_error(f"{name}.grade", "is only allowed on relevant passages. Remove it.")
    _check_shape(name, strs, ints, at)
    return Passage(
        doc=strs["doc"].strip(),
        quote=strs["quote"],
        start=ints["start"],
        end=ints["end"],
        chunk_id=strs["chunk_id"].strip(),
        grade=1 if ints["grade"] is None else ints["grade"],
        page=ints["page"],
    )


def _int(obj: dict[str, Any], key: str, name: str, at: _Where) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise at.field_error(name, f"must be an integer, got {_kind(value)}.")
    floor = 0 if key in ("start", "end") else 1
    if value < floor:
        raise at.field_error(name, f"must be at least {floor}, got {value}.")
    return value


def _check_shape(name: str, strs: dict[str, str], ints: dict[str, int | None], at: _Where) -> None:
    if strs["chunk_id"].strip():
        extra = [k for k in ("doc", "quote") if strs[k]] + [k for k in ("start", "end") if ints[k] is not None]
        if extra:
            raise at.field_error(name, f"has a chunk_id and also {', '.join(extra)}. Use either a chunk_id or a doc.")
        return
    if not strs["doc"].strip():
        raise at.field_error(f"{name}.doc", "is missing. Name the document (file name or id), or give a chunk_id.")
    start, end = ints["start"], ints["end"]
    if (start is None) != (end is None):
        raise at.field_error(name, "needs both \"start\" and \"end\" (character offsets), or neither.")
    if start is not None and end is not None and end <= start:
        raise at.field_error(f"{name}.end", f"({end}) must be greater than start ({start}).")
    if strs["quote"] and not strs["quote"].strip():
        raise at.field_error(f"{name}.quote", "is blank. Quote the passage verbatim, or leave the key out.")
