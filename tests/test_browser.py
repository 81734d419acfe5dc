"""End to end in Debian's Chromium: upload, ask, cited answer, citation opened in the Inspector, evaluation.

``streamlit run app.py`` starts on a free loopback port with an empty temp RAG_HOME, so the demo
knowledge base is built on the first page load (we wait for it). A document whose name and text
carry ``<script>`` / ``<img onerror>`` payloads is uploaded and shown on every page; each payload
would set ``window.__xss`` or open a dialog if it ever ran. Screenshots go to test-artifacts/browser/.
"""

from __future__ import annotations

import pytest
from app_support import HOSTILE_NAME, HOSTILE_TEXT, ROOT, ZEBRA_QUESTION, act, app_server, ask_in_chat, chromium_page

from rag.bench.pages import goto

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SHOTS = ROOT / "test-artifacts" / "browser"
FLEET_NAME = "fleet_policy.txt"
FLEET_TEXT = (
    "Fleet policy\n\nCompany cars must be serviced every 15,000 km or every 12 months, whichever comes first.\n"
    "Drivers log every trip in the fleet app within 24 hours.\n"
)
FLEET_QUESTION = "How often must company cars be serviced?"
XSS_GOLD = '{"id": "zebra", "question": "What is the zebra protocol code? <img src=x onerror=window.__xss=9>"}\n'


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with app_server(tmp_path_factory, "browser") as srv:
        yield srv


@pytest.fixture(scope="module")
def page(server):
    with chromium_page(SHOTS) as pg:
        pg.dialogs = []
        pg.on("dialog", lambda d: (pg.dialogs.append(d.message), d.dismiss()))
        goto(pg, server.url, 900_000)  # first start builds the demo knowledge base
        yield pg


def no_script_ran(page) -> None:
    assert page.evaluate("window.__xss === undefined"), "a payload ran"
    assert page.dialogs == [], page.dialogs
    assert page.locator('img[src="x"], main iframe, main svg[onload]').count() == 0


def nav(page, title: str) -> None:
    act(page, lambda: page.locator('[data-testid="stSidebarNav"] a').filter(has_text=title).first.click())


def shot(page, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


ask = ask_in_chat


def test_1_demo_knowledge_base_is_built_on_first_start(page):
    assert page.locator('[data-testid="stSidebar"]').get_by_text("demo").count() >= 1
    assert page.get_by_role("button", name="How many days of paid annual leave").count() == 1
    shot(page, "01-chat-first-start")
    no_script_ran(page)


def test_2_upload_documents_including_hostile_one(page):
    nav(page, "Upload")
    page.set_input_files(
        '[data-testid="stFileUploaderDropzoneInput"]',
        files=[
            {"name": FLEET_NAME, "mimeType": "text/plain", "buffer": FLEET_TEXT.encode()},
            {"name": HOSTILE_NAME, "mimeType": "text/markdown", "buffer": HOSTILE_TEXT.encode()},
        ],
    )
    page.get_by_text(FLEET_NAME).first.wait_for()
    act(page, lambda: page.get_by_role("button", name="Ingest").click())
    page.get_by_text("2 ok, 0 failed").wait_for(timeout=300_000)
    assert page.locator('[data-testid="stAlertContentSuccess"]').filter(has_text="fleet_policy").count() == 1
    shot(page, "02-upload")
    no_script_ran(page)


def test_3_chat_gives_a_cited_answer_with_highlighted_span(page):
    nav(page, "Chat")
    act(page, lambda: page.get_by_role("button", name="New conversation").click())
    ask(page, FLEET_QUESTION)
    answer = page.locator('[data-testid="stChatMessage"]').last
    assert "15,000 km" in answer.inner_text()
    marks = answer.locator(".rs-passage mark")
    assert marks.count() >= 1 and "15,000 km" in marks.first.inner_text()
    shot(page, "03-chat-answer")
    no_script_ran(page)


def test_4_citation_opens_in_the_inspector_with_the_span_highlighted(page):
    link = page.locator('[data-testid="stChatMessage"]').last.get_by_role("link", name="Inspect", exact=True).first
    act(page, link.click)
    assert "/inspector" in page.url and "turn=" in page.url and "cite=" in page.url
    mark = page.locator(".rs-passage mark").first
    mark.wait_for()
    assert "15,000 km" in mark.inner_text()
    assert page.get_by_role("tab", name="Sources", selected=True).count() == 1
    shot(page, "04-inspector-sources")
    act(page, lambda: page.get_by_role("tab", name="Candidates").click())
    assert page.locator('[data-testid="stDataFrame"]').count() >= 1
    shot(page, "05-inspector-ledger")
    act(page, lambda: page.get_by_role("tab", name="Scores & fallback").click())
    page.locator(".js-plotly-plot").first.wait_for()
    shot(page, "06-inspector-scores")
    no_script_ran(page)


def test_5_hostile_document_is_shown_escaped_in_chat_and_inspector(page):
    nav(page, "Chat")
    ask(page, ZEBRA_QUESTION)
    answer = page.locator('[data-testid="stChatMessage"]').last
    text = answer.inner_text()
    assert "ZX-42" in text and "<img src=x onerror=" in text  # shown as text, not markup
    shot(page, "07-chat-hostile")
    no_script_ran(page)
    act(page, answer.get_by_role("link", name="Open this turn in the Inspector").click)
    act(page, lambda: page.get_by_role("tab", name="Sources").click())
    sources = page.locator(".rs-passage").first
    sources.wait_for()
    assert "<script>window.__xss=3</script>" in page.locator("main").inner_text()
    shot(page, "08-inspector-hostile")
    no_script_ran(page)


def test_6_evaluation_runs_a_gold_set_and_shows_it(page, server):
    gold = server.home / "goldsets" / "demo" / "a-xss.jsonl"
    gold.parent.mkdir(parents=True, exist_ok=True)
    gold.write_text(XSS_GOLD, encoding="utf-8")
    nav(page, "Evaluation")
    act(page, lambda: page.get_by_role("button", name="Run evaluation").click())
    page.get_by_text("Per question").wait_for(timeout=300_000)
    assert page.locator(".js-plotly-plot").count() >= 1 or page.get_by_text("Runs to show").count() == 1
    shot(page, "09-evaluation")
    no_script_ran(page)
