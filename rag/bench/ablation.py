"""What each answerability feature and rule buys: the model refit without it, on training rows.

    python -m rag bench refusal scifact-train --limit 300 --fallback reject --ablate all
    python -m rag.bench.ablation DUMP [DUMP ...] [--ablate FEATURE ...]   # from `bench refusal --dump`
    python -m rag.bench.ablation DUMP --again RULE=DUMP_OFF ...           # a rule asked again off
    python -m rag.bench.ablation DUMP [DUMP ...] --terms                  # what the term rules keep out

For each script's model (``latin``, ``cjk``, ``cjk/reader``, grouped as ``fit_answerability``
fits them) the logistic regression is refit on the same rows once with every feature and once
without each ablated one. Every figure is out of fold (5 folds by question, a question's two
conditions in one fold), so a feature that only fits noise shows no gain: the AUC, and the share
of unanswerable questions refused at the operating point that refuses at most
``MAX_FALSE_REFUSALS`` of answerable ones (the shipped models' rule for choosing theirs).
``absent-term-rule`` keeps every feature and drops the rule that refuses a question holding an
ordinary word no searched chunk contains (Latin script only); ``a+b`` removes a group at once
(features that stand in for each other show no loss alone). Only training sets are read.

``--again RULE=DUMP_OFF`` compares dumps of the same questions asked with a rule of
``rag.rules`` off (``RAG_RULES_OFF``): the rules that shape the question's terms change the
features themselves, so refitting without a feature cannot measure them.

``--terms`` reads the dumps' questions only: for each rule that shapes the question's terms
(``TERM_RULES``), how many questions' salient terms (what the Inspector's term table lists and the
coverage shares count) change with it off, and the words it keeps out most often.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from rag.bench.fit_answerability import MAX_FALSE_REFUSALS, fit_rows, matrix, operating_point
from rag.bench.refusal import SETS
from rag.bench.refusal_rows import Row, load_dump
from rag.errors import DatasetError
from rag.eval.metrics import auc
from rag.retrieval.answerability.model import FEATURES
from rag.rules import RULES, parse
from rag.text.terms import question_terms

# rules of rag.text.terms.question_terms
TERM_RULES = ("categories", "frames", "grammar-cuts", "asked-units", "relations", "hedges", "grammar-words")
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
    gone = set(removed.split("+")) if removed else set()
    names = tuple(n for n in FEATURES if n not in gone and all(n in r.features for r in rows))
    x, y = matrix(list(rows), names)
    p = out_of_fold(x, y, [f"{r.set}:{r.qid}" for r in rows])
    if RULE not in gone:  # the absent-term rule refuses whatever the probability
        vetoed = np.array([bool(r.vetoed(names)) for r in rows])
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


def table(results: Sequence[Ablation], nothing: str = "(nothing: every feature and rule)") -> str:
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
            f"| {a.model} | {a.removed or nothing} | {a.questions} | {a.auc:.3f} | "
            f"{a.unanswerable_refused:.3f} ({a.answerable_refused:.3f}) | {change} |"
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class Decided:
    """One set asked with one rule off (``rule`` '' = every rule on), as the shipped models decided."""

    rule: str
    set: str
    questions: int
    answerable_refused: float
    unanswerable_refused: float
    changed: int = 0  # asks decided otherwise than with every rule on
    features_changed: int = 0  # asks whose features differ from those with every rule on


def _key(r: Row) -> tuple[str, str, str]:
    return (r.set, r.qid, r.condition)


def asked_again(base: Sequence[Row], again: Mapping[str, Sequence[Row]]) -> tuple[list[Decided], list[Ablation]]:
    """What each rule buys, from the same questions asked again with it off (``again``: rule ->
    the rows of ``RAG_RULES_OFF=<rule> bench refusal --dump``, on some or all of the base dump's
    sets, the same questions of each): per set, the shipped models'
    decisions; per model, an out-of-fold refit on the rows each asking gives (a rule changes the
    features, so a refit without it is the fair comparison). ``Ablation.removed`` names the rule."""
    pairs: list[tuple[str, Sequence[Row]]] = [("", base)]
    for rule, rows in again.items():
        if rule not in RULES:
            raise DatasetError(f"Unknown rule '{rule}'.", fix=f"Use any of: {', '.join(RULES)}.")
        sets = {r.set for r in rows}
        if {_key(r) for r in rows} != {_key(r) for r in base if r.set in sets}:
            raise DatasetError(
                f"The '{rule}' dump asked other questions than the base dump.",
                fix="Ask sets of the base dump with the same --limit and --folds, the rule off (RAG_RULES_OFF).",
            )
        pairs.append((rule, rows))
    decided, refits = [], []
    first = {_key(r): r for r in base}
    for rule, rows in pairs:
        for name in dict.fromkeys(r.set for r in rows):
            part = [r for r in rows if r.set == name]
            yes = [r for r in part if r.answerable]
            no = [r for r in part if not r.answerable]
            changed = sum(r.refused != first[_key(r)].refused for r in part)
            moved = sum(r.features != first[_key(r)].features for r in part)
            decided.append(Decided(rule, name, len(yes), _refused_share(yes), _refused_share(no), changed, moved))
        for model, part in groups(rows).items():
            refits.append(replace(measure(part, model), removed=rule))
    return decided, refits


def _refused_share(rows: Sequence[Row]) -> float:
    return round(sum(r.refused for r in rows) / len(rows), 3) if rows else 0.0


def again_tables(decided: Sequence[Decided], refits: Sequence[Ablation]) -> str:
    """Two Markdown tables: each set as decided, each model refit, beside every rule on."""
    base = {d.set: d for d in decided if not d.rule}
    lines = [
        "| rule off | set | questions | answerable refused · change | unanswerable refused · change "
        "| asks decided otherwise | asks with other features |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for d in decided:
        b = base[d.set]
        da = "" if not d.rule else f" · {d.answerable_refused - b.answerable_refused:+.3f}"
        du = "" if not d.rule else f" · {d.unanswerable_refused - b.unanswerable_refused:+.3f}"
        lines.append(
            f"| {d.rule or '(none)'} | {d.set} | {d.questions} | {d.answerable_refused:.3f}{da} | "
            f"{d.unanswerable_refused:.3f}{du} | {d.changed} | {d.features_changed} |"
        )
    return "\n".join(lines) + "\n\nRefit out of fold on each asking's rows:\n\n" + table(refits, "(none)")


@dataclass(frozen=True)
class TermsOff:
    """What one term rule keeps out of one set's questions' salient terms."""

    rule: str
    set: str
    questions: int
    changed: int  # questions whose terms differ with the rule off
    terms_on: float  # salient terms a question, every rule on
    terms_off: float
    kept_out: tuple[str, ...]  # the words most often added with the rule off


def terms_again(rows: Sequence[Row], names: Sequence[str] = TERM_RULES, top: int = 6) -> list[TermsOff]:
    """Each term rule off in turn over the rows' distinct questions (per set, training sets only)."""
    groups(rows)  # refuses a set that is not for training
    per_set: dict[str, dict[str, None]] = {}
    for r in rows:  # a question's two conditions count once
        per_set.setdefault(r.set, {})[r.question] = None
    out = []
    for rule in names:
        for name, questions in per_set.items():
            on = [set(question_terms(q, frozenset()).values()) for q in questions]
            off = [set(question_terms(q, parse(rule)).values()) for q in questions]
            added = Counter(w for a, b in zip(on, off, strict=True) for w in b - a)
            n = len(questions)
            out.append(
                TermsOff(
                    rule,
                    name,
                    n,
                    sum(1 for a, b in zip(on, off, strict=True) if a != b),
                    sum(map(len, on)) / n,
                    sum(map(len, off)) / n,
                    tuple(w for w, _ in added.most_common(top)),
                )
            )
    return out


