"""Rooms only import rooms below them (docs/ARCHITECTURE.md).

Every module's imports are read with ``ast`` (top-level and inside functions alike), so a lazy
import cannot hide an upward edge. A new module under ``rag/`` must be given a room here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Longest matching prefix wins. Same level: may import each other.
ROOMS: dict[str, tuple[int, str]] = {
    "rag": (0, "kernel"),  # rag/__init__.py only; every other rag.* module matches a longer prefix
    "rag.config": (0, "kernel"),
    "rag.errors": (0, "kernel"),
    "rag.records": (0, "kernel"),
    "rag.limits": (0, "kernel"),
    "rag.stages": (0, "kernel"),
    "rag.source": (0, "kernel"),
    "rag.llm": (0, "kernel"),
    "rag.rules": (0, "kernel"),
    "rag.store": (1, "store/ingest"),
    "rag.ingest": (1, "store/ingest"),
    "rag.text": (1, "store/ingest"),
    "rag.readers": (1, "store/ingest"),  # the e5 port and the readers: under ingest's embedder and retrieval
    "rag.embedder": (1, "store/ingest"),  # builds its multilingual e5 from rag.readers
    "rag.kb": (2, "knowledge base"),
    "rag.backup": (2, "knowledge base"),
    "rag.demo": (2, "knowledge base"),
    "rag.retrieval": (3, "retrieval"),
    "rag.answer": (4, "answer"),
    "rag.ask": (5, "ask"),
    "rag.eval": (6, "eval"),
    "rag.views": (7, "views/bench"),
    "rag.bench": (7, "views/bench"),
    "rag.cli": (8, "cli/pages"),
    "rag.__main__": (8, "cli/pages"),
}
APP_LEVEL = (8, "cli/pages")  # app.py, appkit/, pages/
BENCH_IMPORTERS = ("rag.cli", "rag.bench")  # only the CLI (and bench itself) imports rag.bench


def room(module: str) -> tuple[int, str] | None:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in ROOMS:
            if n == 1 and len(parts) > 1:
                return None  # a rag.* module with no room of its own
            return ROOMS[".".join(parts[:n])]
    return None


def module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, root: Path) -> list[tuple[int, str]]:
    """(line, dotted module) for every ``rag`` import in ``path``; ``from rag.x import y`` names
    ``rag.x.y`` when ``y`` is a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "rag"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "rag":
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                is_module = (root / Path(*sub.split("."))).with_suffix(".py").exists() or (
                    root / Path(*sub.split(".")) / "__init__.py"
                ).exists()
                out.append((node.lineno, sub if is_module else node.module))
    return out


def violations(root: Path, extra: list[Path] = ()) -> list[str]:
    """One line per upward import: ``module (room) line N imports target (room)``."""
    found: list[str] = []
    files = sorted((root / "rag").rglob("*.py")) + list(extra)
    for path in files:
        name = module_name(path, root)
        here = room(name) if name.startswith("rag") else APP_LEVEL
        if here is None:
            found.append(f"{name}: no room assigned (add it to ROOMS in tests/test_architecture.py)")
            continue
        for line, target in imported_modules(path, root):
            there = room(target)
            if there is None:
                found.append(f"{name} line {line} imports {target}: no room assigned")
            elif there[0] > here[0]:
                found.append(f"{name} ({here[1]}) line {line} imports {target} ({there[1]}): upward")
            elif target.startswith("rag.bench") and not name.startswith(BENCH_IMPORTERS):
                found.append(f"{name} ({here[1]}) line {line} imports {target}: only rag.cli may import rag.bench")
    return found


def app_files(root: Path) -> list[Path]:
    return [root / "app.py", *sorted((root / "appkit").glob("*.py")), *sorted((root / "pages").glob("*.py"))]


def test_no_module_imports_a_room_above_its_own():
    assert violations(ROOT, app_files(ROOT)) == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from rag.answer.result import Answer\n", "rag.retrieval.fusion (retrieval) line 1 imports rag.answer.result"),
        ("def f():\n    from rag.eval import metrics\n", "line 2 imports rag.eval.metrics (eval): upward"),
        ("import rag.bench.beir\n", "imports rag.bench.beir (views/bench): upward"),
    ],
)
def test_an_upward_import_is_reported_with_module_and_line(tmp_path, source, expected):
    for pkg in ("rag", "rag/retrieval", "rag/answer", "rag/eval", "rag/bench"):
        (tmp_path / pkg).mkdir(parents=True, exist_ok=True)
        (tmp_path / pkg / "__init__.py").write_text("")
    for mod in ("rag/answer/result.py", "rag/eval/metrics.py", "rag/bench/beir.py"):
        (tmp_path / mod).write_text("")
    (tmp_path / "rag/retrieval/fusion.py").write_text(source)
    found = violations(tmp_path)
    assert len(found) == 1 and expected in found[0]


def test_views_may_not_import_bench_even_though_same_level(tmp_path):
    for pkg in ("rag", "rag/views", "rag/bench"):
        (tmp_path / pkg).mkdir(parents=True, exist_ok=True)
        (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / "rag/bench/report.py").write_text("")
    (tmp_path / "rag/views/charts.py").write_text("from rag.bench import report\n")
    assert violations(tmp_path) == [
        "rag.views.charts (views/bench) line 1 imports rag.bench.report: only rag.cli may import rag.bench"
    ]


def test_a_module_without_a_room_is_reported(tmp_path):
    (tmp_path / "rag").mkdir()
    (tmp_path / "rag/__init__.py").write_text("")
    (tmp_path / "rag/helpers.py").write_text("")
    assert violations(tmp_path) == ["rag.helpers: no room assigned (add it to ROOMS in tests/test_architecture.py)"]


def test_the_answer_stage_reads_evidence_records_not_the_retrieval_trace():
    """The answer stage takes ``EvidencePassage`` records (rag/records.py); the trace is retrieval's."""
    found = [
        f"{module_name(path, ROOT)} line {line}"
        for path in sorted((ROOT / "rag" / "answer").rglob("*.py"))
        for line, target in imported_modules(path, ROOT)
        if target.startswith("rag.retrieval.trace")
    ]
    assert found == []
