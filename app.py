"""Ragscope: ask questions of your own documents and see why the answer is what it is."""

import streamlit as st

# Emoji page icons: Streamlit makes a page's icon the browser-tab icon, and a ":material/…:" one
# is fetched from fonts.gstatic.com (an error offline); an emoji is drawn locally.
pages = [
    # Chat is served at the root ("/"); Streamlit gives the default page no path of its own, so
    # "/chat" (what the other pages' URLs suggest) is the same page again, hidden from the menu.
    st.Page("pages/chat.py", title="Chat", icon="💬", url_path="start", default=True),
    st.Page("pages/upload.py", title="Upload", icon="📤", url_path="upload"),
    st.Page("pages/inspector.py", title="Retrieval Inspector", icon="🔍", url_path="inspector"),
    st.Page("pages/evaluation.py", title="Evaluation", icon="📊", url_path="evaluation"),
    st.Page("pages/chat.py", title="Chat", icon="💬", url_path="chat", visibility="hidden"),
]
nav = st.navigation(pages)
nav.run()  # each page calls appkit.page_setup(): page config, demo knowledge base, sidebar
