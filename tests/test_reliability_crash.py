"""Crash safety: SIGKILL real ingest processes at many points; after restart nothing is lost or leaked.

Each cycle starts a driver process (tests/reliability_driver.py) that opens the knowledge base
(recovery runs), reports an audit of catalog, Chroma and BM25 plus query probes, then ingests
batches of six documents (each batch replaces two of them with new revisions) until it is
killed: at a named point inside the write path (fault injection by the driver, then a real
SIGKILL) or at a random moment chosen by this test. The next cycle's audit must show the state
after the last finished batch or the one in flight, never a mix, with every store agreeing.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from reliability_driver import CRASH_POINTS, DOCS, batch
from reliability_support import (
    DRIVER,
    ROOT,
    HashEmbedder,
    Lines,
    audit,
    child_env,
    doc_text,
    make_tiny_model,
    probe_queries,
)

from rag.config import Settings
from rag.kb import KnowledgeBase

RANDOM_KILLS = int(os.environ.get("RAG_TEST_RANDOM_KILLS", "35"))  # + the named points: 50 kills
SEED = int(os.environ.get("RAG_TEST_SEED", "20250101"))


def expected_hashes(step: int) -> dict[str, str]:
    if step < 0:
        return {}
    return {item.name: hashlib.sha256(item.data).hexdigest() for item in batch(step)}


@dataclass
class CrashRun:
    home: Path
    done: int = -1  # last batch known to be published
    kills: int = 0
    in_job: int = 0  # kills that interrupted a job (it is found 'failed' afterwards)
    step_s: list[float] = field(default_factory=list)
    failed_jobs: int = 0
    named: list[str] = field(default_factory=list)  # crash points that fired

    def cycle(self, point: str = "", kill_after: float | None = None, steps: int = 3) -> None:
        env = child_env(RAG_TEST_CRASH_AT=point)
        cmd = [sys.executable, str(DRIVER), "crash", str(self.home), "--from", str(self.done + 1)]
        cmd += ["--to", str(self.done + 1 + steps)]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines, last = Lines(proc), 0.0
        while (line := lines.next()) is not None:
            kind, _, rest = line.partition(" ")
            if kind == "AUDIT":
                self.check_audit(json.loads(rest))
            elif kind == "READY":
                last = float(rest)
                if kill_after is not None:
                    threading.Timer(kill_after, _kill, args=(proc,)).start()
            elif kind == "DONE":
                step, at = rest.split()
                self.step_s.append(float(at) - last)
                last, self.done = float(at), int(step)
            elif kind == "KILL":
                self.named.append(rest)
        rc = proc.wait(60)
        assert rc in (0, -signal.SIGKILL), proc.stderr.read()[-3000:]
        self.kills += rc == -signal.SIGKILL

    def check_audit(self, report: dict) -> None:
        assert report["problems"] == [] and report["query_problems"] == [], report
        if report["hashes"] != expected_hashes(self.done):
            assert report["hashes"] == expected_hashes(self.done + 1), "state is neither before nor after the batch"
            self.done += 1  # killed after the publish committed, before it said DONE
        failed = report["jobs"].get("failed", 0)
        self.in_job += failed - self.failed_jobs
        self.failed_jobs = failed


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_sigkill_at_named_and_random_points_loses_nothing(tmp_path, capsys):
    run = CrashRun(tmp_path / "home")
    run.cycle(steps=3)  # a first state to replace; its batches time the random kills
    step_time = sorted(run.step_s)[1]
    for point in CRASH_POINTS:
        run.cycle(point=point)
    assert run.named == CRASH_POINTS  # each named point fired where it was meant to
    rng = random.Random(SEED)
    for _ in range(RANDOM_KILLS):
        run.cycle(kill_after=rng.uniform(0, 3 * step_time))
    final = run.done + 3
    run.cycle(steps=final - run.done)  # re-running succeeds
    assert run.done == final
    kb = KnowledgeBase("crash", Settings.from_env(env={}, home=run.home), HashEmbedder())
    report = audit(kb)
    assert report["problems"] == [] and probe_queries(kb) == []
    assert report["hashes"] == expected_hashes(final) and len(report["hashes"]) == DOCS
    errors = {r["error"] for r in kb.catalog.q("SELECT error FROM jobs WHERE status='failed'")}
    assert errors <= {"interrupted (process ended during the job)"}
    assert run.kills >= len(CRASH_POINTS) + RANDOM_KILLS * 2 // 3  # most random kills landed mid-run
    with capsys.disabled():
        print(
            f"\n[crash] kill points tried {len(CRASH_POINTS) + RANDOM_KILLS} "
            f"({len(CRASH_POINTS)} named + {RANDOM_KILLS} random), processes killed {run.kills}, "
            f"inside a job {run.in_job}, survived all; batches published {final + 1}, "
            f"median batch {step_time * 1000:.0f} ms"
        )


def _write_corpus(folder: Path, version: int) -> None:
    folder.mkdir(exist_ok=True)
    for d in range(4):
        (folder / f"cli{d}.md").write_bytes(doc_text(d, version + (d % 2)))


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_sigkill_real_cli_ingest_then_rerun(tmp_path, capsys):
    """The real `python -m rag ingest` (tiny real model), killed mid-batch, re-run to success."""
    model = make_tiny_model(tmp_path / "tiny-model")
    home, corpus = tmp_path / "home", tmp_path / "corpus"
    env = child_env(RAG_HOME=str(home), RAG_EMBED_MODEL=str(model))
    cmd = [sys.executable, "-m", "rag", "-v", "ingest", str(corpus), "--kb", "cli"]
    rng, killed = random.Random(SEED), 0
    for version in range(1, 4):
        _write_corpus(corpus, version)
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for line in proc.stderr:
            if " parse " in line or " embed " in line:
                break
        time.sleep(rng.uniform(0, 0.4))
        _kill(proc)
        killed += proc.wait(60) == -signal.SIGKILL
    done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    kb = KnowledgeBase("cli", Settings.from_env(env={}, home=home, embed_model=str(model)))
    report = audit(kb)
    assert report["problems"] == [] and probe_queries(kb) == []
    want = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in corpus.iterdir()}
    assert report["hashes"] == want
    with capsys.disabled():
        print(f"\n[crash-cli] `python -m rag ingest` killed {killed}/3 times mid-run, re-run ok: {report['jobs']}")
