"""The demo corpus: one document per supported format, rebuildable, and a gold set that anchors in it."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from rag.eval.gold.anchoring import anchor_goldset, relevant_chunk_ids
from rag.eval.gold.goldset import load_goldset
from rag.eval.metrics import contains_answer
from rag.ingest.chunking import chunk_document
from rag.ingest.parsers import parse_file
from rag.records import ChunkRecord, ParsedDocument

DEMO = Path(__file__).resolve().parent.parent / "data" / "demo"
FILES = {
    "employee_handbook.md": "markdown",
    "it_security_policy.html": "html",
    "release_notes.txt": "text",
    "office_locations.csv": "csv",
    "travel_policy.pdf": "pdf",
    "data_retention_policy.docx": "docx",
    "product_roadmap_q3_2025.pptx": "pptx",
    "expense_policy_zh.md": "markdown",
}


@pytest.fixture(scope="module")
def parsed() -> dict[str, ParsedDocument]:
    return {name: parse_file(name, (DEMO / name).read_bytes()) for name in FILES}


@pytest.fixture(scope="module")
def gold():
    return load_goldset(DEMO / "gold-tune.jsonl")


@pytest.fixture(scope="module", params=["gold-tune.jsonl", "gold-test.jsonl"])
def split(request):
    return load_goldset(DEMO / request.param)


def test_every_document_parses_with_its_format(parsed):
    suffixes = {p.suffix for p in DEMO.iterdir()} - {".py", ".json", ".jsonl"}
    assert suffixes == {".md", ".html", ".txt", ".csv", ".pdf", ".docx", ".pptx"}
    for name, doc in parsed.items():
        assert doc.parser, name
        assert len(doc.text) > 1000, name
    assert parsed["travel_policy.pdf"].page_count == 4
    assert parsed["product_roadmap_q3_2025.pptx"].page_count == 8
    assert len(re.findall(r"[\u4e00-\u9fff]", parsed["expense_policy_zh.md"].text)) > 800
    levels = {h.level for h in parsed["employee_handbook.md"].headings}
    assert {1, 2, 3, 4} <= levels
    assert {1, 2} <= {h.level for h in parsed["data_retention_policy.docx"].headings}
    assert {1, 2, 3} <= {h.level for h in parsed["it_security_policy.html"].headings}


def test_binary_documents_are_rebuilt_identically(tmp_path):
    spec = importlib.util.spec_from_file_location("make_demo", DEMO / "make_demo.py")
    assert spec is not None and spec.loader is not None
    make_demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_demo)
    assert make_demo.main(["--check"]) == 0  # the checked-in files are what the script builds
    assert make_demo.main(["--out", str(tmp_path)]) == 0
    for name in make_demo.BUILDERS:
        assert (tmp_path / name).read_bytes() == (DEMO / name).read_bytes()


def test_gold_set_shape(gold):
    assert len(gold) >= 30
    assert len(gold.refusals()) >= 8
    answerable = gold.answerable()
    assert all(item.relevant and item.reference_answer for item in answerable)
    assert {p.doc for item in answerable for p in item.relevant} == set(FILES)
    assert sum("zh" in item.tags for item in answerable) >= 3
    assert {p.page for item in answerable for p in item.relevant if p.doc == "travel_policy.pdf"} >= {1, 2, 3, 4}


def test_test_split_is_new_and_covers_the_hard_shapes(gold):
    """The test split was written after all tuning; the split it replaced is part of tune now."""
    test = load_goldset(DEMO / "gold-test.jsonl")
    answerable = test.answerable()
    assert len(answerable) >= 24
    for name in ("gold-tune.jsonl", "gold-en-paraphrase.jsonl", "gold-zh-paraphrase.jsonl"):
        other = gold if name == "gold-tune.jsonl" else load_goldset(DEMO / name)
        assert not {i.question for i in test.items} & {i.question for i in other.items}, name
        assert not {i.id for i in test.items} & {i.id for i in other.items}, name
    assert {p.doc for item in answerable for p in item.relevant} == set(FILES)
    for tag, least in (("compound", 5), ("list", 8), ("zh", 8), ("table", 3), ("own-words", 6)):
        assert sum(tag in i.tags for i in answerable) >= least, tag
    refusals = test.refusals()
    assert len(refusals) >= 6
    for tag, least in (("near-miss", 4), ("off-topic", 1), ("zh", 1)):
        assert sum(tag in i.tags for i in refusals) >= least, tag


def test_the_former_test_split_is_part_of_tune(gold):
    former = [i for i in gold.items if "former-test" in i.tags]
    assert len(former) == 28  # tuned on, so no longer held out
    assert all(i.id.startswith("t-") for i in former)


def test_every_key_fact_is_in_a_relevant_quote(split):
    """A key fact no labelled passage holds could never be found by an extractive answer."""
    answerable = split.answerable()
    assert all(item.key_facts for item in answerable)
    for item in answerable:
        quotes = " ".join(p.quote for p in item.relevant)
        for fact in item.key_facts:
            assert contains_answer(quotes, fact), (item.id, fact)


def test_every_quote_anchors_in_the_parsed_documents(split, parsed):
    anchored = anchor_goldset(split, parsed)  # raises on a missing quote, document or wrong page
    for item in anchored.items:
        for passage in item.relevant + item.hard_negatives:
            assert passage.start is not None and passage.end is not None, item.id


@pytest.mark.parametrize(("size", "overlap"), [(800, 120), (300, 50)])
def test_every_answerable_question_has_relevant_chunks(split, parsed, size, overlap):
    chunks = []
    for name, doc in parsed.items():
        for s in chunk_document(doc, chunk_size=size, overlap=overlap):
            chunks.append(
                ChunkRecord(
                    f"{name}:1:{s.page}:{s.idx}", name, 1, s.page, s.idx, s.start, s.end, s.heading_path, s.text, name
                )
            )
    anchored = anchor_goldset(split, parsed)
    for item in anchored.answerable():
        found = relevant_chunk_ids(item, chunks)
        assert {cid.split(":")[0] for cid in found} == set(item.expected_docs), item.id


def test_demo_questions_are_answerable_gold_questions(gold):
    questions = json.loads((DEMO / "questions.json").read_text(encoding="utf-8"))
    assert len(questions) == 6 and all(isinstance(q, str) for q in questions)
    answerable = {item.question for item in gold.answerable()}
    assert set(questions) <= answerable
