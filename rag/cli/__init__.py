"""``python -m rag``: subcommands by area (kb, ask, evaluation, backup, bench)."""

from rag.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
