"""The weights manifest (``models/MANIFEST.json``): every fitted weights file the repository
ships, with its sha256, what it is, the benchmark data it was fit on (by name), the command
that rebuilds it and the licences of that data and of its base model.

    python -m rag models            # check: every listed file is there with its sha256,
                                    # every weights file is listed
    python -m rag models --update   # after a refit: write the listed files' new sha256s

A refit changes a file's sha256; ``--update`` records the new one (the entry's data, command and
licences are written by hand, since only a person knows them). A new weights file needs an
entry first: ``--update`` refuses to invent one.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from rag.readers.loader import MODELS_DIR

ROOT = MODELS_DIR.parent
MANIFEST_NAME = "MANIFEST.json"
# What counts as a weights file: everything in models/ but the manifest, and the fitted files
# that stay beside the code that reads them (the answerability models, the reranker calibrations).
WEIGHT_GLOBS = ("models/*", "rag/**/*.pt", "rag/**/weights.json", "rag/**/calibration*.json")
FIELDS = ("path", "sha256", "what", "data", "command", "licence")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def weight_files(root: Path = ROOT) -> list[str]:
    """Every weights file under ``root`` (repository-relative paths)."""
    found = {p.relative_to(root).as_posix() for g in WEIGHT_GLOBS for p in root.glob(g) if p.is_file()}
    return sorted(f for f in found if Path(f).name != MANIFEST_NAME)


def load(root: Path = ROOT) -> list[dict]:
    path = root / "models" / MANIFEST_NAME
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: restore it with `git checkout {path.relative_to(root)}`")
    return json.loads(path.read_text(encoding="utf-8"))["files"]


def check(root: Path = ROOT) -> list[str]:
    """One line per problem (empty: the manifest and the files agree)."""
    problems: list[str] = []
    entries = load(root)
    listed = [e.get("path", "") for e in entries]
    for e in entries:
        missing = [f for f in FIELDS if not e.get(f)]
        if missing:
            problems.append(f"{e.get('path', '?')}: entry lacks {', '.join(missing)}")
        path = root / e.get("path", "")
        if not path.is_file():
            problems.append(f"{e.get('path')}: listed but missing (restore it, or remove its entry)")
        elif e.get("sha256") and sha256(path) != e["sha256"]:
            problems.append(
                f"{e['path']}: sha256 differs from the manifest's (refit? run `python -m rag models --update`)"
            )
    for f in weight_files(root):
        if f not in listed:
            problems.append(f"{f}: a weights file not in models/{MANIFEST_NAME} (add an entry: {', '.join(FIELDS)})")
    return problems


def update(root: Path = ROOT) -> list[str]:
    """Write every listed, present file's current sha256 into the manifest; returns the paths
    whose sha256 changed."""
    path = root / "models" / MANIFEST_NAME
    body = json.loads(path.read_text(encoding="utf-8"))
    changed = []
    for e in body["files"]:
        f = root / e["path"]
        if f.is_file() and e.get("sha256") != (now := sha256(f)):
            e["sha256"] = now
            changed.append(e["path"])
    path.write_text(json.dumps(body, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return changed
