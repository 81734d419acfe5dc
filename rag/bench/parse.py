"""``python -m rag bench parse DIR``: PDF text extractors compared on real PDFs (issue 15).

For every PDF under DIR and every extractor: glued-word rate, pages with replacement characters,
time per page, CJK characters (and spurious spaces between them), headings kept as lines and
bullets kept at line starts (definitions: ``rag.bench.text_quality``). ``--structure`` reports
instead what the shipped parser makes of each file's structure (issue 32): headings and where they
came from, the share of chunks with a heading path, running headers and footers removed, tables. ``pypdfium2`` runs the
shipped parser's own reading (``rag.ingest.parsers.pdf.page_texts``, bomb check included); pypdf
and pdfminer.six are the alternatives measured, from requirements-dev.txt. The PDFs are not part
of the repository: docs/BENCHMARKS.md names the Debian packages they come from.
"""

from __future__ import annotations

import argparse
import io
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rag.bench.text_quality import TextStats, text_stats

Extractor = Callable[[bytes, int], list[str]]


def _pypdfium2(data: bytes, max_pages: int) -> list[str]:
    from rag.ingest.parsers.pdf import page_texts

    return page_texts("bench.pdf", data, max_pages)


def _pypdf(data: bytes, max_pages: int) -> list[str]:
    """What the parser did before issue 15: ``extract_text()`` per page, a failing page empty."""
    import pypdf

    reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
    if reader.is_encrypted:
        reader.decrypt("")
    texts = []
    for page in reader.pages[:max_pages]:
        try:
            texts.append(page.extract_text() or "")
        except Exception:  # noqa: BLE001 - a damaged page counts as empty, as in the old parser
            texts.append("")
    return texts


def _pdfminer(data: bytes, max_pages: int) -> list[str]:
    """pdfminer.six with its default layout analysis (what ``pdfminer.high_level.extract_text`` does)."""
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LAParams, LTTextContainer

    pages = extract_pages(io.BytesIO(data), laparams=LAParams(), maxpages=max_pages)
    return ["".join(box.get_text() for box in page if isinstance(box, LTTextContainer)) for page in pages]


EXTRACTORS: dict[str, Extractor] = {"pypdfium2": _pypdfium2, "pypdf": _pypdf, "pdfminer.six": _pdfminer}
MISSING_FIX = "pip install -r requirements-dev.txt"


@dataclass(frozen=True)
class Measured:
    file: str
    origin: str
    extractor: str
    seconds: float
    stats: TextStats | None
    error: str = ""

    @property
    def ms_per_page(self) -> float:
        return 1000 * self.seconds / self.stats.pages if self.stats and self.stats.pages else 0.0


@dataclass(frozen=True)
class PdfFacts:
    """What PDFium reads from the file itself: producer and outline (the headings' ground truth)."""

    origin: str
    outline: list[tuple[int, str]]


def pdf_facts(data: bytes) -> PdfFacts:
    import pypdfium2 as pdfium

    from rag.ingest.parsers.pdf import PDFIUM_LOCK

    with PDFIUM_LOCK:
        try:
            pdf = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            return PdfFacts(f"unreadable ({exc})", [])
        try:
            meta = pdf.get_metadata_dict()
            outline = [(b.get_dest().get_index(), b.get_title()) for b in pdf.get_toc() if b.get_dest()]
        finally:
            pdf.close()
    origin = " / ".join(dict.fromkeys(v for v in (meta.get("Creator"), meta.get("Producer")) if v))
    return PdfFacts(origin or "unknown", [(page, title) for page, title in outline if page is not None])


def _best_of(repeat: int, extract: Extractor, data: bytes, max_pages: int) -> tuple[float, list[str]]:
    """The fastest of ``repeat`` runs (the machine may be shared) and the pages it read."""
    best, pages = float("inf"), []
    for _ in range(max(repeat, 1)):
        start = time.perf_counter()
        pages = extract(data, max_pages)
        best = min(best, time.perf_counter() - start)
    return best, pages


def measure(path: Path, names: list[str], max_pages: int, repeat: int = 1) -> list[Measured]:
    data = path.read_bytes()
    facts = pdf_facts(data)
    out = []
    for name in names:
        try:
            seconds, pages = _best_of(repeat, EXTRACTORS[name], data, max_pages)
        except ModuleNotFoundError as exc:
            out.append(Measured(path.name, facts.origin, name, 0.0, None, f"not installed ({exc.name}): {MISSING_FIX}"))
            continue
        except Exception as exc:  # noqa: BLE001 - a benchmark reports an extractor's failure and goes on
            out.append(Measured(path.name, facts.origin, name, 0.0, None, f"{type(exc).__name__}: {exc}"[:160]))
            continue
        out.append(Measured(path.name, facts.origin, name, seconds, text_stats(pages, facts.outline)))
    return out


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else "-"


