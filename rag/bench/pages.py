"""``python -m rag bench pages``: time from navigation to a fully rendered page, in a real browser.

Starts ``streamlit run app.py`` on a free loopback port (against ``RAG_HOME`` or a temp copy of
nothing: the demo knowledge base is built on first start), drives Debian's Chromium with
Playwright, asks one question so Chat and the Inspector have a turn to show, warms every page
once (models load on first use), then times each page ``--repeat`` times two ways:

* ``click``: a click on the sidebar link until the script run has finished, no element is
  stale and two animation frames have painted (in-app navigation, the usual case);
* ``load``: a full browser load of the page's URL (new session) until the same condition.

With the clicks it also prints the renderer's main-thread CPU time (Chrome's ``TaskDuration``),
which depends far less than wall time on whatever else the machine is doing.

``AppServer`` and ``wait_rendered`` are also used by the browser tests.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PAGES = {"Chat": "", "Upload": "upload", "Retrieval Inspector": "inspector", "Evaluation": "evaluation"}
GOAL_S = {"Chat": 1.0, "Upload": 1.0, "Retrieval Inspector": 1.0}
BENCH_QUESTION = "How many days of paid annual leave do full-time employees get?"
_SETTLED = """() => !document.querySelector('[data-stale="true"]')
  && !document.querySelector('[data-testid="stSkeleton"]')
  && new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class AppServer:
    """``streamlit run app.py`` on a free loopback port, with its own environment."""

    home: Path
    env: dict[str, str] = field(default_factory=dict)
    script: Path = ROOT / "app.py"
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self, timeout: float = 120) -> AppServer:
        env = {**os.environ, "RAG_HOME": str(self.home), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
        cmd = [sys.executable, "-m", "streamlit", "run", str(self.script), "--server.port", str(self.port),
               "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false",
               "--server.fileWatcherType", "none"]  # fmt: skip
        self.log = open(Path(tempfile.gettempdir()) / f"ragscope-streamlit-{self.port}.log", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            cmd, cwd=self.script.parent, env={**env, **self.env}, stdout=self.log, stderr=subprocess.STDOUT
        )
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with {self.proc.returncode}; see {self.log.name}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            time.sleep(0.2)
        raise RuntimeError(f"streamlit did not listen on {self.port} within {timeout:.0f} s")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if getattr(self, "log", None):
            self.log.close()


def launch(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)


class RunWatch:
    """Counts the app's finished script runs as the server reports them over the page's websocket.

    The ``script_finished`` message is the signal the frontend itself acts on; the DOM's run-state
    attribute can skip ``running`` altogether when a run is quick, so it cannot be waited for."""

    def __init__(self, page) -> None:
        from google.protobuf.message import DecodeError
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self._decode_error = DecodeError
        self._msg, self._rerun = ForwardMsg, ForwardMsg.ScriptFinishedStatus.Value("FINISHED_EARLY_FOR_RERUN")
        self.finished = self.mark = 0
        page.on("websocket", lambda ws: ws.on("framereceived", self._frame))

    def _frame(self, payload) -> None:
        if not isinstance(payload, (bytes, bytearray)):
            return
        msg = self._msg()
        try:
            msg.ParseFromString(bytes(payload))
        except self._decode_error:  # not a ForwardMsg frame
            return
        if msg.WhichOneof("type") == "script_finished" and msg.script_finished != self._rerun:
            self.finished += 1


def new_page(browser, **kwargs):
    """A browser page that knows when the app's script runs finish (``page.runs``)."""
    page = browser.new_page(**kwargs)
    page.runs = RunWatch(page)
    return page


def watch_run(page) -> None:
    """Remember how many runs have finished (call just before the action that starts one)."""
    page.runs.mark = page.runs.finished


def wait_rendered(page, timeout_ms: float = 120_000, watched: bool = False) -> None:
    """Until the app's script run is over, nothing is stale and two frames have painted."""
    deadline = time.perf_counter() + timeout_ms / 1000
    while watched and page.runs.finished <= page.runs.mark:
        if time.perf_counter() > deadline:
            raise TimeoutError(f"no script run finished within {timeout_ms / 1000:.0f} s")
        page.wait_for_timeout(10)
    page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=timeout_ms)
    page.wait_for_function(_SETTLED, timeout=timeout_ms, polling="raf")


def goto(page, url: str, timeout_ms: float = 120_000) -> float:
    watch_run(page)
    t = time.perf_counter()
    page.goto(url, wait_until="domcontentloaded", timeout=timeout_ms)
    wait_rendered(page, timeout_ms, watched=True)
    return time.perf_counter() - t


def click_nav(page, title: str) -> float:
    watch_run(page)
    t = time.perf_counter()
    page.locator('[data-testid="stSidebarNav"] a').filter(has_text=title).first.click()
    wait_rendered(page, watched=True)
    return time.perf_counter() - t


