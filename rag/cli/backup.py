"""`python -m rag export --kb NAME FILE` and `python -m rag import FILE [--kb NAME]`."""

from __future__ import annotations

from rag.cli.kb import add_kb_argument
from rag.config import Settings


def add_parsers(sub) -> None:
    s = sub.add_parser("export", help="write a knowledge base (documents, vectors, history) to one file")
    s.add_argument("file", help="the backup file to write (a ZIP)")
    add_kb_argument(s)
    s.set_defaults(func=cmd_export)
    s = sub.add_parser("import", help="restore a knowledge base from a file written by export")
    s.add_argument("file")
    s.add_argument("--kb", default=None, help="name to import as (default: the name it was exported with)")
    s.set_defaults(func=cmd_import)


def cmd_export(args) -> int:
    from rag.backup import export_kb

    summary = export_kb(Settings.from_env(), args.kb, args.file)
    print(f"exported {summary.line()}")
    return 0


def cmd_import(args) -> int:
    from rag.backup import import_kb

    summary = import_kb(Settings.from_env(), args.file, args.kb)
    print(f"imported {summary.line()}")
    return 0
