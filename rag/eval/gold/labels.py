"""Gold labels meet a knowledge base: document lookup for anchoring, relevant chunks and documents.

``KBDocuments`` lets :func:`rag.eval.gold.anchoring.anchor_goldset` check labels against a knowledge
base without loading every text (a BEIR corpus has thousands): membership by name or id is one
catalog query, a text is read only when a quote has to be found in it.

``Labels`` turns one anchored gold item into ``{chunk id: grade}`` over *all* chunks of the
labelled documents (so chunk-level recall counts relevant chunks nobody retrieved) and into
``{document name: grade}``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from rag.eval.gold.anchoring import passage_chunk_ids, relevant_chunk_ids, relevant_doc_grades
from rag.eval.gold.goldset import GoldItem
from rag.records import ChunkRecord
from rag.retrieval.trace import Candidate

if TYPE_CHECKING:
    from rag.kb import KnowledgeBase


class KBDocuments(Mapping[str, str]):
    """Active documents of a knowledge base by name and by id -> normalized text (read lazily)."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self.ids: dict[str, str] = {}  # name or id -> id
        self.names: dict[str, str] = {}  # id -> name
        for doc in kb.documents():
            self.ids[doc.id] = self.ids[doc.name] = doc.id
            self.names[doc.id] = doc.name
        self._texts: dict[str, str] = {}

    def __getitem__(self, key: str) -> str:
        doc_id = self.ids[key]
        if doc_id not in self._texts:
            self._texts[doc_id] = self.kb.document_text(doc_id)
        return self._texts[doc_id]

    def __contains__(self, key: object) -> bool:
        return key in self.ids

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    def name(self, doc: str) -> str:
        """The document's name, for a name or an id (unknown keys come back unchanged)."""
        return self.names.get(self.ids.get(doc, doc), doc)


class Labels:
    """Relevance of one knowledge base's chunks and documents for anchored gold items."""

    def __init__(self, kb: KnowledgeBase, documents: KBDocuments | None = None) -> None:
        self.kb = kb
        self.documents = documents or KBDocuments(kb)
        self._chunks: dict[str, list[ChunkRecord]] = {}

    def doc_chunks(self, doc: str) -> list[ChunkRecord]:
        """Every chunk of the active revision of ``doc`` (name or id), cached for the run."""
        doc_id = self.documents.ids.get(doc, doc)
        if doc_id not in self._chunks:
            self._chunks[doc_id] = self.kb.chunks(doc_id)
        return self._chunks[doc_id]

    def relevant_chunks(self, item: GoldItem) -> dict[str, int]:
        """``{chunk id: grade}``; empty when the item only has document-level labels (then
        chunk-level metrics say nothing a document-level one does not)."""
        if all(p.kind == "document" for p in item.relevant):
            return {}
        chunks = [c for doc in {p.doc for p in item.relevant if p.doc} for c in self.doc_chunks(doc)]
        return relevant_chunk_ids(item, chunks)

    def relevant_docs(self, item: GoldItem) -> dict[str, int]:
        """``{document name: grade}`` from ``expected_docs`` and the relevant passages."""
        return relevant_doc_grades(item, aliases=self.documents.names)

    def hard_negatives_in(self, item: GoldItem, evidence: Sequence[Candidate]) -> list[str]:
        """Evidence chunk ids that a hard-negative label points at."""
        if not item.hard_negatives:
            return []
        hits = passage_chunk_ids(item.hard_negatives, evidence)
        return [c.chunk_id for c in evidence if c.chunk_id in hits]

    def doc_name(self, candidate: Candidate) -> str:
        return candidate.doc_name or self.documents.name(candidate.doc_id)
