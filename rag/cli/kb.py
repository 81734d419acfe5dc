"""`python -m rag {ingest,docs,delete,search,reindex,delete-kb,demo}`: a knowledge base and its documents."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from rag.config import Settings
from rag.errors import RagError


def _kb(args, create: bool = False):
    from rag.kb import KnowledgeBase

    return KnowledgeBase(args.kb, Settings.from_env(), create=create, creator=args.principal)


def cmd_ingest(args) -> int:
    from rag.ingest.pipeline import UploadItem

    kb = _kb(args, create=True)
    items = []
    for p in _expand(args.paths):
        items.append(UploadItem(p.name, p.read_bytes(), tuple(args.tag or ()), args.date or ""))
    results = kb.ingest(
        items,
        progress=lambda n, s, f: logging.getLogger("rag.ingest").info("%s %s %.0f%%", n, s, f * 100),
        principal=args.principal,
    )
    for r in results:
        detail = r.error if not r.ok else f"rev {r.revision}, {r.pages} pages, {r.chunks} chunks"
        print(f"{r.status:9} {r.doc_id or '-':12} {r.name}: {detail}")
    return 0 if all(r.ok for r in results) else 1


def _expand(paths: list[str]) -> list[Path]:
    out = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            out += sorted(q for q in p.rglob("*") if q.is_file() and not q.name.startswith("."))
        elif p.is_file():
            out.append(p)
        else:
            raise RagError(f"No such file or directory: {raw}.", fix="Check the path.")
    return out


def cmd_docs(args) -> int:
    kb = _kb(args)
    docs = kb.documents()
    if args.json:
        print(json.dumps([d.as_dict() for d in docs], indent=2, ensure_ascii=False))
        return 0
    print(f"{'id':12}  {'rev':>3}  {'pages':>5}  {'chunks':>6}  {'hash':12}  name")
    for d in docs:
        print(f"{d.id:12}  {d.revision:>3}  {d.pages:>5}  {d.chunks:>6}  {d.content_hash[:12]}  {d.name}")
    print(f"{len(docs)} documents in '{kb.name}' (embedder {kb.embedder.model_id}, {kb.embedder.dim}-d)")
    return 0


def cmd_delete(args) -> int:
    kb = _kb(args)
    record = kb.delete(args.doc, principal=args.principal)
    print(f"deleted {record.id} {record.name} ({record.chunks} chunks)")
    return 0


def cmd_search(args) -> int:
    from rag.limits import check_query

    check_query(args.query, Settings.from_env())
    kb = _kb(args)
    vec = kb.embedder.embed_query(args.query)
    for label, hits in (("dense", kb.dense_search(vec, args.k)), ("bm25", kb.sparse_search(args.query, args.k))):
        print(f"== {label} ==")
        for rank, h in enumerate(hits, 1):
            snippet = h.chunk.text[:90].replace("\n", " ")
            print(f"{rank:>3} {h.score:8.4f}  {h.chunk.id:28} p{h.chunk.page}  {snippet}")
    return 0


def cmd_reindex(args) -> int:
    from rag.ingest.reindex import reindex

    kb = _kb(args)
    n = reindex(kb, full=args.full or None, principal=args.principal)
    print(f"re-embedded {n} documents in '{kb.name}' with {kb.embedder.model_id}")
    return 0


def cmd_delete_kb(args) -> int:
    """Delete a whole knowledge base (owners): documents, vectors, BM25 index, chats, runs, members.
    Its audit trail stays, ending with the deletion."""
    kb = _kb(args)  # one that does not exist says so first
    if not args.yes:
        raise RagError(
            f"Deleting '{args.kb}' removes its documents, index, chats, evaluation runs and members for good"
            " (its audit trail stays).",
            fix=f"To go ahead: `python -m rag delete-kb --kb {args.kb} --yes`.",
        )
    documents = len(kb.documents())
    kb.drop(principal=args.principal)
    print(f"deleted knowledge base '{kb.name}' ({documents} documents); its audit trail stays:"
          f" `python -m rag audit --kb {kb.name}`")  # fmt: skip
    return 0


def cmd_demo(args) -> int:
    from rag.demo import ensure_demo_kb

    kb = ensure_demo_kb(Settings.from_env(), force=args.force)
    print(f"demo knowledge base '{kb.name}': {len(kb.documents())} documents")
    return 0


def add_parsers(sub) -> None:
    s = sub.add_parser("ingest", help="add or update documents")
    s.add_argument("paths", nargs="+")
    add_kb_argument(s)
    s.add_argument("--tag", action="append")
    s.add_argument("--date", help="document date, YYYY-MM-DD (for date filters)")
    s.set_defaults(func=cmd_ingest)

    s = sub.add_parser("docs", help="list documents")
    add_kb_argument(s)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_docs)

    s = sub.add_parser("delete", help="delete a document (id or name)")
    s.add_argument("doc")
    add_kb_argument(s)
    s.set_defaults(func=cmd_delete)

    s = sub.add_parser("search", help="dense and BM25 hits with scores")
    s.add_argument("query")
    add_kb_argument(s)
    s.add_argument("-k", type=int, default=5)
    s.set_defaults(func=cmd_search)

    s = sub.add_parser("reindex", help="re-embed every document with the configured embedder")
    add_kb_argument(s)
    s.add_argument(
        "--full", action="store_true", help="rebuild every vector, also when the model is unchanged (a damaged index)"
    )
    s.set_defaults(func=cmd_reindex)

    s = sub.add_parser("delete-kb", help="delete a whole knowledge base (owners; its audit trail stays)")
    s.add_argument("--kb", required=True, help="the knowledge base to delete (no default: this is for good)")
    s.add_argument("--yes", action="store_true", help="confirm: nothing of it but the audit trail is kept")
    s.set_defaults(func=cmd_delete_kb)

    s = sub.add_parser("demo", help="build the demo knowledge base")
    s.add_argument("--force", action="store_true")
    s.set_defaults(func=cmd_demo)


def add_kb_argument(parser) -> None:
    """``--kb NAME``, defaulting to the knowledge base the app opens (``RAG_DEFAULT_KB``, 'demo'),
    so ``python -m rag ask "..."`` works right after ``scripts/run.sh``."""
    parser.add_argument("--kb", default=None, help="knowledge base (default: RAG_DEFAULT_KB, 'demo')")
    parser.set_defaults(kb_from_settings=True)


def resolve_kb(args) -> None:
    """Fill in ``--kb`` from the settings where it was left out (read when the command runs)."""
    if getattr(args, "kb_from_settings", False) and args.kb is None:
        args.kb = Settings.from_env().default_kb
