"""Checks of one raw gold-set line: keys, types and passage shapes (the format is in docs/GOLDSETS.md).

Every problem raises :class:`~rag.errors.GoldSetError` naming the file, the line and the
field, and saying what to do. The checks return plain values; ``rag.eval.gold.goldset`` builds
the typed ``GoldItem`` from them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
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
    "key_facts",
)
PASSAGE_KEYS = ("doc", "quote", "start", "end", "chunk_id", "grade", "page")


@dataclass(frozen=True)
class Where:
    source: str
    line: int

    def error(self, what: str) -> GoldSetError:
        line = f", line {self.line}" if self.line else ""
        return GoldSetError(f"{self.source}{line}: {what}")

    def field_error(self, name: str, what: str) -> GoldSetError:
        return self.error(f"field '{name}' {what}")


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "true/false", type(None): "null"}
    return names.get(type(value), "a number")


def _check_keys(obj: dict[str, Any], allowed: tuple[str, ...], at: Where, prefix: str) -> None:
    for key in obj:
        if key not in allowed:
            raise at.field_error(
                f"{prefix}{key}",
                f"is not part of the format. Allowed: {', '.join(allowed)}. "
                'Rename it, or move free-form data under "meta".',
            )


def _item_id(obj: dict[str, Any], at: Where) -> str:
    value = obj.get("id")
    if value is None:
        raise at.field_error("id", 'is missing. Add a unique "id" string, e.g. "id": "q1".')
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value.strip():
        raise at.field_error("id", f"must be a non-empty string, got {_kind(value)}.")
    return value.strip()


def _text(obj: dict[str, Any], key: str, at: Where, required: bool = False) -> str:
    value = obj.get(key)
    if value is None:
        if required:
            raise at.field_error(key, f'is missing. Add "{key}": "..." (a non-empty string).')
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise at.field_error(key, f"must be a non-empty string, got {_kind(value)}.")
    return value.strip()


def _flag(obj: dict[str, Any], key: str, at: Where) -> bool:
    value = obj.get(key, False)
    if not isinstance(value, bool):
        raise at.field_error(key, f"must be true or false, got {_kind(value)}.")
    return value


def _strings(obj: dict[str, Any], key: str, at: Where) -> list[str]:
    value = obj.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise at.field_error(key, f'must be a list of non-empty strings, e.g. "{key}": ["a", "b"].')
    return [v.strip() for v in value]


def _meta(obj: dict[str, Any], at: Where) -> dict[str, Any]:
    value = obj.get("meta", {})
    if not isinstance(value, dict):
        raise at.field_error("meta", f"must be an object, got {_kind(value)}.")
    return value


def _passages(obj: dict[str, Any], key: str, at: Where) -> list[dict[str, Any]]:
    value = obj.get(key, [])
    if not isinstance(value, list):
        raise at.field_error(key, f'must be a list of passages ({{"doc": ..., "quote": ...}}), got {_kind(value)}.')
    return [_passage(p, f"{key}[{i}]", at, graded=key == "relevant") for i, p in enumerate(value)]


def _passage(obj: Any, name: str, at: Where, graded: bool) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise at.field_error(name, f'must be an object like {{"doc": "file.md", "quote": "..."}}, got {_kind(obj)}.')
    _check_keys(obj, PASSAGE_KEYS, at, f"{name}.")
    ints = {k: _int(obj, k, f"{name}.{k}", at) for k in ("start", "end", "grade", "page")}
    strs = {k: obj.get(k, "") for k in ("doc", "quote", "chunk_id")}
    for key, value in strs.items():
        if not isinstance(value, str):
            raise at.field_error(f"{name}.{key}", f"must be a string, got {_kind(value)}.")
    if ints["grade"] is not None and not graded:
        raise at.field_error(f"{name}.grade", "is only allowed on relevant passages. Remove it.")
    _check_shape(name, strs, ints, at)
    return {
        "doc": strs["doc"].strip(),
        "quote": strs["quote"],
        "start": ints["start"],
        "end": ints["end"],
        "chunk_id": strs["chunk_id"].strip(),
        "grade": 1 if ints["grade"] is None else ints["grade"],
        "page": ints["page"],
    }


def _int(obj: dict[str, Any], key: str, name: str, at: Where) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise at.field_error(name, f"must be an integer, got {_kind(value)}.")
    floor = 0 if key in ("start", "end") else 1
    if value < floor:
        raise at.field_error(name, f"must be at least {floor}, got {value}.")
    return value


def _check_shape(name: str, strs: dict[str, str], ints: dict[str, int | None], at: Where) -> None:
    if strs["chunk_id"].strip():
        extra = [k for k in ("doc", "quote") if strs[k]] + [k for k in ("start", "end") if ints[k] is not None]
        if extra:
            raise at.field_error(name, f"has a chunk_id and also {', '.join(extra)}. Use either a chunk_id or a doc.")
        return
    if not strs["doc"].strip():
        raise at.field_error(f"{name}.doc", "is missing. Name the document (file name or id), or give a chunk_id.")
    start, end = ints["start"], ints["end"]
    if (start is None) != (end is None):
        raise at.field_error(name, 'needs both "start" and "end" (character offsets), or neither.')
    if start is not None and end is not None and end <= start:
        raise at.field_error(f"{name}.end", f"({end}) must be greater than start ({start}).")
    if strs["quote"] and not strs["quote"].strip():
        raise at.field_error(f"{name}.quote", "is blank. Quote the passage verbatim, or leave the key out.")


def read_line(raw: str, at: Where) -> dict[str, Any]:
    """The JSON object on one line, or a ``GoldSetError`` saying what is wrong with it."""
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as err:
        raise at.error(
            f"not valid JSON ({err.msg} at column {err.colno}). Each line must be one JSON object."
        ) from None
    if not isinstance(obj, dict):
        raise at.error(f"expected a JSON object, got {_kind(obj)}. Each line must be one {{...}} object.")
    return obj


def check_item(obj: dict[str, Any], at: Where) -> dict[str, Any]:
    """Checked values for every ``GoldItem`` field; passages come back as ``Passage`` keyword dicts."""
    _check_keys(obj, ITEM_KEYS, at, "")
    values = {
        "id": _item_id(obj, at),
        "question": _text(obj, "question", at, required=True),
        "expected_docs": tuple(_strings(obj, "expected_docs", at)),
        "relevant": _passages(obj, "relevant", at),
        "hard_negatives": _passages(obj, "hard_negatives", at),
        "should_refuse": _flag(obj, "should_refuse", at),
        "reference_answer": _text(obj, "reference_answer", at),
        "tags": tuple(_strings(obj, "tags", at)),
        "meta": _meta(obj, at),
        "key_facts": tuple(_strings(obj, "key_facts", at)),
    }
    if values["should_refuse"] and values["relevant"]:
        raise at.error(
            "field 'relevant': a question with \"should_refuse\": true cannot have relevant passages. "
            "Remove the passages or set should_refuse to false."
        )
    if values["should_refuse"] and values["key_facts"]:
        raise at.error(
            "field 'key_facts': a question with \"should_refuse\": true has no answer to hold key facts. "
            "Remove key_facts or set should_refuse to false."
        )
    return values
