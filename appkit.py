"""What every page shares: cached settings, models and knowledge bases, and the sidebar.

Heavy objects are built once per process with ``st.cache_resource``; pages never
construct them. Nothing here computes results — that is ``rag/``'s job.
"""

from __future__ import annotations

import html
import os

import streamlit as st

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from rag.config import Settings  # noqa: E402
from rag.errors import RagError  # noqa: E402


@st.cache_resource(show_spinner=False)
def settings() -> Settings:
    return Settings.from_env()


@st.cache_resource(show_spinner="Loading the embedding model…")
def embedder():
    from rag.models import load_embedder

    return load_embedder(settings())


@st.cache_resource(show_spinner=False)
def knowledge_base(name: str):
    from rag.kb import KnowledgeBase

    return KnowledgeBase(name, settings(), embedder())


def kb_names() -> list[str]:
    from rag.kb import catalog_for

    return catalog_for(settings()).kb_names()


def ensure_demo() -> None:
    """First start: build the demo knowledge base, with progress, once per process."""
    if st.session_state.get("_demo_checked"):
        return
    from rag.demo import DEMO_KB, demo_files, ensure_demo_kb

    if DEMO_KB not in kb_names() or not knowledge_base(DEMO_KB).documents():
        with st.status("Building the demo knowledge base (first start only)…", expanded=False) as status:
            bar = st.progress(0.0)
            files = demo_files()
            done: set[str] = set()

            def progress(name: str, stage: str, fraction: float) -> None:
                if stage == "done":
                    done.add(name)
                bar.progress(len(done) / max(len(files), 1), text=f"{name}: {stage}")

            ensure_demo_kb(settings(), progress=progress)
            status.update(label="Demo knowledge base ready", state="complete")
    st.session_state["_demo_checked"] = True


def current_kb():
    """The knowledge base chosen in the sidebar (or None when none exist yet)."""
    name = st.session_state.get("kb")
    if not name:
        return None
    try:
        return knowledge_base(name)
    except RagError as exc:
        st.error(str(exc))
        st.stop()


def sidebar() -> None:
    names = kb_names()
    default = settings().default_kb
    if "kb" not in st.session_state or st.session_state["kb"] not in names:
        st.session_state["kb"] = default if default in names else (names[0] if names else None)
    with st.sidebar:
        if names:
            st.selectbox("Knowledge base", names, key="kb")
        new = st.text_input("New knowledge base", key="new_kb", placeholder="name, then Enter")
        if new and new not in names:
            try:
                knowledge_base(new)
                st.session_state["kb"] = new
                st.rerun()
            except RagError as exc:
                st.error(str(exc))
        _settings_panel()


def _settings_panel() -> None:
    s = settings()
    emb = embedder()
    with st.expander(f"Settings · `{s.fingerprint()}`", expanded=False):
        st.caption(f"Embedder: **{html.escape(emb.model_id)}** ({emb.dim}-d, {emb.max_tokens} tokens)")
        rows = {k: v for k, v in s.public_dict().items() if k not in {"home"}}
        st.dataframe(
            [{"setting": k, "value": str(v)} for k, v in rows.items()],
            hide_index=True,
            use_container_width=True,
            key="settings_table",
        )
        st.caption("Change settings with RAG_* environment variables (see README) and restart.")


def show_error(exc: Exception) -> None:
    """A user-facing error: the message with its fix, never a traceback."""
    st.error(str(exc) if isinstance(exc, RagError) else f"Unexpected error ({type(exc).__name__}): {exc}")
