"""Chroma vectors through LlamaIndex's ChromaVectorStore: embedded or ``chroma run`` server.

One collection per knowledge base, cosine space, our own embeddings always passed
(Chroma's default embedding function would try to download a model). The same
code path serves the embedded PersistentClient and an HttpClient.
"""

from __future__ import annotations

import logging
import threading

import chromadb
import numpy as np
from chromadb.config import Settings as ChromaSettings
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.vector_stores.chroma import ChromaVectorStore

from rag.config import Settings
from rag.errors import StoreUnavailable
from rag.records import ChunkRecord

log = logging.getLogger(__name__)
_clients: dict[tuple, chromadb.api.ClientAPI] = {}
_lock = threading.Lock()


def chroma_client(settings: Settings) -> chromadb.api.ClientAPI:
    """A cached client for these settings. Raises StoreUnavailable when a server can't be reached."""
    key = (str(settings.home), settings.chroma_host, settings.chroma_port, settings.chroma_token, settings.chroma_ssl)
    with _lock:
        client = _clients.get(key)
        if client is None:
            client = _make_client(settings)
            _clients[key] = client
    return client


def _make_client(settings: Settings) -> chromadb.api.ClientAPI:
    chroma_settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
    if not settings.server_mode:
        path = settings.home / "chroma"
        path.mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(path=str(path), settings=chroma_settings)
    headers = {"Authorization": f"Bearer {settings.chroma_token}"} if settings.chroma_token else None
    try:
        client = chromadb.HttpClient(
            host=settings.chroma_host,
            port=settings.chroma_port,
            ssl=settings.chroma_ssl,
            headers=headers,
            settings=chroma_settings,
        )
        client.heartbeat()
    except Exception as exc:  # chromadb raises ValueError/ConnectError/etc. depending on transport
        raise StoreUnavailable(
            f"Cannot reach the Chroma server at {settings.chroma_host}:{settings.chroma_port} ({type(exc).__name__}: {exc})."
        ) from exc
    return client


def forget_client(settings: Settings) -> None:
    """Drop a cached client (after a server restart) so the next call reconnects."""
    key = (str(settings.home), settings.chroma_host, settings.chroma_port, settings.chroma_token, settings.chroma_ssl)
    with _lock:
        _clients.pop(key, None)


class VectorStore:
    """The vectors of one knowledge base."""

    def __init__(self, settings: Settings, kb: str) -> None:
        self.settings = settings
        self.collection_name = f"rag_{kb}"
        client = chroma_client(settings)
        try:
            self.collection = client.get_or_create_collection(
                self.collection_name, metadata={"hnsw:space": "cosine"}, embedding_function=None
            )
        except Exception as exc:
            raise StoreUnavailable(f"Chroma refused collection '{self.collection_name}': {exc}.") from exc
        self.li_store = ChromaVectorStore(chroma_collection=self.collection)

    def add(self, chunks: list[ChunkRecord], embeddings: np.ndarray) -> None:
        nodes = []
        for chunk, vec in zip(chunks, embeddings, strict=True):
            meta = chunk.metadata() | {"rev_key": f"{chunk.doc_id}:{chunk.revision}"}
            node = TextNode(id_=chunk.id, text=chunk.text, metadata=meta, embedding=vec.tolist())
            # LlamaIndex writes the node's source id into the doc_id/ref_doc_id metadata keys.
            node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=chunk.doc_id)
            nodes.append(node)
        self.li_store.add(nodes)

    def query(self, vec: np.ndarray, k: int, where: dict | None = None) -> list[tuple[str, str, dict, float]]:
        """(chunk id, text, metadata, cosine similarity), best first."""
        if k <= 0 or self.count() == 0:
            return []
        res = self.collection.query(
            query_embeddings=[vec.tolist()],
            n_results=k,
            where=where or None,
            include=["documents", "metadatas", "distances"],
        )
        rows = zip(res["ids"][0], res["documents"][0], res["metadatas"][0], res["distances"][0], strict=False)
        return [(cid, text or "", meta or {}, 1.0 - float(dist)) for cid, text, meta, dist in rows]

    def delete_revision(self, doc_id: str, revision: int) -> None:
        self.collection.delete(where={"rev_key": f"{doc_id}:{revision}"})

    def delete_document(self, doc_id: str) -> None:
        self.li_store.delete(ref_doc_id=doc_id)

    def count(self) -> int:
        return self.collection.count()

    def all_items(self, batch: int = 2000):
        """Yield (id, text, metadata) for every stored vector (BM25 rebuild, export)."""
        offset = 0
        while True:
            got = self.collection.get(limit=batch, offset=offset, include=["documents", "metadatas"])
            if not got["ids"]:
                return
            yield from zip(got["ids"], got["documents"], got["metadatas"], strict=False)
            offset += len(got["ids"])

    def get_embeddings(self, ids: list[str]) -> dict[str, np.ndarray]:
        got = self.collection.get(ids=ids, include=["embeddings"])
        return {cid: np.asarray(e, dtype=np.float32) for cid, e in zip(got["ids"], got["embeddings"], strict=False)}
