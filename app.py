"""Ragscope: ask questions of your own documents and see why the answer is what it is."""

import streamlit as st

import appkit

st.set_page_config(page_title="Ragscope", page_icon="🔎", layout="wide")

appkit.ensure_demo()

pages = [
    st.Page("pages/chat.py", title="Chat", icon="💬", default=True),
    st.Page("pages/upload.py", title="Upload", icon="📄"),
    st.Page("pages/inspector.py", title="Retrieval Inspector", icon="🔬"),
    st.Page("pages/evaluation.py", title="Evaluation", icon="📊"),
]
nav = st.navigation(pages)
appkit.sidebar()
nav.run()