def renderer_cpu(cdp) -> float:
    """Seconds of main-thread work the page's renderer has done so far (Chrome's TaskDuration)."""
    return next(m["value"] for m in cdp.send("Performance.getMetrics")["metrics"] if m["name"] == "TaskDuration")


def ask(page, question: str) -> None:
    box = page.locator('[data-testid="stChatInputTextArea"]')
    box.fill(question)
    watch_run(page)
    box.press("Enter")
    wait_rendered(page, watched=True)
    page.locator('[data-testid="stChatMessage"]').last.wait_for(timeout=120_000)
    wait_rendered(page)


def measure(server: AppServer, repeat: int) -> dict[str, dict[str, list[float]]]:
    from playwright.sync_api import sync_playwright

    out: dict[str, dict[str, list[float]]] = {p: {"click": [], "cpu": [], "load": []} for p in PAGES}
    with sync_playwright() as pw:
        browser = launch(pw)
        page = new_page(browser, viewport={"width": 1400, "height": 1000})
        cdp = page.context.new_cdp_session(page)
        cdp.send("Performance.enable")
        goto(page, server.url, 900_000)  # first start: the demo knowledge base may be built here
        if not page.locator('[data-testid="stChatMessage"]').count():
            ask(page, BENCH_QUESTION)
        for title in PAGES:  # warm-up: models, caches, first imports
            click_nav(page, title)
        for _ in range(repeat):
            for title, path in PAGES.items():
                before = renderer_cpu(cdp)
                out[title]["click"].append(click_nav(page, title))
                out[title]["cpu"].append(renderer_cpu(cdp) - before)
                out[title]["load"].append(goto(page, server.url + path))
        browser.close()
    return out


FLOOR_APP = """import streamlit as st
nav = st.navigation([st.Page("views/a.py", title="A", default=True), st.Page("views/b.py", title="B")])
st.sidebar.selectbox("Knowledge base", ["demo"], key="kb")
nav.run()
"""


def measure_floor(workdir: Path, repeat: int) -> list[float]:
    """Click times of a two-page Streamlit app with a title each: what this machine needs for nothing."""
    from playwright.sync_api import sync_playwright

    (workdir / "views").mkdir(parents=True, exist_ok=True)
    (workdir / "app.py").write_text(FLOOR_APP)
    for name in ("a", "b"):
        (workdir / "views" / f"{name}.py").write_text(f"import streamlit as st\nst.title('{name}')\n")
    server = AppServer(workdir, script=workdir / "app.py").start()
    try:
        with sync_playwright() as pw:
            browser = launch(pw)
            page = new_page(browser, viewport={"width": 1400, "height": 1000})
            goto(page, server.url)
            times = [click_nav(page, title) for _ in range(repeat + 1) for title in ("B", "A")][2:]
            browser.close()
    finally:
        server.stop()
    return times


def report(results: dict[str, dict[str, list[float]]]) -> str:
    head = ("page", "click p50", "click max", "render CPU", "load p50", "load max", "goal (click p50)")
    lines = [f"{head[0]:<22}" + "".join(f"{h:>11}" for h in head[1:6]) + f"  {head[6]}"]
    for title, runs in results.items():
        c, cpu, ld = runs["click"], runs["cpu"], runs["load"]
        goal = GOAL_S.get(title)
        verdict = "" if goal is None else ("ok" if statistics.median(c) < goal else "MISSED") + f" (< {goal:.0f} s)"
        figures = (statistics.median(c), max(c), statistics.median(cpu), statistics.median(ld), max(ld))
        lines.append(f"{title:<22}" + "".join(f"{x:>11.3f}" for x in figures) + f"  {verdict}")
    return "\n".join(lines)


def main(args) -> int:
    home = Path(args.home or os.environ.get("RAG_HOME") or tempfile.mkdtemp(prefix="rag-bench-pages-") + "/home")
    home.mkdir(parents=True, exist_ok=True)
    server = AppServer(home).start()
    try:
        results = measure(server, args.repeat)
    finally:
        server.stop()
    floor = measure_floor(Path(tempfile.mkdtemp(prefix="rag-bench-floor-")), args.repeat)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"Page render times in seconds (warm models, {args.repeat} runs each, RAG_HOME={home})")
    print(f"machine: {os.cpu_count()} CPUs, load average {load} (other work on the machine slows every figure)")
    print("click: sidebar link -> run finished and painted; render CPU: Chromium main-thread time of that;")
    print("load: full browser load of the page URL (new session)")
    print(report(results))
    print(
        f"{'(blank 1-title page)':<22}{statistics.median(floor):>11.3f}{max(floor):>11.3f}  <- this machine's floor now"
    )
    return 0
