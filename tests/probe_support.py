"""Knowledge bases for the why-not probe's tests (library, AppTest and Chromium): every case is a
real knowledge base built from the texts here, searched with the default settings."""

from __future__ import annotations

import json
from pathlib import Path

from app_support import ANSWERABLE, DEMO

LOTS = 24  # more parking chunks than recall_k (20) lists, all better matches than the bicycle note
RECALL_QUESTION = "How do employees renew a parking permit?"
BICYCLE_NAME = "bicycles.md"
BICYCLE_TEXT = "# Bicycles\n\nBicycle racks are in the basement. Staff who cycle need no permit for a bicycle.\n"
TERM_QUESTION = ANSWERABLE.replace("employees", "astronauts")  # no document mentions astronauts
ZH_QUESTION = "出差住宿费每晚上限是多少？"  # its evidence floor drops a weak kept candidate (the car notice)
ZH_NOTICE_NAME = "car_zh.md"
ZH_NOTICE = "# 出差用车规定\n\n出差期间需要用车的，应提前一天在OA系统提交用车申请，由行政部统一安排车辆。\n"
NOTES_NAME = "notes.txt"
NOTES_V1 = "Office notes. The staff canteen opens at 8 am and closes at 3 pm on weekdays.\n"
NOTES_V2 = "Office notes. The staff canteen now opens at 9 am and closes at 4 pm on weekdays.\n"
CANTEEN_QUESTION = "When does the staff canteen open?"


def lot_text(n: int) -> str:
    return (
        f"# Parking lot {n}\n\nEmployees renew the parking permit for lot {n} every January at the front desk. "
        f"A renewed parking permit for lot {n} costs {10 + n} euros and employees must show their badge.\n"
    )


def corpus() -> list[tuple[str, bytes, tuple[str, ...]]]:
    """(file name, bytes, tags) of every document the probe tests search."""
    files = [(f"parking_lot_{n:02d}.md", lot_text(n).encode(), ("parking",)) for n in range(1, LOTS + 1)]
    files.append((BICYCLE_NAME, BICYCLE_TEXT.encode(), ("facilities",)))
    for name in ("employee_handbook.md", "expense_policy_zh.md"):
        files.append((name, (DEMO / name).read_bytes(), ("demo",)))
    files.append((NOTES_NAME, NOTES_V1.encode(), ("facilities",)))
    files.append((ZH_NOTICE_NAME, ZH_NOTICE.encode(), ("facilities",)))
    return files


def write_corpus(folder: Path) -> Path:
    """The corpus as files (for ``python -m rag ingest`` in a separate process)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, data, _ in corpus():
        (folder / name).write_bytes(data)
    return folder


def build_probe_kb(settings, embedder, name: str = "probe"):
    from rag.ingest.pipeline import UploadItem
    from rag.kb import KnowledgeBase

    kb = KnowledgeBase(name, settings, embedder)
    results = kb.ingest([UploadItem(n, data, tags) for n, data, tags in corpus()])
    assert all(r.ok for r in results), [r.error for r in results if not r.ok]
    return kb


SICK_QUESTION = "How many days of sick leave do employees get?"
LEAVE_QUOTE = "Full-time employees receive 25 working days of paid annual leave per calendar year"


def prepare_cases(kb, home: Path) -> dict[str, dict]:
    """One turn per case on ``kb`` (a knowledge base from ``build_probe_kb``), then notes.txt
    re-uploaded (the canteen turn's evidence becomes an older revision) and a gold label written
    for the term case. Returns question -> {turn, trace, threshold_chunk, old_chunk}."""
    from rag.ask import ask
    from rag.ingest.pipeline import UploadItem
    from rag.retrieval.trace import Dropped

    out = {}
    for question in (RECALL_QUESTION, SICK_QUESTION, TERM_QUESTION, CANTEEN_QUESTION, ZH_QUESTION):
        turn, trace = ask(kb, question, conversation="probe-cases")
        cut = [c.chunk_id for c in trace.candidates if c.dropped_by is Dropped.THRESHOLD]
        used = [c.chunk_id for c in trace.evidence()]
        out[question] = {
            "turn": turn.id,
            "trace": trace.id,
            "threshold_chunk": (cut or [""])[0],
            "old_chunk": (used or [""])[0],
        }
    kb.ingest([UploadItem(NOTES_NAME, NOTES_V2.encode(), ("facilities",))])
    gold = home / "goldsets" / kb.name / "probe.jsonl"
    gold.parent.mkdir(parents=True, exist_ok=True)
    item = {
        "id": "astro",
        "question": TERM_QUESTION,
        "relevant": [{"doc": "employee_handbook.md", "quote": LEAVE_QUOTE}],
    }
    gold.write_text(json.dumps(item) + "\n", encoding="utf-8")
    return out


if __name__ == "__main__":  # python tests/probe_support.py HOME: build 'demo' there, print the cases as JSON
    import os
    import sys

    os.environ["RAG_HOME"] = sys.argv[1]
    from rag.config import Settings
    from rag.embedder import load_embedder

    settings = Settings.from_env()
    print(json.dumps(prepare_cases(build_probe_kb(settings, load_embedder(settings), "demo"), settings.home)))
