"""The demo knowledge base: the documents in data/demo, ingested on first start."""

from __future__ import annotations

import json
from pathlib import Path

from rag.config import Settings
from rag.ingest.pipeline import UploadItem
from rag.ingest.safety import SUPPORTED_EXTENSIONS

DEMO_DIR = Path(__file__).resolve().parent.parent / "data" / "demo"
DEMO_KB = "demo"
# the demo gold set: settings may be chosen on the tune split; the test split is report-only
DEMO_GOLD_TUNE = DEMO_DIR / "gold-tune.jsonl"
DEMO_GOLD_TEST = DEMO_DIR / "gold-test.jsonl"


def demo_files() -> list[Path]:
    return sorted(p for p in DEMO_DIR.iterdir() if p.suffix.lower() in SUPPORTED_EXTENSIONS and p.is_file())


def example_questions() -> list[str]:
    path = DEMO_DIR / "questions.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else []


def ensure_demo_kb(settings: Settings, force: bool = False, progress=None):
    """Open the demo knowledge base, ingesting the demo files when missing or changed (a no-op otherwise)."""
    from rag.kb import KnowledgeBase

    kb = KnowledgeBase(DEMO_KB, settings)
    present = {d.name for d in kb.documents()}
    files = demo_files()
    if force or {p.name for p in files} - present:
        items = [UploadItem(p.name, p.read_bytes(), ("demo",)) for p in files]
        kb.ingest(items, **({"progress": progress} if progress else {}))
    return kb
