"""Plain text and CSV: decode (UTF-8, else charset-normalizer), normalize, render CSV rows as lines."""

from __future__ import annotations

import codecs
import csv
import io
import re

import charset_normalizer

from rag import __version__ as RAG_VERSION
from rag.errors import ParseError
from rag.ingest.normalize import collapse_whitespace, normalize_text
from rag.ingest.parsers.builder import LINE, TextBuilder, single_page
from rag.records import ParsedDocument

BINARY_SAMPLE_CHARS = 65_536
BINARY_MAX_SHARE = 0.3  # share of control/replacement characters above which "text" is binary
CSV_DELIMITERS = ",;\t|"
_BINARY_RE = re.compile("[\x00-\x08\x0e-\x1f\ufffd]")
_NON_ASCII_RE = re.compile("[^\x00-\x7f\ufffd]")
UTF8_SAMPLE_CHARS = 1_000_000


def decode_text(name: str, data: bytes) -> str:
    """Bytes -> str: UTF-8 (with or without BOM, or mostly UTF-8 with a few bad bytes replaced),
    else the encoding charset-normalizer finds. Raises ``ParseError`` for binary content."""
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = _decode_unknown(data)
    sample = text[:BINARY_SAMPLE_CHARS]
    if sample and len(_BINARY_RE.findall(sample)) > BINARY_MAX_SHARE * len(sample):
        raise ParseError(
            f"'{name}' looks like a binary file, not text.",
            fix="Upload the document in its original format (PDF, DOCX, ...) or save it as UTF-8 text.",
        )
    return text


def _decode_unknown(data: bytes) -> str:
    lenient = data.decode("utf-8", errors="replace")
    sample = lenient[:UTF8_SAMPLE_CHARS]
    if len(_NON_ASCII_RE.findall(sample)) >= sample.count("\ufffd"):
        return lenient  # real UTF-8 with a few damaged bytes: keep it, mark the damage
    best = charset_normalizer.from_bytes(data).best()
    return str(best) if best is not None else lenient


def parse_text(name: str, data: bytes, max_pages: int) -> ParsedDocument:
    text = normalize_text(decode_text(name, data))
    return single_page(text, (), "text", RAG_VERSION, empty=f"'{name}' contains only whitespace.")


def parse_csv(name: str, data: bytes, max_pages: int) -> ParsedDocument:
    """Each data row becomes one line ``"column: value; column: value"`` after a ``Columns:`` line."""
    text = decode_text(name, data).replace("\x00", "")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=_guess_delimiter(text))
    builder = TextBuilder()
    header: list[str] | None = None
    try:
        for row in reader:
            if header is None:
                header = [collapse_whitespace(cell) for cell in row]
                if any(header):
                    builder.add("Columns: " + "; ".join(h for h in header if h))
            else:
                builder.add(_render_row(header, row), sep=LINE)
    except csv.Error as exc:
        raise ParseError(
            f"'{name}' is not valid CSV near line {reader.line_num} ({exc}).",
            fix="Check the quoting in that line; cells longer than 128k characters are not supported (upload as .txt).",
        ) from exc
    return builder.build("csv", RAG_VERSION, empty_message=f"'{name}' has no cells with text.")


def _render_row(header: list[str], row: list[str]) -> str:
    parts = []
    for i, cell in enumerate(row):
        value = collapse_whitespace(cell)
        if value:
            column = header[i] if i < len(header) and header[i] else f"column {i + 1}"
            parts.append(f"{column}: {value}")
    return "; ".join(parts)


def _guess_delimiter(text: str) -> str:
    """The candidate that occurs most often in the first line (``,`` when none does).

    Cheaper and more predictable than ``csv.Sniffer``, whose regexes are slow on large samples.
    """
    first_line = text[: text.find("\n")] if "\n" in text[:65_536] else text[:65_536]
    counts = {d: first_line.count(d) for d in CSV_DELIMITERS}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] else ","
