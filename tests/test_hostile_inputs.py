"""Hostile and broken uploads: each ends in a typed ``RagError`` whose message says what to do."""

from __future__ import annotations

import io
import struct
import zipfile

import docx
import pptx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reportlab.lib import pdfencrypt
from reportlab.pdfgen import canvas

from rag.errors import EmptyDocument, LimitExceeded, ParseError, RagError, UnsafeInput, UnsupportedFileType
from rag.ingest.chunking import chunk_document
from rag.ingest.normalize import normalize_text
from rag.ingest.parsers import parse_file
from rag.ingest.safety import SUPPORTED_EXTENSIONS, ZIP_MAX_MEMBERS, check_upload, safe_name


def make_pdf(pages: int, encrypt: object = None, text: bool = True) -> bytes:
    buf = io.BytesIO()
    pdf = canvas.Canvas(buf, encrypt=encrypt)
    for number in range(1, pages + 1):
        if text:
            pdf.drawString(72, 760, f"Page {number} text.")
        pdf.showPage()
    pdf.save()
    return buf.getvalue()


def make_docx(*paragraphs: str) -> bytes:
    document = docx.Document()
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()


def make_pptx(slides: int, title: bool = True) -> bytes:
    deck = pptx.Presentation()
    for number in range(slides):
        slide = deck.slides.add_slide(deck.slide_layouts[0 if title else 6])
        if title:
            slide.shapes.title.text = f"Slide {number + 1}"
    buf = io.BytesIO()
    deck.save(buf)
    return buf.getvalue()


