"""Sign-in for the pages: who is using the app, as a ``Principal`` the library checks roles for.

``RAG_AUTH`` picks how (read here, not in ``Settings``: the library never signs anyone in, it only
takes the principal it is given):

- ``none`` (default): no sign-in; the single local user is the owner of everything, as always;
- ``users``: the built-in user list (``python -m rag users add NAME``), a name and password form;
- ``oidc``: single sign-on through Streamlit's ``st.login`` / ``st.user`` (OpenID Connect via
  Authlib), configured in ``.streamlit/secrets.toml``; members are keyed by the e-mail the
  provider vouches for (its ``sub`` when it sends none).
"""

from __future__ import annotations

import os

import streamlit as st

from rag.errors import ConfigError, PermissionDenied, RagError, SignInFailed
from rag.store.access import LOCAL_OWNER, Action, Principal
from rag.views.highlight import md_escape

AUTH_MODES = ("none", "users", "oidc")
_KEY = "_principal"  # session state: the principal signed in with the user list
AUDIT_ROWS = 500


def auth_mode() -> str:
    mode = os.environ.get("RAG_AUTH", "none").strip().lower() or "none"
    if mode not in AUTH_MODES:
        raise ConfigError(f"RAG_AUTH='{mode}' is not a sign-in mode; use one of: {', '.join(AUTH_MODES)}.")
    return mode


def principal() -> Principal:
    """The signed-in principal; without one, the page shows the sign-in and ends there."""
    mode = auth_mode()
    if mode == "none":
        return LOCAL_OWNER
    if mode == "oidc":
        return _oidc_principal()
    who = st.session_state.get(_KEY)
    if isinstance(who, Principal) and not who.local:
        return who
    _password_form()
    st.stop()


# What `st.login()` (the default provider) needs in secrets.toml's [auth] table.
OIDC_KEYS = ("redirect_uri", "cookie_secret", "client_id", "client_secret", "server_metadata_url")


def _oidc_principal() -> Principal:
    if not st.user.get("is_logged_in"):  # absent, not False, where no auth cookie can exist (AppTest)
        _oidc_sign_in()
        st.stop()
    return oidc_principal(st.user.to_dict())


def oidc_principal(claims: dict) -> Principal:
    """The principal for an identity provider's claims: keyed by the e-mail it vouches for, by its
    ``sub`` when it sends none or says the e-mail is not verified (so an unverified address never
    inherits the memberships of whoever owns it)."""
    email = str(claims.get("email") or "").strip()
    if claims.get("email_verified") is False:
        email = ""
    ident = email or str(claims.get("sub") or "").strip()
    if not ident:
        raise SignInFailed(
            "The identity provider sent neither an e-mail nor a subject (sub) for this user.",
            fix="Ask its administrator to include the 'email' or 'sub' claim in the ID token.",
        )
    return Principal(ident, str(claims.get("name") or ident))


def _oidc_sign_in() -> None:
    st.title("Ragscope")
    missing = _oidc_config_missing()
    if missing:
        st.error(
            f"RAG_AUTH=oidc, but `.streamlit/secrets.toml` has no {', '.join(missing)} under `[auth]`. "
            "Add them (README: Sign-in) and restart the app.",
            icon=":material/lock:",
        )
        return
    st.info("Sign in to see the knowledge bases you are a member of.")
    st.button("Sign in", key="oidc_login", type="primary", on_click=st.login)


def _oidc_config_missing() -> list[str]:
    """The [auth] keys st.login needs that the secrets lack (all of them when there are no secrets)."""
    try:
        auth = st.secrets.get("auth") or {}
    except FileNotFoundError:  # no secrets.toml at all (StreamlitSecretNotFoundError)
        auth = {}
    return [f"`{k}`" for k in OIDC_KEYS if not auth.get(k)]


def _password_form() -> None:
    from appkit import settings
    from rag.kb import catalog_for
    from rag.store.users import sign_in

    st.title("Ragscope")
    with st.form("sign_in"):
        name = st.text_input("User name", key="sign_in_name")
        password = st.text_input("Password", type="password", key="sign_in_password")
        go = st.form_submit_button("Sign in", type="primary", key="sign_in_go")
    if go:
        try:
            st.session_state[_KEY] = sign_in(catalog_for(settings()), name, password)
        except RagError as exc:
            st.error(md_escape(str(exc)), icon=":material/lock:")
            return
        st.rerun()


def sign_out_control(who: Principal) -> None:
    """In the sidebar: who is signed in and a way out (nothing when sign-in is off)."""
    if who.local:
        return
    st.caption(f"Signed in as **{md_escape(who.label)}**")
    if auth_mode() == "oidc":
        st.button("Sign out", key="sign_out", on_click=st.logout)
    elif st.button("Sign out", key="sign_out"):
        for key in list(st.session_state):
            del st.session_state[key]  # nothing of this user stays in the session
        st.rerun()


def allowed_here(kb, action: Action) -> bool:
    """Whether the user may do ``action`` in ``kb``; when not, an info box says what role it needs
    (the library refuses the action itself either way)."""
    from appkit import user

    try:
        kb.require(user(), action)
    except PermissionDenied as exc:
        st.info(md_escape(str(exc)), icon=":material/lock:")
        return False
    return True


def audit_panel(kb) -> None:
    """Owners see the knowledge base's audit trail, newest first (export: ``python -m rag audit``)."""
    from appkit import user
    from rag.store import audit
    from rag.store.access import allowed, role_of

    if not allowed(role_of(kb.catalog, kb.name, user()), Action.AUDIT):
        return
    with st.expander("Audit trail (owners)"):
        rows = [
            {"at": e.at, "user": e.user_id, "action": e.action, "target": e.target, "detail": str(e.detail)}
            for e in reversed(audit.entries(kb.catalog, kb.name, limit=AUDIT_ROWS))
        ]
        st.dataframe(rows, hide_index=True, width="stretch", key="audit_table")
        st.caption(f"The newest {AUDIT_ROWS} at most; all of them: `python -m rag audit --kb {kb.name} --format csv`.")
