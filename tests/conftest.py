"""Shared fixtures: the real bundled embedder (loaded once), a fresh data dir, a real `chroma run` server."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from hypothesis import settings as hypothesis_settings  # noqa: E402

from rag.config import Settings  # noqa: E402

# CI replays the same examples every run (a red build must be reproducible); local runs keep exploring.
hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def embedder():
    from rag.embedder import load_embedder

    return load_embedder(Settings.from_env(env={}))


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings.from_env(env={}, home=tmp_path / "home")


@pytest.fixture
def make_kb(settings, embedder):
    from rag.kb import KnowledgeBase

    def make(name: str = "t", **changes):
        s = settings.replace(**changes) if changes else settings
        return KnowledgeBase(name, s, embedder)

    return make


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def chroma_binary() -> str:
    found = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
    if not Path(found).exists():
        pytest.fail("the `chroma` CLI (from the chromadb package) is missing; run scripts/setup.sh dev")
    return found


class ChromaServer:
    def __init__(self, path: Path, port: int) -> None:
        self.path, self.port, self.proc = path, port, None

    def start(self, timeout: float = 60) -> None:
        cmd = [chroma_binary(), "run", "--host", "127.0.0.1", "--port", str(self.port), "--path", str(self.path)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + timeout
        while time.time() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.2)
        raise RuntimeError(f"chroma run did not listen on {self.port}")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def chroma_server(tmp_path):
    server = ChromaServer(tmp_path / "chroma-server", free_port())
    server.start()
    yield server
    server.stop()
