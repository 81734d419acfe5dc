"""Sign-in as a deployed team lives it, in Debian's Chromium: single sign-on against a real OpenID
Connect provider (``oidc-provider-mock``, started on a free loopback port in this process; the app
reaches it through ``st.login`` and a ``secrets.toml`` in a temp dir), and the built-in user list.

One data dir, seeded through the CLI: 'demo' (the handbook; bob is a reader) and 'legal' (a secret;
bob is no member). Signed in, bob sees only 'demo', is refused an upload with the role it needs, a
URL naming 'legal' opens 'demo', and after signing out the pages show nothing but the sign-in.
No request leaves the machine (the provider's CDN stylesheet is refused). Screenshots go to
test-artifacts/signin/.
"""

from __future__ import annotations

import pytest
from app_support import ROOT, require_chromium

from rag.bench.pages import click_nav, goto, launch, new_page
from rag.bench.signin import (
    READER,
    SECRET_DOC,
    app_server,
    keep_on_loopback,
    oidc_provider,
    seed_home,
    sign_in_oidc,
    sign_in_users,
    sign_out_oidc,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SHOTS = ROOT / "test-artifacts" / "signin"
REFUSAL = "'{who}' may not upload in knowledge base 'demo': that needs the editor role, and '{who}' is reader"


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    require_chromium()
    home = tmp_path_factory.mktemp("signin") / "home"
    home.mkdir()
    seed_home(home)
    return home


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        chromium = launch(pw)
        yield chromium
        chromium.close()


def fresh_page(browser):
    page = new_page(browser, viewport={"width": 1400, "height": 1400})
    page.set_default_timeout(180_000)
    page.refused = keep_on_loopback(page)
    return page


def sidebar(page):
    return page.locator('[data-testid="stSidebar"]')


def kb_options(page) -> list[str]:
    """What the sidebar's knowledge-base picker offers (opened, read, closed)."""
    sidebar(page).locator('[data-testid="stSelectbox"]').first.click()
    options = page.get_by_role("option")
    options.first.wait_for()
    texts = [t.strip() for t in options.all_inner_texts()]
    page.keyboard.press("Escape")
    return texts


def main_text(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


def assert_reader_of_demo_only(page, who: str) -> None:
    assert kb_options(page) == ["demo"]
    click_nav(page, "Upload")
    shown = main_text(page)
    assert REFUSAL.format(who=who) in shown  # the role the upload needs, and the one they hold
    assert "Documents (1)" in shown  # a reader still sees the documents
    assert page.locator('[data-testid="stFileUploader"]').count() == 0


def test_single_sign_on_shows_only_the_readers_knowledge_base_and_signs_out(home, browser, tmp_path):
    with oidc_provider() as issuer:
        server = app_server(home, "oidc", issuer, secrets_dir=tmp_path / "secrets")
        try:
            page = fresh_page(browser)
            goto(page, server.url)
            assert page.get_by_role("button", name="Sign in").is_visible()
            assert sidebar(page).locator('[data-testid="stSelectbox"]').count() == 0  # nothing before sign-in
            sign_in_oidc(page)
            page.screenshot(path=str(SHOTS / "oidc-signed-in.png"), full_page=True)
            assert f"Signed in as {READER.name}" in sidebar(page).inner_text()
            assert_reader_of_demo_only(page, READER.email)  # members are keyed by the e-mail
            page.screenshot(path=str(SHOTS / "oidc-upload-refused.png"), full_page=True)
            goto(page, server.url + "upload?kb=legal")  # a crafted URL naming the other knowledge base
            shown = main_text(page) + sidebar(page).inner_text()
            assert "Knowledge base demo" in shown and SECRET_DOC[0] not in shown and "bluefin" not in shown

            sign_out_oidc(page)
            goto(page, server.url + "upload?kb=demo")  # the session cookie is gone: sign-in only
            assert page.get_by_role("button", name="Sign in").is_visible()
            assert "employee_handbook.md" not in main_text(page)
            page.screenshot(path=str(SHOTS / "oidc-signed-out.png"), full_page=True)
            assert all("cdn.jsdelivr.net" in url for url in page.refused), page.refused  # the provider's CSS only
        finally:
            server.stop()


def test_the_built_in_user_list_signs_in_in_the_browser(home, browser):
    server = app_server(home, "users")
    try:
        page = fresh_page(browser)
        goto(page, server.url)
        sign_in_users(page)
        assert f"Signed in as {READER.name}" in sidebar(page).inner_text()
        assert_reader_of_demo_only(page, READER.sub)  # keyed by the user name
        sidebar(page).get_by_role("button", name="Sign out").click()
        page.get_by_label("User name").wait_for()
        assert not page.refused
    finally:
        server.stop()
