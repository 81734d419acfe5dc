"""The PDFium PDF parser on tiny PDFs made here: spaces, offsets, scans, bombs, threads (issue 15);
headings from the outline or font sizes, running headers and footers, tables (issue 32)."""

from __future__ import annotations

import base64
import io
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image
from reportlab.lib.utils import ImageReader
from reportlab.pdfgen import canvas

from rag.errors import EmptyDocument, RagError, UnsafeInput
from rag.ingest.chunking import chunk_document
from rag.ingest.parsers import parse_file
from rag.ingest.parsers.pdf_streams import check_inflated_size
from rag.records import Heading, PageSpan


def make_pdf(pages: list[list[str]], raw_ops: str = "") -> bytes:
    buf = io.BytesIO()
    pdf = canvas.Canvas(buf)
    for lines in pages:
        pdf.setFont("Helvetica", 11)
        for i, line in enumerate(lines):
            pdf.drawString(72, 760 - 20 * i, line)
        if raw_ops:
            pdf._code.append(raw_ops)  # operators reportlab has no call for (TJ arrays)
        pdf.showPage()
    pdf.save()
    return buf.getvalue()


def raw_pdf(objects: list[bytes]) -> bytes:
    """A PDF from object bodies (object 1 is the catalog), with a correct cross-reference table."""
    out, offsets = bytearray(b"%PDF-1.7\n"), []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % at for at in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def stream(data: bytes, extra: bytes = b"") -> bytes:
    return b"<< /Length %d %s >>\nstream\n%s\nendstream" % (len(data), extra, data)


def one_page_pdf(contents: bytes) -> bytes:
    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
            contents,
        ]
    )


def deflate(size: int) -> bytes:
    """``size`` bytes of blank content operators, compressed (about 1000:1)."""
    packer = zlib.compressobj(9)
    chunk = b"q Q " * (1 << 18)  # 1 MB
    return b"".join(packer.compress(chunk) for _ in range(size // len(chunk))) + packer.flush()


# --- text and offsets ----------------------------------------------------------------------------


def test_words_positioned_by_tj_offsets_keep_their_spaces() -> None:
    """LaTeX sets a line as one TJ array whose negative offsets are the word gaps (no space glyphs)."""
    ops = "BT /F1 11 Tf 72 500 Td [(For)-333(the)-333(low)-333(level)-333(network)-333(configuration)] TJ ET"
    parsed = parse_file("tex.pdf", make_pdf([["Title line"]], raw_ops=ops))
    assert parsed.text == "Title line\nFor the low level network configuration"


def test_hyphen_at_a_line_end_is_kept_with_its_line_break() -> None:
    """PDFium gives "abso\ufffelute"; the text says what the page shows (a real hyphen looks the same)."""
    parsed = parse_file("hyphen.pdf", make_pdf([["The measured abso-", "lute intent, non-", "developers too."]]))
    assert parsed.text == "The measured abso-\nlute intent, non-\ndevelopers too."


def test_page_spans_and_chunk_offsets_are_exact() -> None:
    pages = [["Travel policy", "Economy class up to 6 hours."], [], ["Hotels: USD 320 per night."]]
    parsed = parse_file("policy.pdf", make_pdf(pages))
    assert parsed.text == "Travel policy\nEconomy class up to 6 hours.\n\nHotels: USD 320 per night."
    assert parsed.pages == (PageSpan(1, 0, 42), PageSpan(2, 42, 44), PageSpan(3, 44, 70))
    assert parsed.text[44:70] == "Hotels: USD 320 per night."
    for chunk in chunk_document(parsed, chunk_size=30, overlap=5):
        assert chunk.text == parsed.text[chunk.start : chunk.end]
        assert parsed.pages[chunk.page - 1].start <= chunk.start < chunk.end <= parsed.pages[chunk.page - 1].end


# Two pages at most: three pages starting with the same line have a running header (tested below).
# Two characters at least: PDFium reads a stack of one-character lines as one vertical word
# ("0" over "0" comes back "00"), a quirk of its layout analysis left as it is.
_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=2, max_size=12)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.lists(_WORD, min_size=1, max_size=6), max_size=4), min_size=1, max_size=2))
def test_drawn_lines_come_back_word_for_word(pages: list[list[list[str]]]) -> None:
    lines = [[" ".join(words) for words in page] for page in pages]
    if not any(lines):
        return  # a PDF without text is refused; test_documents_without_text covers that
    parsed = parse_file("p.pdf", make_pdf(lines))
    assert [parsed.text[p.start : p.end].split() for p in parsed.pages] == [
        [w for line in page for w in line.split()] for page in lines
    ]


