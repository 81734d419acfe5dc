"""Safe display of document text: HTML escaping first, then ``<mark>`` highlighting of spans.

Everything a page shows from a document, a filename or a model passes through here.
``highlight`` cuts the *raw* text at the span offsets, escapes every piece, and only then
joins them with ``<mark>`` tags (and ``<span class="rs-term">`` for matched query terms), so no
character of the input can ever become markup.
``md_escape`` does the same job for Markdown contexts (captions, labels, answers).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from rag.store.tokenize import token_spans

MARK_STYLE = "background:#ffe58a;color:inherit;padding:0 1px;border-radius:2px"
# a matched query term: underlined, a mark of its own beside the cited spans' fill
TERM_STYLE = "background:transparent;color:inherit;border-bottom:2px solid #2563eb;padding:0"
NEIGHBOUR_STYLE = "opacity:.6"
PASSAGE_STYLE = (
    "white-space:pre-wrap;font-family:inherit;font-size:.92rem;line-height:1.5;"
    "border-left:3px solid #c9d3e0;padding:.4rem .8rem;margin:.2rem 0 .6rem 0"
)
_MD_SPECIAL = re.compile(r"([\\`*_\[\]{}()<>#+\-.!|~$:^=&])")
# A Markdown heading's marker at a line start ("### "): source text shows the heading, not the marker.
HEADING_MARK = re.compile(r"(?m)^[ \t]{0,3}#{1,6}[ \t]+(?=\S)")


class Span(NamedTuple):
    """A highlighted stretch ``text[start:end]``; ``label`` names it (e.g. the citation number)."""

    start: int
    end: int
    label: str = ""


class Excerpt(NamedTuple):
    """A window of a longer text around some spans, with the spans moved into it."""

    text: str
    spans: tuple[Span, ...]
    cut_before: bool
    cut_after: bool


def escape(text: str) -> str:
    """HTML-escape ``text`` (quotes included); ``None`` becomes ''."""
    return html.escape(text or "", quote=True)


def md_escape(text: str) -> str:
    """Text that Streamlit Markdown shows literally: no markup, links, math, HTML or emoji codes."""
    return _MD_SPECIAL.sub(r"\\\1", str(text or "")).replace("\n", "  \n")


def merge_spans(spans: Iterable[Span], length: int) -> list[Span]:
    """Clamp spans to ``[0, length]``, drop empty ones, and merge overlaps (labels joined)."""
    clean = sorted(
        (Span(max(0, s.start), min(length, s.end), s.label) for s in spans if min(length, s.end) > max(0, s.start)),
        key=lambda s: (s.start, s.end),
    )
    merged: list[Span] = []
    for s in clean:
        if merged and s.start <= merged[-1].end:
            last = merged[-1]
            labels = [x for x in dict.fromkeys((*last.label.split(","), *s.label.split(","))) if x]
            merged[-1] = Span(last.start, max(last.end, s.end), ",".join(labels))
        else:
            merged.append(s)
    return merged


def highlight(text: str, spans: Iterable[Span] = (), terms: Iterable[Span] = ()) -> str:
    """``text`` as HTML with every span wrapped in ``<mark>`` and every matched query term outside
    them underlined (``<span class="rs-term">``); all text escaped before marking up. A cited span
    keeps its text whole, so the quote reads, copies and searches as one piece."""
    text = text or ""
    words = merge_spans(terms, len(text))
    out, pos = [], 0
    for s in merge_spans(spans, len(text)):
        out.append(_terms_html(text, pos, s.start, words))
        title = f' title="[{escape(s.label)}]"' if s.label else ""
        out.append(f'<mark style="{MARK_STYLE}"{title}>{escape(text[s.start : s.end])}</mark>')
        pos = s.end
    out.append(_terms_html(text, pos, len(text), words))
    return "".join(out)


def _terms_html(text: str, lo: int, hi: int, words: Sequence[Span]) -> str:
    """``text[lo:hi]`` escaped, with the parts of ``words`` (merged spans) inside it underlined."""
    out, pos = [], lo
    for w in words:
        start, end = max(w.start, pos), min(w.end, hi)
        if end <= start:
            continue
        title = f' title="BM25 term: {escape(w.label)}"' if w.label else ""
        out.append(escape(text[pos:start]))
        out.append(f'<span class="rs-term" style="{TERM_STYLE}"{title}>{escape(text[start:end])}</span>')
        pos = end
    out.append(escape(text[pos:hi]))
    return "".join(out)


def term_spans(text: str, terms: Iterable[str]) -> list[Span]:
    """Where the BM25 ``terms`` (stemmed, or jieba words) occur in ``text``, each labelled with
    the word as ``text`` writes it (lower-cased): "above", never the stem "abov"."""
    wanted = set(terms)
    return [Span(start, end, text[start:end].lower()) for term, start, end in token_spans(text or "") if term in wanted]


def as_written(terms: Iterable[str], *texts: str) -> dict[str, str]:
    """``BM25 term -> the word as written`` in the first of ``texts`` that has it (pass the
    question first: the user's own word), lower-cased; a term none of them has stays as it is."""
    wanted = set(terms)
    words: dict[str, str] = {}
    for text in texts:
        for term, start, end in token_spans(text or ""):
            if term in wanted and term not in words:
                words[term] = text[start:end].lower()
    return {term: words.get(term, term) for term in wanted}


def excerpt(text: str, spans: Sequence[Span], context: int = 240) -> Excerpt:
    """The part of ``text`` from ``context`` characters before the first span to as many after the last."""
    live = merge_spans(spans, len(text or ""))
    if not live:
        body = (text or "")[: 2 * context]
        return Excerpt(body, (), False, len(text or "") > len(body))
    lo = _snap_back(text, max(0, live[0].start - context), live[0].start)
    hi = _snap_forward(text, min(len(text), live[-1].end + context), live[-1].end)
    moved = tuple(Span(s.start - lo, s.end - lo, s.label) for s in live)
    return Excerpt(text[lo:hi], moved, lo > 0, hi < len(text))


def _snap_back(text: str, lo: int, limit: int) -> int:
    """Move a window start forward to just after a line break or space (never past ``limit``)."""
    if lo == 0:
        return 0
    for sep in ("\n", " "):
        cut = text.find(sep, lo, limit)
        if cut != -1:
            return cut + 1
    return lo


def _snap_forward(text: str, hi: int, limit: int) -> int:
    """Move a window end back to a line break or space (never before ``limit``)."""
    if hi >= len(text):
        return len(text)
    for sep in ("\n", " "):
        cut = text.rfind(sep, limit, hi)
        if cut != -1:
            return cut
    return hi


def _shift(cuts: Sequence[tuple[int, int]], pos: int) -> int:
    """Where ``pos`` lands once the ``cuts`` (sorted ``[start, end)`` ranges) are removed."""
    moved = pos
    for start, end in cuts:
        if pos >= end:
            moved -= end - start
        elif pos > start:
            moved -= pos - start
    return moved


def strip_heading_marks(text: str, *span_lists: Iterable[Span]) -> tuple[str, ...]:
    """``text`` without Markdown heading markers at line starts, then each of ``span_lists``
    moved to match (as lists)."""
    text = text or ""
    cuts = [m.span() for m in HEADING_MARK.finditer(text)]
    pieces, pos = [], 0
    for start, end in cuts:
        pieces.append(text[pos:start])
        pos = end
    pieces.append(text[pos:])
    moved = [[Span(_shift(cuts, x.start), _shift(cuts, x.end), x.label) for x in spans] for spans in span_lists]
    return ("".join(pieces), *moved)


def plain_text(text: str) -> str:
    """Source text as a reader sees it: heading markers dropped (see :func:`strip_heading_marks`)."""
    return strip_heading_marks(text)[0]


def passage_html(
    text: str,
    spans: Iterable[Span] = (),
    dim: bool = False,
    cut: tuple[bool, bool] = (False, False),
    terms: Iterable[Span] = (),
) -> str:
    """A block of source text with highlighted spans (and matched terms), ready for ``st.html``;
    Markdown heading markers are not shown."""
    text, spans, terms = strip_heading_marks(text, spans, terms)
    style = PASSAGE_STYLE + (";" + NEIGHBOUR_STYLE if dim else "")
    before = "… " if cut[0] else ""
    after = " …" if cut[1] else ""
    return f'<div class="rs-passage" style="{style}">{before}{highlight(text, spans, terms)}{after}</div>'


SOURCE_DELETED = "source deleted"


def deleted_html() -> str:
    """What stands where a deleted document's passage was (its text is gone from the catalog)."""
    return passage_html(f"{SOURCE_DELETED}: this document was deleted, so its text is no longer kept.", dim=True)


def excerpt_html(text: str, spans: Sequence[Span], context: int = 240) -> str:
    """``passage_html`` of the window around ``spans``."""
    ex = excerpt(text, spans, context)
    return passage_html(ex.text, ex.spans, cut=(ex.cut_before, ex.cut_after))


def breadcrumb(doc: str, page: int | None = None, heading_path: Sequence[str] = ()) -> str:
    """``doc · p. 3 · A › B`` escaped for Markdown."""
    parts = [f"**{md_escape(doc)}**"]
    if page:
        parts.append(f"p. {page}")
    if heading_path:
        parts.append(" › ".join(md_escape(h) for h in heading_path))
    return " · ".join(parts)
