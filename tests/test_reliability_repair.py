"""A vector index Chroma cannot read, or one a killed reindex rebuilt in part, is made whole from
the catalog when the knowledge base opens.

Chroma writes an HNSW index's files in place; a process killed in the middle leaves, for instance,
an empty ``index_metadata.pickle``, and from then on every read, count or delete of that collection
fails ("Error deserializing pickle file"). The catalog keeps every text, so opening the knowledge
base rebuilds the vectors from it. The damage here is that file truncated on disk, between two real
processes (the first writes more than Chroma's 1,000-vector flush threshold, so the file exists).
A reindex killed half-way leaves a collection holding part of the vectors and no unfinished
revision: the open counts them against the catalog's active chunks and adds what is missing.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from reliability_support import child_env

DOCS = 10
SECTIONS = 110  # about 110 chunks per document, together past Chroma's flush threshold

SETUP = """
import json, sys
from reliability_support import HashEmbedder, doc_text
from rag.config import Settings
from rag.kb import KnowledgeBase
kb = KnowledgeBase("repair", Settings.from_env(env={{}}, home=sys.argv[1]), HashEmbedder())
for d in range({docs}):
    assert kb.ingest_file(f"doc{{d}}.md", doc_text(d, 0, sections={sections})).ok
print(json.dumps({{"chunks": kb.vectors.count()}}))
"""

REINDEX_KILLED = """
import os, signal, sys
from reliability_support import HashEmbedder
from rag.config import Settings
from rag.ingest.reindex import reindex
from rag.kb import KnowledgeBase
from rag.store.vectors import VectorStore
kb = KnowledgeBase("repair", Settings.from_env(env={}, home=sys.argv[1]), HashEmbedder())
add, calls = VectorStore.add, []
def add_then_die(self, chunks, embeddings):
    calls.append(1)
    add(self, chunks, embeddings)
    if len(calls) == 2:  # two batches of the rebuilt collection written, the rest never
        os.kill(os.getpid(), signal.SIGKILL)
VectorStore.add = add_then_die
reindex(kb, full=True)
"""

REOPEN = """
import json, sys
from reliability_support import HashEmbedder, audit, probe_queries
from rag.config import Settings
from rag.errors import VectorIndexDamaged
from rag.kb import KnowledgeBase
from rag.store.vectors import VectorStore
settings = Settings.from_env(env={}, home=sys.argv[1])
store = VectorStore(settings, "repair")
try:
    damage, before = None, store.checked_count()
except VectorIndexDamaged as exc:
    damage, before = exc, None
kb = KnowledgeBase("repair", settings, HashEmbedder())
rows = kb.catalog.q("SELECT user_id, action, detail FROM audit WHERE kb='repair' AND action='kb.reindex'")
print(json.dumps({
    "damage": str(damage), "before": before, "audit": audit(kb), "probes": probe_queries(kb),
    "repairs": [[r["user_id"], json.loads(r["detail"])] for r in rows],
}))
"""


def _run(script: str, home: Path, killed: bool = False) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), str(home)],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    if killed:
        assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
        return {}
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _index_metadata(home: Path, collection: str) -> Path:
    with sqlite3.connect(home / "chroma" / "chroma.sqlite3") as db:
        (segment,) = db.execute(
            "SELECT s.id FROM segments s JOIN collections c ON s.collection = c.id WHERE c.name = ? AND s.scope = 'VECTOR'",
            (collection,),
        ).fetchone()
    return home / "chroma" / segment / "index_metadata.pickle"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_an_index_chroma_cannot_read_is_rebuilt_from_the_catalog_on_open(tmp_path):
    home = tmp_path / "home"
    chunks = _run(SETUP.format(docs=DOCS, sections=SECTIONS), home)["chunks"]
    pickle = _index_metadata(home, "rag_repair")
    assert chunks > 1000 and pickle.stat().st_size > 0
    pickle.write_bytes(b"")  # what a kill as Chroma began to write it leaves

    got = _run(REOPEN, home)
    assert "pickle" in got["damage"] and "reindex --kb repair --full" in got["damage"]  # the premise
    assert got["audit"]["problems"] == [] and got["probes"] == []
    assert got["audit"]["chunks"] == chunks and len(got["audit"]["hashes"]) == DOCS
    ((who, detail),) = got["repairs"]
    assert who == "system" and "pickle" in detail["repaired"]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_reindex_killed_half_way_is_completed_on_open(tmp_path):
    home = tmp_path / "home"
    chunks = _run(SETUP.format(docs=DOCS, sections=SECTIONS), home)["chunks"]
    _run(REINDEX_KILLED, home, killed=True)

    got = _run(REOPEN, home)
    assert got["damage"] == "None" and got["before"] < chunks  # the premise: a collection rebuilt in part
    assert got["audit"]["problems"] == [] and got["probes"] == []
    assert got["audit"]["chunks"] == chunks and len(got["audit"]["hashes"]) == DOCS
    who, detail = got["repairs"][-1]
    assert who == "system" and detail["reconciled"] == {"added": chunks - got["before"], "deleted": 0}
