"""The app as a user lives it, in Debian's Chromium: conversations that stay apart, a delete that
deletes, a re-upload that dates old answers, the gold-set picker, and the details of every page.

One ``streamlit run app.py`` on a free loopback port with an empty temp RAG_HOME (the demo
knowledge base is built on the first load); each ``new_page`` is its own browser context, so two
of them are two users. Every request any page makes is recorded: none may leave the machine.
Screenshots go to test-artifacts/journeys/.
"""

from __future__ import annotations

import json

import pytest
from app_support import ROOT, act, app_server, ask_in_chat, turns_shown, wait_for_turns

from rag.bench.pages import goto, launch, new_page, wait_rendered

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SHOTS = ROOT / "test-artifacts" / "journeys"
LEAVE = "How many days of paid annual leave do full-time employees get?"
SICK = "How many sick days can employees take?"
ROADMAP = "What is on the product roadmap for Q3?"
VAULT = ("vault_codes.md", "# Vault\n\nThe vault combination is 4417 and it is changed every quarter.\n")
LOCKER = ("locker_codes.md", "# Lockers\n\nThe locker code for the gym is 5521.\n")
LOCKER_V2 = "# Lockers\n\nThe locker code for the gym is 6632.\n"
GOLD = {"id": "leave", "question": LEAVE, "expected_docs": ["employee_handbook.md"]}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with app_server(tmp_path_factory, "journeys") as srv:
        yield srv


@pytest.fixture(scope="module")
def browser(server):
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        chromium = launch(pw)
        chromium.outside = []  # requests to anywhere but the app
        first = user(chromium)
        goto(first, server.url, 900_000)  # the first load builds the demo knowledge base
        first.close()
        yield chromium
        chromium.close()


def user(chromium):
    """A new browser context: another user, with cookies and session of its own."""
    page = new_page(chromium, viewport={"width": 1400, "height": 1600})
    page.set_default_timeout(180_000)
    local = ("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:", "about:")
    page.on("request", lambda r: None if r.url.startswith(local) else chromium.outside.append(r.url))
    return page


def shot(page, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def nav(page, title: str) -> None:
    act(page, lambda: page.locator('[data-testid="stSidebarNav"] a').filter(has_text=title).first.click())


ask = ask_in_chat


def questions_shown(page) -> list[str]:
    user_turns = page.locator('[data-testid="stChatMessage"]').filter(
        has=page.locator('[data-testid="stChatMessageAvatarUser"]')
    )
    return [t.strip() for t in user_turns.locator('[data-testid="stChatMessageContent"]').all_inner_texts()]


def conversation_of(page) -> str:
    from urllib.parse import parse_qs, urlparse

    return parse_qs(urlparse(page.url).query).get("c", [""])[0]


def upload(page, files: list[tuple[str, str]], ok: int) -> None:
    nav(page, "Upload")
    page.set_input_files(
        '[data-testid="stFileUploaderDropzoneInput"]',
        files=[{"name": n, "mimeType": "text/markdown", "buffer": t.encode()} for n, t in files],
    )
    for name, _ in files:  # the uploader lists each file, and none is still uploading
        page.locator('[data-testid="stFileChipName"]').filter(has_text=name).first.wait_for()
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stFileChipIconSpinner\"]')")
    act(page, lambda: page.get_by_role("button", name="Ingest").click())
    page.get_by_text(f"{ok} ok, 0 failed").wait_for(timeout=300_000)


def choose(page, label: str, option: str) -> None:
    """Pick ``option`` in the Streamlit selectbox labelled ``label``."""
    exact = page.locator('[data-testid="stWidgetLabel"]').get_by_text(label, exact=True)
    box = page.locator('[data-testid="stSelectbox"]').filter(has=exact).first
    wanted = page.get_by_role("option", name=option).first
    for _ in range(3):  # a rerun still drawing the page can close the list as it opens
        wait_rendered(page)
        box.click()
        try:
            wanted.wait_for(timeout=15_000)
            break
        except Exception:  # noqa: BLE001 (Playwright's TimeoutError): open it again
            page.keyboard.press("Escape")
    act(page, wanted.click)


def shown_choice(selectbox) -> str:
    """What a Streamlit selectbox shows as chosen (text, or its search box's value)."""
    values = [i.input_value() for i in selectbox.locator("input").all()]
    return " ".join([selectbox.inner_text(), *values])


