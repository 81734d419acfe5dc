"""Gold-set builder: label chunks relevant or irrelevant for a question, straight into a JSONL file.

The Inspector calls :func:`add_judgement` with the question and a trace ``Candidate`` (or a
``ChunkRecord``). The label is the chunk's character span in its document (``doc`` + ``start``
/ ``end``, the document given by name), so it survives re-chunking. A relevant chunk goes
into ``relevant``, an irrelevant one into ``hard_negatives``; judging the same span again
moves it. The question's item is found by its text (or ``item_id``) or created; every write
is checked with :func:`rag.eval.gold.goldset.validate`.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from rag.errors import GoldSetError
from rag.eval.gold.anchoring import ChunkLike
from rag.eval.gold.goldset import GoldItem, GoldSet, Passage, load_goldset, parse_goldset, save_goldset

if TYPE_CHECKING:
    from rag.kb import KnowledgeBase

log = logging.getLogger(__name__)
SLUG_CHARS = 48


def add_judgement(
    goldset_path: str | Path,
    question: str,
    chunk: ChunkLike,
    relevant: bool,
    grade: int = 1,
    item_id: str | None = None,
) -> GoldItem:
    """Label ``chunk`` relevant (with ``grade``) or a hard negative for ``question``; returns the
    item as saved. Creates the file when it does not exist. Marking a chunk relevant for a
    question labelled ``should_refuse`` makes it answerable."""
    path = Path(goldset_path)
    gold = _load_or_new(path)
    passage = chunk_passage(chunk, grade if relevant else 1)
    item = _find(gold, question, item_id) or _new_item(gold, question, item_id)
    updated = _judge(item, passage, relevant)
    if relevant and item.should_refuse:
        log.warning("question %r was marked should_refuse; a relevant chunk makes it answerable", item.id)
        updated = replace(updated, should_refuse=False)
    _store(gold, path, item, updated)
    return updated


def remove_judgement(goldset_path: str | Path, question: str, chunk: ChunkLike, item_id: str | None = None) -> GoldItem:
    """Drop ``chunk``'s span from the question's relevant passages and hard negatives."""
    path = Path(goldset_path)
    gold = load_goldset(path)
    item = _find(gold, question, item_id)
    if item is None:
        raise ValueError(f"no question {item_id or question!r} in {path}")
    span = _span_key(chunk_passage(chunk))
    updated = replace(
        item,
        relevant=tuple(p for p in item.relevant if _span_key(p) != span),
        hard_negatives=tuple(p for p in item.hard_negatives if _span_key(p) != span),
    )
    _store(gold, path, item, updated)
    return updated


def goldsets_dir(kb: KnowledgeBase) -> Path:
    """Where the knowledge base's own gold sets live: ``<home>/goldsets/<kb>/``."""
    return Path(kb.settings.home) / "goldsets" / kb.name


GOLDSET_NAME = re.compile(r"^[\w][\w.-]{0,63}$")  # a file stem: letters (any script), digits, _ . -


def new_goldset_path(kb: KnowledgeBase, name: str) -> Path:
    """Where a gold set named ``name`` (with or without ``.jsonl``) of ``kb`` lives; the file is
    made by the first label. Raises ``GoldSetError`` for a name that is not a plain file name."""
    stem = (name or "").strip().removesuffix(".jsonl")
    if not GOLDSET_NAME.match(stem):
        raise GoldSetError(
            f"'{name}' is not a usable gold-set name.",
            fix="Use up to 64 letters, digits, '_', '.' or '-', starting with a letter or digit.",
        )
    return goldsets_dir(kb) / f"{stem}.jsonl"


def own_goldsets(kb: KnowledgeBase) -> list[Path]:
    """The gold sets of ``kb`` that exist (labels go only into these, or into a new one)."""
    return sorted(goldsets_dir(kb).glob("*.jsonl"))


