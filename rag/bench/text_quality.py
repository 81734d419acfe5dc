"""What a PDF text extractor kept, measured on its per-page text (``python -m rag bench parse``).

Each measure is defined here once; docs/BENCHMARKS.md ("PDF text extraction") repeats them:

* glued words: whitespace-separated words holding an ASCII letter, of which those that hold a run
  of ``GLUED_LETTERS`` or more ASCII letters (no English word in ordinary use is that long, so
  such a run is words whose spaces were lost: "Forthelowlevelnetworkconfiguration");
* glued prose: the same, less identifiers: the run has a capital after its first letter
  ("PubkeyAuthentication", a file's own name in its footer) or the word holds ``/ : = @ _``
  (URLs, options, config keys), which are single words in the source too;
* replacement pages: pages whose text holds U+FFFD (a glyph the extractor could not map) or the
  noncharacters U+FFFE/U+FFFF (PDFium's raw mark for a line-end hyphen, which the parser replaces);
* CJK: CJK characters kept, and how many of them are followed by a space and another CJK
  character (a space CJK text never has: the reverse of gluing);
* headings kept: of the outline (bookmark) entries that point at a page, those whose title is a
  line of that page's text, section numbers aside (or two lines joined, for a wrapped title);
* bullets at line start: of the bullet glyphs in the text, those that begin a line (a list item
  kept as its own line, not run into the one before).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rag.ingest.normalize import normalize_block
from rag.text.script import CJK_LETTERS

GLUED_LETTERS = 19  # issue 15's measure: 4,970 such words (11%) in pypdf's text of a LaTeX manual
BULLETS = "•◦▪▫‣●○■□∙"
_LETTER_RE = re.compile("[A-Za-z]")
_GLUED_RE = re.compile(f"[A-Za-z]{{{GLUED_LETTERS},}}")
_CODE_RE = re.compile(r"[/:=@_]")
_BAD_CHAR_RE = re.compile("[\ufffd\ufffe\uffff]")
_CJK = CJK_LETTERS
_CJK_RE = re.compile(f"[{_CJK}]")
_CJK_SPACED_RE = re.compile(f"[{_CJK}] (?=[{_CJK}])")
_BULLET_RE = re.compile(f"[{BULLETS}]")
_LINE_BULLET_RE = re.compile(f"(?:^|\n)[{BULLETS}]")
# "1.2.3 ", "A.1 ", "IV. ", "Chapter 3 ", "第 3 章": numbering a heading line may carry and its outline title may not.
_NUMBER_RE = re.compile(
    r"^(?:(?:chapter|appendix|section|part)\s+)?(?:\d+|[a-z]|[ivxlc]+)(?:[.\-]\d+)*\.?\s+|^第\s*\d+\s*[章节部分]\s*"
)


@dataclass(frozen=True)
class TextStats:
    pages: int
    words: int
    glued: int
    glued_prose: int
    replacement_pages: int
    cjk: int
    cjk_spaced: int
    headings: int
    headings_kept: int
    bullets: int
    bullets_at_line_start: int

    @property
    def glued_rate(self) -> float:
        return self.glued / self.words if self.words else 0.0

    @property
    def glued_prose_rate(self) -> float:
        return self.glued_prose / self.words if self.words else 0.0


def text_stats(pages: Sequence[str], outline: Sequence[tuple[int, str]] = ()) -> TextStats:
    """The measures above over raw per-page texts; ``outline`` holds (0-based page, title) pairs."""
    texts = [normalize_block(page) for page in pages]
    words = [w for text in texts for w in text.split() if _LETTER_RE.search(w)]
    whole = "\n".join(texts)
    targets = [(page, title) for page, title in outline if 0 <= page < len(texts) and _key(title)]
    return TextStats(
        pages=len(texts),
        words=len(words),
        glued=sum(1 for w in words if _GLUED_RE.search(w)),
        glued_prose=sum(1 for w in words if is_glued_prose(w)),
        replacement_pages=sum(1 for page in pages if _BAD_CHAR_RE.search(page)),
        cjk=len(_CJK_RE.findall(whole)),
        cjk_spaced=len(_CJK_SPACED_RE.findall(whole)),
        headings=len(targets),
        headings_kept=sum(1 for page, title in targets if heading_kept(texts[page], title)),
        bullets=sum(len(_BULLET_RE.findall(text)) for text in texts),
        bullets_at_line_start=sum(len(_LINE_BULLET_RE.findall(text)) for text in texts),
    )


def is_glued_prose(word: str) -> bool:
    """A run of ``GLUED_LETTERS``+ letters in a word that is not an identifier (see the module doc)."""
    if _CODE_RE.search(word.rstrip(":")):
        return False
    return any(run[1:].islower() for run in _GLUED_RE.findall(word))


def heading_kept(page_text: str, title: str) -> bool:
    """``title`` is a line of ``page_text`` (or two adjacent lines), section numbers aside."""
    want = _key(title)
    lines = [line for line in page_text.split("\n") if line.strip()]
    pairs = [f"{a} {b}" for a, b in zip(lines, lines[1:], strict=False)]
    return any(_key(candidate) == want for candidate in [*lines, *pairs])


def _key(line: str) -> str:
    """Case-folded, spaces collapsed, leading section number removed."""
    text = " ".join(line.split()).casefold()
    return _NUMBER_RE.sub("", text, count=1).strip()
