"""PDF: one page span per PDF page, text by PDFium (``pypdfium2``). No headings (PDFs rarely tag them).

PDFium places each glyph and inserts the spaces and line breaks its layout implies, so words set
with kerning or positioned glyph by glyph (LaTeX, most typesetters) keep their spaces; pypdf glued
them (issue 15; figures: docs/BENCHMARKS.md, "PDF text extraction").
"""

from __future__ import annotations

import logging
import threading

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from rag.errors import EmptyDocument, LimitExceeded, ParseError
from rag.ingest.parsers.builder import TextBuilder
from rag.ingest.parsers.pdf_streams import check_inflated_size
from rag.records import ParsedDocument

log = logging.getLogger(__name__)

PARSER = "pypdfium2"
PARSER_VERSION = pdfium.PYPDFIUM_INFO.version  # the wheel pins its PDFium build, so this names both
PASSWORD_FIX = "Remove the password (e.g. open it and 'Print to PDF' or save an unprotected copy) and upload that."
OCR_FIX = "Run OCR on it first (e.g. `ocrmypdf in.pdf out.pdf`) and upload the result."

# PDFium joins a word broken by a hyphen at a line end and puts U+FFFE (a noncharacter) in place of
# "-" + line break ("abso\ufffelute"); it cannot tell a hyphenation from a real hyphen
# ("non-developers"), so the text gets back what the page shows: "abso-\nlute", as pypdf gave it.
LINE_END_HYPHEN = "\ufffe"

# PDFium keeps global state and is not thread-safe (pypdfium2 docs, "Thread incompatibility"):
# Streamlit serves each session on its own thread, so every PDFium call goes through this lock.
PDFIUM_LOCK = threading.Lock()


def parse_pdf(name: str, data: bytes, max_pages: int) -> ParsedDocument:
    check_inflated_size(name, data)  # outside the lock: pure Python, up to ~0.5 s on a 25 MB file
    with PDFIUM_LOCK:
        pdf = _open(name, data)
        try:
            texts = _page_texts(name, pdf, max_pages)
            image_pages = 0 if any(t.strip() for t in texts) else _pages_with_images(pdf)
        finally:
            pdf.close()
    builder = TextBuilder()
    for text in texts:
        builder.new_page()
        builder.add(text)
    if image_pages:
        message = f"'{name}' has no text layer: {image_pages} of its {len(texts)} page(s) are images (a scan?)."
        return builder.build(PARSER, PARSER_VERSION, empty_message=message, empty_fix=OCR_FIX)
    return builder.build(
        PARSER,
        PARSER_VERSION,
        empty_message=f"'{name}' has {len(texts)} page(s) but no extractable text.",
        empty_fix=None,  # EmptyDocument's own fix: run OCR
    )


def page_texts(name: str, data: bytes, max_pages: int) -> list[str]:
    """The raw text of each page, as ``parse_pdf`` reads it (for ``rag bench parse``)."""
    check_inflated_size(name, data)
    with PDFIUM_LOCK:
        pdf = _open(name, data)
        try:
            return _page_texts(name, pdf, max_pages)
        finally:
            pdf.close()


def _open(name: str, data: bytes) -> pdfium.PdfDocument:
    """Open from memory (after ``check_inflated_size``). PDFium tries the empty user password
    itself, so owner-only locks open."""
    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        code = getattr(exc, "err_code", None)
        if code == pdfium_c.FPDF_ERR_PASSWORD:
            raise ParseError(f"'{name}' is password-protected.", fix=PASSWORD_FIX) from exc
        if code == pdfium_c.FPDF_ERR_SECURITY:
            raise ParseError(
                f"'{name}' is encrypted in a way that cannot be opened ({exc}).", fix=PASSWORD_FIX
            ) from exc
        raise ParseError(f"'{name}' is not a readable PDF; it may be damaged or incomplete ({exc}).") from exc


def _page_texts(name: str, pdf: pdfium.PdfDocument, max_pages: int) -> list[str]:
    """Every page's text; the page count is checked before any page is loaded."""
    count = len(pdf)
    if count > max_pages:
        raise LimitExceeded(
            f"'{name}' has {count} pages, over the limit of {max_pages}.",
            fix="Split the PDF into smaller files, or raise RAG_MAX_PAGES if you trust it.",
        )
    if count == 0:
        raise EmptyDocument(f"'{name}' has no pages.", fix="Re-export the PDF from its source program.")
    texts = [_one_page(pdf, index) for index in range(count)]
    while texts and texts[-1] is None:  # pages an inflated /Count claims but the page tree lacks
        texts.pop()
    if not texts:
        raise ParseError(f"'{name}': no page of this PDF could be read.")
    missing = [number for number, text in enumerate(texts, start=1) if text is None]
    if missing:
        log.warning("'%s': %d page(s) could not be read and stay empty: %s", name, len(missing), missing[:20])
    return [text or "" for text in texts]


def _one_page(pdf: pdfium.PdfDocument, index: int) -> str | None:
    """Text of one page; ``None`` when PDFium cannot load it (damaged, or not in the page tree)."""
    try:
        page = pdf[index]
    except pdfium.PdfiumError:
        return None
    try:
        textpage = page.get_textpage()
        try:
            return textpage.get_text_range().replace(LINE_END_HYPHEN, "-\n")
        finally:
            textpage.close()
    finally:
        page.close()


def _pages_with_images(pdf: pdfium.PdfDocument) -> int:
    """How many pages draw an image: a PDF without text but with these is a scan that needs OCR."""
    found = 0
    for index in range(len(pdf)):
        try:
            page = pdf[index]
        except pdfium.PdfiumError:
            continue
        try:
            found += any(True for _ in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=2))
        finally:
            page.close()
    return found
