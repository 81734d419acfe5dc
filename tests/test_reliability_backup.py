"""Backup: `python -m rag export` / `import` round-trip a knowledge base equal in content."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest
from reliability_support import audit, doc_text

from rag import backup
from rag.backup import BackupError, export_kb, import_kb
from rag.cli import main as cli_main
from rag.ingest.pipeline import UploadItem
from rag.kb import KnowledgeBase

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ZH = "# 差旅政策\n\n## 住宿\n\n出差住宿标准为每晚不超过六百元。报销须在三十天内提交。\n".encode()
QUERIES = ["d1v2marker paragraph", "d2v1marker", "住宿标准", "section words w12 w40"]


def _history(kb) -> None:
    """A trace, two chat turns and an eval run, written as the app writes them (catalog tables)."""
    created = "2026-01-02T03:04:05+00:00"
    trace = {"id": "trace00000000001", "kb": kb.name, "question": "How many days?", "candidates": [1, 2]}
    kb.catalog.save_trace(kb.name, json.dumps(trace), trace["id"], trace["question"], created)
    with kb.catalog.tx() as db:
        for seq in (1, 2):
            db.execute(
                "INSERT INTO chat_turns (id, kb, conversation, seq, question, answer_json, trace_id, created_at) "
                "VALUES (?,?,?,?,?,?,?,?)",
                (
                    f"turn{seq}",
                    kb.name,
                    "conv1",
                    seq,
                    f"q{seq}",
                    json.dumps({"text": "27 days [1]"}),
                    trace["id"],
                    created,
                ),
            )
        run = {"id": "run0000000000001", "kb": kb.name, "summary": {"recall@5": 0.8}}
        db.execute(
            "INSERT INTO eval_runs (id, kb, goldset, config_fingerprint, index_revision, created_at, json) "
            "VALUES (?,?,?,?,?,?,?)",
            (run["id"], kb.name, "demo-gold", "abc123", kb.index_revision, created, json.dumps(run)),
        )


@pytest.fixture
def original(make_kb):
    kb = make_kb("orig")
    kb.ingest([UploadItem(f"doc{d}.md", doc_text(d, 1), ("t",), "2026-01-01") for d in range(3)])
    kb.ingest([UploadItem("doc1.md", doc_text(1, 2)), UploadItem("差旅.md", ZH)])  # a revision, CJK
    kb.delete("doc0.md")
    _history(kb)
    return kb


def _members(path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def _content(kb) -> dict:
    """Everything a knowledge base holds, comparable across data dirs."""
    tables = {t: backup._rows(kb.catalog, t, kb.name) for t in backup.TABLES}
    items = sorted(kb.vectors.all_items())
    vecs = kb.vectors.get_embeddings([cid for cid, _, _ in items])
    kb_row = {k: v for k, v in dict(kb.catalog.kb(kb.name)).items() if k != "name"}
    return {"kb": kb_row, "tables": tables, "items": items, "vectors": vecs}


def _same_search(a, b) -> None:
    for q in QUERIES:
        sa, sb = a.sparse_search(q, 5), b.sparse_search(q, 5)
        assert [(h.chunk, h.score) for h in sa] == [(h.chunk, h.score) for h in sb]
        va = a.dense_search(a.embedder.embed_query(q), 5)
        vb = b.dense_search(b.embedder.embed_query(q), 5)
        assert [h.chunk for h in va] == [h.chunk for h in vb]
        assert np.allclose([h.score for h in va], [h.score for h in vb], atol=1e-6)


def test_roundtrip_into_a_fresh_data_dir_is_equal_in_content(original, settings, embedder, tmp_path):
    first = tmp_path / "orig.ragkb"
    summary = export_kb(original.settings, "orig", first)
    assert summary.counts["vectors"] == original.vectors.count() and summary.counts["traces"] == 1
    other = settings.replace(home=tmp_path / "home2")
    import_kb(other, first)
    copy = KnowledgeBase("orig", other, embedder)
    a, b = _content(original), _content(copy)
    assert a["kb"] == b["kb"] and a["tables"] == b["tables"] and a["items"] == b["items"]
    assert a["vectors"].keys() == b["vectors"].keys()
    # Chroma (cosine space) normalizes every vector it is given, so a re-added vector may move by one
    # float32 ulp: equal within 1e-7, not bit for bit (measured max difference: 1.5e-8).
    drift = max(float(np.abs(a["vectors"][k] - b["vectors"][k]).max()) for k in a["vectors"])
    assert drift < 1e-7
    assert copy.bm25().ids == original.bm25().ids and copy.bm25().version == original.index_revision
    assert audit(copy)["problems"] == []
    _same_search(original, copy)
    again = tmp_path / "again.ragkb"
    export_kb(other, "orig", again)
    m1, m2 = _members(first), _members(again)
    assert m1.keys() == m2.keys()
    assert all(m1[n] == m2[n] for n in m1 if n not in ("manifest.json", "vectors/embeddings.npy"))  # byte for byte
    e1, e2 = (np.load(io.BytesIO(m["vectors/embeddings.npy"])) for m in (m1, m2))
    assert e1.shape == e2.shape and e1.dtype == e2.dtype == np.float32 and np.abs(e1 - e2).max() < 1e-7
    j1, j2 = json.loads(m1["manifest.json"]), json.loads(m2["manifest.json"])
    assert {k: v for k, v in j1.items() if k != "exported_at"} == {k: v for k, v in j2.items() if k != "exported_at"}


def test_cli_export_then_import_as_a_copy_beside_the_original(original, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("RAG_HOME", str(original.settings.home))
    path = tmp_path / "orig.ragkb"
    assert cli_main(["export", "--kb", "orig", str(path)]) == 0
    assert cli_main(["import", str(path), "--kb", "copy"]) == 0
    out = capsys.readouterr().out
    assert "exported 'orig'" in out and "imported 'copy'" in out and "1 traces" in out
    copy = KnowledgeBase("copy", original.settings, original.embedder)
    assert [(d.name, d.revision, d.content_hash) for d in copy.documents()] == [
        (d.name, d.revision, d.content_hash) for d in original.documents()
    ]
    assert [c.text for d in copy.documents() for c in copy.chunks(d.id)] == [
        c.text for d in original.documents() for c in original.chunks(d.id)
    ]
    _same_search(original, copy)
    trace = copy.catalog.q("SELECT id, json FROM traces WHERE kb='copy'")[0]
    assert trace["id"] != "trace00000000001" and json.loads(trace["json"]) | {} == {
        "id": trace["id"],
        "kb": "copy",
        "question": "How many days?",
        "candidates": [1, 2],
    }
    turns = copy.catalog.q("SELECT trace_id FROM chat_turns WHERE kb='copy'")
    assert [t[0] for t in turns] == [trace["id"]] * 2  # the turns follow their trace's new id
    assert cli_main(["import", str(path), "--kb", "copy"]) == 2
    assert "already exists and has documents" in capsys.readouterr().err


@pytest.mark.slow
def test_import_subprocess_into_a_fresh_data_dir(original, settings, embedder, tmp_path):
    path = tmp_path / "orig.ragkb"
    export_kb(original.settings, "orig", path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env |= {"RAG_HOME": str(tmp_path / "home3"), "PYTHONPATH": ROOT}
    done = subprocess.run(
        [sys.executable, "-m", "rag", "import", str(path)], env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    copy = KnowledgeBase("orig", settings.replace(home=tmp_path / "home3"), embedder)
    assert _content(copy)["tables"] == _content(original)["tables"]
    _same_search(original, copy)


def _rewrite(src, dst, change) -> None:
    members = _members(src)
    change(members)
    with zipfile.ZipFile(dst, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def _load_npy(members) -> np.ndarray:
    return np.load(io.BytesIO(members["vectors/embeddings.npy"]))


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def _manifest(edit):
    def change(m):
        data = json.loads(m["manifest.json"])
        edit(data)
        m["manifest.json"] = json.dumps(data).encode()

    return change


def test_damaged_backups_are_refused_and_create_nothing(original, settings, tmp_path):
    good = tmp_path / "good.ragkb"
    export_kb(original.settings, "orig", good)
    junk = tmp_path / "junk.ragkb"
    junk.write_bytes(b"not a zip at all")
    cases = {
        "is not a readable": junk,
        "No such file": tmp_path / "missing.ragkb",
    }
    edits = {
        "not a Ragscope knowledge-base export": _manifest(lambda d: d.update(format="other")),
        "format version 2": _manifest(lambda d: d.update(version=2)),
        "is damaged: chunks": lambda m: m.update({"catalog/chunks.jsonl": b""}),
        "embeddings are": lambda m: m.update({"vectors/embeddings.npy": _npy(_load_npy(m)[:-1])}),
        "not a readable Ragscope backup": lambda m: m.update(
            {"vectors/embeddings.npy": m["vectors/embeddings.npy"][:-400]}
        ),
        "unknown columns for documents": lambda m: m.update(
            {"catalog/documents.jsonl": m["catalog/documents.jsonl"].replace(b'"name"', b'"name) --"', 1)}
        ),
    }
    for i, (words, edit) in enumerate(edits.items()):
        cases[words] = tmp_path / f"bad{i}.ragkb"
        _rewrite(good, cases[words], edit)
    target = settings.replace(home=tmp_path / "home4")
    for words, path in cases.items():
        with pytest.raises(BackupError, match=words):
            import_kb(target, path, "restored")
    from rag.kb import catalog_for

    assert catalog_for(target).kb_names() == []


def test_a_backup_that_unpacks_past_the_cap_is_refused_before_it_is_read(original, settings, tmp_path):
    good = tmp_path / "good.ragkb"
    export_kb(original.settings, "orig", good)
    bomb = tmp_path / "bomb.ragkb"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
        dst.writestr("padding.bin", b"\0" * (64 * 2**20))  # 64 MB unpacked, ~64 KB on disk
    assert bomb.stat().st_size < 2 * 2**20
    target = settings.replace(home=tmp_path / "capped", max_backup_mb=32)
    with pytest.raises(BackupError, match=r"unpacks to 6\d MB; imports are capped at 32 MB") as err:
        import_kb(target, bomb, "restored")
    assert "RAG_MAX_BACKUP_MB" in err.value.fix
    assert import_kb(target, good, "restored").kb == "restored"  # the same cap lets a real one in


def test_an_interrupted_import_leaves_nothing_and_can_be_repeated(original, settings, embedder, tmp_path, monkeypatch):
    path = tmp_path / "orig.ragkb"
    export_kb(original.settings, "orig", path)
    target = settings.replace(home=tmp_path / "home5")

    def crash(*args):
        raise KeyboardInterrupt  # the process stops after the vectors, before the catalog rows

    monkeypatch.setattr(backup, "_insert_rows", crash)
    with pytest.raises(KeyboardInterrupt):
        import_kb(target, path)
    from rag.kb import catalog_for

    assert catalog_for(target).kb("orig") is None
    monkeypatch.undo()
    import_kb(target, path)
    copy = KnowledgeBase("orig", target, embedder)
    assert audit(copy)["problems"] == [] and copy.vectors.count() == original.vectors.count()
