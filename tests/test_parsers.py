"""Parsers, normalization and upload checks on tiny documents built inside each test."""

from __future__ import annotations

import io

import docx
import pptx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reportlab.pdfgen import canvas

from rag.errors import EmptyDocument, LimitExceeded, UnsafeInput, UnsupportedFileType
from rag.ingest.chunking import chunk_document
from rag.ingest.normalize import normalize_text
from rag.ingest.parsers import parse_file
from rag.ingest.safety import SUPPORTED_EXTENSIONS, check_upload, safe_name
from rag.records import Heading, PageSpan, ParsedDocument

# --- tiny document factories -------------------------------------------------------------


def make_pdf(pages: list[list[str]]) -> bytes:
    buf = io.BytesIO()
    pdf = canvas.Canvas(buf)
    for lines in pages:
        for i, line in enumerate(lines):
            pdf.drawString(72, 760 - 20 * i, line)
        pdf.showPage()
    pdf.save()
    return buf.getvalue()


def make_docx() -> bytes:
    document = docx.Document()
    document.add_heading("Travel policy", level=0)  # style "Title"
    document.add_heading("Per diem", level=1)
    document.add_paragraph("You get  50 EUR per day.")
    table = document.add_table(rows=2, cols=2)
    for (r, c), text in {(0, 0): "City", (0, 1): "Rate", (1, 0): "Paris", (1, 1): "80"}.items():
        table.cell(r, c).text = text
    document.add_heading("Hotels", level=1)
    document.add_paragraph("Up to 120 EUR.")
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()


def make_pptx() -> bytes:
    deck = pptx.Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[1])  # title and content
    first.shapes.title.text = "Q3 results"
    first.placeholders[1].text = "Revenue up 10%\nCosts flat"
    first.notes_slide.notes_text_frame.text = "Thank the team."
    deck.slides.add_slide(deck.slide_layouts[6])  # blank slide, no text
    third = deck.slides.add_slide(deck.slide_layouts[1])
    third.shapes.title.text = "Outlook"
    third.placeholders[1].text = "Growth"
    buf = io.BytesIO()
    deck.save(buf)
    return buf.getvalue()


HTML = b"""<!doctype html><html><head><title>ignored</title><style>p {color: red}</style></head>
<body><nav><a href="/">Home</a> <a href="/x">Menu</a></nav>
<h1>Handbook</h1>
<p>Hello <b>world</b>,
   again.</p>
<script>var secret = 1;</script>
<h2>Rates</h2>
<table><tr><th>City</th><th>Rate</th></tr><tr><td>Paris</td><td>80</td></tr></table>
<ul><li>one</li><li>two</li></ul>
<footer>Copyright</footer></body></html>"""

MARKDOWN = b"# Travel policy\r\n\r\nIntro.\r\n\r\n\r\n\r\n## Per diem ##\r\n\r\nYou get 50 EUR.\r\n"

SAMPLES: dict[str, bytes] = {
    "policy.pdf": make_pdf([["Page one text."], [], ["Page three."]]),
    "policy.docx": make_docx(),
    "deck.pptx": make_pptx(),
    "page.html": HTML,
    "notes.md": MARKDOWN,
    "plain.txt": b"Line one.\r\nLine two.",
    "table.csv": b"name,city\nAlice,Paris\n",
}


def assert_well_formed(parsed: ParsedDocument) -> None:
    """Offsets, normalization and the chunk offset invariant, for any parsed document."""
    assert normalize_text(parsed.text) == parsed.text
    assert parsed.pages[0].start == 0 and parsed.pages[-1].end == len(parsed.text)
    assert [p.page for p in parsed.pages] == list(range(1, len(parsed.pages) + 1))
    for before, after in zip(parsed.pages, parsed.pages[1:], strict=False):
        assert before.end == after.start
    for heading in parsed.headings:
        assert parsed.text[heading.start : heading.end] == heading.title
    for chunk in chunk_document(parsed, chunk_size=60, overlap=10):
        assert chunk.text == parsed.text[chunk.start : chunk.end]
        page = parsed.pages[chunk.page - 1]
        assert page.start <= chunk.start < chunk.end <= page.end


# --- formats ---------------------------------------------------------------------------------


