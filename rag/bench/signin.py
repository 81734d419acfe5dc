"""``python -m rag bench signin``: what sign-in adds to a page load, in Debian's Chromium; and the
pieces the sign-in browser tests share (the identity provider, ``secrets.toml``, the sign-in steps).

The identity provider is ``oidc-provider-mock`` (PyPI, a test OpenID Connect provider built on
Flask and Authlib's server classes: authorization code flow, a discovery document, JWKS, RS256 ID
tokens, userinfo, an end-session page), run in a thread of this process on a free loopback port.
Its authorize page is a form with a subject field: filling it in approves that user, with the
claims given here. The app reaches it through Streamlit's own ``st.login``, configured by a
``secrets.toml`` written to a temp dir and named in ``STREAMLIT_SECRETS_FILES``.

For each sign-in mode (``RAG_AUTH`` none, users, oidc) the bench starts ``streamlit run app.py``
over a copy of one data dir (two knowledge bases; the reader is a member of one), signs in, warms
every page, then takes ``--repeat`` rounds, the modes taking turns within each, and times:

* ``load``: a full browser load of the Chat page (new session) until rendered, signed in: with
  ``oidc`` the session cookie does it; with ``users`` a new session signs in again, so the form
  and its argon2 check are part of it;
* ``sign-in``: from the sign-in click until Chat is rendered (``oidc``: the provider's round trip,
  its form filled by the script; ``users``: the form's submit);
* ``click``: the sidebar link to Chat from Upload, within a session (a rerun).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from rag.bench.pages import ROOT, AppServer, click_nav, goto, launch, new_page, wait_rendered, watch_run

MODES = ("none", "users", "oidc")
LOCAL_HOSTS = ("127.0.0.1", "localhost")  # the app and the identity provider
LOCAL_SCHEMES = ("data", "blob", "about")
SECRET_DOC = ("merger.md", "# Merger\n\nThe merger with Heron Ltd closes on 3 March. Codename: bluefin.\n")


@dataclass(frozen=True)
class Account:
    """One person, as the identity provider and the built-in user list both know them."""

    sub: str  # the provider's subject, and the user name in the built-in list
    email: str
    name: str
    password: str

    def claims(self) -> dict[str, object]:
        return {"email": self.email, "email_verified": True, "name": self.name}


READER = Account("bob", "bob@example.com", "Bob Reader", "bob password 1")


# -- the data dir ---------------------------------------------------------------------------------
def seed_home(home: Path, reader: Account = READER) -> None:
    """Two knowledge bases through the real CLI, in a child process (embedded Chroma is one
    process's): 'demo' (the handbook; ``reader`` reads it, by e-mail for OpenID Connect and by
    user name for the built-in list) and 'legal' (a secret; ``reader`` is no member)."""
    secret = home.parent / SECRET_DOC[0]
    secret.write_text(SECRET_DOC[1], encoding="utf-8")
    commands = [
        ["ingest", str(ROOT / "data" / "demo" / "employee_handbook.md"), "--kb", "demo"],
        ["ingest", str(secret), "--kb", "legal"],
        ["users", "add", reader.sub, "--display-name", reader.name],
        ["members", "--kb", "demo", "add", reader.email, "reader"],
        ["members", "--kb", "demo", "add", reader.sub, "reader"],
    ]
    script = "import json, sys\nfrom rag.cli.main import main\nfor argv in json.loads(sys.argv[1]):\n"
    script += "    if main(argv):\n        sys.exit(f'failed: {argv}')\n"
    env = {**os.environ, "RAG_HOME": str(home), "RAG_NEW_PASSWORD": reader.password, "HF_HUB_OFFLINE": "1"}
    env.pop("RAG_USER", None)
    subprocess.run([sys.executable, "-c", script, json.dumps(commands)], env=env, cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip


# -- the identity provider and the app's secrets ---------------------------------------------------
@contextmanager
def oidc_provider(accounts: tuple[Account, ...] = (READER,)) -> Iterator[str]:
    """An OpenID Connect provider on a free loopback port; yields its issuer URL."""
    from oidc_provider_mock import User, run_server_in_thread

    saved = os.environ.get("AUTHLIB_INSECURE_TRANSPORT")
    os.environ["AUTHLIB_INSECURE_TRANSPORT"] = "1"  # plain http on loopback; Authlib wants https otherwise
    users = [User(sub=a.sub, claims=a.claims()) for a in accounts]
    try:
        with run_server_in_thread(user_claims=users) as server:
            yield f"http://localhost:{server.server_port}"
    finally:
        if saved is None:
            os.environ.pop("AUTHLIB_INSECURE_TRANSPORT", None)
        else:
            os.environ["AUTHLIB_INSECURE_TRANSPORT"] = saved


def write_secrets(folder: Path, issuer: str, app_port: int) -> Path:
    """``secrets.toml`` with the ``[auth]`` table st.login reads, as Streamlit documents it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "secrets.toml"
    path.write_text(
        "[auth]\n"
        f'redirect_uri = "http://127.0.0.1:{app_port}/oauth2callback"\n'
        f'cookie_secret = "{os.urandom(24).hex()}"\n'
        'client_id = "ragscope"\n'
        'client_secret = "ragscope-test-secret"\n'
        f'server_metadata_url = "{issuer}/.well-known/openid-configuration"\n',
        encoding="utf-8",
    )
    return path


