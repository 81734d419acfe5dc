"""File bytes -> ``ParsedDocument`` (normalized text, page spans, headings), one module per format.

``parse_file`` does the common work once (type from the extension, empty check, content
sniffing, error translation); each format module only turns bytes into blocks. Every failure
leaves as a ``RagError`` subclass whose message says what to do, never a library exception.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rag.errors import EmptyDocument, LimitExceeded, ParseError, RagError
from rag.ingest.parsers import html, markdown, office, pdf, text
from rag.ingest.safety import file_kind, has_pdf_header, safe_name, sniff
from rag.records import ParsedDocument

Parser = Callable[[str, bytes, int], ParsedDocument]

PARSERS: dict[str, Parser] = {
    "pdf": pdf.parse_pdf,
    "docx": office.parse_docx,
    "pptx": office.parse_pptx,
    "html": html.parse_html,
    "markdown": markdown.parse_markdown,
    "text": text.parse_text,
    "csv": text.parse_csv,
}

# Parsers whose text changes with their library: re-ingesting an unchanged file re-parses it when
# its active revision was made by another parser or version (PDFs read by pypdf before issue 15).
CURRENT_PARSERS: dict[str, tuple[str, str]] = {"pdf": (pdf.PARSER, pdf.PARSER_VERSION)}

_NAME_OF_SNIFFED = {
    "pdf": "a PDF",
    "zip": "a ZIP/Office file",
    "ole": "a legacy Office (.doc/.ppt/.xls) or encrypted file",
}


def parse_file(name: str, data: bytes, *, max_pages: int = 2000) -> ParsedDocument:
    """Parse one uploaded file by its extension. Raises only ``RagError`` subclasses."""
    if max_pages < 1:
        raise ValueError(f"max_pages must be at least 1, got {max_pages}")
    kind = file_kind(name)
    shown = safe_name(name)
    if not data:
        raise EmptyDocument(f"'{shown}' is empty (0 bytes).", fix="Upload the file again; it may not have been saved.")
    _check_content_matches(shown, kind, data)
    with parser_errors(shown, kind):
        return PARSERS[kind](shown, data, max_pages)


def current_parser(kind: str) -> tuple[str, str] | None:
    """(parser, version) a file of ``kind`` is parsed with now, for kinds in ``CURRENT_PARSERS``."""
    return CURRENT_PARSERS.get(kind)


def _check_content_matches(name: str, kind: str, data: bytes) -> None:
    """Catch extensions that lie: a ``.pdf`` holding text, a ``.txt`` holding a PDF."""
    found = sniff(data)
    if kind == "pdf":
        ok = has_pdf_header(data)
    elif kind in ("docx", "pptx"):
        ok = found == "zip"
    else:
        ok = found is None
    if not ok:
        looks = _NAME_OF_SNIFFED.get(found or "", "plain text or an unknown format")
        raise ParseError(
            f"'{name}' is named like a {kind.upper()} file but its content looks like {looks}.",
            fix="Check that you picked the right file, or rename it with the extension that matches its content.",
        )


@contextmanager
def parser_errors(name: str, kind: str) -> Iterator[None]:
    """Translate anything a third-party parser raises on hostile input into a ``RagError``.

    Parsing libraries raise a zoo of exceptions on broken files (KeyError, struct.error, zlib
    errors, RecursionError ...); this boundary is the one place that catches them broadly.
    """
    try:
        yield
    except RagError:
        raise
    except RecursionError as exc:
        raise ParseError(
            f"'{name}' is nested too deeply to read as {kind.upper()}.",
            fix="Save it again from its program (or as plain text) and upload that.",
        ) from exc
    except MemoryError as exc:
        raise LimitExceeded(f"'{name}' needs more memory to parse than is available.") from exc
    except Exception as exc:  # noqa: BLE001 - library boundary, see docstring
        detail = str(exc)[:200]
        raise ParseError(f"'{name}' could not be read as {kind.upper()} ({type(exc).__name__}: {detail}).") from exc
