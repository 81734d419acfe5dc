"""Upload: add documents with per-file, per-stage progress; document table; chunk preview; delete."""

import streamlit as st

import appkit
from appkit.widgets import column_config
from rag.ingest.pipeline import UploadItem
from rag.ingest.safety import SUPPORTED_EXTENSIONS
from rag.store.access import Action
from rag.views.documents import DOCUMENT_COLUMNS, documents_frame
from rag.views.highlight import md_escape

appkit.page_setup()

STAGES = ["parse", "chunk", "embed", "write", "done"]
PREVIEW_PAGE = 10  # chunks per preview page

st.title("Upload")
kb = appkit.require_kb()
st.caption(f"Knowledge base **{md_escape(kb.name)}** · embedder `{kb.embedder.model_id}`")


def _ingest(files, tags: str, doc_date: str) -> None:
    tag_list = tuple(t.strip() for t in tags.split(",") if t.strip())
    items = [UploadItem(f.name, f.getvalue(), tag_list, doc_date.strip()) for f in files]
    with st.status(f"Ingesting {len(items)} file(s)…", expanded=True) as status:
        bars = {it.name: st.progress(0.0, text=md_escape(f"{it.name}: queued")) for it in items}

        def progress(name: str, stage: str, fraction: float) -> None:
            if name in bars:
                step = STAGES.index(stage) if stage in STAGES else 0
                bars[name].progress(min(1.0, (step + fraction) / len(STAGES)), text=md_escape(f"{name}: {stage}"))

        try:
            results = kb.ingest(items, progress=progress, principal=appkit.user())
        except Exception as exc:  # the batch could not be written; the knowledge base is unchanged
            appkit.show_error(exc)
            results = []
        failed = [r for r in results if not r.ok]
        status.update(
            label=f"{len(results) - len(failed)} ok, {len(failed)} failed", state="error" if failed else "complete"
        )
    st.session_state["upload_results"] = [r.__dict__ for r in results]


def _upload_form() -> None:
    with st.form("upload_form", clear_on_submit=True):
        files = st.file_uploader(
            "Documents",
            type=[e.lstrip(".") for e in SUPPORTED_EXTENSIONS],
            accept_multiple_files=True,
            key="upload_files",
            help=f"Up to {kb.settings.max_file_mb:g} MB per file; re-uploading an unchanged file does nothing.",
        )
        c1, c2 = st.columns(2)
        tags = c1.text_input("Tags (comma separated)", key="upload_tags")
        doc_date = c2.text_input("Document date (YYYY-MM-DD, optional)", key="upload_date")
        submitted = st.form_submit_button("Ingest", type="primary", key="upload_submit")
    if submitted and files:
        _ingest(files, tags, doc_date)


def _results() -> None:
    for r in st.session_state.get("upload_results", []):
        name = md_escape(r["name"])
        if r["status"] == "failed":
            st.error(f"**{name}**: {md_escape(r['error'])}")
        elif r["status"] == "unchanged":
            st.info(f"**{name}**: unchanged (same content as revision {r['revision']}), nothing to do.")
        else:
            st.success(
                f"**{name}**: {r['status']} — revision {r['revision']}, {r['pages']} page(s), {r['chunks']} chunks."
            )


def _table(docs) -> None:
    config = column_config(DOCUMENT_COLUMNS)
    config["name"] = st.column_config.TextColumn("name", width="medium")
    st.dataframe(documents_frame(docs), hide_index=True, width="stretch", key="doc_table", column_config=config)


def _preview(docs) -> None:
    ids = [d.id for d in docs]
    names = {d.id: d.name for d in docs}
    choice = st.selectbox("Preview a document's chunks", ids, format_func=names.get, key="preview_doc")
    chunks = kb.chunks(choice)
    pages = max(1, -(-len(chunks) // PREVIEW_PAGE))
    page = st.number_input(f"Page of chunks (1–{pages})", 1, pages, 1, key="preview_page") if pages > 1 else 1
    start = (page - 1) * PREVIEW_PAGE
    st.caption(f"{len(chunks)} chunks · showing {start + 1}–{min(len(chunks), start + PREVIEW_PAGE)}")
    for c in chunks[start : start + PREVIEW_PAGE]:
        crumb = " › ".join(md_escape(h) for h in c.heading_path) or "(no heading)"
        with st.expander(f"p.{c.page} · #{c.idx} · {crumb}", expanded=False):
            st.text(f"{c.text}\n\n— {c.id} · characters {c.char_start}–{c.char_end}")


def _delete(docs) -> None:
    ids = [d.id for d in docs]
    names = {d.id: d.name for d in docs}
    with st.expander("Delete a document"):
        target = st.selectbox("Document", ids, format_func=names.get, key="delete_doc")
        confirm = st.checkbox(
            f"Yes, delete '{md_escape(names[target])}' from this knowledge base", key="delete_confirm"
        )
        if st.button("Delete", key="delete_button", disabled=not confirm, type="primary"):
            try:
                kb.delete(target, principal=appkit.user())
            except Exception as exc:  # shown with its fix
                appkit.show_error(exc)
                return
            st.session_state.pop("upload_results", None)
            st.rerun()


may_edit = appkit.auth.allowed_here(kb, Action.UPLOAD)  # else the refusal, naming the role it needs
if may_edit:
    _upload_form()
_results()
docs = kb.documents()
st.subheader(f"Documents ({len(docs)})")
if not docs:
    st.info("No documents yet. Upload some above.")
    st.stop()
_table(docs)
_preview(docs)
if may_edit:
    _delete(docs)
appkit.auth.audit_panel(kb)