def markdown(rows: list[Measured]) -> str:
    head = (
        "| PDF | origin (Creator / Producer) | pages | extractor | glued words | glued prose | pages with U+FFFD/E "
        "| ms/page | CJK chars (spaced) | headings kept | bullets at line start |\n"
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"
    )
    lines = [head]
    for r in rows:
        s = r.stats
        if s is None:
            lines.append(f"| {r.file} | {r.origin} | | {r.extractor} | {r.error} | | | | | | |")
            continue
        lines.append(
            f"| {r.file} | {r.origin} | {s.pages} | {r.extractor} | {s.glued}/{s.words} ({100 * s.glued_rate:.2f}%) "
            f"| {s.glued_prose} ({100 * s.glued_prose_rate:.2f}%) | {s.replacement_pages} | {r.ms_per_page:.1f} | {s.cjk} ({s.cjk_spaced}) "
            f"| {_share(s.headings_kept, s.headings)} | {_share(s.bullets_at_line_start, s.bullets)} |"
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class Structure:
    """What the shipped parser makes of one PDF's structure (issue 32), and its time per page."""

    file: str
    pages: int
    ms_per_page: float
    headings: int
    headings_from: str
    chunks: int
    chunks_with_heading: int
    running_lines_removed: int
    tables: int


def structure_of(path: Path, max_pages: int, repeat: int = 1) -> Structure:
    """Parse and chunk as ingest does (default chunking); time ``parse_file``, the fastest of ``repeat``."""
    from rag.ingest.chunking import chunk_document
    from rag.ingest.parsers import parse_file
    from rag.ingest.parsers.pdf import read_structure

    data = path.read_bytes()
    seconds, parsed = float("inf"), None
    for _ in range(max(repeat, 1)):
        start = time.perf_counter()
        parsed = parse_file(path.name, data, max_pages=max_pages)
        seconds = min(seconds, time.perf_counter() - start)
    found, _ = read_structure(path.name, data, max_pages)
    chunks = chunk_document(parsed)
    return Structure(
        path.name,
        parsed.page_count,
        1000 * seconds / parsed.page_count,
        len(parsed.headings),
        found.headings_from or "-",
        len(chunks),
        sum(1 for c in chunks if c.heading_path),
        found.running_lines_removed,
        found.tables,
    )


def structure_markdown(rows: list[Structure]) -> str:
    lines = [
        "| PDF | pages | ms/page | headings (from) | chunks with a heading | running lines removed | tables |",
        "|---|---:|---:|---|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.file} | {r.pages} | {r.ms_per_page:.1f} | {r.headings} ({r.headings_from}) "
            f"| {_share(r.chunks_with_heading, r.chunks)} | {r.running_lines_removed} | {r.tables} |"
        )
    return "\n".join(lines)


def verdicts(paths: list[Path]) -> list[str]:
    """What the shipped parser says of each file it refuses (e.g. a scan without a text layer)."""
    from rag.errors import RagError
    from rag.ingest.parsers import parse_file

    out = []
    for path in paths:
        try:
            parse_file(path.name, path.read_bytes())
        except RagError as exc:
            out.append(f"- {path.name}: {type(exc).__name__}: {exc.message}")
    return out


def main(args: argparse.Namespace) -> int:
    root = Path(args.dir)
    paths = sorted(p for p in root.rglob("*") if p.suffix.lower() == ".pdf" and p.is_file())
    if not paths:
        from rag.errors import RagError

        raise RagError(f"No PDF files under {root}.", fix="Give a folder that holds .pdf files.")
    if args.structure:
        print(structure_markdown([structure_of(p, args.max_pages, args.repeat) for p in paths if not verdicts([p])]))
        return 0
    names = [n.strip() for n in args.extractors.split(",") if n.strip()]
    unknown = sorted(set(names) - set(EXTRACTORS))
    if unknown:
        raise ValueError(f"unknown extractor(s) {unknown}; known: {sorted(EXTRACTORS)}")
    rows = [row for path in paths for row in measure(path, names, args.max_pages, args.repeat)]
    print(markdown(rows))
    refused = verdicts(paths)
    if refused:
        print("\nRefused by the parser (not indexed):\n" + "\n".join(refused))
    return 0


def add_parser(bsub) -> None:
    p = bsub.add_parser("parse", help="PDF text extractors compared: glued words, U+FFFD, time, structure")
    p.add_argument("dir", help="a folder of PDF files (searched recursively)")
    p.add_argument("--extractors", default=",".join(EXTRACTORS), help="comma-separated, from: " + ", ".join(EXTRACTORS))
    p.add_argument("--max-pages", type=int, default=2000, help="read at most this many pages of each file")
    p.add_argument("--repeat", type=int, default=1, help="time each extraction this many times, keep the fastest")
    p.add_argument(
        "--structure",
        action="store_true",
        help="instead: the shipped parser's headings, chunks with a heading, running lines removed, tables, ms/page",
    )
    p.set_defaults(func=main)
