"""Ragscope: ask questions of your own documents and see why the answer is what it is."""

import streamlit as st

pages = [
    st.Page("pages/chat.py", title="Chat", icon=":material/forum:", url_path="chat", default=True),
    st.Page("pages/upload.py", title="Upload", icon=":material/upload_file:", url_path="upload"),
    st.Page("pages/inspector.py", title="Retrieval Inspector", icon=":material/troubleshoot:", url_path="inspector"),
    st.Page("pages/evaluation.py", title="Evaluation", icon=":material/monitoring:", url_path="evaluation"),
]
nav = st.navigation(pages)
nav.run()  # each page calls appkit.page_setup(): page config, demo knowledge base, sidebar
