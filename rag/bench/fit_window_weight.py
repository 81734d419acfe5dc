"""Choose ``reader.CLOSENESS_WEIGHT``: how much a sentence's multilingual-e5-small cosine to the
question counts, beside its share of the question's characters, when ``reader.focus`` chooses the
answer reader's window.

    python -m rag.bench.fit_window_weight [--data ../shared/bench/cmrc2018-trial/beir] [--weights 0,1,2,3,5,100]

For each weight, the share of CMRC 2018 trial questions whose window (in their own paragraph)
holds an answer string, as written and in a user's own words (``data/train``): no reader is
involved, so the readers' own folds 0-2 choose the weight and folds 3-4 (held out from the
readers) judge it. A weight of 0 is characters alone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from rag.bench.answer_reader import READER_FOLDS, fold_of
from rag.bench.own_words import rewrites
from rag.bench.reader_pairs import DEFAULT_DATA, cmrc_beir, holds, train_questions
from rag.config import Settings
from rag.embedder import load_multilingual
from rag.readers import reader
from rag.text.lexical import sentences

WEIGHTS = (0.0, 1.0, 2.0, 3.0, 5.0, 100.0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rag.bench.fit_window_weight", description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--weights", default=",".join(f"{w:g}" for w in WEIGHTS))
    args = ap.parse_args(argv)
    weights = [float(w) for w in args.weights.split(",")]
    ml, own = load_multilingual(Settings.from_env()), rewrites()
    cases = []  # (group, question, text, title, answers, cosines)
    for t in train_questions(cmrc_beir(args.data)):
        sents = sentences(t.text)
        if not sents:
            continue
        vectors = ml.embed_texts(sents)
        side = "folds 0-2 (choose)" if fold_of(t.qid) in READER_FOLDS else "folds 3-4 (judge)"
        for how, q in (("as written", t.question), ("own words", own.get(t.qid))):
            if q:
                cases.append((f"{side}, {how}", q, t.text, t.title, t.answers, (vectors @ ml.embed_query(q)).tolist()))
    groups = sorted({c[0] for c in cases})
    print("window holds the answer (share of questions), per weight:")
    print("weight | " + " | ".join(f"{g} ({sum(c[0] == g for c in cases)})" for g in groups))
    for w in weights:
        hit = {g: [] for g in groups}
        for g, q, text, title, answers, cos in cases:
            window = reader.focus(q, text, title, closeness=cos, weight=w)
            hit[g].append(holds(window, answers))
        print(f"{w:g} | " + " | ".join(f"{np.mean(hit[g]):.3f}" for g in groups), flush=True)
    print(f"shipped: CLOSENESS_WEIGHT = {reader.CLOSENESS_WEIGHT:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
