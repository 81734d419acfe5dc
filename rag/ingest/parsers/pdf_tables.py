"""Tables on a PDF page: runs of lines whose cells (``PdfLine.cells``) start at shared columns.

A table starts at a line cut into cells and goes on while the next line's cells start where
the table's columns start (``MIN_ALIGNED`` of them within ``ALIGN_EMS`` of the line's size). A
line of one cell inside the run is a wrapped cell when it starts under a column other than the
first (its text joins that cell of the row above), or a row of its own when it starts under the
first column and a table row follows it. Runs of fewer than ``MIN_ROWS`` cut lines are left as
text. The table becomes a paragraph of one line per row, cells joined by `` | `` (empty cells left
out): the first row as printed, then each row. When the first row is a header (every cell of it
bold, the row below not: a page that continues a table starts with a plain row) and has a cell
for every column, each cell of the rows below says its column ("City: Dublin | Tier: B"), so a row
read alone (a chunk cut inside the table, a sentence quoted in an answer) still says what its
values are; otherwise rows are their cells only.
"""

from __future__ import annotations

from dataclasses import dataclass

from rag.ingest.parsers.pdf_lines import PdfLine

CELL_SEPARATOR = " | "
ALIGN_EMS = 0.6
MIN_ALIGNED = 2
MIN_ROWS = 2


@dataclass(frozen=True)
class Table:
    """Lines ``first`` to ``last`` (inclusive) of a page, read as ``rows`` of cell texts."""

    first: int
    last: int
    rows: tuple[tuple[str, ...], ...]
    bold_header: bool = False  # the first row is set in bold and the second is not

    def lines(self) -> list[str]:
        """The first row as printed, then each row; under a bold, full header each cell says its column."""
        header, *body = self.rows
        width = max(len(row) for row in self.rows)
        labelled = self.bold_header and len(header) == width and all(header)
        lines = [CELL_SEPARATOR.join(cell for cell in header if cell)]
        for row in body:
            cells = [f"{header[i]}: {cell}" if labelled else cell for i, cell in enumerate(row) if cell]
            lines.append(CELL_SEPARATOR.join(cells))
        return lines


def find_tables(lines: list[PdfLine], offset: int = 0) -> list[Table]:
    """The tables among ``lines``, in reading order, none overlapping; line numbers start at ``offset``."""
    tables, i = [], 0
    while i < len(lines):
        table = _table_at(lines, i) if lines[i].cells else None
        if table is None:
            i += 1
            continue
        tables.append(Table(table.first + offset, table.last + offset, table.rows, table.bold_header))
        i = table.last + 1
    return tables


class _Grid:
    """Column starts and rows of the table being read."""

    def __init__(self, line: PdfLine) -> None:
        self.columns = sorted(cell.left for cell in line.cells)
        self.rows: list[list[str]] = []
        self.cut_rows = 0
        self.add_row(line)

    def column(self, x: float, size: float) -> int | None:
        """The column starting at ``x`` (within the alignment tolerance), if any."""
        tolerance = ALIGN_EMS * size
        near = [i for i, start in enumerate(self.columns) if abs(start - x) <= tolerance]
        return near[0] if near else None

    def fits(self, line: PdfLine) -> bool:
        aligned = sum(self.column(cell.left, line.size) is not None for cell in line.cells)
        return aligned >= min(MIN_ALIGNED, len(line.cells))

    def add_row(self, line: PdfLine) -> None:
        for cell in line.cells:
            if self.column(cell.left, line.size) is None:
                self.columns = sorted([*self.columns, cell.left])
        row = [""] * len(self.columns)
        for cell in line.cells:
            at = self._owner(cell.left, line.size)
            row[at] = f"{row[at]} {cell.text}".strip()
        self.rows.append(row)
        self.cut_rows += 1

    def add_single(self, line: PdfLine, column: int) -> None:
        if column == 0:
            self.rows.append([line.text] + [""] * (len(self.columns) - 1))
            return
        last = self.rows[-1]
        last.extend([""] * (len(self.columns) - len(last)))
        last[column] = f"{last[column]} {line.text}".strip()

    def _owner(self, x: float, size: float) -> int:
        """The last column starting at or left of ``x``."""
        tolerance = ALIGN_EMS * size
        return max((i for i, start in enumerate(self.columns) if start <= x + tolerance), default=0)


def _table_at(lines: list[PdfLine], first: int) -> Table | None:
    grid = _Grid(lines[first])
    last = first
    for j in range(first + 1, len(lines)):
        line = lines[j]
        if line.cells:
            if not grid.fits(line):
                break
            grid.add_row(line)
        else:
            column = grid.column(line.left, line.size)
            if column is None or (column == 0 and not _row_follows(lines, j + 1, grid)):
                break
            grid.add_single(line, column)
        last = j
    if grid.cut_rows < MIN_ROWS:
        return None
    return Table(first, last, tuple(tuple(row) for row in grid.rows), _bold_header(lines[first], lines[first + 1]))


def _bold_header(head: PdfLine, below: PdfLine) -> bool:
    """A header row looks unlike the rows under it: bold over regular (a page continuing a table has none)."""
    return all(cell.bold for cell in head.cells) and not (below.cells and all(cell.bold for cell in below.cells))


def _row_follows(lines: list[PdfLine], j: int, grid: _Grid) -> bool:
    return j < len(lines) and bool(lines[j].cells) and grid.fits(lines[j])
