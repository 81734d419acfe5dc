"""Training questions asked in a user's own words: CMRC 2018 trial's (``data/train/cmrc-trial-own-words*.jsonl``)
and SQuAD 2.0's English dev half's (``squad2-en-own-words.jsonl``); how they were written and which
questions, in ``data/train/README.md``.

Cilin swaps (``rag.bench.synonyms``) keep a question's frame and swap single words, so a model
can still lean on the rest; these rewrites change the wording the way people do ("分布在哪些地区"
-> "在哪些地方能见到"), which is what the demo's own-words sets ask and what CMRC's questions,
written while reading their passage, never do.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from rag.errors import DatasetError

TRAIN = Path(__file__).resolve().parents[2] / "data" / "train"
OWN_WORDS = TRAIN / "cmrc-trial-own-words.jsonl"
# Each round asks a question once more, in other words than the rounds before it; the benchmark
# sets ask the first round's, the readers may fit on any number of rounds.
ROUNDS = (OWN_WORDS, TRAIN / "cmrc-trial-own-words-2.jsonl")
# SQuAD 2.0's English dev half: 271 questions of folds 3-4, unanswerable ones too (benchmark only)
SQUAD2_EN = TRAIN / "squad2-en-own-words.jsonl"


@lru_cache(maxsize=4)
def rewrites(path: Path = OWN_WORDS) -> dict[str, str]:
    """CMRC question id -> the question in other words."""
    if not path.exists():
        raise DatasetError(
            f"No own-words rewrites at {path}.",
            fix="It ships with the repository (data/train/); restore it with git checkout -- data/train.",
        )
    out: dict[str, str] = {}
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if not row.get("qid") or not row.get("own_words"):
                raise DatasetError(f"{path}:{n} has no qid or own_words.", fix="Each line needs both (README).")
            out[row["qid"]] = row["own_words"]
    return out


def for_set(squad: str) -> dict[str, str]:
    """The rewrites a refusal set asks: a SQuAD-shaped set's (``squad``) or else CMRC's first round."""
    files = {"": OWN_WORDS, "squad2-en": SQUAD2_EN}
    if squad not in files:
        raise DatasetError(f"No own-words rewrites of {squad}.", fix="Only squad2-en and CMRC trial have them.")
    return rewrites(files[squad])


def rounds_of(n: int) -> list[dict[str, str]]:
    """The first ``n`` rounds' rewrites (``ROUNDS``), each a question id -> its rewrite."""
    if not 1 <= n <= len(ROUNDS):
        raise DatasetError(
            f"There are {len(ROUNDS)} rounds of own-words rewrites, not {n}.",
            fix=f"Ask for 1 to {len(ROUNDS)} (data/train/README.md says what each holds).",
        )
    return [rewrites(path) for path in ROUNDS[:n]]
