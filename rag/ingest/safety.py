"""Checks on untrusted uploads before any parser sees them: names, sizes, types, ZIP bombs."""

from __future__ import annotations

import io
import re
import unicodedata
import zipfile

from rag.errors import EmptyDocument, LimitExceeded, ParseError, UnsafeInput, UnsupportedFileType
from rag.ingest.normalize import CONTROL_CHARS, INVISIBLE_CHARS

SUPPORTED_EXTENSIONS: dict[str, str] = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".pptx": "pptx",
    ".html": "html",
    ".htm": "html",
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".csv": "csv",
}

# ZIP containers (DOCX, PPTX): caps checked on the central directory before anything is inflated.
ZIP_MAX_TOTAL_BYTES = 200 * 1024 * 1024  # uncompressed, all members together
ZIP_MAX_MEMBERS = 10_000
ZIP_MAX_RATIO = 100  # uncompressed / compressed, checked on members above ZIP_RATIO_MIN_BYTES
ZIP_RATIO_MIN_BYTES = 5 * 1024 * 1024
ZIP_MAX_XML_BYTES = 64 * 1024 * 1024  # one XML part: parsed into a DOM several times its size
MAX_NAME_CHARS = 200

_NAME_DROP_RE = re.compile(f"[{CONTROL_CHARS}{INVISIBLE_CHARS}\ud800-\udfff]+")
_NAME_FORBIDDEN_RE = re.compile(r'[<>:"|?*]')
_WINDOWS_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(10)), *(f"LPT{i}" for i in range(10))}


def safe_name(name: str) -> str:
    """The last path component of ``name`` with invisible, control and reserved characters removed.

    ``"../../etc/passwd"`` -> ``"passwd"``; ``"C:\\\\Users\\\\me\\\\a.pdf"`` -> ``"a.pdf"``. Unicode
    letters are kept. Raises ``UnsafeInput`` when nothing usable is left.
    """
    cleaned = _NAME_DROP_RE.sub("", name)
    base = re.split(r"[/\\]", cleaned)[-1]
    base = re.sub(r"^[A-Za-z]:", "", base)  # drive-relative "C:name"
    base = unicodedata.normalize("NFC", base)
    base = _NAME_FORBIDDEN_RE.sub("_", base)
    base = " ".join(base.split()).strip(". ")
    if not base or not base.strip("_"):
        raise UnsafeInput(f"The file name {name!r} has no usable characters once its folders are removed.")
    stem, dot, ext = base.rpartition(".")
    stem, ext = (stem, dot + ext) if dot and len(ext) <= 16 else (base, "")
    if stem.upper() in _WINDOWS_RESERVED:
        stem = "_" + stem
    return stem[: MAX_NAME_CHARS - len(ext)].rstrip(". ") + ext


def file_kind(name: str) -> str:
    """The parser kind for ``name``'s extension (``"pdf"``, ``"docx"`` ...); raises ``UnsupportedFileType``."""
    base = safe_name(name)
    dot = base.rfind(".")
    ext = base[dot:].lower() if dot > 0 else ""
    kind = SUPPORTED_EXTENSIONS.get(ext)
    if kind is None:
        shown = f"'{ext}'" if ext else "no extension"
        raise UnsupportedFileType(f"'{base}' has {shown}, which Ragscope cannot read.")
    return kind


def check_upload(name: str, data: bytes, max_file_mb: float) -> None:
    """Reject an upload before parsing: unknown type, empty, or larger than ``max_file_mb``."""
    kind = file_kind(name)
    if not data:
        raise EmptyDocument(
            f"'{safe_name(name)}' is empty (0 bytes).", fix="Upload the file again; it may not have been saved."
        )
    size_mb = len(data) / (1024 * 1024)
    if size_mb > max_file_mb:
        raise LimitExceeded(
            f"'{safe_name(name)}' is {size_mb:.1f} MB, over the {max_file_mb:g} MB upload limit for {kind.upper()} files.",
            fix="Split the file into smaller parts, or raise RAG_MAX_FILE_MB if you trust it.",
        )


def sniff(data: bytes) -> str | None:
    """What the bytes look like regardless of their name: ``"pdf"``, ``"zip"``, ``"ole"`` or ``None``."""
    if data.startswith(b"PK\x03\x04") or data.startswith(b"PK\x05\x06"):
        return "zip"
    if data.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):  # legacy .doc/.ppt/.xls, encrypted OOXML
        return "ole"
    if data.startswith(b"%PDF-"):
        return "pdf"
    return None


def has_pdf_header(data: bytes) -> bool:
    """PDF readers accept the ``%PDF-`` header anywhere in the first 1 KB (PDF 1.7, Annex H)."""
    return b"%PDF-" in data[:1024]


def open_zip(name: str, data: bytes) -> zipfile.ZipFile:
    """Open a DOCX/PPTX container after checking its central directory for decompression bombs."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise ParseError(f"'{name}' is not a valid Office file (its ZIP container is damaged: {exc}).") from exc
    _check_members(name, members)
    return archive


def _check_members(name: str, members: list[zipfile.ZipInfo]) -> None:
    fix = "Open the file in its Office program, save a fresh copy, and upload that."
    if len(members) > ZIP_MAX_MEMBERS:
        raise UnsafeInput(f"'{name}' contains {len(members)} parts (limit {ZIP_MAX_MEMBERS}).", fix=fix)
    total = sum(info.file_size for info in members)
    if total > ZIP_MAX_TOTAL_BYTES:
        raise UnsafeInput(
            f"'{name}' would expand to {total // 2**20} MB when unpacked, over the "
            f"{ZIP_MAX_TOTAL_BYTES // 2**20} MB limit (possible ZIP bomb).",
            fix=fix,
        )
    for info in members:
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > ZIP_RATIO_MIN_BYTES and ratio > ZIP_MAX_RATIO:
            raise UnsafeInput(
                f"'{name}' has a part ({info.filename!r}) compressed {ratio:.0f}:1, far beyond real "
                "documents (possible ZIP bomb).",
                fix=fix,
            )
        if info.file_size > ZIP_MAX_XML_BYTES and info.filename.lower().endswith((".xml", ".rels")):
            raise UnsafeInput(
                f"'{name}' has an XML part ({info.filename!r}) of {info.file_size // 2**20} MB, over the "
                f"{ZIP_MAX_XML_BYTES // 2**20} MB limit.",
                fix="Split the document into smaller files and upload those.",
            )
