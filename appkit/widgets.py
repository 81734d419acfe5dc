"""Streamlit renderings of what rag/views defines: the settings-override form, column configs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from rag.views.forms import override_fields


def settings_overrides(box, values: Any, prefix: str, columns: int = 3) -> dict[str, Any]:
    """One widget per overridable setting (rag.views.forms), valued from ``values``; returns the choices."""
    cols = box.columns(columns)
    out: dict[str, Any] = {}
    for i, f in enumerate(override_fields(values)):
        col, key = cols[i % columns], f"{prefix}_{f.key}"
        if f.is_choice:
            out[f.name] = col.selectbox(f.label, f.options, f.options.index(f.value), key=key, help=f.help)
        else:
            kind = type(f.value)
            out[f.name] = col.number_input(
                f.label, kind(f.low), kind(f.high), f.value, kind(f.step), key=key, help=f.help
            )
    return out


def column_config(columns: Mapping[str, tuple[str, str, str]], text: frozenset[str] = frozenset()) -> dict:
    """``st.dataframe`` column config from rag.views' (header, number format or '', help) triples;
    the ``text`` columns were turned into text (``rag.views.tables.display_frame``) and keep no format."""
    out = {}
    for col, (label, fmt, help_text) in columns.items():
        fmt = "" if col in text else fmt
        kind = st.column_config.NumberColumn if fmt else st.column_config.TextColumn
        out[col] = kind(label, help=help_text or None, **({"format": fmt} if fmt and fmt != "int" else {}))
    return out
