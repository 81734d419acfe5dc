"""The soak bench's short CI version, run for real: ``python -m rag bench soak --minutes 2`` with a
Chroma restart inside the two minutes, two Chromium users, the CLI ingest loop; then its
consistency figures must be clean and every error a user saw must be listed in what it prints."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from app_support import ROOT, require_chromium

pytestmark = [pytest.mark.browser, pytest.mark.server, pytest.mark.slow]


@pytest.mark.timeout(1500)
def test_two_minute_soak_loses_nothing_and_lists_every_error(tmp_path, capsys):
    require_chromium()
    out = tmp_path / "soak"
    cmd = [sys.executable, "-m", "rag", "bench", "soak", "--minutes", "2", "--restart-every", "0.75",
           "--ingest-pause", "2", "--out", str(out)]  # fmt: skip
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1400)
    assert run.returncode == 0, run.stderr[-3000:]
    f = json.loads((out / "soak.json").read_text(encoding="utf-8"))
    printed = run.stdout
    with capsys.disabled():
        print("\n[soak] " + printed.replace("\n", "\n[soak] "))

    assert f["crashed"] == {}
    assert len(f["restarts"]) >= 1 and all(r["down_s"] < 30 for r in f["restarts"])
    assert {"ask (en)", "ask (zh)", "inspector open", "replay"} <= set(f["latency"])
    assert {o["op"] for o in f["ingest_ops"]} >= {"add", "revise", "delete"}

    turns = f["turns"]
    assert turns["asked"] >= 2 and turns["stored"] == turns["asked"]
    assert turns["lost"] == [] and turns["duplicated"] == [] and turns["failed_but_stored"] == []
    assert f["history_mismatches"] == []

    docs = f["documents"]
    assert docs["present"] >= 8 and docs["deleted"] >= 1
    assert docs["lost"] == [] and docs["half_indexed"] == [] and docs["leftovers"] == [] and docs["unexpected"] == []

    errors = [s for s in f["shown"] if s["kind"] != "stall"]
    assert f"errors shown to a user: {len(errors)} " in printed
    for shown in f["shown"]:
        assert f"{shown['user']} {shown['action']}: {shown['kind']}: {shown['text'][:160]!r}" in printed
    assert (out / "soak-memory.png").stat().st_size > 10_000
    assert len(f["memory"]) >= 10 and all(s["app_mb"] > 0 for s in f["memory"][1:])
