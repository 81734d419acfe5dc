"""Heading-aware chunking of a ``ParsedDocument`` into ``ChunkSpan``s.

Rules, in order:

1. A chunk never crosses a page boundary.
2. Within a page, sections start at the line of each heading (the heading line belongs to its
   section, so it is retrievable); ``heading_path`` is the stack of enclosing heading titles,
   carried across pages. A section holding only its heading merges into a directly following
   deeper section ("# Policy" + "## Per diem ..." -> one section, path ("Policy", "Per diem")).
3. Sections longer than ``chunk_size`` characters are cut by a sliding window that ends at
   the last paragraph break, else sentence end (``. ! ?`` and CJK ``。！？；``), else line
   break, else whitespace, else CJK comma, in the second half of the window; consecutive
   chunks of a section share up to ``overlap`` characters (never more than a third of the
   window), starting at a paragraph, else sentence, else line, else word.
4. A window whose text exceeds ``max_tokens`` per ``token_len`` shrinks until it fits; the
   section's heading context (:func:`rag.records.context_header`, indexed with every chunk) is
   counted against that budget, so what is embedded fits the embedder's window too.
5. Chunks are trimmed of surrounding whitespace (``text == parsed.text[start:end]`` always)
   and whitespace-only chunks are dropped.

``idx`` counts chunks per *document* (0, 1, 2 ... in text order), so ``doc:rev:page:idx`` is
unique and sorts in reading order. Work is linear in the text length: every window advances
by at least two thirds of its own length.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import NamedTuple

from rag.records import ChunkSpan, Heading, ParsedDocument, context_header
from rag.text.script import CJK_WIDE

TokenLen = Callable[[str], int]

_CJK_RE = re.compile(f"[{CJK_WIDE}]")  # one model token each
_SENTENCE_END_RE = re.compile(
    "[.!?][\"'\u201d\u2019)\\]]*(?=\\s)|[\u3002\uff01\uff1f\uff1b][\"'\u201d\u2019\u300d\u300f)\\]]*"
)
_CLAUSE_END_RE = re.compile("[，、,：:]")
_SPACE_RE = re.compile(r"\s")
_NONSPACE_RE = re.compile(r"\S")
_ALNUM_RE = re.compile(r"[^\W_]")


def estimate_tokens(text: str) -> int:
    """Cheap token estimate: one per CJK character, one per four other characters."""
    cjk = len(_CJK_RE.findall(text))
    return cjk + (len(text) - cjk + 3) // 4


class _Section(NamedTuple):
    start: int
    end: int
    path: tuple[str, ...]
    level: int | None  # level of the heading that opens the section, None before the first
    heading_only: bool  # nothing but the heading line (and an underline)


def chunk_document(
    parsed: ParsedDocument,
    *,
    chunk_size: int = 800,
    overlap: int = 120,
    max_tokens: int = 256,
    token_len: TokenLen | None = None,
) -> list[ChunkSpan]:
    """Cut ``parsed`` into chunks (see the module docstring for the rules)."""
    if chunk_size < 1 or max_tokens < 1 or not 0 <= overlap < chunk_size:
        raise ValueError(
            f"need chunk_size >= 1, max_tokens >= 1 and 0 <= overlap < chunk_size; "
            f"got chunk_size={chunk_size}, overlap={overlap}, max_tokens={max_tokens}"
        )
    token_len = token_len or estimate_tokens
    window = _Window(parsed.text, chunk_size, overlap, token_len)
    chunks: list[ChunkSpan] = []
    for page, section in _sections(parsed):
        header = context_header(section.path)
        budget = max_tokens - (token_len(header + "\n\n") if header else 0)
        for start, end in window.spans(section.start, section.end, max(budget, (max_tokens + 1) // 2)):
            chunks.append(ChunkSpan(page, len(chunks), start, end, section.path, parsed.text[start:end]))
    return chunks


def _sections(parsed: ParsedDocument) -> Iterator[tuple[int, _Section]]:
    """(page number, section) in text order; the heading stack carries over page breaks."""
    headings = sorted(parsed.headings, key=lambda h: h.start)
    stack: list[Heading] = []
    next_heading = 0
    for page in parsed.pages:
        while next_heading < len(headings) and headings[next_heading].start < page.start:
            _push(stack, headings[next_heading])
            next_heading += 1
        sections: list[_Section] = []
        start, level = page.start, None
        while next_heading < len(headings) and headings[next_heading].start < page.end:
            heading = headings[next_heading]
            line_start = max(start, parsed.text.rfind("\n", page.start, heading.start) + 1)
            sections.append(_section(parsed.text, start, line_start, stack, level))
            _push(stack, heading)
            start, level = line_start, heading.level
            next_heading += 1
        sections.append(_section(parsed.text, start, page.end, stack, level))
        for section in _merge_heading_only(sections):
            yield page.page, section


def _push(stack: list[Heading], heading: Heading) -> None:
    while stack and stack[-1].level >= heading.level:
        stack.pop()
    stack.append(heading)


def _section(text: str, start: int, end: int, stack: list[Heading], level: int | None) -> _Section:
    heading_only = False
    if level is not None:
        line_end = text.find("\n", start, end)
        rest = text[line_end:end] if line_end >= 0 else ""
        heading_only = _ALNUM_RE.search(rest) is None
    return _Section(start, end, tuple(h.title for h in stack), level, heading_only)


def _merge_heading_only(sections: list[_Section]) -> list[_Section]:
    merged: list[_Section] = []
    for section in sections:
        if section.start >= section.end:
            continue
        prev = merged[-1] if merged else None
        if prev and prev.heading_only and prev.level is not None and (section.level or 0) > prev.level:
            merged[-1] = section._replace(start=prev.start)
        else:
            merged.append(section)
    return merged


class _Window:
    """The sliding window over one section of ``text``."""

    def __init__(self, text: str, size: int, overlap: int, token_len: TokenLen) -> None:
        self.text, self.size, self.overlap, self.token_len = text, size, overlap, token_len

    def spans(self, start: int, end: int, max_tokens: int) -> Iterator[tuple[int, int]]:
        """Trimmed, non-empty (start, end) spans covering every non-space character of the section."""
        pos = self._skip_space(start, end)
        while pos < end:
            cut = self._cut(pos, end, max_tokens)
            yield pos, self._trim_end(pos, cut)
            if cut >= end:
                return
            pos = self._skip_space(self._next_start(pos, cut), end)

    def _cut(self, pos: int, end: int, max_tokens: int) -> int:
        """End of the window starting at ``pos``, shrunk until its text fits ``max_tokens``."""
        limit = self.size
        while True:
            hi = min(pos + limit, end)
            cut = hi if hi == end else _boundary(self.text, pos + max(1, limit // 2), hi)
            tokens = self.token_len(self.text[pos:cut])
            if tokens <= max_tokens:
                return cut
            if cut - pos <= 1:
                raise ValueError(f"max_tokens={max_tokens} is smaller than one character ({tokens} tokens)")
            limit = max(1, min(cut - pos - 1, (cut - pos) * max_tokens * 9 // (tokens * 10)))

    def _next_start(self, pos: int, cut: int) -> int:
        """Start of the next window, inside the last ``overlap`` characters of this one.

        The earliest paragraph start there, else sentence start, else line start, else word start.
        """
        share = min(self.overlap, (cut - pos) // 3)
        if share <= 0:
            return cut
        lo = cut - share
        paragraph = self.text.find("\n\n", lo, cut)
        if 0 <= paragraph < cut - 2:
            return paragraph + 2
        for match in _SENTENCE_END_RE.finditer(self.text, lo, cut):
            if match.end() < cut:
                return match.end()
        line = self.text.find("\n", lo, cut)
        if 0 <= line < cut - 1:
            return line + 1
        space = _SPACE_RE.search(self.text, lo, cut)
        return space.end() if space else lo

    def _skip_space(self, pos: int, end: int) -> int:
        match = _NONSPACE_RE.search(self.text, pos, end)
        return match.start() if match else end

    def _trim_end(self, pos: int, cut: int) -> int:
        while cut > pos and self.text[cut - 1].isspace():
            cut -= 1
        return cut


def _boundary(text: str, lo: int, hi: int) -> int:
    """Best place to end a chunk within ``[lo, hi]``: paragraph, sentence, line, space, clause, hard."""
    paragraph = text.rfind("\n\n", lo, hi)
    if paragraph >= 0:
        return paragraph
    sentence = _last_match(_SENTENCE_END_RE, text, lo, hi)
    if sentence is not None:
        return sentence.end()
    line = text.rfind("\n", lo, hi)
    if line >= 0:
        return line
    space = _last_match(_SPACE_RE, text, lo, hi)
    if space is not None:
        return space.start()
    clause = _last_match(_CLAUSE_END_RE, text, lo, hi)
    return clause.end() if clause is not None else hi


def _last_match(pattern: re.Pattern[str], text: str, lo: int, hi: int) -> re.Match[str] | None:
    last = None
    for last in pattern.finditer(text, lo, hi):  # noqa: B007 - keep the final match
        pass
    return last
