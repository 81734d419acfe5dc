"""The chatting users of ``python -m rag bench soak``: one headless Chromium each, asking the demo
questions in one language, opening some of their own turns in the Inspector and replaying them.

Every action is timed (``ask``, ``inspector open``, ``replay``, ``back to chat``, ``new
conversation``); after each one the page is read for what a user would see go wrong: a raw
exception (``stException``) or an error box (``st.error``, ``stAlertContentError``). Each
question is recorded with the conversation it went to and whether the page showed its turn, so
the end-of-run check can compare what was asked with the chat history in the catalog.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from rag.bench.pages import goto, launch, new_page, wait_rendered, watch_run
from rag.demo import DEMO_GOLD_TUNE, example_questions
from rag.text.script import HAN_RE

TURN_LINK = "Open this turn in the Inspector"
ERROR_SELECTORS = {"exception": '[data-testid="stException"]', "error": '[data-testid="stAlertContentError"]'}
ACTION_TIMEOUT_MS = 180_000  # a loaded machine is slow; a page that takes longer than this has stalled


def has_cjk(text: str) -> bool:
    return bool(HAN_RE.search(text))


def questions(language: str) -> list[str]:
    """The demo's example questions and its tune-split gold questions in ``language`` (en | zh)."""
    gold = [json.loads(line)["question"] for line in DEMO_GOLD_TUNE.read_text(encoding="utf-8").splitlines() if line]
    pool = list(dict.fromkeys(example_questions() + gold))
    picked = [q for q in pool if has_cjk(q) == (language == "zh")]
    if not picked:
        raise ValueError(f"no demo questions in language {language!r} (en | zh)")
    return picked


@dataclass
class Asked:
    """One question typed into Chat."""

    user: str
    question: str
    conversation: str  # '' when the turn never showed (a new conversation gets its id with its first turn)
    shown: bool  # the page drew the turn from the history
    at_s: float


@dataclass
class Shown:
    """Something wrong a user saw on the page."""

    user: str
    action: str
    kind: str  # exception | error | stall
    text: str
    at_s: float


