"""Upload: add documents with per-file, per-stage progress; document table; chunk preview; delete."""

import pandas as pd
import streamlit as st

import appkit
from rag.ingest.pipeline import UploadItem
from rag.ingest.safety import SUPPORTED_EXTENSIONS

STAGES = ["parse", "chunk", "embed", "done"]

st.title("Upload")
kb = appkit.current_kb()
if kb is None:
    st.info("Create a knowledge base in the sidebar first.")
    st.stop()

st.caption(f"Knowledge base **{kb.name}** · embedder `{kb.embedder.model_id}`")

with st.form("upload_form", clear_on_submit=True):
    files = st.file_uploader(
        "Documents", type=[e.lstrip(".") for e in SUPPORTED_EXTENSIONS], accept_multiple_files=True, key="upload_files"
    )
    c1, c2 = st.columns(2)
    tags = c1.text_input("Tags (comma separated)", key="upload_tags")
    doc_date = c2.text_input("Document date (YYYY-MM-DD, optional)", key="upload_date")
    submitted = st.form_submit_button("Ingest", type="primary")

if submitted and files:
    items = [
        UploadItem(f.name, f.getvalue(), tuple(t.strip() for t in tags.split(",") if t.strip()), doc_date.strip())
        for f in files
    ]
    with st.status(f"Ingesting {len(items)} file(s)…", expanded=True) as status:
        bars = {it.name: st.progress(0.0, text=f"{it.name}: queued") for it in items}

        def progress(name: str, stage: str, fraction: float) -> None:
            if name in bars:
                step = STAGES.index(stage) if stage in STAGES else 0
                bars[name].progress(min(1.0, (step + fraction) / len(STAGES)), text=f"{name}: {stage}")

        try:
            results = kb.ingest(items, progress=progress)
        except Exception as exc:  # the batch could not be written; the knowledge base is unchanged
            appkit.show_error(exc)
            results = []
        failed = [r for r in results if not r.ok]
        status.update(
            label=f"{len(results) - len(failed)} ok, {len(failed)} failed", state="error" if failed else "complete"
        )
    st.session_state["upload_results"] = [r.__dict__ for r in results]

for r in st.session_state.get("upload_results", []):
    if r["status"] == "failed":
        st.error(f"**{r['name']}**: {r['error']}")
    elif r["status"] == "unchanged":
        st.info(f"**{r['name']}**: unchanged (same content as revision {r['revision']}), nothing to do.")
    else:
        st.success(
            f"**{r['name']}**: {r['status']} — revision {r['revision']}, {r['pages']} page(s), {r['chunks']} chunks."
        )

docs = kb.documents()
st.subheader(f"Documents ({len(docs)})")
if not docs:
    st.info("No documents yet. Upload some above.")
    st.stop()

table = pd.DataFrame(
    [
        {
            "name": d.name,
            "id": d.id,
            "pages": d.pages,
            "chunks": d.chunks,
            "revision": d.revision,
            "hash": d.content_hash[:12],
            "parser": f"{d.parser} {d.parser_version}",
            "embedder": d.embed_model,
            "tags": ", ".join(d.tags),
            "date": d.doc_date,
            "added": d.created_at,
        }
        for d in docs
    ]
)
st.dataframe(table, hide_index=True, use_container_width=True, key="doc_table")

names = [d.name for d in docs]
choice = st.selectbox("Preview a document's chunks", names, key="preview_doc")
chunks = kb.chunks(choice)
st.caption(f"{len(chunks)} chunks")
for c in chunks[:200]:
    crumb = " › ".join(c.heading_path) or "(no heading)"
    with st.expander(f"p.{c.page} · #{c.idx} · {crumb}", expanded=False):
        st.text(c.text)
        st.caption(f"`{c.id}` · chars {c.char_start}–{c.char_end}")

with st.expander("Delete a document"):
    target = st.selectbox("Document", names, key="delete_doc")
    confirm = st.checkbox(f"Yes, delete '{target}' from this knowledge base", key="delete_confirm")
    if st.button("Delete", key="delete_button", disabled=not confirm, type="primary"):
        try:
            kb.delete(target)
            st.session_state.pop("upload_results", None)
            st.rerun()
        except Exception as exc:
            appkit.show_error(exc)
