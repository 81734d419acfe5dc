"""HTML via BeautifulSoup + lxml: visible block text, h1-h6 headings, tables as rows.

The tree is walked with an explicit stack, so 100k nested ``<div>``s cost time, not recursion.
Scripts, styles, navigation, asides, footers and forms are dropped as noise.
"""

from __future__ import annotations

import re
from importlib.metadata import version

from bs4 import BeautifulSoup, CData, NavigableString, Tag

from rag.ingest.normalize import collapse_whitespace
from rag.ingest.parsers.builder import LINE, PARAGRAPH, TextBuilder
from rag.records import ParsedDocument

NOISE_TAGS = frozenset(
    "script style noscript template svg math canvas iframe object embed nav aside footer form button select "
    "head title meta link".split()
)
BLOCK_TAGS = frozenset(
    "address article blockquote body caption dd details dialog div dl dt fieldset figcaption figure header "
    "hgroup hr li main ol p pre section summary table tbody tfoot thead ul".split()
)
HEADING_TAGS = {f"h{level}": level for level in range(1, 7)}
_SPACES_RE = re.compile(r"\s+")
_FLUSH = object()  # stack marker: the block element that pushed it has ended


class _Collector:
    """Buffers inline text and hands finished blocks, headings and table rows to the builder."""

    def __init__(self, builder: TextBuilder) -> None:
        self.builder = builder
        self.buffer: list[str] = []
        self.in_rows = False  # the last block added was a table row

    def text(self, value: str, in_pre: bool) -> None:
        self.buffer.append(value if in_pre else _SPACES_RE.sub(" ", value))

    def flush(self) -> None:
        if self.buffer:
            if self.builder.add("".join(self.buffer)):
                self.in_rows = False
            self.buffer.clear()

    def heading(self, level: int, title: str) -> None:
        self.flush()
        if self.builder.add(collapse_whitespace(title), heading_level=level):
            self.in_rows = False

    def row(self, cells: list[str]) -> None:
        self.flush()
        line = " | ".join(t for t in (collapse_whitespace(c) for c in cells) if t)
        if self.builder.add(line, sep=LINE if self.in_rows else PARAGRAPH):
            self.in_rows = True


def parse_html(name: str, data: bytes, max_pages: int) -> ParsedDocument:
    soup = BeautifulSoup(data, "lxml")
    builder = TextBuilder()
    collector = _Collector(builder)
    _walk(soup, collector)
    collector.flush()
    parser_version = f"{version('beautifulsoup4')}+lxml-{version('lxml')}"
    return builder.build("bs4-lxml", parser_version, empty_message=f"'{name}' has no visible text.")


def _walk(root: Tag, out: _Collector) -> None:
    stack: list[tuple[object, bool]] = [(root, False)]
    while stack:
        node, in_pre = stack.pop()
        if node is _FLUSH:
            out.flush()
        elif isinstance(node, NavigableString):
            if type(node) in (NavigableString, CData):  # not comments, doctypes, script strings
                out.text(str(node), in_pre)
        elif isinstance(node, Tag):
            _visit_tag(node, in_pre, stack, out)


def _visit_tag(tag: Tag, in_pre: bool, stack: list[tuple[object, bool]], out: _Collector) -> None:
    name = (tag.name or "").lower()
    if name in NOISE_TAGS:
        return
    if name in HEADING_TAGS:
        out.heading(HEADING_TAGS[name], tag.get_text(" "))
    elif name == "tr":
        out.row([cell.get_text(" ") for cell in tag.find_all(["td", "th"], recursive=False)])
    elif name == "br":
        out.text("\n", True)
    else:
        if name in BLOCK_TAGS:
            out.flush()
            stack.append((_FLUSH, False))
        in_pre = in_pre or name == "pre"
        stack.extend((child, in_pre) for child in reversed(tag.contents))