def save_uploaded_goldset(kb: KnowledgeBase, filename: str, data: bytes) -> tuple[GoldSet, Path]:
    """Check an uploaded gold-set file and keep it, as sent, in :func:`goldsets_dir` (named after
    the file); returns the parsed set and where it was written. Raises ``GoldSetError``."""
    stem = Path(filename).stem.replace("/", "_")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise GoldSetError(f"{filename} is not UTF-8 text.", fix="Save the file as UTF-8 JSON Lines.") from None
    gold = parse_goldset(text.splitlines(), name=stem, source=filename)
    target = goldsets_dir(kb) / f"{stem}.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return gold, target


def goldset_paths(kb: KnowledgeBase, bundled: bool = False) -> list[Path]:
    """The knowledge base's gold-set files (``*.jsonl`` in :func:`goldsets_dir`), or the default
    ``gold.jsonl`` there (created by the first judgement) when there are none. With ``bundled``,
    every gold set shipped in ``data/demo`` (:func:`bundled_goldsets`) follows for the demo
    knowledge base (read them; label into the files above)."""
    from rag.demo import DEMO_KB

    found = sorted(goldsets_dir(kb).glob("*.jsonl")) or [goldsets_dir(kb) / "gold.jsonl"]
    if bundled and kb.name == DEMO_KB:
        found += bundled_goldsets()
    return found


def bundled_goldsets() -> list[Path]:
    """The gold sets shipped with the demo corpus (``data/demo/gold*.jsonl``: the tune and test
    splits, the Chinese paraphrases, any added later), by name."""
    from rag.demo import DEMO_DIR

    return sorted(DEMO_DIR.glob("gold*.jsonl"))


def chunk_passage(chunk: ChunkLike, grade: int = 1) -> Passage:
    """The chunk's span of its document's normalized text, the document named as users see it."""
    doc = chunk.doc_name or chunk.doc_id
    if not doc or chunk.char_end <= chunk.char_start:
        raise ValueError(f"chunk {chunk!r} has no document or an empty span")
    return Passage(doc=doc, start=chunk.char_start, end=chunk.char_end, grade=grade)


def _judge(item: GoldItem, passage: Passage, relevant: bool) -> GoldItem:
    key = _span_key(passage)
    rel = [p for p in item.relevant if _span_key(p) != key]
    neg = [p for p in item.hard_negatives if _span_key(p) != key]
    (rel if relevant else neg).append(passage)
    return replace(item, relevant=tuple(rel), hard_negatives=tuple(neg))


def _span_key(p: Passage) -> tuple[str, int | None, int | None, str]:
    return (p.doc, p.start, p.end, p.chunk_id)


def _load_or_new(path: Path) -> GoldSet:
    if path.exists() and path.read_text(encoding="utf-8-sig").strip():
        return load_goldset(path)
    return GoldSet(name=path.stem, items=[], source=path.name)


def _find(gold: GoldSet, question: str, item_id: str | None) -> GoldItem | None:
    wanted = question.strip()
    for item in gold.items:
        if (item_id and item.id == item_id) or (not item_id and item.question == wanted):
            return item
    return None


def _new_item(gold: GoldSet, question: str, item_id: str | None) -> GoldItem:
    if not question.strip():
        raise ValueError("the question is empty")
    taken = {item.id for item in gold.items}
    base = item_id or question_slug(question)
    new_id, n = base, 2
    while new_id in taken:
        new_id, n = f"{base}-{n}", n + 1
    return GoldItem(id=new_id, question=question.strip(), tags=("inspector",))


def question_slug(question: str) -> str:
    """A readable id from the question's ASCII words, or ``q-<hash>`` when it has none (CJK)."""
    words = re.findall(r"[a-z0-9]+", question.lower())
    slug = "-".join(words)[:SLUG_CHARS].strip("-")
    return slug or "q-" + hashlib.sha1(question.encode("utf-8")).hexdigest()[:8]


def _store(gold: GoldSet, path: Path, old: GoldItem, new: GoldItem) -> None:
    items = [new if item is old else item for item in gold.items]
    if all(item is not old for item in gold.items):  # a new question
        items.append(new)
    save_goldset(gold.with_items(items), path)
