"""The PDFium PDF parser on tiny PDFs made here: spaces, offsets, scans, bombs, threads (issue 15)."""

from __future__ import annotations

import base64
import io
import zlib
from concurrent.futures import ThreadPoolExecutor

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
from rag.records import PageSpan


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


# Two characters at least: PDFium reads a stack of one-character lines as one vertical word
# ("0" over "0" comes back "00"), a quirk of its layout analysis left as it is.
_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=2, max_size=12)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.lists(_WORD, min_size=1, max_size=6), max_size=4), min_size=1, max_size=3))
def test_drawn_lines_come_back_word_for_word(pages: list[list[list[str]]]) -> None:
    lines = [[" ".join(words) for words in page] for page in pages]
    if not any(lines):
        return  # a PDF without text is refused; test_documents_without_text covers that
    parsed = parse_file("p.pdf", make_pdf(lines))
    assert [parsed.text[p.start : p.end].split() for p in parsed.pages] == [
        [w for line in page for w in line.split()] for page in lines
    ]


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