def terms_table(results: Sequence[TermsOff]) -> str:
    lines = [
        "| rule off | set | questions | terms changed | salient terms a question: on -> off | most often let in |",
        "|---|---|---:|---:|---|---|",
    ]
    for t in results:
        share = t.changed / t.questions if t.questions else 0.0
        lines.append(
            f"| {t.rule} | {t.set} | {t.questions} | {t.changed} ({share:.3f}) | "
            f"{t.terms_on:.2f} -> {t.terms_off:.2f} | {', '.join(t.kept_out) or '—'} |"
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
    ap.add_argument(
        "--again",
        action="append",
        default=[],
        metavar="RULE=DUMP",
        help="the same questions asked with RAG_RULES_OFF=RULE (rag/rules.py): compare them with DUMPS",
    )
    ap.add_argument("--terms", action="store_true", help="what each term rule keeps out of the questions' terms")
    args = ap.parse_args(argv)
    rows = [r for d in args.dumps for r in load_dump(Path(d))]
    if args.terms:
        print(terms_table(terms_again(rows)))
        return 0
    if args.again:
        again = {}
        for item in args.again:
            rule, _, path = item.partition("=")
            again[rule] = [r for p in path.split(",") for r in load_dump(Path(p))]
        print(again_tables(*asked_again(rows, again)))
        return 0
    print(table(ablate(rows, parse_names(args.ablate or ["all"]))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
