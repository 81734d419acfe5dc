"""Shared fixtures: the real bundled embedder (loaded once), a fresh data dir, a real `chroma run` server.

Tests that load a model, open Chroma, run Streamlit's AppTest or drive Chromium are marked ``slow``
here (``scripts/test.sh --fast`` runs the rest): see ``pytest_collection_modifyitems``.

Nothing the tests need is optional: a missing package (``require``) or shipped file
(``@pytest.mark.needs(path)``) fails the tests that need it and says what to install, never skips."""

from __future__ import annotations

import importlib
import os
import shutil
import socket
import subprocess
import sys
import time
import types
from collections.abc import Iterator
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

# What makes a test slow: a fixture that loads the bundled embedder or starts Chroma, ...
SLOW_FIXTURES = frozenset({"embedder", "make_kb", "chroma_server"})
SLOW_MARKERS = frozenset({"browser", "server"})
# ... or a name its code uses (directly, through a fixture or through a helper in tests/): a model
# loader or reader, a real knowledge base (Chroma), Streamlit's AppTest, Chromium, llama.cpp, a
# child Python (``sys.executable``: the CLI, a driver). A test that loads something heavy another
# way carries ``@pytest.mark.slow`` where it is defined.
SLOW_NAMES = frozenset(
    {
        "load_embedder",
        "minilm_embed",
        "make_tiny_model",
        "KnowledgeBase",
        "build_kb",
        "build_probe_kb",
        "AppTest",
        "AppServer",
        "chromium_page",
        "sync_playwright",
        "build_llama_cpp",
        "read_e5",
        "from_pretrained",
        "E5Encoder",
        "AnswerReader",
        "SentenceReader",
        "shipped_reader",
        "shipped_sentence_reader",
        "train_e5",
        "time_set",
        "executable",
    }
)
TESTS = Path(__file__).resolve().parent
SETUP = "run scripts/setup.sh dev (it installs requirements-dev.txt and the local-LLM extra)"


def require(module: str) -> types.ModuleType:
    """``module`` imported for a test module; missing, its tests fail saying what to install."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        missing = err
    pytest.fail(f"{module} is not installed ({missing}): {SETUP}", pytrace=False)


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("needs"):
        missing = [os.path.relpath(p, ROOT) for p in mark.args if not Path(p).exists()]
        if missing:
            paths = " ".join(missing)
            pytest.fail(
                f"{paths} missing: it ships with the repository, restore it with `git checkout -- {paths}`",
                pytrace=False,
            )


def code_names(code: types.CodeType) -> Iterator[str]:
    """The global and attribute names ``code`` uses, nested functions included."""
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from code_names(const)


def names_used(func, seen: set) -> set[str]:
    """The names ``func`` uses, and those of the helpers defined in tests/ that it calls."""
    func = getattr(func, "__wrapped__", func)
    code = getattr(func, "__code__", None)
    if code is None or code in seen:
        return set()
    seen.add(code)
    names = set(code_names(code))
    for name in list(names):
        helper = getattr(func, "__globals__", {}).get(name)
        helper_code = getattr(helper, "__code__", None)
        if helper_code is not None and Path(helper_code.co_filename).is_relative_to(TESTS):
            names |= names_used(helper, seen)
    return names


def is_slow(item: pytest.Item) -> bool:
    if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    if any(item.get_closest_marker(m) for m in SLOW_MARKERS):
        return True
    funcs = [getattr(item, "function", None)]
    info = getattr(item, "_fixtureinfo", None)
    if info is not None:
        funcs += [d.func for defs in info.name2fixturedefs.values() for d in defs]
    seen: set = set()
    return any(SLOW_NAMES & names_used(f, seen) for f in funcs if f is not None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if not item.get_closest_marker("slow") and is_slow(item):
            item.add_marker(pytest.mark.slow)


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


def write_beir(
    folder: Path, docs: dict[str, tuple[str, str]], queries: list[dict], qrels: list[tuple[str, str]], split: str
) -> Path:
    """A BEIR-layout folder at ``folder``: ``docs`` id -> (title, text), ``queries`` as given (``_id``,
    ``text``, ``metadata``), ``qrels`` (query id, doc id) pairs graded 1 in ``qrels/<split>.tsv``."""
    import json

    (folder / "qrels").mkdir(parents=True)
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        for doc_id, (title, text) in docs.items():
            fh.write(json.dumps({"_id": doc_id, "title": title, "text": text}, ensure_ascii=False) + "\n")
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as fh:
        for q in queries:
            fh.write(json.dumps(q, ensure_ascii=False) + "\n")
    (folder / "qrels" / f"{split}.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d in qrels)
    )
    return folder
