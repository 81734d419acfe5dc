"""``python -m rag bench soak --minutes N``: the app as users live it, for N minutes.

In a temp data dir the bench starts a ``chroma run`` server (server mode: the app and the CLI
share it), builds the demo knowledge base through the CLI, starts ``streamlit run app.py`` and
then, all at once until the time is up:

* two users in headless Chromium chat, one in English and one in Chinese, and open every third
  turn in the Inspector and replay it (``rag.bench.soak_chat``);
* an ingest loop runs the real CLI in child processes: adds a document, uploads a changed
  revision of one, deletes one (English and Chinese documents, each revision's text marked);
* the Chroma server is restarted (SIGTERM, then the same port and path) every
  ``--restart-every`` minutes;
* the RSS of the app process and of the Chroma server is sampled every ``--sample-every`` s.

Then the app is stopped and the catalog, Chroma and BM25 are read back (``rag.bench.soak_check``):
errors shown to a user, turns lost or duplicated, documents lost or half-indexed, p50/p95 per page
action, and memory over time: ``soak.json`` and ``soak-memory.png`` go to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rag.bench.pages import ROOT, AppServer, free_port

SEED = 30
MIN_DOCS, MAX_DOCS = 3, 7  # soak documents the loop keeps in the knowledge base
FIRST_OPS = ("add", "revise", "delete", "add", "add")  # so that even a short run does each once


@dataclass
class ChromaProcess:
    """``chroma run`` on a loopback port; ``restart`` stops it (SIGTERM) and starts it again there."""

    path: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen | None = None
    restarts: list[dict] = field(default_factory=list)

    def start(self, timeout: float = 60) -> float:
        import httpx

        chroma = Path(sys.executable).parent / "chroma"
        cmd = [str(chroma), "run", "--host", "127.0.0.1", "--port", str(self.port), "--path", str(self.path)]
        t = time.perf_counter()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while time.perf_counter() - t < timeout:
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/api/v2/heartbeat", timeout=1).status_code == 200:
                    return time.perf_counter() - t
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError(f"chroma run did not answer on port {self.port} within {timeout:.0f} s")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def restart(self, at_s: float) -> None:
        t = time.perf_counter()
        self.stop()
        up = self.start()
        self.restarts.append({"at_s": at_s, "down_s": time.perf_counter() - t, "start_s": up})


@dataclass
class IngestLoop:
    """Documents added, revised and deleted through ``python -m rag`` in child processes."""

    docs_dir: Path
    env: dict[str, str]
    deadline: float
    t0: float
    pause_s: float = 5.0
    present: dict[str, int] = field(default_factory=dict)  # name -> revision the loop uploaded last
    deleted: set[str] = field(default_factory=set)
    ops: list[dict] = field(default_factory=list)

    def thread(self) -> threading.Thread:
        return threading.Thread(target=self.run, name="soak-ingest", daemon=True)

    def run(self) -> None:
        rng, n, done = random.Random(SEED), 0, 0
        while time.time() < self.deadline:
            op = FIRST_OPS[done] if done < len(FIRST_OPS) else self._pick(rng)
            op = op if self.present else "add"
            if op == "add":
                n += 1
                ok = self._ingest(f"soak-{n:03d}{'-zh' if n % 2 == 0 else ''}.md", 1)
            elif op == "revise":
                name = rng.choice(sorted(self.present))
                ok = self._ingest(name, self.present[name] + 1)
            else:
                ok = self._delete(rng.choice(sorted(self.present)))
            if ok or done >= len(FIRST_OPS):  # a first op that failed (the server restarting) is tried again
                done += 1
            time.sleep(self.pause_s)

    def _pick(self, rng: random.Random) -> str:
        if len(self.present) < MIN_DOCS or (len(self.present) < MAX_DOCS and rng.random() < 0.4):
            return "add"
        return "revise" if rng.random() < 0.55 else "delete"

    def _cli(self, op: str, name: str, argv: list[str]) -> bool:
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "rag", *argv], env=self.env, cwd=ROOT, capture_output=True,
                             text=True)  # fmt: skip
        self.ops.append({"at_s": time.time() - self.t0, "op": op, "name": name, "rc": out.returncode,
                         "s": time.perf_counter() - t, "stderr": out.stderr.strip()[-400:]})  # fmt: skip
        return out.returncode == 0

    def _ingest(self, name: str, revision: int) -> bool:
        path = self.docs_dir / name
        path.write_text(doc_text(name, revision), encoding="utf-8")
        ok = self._cli("add" if revision == 1 else "revise", name, ["ingest", str(path)])
        if ok:
            self.present[name] = revision
            self.deleted.discard(name)
        return ok

    def _delete(self, name: str) -> bool:
        ok = self._cli("delete", name, ["delete", name])
        if ok:
            del self.present[name]
            self.deleted.add(name)
        return ok

    def markers(self) -> dict[str, str]:
        return {name: marker(name, rev) for name, rev in self.present.items()}


def marker(name: str, revision: int) -> str:
    return f"soak{int(name.split('-')[1][:3])}v{revision}x"


def doc_text(name: str, revision: int) -> str:
    """Markdown whose every paragraph carries the revision's marker; Chinese for '-zh' names."""
    mark, zh = marker(name, revision), "-zh" in name
    lines = [f"# {'浸泡测试文档' if zh else 'Soak document'} {name}", ""]
    for s in range(2 + revision % 3):
        lines += [f"## {'第' + str(s) + '节' if zh else 'Section ' + str(s)}", ""]
        for p in range(2):
            if zh:
                body = (
                    f"第{s}节第{p}段（{mark}）：报销审批需要部门经理签字，差旅补贴按城市等级发放，修订版本{revision}。"
                )
            else:
                body = (f"Paragraph {p} of section {s} ({mark}): expense approvals need a manager's signature and "
                        f"travel allowances follow the city tier; revision {revision}.")  # fmt: skip
            lines += [body * 3, ""]
    return "\n".join(lines)