# --- structure: headings, running headers and footers, tables (issue 32) ---------------------------


@dataclass(frozen=True)
class Text:
    x: float
    y: float
    text: str
    size: float = 10
    font: str = "Helvetica"


@dataclass(frozen=True)
class Mark:
    """An outline entry: ``level`` 0 is the top, ``y`` the height it points at."""

    level: int
    title: str
    page: int
    y: float


def layout_pdf(pages: list[list[Text]], outline: list[Mark] = ()) -> bytes:
    buf = io.BytesIO()
    pdf = canvas.Canvas(buf)
    for number, items in enumerate(pages):
        for item in items:
            pdf.setFont(item.font, item.size)
            pdf.drawString(item.x, item.y, item.text)
        for n, mark in enumerate(outline):
            if mark.page == number:
                pdf.bookmarkPage(f"m{n}", fit="XYZ", top=mark.y)
                pdf.addOutlineEntry(mark.title, f"m{n}", level=mark.level)
        pdf.showPage()
    pdf.save()
    return buf.getvalue()


def column(lines: list[str], top: float = 760, size: float = 10, x: float = 72) -> list[Text]:
    return [Text(x, top - 16 * i, line, size) for i, line in enumerate(lines)]


def headings(parsed) -> list[tuple[int, str]]:
    assert all(parsed.text[h.start : h.end] == h.title for h in parsed.headings)
    return [(h.level, h.title) for h in parsed.headings]


def test_outline_bookmarks_become_headings_at_their_lines() -> None:
    """Same font size everywhere: only the outline can tell the headings; numbers before titles allowed."""
    pages = [
        column(["1 Travel", "Book trips in Tripwise.", "1.1 Flights", "Economy up to 6 hours."]),
        column(["Flights over 10 hours may be business class.", "1.2 Hotels and long-stay", "apartments"])
        + column(["Standard rooms in business hotels."], top=700),
        column(["2 Expenses", "Claims are due within 30 days."]),
    ]
    outline = [
        Mark(0, "Travel", 0, 772),
        Mark(1, "Flights", 0, 740),
        Mark(1, "Hotels and long-stay apartments", 1, 748),
        Mark(1, "A bookmark whose title is on no line", 1, 700),
        Mark(0, "Expenses", 2, 772),
    ]
    parsed = parse_file("handbook.pdf", layout_pdf(pages, outline))
    assert headings(parsed) == [
        (1, "1 Travel"),
        (2, "1.1 Flights"),
        (2, "1.2 Hotels and long-stay apartments"),  # a wrapped title is one line of the text
        (1, "2 Expenses"),
    ]
    page2 = parsed.text[parsed.pages[1].start : parsed.pages[1].end]
    assert page2 == (
        "Flights over 10 hours may be business class.\n1.2 Hotels and long-stay apartments\n"
        "Standard rooms in business hotels.\n\n"
    )
    chunks = chunk_document(parsed)
    assert [(c.page, c.heading_path, c.text.splitlines()[0]) for c in chunks] == [
        (1, ("1 Travel",), "1 Travel"),
        (1, ("1 Travel", "1.1 Flights"), "1.1 Flights"),
        (2, ("1 Travel", "1.1 Flights"), "Flights over 10 hours may be business class."),
        (2, ("1 Travel", "1.2 Hotels and long-stay apartments"), "1.2 Hotels and long-stay apartments"),
        (3, ("2 Expenses",), "2 Expenses"),
    ]
    assert all(c.text == parsed.text[c.start : c.end] for c in chunks)


def test_a_bookmark_takes_the_matching_line_nearest_its_height_and_a_chapter_label_above() -> None:
    lines = ["Chapter 3", "Summary", "The summary below lists the caps.", "Summary", "Caps are per night."]
    page = [Text(72, y, text) for text, y in zip(lines, [760, 740, 720, 600, 580], strict=True)]
    parsed = parse_file("report.pdf", layout_pdf([page], [Mark(0, "Summary", 0, 612)]))
    assert parsed.headings == (Heading(1, "Summary", parsed.text.rindex("Summary"), parsed.text.rindex("Summary") + 7),)
    labelled = parse_file("report.pdf", layout_pdf([page], [Mark(0, "Summary", 0, 770)]))
    assert headings(labelled) == [(1, "Chapter 3 Summary")]


