"""PDF: one page span per PDF page, text by PDFium (``pypdfium2``), with the page's structure.

PDFium places each glyph and inserts the spaces and line breaks its layout implies, so words set
with kerning or positioned glyph by glyph (LaTeX, most typesetters) keep their spaces; pypdf glued
them (issue 15; figures: docs/BENCHMARKS.md, "PDF text extraction"). Each page is read as lines
with their boxes (``pdf_lines``); then, over the whole document, running headers and footers are
dropped (``pdf_running``), headings come from the outline or else font sizes (``pdf_headings``)
and tables become one line per row (``pdf_tables``). A heading is one line of the text (a wrapped
title joined with spaces), a table a paragraph of its own, everything else keeps PDFium's lines.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from rag.errors import EmptyDocument, LimitExceeded, ParseError
from rag.ingest.parsers.builder import LINE, PARAGRAPH, TextBuilder
from rag.ingest.parsers.pdf_headings import Bookmark, HeadingMark, font_headings, outline_headings, read_outline
from rag.ingest.parsers.pdf_lines import LINE_END_HYPHEN, PdfLine, read_lines
from rag.ingest.parsers.pdf_running import remove_running_lines
from rag.ingest.parsers.pdf_streams import check_inflated_size
from rag.ingest.parsers.pdf_tables import find_tables
from rag.records import ParsedDocument

log = logging.getLogger(__name__)

PARSER = "pypdfium2"
# The wheel pins its PDFium build, so its version names both; "+structure" marks the reading with
# headings, tables and without running headers, so PDFs parsed before it are parsed again.
PARSER_VERSION = f"{pdfium.PYPDFIUM_INFO.version}+structure.1"
PASSWORD_FIX = "Remove the password (e.g. open it and 'Print to PDF' or save an unprotected copy) and upload that."
OCR_FIX = "Run OCR on it first (e.g. `ocrmypdf in.pdf out.pdf`) and upload the result."

# PDFium keeps global state and is not thread-safe (pypdfium2 docs, "Thread incompatibility"):
# Streamlit serves each session on its own thread, so every PDFium call goes through this lock.
PDFIUM_LOCK = threading.Lock()


@dataclass(frozen=True)
class Block:
    """One block of a page's text and how it joins the block before it."""

    text: str
    sep: str = LINE
    heading_level: int | None = None


@dataclass(frozen=True)
class PdfStructure:
    """Every page as blocks, and what the structure pass found (for ``rag bench parse``)."""

    pages: list[list[Block]]
    running_lines_removed: int
    headings_from: str  # "outline", "font sizes" or "" (none found)
    tables: int


def parse_pdf(name: str, data: bytes, max_pages: int) -> ParsedDocument:
    found, image_pages = read_structure(name, data, max_pages)
    builder = TextBuilder()
    for blocks in found.pages:
        builder.new_page()
        for block in blocks:
            builder.add(block.text, sep=block.sep, heading_level=block.heading_level)
    if image_pages:
        message = f"'{name}' has no text layer: {image_pages} of its {len(found.pages)} page(s) are images (a scan?)."
        return builder.build(PARSER, PARSER_VERSION, empty_message=message, empty_fix=OCR_FIX)
    return builder.build(
        PARSER,
        PARSER_VERSION,
        empty_message=f"'{name}' has {len(found.pages)} page(s) but no extractable text.",
        empty_fix=None,  # EmptyDocument's own fix: run OCR
    )


def read_structure(name: str, data: bytes, max_pages: int) -> tuple[PdfStructure, int]:
    """The document's structure, and how many pages draw images when no page has text."""
    check_inflated_size(name, data)  # outside the lock: pure Python, up to ~0.5 s on a 25 MB file
    with PDFIUM_LOCK:
        pdf = _open(name, data)
        try:
            pages = _page_lines(name, pdf, max_pages)
            bookmarks = read_outline(pdf)
            image_pages = 0 if any(pages) else _pages_with_images(pdf)
        finally:
            pdf.close()
    return structure(pages, bookmarks), image_pages


def page_texts(name: str, data: bytes, max_pages: int) -> list[str]:
    """The text of each page as ``parse_pdf`` indexes it, before normalization (``rag bench parse``)."""
    pages, _ = read_structure(name, data, max_pages)
    return ["".join((b.sep if i else "") + b.text for i, b in enumerate(blocks)) for blocks in pages.pages]


