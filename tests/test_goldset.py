"""Gold-set format: loading, line-numbered errors, quote anchoring, re-chunking, BEIR import."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag.errors import DatasetError, GoldSetError
from rag.eval.beir import beir_doc_name, beir_document, beir_to_goldset, iter_corpus, load_beir
from rag.eval.gold.anchoring import (
    Span,
    anchor_goldset,
    find_quote,
    relevant_chunk_ids,
    relevant_doc_grades,
    span_matches_chunk,
)
from rag.eval.gold.goldset import GoldItem, Passage, load_goldset, parse_goldset, save_goldset
from rag.ingest.chunking import chunk_document
from rag.ingest.parsers import parse_file
from rag.records import ChunkRecord, PageSpan, ParsedDocument
from rag.retrieval.trace import Candidate

GOOD = {
    "id": "q1",
    "question": "How many days of annual leave?",
    "expected_docs": ["handbook.md"],
    "relevant": [{"doc": "handbook.md", "quote": "25 working days", "grade": 2}, {"chunk_id": "h:1:1:0"}],
    "hard_negatives": [{"doc": "other.md", "start": 0, "end": 10}],
    "reference_answer": "25 working days",
    "tags": ["handbook"],
}


def lines(*objs) -> list[str]:
    return [o if isinstance(o, str) else json.dumps(o) for o in objs]


def test_save_and_load_round_trip(tmp_path):
    refuse = {"id": 7, "question": "Stock price?", "should_refuse": True, "meta": {"source": "x"}}
    gold = parse_goldset(lines(GOOD, "", refuse), name="g")
    assert [i.line for i in gold.items] == [1, 3]
    assert gold.items[1].id == "7" and gold.refusals() == [gold.items[1]]
    path = save_goldset(gold, tmp_path / "g.jsonl")
    again = load_goldset(path)
    assert again.items == gold.items
    assert json.loads(path.read_text().splitlines()[0]) == GOOD


BAD = [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ({"id": "x"}, "field 'question' is missing"),
    ({"question": "q?"}, "field 'id' is missing"),
    ({"id": "x", "question": ""}, "field 'question' must be a non-empty string"),
    ({"id": "x", "question": 3}, "field 'question' must be a non-empty string, got a number"),
    ({"id": "x", "question": "q?", "should_refuse": "yes"}, "field 'should_refuse' must be true or false"),
    ({"id": "x", "question": "q?", "tags": "hr"}, "field 'tags' must be a list of non-empty strings"),
    ({"id": "x", "question": "q?", "answer": "a"}, "field 'answer' is not part of the format"),
    ({"id": "x", "question": "q?", "relevant": {"doc": "a"}}, "field 'relevant' must be a list"),
    ({"id": "x", "question": "q?", "relevant": ["a.md"]}, "field 'relevant[0]' must be an object"),
    ({"id": "x", "question": "q?", "relevant": [{"quote": "q"}]}, "field 'relevant[0].doc' is missing"),
    ({"id": "x", "question": "q?", "relevant": [{"doc": "a", "page_no": 1}]}, "field 'relevant[0].page_no' is not"),
    ({"id": "x", "question": "q?", "relevant": [{"doc": "a", "start": 3}]}, 'needs both "start" and "end"'),
    ({"id": "x", "question": "q?", "relevant": [{"doc": "a", "start": 5, "end": 5}]}, "must be greater than start"),
    ({"id": "x", "question": "q?", "relevant": [{"doc": "a", "start": 1.5, "end": 9}]}, "must be an integer"),
    ({"id": "x", "question": "q?", "relevant": [{"doc": "a", "grade": 0}]}, "grade' must be at least 1"),
    ({"id": "x", "question": "q?", "hard_negatives": [{"doc": "a", "grade": 2}]}, "only allowed on relevant"),
    ({"id": "x", "question": "q?", "relevant": [{"chunk_id": "c", "doc": "a"}]}, "Use either a chunk_id or a doc"),
    ({"id": "x", "question": "q?", "should_refuse": True, "relevant": [{"doc": "a"}]}, "cannot have relevant"),
]


@pytest.mark.parametrize(("bad", "message"), BAD)
def test_malformed_line_names_line_and_field(bad, message):
    with pytest.raises(GoldSetError) as err:
        parse_goldset(lines(GOOD | {"id": "ok"}, "", bad), source="my.jsonl")
    assert "my.jsonl, line 3: " in str(err.value)
    assert message in str(err.value)
    assert "docs/GOLDSETS.md" in str(err.value)  # the fix says where the format is described


def test_duplicate_ids_and_empty_files(tmp_path):
    with pytest.raises(GoldSetError, match="line 2: field 'id' 'q1' is already used on line 1"):
        parse_goldset(lines(GOOD, GOOD))
    (tmp_path / "empty.jsonl").write_text("\n\n")
    with pytest.raises(GoldSetError, match="no questions"):
        load_goldset(tmp_path / "empty.jsonl")
    with pytest.raises(GoldSetError, match="does not exist"):
        load_goldset(tmp_path / "missing.jsonl")


def test_find_quote_normalizes_whitespace_and_typography():
    text = "Rule:  the  “cap” is\n  USD 320 – per night.  一线城市\n每人每天"
    span = find_quote(text, 'the "cap" is USD 320 - per night')
    assert span is not None and text[span.start : span.end] == "the  “cap” is\n  USD 320 – per night"
    span = find_quote(text, "一线城市每人每天")  # line break inside CJK text
    assert span is not None and text[span.start : span.end] == "一线城市\n每人每天"
    assert find_quote(text, "USD 230") is None
    assert find_quote(text, "   ") is None


def _doc(text: str, pages: tuple[PageSpan, ...] = ()) -> ParsedDocument:
    return ParsedDocument(text, pages or (PageSpan(1, 0, len(text)),), (), "test", "1")


def test_anchor_goldset_resolves_quotes_and_reports_problems():
    text = "Intro text. " * 10 + "Full-time employees receive 25 working days."
    gold = parse_goldset(lines(GOOD | {"relevant": [{"doc": "handbook.md", "quote": "receive 25 working days"}]}))
    with pytest.raises(GoldSetError, match=r"question 'q1' \(line 1\): document 'other.md' is not in"):
        anchor_goldset(gold, {"handbook.md": text})
    anchored = anchor_goldset(gold, {"handbook.md": text, "other.md": "x" * 20})
    passage = anchored.items[0].relevant[0]
    assert text[passage.start : passage.end] == "receive 25 working days"
    with pytest.raises(GoldSetError, match="is not in the document's text"):
        anchor_goldset(gold, {"handbook.md": "something else", "other.md": "x" * 20})


def test_anchor_checks_pages():
    text = "page one text. " * 4 + "page two has the answer."
    cut = text.index("page two")
    doc = _doc(text, (PageSpan(1, 0, cut), PageSpan(2, cut, len(text))))
    item = {"id": "p", "question": "q?", "relevant": [{"doc": "d.pdf", "quote": "has the answer", "page": 2}]}
    assert anchor_goldset(parse_goldset(lines(item)), {"d.pdf": doc}).items[0].relevant[0].start > cut
    item["relevant"][0]["page"] = 1
    with pytest.raises(GoldSetError, match=r"on page\(s\) \[2\], not page 1"):
        anchor_goldset(parse_goldset(lines(item)), {"d.pdf": doc})


def _records(parsed: ParsedDocument, doc_id: str, name: str, size: int, overlap: int) -> list[ChunkRecord]:
    spans = chunk_document(parsed, chunk_size=size, overlap=overlap)
    return [
        ChunkRecord(
            ChunkRecord.make_id(doc_id, size, s.page, s.idx),
            doc_id,
            size,
            s.page,
            s.idx,
            s.start,
            s.end,
            s.heading_path,
            s.text,
            name,
        )
        for s in spans
    ]


QUOTES = [
    "Full-time employees receive 25 working days of paid annual leave per calendar year",
    "Claims above USD 2,500 and up to USD 10,000 need approval from a director.",
    # a long passage: the whole "Submitting a claim" paragraph
    "Submit every claim in Ledgerly, the expense tool, within 30 days of incurring the expense. An itemised "
    "receipt is required for every expense of USD 25 or more. Claims submitted more than 90 days after the "
    "expense are reimbursed only with the approval of the CFO.",
]


@pytest.fixture(scope="module")
def handbook() -> ParsedDocument:
    path = Path(__file__).resolve().parent.parent / "data" / "demo" / "employee_handbook.md"
    return parse_file(path.name, path.read_bytes())


@pytest.mark.parametrize(("size", "overlap"), [(800, 120), (300, 50), (1500, 0), (120, 30)])
def test_span_labels_survive_rechunking(handbook, size, overlap):
    item = GoldItem("q", "q?", relevant=tuple(Passage(doc="employee_handbook.md", quote=q) for q in QUOTES))
    anchored = anchor_goldset(parse_goldset([json.dumps(item.to_dict())]), {"employee_handbook.md": handbook})
    chunks = _records(handbook, "hb01", "employee_handbook.md", size, overlap)
    found = relevant_chunk_ids(anchored.items[0], chunks)
    assert found == relevant_chunk_ids(item, chunks)  # unanchored quotes, resolved from the chunks themselves
    by_id = {c.id: c for c in chunks}
    for passage in anchored.items[0].relevant:
        span = Span(passage.start, passage.end)
        hits = [by_id[c] for c in found if span_matches_chunk(span, by_id[c].char_start, by_id[c].char_end)]
        assert hits, f"no chunk for {passage.quote[:30]!r} at size={size}"
        inside = [c for c in chunks if c.char_start <= span.start and span.end <= c.char_end]
        assert all(c.id in found for c in inside)  # a chunk holding the whole passage is always relevant
    passages = anchored.items[0].relevant
    for chunk_id in found:  # nothing is relevant that does not share text with a labelled passage
        chunk = by_id[chunk_id]
        assert any(min(p.end, chunk.char_end) > max(p.start, chunk.char_start) for p in passages)


@given(
    length=st.integers(200, 3000),
    size=st.integers(20, 900),
    overlap_share=st.floats(0, 0.5),
    data=st.data(),
)
def test_every_span_has_a_relevant_chunk_under_any_covering_chunking(length, size, overlap_share, data):
    overlap = int(size * overlap_share)
    starts = range(0, length, size - overlap)
    chunks = [(s, min(s + size, length)) for s in starts]
    start = data.draw(st.integers(0, length - 1))
    span = Span(start, data.draw(st.integers(start + 1, length)))
    assert any(span_matches_chunk(span, cs, ce) for cs, ce in chunks)
    assert not span_matches_chunk(span, span.end, span.end + 50)  # touching is not overlapping


def test_grades_doc_level_labels_and_candidates():
    text = "alpha " * 50 + "the labelled passage sits here " + "omega " * 50
    start = text.index("the labelled")
    item = GoldItem(
        "q",
        "q?",
        expected_docs=("a.txt",),
        relevant=(
            Passage(doc="a.txt", start=start, end=start + 30, grade=3),
            Passage(doc="b.txt", grade=1),
            Passage(chunk_id="c9:1:1:0"),
        ),
    )
    cands = [
        Candidate("a:1:1:0", "a", "a.txt", 1, (), text[:200], 0, 200),
        Candidate("a:1:1:1", "a", "a.txt", 1, (), text[200:400], 200, 400),
        Candidate("b:1:1:0", "b", "b.txt", 1, (), "whatever", 0, 8),
    ]
    assert relevant_chunk_ids(item, cands) == {"a:1:1:1": 3, "b:1:1:0": 1, "c9:1:1:0": 1}
    assert relevant_doc_grades(item) == {"a.txt": 3, "b.txt": 1, "c9": 1}
    assert relevant_doc_grades(item, {"a.txt": "a", "b.txt": "b"}) == {"a": 3, "b": 1, "c9": 1}


def _write_beir(root: Path, gz: bool = False) -> Path:
    (root / "qrels").mkdir(parents=True)
    corpus = [{"_id": "d1", "title": "Title one", "text": "Body one."}, {"_id": "d/2", "title": "", "text": "Two."}]
    body = "".join(json.dumps(d) + "\n" for d in corpus)
    if gz:
        with gzip.open(root / "corpus.jsonl.gz", "wt", encoding="utf-8") as fh:
            fh.write(body)
    else:
        (root / "corpus.jsonl").write_text(body)
    queries = [
        {"_id": "q1", "text": "first?", "metadata": {"answer": [["12人", "十二人"], "x"], "neg_ids": ["d/2"]}},
        {"_id": "q2", "text": "second?"},
        {"_id": "q3", "text": "not judged in test"},
    ]
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\nq2\td/2\t1\nq2\td1\t0\n")
    return root


@pytest.mark.parametrize("gz", [False, True])
def test_load_beir_and_convert(tmp_path, gz):
    data = load_beir(_write_beir(tmp_path / "tiny", gz), "test")
    assert data.corpus["d1"] == ("Title one", "Body one.")
    assert data.queries == {"q1": "first?", "q2": "second?"}
    assert data.qrels == {"q1": {"d1": 2}, "q2": {"d/2": 1, "d1": 0}}
    gold = beir_to_goldset(data)
    q1, q2 = gold.items
    assert q1.relevant == (Passage(doc="d1.md", grade=2),)
    assert q1.hard_negatives == (Passage(doc="d_2.md"),)
    assert q1.reference_answer == "12人 / 十二人; x"
    assert q2.relevant == (Passage(doc="d_2.md"),) and q2.hard_negatives == (Passage(doc="d1.md"),)
    assert beir_document("d1", data.corpus["d1"]) == ("d1.md", b"# Title one\n\nBody one.")
    assert beir_doc_name("d/2") == "d_2.md"
    assert [doc_id for doc_id, _ in iter_corpus(tmp_path / "tiny")] == ["d1", "d/2"]


def test_beir_errors(tmp_path):
    root = _write_beir(tmp_path / "tiny")
    with pytest.raises(DatasetError, match=r"No qrels for split 'dev'.*\['test'\]"):
        load_beir(root, "dev")
    (root / "qrels" / "test.tsv").write_text("q1\td1\n")
    with pytest.raises(DatasetError, match="test.tsv, line 1: expected"):
        load_beir(root, "test")
    (root / "qrels" / "test.tsv").write_text("q1\td1\t1\n")
    (root / "corpus.jsonl").write_text('{"_id": "d1", "text": "ok"}\n{"_id": "d2", "text": "bad"\n')
    with pytest.raises(DatasetError, match="corpus.jsonl, line 2: not valid JSON"):
        load_beir(root, "test")
    with pytest.raises(DatasetError, match="not a folder"):
        load_beir(tmp_path / "nowhere")


SCIFACT = Path(__file__).resolve().parent.parent.parent / "shared" / "bench" / "scifact"


@pytest.mark.skipif(not SCIFACT.is_dir(), reason="SciFact benchmark data not present")
def test_scifact_test_split_loads():
    data = load_beir(SCIFACT, "test", load_corpus=False)
    assert len(data.queries) == 300
    assert sum(len(r) for r in data.qrels.values()) == 339
    assert len(beir_to_goldset(data)) == 300


def test_validate_applies_file_rules_to_sets_built_in_code(tmp_path):
    from rag.eval.gold.goldset import GoldSet

    contradiction = GoldItem("r", "Stock price?", relevant=(Passage(doc="a.md"),), should_refuse=True)
    with pytest.raises(GoldSetError, match="cannot have relevant passages"):
        save_goldset(GoldSet("g", [contradiction]), tmp_path / "g.jsonl")
    no_doc = GoldItem("q", "q?", relevant=(Passage(quote="text"),))
    with pytest.raises(GoldSetError, match=r"field 'relevant\[0\].doc' is missing"):
        save_goldset(GoldSet("g", [no_doc]), tmp_path / "g.jsonl")
    assert not (tmp_path / "g.jsonl").exists()


def test_an_uploaded_gold_set_is_checked_then_kept_as_sent(tmp_path):
    from types import SimpleNamespace

    from rag.config import Settings
    from rag.eval.gold.builder import save_uploaded_goldset

    kb = SimpleNamespace(name="kb1", settings=Settings(home=tmp_path))
    line = json.dumps({"id": "q1", "question": "Who?", "should_refuse": True}) + "\n"
    gold, path = save_uploaded_goldset(kb, "mine.jsonl", line.encode())
    assert len(gold) == 1 and path == tmp_path / "goldsets" / "kb1" / "mine.jsonl"
    assert path.read_text(encoding="utf-8") == line
    with pytest.raises(GoldSetError, match="UTF-8"):
        save_uploaded_goldset(kb, "bad.jsonl", b"\xff\xfe")
    with pytest.raises(GoldSetError):
        save_uploaded_goldset(kb, "broken.jsonl", b"{not json}\n")
    assert not (tmp_path / "goldsets" / "kb1" / "broken.jsonl").exists()
