"""`python -m rag models [--update]`: the shipped weights against ``models/MANIFEST.json``
(``rag.readers.manifest``): every listed file present with its sha256, every weights file listed."""

from __future__ import annotations

import sys


def add_parser(sub) -> None:
    s = sub.add_parser("models", help="check the shipped weights against models/MANIFEST.json")
    s.add_argument("--update", action="store_true", help="after a refit: write the listed files' current sha256s")
    s.set_defaults(func=cmd_models)


def cmd_models(args) -> int:
    from rag.readers import manifest

    if args.update:
        for path in manifest.update():
            print(f"updated {path}")
    problems = manifest.check()
    for problem in problems:
        print(problem, file=sys.stderr)
    if not problems:
        print(f"models/{manifest.MANIFEST_NAME}: {len(manifest.load())} files, all present with their sha256")
    return 1 if problems else 0
