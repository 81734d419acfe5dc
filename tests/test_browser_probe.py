"""The Inspector's "Why not" tab in Debian's Chromium, on a 'demo' knowledge base built beforehand
in a separate process (embedded Chroma is one process at a time) from the probe corpus, with the
default settings. Screenshots go to test-artifacts/browser-probe/."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from app_support import ROOT, act, chromium_page, require_chromium
from probe_support import CANTEEN_QUESTION, RECALL_QUESTION, SICK_QUESTION, TERM_QUESTION

from rag.bench.pages import AppServer, goto

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SHOTS = ROOT / "test-artifacts" / "browser-probe"


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    require_chromium()
    home = tmp_path_factory.mktemp("browser-probe") / "home"
    env = os.environ | {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    built = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "probe_support.py"), str(home)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-2000:]
    srv = AppServer(home).start()
    yield srv, json.loads(built.stdout.strip().splitlines()[-1])
    srv.stop()


@pytest.fixture(scope="module")
def page(cases):
    with chromium_page(SHOTS) as pg:
        yield pg


def open_why_not(page, cases, question: str) -> None:
    server, found = cases
    goto(page, f"{server.url}inspector?kb=demo&turn={found[question]['turn']}&tab=Why+not", 300_000)
    page.get_by_role("button", name="Why not?", exact=True).wait_for()


def probe_chunk(page, chunk_id: str) -> None:
    box = page.get_by_label("…or a chunk id (any revision)")
    box.fill(chunk_id)
    act(page, lambda: box.press("Enter"))
    act(page, lambda: page.get_by_role("button", name="Why not?", exact=True).click())


def main_text(page) -> str:
    return page.locator("main").inner_text()


def replay_first(page) -> None:
    act(page, lambda: page.get_by_role("button", name="Replay with this change").first.click())
    page.get_by_text("it is evidence").wait_for()


def test_1_outside_recall_k_found_by_a_phrase_then_replayed_in(page, cases):
    open_why_not(page, cases, RECALL_QUESTION)
    box = page.get_by_label("Find a document or chunk: a name or a phrase in it")
    box.fill("basement")
    act(page, lambda: box.press("Enter"))
    act(page, lambda: page.get_by_role("button", name="Why not?", exact=True).click())
    page.get_by_text("Excluded by recall_cut").wait_for()
    text = main_text(page)
    assert "bicycles.md" in text and "recall_k 20 → " in text and "had it been a candidate" in text
    assert page.locator(".rs-passage .rs-term").count() >= 1  # the matched term, marked in the chunk
    page.screenshot(path=str(SHOTS / "01-recall.png"), full_page=True)
    replay_first(page)
    page.screenshot(path=str(SHOTS / "02-recall-replayed.png"), full_page=True)


def test_2_cut_by_the_evidence_threshold(page, cases):
    open_why_not(page, cases, SICK_QUESTION)
    probe_chunk(page, cases[1][SICK_QUESTION]["threshold_chunk"])
    page.get_by_text("Excluded by threshold").wait_for()
    assert "evidence_min_score 0.1 → " in main_text(page)
    replay_first(page)
    page.screenshot(path=str(SHOTS / "03-threshold.png"), full_page=True)


def test_3_refused_by_the_absent_term_rule_from_the_gold_label(page, cases):
    open_why_not(page, cases, TERM_QUESTION)
    act(page, lambda: page.get_by_role("button", name="employee_handbook.md").first.click())
    page.get_by_text("Excluded by the absent-term rule").wait_for()
    text = main_text(page)
    assert "astronauts" in text and "ask without it" not in text and "Excluded by threshold" not in text
    assert "upload a document that covers 'astronauts'" in text
    page.screenshot(path=str(SHOTS / "04-term.png"), full_page=True)


def test_4_an_older_revision_is_not_active(page, cases):
    open_why_not(page, cases, CANTEEN_QUESTION)
    probe_chunk(page, cases[1][CANTEEN_QUESTION]["old_chunk"])
    page.get_by_text("Excluded by not_indexed").wait_for()
    text = main_text(page)
    assert "not active" in text and "replaced by revision 2" in text
    assert page.get_by_role("button", name="Replay with this change").count() == 0
    page.screenshot(path=str(SHOTS / "05-not-indexed.png"), full_page=True)
