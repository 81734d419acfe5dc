"""The Upload page's document table: one row per active document, with its provenance."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from rag.records import DocumentRecord
from rag.views.tables import display_frame

# column -> (header, number format or '' for text, help)
DOCUMENT_COLUMNS = {
    "name": ("name", "", ""),
    "pages": ("pages", "int", ""),
    "chunks": ("chunks", "int", ""),
    "revision": ("rev.", "int", "Revision: a changed re-upload adds one"),
    "hash": ("hash", "", "First 12 hex digits of the content's sha256"),
}


def documents_frame(docs: Iterable[DocumentRecord]) -> pd.DataFrame:
    rows = [
        {
            "name": d.name,
            "pages": d.pages,
            "chunks": d.chunks,
            "revision": d.revision,
            "hash": d.content_hash[:12],
            "parser": f"{d.parser} {d.parser_version}",
            "embedder": d.embed_model,
            "tags": ", ".join(d.tags),
            "date": d.doc_date,
            "added": d.created_at,
            "id": d.id,
        }
        for d in docs
    ]
    return display_frame(pd.DataFrame(rows))
