"""Decompression bombs in PDFs: the decoded size of a PDF's streams, measured before PDFium reads it.

PDFium inflates every content, font and object stream it needs in memory, with no cap but its own
1 GiB per stream, so a 1 MB file can make it hold 2 GB. This scan inflates each Flate stream
(through ASCII85/ASCIIHex wrappers and Flate chains) in bounded pieces, only counting bytes, and
stops once the total passes ``PDF_MAX_INFLATED_BYTES``. Image XObjects are skipped: text
extraction never decodes them, and a scan's pages legitimately inflate to many megabytes.
LZW streams (rare since PDF 1.2) are counted at their stored size: a gap this scan accepts.
"""

from __future__ import annotations

import base64
import binascii
import re
import zlib
from collections.abc import Iterable, Iterator

from rag.errors import UnsafeInput

PDF_MAX_INFLATED_BYTES = 256 * 1024 * 1024  # all non-image streams of one PDF, decoded
_PIECE = 1 << 16

_STREAM_RE = re.compile(rb"(?<!end)stream(?:\r\n|\n|\r)")
_FILTER_RE = re.compile(rb"/Filter\s*(\[[^\]]*\]|/[^\s/\[\]<>()]+)")
_NAME_RE = re.compile(rb"/([^\s/\[\]<>()]+)")
_IMAGE_RE = re.compile(rb"/Subtype\s*/Image\b")
_LENGTH_RE = re.compile(rb"/Length\s+(\d+)(?:\s+(\d+)\s+R)?")
_INT_BODY_RE = re.compile(rb"obj\s*(\d+)\s*endobj")  # starts with a literal: fast on binary data
_OBJECT_NUMBER_RE = re.compile(rb"(\d+)\s+\d+\s+$")
_FLATE = {b"FlateDecode", b"Fl"}
_WRAPPERS = {b"ASCII85Decode": "a85", b"A85": "a85", b"ASCIIHexDecode": "hex", b"AHx": "hex"}


def check_inflated_size(name: str, data: bytes, limit: int = PDF_MAX_INFLATED_BYTES) -> int:
    """The decoded size of ``data``'s non-image streams; raises ``UnsafeInput`` past ``limit``."""
    lengths: dict[int, int] | None = None
    total = 0
    for match in _STREAM_RE.finditer(data):
        head = _dictionary(data, match.start())
        if _IMAGE_RE.search(head):
            continue
        length = _LENGTH_RE.search(head)
        if length and length.group(2) and lengths is None:
            lengths = _integer_objects(data)
        raw = data[match.end() : _stream_end(data, match.end(), length, lengths or {})]
        total += _decoded_size(raw, _filters(head), limit - total)
        if total > limit:
            raise UnsafeInput(
                f"'{name}' has streams that inflate to more than {limit // 2**20} MB (possible decompression bomb).",
                fix="Open it in a PDF viewer, 'Print to PDF' or save a fresh copy, and upload that.",
            )
    return total


def _dictionary(data: bytes, stream_at: int) -> bytes:
    """The object's text before its ``stream`` keyword (its dictionary), from the last ``obj``."""
    window = data[max(0, stream_at - 8192) : stream_at]
    at = window.rfind(b"obj")
    return window[at:] if at >= 0 else window


def _integer_objects(data: bytes) -> dict[int, int]:
    """``N G obj <integer> endobj`` objects (indirect stream lengths), by object number."""
    found = {}
    for match in _INT_BODY_RE.finditer(data):
        number = _OBJECT_NUMBER_RE.search(data[max(0, match.start() - 24) : match.start()])
        if number:
            found[int(number.group(1))] = int(match.group(1))
    return found


def _stream_end(data: bytes, start: int, match: re.Match[bytes] | None, lengths: dict[int, int]) -> int:
    """Where the stream's bytes end: ``/Length`` (direct or resolved), else the next ``endstream``.

    The later of the two wins, so an ``endstream`` hidden inside the data cannot shorten the scan.
    """
    found = data.find(b"endstream", start)
    end = found if found >= 0 else len(data)
    if match:
        length = lengths.get(int(match.group(1))) if match.group(2) else int(match.group(1))
        if length is not None:
            end = max(end, min(start + length, len(data)))
    return end


def _filters(head: bytes) -> list[bytes]:
    match = _FILTER_RE.search(head)
    return _NAME_RE.findall(match.group(1)) if match else []


def _decoded_size(raw: bytes, filters: list[bytes], budget: int) -> int:
    """Bytes the filter chain yields, counted up to just past ``budget``; undecodable parts count 0."""
    try:
        while filters and filters[0] in _WRAPPERS:
            raw = _unwrap(raw, _WRAPPERS[filters.pop(0)])
    except (ValueError, binascii.Error):
        return len(raw)
    flates = 0
    while flates < len(filters) and filters[flates] in _FLATE:
        flates += 1
    pieces: Iterable[bytes] = (raw[i : i + _PIECE] for i in range(0, len(raw), _PIECE))
    for _ in range(flates):
        pieces = _inflate(pieces)
    total = 0
    try:
        for piece in pieces:
            total += len(piece)
            if total > budget:
                break
    except zlib.error:
        pass  # PDFium stops at the same damage; what came out before it is counted
    return total


def _unwrap(raw: bytes, kind: str) -> bytes:
    """Undo an ASCII wrapper (it only shrinks the data, so decoding it whole is bounded)."""
    if kind == "a85":
        body = raw.split(b"~>", 1)[0].removeprefix(b"<~")
        return base64.a85decode(body, ignorechars=b" \t\n\r\x0c\x00")
    digits = re.sub(rb"\s", b"", raw.split(b">", 1)[0])
    return binascii.unhexlify(digits + b"0" * (len(digits) % 2))


def _inflate(pieces: Iterable[bytes]) -> Iterator[bytes]:
    """One Flate layer over a stream of pieces, yielding at most ``_PIECE`` bytes at a time."""
    decoder = zlib.decompressobj()
    for data in pieces:
        while data and not decoder.eof:
            out = decoder.decompress(data, _PIECE)
            data = decoder.unconsumed_tail
            if out:
                yield out
        if decoder.eof:
            return
