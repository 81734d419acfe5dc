"""``rag bench parse``: the text measures on hand-built pages, and the command on PDFs made here."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from reportlab.pdfgen import canvas

from rag.bench.text_quality import heading_kept, is_glued_prose, text_stats
from rag.cli import main


def test_text_stats_counts_exactly() -> None:
    pages = [
        "1.2 Network setup\nFor the lowlevelnetworkconfiguration see below.\n• first item • second item",
        "Use PubkeyAuthentication and http://wiki.debian.org/SystemVirtualization here \ufffd",
        "软件包 管理\n中文文本",
    ]
    outline = [(0, "Network setup"), (1, "Missing heading"), (2, "软件包 管理"), (7, "past the end")]
    stats = text_stats(pages, outline)
    assert (stats.pages, stats.words, stats.glued, stats.glued_prose) == (3, 16, 3, 1)
    assert stats.glued_rate == pytest.approx(3 / 16) and stats.glued_prose_rate == pytest.approx(1 / 16)
    assert stats.replacement_pages == 1
    assert (stats.cjk, stats.cjk_spaced) == (9, 1)
    assert (stats.headings, stats.headings_kept) == (3, 2)
    assert (stats.bullets, stats.bullets_at_line_start) == (2, 1)


@pytest.mark.parametrize(
    ("word", "glued"),
    [
        ("Forthelowlevelnetworkconfiguration", True),
        ("“asalastresorttosatisfy”,", True),
        ("AbyssinicaSILFontFeatures", False),
        ("PreferredAuthentications=password", False),
        ("https://help.ubuntu.com/community/ThunarCustomActions", False),
        ("internationalisation", True),  # a real 20-letter word: the measure's known noise floor
        ("configuration", False),
    ],
)
def test_glued_prose_leaves_identifiers_out(word: str, glued: bool) -> None:
    assert is_glued_prose(word) is glued


def test_heading_kept_ignores_numbers_and_joins_a_wrapped_title() -> None:
    page = "Chapter 3\nSome text.\n3.1.4 The shell\nprompt under GUI\n第 2 章 网络设置"
    assert heading_kept(page, "The shell prompt under GUI")
    assert heading_kept(page, "网络设置")
    assert not heading_kept(page, "The shell prompt")
    assert not heading_kept("Theshellpromptunder GUI", "The shell prompt under GUI")


def _pdf_with_outline(path: Path) -> None:
    buf = io.BytesIO()
    pdf = canvas.Canvas(buf)
    for number, lines in enumerate([["1 Introduction", "• one", "• two"], ["2 Installing the package"]]):
        pdf.bookmarkPage(f"p{number}")
        pdf.addOutlineEntry(lines[0].split(" ", 1)[1], f"p{number}", level=0)
        for i, line in enumerate(lines):
            pdf.drawString(72, 760 - 20 * i, line)
        pdf.showPage()
    pdf.save()
    path.write_bytes(buf.getvalue())


def test_bench_parse_prints_a_row_per_file_and_extractor(tmp_path: Path, capsys) -> None:
    _pdf_with_outline(tmp_path / "manual.pdf")
    buf = io.BytesIO()
    blank = canvas.Canvas(buf)
    blank.showPage()
    blank.save()
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "blank.pdf").write_bytes(buf.getvalue())
    assert main(["bench", "parse", str(tmp_path), "--extractors", "pypdfium2"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| manual.pdf"))
    assert "| 2 | pypdfium2 | 0/6 (0.00%) | 0 (0.00%) | 0 |" in row
    assert row.endswith("| 2/2 (100%) | 2/2 (100%) |")
    assert "blank.pdf: EmptyDocument" in out


def test_bench_parse_structure_counts_headings_chunks_and_running_lines(tmp_path: Path, capsys) -> None:
    _pdf_with_outline(tmp_path / "manual.pdf")
    assert main(["bench", "parse", str(tmp_path), "--structure"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| manual.pdf"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[:2] == ["manual.pdf", "2"] and float(cells[2]) > 0
    assert cells[3:] == ["2 (outline)", "2/2 (100%)", "0", "0"]


def test_bench_parse_rejects_an_unknown_extractor(tmp_path: Path) -> None:
    _pdf_with_outline(tmp_path / "manual.pdf")
    with pytest.raises(ValueError, match="unknown extractor"):
        main(["bench", "parse", str(tmp_path), "--extractors", "pymupdf"])


def test_report_regeneration_keeps_the_marked_sections(tmp_path: Path) -> None:
    from rag.bench.report import kept_sections

    out = tmp_path / "BENCHMARKS.md"
    assert kept_sections(out) == {}
    section = "<!-- kept: pdf-parse -->\n## PDF text extraction\n\n| a | b |\n<!-- /kept: pdf-parse -->"
    out.write_text(f"# Benchmarks\n\nold generated text\n\n{section}\n\n## Which split\n", encoding="utf-8")
    assert kept_sections(out) == {"pdf-parse": section}
