"""Chunker: exact spans on known texts, headings, pages, CJK, token limits, and fuzzed invariants."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.ingest.chunking import chunk_document, estimate_tokens
from rag.ingest.parsers.markdown import find_headings
from rag.records import HEADER_MAX_CHARS, ChunkSpan, Heading, PageSpan, ParsedDocument, context_header, index_text


def one_page(text: str, headings: tuple[Heading, ...] = ()) -> ParsedDocument:
    return ParsedDocument(text, (PageSpan(1, 0, len(text)),), headings, "test", "0")


def spans(chunks: list[ChunkSpan]) -> list[tuple[int, int, int, str]]:
    return [(c.page, c.start, c.end, c.text) for c in chunks]


def check_invariants(
    parsed: ParsedDocument, chunks: list[ChunkSpan], max_tokens: int, token_len=estimate_tokens
) -> None:
    """The contract every caller relies on."""
    pages = {p.page: p for p in parsed.pages}
    assert [c.idx for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert chunk.text == parsed.text[chunk.start : chunk.end]
        assert chunk.text.strip() and chunk.text == chunk.text.strip()
        page = pages[chunk.page]
        assert page.start <= chunk.start < chunk.end <= page.end
        assert token_len(chunk.text) <= max_tokens
    starts = [(c.start, c.end) for c in chunks]
    assert starts == sorted(starts)
    covered = bytearray(len(parsed.text))
    for chunk in chunks:
        covered[chunk.start : chunk.end] = b"\x01" * (chunk.end - chunk.start)
    lost = [i for i, ch in enumerate(parsed.text) if not covered[i] and not ch.isspace()]
    assert not lost, f"characters not in any chunk: {lost[:10]}"


def test_sliding_window_prefers_paragraph_then_sentence_then_word() -> None:
    text = "Alpha beta gamma. Delta epsilon zeta. Eta theta iota.\n\nKappa lambda mu. Nu xi omicron."
    chunks = chunk_document(one_page(text), chunk_size=40, overlap=10)
    assert spans(chunks) == [
        (1, 0, 37, "Alpha beta gamma. Delta epsilon zeta."),  # sentence end in the second half
        (1, 32, 53, "zeta. Eta theta iota."),  # overlap starts at a word; ends at the paragraph break
        (1, 48, 86, "iota.\n\nKappa lambda mu. Nu xi omicron."),  # the rest fits
    ]
    check_invariants(one_page(text), chunks, 256)


def test_overlap_starts_at_a_sentence_when_one_is_in_reach() -> None:
    text = "Alpha beta gamma delta epsilon. Zeta eta. Theta iota kappa lambda mu nu. Xi."
    chunks = chunk_document(one_page(text), chunk_size=45, overlap=20)
    assert spans(chunks) == [
        (1, 0, 41, "Alpha beta gamma delta epsilon. Zeta eta."),
        (1, 32, 76, "Zeta eta. Theta iota kappa lambda mu nu. Xi."),  # shares the whole sentence "Zeta eta."
    ]


def test_markdown_sections_and_heading_paths() -> None:
    text = (
        "Preface line.\n\n"
        "# Travel policy\n\n"
        "## Per diem\n\n"
        "You get 50 EUR per day.\n\n"
        "## Hotels\n\n"
        "Up to 120 EUR a night.\n\n"
        "# Expenses\n\n"
        "File within 30 days.\n"
    )
    parsed = one_page(text, find_headings(text))
    chunks = chunk_document(parsed)
    assert [(c.heading_path, c.text) for c in chunks] == [
        ((), "Preface line."),
        (("Travel policy", "Per diem"), "# Travel policy\n\n## Per diem\n\nYou get 50 EUR per day."),
        (("Travel policy", "Hotels"), "## Hotels\n\nUp to 120 EUR a night."),
        (("Expenses",), "# Expenses\n\nFile within 30 days."),
    ]
    assert [(c.start, c.end) for c in chunks] == [(0, 13), (15, 68), (70, 103), (105, 137)]
    check_invariants(parsed, chunks, 256)


def test_heading_only_section_stays_when_next_heading_is_not_deeper() -> None:
    text = "## A\n\n# B\n\nBody of b."
    chunks = chunk_document(one_page(text, find_headings(text)))
    assert [(c.heading_path, c.text) for c in chunks] == [(("A",), "## A"), (("B",), "# B\n\nBody of b.")]


def test_chunks_never_cross_pages_and_headings_carry_over() -> None:
    text = "Intro\n\nfirst page body. More words here.\n\nsecond page body, same section."
    pages = (PageSpan(1, 0, 42), PageSpan(2, 42, len(text)))
    parsed = ParsedDocument(text, pages, (Heading(1, "Intro", 0, 5),), "test", "0")
    chunks = chunk_document(parsed, chunk_size=800)
    assert spans(chunks) == [
        (1, 0, 40, "Intro\n\nfirst page body. More words here."),
        (2, 42, 73, "second page body, same section."),
    ]
    assert [c.heading_path for c in chunks] == [("Intro",), ("Intro",)]
    assert [c.idx for c in chunks] == [0, 1]  # idx counts per document


def test_chinese_splits_on_cjk_sentence_ends() -> None:
    text = "第一句话很短。第二句话也不长！第三句话在这里？第四句话结束；最后一句。"
    chunks = chunk_document(one_page(text), chunk_size=16, overlap=4)
    assert [c.text for c in chunks] == [
        "第一句话很短。第二句话也不长！",
        "也不长！第三句话在这里？",
        "在这里？第四句话结束；最后一句。",
    ]
    assert all(c.text.endswith(("。", "！", "？", "；")) for c in chunks)


def test_default_token_estimate_limits_cjk_windows() -> None:
    text = "这是一个测试句子。" * 200  # 1800 CJK characters, ~1 token each
    chunks = chunk_document(one_page(text), chunk_size=800, overlap=120, max_tokens=256)
    assert all(estimate_tokens(c.text) <= 256 for c in chunks)
    assert all(c.text.endswith("。") for c in chunks)
    check_invariants(one_page(text), chunks, 256)


def test_window_shrinks_to_fit_a_real_token_counter() -> None:
    def words(s: str) -> int:  # stand-in for a tokenizer: one token per word
        return len(s.split())

    text = " ".join(f"w{i}" for i in range(100))
    chunks = chunk_document(one_page(text), chunk_size=800, overlap=20, max_tokens=10, token_len=words)
    assert all(words(c.text) <= 10 for c in chunks)
    assert len(chunks) > 10
    check_invariants(one_page(text), chunks, 10, words)


def test_heading_context_counts_against_the_token_budget() -> None:
    """What is embedded (heading context + chunk) fits the window, not only the chunk text."""

    def words(s: str) -> int:
        return len(s.split())

    title = "Alpha beta gamma delta"  # 4 words of context on every chunk after the first
    text = f"# {title}\n\n" + " ".join(f"w{i}" for i in range(200))
    parsed = one_page(text, find_headings(text))
    chunks = chunk_document(parsed, chunk_size=400, overlap=0, max_tokens=20, token_len=words)
    assert len(chunks) > 5 and all(c.heading_path == (title,) for c in chunks)
    assert all(words(index_text(c.heading_path, c.text)) <= 20 for c in chunks)
    check_invariants(parsed, chunks, 20, words)


def test_index_text_adds_the_heading_path_unless_the_chunk_opens_with_it() -> None:
    path = ("Policy", "Per diem")
    assert index_text(path, "Meals are covered up to 40 EUR.") == "Policy > Per diem\n\nMeals are covered up to 40 EUR."
    assert index_text(path, "## Per diem\nMeals are covered.") == "Policy\n\n## Per diem\nMeals are covered."
    assert index_text((), "No headings.") == "No headings."
    assert context_header(("x" * 500,)) == "x" * HEADER_MAX_CHARS


def test_whitespace_only_sections_and_pages_give_no_chunks() -> None:
    text = "   \n\n  \n\nreal text\n\n   "
    parsed = ParsedDocument(text, (PageSpan(1, 0, 9), PageSpan(2, 9, len(text))), (), "test", "0")
    assert spans(chunk_document(parsed)) == [(2, 9, 18, "real text")]


def test_hard_cut_when_there_is_no_boundary() -> None:
    text = "x" * 100
    chunks = chunk_document(one_page(text), chunk_size=40, overlap=0, max_tokens=1000)
    assert [(c.start, c.end) for c in chunks] == [(0, 40), (40, 80), (80, 100)]


def test_multi_megabyte_input_is_chunked_linearly() -> None:
    text = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 60_000)[:3_000_000]
    chunks = chunk_document(one_page(text))
    assert len(chunks) > 3000
    assert chunks[-1].end == len(text.rstrip())
    assert all(c.text == text[c.start : c.end] for c in chunks[:: max(1, len(chunks) // 50)])


@pytest.mark.parametrize(
    "kwargs", [{"chunk_size": 0}, {"chunk_size": 100, "overlap": 100}, {"overlap": -1}, {"max_tokens": 0}]
)
def test_bad_parameters_raise_value_error(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        chunk_document(one_page("text"), **kwargs)


def test_a_single_character_over_max_tokens_is_a_programmer_error() -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        chunk_document(one_page("abc"), max_tokens=1, token_len=lambda s: 5 * len(s))


_TEXT = st.lists(
    st.sampled_from([*"ab cd.!?\n\t。！，你好\u3000", "\n\n", "# ", "## ", "Word ", "===\n"]), max_size=300
).map("".join)


@st.composite
def documents(draw: st.DrawFn) -> ParsedDocument:
    text = draw(_TEXT)
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=4)))
    bounds = [0, *cuts, len(text)]
    pages = tuple(PageSpan(i + 1, s, e) for i, (s, e) in enumerate(zip(bounds, bounds[1:], strict=False)))
    return ParsedDocument(text, pages, find_headings(text), "fuzz", "0")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    parsed=documents(),
    size=st.integers(1, 120),
    overlap_share=st.floats(0, 0.9),
    max_tokens=st.integers(1, 64),
)
def test_fuzzed_chunk_invariants(parsed: ParsedDocument, size: int, overlap_share: float, max_tokens: int) -> None:
    overlap = int(size * overlap_share)
    chunks = chunk_document(parsed, chunk_size=size, overlap=min(overlap, size - 1), max_tokens=max_tokens)
    check_invariants(parsed, chunks, max_tokens)
