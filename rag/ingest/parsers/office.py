"""DOCX (``python-docx``) and PPTX (``python-pptx``), after the ZIP-bomb checks in ``safety``.

DOCX is one page; "Title" (level 1) and "Heading N" (level N, or N + 1 below a Title) paragraph
styles become headings; tables become one
line per row with cells joined by `` | ``. PPTX is one page per slide; the slide title is a
level-1 heading, followed by the other shapes' text in document order, then the speaker notes.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Iterator
from importlib.metadata import version

import docx
import pptx
from docx.table import Table
from docx.text.paragraph import Paragraph
from pptx.enum.shapes import MSO_SHAPE_TYPE
from pptx.slide import Slide

from rag.errors import LimitExceeded, ParseError
from rag.ingest.normalize import collapse_whitespace
from rag.ingest.parsers.builder import LINE, PARAGRAPH, TextBuilder
from rag.ingest.safety import open_zip
from rag.records import ParsedDocument

_HEADING_STYLE_RE = re.compile(r"heading\s*([1-9])", re.IGNORECASE)
# ZIP folder -> (what it is, the fix when a file of that kind arrives under another extension)
_FLAVORS = {
    "word/": ("a Word document", "Rename it to .docx and upload it again."),
    "ppt/": ("a PowerPoint deck", "Rename it to .pptx and upload it again."),
    "xl/": ("an Excel workbook", "Save the sheet as CSV and upload that."),
}


def parse_docx(name: str, data: bytes, max_pages: int) -> ParsedDocument:
    _check_flavor(name, data, "word/")
    document = docx.Document(io.BytesIO(data))
    items = [(item, _style_name(item) if isinstance(item, Paragraph) else "") for item in document.iter_inner_content()]
    # With a "Title" paragraph, "Heading N" sits one level below it, as "# Title" / "## Section" in Markdown.
    shift = int(any(style == "title" for _, style in items))
    builder = TextBuilder()
    for item, style in items:
        if isinstance(item, Paragraph):
            level = 1 if style == "title" else _heading_level(style, shift)
            builder.add(collapse_whitespace(item.text) if level else item.text, heading_level=level)
        elif isinstance(item, Table):
            _add_rows(builder, _docx_rows(item))
    return builder.build("python-docx", version("python-docx"), empty_message=f"'{name}' contains no text.")


def _style_name(paragraph: Paragraph) -> str:
    style = paragraph.style
    return (style.name or "").strip().lower() if style is not None else ""


def _heading_level(style: str, shift: int) -> int | None:
    match = _HEADING_STYLE_RE.fullmatch(style)
    return int(match.group(1)) + shift if match else None


def _docx_rows(table: Table) -> Iterator[list[str]]:
    for row in table.rows:
        cells, seen = [], set()
        for cell in row.cells:
            if id(cell._tc) not in seen:  # a merged cell repeats across the columns it spans
                seen.add(id(cell._tc))
                cells.append(cell.text)
        yield cells


def _add_rows(builder: TextBuilder, rows: Iterable[list[str]]) -> None:
    """One line per table row, cells joined by `` | ``; the first row starts a paragraph."""
    sep = PARAGRAPH
    for cells in rows:
        line = " | ".join(text for text in (collapse_whitespace(c) for c in cells) if text)
        if builder.add(line, sep=sep):
            sep = LINE


def parse_pptx(name: str, data: bytes, max_pages: int) -> ParsedDocument:
    _check_flavor(name, data, "ppt/")
    deck = pptx.Presentation(io.BytesIO(data))
    slides = deck.slides
    if len(slides) > max_pages:
        raise LimitExceeded(
            f"'{name}' has {len(slides)} slides, over the limit of {max_pages}.",
            fix="Split the deck into smaller files, or raise RAG_MAX_PAGES if you trust it.",
        )
    builder = TextBuilder()
    for slide in slides:
        builder.new_page()
        _add_slide(builder, slide)
    return builder.build("python-pptx", version("python-pptx"), empty_message=f"'{name}' has no text on any slide.")


def _add_slide(builder: TextBuilder, slide: Slide) -> None:
    title = slide.shapes.title
    title_id = title.shape_id if title is not None else None
    if title is not None and title.has_text_frame:
        builder.add(collapse_whitespace(title.text_frame.text), heading_level=1)
    for shape in _flat_shapes(slide.shapes):
        if shape.shape_id == title_id:
            continue
        if shape.has_text_frame:
            _add_paragraphs(builder, (p.text for p in shape.text_frame.paragraphs))
        elif getattr(shape, "has_table", False) and shape.has_table:
            rows = ([cell.text for cell in row.cells] for row in shape.table.rows)
            _add_rows(builder, rows)
    if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
        _add_paragraphs(builder, (p.text for p in slide.notes_slide.notes_text_frame.paragraphs))


def _flat_shapes(shapes: Iterable) -> Iterator:
    """Shapes in document order with groups expanded (iteratively: groups may nest deeply)."""
    stack = [iter(shapes)]
    while stack:
        shape = next(stack[-1], None)
        if shape is None:
            stack.pop()
        elif shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            stack.append(iter(shape.shapes))
        else:
            yield shape


def _add_paragraphs(builder: TextBuilder, paragraphs: Iterable[str]) -> None:
    """The paragraphs of one shape, one per line; the shape itself starts a paragraph."""
    sep = PARAGRAPH
    for text in paragraphs:
        if builder.add(text, sep=sep):
            sep = LINE


def _check_flavor(name: str, data: bytes, expected: str) -> None:
    """Check the ZIP is safe and really holds the expected Office format (a .docx may be a deck)."""
    with open_zip(name, data) as archive:
        names = archive.namelist()
    present = [prefix for prefix in _FLAVORS if any(n.startswith(prefix) for n in names)]
    if expected in present:
        return
    wanted = _FLAVORS[expected][0]
    if present:
        found, fix = _FLAVORS[present[0]]
        raise ParseError(f"'{name}' should be {wanted} but is {found}.", fix=fix)
    raise ParseError(f"'{name}' is a ZIP file but not {wanted}.")
