"""Chroma vectors through LlamaIndex's ChromaVectorStore: embedded or ``chroma run`` server.

One collection per knowledge base, cosine space, our own embeddings always passed
(Chroma's default embedding function would try to download a model), and beside it a second,
``rag_<kb>.e5``, holding the multilingual embedder's vectors of the chunks chosen for it
(``RAG_MULTILINGUAL_CHUNKS``); its metadata records which model wrote it. A third,
``rag_<kb>.e5s``, holds the same model's vectors of those chunks' sentences (what the CJK reranker
reads: ``embedder.sentence_texts``), each under its chunk's id and its text's key, without the
text. Deletes and resets apply to all of them. The same code path serves the embedded
PersistentClient and an HttpClient.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

import chromadb
import httpx
import numpy as np
from chromadb.errors import NotFoundError
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.vector_stores.chroma import ChromaVectorStore

from rag.config import MULTILINGUAL_EMBEDDER, Settings
from rag.errors import StoreUnavailable
from rag.records import ChunkRecord
from rag.store.chroma import chroma_client, forget_client, settled

log = logging.getLogger(__name__)
RESTART_GRACE_S = 10.0  # a server refusing connections after a lost one is waited for this long (a restart)
START_GRACE_S = 5.0  # a server refusing a process's first connection: a restart in progress, or not running
MULTILINGUAL_SUFFIX = ".e5"  # 'rag_<kb>.e5': no knowledge base name holds a '.', so no main collection is named so
SENTENCE_SUFFIX = ".e5s"  # 'rag_<kb>.e5s': the multilingual vectors of the chunks' sentences
MODEL_KEY = "embed_model"  # the multilingual collection's metadata key naming the model of its vectors
T = TypeVar("T")


class VectorStore:
    """The vectors of one knowledge base."""

    def __init__(self, settings: Settings, kb: str) -> None:
        self.settings = settings
        self.kb = kb
        self.collection_name = f"rag_{kb}"
        self.multilingual_name = f"rag_{kb}{MULTILINGUAL_SUFFIX}"
        self.sentences_name = f"rag_{kb}{SENTENCE_SUFFIX}"
        self._open_waiting(START_GRACE_S)

    def _open(self) -> None:
        client = chroma_client(self.settings)
        try:
            self.collection = client.get_or_create_collection(
                self.collection_name, metadata={"hnsw:space": "cosine"}, embedding_function=None
            )
            self.multilingual = _multilingual_collection(client, self.multilingual_name)
            self.sentences = _multilingual_collection(client, self.sentences_name)
        except httpx.TransportError as exc:
            forget_client(self.settings)
            raise StoreUnavailable(f"Lost the Chroma server while opening '{self.collection_name}': {exc}.") from exc
        except Exception as exc:
            raise StoreUnavailable(f"Chroma refused collection '{self.collection_name}': {exc}.") from exc
        self.li_store = ChromaVectorStore(chroma_collection=self.collection)

    def _reopen(self) -> None:
        """``_open`` after a lost connection, waiting ``RESTART_GRACE_S`` for a restart."""
        self._open_waiting(RESTART_GRACE_S)

    def _open_waiting(self, grace_s: float) -> None:
        """``_open``; a server that refuses connections is restarting or gone, so it is asked
        again every 0.25 s for ``grace_s`` (a restarted ``chroma run`` listens again within
        seconds): a restart costs a wait rather than an error, and a server that is not running
        gets its message and fix after the grace. A server that accepts and does not answer is
        not waited for."""
        deadline = time.monotonic() + grace_s
        while True:
            try:
                return self._open()
            except StoreUnavailable as exc:
                if not isinstance(exc.__cause__, httpx.ConnectError) or time.monotonic() >= deadline:
                    raise
            time.sleep(0.25)

    def _call(self, op: str, fn: Callable[[], T]) -> T:
        """Run one Chroma operation; in server mode, reconnect and retry once after a connection error.

        A restarted server drops the pooled connections (and may have been down for a while): the
        cached client is forgotten, a new one is made (heartbeat first) and the operation repeated.
        """
        try:
            return settled(op, fn, self.kb)
        except httpx.TransportError as exc:
            if not self.settings.server_mode:
                raise
            log.warning("Chroma %s failed (%s: %s); reconnecting once", op, type(exc).__name__, exc)
        forget_client(self.settings)
        self._reopen()  # StoreUnavailable with the fix when the server is still down
        try:
            return settled(op, fn, self.kb)
        except httpx.TransportError as exc:
            forget_client(self.settings)
            where = f"{self.settings.chroma_host}:{self.settings.chroma_port}"
            raise StoreUnavailable(f"Lost the Chroma server at {where} during {op} ({exc}).") from exc

    def add(self, chunks: list[ChunkRecord], embeddings: np.ndarray) -> None:
        nodes = []
        for chunk, vec in zip(chunks, embeddings, strict=True):
            meta = chunk.metadata() | {"rev_key": f"{chunk.doc_id}:{chunk.revision}"}
            node = TextNode(id_=chunk.id, text=chunk.text, metadata=meta, embedding=vec.tolist())
            # LlamaIndex writes the node's source id into the doc_id/ref_doc_id metadata keys.
            node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=chunk.doc_id)
            nodes.append(node)
        self._call("add", lambda: self.li_store.add(nodes))

    def add_multilingual(self, chunks: list[ChunkRecord], embeddings: np.ndarray) -> None:
        """The multilingual embedder's vectors of ``chunks``, with the text and metadata the main
        collection keeps (a dense hit there is a whole chunk, like one here)."""
        if not chunks:
            return
        metas = [c.metadata() | {"rev_key": f"{c.doc_id}:{c.revision}"} for c in chunks]
        self._call(
            "add",
            lambda: self.multilingual.upsert(
                ids=[c.id for c in chunks],
                embeddings=np.asarray(embeddings, dtype=np.float32),
                documents=[c.text for c in chunks],
                metadatas=metas,
            ),
        )

    def add_sentences(self, chunks: list[ChunkRecord], keys: list[list[str]], embeddings: np.ndarray) -> None:
        """The multilingual vectors of each chunk's sentences: ``keys[i]`` are the keys
        (``embedder.passage_key``) of chunk i's sentence texts, ``embeddings`` their vectors, in order."""
        ids, metas = [], []
        for chunk, chunk_keys in zip(chunks, keys, strict=True):
            base = {"chunk_id": chunk.id, "doc_id": chunk.doc_id, "rev_key": f"{chunk.doc_id}:{chunk.revision}"}
            ids += [f"{chunk.id}~{i}" for i in range(len(chunk_keys))]
            metas += [base | {"key": k} for k in chunk_keys]
        if ids:
            vecs = np.asarray(embeddings, dtype=np.float32)
            self._call("add", lambda: self.sentences.upsert(ids=ids, embeddings=vecs, metadatas=metas))

    def sentence_embeddings(self, chunk_ids: list[str]) -> dict[str, np.ndarray]:
        """The stored sentence vectors of ``chunk_ids``, by their texts' keys (none for a chunk
        stored before sentences were)."""
        if not chunk_ids:
            return {}
        got = self._call(
            "get",
            lambda: self.sentences.get(
                where={"chunk_id": {"$in": list(chunk_ids)}}, include=["metadatas", "embeddings"]
            ),
        )
        return {
            str(m["key"]): np.asarray(e, dtype=np.float32)
            for m, e in zip(got["metadatas"], got["embeddings"], strict=False)
            if m
        }

    def sentence_chunk_ids(self, batch: int = 5000) -> set[str]:
        """Ids of every chunk whose sentences have vectors."""
        ids: set[str] = set()
        offset = 0
        while True:
            got = self._call("get", lambda at=offset: self.sentences.get(limit=batch, offset=at, include=["metadatas"]))
            if not got["ids"]:
                return ids
            ids.update(str(m["chunk_id"]) for m in got["metadatas"] if m)
            offset += len(got["ids"])

    def multilingual_model(self) -> str:
        """The model that wrote the multilingual vectors ('' for a collection made before it was recorded)."""
        return str((self.multilingual.metadata or {}).get(MODEL_KEY, ""))

    def multilingual_ids(self) -> set[str]:
        """Ids of every chunk with a multilingual vector."""
        return self._ids(self.multilingual)

    def ids(self) -> set[str]:
        """Ids of every vector in the embedder's collection."""
        return self._ids(self.collection)

    def _ids(self, collection, batch: int = 5000) -> set[str]:
        ids: set[str] = set()
        offset = 0
        while True:
            got = self._call("get", lambda at=offset: collection.get(limit=batch, offset=at, include=[]))
            if not got["ids"]:
                return ids
            ids.update(got["ids"])
            offset += len(got["ids"])

    def delete_ids(self, ids: list[str], batch: int = 5000) -> None:
        """Delete vectors by id from every collection (a sentence vector is keyed by its chunk's id)."""
        for i in range(0, len(ids), batch):
            part = ids[i : i + batch]
            self._call("delete", lambda p=part: self.collection.delete(ids=p))
            self._call("delete", lambda p=part: self.multilingual.delete(ids=p))
            self._call("delete", lambda p=part: self.sentences.delete(where={"chunk_id": {"$in": p}}))

    def multilingual_count(self) -> int:
        return self._call("count", lambda: self.multilingual.count())

    def reset_multilingual(self) -> None:
        """Drop the multilingual vectors, the sentences' too (new collections, recorded with the current model)."""
        client = chroma_client(self.settings)
        self._call("reset", lambda: client.delete_collection(self.multilingual_name))
        self._call("reset", lambda: client.delete_collection(self.sentences_name))
        self.multilingual = _multilingual_collection(client, self.multilingual_name)
        self.sentences = _multilingual_collection(client, self.sentences_name)

    def add_items(self, ids: list[str], embeddings: np.ndarray, texts: list[str], metadatas: list[dict]) -> None:
        """Add vectors exactly as exported (backup import): ids, texts and metadata unchanged."""
        self._call(
            "add",
            lambda: self.collection.add(
                ids=ids, embeddings=np.asarray(embeddings, dtype=np.float32), documents=texts, metadatas=metadatas
            ),
        )

    def reset(self) -> None:
        """Empty every collection (drop and re-create them)."""
        client = chroma_client(self.settings)
        for name in (self.collection_name, self.multilingual_name, self.sentences_name):
            self._call("reset", lambda n=name: client.delete_collection(n))
        self._open()

    def query(
        self, vec: np.ndarray, k: int, where: dict | None = None, multilingual: bool = False
    ) -> list[tuple[str, str, dict, float]]:
        """(chunk id, text, metadata, cosine similarity), best first; ``multilingual`` searches the
        multilingual embedder's collection."""
        if k <= 0:  # an empty collection answers an empty list; no count() round trip per query
            return []
        collection = self.multilingual if multilingual else self.collection
        res = self._call(
            "query",
            lambda: collection.query(
                query_embeddings=[vec.tolist()],
                n_results=k,
                where=where or None,
                include=["documents", "metadatas", "distances"],
            ),
        )
        rows = zip(res["ids"][0], res["documents"][0], res["metadatas"][0], res["distances"][0], strict=False)
        # A vector another process deletes while the server answers comes back without its
        # metadata (the index found it, the record was gone): it is no longer there, so no hit.
        return [(cid, text or "", meta, 1.0 - float(dist)) for cid, text, meta, dist in rows if meta]

    def delete_revision(self, doc_id: str, revision: int) -> None:
        for collection in (self.collection, self.multilingual, self.sentences):
            self._call("delete", lambda c=collection: c.delete(where={"rev_key": f"{doc_id}:{revision}"}))

    def delete_document(self, doc_id: str) -> None:
        self._call("delete", lambda: self.li_store.delete(ref_doc_id=doc_id))
        for collection in (self.multilingual, self.sentences):
            self._call("delete", lambda c=collection: c.delete(where={"doc_id": doc_id}))

    def count(self) -> int:
        return self._call("count", lambda: self.collection.count())

    def checked_count(self) -> int:
        """The embedder's collection's count, after counting each collection (a count reads its
        index): ``VectorIndexDamaged`` when Chroma cannot read one (a kill while it wrote it), and a
        server that cannot be reached is ``StoreUnavailable`` at once (no wait for a restart: this is
        a check before other work, which then waits or fails with the fix on its own)."""
        try:
            counts = [settled("count", c.count, self.kb) for c in (self.collection, self.multilingual, self.sentences)]
        except httpx.TransportError as exc:
            raise StoreUnavailable(f"Cannot reach the Chroma server to check '{self.collection_name}': {exc}.") from exc
        return counts[0]

    def all_items(self, batch: int = 2000):
        """Yield (id, text, metadata) for every stored vector (BM25 rebuild, export)."""
        offset = 0
        while True:
            got = self._call(
                "get",
                lambda at=offset: self.collection.get(limit=batch, offset=at, include=["documents", "metadatas"]),
            )
            if not got["ids"]:
                return
            yield from zip(got["ids"], got["documents"], got["metadatas"], strict=False)
            offset += len(got["ids"])

    def all_embeddings(self, batch: int = 2000, multilingual: bool = False):
        """Yield (id, metadata, vector) for every stored vector (the why-not probe's dense ranks)."""
        collection = self.multilingual if multilingual else self.collection
        offset = 0
        while True:
            got = self._call(
                "get",
                lambda at=offset: collection.get(limit=batch, offset=at, include=["metadatas", "embeddings"]),
            )
            if not len(got["ids"]):
                return
            yield from zip(got["ids"], got["metadatas"], got["embeddings"], strict=False)
            offset += len(got["ids"])

    def get_embeddings(self, ids: list[str], multilingual: bool = False) -> dict[str, np.ndarray]:
        collection = self.multilingual if multilingual else self.collection
        got = self._call("get", lambda: collection.get(ids=ids, include=["embeddings"]))
        return {cid: np.asarray(e, dtype=np.float32) for cid, e in zip(got["ids"], got["embeddings"], strict=False)}


def _multilingual_collection(client: chromadb.api.ClientAPI, name: str):
    """The multilingual collection, made (recording the current model) when missing; an existing one
    keeps the model it records, so a model change shows as a mismatch instead of mixed vectors."""
    try:
        return client.get_collection(name, embedding_function=None)
    except (NotFoundError, ValueError):
        meta = {"hnsw:space": "cosine", MODEL_KEY: MULTILINGUAL_EMBEDDER}
        return client.get_or_create_collection(name, metadata=meta, embedding_function=None)
