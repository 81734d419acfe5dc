"""`python -m rag why "question" --kb NAME --doc NAME_OR_ID [--chunk ID]`: why that chunk was not
evidence for the question, the smallest change that would have let it in, and (``--replay``)
whether replaying that change does."""

from __future__ import annotations

from rag.cli.kb import add_kb_argument
from rag.config import Settings
from rag.errors import RagError


def add_parser(sub) -> None:
    s = sub.add_parser("why", help="why a document or chunk was not evidence for a question, and what would let it in")
    s.add_argument("question", nargs="?", default="", help="the question (or --trace ID for a past one)")
    add_kb_argument(s)
    s.add_argument("--doc", default="", help="document name or id (its best-placed chunk is probed)")
    s.add_argument("--chunk", default="", help="chunk id doc:revision:page:index (any revision)")
    s.add_argument("--trace", default="", help="probe a stored trace (a past question) instead of asking anew")
    s.add_argument("--tag", action="append", help="filter the new question to documents with this tag")
    s.add_argument("--replay", action="store_true", help="replay the suggested change and say whether it lets it in")
    s.set_defaults(func=run)


def run(args) -> int:
    from rag.kb import KnowledgeBase
    from rag.retrieval.pipeline import context, retrieve
    from rag.retrieval.probe import let_in, probe, replay_change
    from rag.retrieval.replay import load_trace
    from rag.retrieval.targets import chunk_target, document_target
    from rag.views.ledger import diff_summary
    from rag.views.probe import probe_text

    if not (args.doc or args.chunk):
        raise RagError("Nothing to probe.", fix="Give --doc NAME_OR_ID or --chunk ID.")
    if not (args.question or args.trace):
        raise RagError("No question.", fix="Give the question in quotes, or --trace ID for a past one.")
    settings = Settings.from_env()
    kb = KnowledgeBase(args.kb, settings, create=False)
    if args.trace:
        trace = load_trace(kb, args.trace)
    else:
        trace = retrieve(kb, args.question, settings, filters={"tags": args.tag} if args.tag else None)
    if args.chunk:
        target = chunk_target(kb, args.chunk)
    else:
        target = document_target(kb, args.doc, trace.question, context(kb, settings).vectors)
    result = probe(kb, trace, target)
    print(probe_text(result))
    print(f"trace: {trace.id}")
    change = result.change
    if args.replay and change is not None and change.replayable:
        done = replay_change(kb, trace, change)
        print("\nreplay: " + " ".join(diff_summary(done.diff)).replace("**", "").replace("\\", ""))
        print(f"replay lets it in: {'yes' if let_in(done, result.chunk_id) else 'no'}")
    return 0
