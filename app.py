"""Ragscope: ask questions of your own documents and see why the answer is what it is."""

import streamlit as st

import appkit

st.set_page_config(page_title="Ragscope", page_icon="🔎", layout="wide")

appkit.ensure_demo()

pages = [
    st.Page("app_pages/chat.py", title="Chat", icon=":material/forum:", url_path="chat", default=True),
    st.Page("app_pages/upload.py", title="Upload", icon=":material/upload_file:", url_path="upload"),
    st.Page(
        "app_pages/inspector.py", title="Retrieval Inspector", icon=":material/troubleshoot:", url_path="inspector"
    ),
    st.Page("app_pages/evaluation.py", title="Evaluation", icon=":material/monitoring:", url_path="evaluation"),
]
nav = st.navigation(pages)
appkit.sidebar()
nav.run()