def app_server(home: Path, mode: str, issuer: str = "", secrets_dir: Path | None = None) -> AppServer:
    """The app over ``home`` with ``RAG_AUTH=mode`` (oidc: its secrets point at ``issuer``); started."""
    server = AppServer(home, env={"RAG_AUTH": mode})
    if mode == "oidc":
        folder = secrets_dir or Path(tempfile.mkdtemp(prefix="rag-secrets-"))
        server.env["STREAMLIT_SECRETS_FILES"] = str(write_secrets(folder, issuer, server.port))
    return server.start()


# -- in the browser --------------------------------------------------------------------------------
def keep_on_loopback(page) -> list[str]:
    """Refuse every request that would leave the machine; returns the list of those refused
    (the provider's pages link a stylesheet from a CDN)."""
    refused: list[str] = []

    def route(r) -> None:
        url = urlparse(r.request.url)
        if url.hostname in LOCAL_HOSTS or url.scheme in LOCAL_SCHEMES:
            r.continue_()
        else:
            refused.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    return refused


def sign_in_oidc(page, account: Account = READER) -> None:
    """From the app's sign-in page: the provider's form, approve ``account``, back to Chat."""
    page.get_by_role("button", name="Sign in").click()
    page.locator('input[name="sub"]').fill(account.sub)  # the provider's authorize form
    watch_run(page)
    page.get_by_role("button", name="Authorize").click()
    page.wait_for_url("http://127.0.0.1:*/**")
    wait_rendered(page, watched=True)


def sign_in_users(page, account: Account = READER) -> None:
    """The built-in user list's form: name, password, submit; until Chat is rendered."""
    page.get_by_label("User name").fill(account.sub)
    page.get_by_label("Password", exact=True).fill(account.password)
    watch_run(page)
    page.get_by_role("button", name="Sign in").click()
    page.locator('[data-testid="stSidebar"]').get_by_text("Signed in as").wait_for()
    wait_rendered(page, watched=True)


def sign_out_oidc(page) -> None:
    """Sign out; the provider's end-session page is confirmed, and it sends the browser back."""
    page.locator('[data-testid="stSidebar"]').get_by_role("button", name="Sign out").click()
    page.get_by_role("button", name="End session").click()
    page.wait_for_url("http://127.0.0.1:*/**")
    page.get_by_role("button", name="Sign in").wait_for()
    wait_rendered(page)


# -- the bench -------------------------------------------------------------------------------------
def _timed(action) -> float:
    t = time.perf_counter()
    action()
    return time.perf_counter() - t


