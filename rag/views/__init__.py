"""UI-free view models the pages render: tables, chart figures, highlighted passages, labels.

Nothing here imports Streamlit; every function is tested without a browser.
"""