def test_without_an_outline_larger_type_makes_headings_by_size() -> None:
    body = ["Every trip needs approval in Ledgerly.", "Managers approve domestic trips.", "Directors approve the rest."]
    page = (
        [Text(72, 780, "Travel Policy", 18), Text(72, 750, "Approvals", 14)]
        + column(body * 2, top=730)
        + [Text(72, 620, "Booking", 14), Text(72, 590, "A line in large type that ends like a sentence.", 14)]
        + column(body * 2, top=570)
    )
    parsed = parse_file("policy.pdf", layout_pdf([page]))
    assert headings(parsed) == [(1, "Travel Policy"), (2, "Approvals"), (2, "Booking")]
    paths = {c.heading_path for c in chunk_document(parsed, chunk_size=60, overlap=0)}
    assert paths == {("Travel Policy", "Approvals"), ("Travel Policy", "Booking")}  # the title line joins "Approvals"


def running_pages(count: int) -> list[list[Text]]:
    """Pages with a running header, a footer and a page number, and body text of varying length."""
    pages = []
    for n in range(1, count + 1):
        body = [f"Section {n} text line {i}." for i in range(n)] + [f"Total: {n} items."]
        header = [Text(72, 810, f"Acme Handbook {n} / {count}", 8)]
        footer = [Text(72, 40, "Confidential - internal use", 8), Text(300, 20, str(n), 8)]
        pages.append(footer + header + column(body))
    return pages


def test_running_headers_footers_and_page_numbers_are_removed() -> None:
    """Footers are drawn first here (read first), but they stand at the page's foot: position decides.
    The last body line repeats too ("Total: N items.") but at a different height on every page: kept."""
    parsed = parse_file("handbook.pdf", layout_pdf(running_pages(4)))
    pages = [parsed.text[p.start : p.end].strip() for p in parsed.pages]
    assert pages == [
        "Section 1 text line 0.\nTotal: 1 items.",
        "Section 2 text line 0.\nSection 2 text line 1.\nTotal: 2 items.",
        "Section 3 text line 0.\nSection 3 text line 1.\nSection 3 text line 2.\nTotal: 3 items.",
        "Section 4 text line 0.\nSection 4 text line 1.\nSection 4 text line 2.\nSection 4 text line 3.\n"
        "Total: 4 items.",
    ]


def test_two_pages_keep_their_repeated_lines() -> None:
    parsed = parse_file("letter.pdf", layout_pdf(running_pages(2)))
    assert parsed.text.count("Acme Handbook") == 2 and parsed.text.count("Confidential") == 2


TABLE = [
    ("City", "Tier", "Nightly cap"),
    ("London", "A", "USD 320"),
    ("Dublin", "B", "USD 230, or USD 260"),
    ("", "", "during trade fairs"),  # the third cell of Dublin's row wraps
    ("Elsewhere", "C", "USD 180"),
]


def table_page(header_font: str = "Helvetica-Bold") -> list[Text]:
    items = [Text(72, 760, "Hotel caps by city are listed below.")]
    for i, row in enumerate(TABLE):
        font = header_font if i == 0 else "Helvetica"
        items += [Text(x, 730 - 16 * i, cell, font=font) for x, cell in zip((72, 200, 330), row, strict=True) if cell]
    return [*items, Text(72, 630, "Rates above the cap need approval.")]


def test_table_rows_become_lines_of_cells_in_a_paragraph_of_their_own() -> None:
    parsed = parse_file("caps.pdf", layout_pdf([table_page()]))
    assert parsed.text == (
        "Hotel caps by city are listed below.\n\n"
        "City | Tier | Nightly cap\n"
        "City: London | Tier: A | Nightly cap: USD 320\n"
        "City: Dublin | Tier: B | Nightly cap: USD 230, or USD 260 during trade fairs\n"
        "City: Elsewhere | Tier: C | Nightly cap: USD 180\n\n"
        "Rates above the cap need approval."
    )
    chunks = chunk_document(parsed, chunk_size=120, overlap=0)
    assert [c.text.splitlines()[0] for c in chunks] == [
        "Hotel caps by city are listed below.",
        "City: Dublin | Tier: B | Nightly cap: USD 230, or USD 260 during trade fairs",
        "City: Elsewhere | Tier: C | Nightly cap: USD 180",
    ]  # chunks cut inside the table at row ends, and a row read alone still names its columns


def test_a_header_with_an_empty_cell_labels_nothing() -> None:
    rows = [("Mode", "", "Action"), ("NORMAL", ":w", "write the buffer"), ("INSERT", "Esc", "leave the mode")]
    page = [
        Text(x, 760 - 16 * i, cell)
        for i, row in enumerate(rows)
        for x, cell in zip((72, 200, 330), row, strict=True)
        if cell
    ]
    parsed = parse_file("vim.pdf", layout_pdf([page]))
    assert parsed.text == "Mode | Action\nNORMAL | :w | write the buffer\nINSERT | Esc | leave the mode"