@dataclass
class MemorySampler:
    app_pid: int
    chroma: ChromaProcess
    t0: float
    every_s: float = 5.0
    samples: list[dict] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def thread(self) -> threading.Thread:
        return threading.Thread(target=self.run, name="soak-memory", daemon=True)

    def run(self) -> None:
        while not self.stop.is_set():
            chroma = self.chroma.proc.pid if self.chroma.proc else 0
            self.samples.append({"at_s": time.time() - self.t0, "app_mb": rss_mb(self.app_pid),
                                 "chroma_mb": rss_mb(chroma)})  # fmt: skip
            self.stop.wait(self.every_s)


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and its children, in MB (0 when it is not running)."""
    import psutil

    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            continue
    return total / 2**20


# -- the run ---------------------------------------------------------------------------------------
@dataclass
class Run:
    minutes: float
    restart_every_min: float
    out: Path
    work: Path
    sample_every_s: float = 5.0
    ingest_pause_s: float = 5.0

    def env(self, chroma: ChromaProcess) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
        return env | {"RAG_HOME": str(self.work / "home"), "RAG_CHROMA_HOST": "127.0.0.1",
                      "RAG_CHROMA_PORT": str(chroma.port), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                      "PYTHONPATH": str(ROOT)}  # fmt: skip


def run(r: Run) -> dict:
    from rag.bench.soak_chat import ChatUser

    chroma = ChromaProcess(r.work / "chroma-server")
    chroma.start()
    env = r.env(chroma)
    app = None
    try:
        subprocess.run([sys.executable, "-m", "rag", "demo"], env=env, cwd=ROOT, check=True, capture_output=True)
        app = AppServer(r.work / "home", env={k: env[k] for k in env if k.startswith("RAG_")}).start()
        t0 = time.time()
        deadline = t0 + r.minutes * 60
        users = [ChatUser(f"chat-{lang}", lang, app.url, deadline, t0, r.out / "shots") for lang in ("en", "zh")]
        (r.work / "docs").mkdir(exist_ok=True)
        loop = IngestLoop(r.work / "docs", env, deadline, t0, r.ingest_pause_s)
        memory = MemorySampler(app.proc.pid, chroma, t0, r.sample_every_s)
        threads = [u.thread() for u in users] + [loop.thread(), memory.thread()]
        for t in threads:
            t.start()
        next_restart = t0 + r.restart_every_min * 60
        while time.time() < deadline:
            if time.time() >= next_restart:
                chroma.restart(time.time() - t0)
                next_restart += r.restart_every_min * 60
            time.sleep(0.5)
        for t in threads[:-1]:
            t.join(600)  # each finishes the action it is in
        memory.stop.set()
        threads[-1].join(30)
        elapsed = time.time() - t0
        app.stop()
        app = None
        return figures(r, users, loop, memory, chroma, elapsed)
    finally:
        if app is not None:
            app.stop()
        chroma.stop()


def figures(r: Run, users, loop: IngestLoop, memory: MemorySampler, chroma: ChromaProcess, elapsed: float) -> dict:
    from rag.bench.soak_check import check_documents, check_turns
    from rag.config import Settings
    from rag.demo import demo_files
    from rag.kb import KnowledgeBase

    settings = Settings.from_env(env=r.env(chroma))
    kb = KnowledgeBase("demo", settings)
    asked = [a for u in users for a in u.asked]
    believed = {p.name: "" for p in demo_files()} | loop.markers()
    timings: dict[str, list[float]] = {}
    for u in users:
        for action, times in u.timings.items():
            timings.setdefault(f"{action} ({u.language})" if action == "ask" else action, []).extend(times)
    return {
        "minutes": elapsed / 60, "restart_every_min": r.restart_every_min, "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "shown": [asdict(s) for u in users for s in u.shown],
        "crashed": {u.name: u.crashed for u in users if u.crashed},
        "history_mismatches": [m for u in users for m in u.history_mismatches],
        "turns": asdict(check_turns(kb, asked)),
        "asks": {"typed": len(asked), "failed": sum(not a.shown for a in asked)},
        "documents": asdict(check_documents(kb, believed, loop.deleted - set(loop.present))),
        "ingest_ops": loop.ops,
        "restarts": chroma.restarts,
        "latency": {a: percentiles(t) for a, t in timings.items()},
        "memory": memory.samples,
        "memory_flat": flatness(memory.samples, r.minutes * 60),
    }  # fmt: skip


def percentiles(times: list[float]) -> dict[str, float]:
    import numpy as np

    return {"n": len(times), "p50": float(np.percentile(times, 50)), "p95": float(np.percentile(times, 95))}


def flatness(samples: list[dict], run_s: float) -> dict:
    """The app's mean RSS over the last sixth of the run against the second sixth (for 60 minutes:
    minutes 50-60 against 10-20); flat when within 10 %. ``run_s``: the time actions were started
    in (the run ends when the last one has)."""
    sixth = run_s / 6

    def mean(lo: float, hi: float) -> float:
        vals = [s["app_mb"] for s in samples if lo <= s["at_s"] < hi and s["app_mb"] > 0]
        return sum(vals) / len(vals) if vals else 0.0

    early, late = mean(sixth, 2 * sixth), mean(run_s - sixth, run_s)
    change = (late - early) / early if early else 0.0
    return {"early_window_min": [sixth / 60, 2 * sixth / 60], "late_window_min": [(run_s - sixth) / 60, run_s / 60],
            "early_mb": early, "late_mb": late,
            "change": change, "flat": bool(early) and abs(change) <= 0.10}  # fmt: skip


def report(f: dict) -> str:
    t, d, m = f["turns"], f["documents"], f["memory_flat"]
    ops = f["ingest_ops"]
    failed_ops = [o for o in ops if o["rc"]]
    errors = [s for s in f["shown"] if s["kind"] != "stall"]
    downs = ", ".join(f"{x['down_s']:.1f}" for x in f["restarts"])
    lines = [
        f"soak: {f['minutes']:.1f} min, 2 Chromium users (en, zh), {len(ops)} CLI ingest ops "
        f"({len(failed_ops)} failed), Chroma restarted {len(f['restarts'])}x "
        f"(down {downs or '-'} s)",
        f"machine: {f['cpus']} CPUs, load average {' '.join(f'{x:.1f}' for x in f['load_average'])} "
        "(shared with other benchmarks: latency is this machine's, not the app's alone)",
        f"errors shown to a user: {len(errors)} ({sum(s['kind'] == 'exception' for s in errors)} raw exceptions); "
        f"page stalls (no render within 180 s): {len(f['shown']) - len(errors)}",
    ]
    lines += [f"  {s['at_s'] / 60:6.1f} min {s['user']} {s['action']}: {s['kind']}: {s['text'][:160]!r}"
              for s in f["shown"]]  # fmt: skip
    lines += [f"  driver crashed: {k}: {v}" for k, v in f["crashed"].items()]
    lines.append(f"chat turns: {t['asked']} shown, {t['stored']} stored; lost {len(t['lost'])}, duplicated "
                 f"{len(t['duplicated'])}, failed on the page but stored {len(t['failed_but_stored'])}; "
                 f"{f['asks']['failed']} of {f['asks']['typed']} questions failed on the page; "
                 f"history shown wrong {len(f['history_mismatches'])}")  # fmt: skip
    lines += [f"  {x}" for x in t["lost"] + t["duplicated"] + t["failed_but_stored"] + f["history_mismatches"]]
    lines.append(f"documents: {d['present']} present, {d['deleted']} deleted; lost {len(d['lost'])}, half-indexed "
                 f"{len(d['half_indexed'])}, leftovers {len(d['leftovers'])}, unexpected {len(d['unexpected'])}")  # fmt: skip
    lines += [f"  {x}" for x in d["lost"] + d["half_indexed"] + d["leftovers"] + d["unexpected"]]
    lines += [f"  ingest failed: {o['at_s'] / 60:.1f} min {o['op']} {o['name']}: {o['stderr'][-200:]!r}"
              for o in failed_ops]  # fmt: skip
    lines.append(f"{'page action':<22}{'n':>6}{'p50 s':>9}{'p95 s':>9}")
    lines += [f"{a:<22}{v['n']:>6}{v['p50']:>9.2f}{v['p95']:>9.2f}" for a, v in sorted(f["latency"].items())]
    lines.append(f"app RSS: {m['early_mb']:.0f} MB (minutes {m['early_window_min'][0]:.0f}-"
                 f"{m['early_window_min'][1]:.0f}) -> {m['late_mb']:.0f} MB (minutes {m['late_window_min'][0]:.0f}-"
                 f"{m['late_window_min'][1]:.0f}), {m['change']:+.1%}: "
                 f"{'flat' if m['flat'] else 'NOT flat'} (goal within 10%)")  # fmt: skip
    return "\n".join(lines)


def main(args) -> int:
    if args.minutes <= 0 or args.restart_every <= 0:
        raise SystemExit("error: --minutes and --restart-every must be positive (e.g. --minutes 2 --restart-every 1)")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rag-soak-") as work:
        r = Run(args.minutes, args.restart_every, out, Path(work), args.sample_every, args.ingest_pause)
        f = run(r)
    (out / "soak.json").write_text(json.dumps(f, indent=1, ensure_ascii=False), encoding="utf-8")
    from rag.bench.soak_plot import plot

    plot(f, out / "soak-memory.png")
    print(report(f))
    print(f"figures: {out / 'soak.json'}; plot: {out / 'soak-memory.png'}")
    return 0


def add_soak_parser(bsub) -> argparse.ArgumentParser:
    p = bsub.add_parser("soak", help="chat in two browsers, ingest and Chroma restarts for N minutes; then check")
    p.add_argument("--minutes", type=float, default=60, help="how long the users and the ingest loop run")
    p.add_argument("--restart-every", type=float, default=10, help="minutes between Chroma server restarts")
    p.add_argument("--sample-every", type=float, default=5, help="seconds between memory samples")
    p.add_argument("--ingest-pause", type=float, default=5, help="seconds between CLI ingest operations")
    p.add_argument("--out", default="soak-out", help="folder for soak.json, soak-memory.png and screenshots")
    p.set_defaults(func=main)
    return p
