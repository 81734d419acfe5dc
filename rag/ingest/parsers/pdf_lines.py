"""One PDF page as lines with their place on the page, read from a PDFium text page.

PDFium's text (``FPDFText_GetText``) breaks lines with ``\\r\\n`` and has one character per
character index, so a line's characters are indexed by their offsets in that text. Each line
gets its box (from ``FPDFText_CountRects``/``GetRect``: one rectangle per run of glyphs, cheap)
and a size (the height of its first glyph's loose box: font size times any text matrix scale,
which ``FPDFText_GetFontSize`` ignores). A line whose runs leave a gap wider than
``CELL_GAP_EMS`` times that size is cut into cells at its wide gaps, unless every cell starts in
a monospaced font (code and program output align with spaces, not columns); ``pdf_tables`` turns
runs of such lines into tables.
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

# PDFium joins a word broken by a hyphen at a line end and puts U+FFFE (a noncharacter) in place of
# "-" + line break ("abso\ufffelute"); it cannot tell a hyphenation from a real hyphen
# ("non-developers"), so the text gets back what the page shows: "abso-\nlute", as pypdf gave it.
LINE_END_HYPHEN = "\ufffe"
_UNICODE_HYPHEN_MARK = 2  # what FPDFText_GetUnicode returns where FPDFText_GetText writes U+FFFE
# Word gaps are ~0.3 em and rarely pass 1 em in justified prose; table columns leave more.
CELL_GAP_EMS = 1.3
_FIXED_PITCH = 1  # PDF 32000-1, table 123: font descriptor flags
_BOLD_WEIGHT = 600
_MONOSPACED_NAMES = (b"courier", b"mono", b"consol", b"typewriter")
_LINE_BREAK_RE = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Cell:
    """Text between wide gaps of a line, and where it starts on the page."""

    text: str
    left: float
    bold: bool = False  # its first glyph's font is bold (weight 600+, or "Bold" in its name)


@dataclass(frozen=True)
class PdfLine:
    """A line of a page: its text, box (PDF points, y up) and size; ``cells`` when it has wide gaps."""

    text: str
    top: float
    bottom: float
    left: float
    size: float
    cells: tuple[Cell, ...] = ()


def page_text(textpage: pdfium.PdfTextPage) -> str:
    """The page's text with one character per PDFium character index (hyphen marks kept)."""
    text = textpage.get_text_range()
    count = textpage.count_chars()
    if len(text) == count:
        return text
    # GetText writes UTF-16, so a character outside the BMP takes two places there and one here.
    codes = (pdfium_c.FPDFText_GetUnicode(textpage.raw, i) for i in range(count))
    return "".join(LINE_END_HYPHEN if c == _UNICODE_HYPHEN_MARK else chr(c) for c in codes)


def read_lines(textpage: pdfium.PdfTextPage) -> list[PdfLine]:
    """The page's non-blank lines in PDFium's reading order."""
    text = page_text(textpage)
    lines, start = [], 0
    for match in [*_LINE_BREAK_RE.finditer(text), None]:
        end = match.start() if match else len(text)
        if text[start:end].strip():
            line = _line(textpage, text, start, end)
            if line is None:  # PDFium gave its characters no box: keep the text, placed as the line above
                above = lines[-1] if lines else PdfLine("", 0.0, 0.0, 0.0, 0.0)
                line = PdfLine(text[start:end].strip(), above.top, above.bottom, above.left, above.size)
            lines.append(line)
        start = match.end() if match else end
    return lines


def _line(textpage: pdfium.PdfTextPage, text: str, start: int, end: int) -> PdfLine | None:
    rects = _rects(textpage, start, end)
    if not rects:
        return None
    first = start + len(text[start:end]) - len(text[start:end].lstrip())
    size = _size(textpage, first) or (max(r[3] for r in rects) - min(r[1] for r in rects))
    line = PdfLine(
        text[start:end].strip(),
        top=max(r[3] for r in rects),
        bottom=min(r[1] for r in rects),
        left=min(r[0] for r in rects),
        size=size,
    )
    gap = CELL_GAP_EMS * size
    wide = [b for a, b in zip(rects, rects[1:], strict=False) if b[0] - a[2] > gap]
    if wide:
        cells = _cells(textpage, text, line, (start, end), wide)
        if len(cells) > 1:
            return PdfLine(line.text, line.top, line.bottom, line.left, line.size, cells)
    return line


def _rects(textpage: pdfium.PdfTextPage, start: int, end: int) -> list[tuple[float, float, float, float]]:
    """(left, bottom, right, top) of each run of glyphs in ``[start, end)`` (raw calls: hot loop)."""
    raw = textpage.raw
    left, top, right, bottom = (ctypes.c_double() for _ in range(4))
    refs = (ctypes.byref(left), ctypes.byref(top), ctypes.byref(right), ctypes.byref(bottom))
    rects = []
    for i in range(pdfium_c.FPDFText_CountRects(raw, start, end - start)):
        if pdfium_c.FPDFText_GetRect(raw, i, *refs):
            rects.append((left.value, bottom.value, right.value, top.value))
    return rects


def _size(textpage: pdfium.PdfTextPage, index: int) -> float:
    box = pdfium_c.FS_RECTF()
    if not pdfium_c.FPDFText_GetLooseCharBox(textpage.raw, index, box):
        return 0.0
    return abs(box.top - box.bottom)


def _cells(
    textpage: pdfium.PdfTextPage, text: str, line: PdfLine, span: tuple[int, int], wide: list
) -> tuple[Cell, ...]:
    """The line cut before each run of glyphs (``wide``: their rectangles) that follows a wide gap.

    The character starting a run is the one PDFium finds at the run's left edge, mid-height.
    """
    start, end = span
    cuts = [(start, line.left)]
    for left, bottom, _right, top in wide:
        at = pdfium_c.FPDFText_GetCharIndexAtPos(textpage.raw, left + 0.5, (bottom + top) / 2, 1.0, 1.0)
        if cuts[-1][0] < at < end:
            cuts.append((at, left))
    styles = [_style(textpage, at) for at, _ in cuts]
    if all(fixed for fixed, _ in styles):
        return ()  # code or program output: its columns are runs of spaces in a monospaced font
    stops = [*(at for at, _ in cuts[1:]), end]
    cells = (
        Cell(text[at:stop].strip(), left, bold) for (at, left), stop, (_, bold) in zip(cuts, stops, styles, strict=True)
    )
    return tuple(cell for cell in cells if cell.text)


def _style(textpage: pdfium.PdfTextPage, index: int) -> tuple[bool, bool]:
    """(monospaced, bold) for the character's font: flag 1 (FixedPitch) or name; weight or name.

    The standard 14 fonts carry no descriptor, so their flags say nothing: "Courier" is in the name.
    """
    flags = ctypes.c_int()
    name = ctypes.create_string_buffer(128)
    pdfium_c.FPDFText_GetFontInfo(textpage.raw, index, name, len(name), ctypes.byref(flags))
    bold = pdfium_c.FPDFText_GetFontWeight(textpage.raw, index) >= _BOLD_WEIGHT or b"bold" in name.value.lower()
    fixed = bool(flags.value & _FIXED_PITCH) or any(word in name.value.lower() for word in _MONOSPACED_NAMES)
    return fixed, bold
