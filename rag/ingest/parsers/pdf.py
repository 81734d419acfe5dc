"""PDF: one page span per PDF page, text by ``pypdf``. No headings (PDFs rarely tag them)."""

from __future__ import annotations

import io
import logging

import pypdf
from pypdf.errors import DependencyError, LimitReachedError, PdfReadError

from rag.errors import EmptyDocument, LimitExceeded, ParseError
from rag.ingest.parsers.builder import TextBuilder
from rag.records import ParsedDocument

log = logging.getLogger(__name__)

PASSWORD_FIX = "Remove the password (e.g. open it and 'Print to PDF' or save an unprotected copy) and upload that."


def parse_pdf(name: str, data: bytes, max_pages: int) -> ParsedDocument:
    reader = _open(name, data)
    pages = _page_list(name, reader, max_pages)
    builder = TextBuilder()
    failed: list[Exception] = []
    for number, page in enumerate(pages, start=1):
        builder.new_page()
        builder.add(_page_text(page, number, failed))
    if failed and len(failed) == len(pages):
        raise ParseError(f"'{name}': no page of this PDF could be read ({failed[0]}).")
    return builder.build(
        "pypdf",
        pypdf.__version__,
        empty_message=f"'{name}' has {len(pages)} page(s) but no extractable text; it is probably scanned images.",
        empty_fix=None,  # EmptyDocument's own fix: run OCR
    )


def _open(name: str, data: bytes) -> pypdf.PdfReader:
    try:
        reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
    except LimitReachedError as exc:
        raise LimitExceeded(f"'{name}' exceeds a PDF safety limit ({exc}).") from exc
    if reader.is_encrypted:
        _decrypt_or_raise(name, reader)
    return reader


def _decrypt_or_raise(name: str, reader: pypdf.PdfReader) -> None:
    """Many PDFs are 'encrypted' with an empty user password (owner restrictions only): open those."""
    try:
        result = reader.decrypt("")
    except DependencyError as exc:  # AES needs the optional 'cryptography' package
        raise ParseError(
            f"'{name}' is encrypted with AES, which this installation cannot open.", fix=PASSWORD_FIX
        ) from exc
    except PdfReadError as exc:
        raise ParseError(f"'{name}' is encrypted in a way that cannot be opened ({exc}).", fix=PASSWORD_FIX) from exc
    if result == pypdf.PasswordType.NOT_DECRYPTED:
        raise ParseError(f"'{name}' is password-protected.", fix=PASSWORD_FIX)


def _page_list(name: str, reader: pypdf.PdfReader, max_pages: int) -> list[pypdf.PageObject]:
    """The real pages, from pypdf's bounded walk of the page tree; the /Count claim is ignored."""
    try:
        count = len(reader.pages)
    except LimitReachedError as exc:
        raise LimitExceeded(f"'{name}' has a page tree beyond PDF safety limits ({exc}).") from exc
    if count > max_pages:
        raise LimitExceeded(
            f"'{name}' has {count} pages, over the limit of {max_pages}.",
            fix="Split the PDF into smaller files, or raise RAG_MAX_PAGES if you trust it.",
        )
    if count == 0:
        raise EmptyDocument(f"'{name}' has no pages.", fix="Re-export the PDF from its source program.")
    return [reader.pages[i] for i in range(count)]


def _page_text(page: pypdf.PageObject, number: int, failed: list[Exception]) -> str:
    """Text of one page; a damaged page counts as empty so the rest of the document survives."""
    try:
        return page.extract_text() or ""
    except LimitReachedError as exc:
        raise LimitExceeded(f"Page {number} exceeds a PDF safety limit ({exc}).") from exc
    except Exception as exc:  # noqa: BLE001 - pypdf raises many types on damaged content streams
        log.warning("skipping unreadable PDF page %d: %s", number, exc)
        failed.append(exc)
        return ""