def structure(pages: list[list[PdfLine]], bookmarks: list[Bookmark]) -> PdfStructure:
    """Running lines out, headings marked, tables found: each page as the blocks to add."""
    running = remove_running_lines(pages)
    marks, source = outline_headings(running.pages, bookmarks), "outline"
    if not marks:
        marks, source = font_headings(running.pages), "font sizes"
    by_page: dict[int, dict[int, HeadingMark]] = {}
    for mark in marks:
        by_page.setdefault(mark.page, {})[mark.line] = mark
    blocks, tables = [], 0
    for number, lines in enumerate(running.pages):
        page_blocks, found = _page_blocks(lines, by_page.get(number, {}))
        blocks.append(page_blocks)
        tables += found
    return PdfStructure(blocks, len(running.removed), source if marks else "", tables)


def _page_blocks(lines: list[PdfLine], headings: dict[int, HeadingMark]) -> tuple[list[Block], int]:
    """A page's blocks: headings on a line of their own, tables as paragraphs, other lines as read."""
    tables = {t.first: t for start, end in _between(headings, len(lines)) for t in find_tables(lines[start:end], start)}
    blocks: list[Block] = []
    sep, i = LINE, 0
    while i < len(lines):
        if i in headings:
            mark = headings[i]
            title = " ".join(line.text.replace(LINE_END_HYPHEN, "-") for line in lines[i : i + mark.count])
            blocks.append(Block(title, sep, mark.level))
            sep, i = LINE, i + mark.count
        elif i in tables:
            rows = tables[i].lines()
            blocks.extend(
                Block(row.replace(LINE_END_HYPHEN, "-"), PARAGRAPH if k == 0 else LINE) for k, row in enumerate(rows)
            )
            sep, i = PARAGRAPH, tables[i].last + 1
        else:
            blocks.append(Block(lines[i].text.replace(LINE_END_HYPHEN, "-\n"), sep))
            sep, i = LINE, i + 1
    return blocks, len(tables)


def _between(headings: dict[int, HeadingMark], count: int) -> list[tuple[int, int]]:
    """The runs of line indexes between the heading lines of a page."""
    runs, start = [], 0
    for line in sorted(headings):
        runs.append((start, line))
        start = line + headings[line].count
    runs.append((start, count))
    return [(a, b) for a, b in runs if a < b]


def _open(name: str, data: bytes) -> pdfium.PdfDocument:
    """Open from memory (after ``check_inflated_size``). PDFium tries the empty user password
    itself, so owner-only locks open."""
    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        code = getattr(exc, "err_code", None)
        why = str(exc).rstrip(". ")  # PDFium's own sentence ends with '.': "(… Data format error)." not ".)."
        if code == pdfium_c.FPDF_ERR_PASSWORD:
            raise ParseError(f"'{name}' is password-protected.", fix=PASSWORD_FIX) from exc
        if code == pdfium_c.FPDF_ERR_SECURITY:
            raise ParseError(
                f"'{name}' is encrypted in a way that cannot be opened ({why}).", fix=PASSWORD_FIX
            ) from exc
        raise ParseError(f"'{name}' is not a readable PDF; it may be damaged or incomplete ({why}).") from exc


def _page_lines(name: str, pdf: pdfium.PdfDocument, max_pages: int) -> list[list[PdfLine]]:
    """Every page's lines; the page count is checked before any page is loaded."""
    count = len(pdf)
    if count > max_pages:
        raise LimitExceeded(
            f"'{name}' has {count} pages, over the limit of {max_pages}.",
            fix="Split the PDF into smaller files, or raise RAG_MAX_PAGES if you trust it.",
        )
    if count == 0:
        raise EmptyDocument(f"'{name}' has no pages.", fix="Re-export the PDF from its source program.")
    pages = [_one_page(pdf, index) for index in range(count)]
    while pages and pages[-1] is None:  # pages an inflated /Count claims but the page tree lacks
        pages.pop()
    if not pages:
        raise ParseError(f"'{name}': no page of this PDF could be read.")
    missing = [number for number, lines in enumerate(pages, start=1) if lines is None]
    if missing:
        log.warning("'%s': %d page(s) could not be read and stay empty: %s", name, len(missing), missing[:20])
    return [lines or [] for lines in pages]


def _one_page(pdf: pdfium.PdfDocument, index: int) -> list[PdfLine] | None:
    """Lines of one page; ``None`` when PDFium cannot load it (damaged, or not in the page tree)."""
    try:
        page = pdf[index]
    except pdfium.PdfiumError:
        return None
    try:
        textpage = page.get_textpage()
        try:
            return read_lines(textpage)
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