def test_aligned_program_output_in_a_monospaced_font_is_not_a_table() -> None:
    lines = [("$ ln foo bar", "# hard link"), ("$ ln -s foo baz", "# symlink"), ("$ ls -li", "# inodes")]
    page = [
        Text(x, 760 - 12 * i, text, font="Courier")
        for i, row in enumerate(lines)
        for x, text in zip((72, 220), row, strict=True)
    ]
    parsed = parse_file("shell.pdf", layout_pdf([page]))
    assert "|" not in parsed.text and parsed.text.splitlines()[0].startswith("$ ln foo bar")


def test_one_line_with_a_wide_gap_is_not_a_table() -> None:
    page = [Text(72, 760, "Owner:"), Text(250, 760, "Finance"), Text(72, 740, "Reviewed every year.")]
    parsed = parse_file("memo.pdf", layout_pdf([page]))
    assert parsed.text == "Owner: Finance\nReviewed every year."


# --- documents that cannot be indexed ------------------------------------------------------------


def test_image_only_pdf_says_it_has_no_text_layer_and_needs_ocr() -> None:
    buf = io.BytesIO()
    pdf = canvas.Canvas(buf)
    for _ in range(2):
        pdf.drawImage(ImageReader(Image.new("L", (120, 60), 200)), 72, 600, 240, 120)
        pdf.showPage()
    pdf.save()
    with pytest.raises(EmptyDocument) as caught:
        parse_file("scan.pdf", buf.getvalue())
    message = str(caught.value)
    assert "no text layer" in message and "2 of its 2 page(s) are images" in message and "OCR" in message


def test_inflated_page_count_claim_keeps_the_real_pages() -> None:
    """PDFium trusts /Count below 2^20; the pages it cannot find past the real ones are dropped."""
    data = make_pdf([["Page one."], ["Page two."]])
    parsed = parse_file("liar.pdf", data.replace(b"/Count 2", b"/Count 1000"))
    assert parsed.page_count == 2 and parsed.text == "Page one.\n\nPage two."


# --- decompression bombs -------------------------------------------------------------------------


def test_flate_bomb_is_refused_before_pdfium_inflates_it() -> None:
    data = one_page_pdf(stream(deflate(300 << 20), b"/Filter /FlateDecode"))
    assert len(data) < 400_000
    with pytest.raises(UnsafeInput) as caught:
        parse_file("bomb.pdf", data)
    assert "256 MB" in str(caught.value) and "decompression bomb" in str(caught.value)


@pytest.mark.parametrize(
    ("encode", "filters"),
    [
        (lambda z: zlib.compress(z), b"[/FlateDecode /FlateDecode]"),
        (lambda z: base64.a85encode(z, adobe=True)[2:], b"[/ASCII85Decode /FlateDecode]"),
        (lambda z: z.hex().encode() + b">", b"[/AHx /Fl]"),
    ],
)
def test_bomb_behind_a_second_filter_is_measured(encode, filters: bytes) -> None:
    data = one_page_pdf(stream(encode(deflate(8 << 20)), b"/Filter " + filters))
    assert check_inflated_size("ok.pdf", data) >= 8 << 20
    with pytest.raises(UnsafeInput):
        check_inflated_size("bomb.pdf", data, limit=4 << 20)


def test_endstream_hidden_in_the_data_does_not_end_the_scan() -> None:
    body = zlib.compress(b"q Q " * (1 << 20), 9)
    hidden = b"x\x01" + b"\x00\x09\x00\xf6\xffendstream" + body[2:]  # a stored deflate block holding "endstream"
    data = one_page_pdf(stream(hidden, b"/Filter /FlateDecode"))
    with pytest.raises(UnsafeInput):
        check_inflated_size("sly.pdf", data, limit=1 << 20)


def test_image_streams_are_not_counted() -> None:
    image = stream(deflate(8 << 20), b"/Subtype /Image /Filter /FlateDecode")
    assert check_inflated_size("scan.pdf", one_page_pdf(image), limit=1 << 20) == 0


# --- threads -------------------------------------------------------------------------------------


def test_parallel_parses_are_serialized_and_agree() -> None:
    files = [make_pdf([[f"Document {n} page {p}." for p in range(3)]] * 3) for n in range(4)]
    expected = [parse_file(f"d{n}.pdf", data).text for n, data in enumerate(files)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(lambda n: parse_file(f"d{n % 4}.pdf", files[n % 4]).text, range(24)))
    assert got == [expected[n % 4] for n in range(24)]


def test_errors_stay_typed() -> None:
    with pytest.raises(RagError):
        parse_file("x.pdf", one_page_pdf(stream(b"garbage", b"/Filter /FlateDecode")))