def test_pdf_one_span_per_page_including_empty_pages() -> None:
    parsed = parse_file("policy.pdf", SAMPLES["policy.pdf"])
    assert parsed.text == "Page one text.\n\nPage three."
    assert parsed.pages == (PageSpan(1, 0, 14), PageSpan(2, 14, 16), PageSpan(3, 16, 27))
    assert parsed.headings == ()
    assert parsed.parser == "pypdfium2" and parsed.parser_version
    chunks = chunk_document(parsed)
    assert [(c.page, c.text) for c in chunks] == [(1, "Page one text."), (3, "Page three.")]


def test_docx_title_and_heading_styles_and_tables() -> None:
    """Below a "Title" paragraph, "Heading 1" is level 2, as "## Section" under "# Title" in Markdown."""
    parsed = parse_file("policy.docx", SAMPLES["policy.docx"])
    assert parsed.text == (
        "Travel policy\n\nPer diem\n\nYou get 50 EUR per day.\n\nCity | Rate\nParis | 80\n\nHotels\n\nUp to 120 EUR."
    )
    assert parsed.headings == (
        Heading(1, "Travel policy", 0, 13),
        Heading(2, "Per diem", 15, 23),
        Heading(2, "Hotels", 74, 80),
    )
    assert parsed.pages == (PageSpan(1, 0, len(parsed.text)),)
    assert parsed.parser == "python-docx" and parsed.parser_version == "1.2.0"
    chunks = chunk_document(parsed)
    assert [(c.heading_path, c.start, c.end) for c in chunks] == [
        (("Travel policy", "Per diem"), 0, 72),
        (("Travel policy", "Hotels"), 74, 96),
    ]


def test_docx_heading_levels_without_a_title() -> None:
    document = docx.Document()
    document.add_heading("Scope", level=1)
    document.add_heading("Detail", level=3)
    document.add_paragraph("Body.")
    buf = io.BytesIO()
    document.save(buf)
    parsed = parse_file("plain.docx", buf.getvalue())
    assert parsed.headings == (Heading(1, "Scope", 0, 5), Heading(3, "Detail", 7, 13))


def test_pptx_one_page_per_slide_with_title_headings_and_notes() -> None:
    parsed = parse_file("deck.pptx", SAMPLES["deck.pptx"])
    assert parsed.text == "Q3 results\n\nRevenue up 10%\nCosts flat\n\nThank the team.\n\nOutlook\n\nGrowth"
    assert parsed.pages == (PageSpan(1, 0, 54), PageSpan(2, 54, 56), PageSpan(3, 56, 71))
    assert parsed.headings == (Heading(1, "Q3 results", 0, 10), Heading(1, "Outlook", 56, 63))
    assert parsed.parser == "python-pptx"
    chunks = chunk_document(parsed)
    assert [(c.page, c.idx, c.heading_path) for c in chunks] == [(1, 0, ("Q3 results",)), (3, 1, ("Outlook",))]


def test_html_drops_noise_keeps_blocks_headings_and_table_rows() -> None:
    parsed = parse_file("page.html", HTML)
    assert parsed.text == "Handbook\n\nHello world, again.\n\nRates\n\nCity | Rate\nParis | 80\n\none\n\ntwo"
    assert parsed.headings == (Heading(1, "Handbook", 0, 8), Heading(2, "Rates", 31, 36))
    assert parsed.parser == "bs4-lxml"
    chunks = chunk_document(parsed)
    assert [c.heading_path for c in chunks] == [("Handbook",), ("Handbook", "Rates")]


def test_html_respects_declared_charset() -> None:
    data = '<html><head><meta charset="windows-1252"></head><body><p>Café crème</p></body></html>'
    assert parse_file("a.htm", data.encode("cp1252")).text == "Café crème"


def test_markdown_keeps_source_and_finds_headings() -> None:
    parsed = parse_file("notes.md", MARKDOWN)
    assert parsed.text == "# Travel policy\n\nIntro.\n\n## Per diem ##\n\nYou get 50 EUR.\n"
    assert parsed.headings == (Heading(1, "Travel policy", 2, 15), Heading(2, "Per diem", 28, 36))
    chunks = chunk_document(parsed)
    assert [(c.heading_path, c.text) for c in chunks] == [
        (("Travel policy",), "# Travel policy\n\nIntro."),
        (("Travel policy", "Per diem"), "## Per diem ##\n\nYou get 50 EUR."),
    ]


def test_markdown_setext_headings_and_fenced_code() -> None:
    text = b"Title\n=====\n\nSub\n---\n\n```\n# not a heading\n```\n\n---\n\nText\n"
    parsed = parse_file("a.markdown", text)
    assert [(h.level, h.title) for h in parsed.headings] == [(1, "Title"), (2, "Sub")]