@dataclass
class Lane:
    """One sign-in mode under test: its app server (over its own copy of the data dir), its page."""

    mode: str
    server: AppServer
    page: object
    times: dict[str, list[float]] = field(default_factory=lambda: {"load": [], "sign-in": [], "click": []})

    def sign_in(self) -> None:
        {"users": sign_in_users, "oidc": sign_in_oidc}[self.mode](self.page)

    def warm_up(self) -> None:
        goto(self.page, self.server.url, 600_000)
        if self.mode != "none":
            self.sign_in()
        for title in ("Upload", "Retrieval Inspector", "Evaluation", "Chat"):  # models, caches, imports
            click_nav(self.page, title)

    def round(self) -> None:
        """One timed ``load``, ``sign-in`` (with sign-in on) and ``click`` (see the module docstring)."""
        page, url, t = self.page, self.server.url, self.times
        if self.mode == "oidc":
            page.context.clear_cookies()
            goto(page, url)
            t["sign-in"].append(_timed(self.sign_in))
            t["load"].append(goto(page, url))
        elif self.mode == "users":
            form = goto(page, url)  # a new session: the form again
            t["sign-in"].append(_timed(self.sign_in))
            t["load"].append(form + t["sign-in"][-1])
        else:
            t["load"].append(goto(page, url))
        click_nav(page, "Upload")
        t["click"].append(click_nav(page, "Chat"))


def measure(home: Path, modes: list[str], issuer: str, repeat: int) -> dict[str, dict[str, list[float]]]:
    """Every mode's times, the modes taking turns each round (a machine whose load drifts slows
    them alike); each app has its own copy of ``home`` (embedded Chroma is one process's)."""
    from playwright.sync_api import sync_playwright

    servers = []
    try:
        for mode in modes:
            copy = home.parent / f"home-{mode}"
            shutil.copytree(home, copy)
            servers.append(app_server(copy, mode, issuer))
        with sync_playwright() as pw:
            browser = launch(pw)
            lanes = [Lane(s.env["RAG_AUTH"], s, _bench_page(browser)) for s in servers]
            for lane in lanes:
                lane.warm_up()
            for _ in range(repeat):
                for lane in lanes:
                    lane.round()
            browser.close()
    finally:
        for server in servers:
            server.stop()
    return {lane.mode: lane.times for lane in lanes}


def _bench_page(browser):
    page = new_page(browser, viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(120_000)
    keep_on_loopback(page)
    return page


def report(results: dict[str, dict[str, list[float]]]) -> str:
    base = statistics.median(results["none"]["load"]) if "none" in results else None
    lines = [f"{'RAG_AUTH':<10}{'load p50':>10}{'load max':>10}{'+ vs none':>11}{'sign-in p50':>13}"
             f"{'sign-in max':>13}{'click p50':>11}{'click max':>11}"]  # fmt: skip
    for mode, runs in results.items():
        load, sign, click = runs["load"], runs["sign-in"], runs["click"]
        extra = f"{statistics.median(load) - base:>+11.3f}" if base is not None else f"{'':>11}"
        signs = f"{statistics.median(sign):>13.3f}{max(sign):>13.3f}" if sign else f"{'-':>13}{'-':>13}"
        lines.append(f"{mode:<10}{statistics.median(load):>10.3f}{max(load):>10.3f}{extra}{signs}"
                     f"{statistics.median(click):>11.3f}{max(click):>11.3f}")  # fmt: skip
    return "\n".join(lines)


def main(args) -> int:
    root = Path(tempfile.mkdtemp(prefix="rag-bench-signin-"))
    home = root / "home"
    home.mkdir()
    seed_home(home)
    with oidc_provider() as issuer:
        results = measure(home, args.modes, issuer, args.repeat)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"Chat page times in seconds, {args.repeat} rounds, the modes taking turns (warm models; data: {home})")
    print(f"machine: {os.cpu_count()} CPUs, load average {load}")
    print(f"identity provider: oidc-provider-mock in this process at {issuer} (st.login, authorization code flow)")
    print("load: full browser load of Chat (new session), signed in; sign-in: sign-in click -> Chat rendered;")
    print("click: sidebar link Upload -> Chat (a rerun)")
    print(report(results))
    return 0


def add_signin_parser(bsub) -> None:
    p = bsub.add_parser("signin", help="what sign-in (none / users / oidc) adds to a Chat page load, in Chromium")
    p.add_argument("--repeat", type=int, default=5, help="timed loads per mode")
    p.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES), help="sign-in modes to time")
    p.set_defaults(func=main)