# -- 1: conversations stay apart ----------------------------------------------------------
def test_two_users_keep_their_conversations_apart(browser, server):
    a, b = user(browser), user(browser)
    goto(a, server.url + "?kb=demo")
    goto(b, server.url + "?kb=demo")
    ask(a, LEAVE)
    ask(b, ROADMAP)
    ask(a, SICK)  # the second question joins the first: both stay on screen
    assert questions_shown(a) == [LEAVE, SICK]
    assert questions_shown(b) == [ROADMAP]
    conv_a, conv_b = conversation_of(a), conversation_of(b)
    assert conv_a.startswith("c-") and conv_b.startswith("c-") and conv_a != conv_b
    shot(a, "01-user-a")
    shot(b, "02-user-b")

    goto(b, server.url + "?kb=demo")  # a fresh visit is a new conversation, not A's latest one
    assert questions_shown(b) == [] and conversation_of(b) == ""
    goto(b, f"{server.url}?kb=demo&c={conv_a}")  # A's link opens A's conversation
    assert questions_shown(b) == [LEAVE, SICK]

    act(a, lambda: a.get_by_role("button", name="New conversation").click())
    assert questions_shown(a) == [] and conversation_of(a) == ""
    ask(a, ROADMAP)
    assert questions_shown(a) == [ROADMAP] and conversation_of(a) not in ("", conv_a, conv_b)
    a.close()
    b.close()


# -- 2: a delete that deletes; a re-upload dates the answers built on the old revision --------
def test_deleted_and_replaced_sources_are_marked_in_old_turns(browser, server):
    page = user(browser)
    goto(page, server.url + "?kb=demo")
    upload(page, [VAULT, LOCKER], ok=2)
    nav(page, "Chat")
    ask(page, "What is the vault combination?")
    ask(page, "What is the locker code for the gym?")
    turns = page.locator('[data-testid="stChatMessage"]')
    assert "4417" in turns.nth(1).inner_text() and "5521" in turns.nth(3).inner_text()

    upload(page, [(LOCKER[0], LOCKER_V2)], ok=1)  # revision 2
    nav(page, "Upload")
    page.get_by_text("Delete a document").click()
    choose(page, "Document", VAULT[0])
    act(page, lambda: page.get_by_text(f"Yes, delete '{VAULT[0]}'").click())
    act(page, lambda: page.get_by_role("button", name="Delete", exact=True).click())

    nav(page, "Chat")
    turns = page.locator('[data-testid="stChatMessage"]')
    vault_turn, locker_turn = turns.nth(1).inner_text(), turns.nth(3).inner_text()
    assert "4417" not in page.locator("main").inner_text()  # gone from the answer, its evidence, its sources
    assert "Source deleted" in vault_turn and "source deleted" in vault_turn
    assert "Out of date" in locker_turn and "revision 1" in locker_turn and "revision 2" in locker_turn
    shot(page, "03-deleted-and-outdated")

    before = turns_shown(page)
    act(page, lambda: turns.nth(3).get_by_role("button", name="Ask again").click())
    wait_for_turns(page, before + 1)
    assert "6632" in page.locator('[data-testid="stChatMessage"]').last.inner_text()
    shot(page, "04-asked-again")
    page.close()


# -- 8: every gold set in the picker; a saved one at once --------------------------------------
def test_the_gold_set_picker_lists_shipped_and_saved_sets(browser, server):
    page = user(browser)
    goto(page, server.url + "evaluation?kb=demo")
    picker = page.locator('[data-testid="stSelectbox"]').filter(has_text="Gold set").first
    picker.click()
    options = page.get_by_role("option").all_inner_texts()
    for shipped in ("gold-tune.jsonl", "gold-test.jsonl", "gold-zh-paraphrase.jsonl"):
        assert any(shipped in o for o in options), options
    page.keyboard.press("Escape")

    page.get_by_text("Add a gold set").click()
    page.set_input_files(
        '[data-testid="stFileUploaderDropzoneInput"]',
        files=[{"name": "my-questions.jsonl", "mimeType": "application/json", "buffer": json.dumps(GOLD).encode()}],
    )
    page.get_by_role("button", name="Save gold set").wait_for()  # the upload's own rerun is over
    wait_rendered(page)
    act(page, lambda: page.get_by_role("button", name="Save gold set").click())
    page.get_by_text("Saved 1 questions as my-questions.jsonl").wait_for(timeout=60_000)
    assert "my-questions.jsonl" in shown_choice(picker)  # listed and chosen, no reload
    shot(page, "05-gold-set-saved")
    page.close()


# -- 9: the details of every page ------------------------------------------------------------
def test_pages_have_no_deploy_button_and_chat_has_its_own_url(browser, server):
    page = user(browser)
    goto(page, server.url + "chat?kb=demo")
    assert page.locator("h1").first.inner_text() == "Chat"
    assert page.get_by_text("Page not found").count() == 0
    for title in ("Upload", "Retrieval Inspector", "Evaluation", "Chat"):
        nav(page, title)
        assert page.get_by_role("button", name="Deploy").count() == 0, title
        assert page.get_by_text("Deploy", exact=True).count() == 0, title
    icon = page.evaluate("[...document.querySelectorAll('link[rel*=icon]')].map(l => l.href)")
    assert icon and all(h.startswith(("data:", "http://127.0.0.1")) for h in icon), icon
    page.close()


def test_no_page_fetched_anything_from_the_internet(browser):
    assert browser.outside == [], browser.outside  # a favicon, a font, a tracker: nothing leaves the machine
