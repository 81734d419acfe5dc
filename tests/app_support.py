"""Shared by the app tests (AppTest and browser): a hostile document, a tiny gold set, the KB builder."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "data" / "demo"

# The upload name and the text both carry script payloads; each sets window.__xss if it ever runs.
HOSTILE_NAME = "<img src=x onerror=window.__xss=1> <script>window.__xss=2<script> zebra.md"
HOSTILE_TEXT = """# Zebra incident codes <script>window.__xss=3</script>

The zebra protocol code is ZX-42 <img src=x onerror="window.__xss=4;alert(4)"> and zebra incidents
must be reported to the security desk within 2 hours. <svg onload="window.__xss=5"></svg>

## Notes <iframe src="javascript:window.__xss=6"></iframe>

See [the runbook](javascript:window.__xss=7) for **zebra** escalation; costs are $5 to $10 per call.
"""
ZEBRA_QUESTION = "What is the zebra protocol code?"
ANSWERABLE = "How many days of paid annual leave do full-time employees get?"
UNANSWERABLE = "What is the capital of Mongolia?"


def small_goldset() -> str:
    """Two questions over the test knowledge base: one answerable (with a quote), one to refuse."""
    items = [
        {
            "id": "leave",
            "question": ANSWERABLE,
            "expected_docs": ["employee_handbook.md"],
            "relevant": [
                {
                    "doc": "employee_handbook.md",
                    "quote": "Full-time employees receive 25 working days of paid annual leave per calendar year",
                    "grade": 2,
                }
            ],
            "reference_answer": "25 working days",
        },
        {"id": "mongolia", "question": UNANSWERABLE, "should_refuse": True},
    ]
    return "\n".join(json.dumps(i) for i in items) + "\n"


def build_kb(settings, embedder, name: str = "demo"):
    """A small real knowledge base: the demo handbook plus the hostile document."""
    from rag.ingest.pipeline import UploadItem
    from rag.kb import KnowledgeBase

    kb = KnowledgeBase(name, settings, embedder)
    handbook = DEMO / "employee_handbook.md"
    kb.ingest(
        [
            UploadItem(handbook.name, handbook.read_bytes(), ("demo",)),
            UploadItem(HOSTILE_NAME, HOSTILE_TEXT.encode(), ("hostile",)),
        ]
    )
    return kb


@contextmanager
def app_home(home: Path) -> Iterator[None]:
    """RAG_HOME pointed at ``home`` for AppTest runs, Streamlit's resource cache cleared on the way
    in and out (the pages cache the knowledge base per data dir), the old value restored after."""
    import streamlit as st

    saved = os.environ.get("RAG_HOME")
    os.environ["RAG_HOME"] = str(home)
    st.cache_resource.clear()
    try:
        yield
    finally:
        st.cache_resource.clear()
        if saved is None:
            os.environ.pop("RAG_HOME", None)
        else:
            os.environ["RAG_HOME"] = saved


# -- AppTest helpers -------------------------------------------------------------------
def frame(at, column: str):
    """The (only) table with ``column``: plain st.dataframe tables are not widgets, so have no key."""
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert len(found) == 1, f"{len(found)} tables with a '{column}' column"
    return found[0]


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


# -- Chromium helpers ------------------------------------------------------------------
def require_chromium() -> None:
    import pytest

    from rag.bench.pages import CHROMIUM

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (`apt-get install chromium`, see .ci/run)")


@contextmanager
def chromium_page(shots: Path):
    """One page in Debian's Chromium (1400 x 1600), with ``shots`` emptied for its screenshots.
    Waits allow 120 s: a loaded CI machine is slow, and they end as soon as the page is ready."""
    import shutil

    from playwright.sync_api import sync_playwright

    from rag.bench.pages import launch, new_page

    if shots.exists():
        shutil.rmtree(shots)
    shots.mkdir(parents=True)
    with sync_playwright() as pw:
        browser = launch(pw)
        page = new_page(browser, viewport={"width": 1400, "height": 1600})
        page.set_default_timeout(120_000)
        try:
            yield page
        finally:
            browser.close()


def act(page, action) -> None:
    """Do ``action`` and wait until the Streamlit rerun it starts has rendered."""
    from rag.bench.pages import wait_rendered, watch_run

    watch_run(page)
    action()
    wait_rendered(page, watched=True)


@contextmanager
def app_server(tmp_path_factory, name: str):
    """``streamlit run app.py`` on a free loopback port over an empty RAG_HOME (the first page
    load builds the demo knowledge base), stopped afterwards."""
    from rag.bench.pages import AppServer

    require_chromium()
    home = tmp_path_factory.mktemp(name) / "home"
    home.mkdir()
    server = AppServer(home).start()
    try:
        yield server
    finally:
        server.stop()


TURN_LINK = "Open this turn in the Inspector"


def turns_shown(page) -> int:
    return page.get_by_role("link", name=TURN_LINK).count()


def wait_for_turns(page, n: int) -> None:
    """Until ``n`` chat turns are drawn from the history (each has its Inspector link)."""
    from rag.bench.pages import wait_rendered

    page.wait_for_function(
        "n => [...document.querySelectorAll('a')].filter(a => a.innerText.includes('Open this turn')).length >= n",
        arg=n,
        timeout=180_000,
    )
    wait_rendered(page)


def ask_in_chat(page, question: str):
    """Type ``question`` into Chat, wait until its turn is redrawn from the history (with its
    footnotes and links), and return that turn's last chat message."""
    box = page.locator('[data-testid="stChatInputTextArea"]')
    box.fill(question)
    before = turns_shown(page)
    act(page, lambda: box.press("Enter"))
    wait_for_turns(page, before + 1)
    return page.locator('[data-testid="stChatMessage"]').last
