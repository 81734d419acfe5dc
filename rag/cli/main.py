"""Command line: python -m rag {ingest,docs,delete,search,reindex,demo,ask,why,eval,bench,models,...}.

One module per area (``kb``, ``ask``, ``evaluation``, ``backup``, ``bench``), each adding its
subcommands; each imports its feature lazily so ``--help`` stays fast. User-fixable problems
print one line (what happened + what to do) and exit 2; never a traceback.
"""

from __future__ import annotations

import argparse
import logging
import sys

from rag.errors import RagError


def build_parser() -> argparse.ArgumentParser:
    from rag.cli import access, ask, backup, bench, evaluation, kb, models, why

    p = argparse.ArgumentParser(prog="python -m rag", description="Ragscope: ask your documents, see why.")
    p.add_argument("-v", "--verbose", action="store_true")
    access.add_user_argument(p)
    sub = p.add_subparsers(dest="cmd", required=True)
    kb.add_parsers(sub)
    ask.add_parser(sub)
    ask.add_calibrate_parser(sub)
    why.add_parser(sub)
    models.add_parser(sub)
    evaluation.add_parsers(sub)
    backup.add_parsers(sub)
    bench.add_parsers(sub)
    access.add_parsers(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    from rag.cli import access, kb

    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        kb.resolve_kb(args)
        access.gate(args)  # --user / RAG_USER: that user's roles, or the local owner's
        return int(args.func(args) or 0)
    except RagError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
