"""RAG_AUTH=oidc through the real app script (AppTest): the sign-in page names what ``[auth]`` in
secrets.toml lacks, and offers st.login once it is complete; the provider's claims become the
principal members are keyed by. The sign-in itself, against a real provider: test_browser_signin."""

from __future__ import annotations

import pytest
from app_support import ROOT, app_home, texts
from streamlit.testing.v1 import AppTest

from appkit.auth import OIDC_KEYS, oidc_principal
from rag.errors import SignInFailed

AUTH = {
    "redirect_uri": "http://127.0.0.1:8501/oauth2callback",
    "cookie_secret": "a long random cookie secret",
    "client_id": "ragscope",
    "client_secret": "ragscope-secret",
    "server_metadata_url": "http://127.0.0.1:9/.well-known/openid-configuration",
}


def sign_in_page(tmp_path, monkeypatch, auth: dict | None) -> AppTest:
    monkeypatch.setenv("RAG_AUTH", "oidc")
    with app_home(tmp_path / "home"):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        if auth is not None:
            at.secrets["auth"] = auth
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.slow
def test_an_incomplete_auth_table_is_named_on_the_sign_in_page(tmp_path, monkeypatch):
    at = sign_in_page(tmp_path, monkeypatch, {k: v for k, v in AUTH.items() if k != "client_secret"})
    assert "has no `client_secret` under `[auth]`" in texts(at.error)
    assert not [b for b in at.button if b.key == "oidc_login"]
    at = sign_in_page(tmp_path, monkeypatch, None)
    assert all(f"`{k}`" in texts(at.error) for k in OIDC_KEYS)


@pytest.mark.slow
def test_a_complete_auth_table_offers_sign_in_and_nothing_else(tmp_path, monkeypatch):
    at = sign_in_page(tmp_path, monkeypatch, AUTH)
    assert at.button(key="oidc_login").label == "Sign in"
    assert not at.error and not [s for s in at.selectbox if s.key == "kb"]


def test_claims_become_the_principal_members_are_keyed_by():
    bob = oidc_principal({"sub": "u-17", "email": "bob@example.com", "email_verified": True, "name": "Bob"})
    assert (bob.id, bob.label, bob.local) == ("bob@example.com", "Bob", False)
    assert oidc_principal({"sub": "u-17"}).id == "u-17"  # no e-mail: the subject
    unverified = oidc_principal({"sub": "u-18", "email": "ceo@example.com", "email_verified": False})
    assert unverified.id == "u-18"  # an unverified address never inherits its owner's memberships
    with pytest.raises(SignInFailed, match="neither an e-mail nor a subject"):
        oidc_principal({"name": "Nobody"})
