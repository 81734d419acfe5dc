"""What each answerability feature and rule buys: the model refit without it, on training rows.

    python -m rag bench refusal scifact-train --limit 300 --fallback reject --ablate all
    python -m rag.bench.ablation DUMP [DUMP ...] [--ablate FEATURE ...]   # from `bench refusal --dump`

For each script's model (``latin``, ``cjk``, ``cjk/reader``, grouped as ``fit_answerability``
fits them) the logistic regression is refit on the same rows once with every feature and once
without each ablated one. Every figure is out of fold (5 folds by question, a question's two
conditions in one fold), so a feature that only fits noise shows no gain: the AUC, and the share
of unanswerable questions refused at the operating point that refuses at most
``MAX_FALSE_REFUSALS`` of answerable ones (the shipped models' rule for choosing theirs).
``absent-term-rule`` keeps every feature and drops the rule that refuses a question holding an
ordinary word no searched chunk contains (Latin script only); ``a+b`` removes a group at once
(features that stand in for each other show no loss alone). Only training sets are read.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rag.bench.fit_answerability import MAX_FALSE_REFUSALS, auc, fit_rows, matrix, operating_point
from rag.bench.refusal import SETS, Row, load_dump
from rag.errors import DatasetError
from rag.retrieval.answerability import vetoing
from rag.retrieval.answerability.model import FEATURES

RULE = "absent-term-rule"
ABLATIONS = (*FEATURES, RULE)
FOLDS = 5


@dataclass(frozen=True)
class Ablation:
    """One model refit on one group of training rows, with ``removed`` left out ('' = nothing)."""

    model: str  # latin | cjk | cjk/reader
    removed: str  # one name, or a group joined by "+"
    questions: int
    auc: float  # out of fold
    unanswerable_refused: float  # at the operating point (answerable refused <= MAX_FALSE_REFUSALS)
    answerable_refused: float


def groups(rows: Sequence[Row]) -> dict[str, list[Row]]:
    """Training rows per model, as ``fit_answerability.fit`` splits them (the reader twin on the
    folds the readers never saw)."""
    bad = sorted({r.set for r in rows if r.set not in SETS or not SETS[r.set].train})
    if bad:
        train = ", ".join(n for n, s in SETS.items() if s.train)
        raise DatasetError(f"Ablation reads training sets only; {bad} are not.", fix=f"Use any of: {train}.")
    return fit_rows(rows)


def out_of_fold(x: np.ndarray, y: np.ndarray, qids: Sequence[str]) -> np.ndarray:
    """P(answerable) for every row from a model fit on the other folds (grouped by question)."""
    from sklearn.linear_model import LogisticRegression

    uniq = sorted(set(qids))
    fold = {q: i % FOLDS for i, q in enumerate(uniq)}
    f = np.array([fold[q] for q in qids])
    p = np.zeros(len(y))
    for k in range(FOLDS):
        train = f != k
        if len(set(y[train])) < 2:  # a fold of one class: nothing to fit
            p[~train] = y[train].mean()
            continue
        model = LogisticRegression(C=1.0, max_iter=5000).fit(x[train], y[train]) if x.shape[1] else None
        p[~train] = model.predict_proba(x[~train])[:, 1] if model is not None else y[train].mean()
    return p


def measure(rows: Sequence[Row], model: str, removed: str = "") -> Ablation:
    script = model.split("/")[0]
    gone = set(removed.split("+")) if removed else set()
    names = tuple(n for n in FEATURES if n not in gone and all(n in r.features for r in rows))
    x, y = matrix(list(rows), names)
    p = out_of_fold(x, y, [f"{r.set}:{r.qid}" for r in rows])
    if RULE not in gone:  # the absent-term rule refuses whatever the probability
        vetoed = np.array([bool(vetoing(r.absent_terms, script, r.question, names)) for r in rows])
        p = np.where(vetoed, 0.0, p)
    _, right, false = operating_point(p, y)
    return Ablation(model, removed, len(rows) // 2, round(auc(p, y), 4), round(right, 3), round(false, 3))


def ablate(rows: Sequence[Row], removed: Sequence[str] = ABLATIONS) -> list[Ablation]:
    """For each model: the full refit first, then one refit per entry of ``removed`` that the
    model has (a feature it reads; the rule only where it applies)."""
    unknown = [r for r in removed if any(n not in ABLATIONS for n in r.split("+"))]
    if unknown:
        raise ValueError(f"unknown ablation(s) {unknown}; known: {', '.join(ABLATIONS)}")
    out = []
    for model, part in groups(rows).items():
        out.append(measure(part, model))
        for name in removed:
            if all(_applies(n, model, part) for n in name.split("+")):
                out.append(measure(part, model, name))
    return out


def _applies(name: str, model: str, rows: Sequence[Row]) -> bool:
    """The model reads the feature (the rule: only the Latin model has it)."""
    return model.split("/")[0] == "latin" if name == RULE else all(name in r.features for r in rows)


def table(results: Sequence[Ablation]) -> str:
    """A Markdown table: each refit beside its model's full refit."""
    full = {a.model: a for a in results if not a.removed}
    lines = [
        f"| model | removed | questions | AUC (out of fold) | unanswerable refused at <= {MAX_FALSE_REFUSALS} "
        "answerable refused | change |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for a in results:
        base = full[a.model]
        change = "" if not a.removed else f"{a.unanswerable_refused - base.unanswerable_refused:+.3f}"
        lines.append(
            f"| {a.model} | {a.removed or '(nothing: every feature and rule)'} | {a.questions} | {a.auc:.3f} | "
            f"{a.unanswerable_refused:.3f} ({a.answerable_refused:.3f}) | {change} |"
        )
    return "\n".join(lines)


def parse_names(values: Sequence[str]) -> tuple[str, ...]:
    """``--ablate`` values: names, comma lists, or ``all``."""
    names = [n.strip() for v in values for n in v.split(",") if n.strip()]
    expanded = [n for name in names for n in (ABLATIONS if name == "all" else (name,))]
    return tuple(dict.fromkeys(expanded))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rag.bench.ablation", description=__doc__.split("\n")[0])
    ap.add_argument("dumps", nargs="+", help="JSONL files written by `bench refusal --dump` on training sets")
    ap.add_argument("--ablate", action="append", default=[], help=f"all, or any of: {', '.join(ABLATIONS)}")
    args = ap.parse_args(argv)
    rows = [r for d in args.dumps for r in load_dump(Path(d))]
    print(table(ablate(rows, parse_names(args.ablate or ["all"]))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