def test_text_is_decoded_and_normalized() -> None:
    parsed = parse_file("plain.txt", SAMPLES["plain.txt"])
    assert parsed.text == "Line one.\nLine two."
    assert parsed.parser == "text"
    latin = "Grüße aus Köln. Die Äpfel und die Bücher sind schön. Wir fahren über die Brücke.".encode("cp1252")
    assert "Bücher" in parse_file("de.txt", latin).text
    assert parse_file("u16.txt", "naïve café".encode("utf-16")).text == "naïve café"
    assert parse_file("bom.txt", b"\xef\xbb\xbfhello").text == "hello"


def test_csv_rows_become_column_value_lines() -> None:
    data = b'name;city;note\nAlice;Paris;"likes ; semicolons\nand newlines"\nBob;;\n\n;;\nCara;Rome;x;extra\n'
    parsed = parse_file("people.csv", data)
    assert parsed.text == (
        "Columns: name; city; note\n"
        "name: Alice; city: Paris; note: likes ; semicolons and newlines\n"
        "name: Bob\n"
        "name: Cara; city: Rome; note: x; column 4: extra"
    )
    assert parsed.parser == "csv" and parsed.pages == (PageSpan(1, 0, len(parsed.text)),)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_format_is_well_formed(name: str) -> None:
    assert_well_formed(parse_file(name, SAMPLES[name]))


# --- normalization ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("e\u0301", "\u00e9"),  # NFC
        ("a\r\nb\rc", "a\nb\nc"),
        ("a\x00b\x07c\x1bd\x7fe", "abcde"),
        ("keep\ttab\nnewline", "keep\ttab\nnewline"),
        ("bad \ud800 surrogate", "bad \ufffd surrogate"),
        ("zero\u200bwidth\ufeff and \u202eRLO\u202c \u2066isolate\u2069", "zerowidth and RLO isolate"),
        ("many    spaces\u00a0\u00a0here", "many spaces here"),
        ("a\n\n\n\n\nb", "a\n\nb"),
        ("a  \n \n \n  b", "a\n\nb"),
        ("\u05e9\u05dc\u05d5\u05dd world", "\u05e9\u05dc\u05d5\u05dd world"),  # RTL letters stay
        ("page\x0cbreak", "page\nbreak"),
    ],
)
def test_normalize_text(raw: str, expected: str) -> None:
    assert normalize_text(raw) == expected


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_normalize_is_idempotent(raw: str) -> None:
    once = normalize_text(raw)
    assert normalize_text(once) == once
    assert "\x00" not in once and "\r" not in once and "\n\n\n" not in once


# --- names and upload checks -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\me\\report.pdf", "report.pdf"),
        ("C:report.pdf", "report.pdf"),
        ("rep\x00ort\u202egnp.pdf", "reportgnp.pdf"),
        ("  Straße Übersicht 报告.docx  ", "Straße Übersicht 报告.docx"),
        ("a<b>c?.txt", "a_b_c_.txt"),
        ("..hidden.md", "hidden.md"),
        ("CON.txt", "_CON.txt"),
        ("x" * 300 + ".pdf", "x" * 196 + ".pdf"),
    ],
)
def test_safe_name(raw: str, expected: str) -> None:
    assert safe_name(raw) == expected


@pytest.mark.parametrize("raw", ["", "../..", "/", "\u200b\u202e", "...", " . "])
def test_safe_name_rejects_names_with_nothing_left(raw: str) -> None:
    with pytest.raises(UnsafeInput) as err:
        safe_name(raw)
    assert err.value.fix in str(err.value) and err.value.fix


def test_supported_extensions() -> None:
    assert set(SUPPORTED_EXTENSIONS) == {".pdf", ".docx", ".pptx", ".html", ".htm", ".md", ".markdown", ".txt", ".csv"}
    assert SUPPORTED_EXTENSIONS[".htm"] == "html"


def test_check_upload() -> None:
    check_upload("Report.PDF", b"%PDF-1.7", max_file_mb=1)
    with pytest.raises(EmptyDocument):
        check_upload("a.txt", b"", max_file_mb=1)
    with pytest.raises(LimitExceeded, match="RAG_MAX_FILE_MB"):
        check_upload("a.txt", b"x" * (1024 * 1024 + 1), max_file_mb=1)
    with pytest.raises(UnsupportedFileType, match="Upload one of"):
        check_upload("a.exe", b"MZ", max_file_mb=1)
    with pytest.raises(UnsupportedFileType):
        check_upload("README", b"text", max_file_mb=1)