@dataclass
class ChatUser:
    name: str
    language: str
    url: str
    deadline: float  # time.time() after which no new action starts
    t0: float
    shots: Path
    inspect_every: int = 3  # every Nth turn is opened in the Inspector and replayed
    new_conversation_every: int = 12  # turns per conversation
    asked: list[Asked] = field(default_factory=list)
    shown: list[Shown] = field(default_factory=list)
    timings: dict[str, list[float]] = field(default_factory=dict)
    history_mismatches: list[str] = field(default_factory=list)
    crashed: str = ""
    conversation: str = ""  # the conversation the page shows ('' before its first turn)

    def thread(self) -> threading.Thread:
        return threading.Thread(target=self.run, name=f"soak-{self.name}", daemon=True)

    def run(self) -> None:
        from playwright.sync_api import sync_playwright

        try:
            with sync_playwright() as pw:
                browser = launch(pw)
                page = new_page(browser, viewport={"width": 1400, "height": 1400})
                page.set_default_timeout(ACTION_TIMEOUT_MS)
                goto(page, self.url, 900_000)
                self._loop(page)
                browser.close()
        except Exception as exc:  # the driver itself broke: reported, never hidden
            self.crashed = f"{type(exc).__name__}: {exc}"

    def _loop(self, page) -> None:
        pool, n, in_conversation = questions(self.language), 0, 0
        while time.time() < self.deadline:
            ok = self._step(page, "ask", self._ask, pool[n % len(pool)], in_conversation)
            n += 1
            in_conversation += 1 if ok else 0
            if ok and n % self.inspect_every == 0 and time.time() < self.deadline:
                self._step(page, "inspector open", self._open_inspector)
                self._step(page, "replay", self._replay)
                self._step(page, "back to chat", self._back_to_chat, in_conversation)
            if in_conversation >= self.new_conversation_every and time.time() < self.deadline:
                if self._step(page, "new conversation", self._new_conversation):
                    in_conversation = 0

    def _now(self) -> float:
        return time.time() - self.t0

    def _step(self, page, action: str, do, *args) -> bool:
        """Run one timed action; read the page for errors after it; a stall reloads the page."""
        start = time.perf_counter()
        try:
            ok = do(page, *args)
        except Exception as exc:  # a timeout: the page never finished rendering
            self.shown.append(Shown(self.name, action, "stall", f"{type(exc).__name__}: {exc}"[:400], self._now()))
            self._screenshot(page, action)
            self._recover(page)
            return False
        self.timings.setdefault(action, []).append(time.perf_counter() - start)
        for kind, selector in ERROR_SELECTORS.items():
            for text in page.locator(selector).all_inner_texts():
                self.shown.append(Shown(self.name, action, kind, text.strip()[:400], self._now()))
                self._screenshot(page, action)
        return ok

    def _screenshot(self, page, action: str) -> None:
        self.shots.mkdir(parents=True, exist_ok=True)
        name = f"{self.name}-{len(self.shown):03d}-{action.replace(' ', '-')}.png"
        try:
            page.screenshot(path=str(self.shots / name), full_page=True)
        except Exception:  # noqa: BLE001 - a screenshot is a courtesy; the error is already recorded
            pass

    def _recover(self, page) -> None:
        try:
            goto(page, self.url + self._conversation_query(page), ACTION_TIMEOUT_MS)
        except Exception as exc:  # recorded; the next action will try again
            self.shown.append(Shown(self.name, "reload", "stall", f"{type(exc).__name__}: {exc}"[:400], self._now()))

    def _conversation_query(self, page) -> str:
        return f"?c={self.conversation}" if self.conversation else ""

    def _act(self, page, action) -> None:
        watch_run(page)
        action()
        wait_rendered(page, ACTION_TIMEOUT_MS, watched=True)

    def _ask(self, page, question: str, before: int) -> bool:
        box = page.locator('[data-testid="stChatInputTextArea"]')
        box.fill(question)
        self._act(page, lambda: box.press("Enter"))
        shown = turns_shown(page)
        ok = shown == before + 1
        if ok:
            self.conversation = conversation_of(page.url)
        self.asked.append(Asked(self.name, question, self.conversation if ok else "", ok, self._now()))
        if not ok and shown != before:  # the page drew a history other than the one it had plus this turn
            self.history_mismatches.append(f"{self.name}: {shown} turns shown after asking, {before + 1} expected")
        return ok

    def _open_inspector(self, page) -> bool:
        link = page.locator('[data-testid="stChatMessage"]').last.get_by_role("link", name=TURN_LINK)
        self._act(page, link.click)
        return "/inspector" in page.url

    def _replay(self, page) -> bool:
        if not page.get_by_role("tab", name="Replay", selected=True).count():  # the tab kept from the last visit
            self._act(page, lambda: page.get_by_role("tab", name="Replay").click())
        self._act(page, lambda: page.get_by_role("button", name="Replay with these settings").click())
        return page.locator('[data-testid="stDataFrame"]').count() > 0

    def _back_to_chat(self, page, expected_turns: int) -> bool:
        self._act(page, lambda: page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Chat").first.click())
        shown = turns_shown(page)
        if shown != expected_turns:
            self.history_mismatches.append(f"{self.name}: back in Chat {shown} turns shown, {expected_turns} expected")
        return shown == expected_turns

    def _new_conversation(self, page) -> bool:
        self._act(page, lambda: page.get_by_role("button", name="New conversation").click())
        self.conversation = ""
        return turns_shown(page) == 0


def turns_shown(page) -> int:
    return page.get_by_role("link", name=TURN_LINK).count()


def conversation_of(url: str) -> str:
    return parse_qs(urlparse(url).query).get("c", [""])[0]