def make_zip(members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buf.getvalue()


def expect(error: type[RagError], name: str, data: bytes, **kwargs: int) -> RagError:
    """Parse and require exactly ``error``, with a non-empty fix in the message."""
    with pytest.raises(RagError) as caught:
        parse_file(name, data, **kwargs)
    assert type(caught.value) is error, f"{type(caught.value).__name__}: {caught.value}"
    assert caught.value.fix and caught.value.fix in str(caught.value)
    return caught.value


# --- broken containers -----------------------------------------------------------------------


def test_corrupt_pdf() -> None:
    err = expect(ParseError, "broken.pdf", b"%PDF-1.7\n" + bytes(range(256)) * 8)
    assert "re-export" in str(err)
    assert ".)." not in str(err) and ").." not in str(err)  # PDFium's own full stop is not doubled


def test_truncated_pdf() -> None:
    data = make_pdf(2)
    expect(ParseError, "half.pdf", data[: len(data) // 3])


@pytest.mark.parametrize("name", ["broken.docx", "broken.pptx"])
def test_corrupt_office_zip(name: str) -> None:
    err = expect(ParseError, name, b"PK\x03\x04" + bytes(range(256)) * 4)
    assert "damaged" in str(err)


def test_zip_without_office_content() -> None:
    expect(ParseError, "a.docx", make_zip({"readme.txt": b"hello"}))


def test_pptx_named_docx_says_rename() -> None:
    err = expect(ParseError, "deck.docx", make_pptx(1))
    assert "Rename it to .pptx" in str(err)


def test_damaged_member_inside_valid_zip() -> None:
    data = bytearray(make_docx("Some words in a paragraph. " * 50))
    start = data.find(b"word/document.xml") + 40  # inside the compressed body of that member
    data[start : start + 64] = bytes(64)
    expect(ParseError, "damaged.docx", bytes(data))


# --- encryption and page limits ----------------------------------------------------------------


def test_password_protected_pdf() -> None:
    err = expect(ParseError, "secret.pdf", make_pdf(1, encrypt="user-password"))
    assert "password" in str(err) and "Remove the password" in str(err)


def test_pdf_with_owner_password_only_still_opens() -> None:
    encryption = pdfencrypt.StandardEncryption("", ownerPassword="owner", canPrint=0)
    parsed = parse_file("restricted.pdf", make_pdf(1, encrypt=encryption))
    assert parsed.text == "Page 1 text."


def test_pdf_page_count_claim_is_not_trusted() -> None:
    data = make_pdf(2)
    assert data.count(b"/Count 2") == 1
    parsed = parse_file("liar.pdf", data.replace(b"/Count 2", b"/Count 1000000000"))
    assert parsed.page_count == 2
    assert parsed.text == "Page 1 text.\n\nPage 2 text."


def test_pdf_over_max_pages() -> None:
    err = expect(LimitExceeded, "long.pdf", make_pdf(5), max_pages=3)
    assert "5 pages" in str(err) and "RAG_MAX_PAGES" in str(err)


def test_pptx_over_max_pages() -> None:
    err = expect(LimitExceeded, "long.pptx", make_pptx(3), max_pages=2)
    assert "3 slides" in str(err)


# --- decompression bombs -----------------------------------------------------------------------


def test_zip_bomb_by_compression_ratio() -> None:
    data = make_zip({"[Content_Types].xml": b"<Types/>", "word/document.xml": bytes(6 * 1024 * 1024)})
    assert len(data) < 20_000
    err = expect(UnsafeInput, "bomb.docx", data)
    assert "ZIP bomb" in str(err)


def test_zip_bomb_by_declared_total_size() -> None:
    data = bytearray(make_zip({"ppt/presentation.xml": b"<p/>"}, method=zipfile.ZIP_STORED))
    central = data.rfind(b"PK\x01\x02")
    data[central + 24 : central + 28] = struct.pack("<I", 300 * 1024 * 1024)  # uncompressed size
    err = expect(UnsafeInput, "bomb.pptx", bytes(data))
    assert "200 MB" in str(err)


def test_zip_with_an_oversized_xml_part() -> None:
    data = bytearray(make_zip({"word/document.xml": b"<w/>"}, method=zipfile.ZIP_STORED))
    central = data.rfind(b"PK\x01\x02")
    data[central + 20 : central + 28] = struct.pack("<II", 1024 * 1024, 80 * 1024 * 1024)  # ratio 80, 80 MB
    err = expect(UnsafeInput, "huge.docx", bytes(data))
    assert "64 MB" in str(err) and "Split the document" in str(err)


def test_zip_with_too_many_members() -> None:
    members = {f"word/media/{i}.xml": b"" for i in range(ZIP_MAX_MEMBERS + 1)}
    expect(UnsafeInput, "many.docx", make_zip(members, method=zipfile.ZIP_STORED))


# --- pathological text ---------------------------------------------------------------------------


@pytest.mark.slow  # over a second of CPU
@pytest.mark.timeout(120)
def test_deeply_nested_html_does_not_recurse() -> None:
    depth = 100_000
    data = ("<html><body>" + "<div>" * depth + "deep text" + "</div>" * depth + "<p>after</p></body></html>").encode()
    assert parse_file("deep.html", data).text == "deep text\n\nafter"


@pytest.mark.timeout(120)
def test_ten_megabyte_single_line() -> None:
    data = b"lorem ipsum dolor sit amet " * 400_000  # 10.8 MB, no newline
    parsed = parse_file("line.txt", data)
    chunks = chunk_document(parsed)
    assert 10_000 < len(chunks) < 30_000
    assert chunks[-1].end == len(parsed.text.rstrip())
    assert all(c.text == parsed.text[c.start : c.end] and len(c.text) <= 800 for c in chunks)


@pytest.mark.timeout(120)
def test_megabytes_without_any_whitespace() -> None:
    parsed = parse_file("blob.txt", b"x" * 2_000_000)
    chunks = chunk_document(parsed)
    assert chunks[0].text == "x" * 800 and chunks[-1].end == 2_000_000


def test_nul_bytes_are_removed() -> None:
    assert parse_file("nul.txt", b"hel\x00lo\x00 world").text == "hello world"


def test_invalid_utf8_and_encoded_surrogates_are_replaced() -> None:
    data = "Grüße, café, naïve ".encode() * 5 + b"bad \xff\xfe byte \xed\xa0\x80 end"
    text = parse_file("bad.txt", data).text
    assert text.startswith("Grüße, café, naïve") and text.endswith("end")
    assert "\ufffd" in text


def test_rtl_and_zero_width_characters() -> None:
    data = (
        "pay\u200b\u200dment \u202egnp.exe\u202c \u05e9\u05dc\u05d5\u05dd \u0627\u0644\u0633\u0644\u0627\u0645".encode()
    )
    assert (
        parse_file("rtl.md", data).text
        == "payment gnp.exe \u05e9\u05dc\u05d5\u05dd \u0627\u0644\u0633\u0644\u0627\u0645"
    )


def test_binary_named_txt() -> None:
    err = expect(ParseError, "binary.txt", bytes(range(256)) * 16)
    assert "binary" in str(err)


def test_csv_cell_beyond_field_limit() -> None:
    err = expect(ParseError, "huge.csv", b'a,b\n"' + b"x" * 200_000 + b'",1\n')
    assert "upload as .txt" in str(err)


# --- names, sizes, lying extensions, empty documents ---------------------------------------------


def test_path_traversal_filename() -> None:
    assert safe_name("../../etc/passwd") == "passwd"
    with pytest.raises(UnsupportedFileType) as caught:
        check_upload("../../etc/passwd", b"root:x:0:0", max_file_mb=1)
    assert "'passwd'" in str(caught.value) and "../" not in str(caught.value)
    assert parse_file("../../etc/passwd.txt", b"root:x:0:0").text == "root:x:0:0"


@pytest.mark.parametrize("ext", sorted(SUPPORTED_EXTENSIONS))
def test_zero_byte_file(ext: str) -> None:
    err = expect(EmptyDocument, f"empty{ext}", b"")
    assert "0 bytes" in str(err)
    with pytest.raises(EmptyDocument):
        check_upload(f"empty{ext}", b"", max_file_mb=1)


def test_unknown_extension() -> None:
    expect(UnsupportedFileType, "tool.exe", b"MZ\x90\x00")


@pytest.mark.parametrize(
    ("name", "data", "looks_like"),
    [
        ("report.pdf", b"Just some plain text pretending.", "plain text"),
        ("report.docx", b"%PDF-1.4 fake", "a PDF"),
        ("report.pptx", b"<html><body>hi</body></html>", "plain text"),
        ("notes.txt", b"%PDF-1.7\n1 0 obj", "a PDF"),
        ("page.html", b"PK\x03\x04rest-of-zip", "a ZIP/Office file"),
        ("legacy.docx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(100), "legacy Office"),
    ],
)
def test_extension_that_lies_about_content(name: str, data: bytes, looks_like: str) -> None:
    err = expect(ParseError, name, data)
    assert looks_like in str(err) and "extension" in str(err)


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("scan.pdf", make_pdf(2, text=False)),
        ("blank.docx", make_docx("", "   ")),
        ("blank.pptx", make_pptx(2, title=False)),
        ("script.html", b"<html><script>alert(1)</script><style>p{}</style></html>"),
        ("blank.md", b"\n\n   \t\n"),
        ("zw.txt", "\u200b\u200c\ufeff\x00".encode()),
        ("cells.csv", b",,\n,,\n"),
    ],
)
def test_documents_without_text(name: str, data: bytes) -> None:
    expect(EmptyDocument, name, data)


def test_upload_over_size_limit() -> None:
    with pytest.raises(LimitExceeded) as caught:
        check_upload("big.pdf", b"%PDF-" + bytes(2 * 1024 * 1024), max_file_mb=1)
    assert "2.0 MB" in str(caught.value) and caught.value.fix in str(caught.value)


# --- fuzzing -------------------------------------------------------------------------------------

_PREFIXES = [b"", b"%PDF-1.7\n", b"PK\x03\x04", b"<html>", b"# ", b"a,b\n", b"\xef\xbb\xbf", b"\xff\xfe"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ext=st.sampled_from(sorted(SUPPORTED_EXTENSIONS)),
    prefix=st.sampled_from(_PREFIXES),
    body=st.binary(max_size=2048),
)
def test_random_bytes_raise_only_rag_errors(ext: str, prefix: bytes, body: bytes) -> None:
    try:
        parsed = parse_file(f"fuzz{ext}", prefix + body)
    except RagError as err:
        assert err.fix and err.fix in str(err)
        return
    assert parsed.text.strip() and normalize_text(parsed.text) == parsed.text
    assert parsed.pages[0].start == 0 and parsed.pages[-1].end == len(parsed.text)
    assert all(parsed.text[h.start : h.end] == h.title for h in parsed.headings)
    assert all(c.text == parsed.text[c.start : c.end] for c in chunk_document(parsed, chunk_size=50, overlap=10))


_VALID = {
    "seed.pdf": make_pdf(2),
    "seed.docx": make_docx("Hello world.", "Second paragraph."),
    "seed.pptx": make_pptx(1),
}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(_VALID)),
    edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.binary(min_size=1, max_size=16)), max_size=4),
)
def test_mutated_documents_raise_only_rag_errors(name: str, edits: list[tuple[float, bytes]]) -> None:
    data = bytearray(_VALID[name])
    for where, patch in edits:
        at = int(where * len(data))
        data[at : at + len(patch)] = patch
    try:
        parse_file(name, bytes(data))
    except RagError as err:
        assert err.fix and err.fix in str(err)
