"""Assemble normalized blocks into one text with page and heading offsets."""

from __future__ import annotations

from rag.errors import EmptyDocument
from rag.ingest.normalize import normalize_block
from rag.records import Heading, PageSpan, ParsedDocument

NO_TEXT_FIX = "Check that this is the file you meant; if it should have text, export it again from its program."
PARAGRAPH = "\n\n"
LINE = "\n"


class TextBuilder:
    """Collects blocks page by page; ``build()`` returns the ``ParsedDocument``.

    Each block is normalized and stripped, then joined to the previous block with ``sep``
    (``PARAGRAPH`` or ``LINE``); the first block of a page always starts a paragraph. Page
    ``n`` spans from where its first block starts to where page ``n + 1`` starts, so the spans
    are contiguous and cover the text; a page without text gets a span of separators or none.
    """

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0
        self._page_starts: list[int] = []
        self._page_open = False  # no block added to the current page yet
        self._headings: list[Heading] = []

    def new_page(self) -> None:
        self._page_starts.append(self._length)
        self._page_open = True

    def add(self, text: str, *, sep: str = PARAGRAPH, heading_level: int | None = None) -> bool:
        """Add one block; returns False when it normalized to nothing and was skipped."""
        if not self._page_starts:
            self.new_page()
        block = normalize_block(text)
        if not block:
            return False
        if self._length:
            self._append(PARAGRAPH if self._page_open else sep)
        if self._page_open:
            self._page_starts[-1] = self._length
            self._page_open = False
        if heading_level is not None:
            self._headings.append(Heading(heading_level, block, self._length, self._length + len(block)))
        self._append(block)
        return True

    def _append(self, part: str) -> None:
        self._parts.append(part)
        self._length += len(part)

    @property
    def page_count(self) -> int:
        return len(self._page_starts)

    def build(
        self, parser: str, version: str, *, empty_message: str, empty_fix: str | None = NO_TEXT_FIX
    ) -> ParsedDocument:
        """The document; ``EmptyDocument(empty_message, empty_fix)`` when no block had text."""
        text = "".join(self._parts)
        if not text:
            raise EmptyDocument(empty_message, fix=empty_fix)
        starts = self._page_starts or [0]
        ends = [*starts[1:], len(text)]
        pages = tuple(PageSpan(i + 1, s, e) for i, (s, e) in enumerate(zip(starts, ends, strict=True)))
        return ParsedDocument(text, pages, tuple(self._headings), parser, version)


def single_page(text: str, headings: tuple[Heading, ...], parser: str, version: str, *, empty: str) -> ParsedDocument:
    """A one-page document from text that is already normalized (Markdown, TXT)."""
    if not text.strip():
        raise EmptyDocument(empty, fix=NO_TEXT_FIX)
    return ParsedDocument(text, (PageSpan(1, 0, len(text)),), headings, parser, version)
