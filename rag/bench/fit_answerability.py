"""Fit the answerability models on training dumps and write ``answerability/weights.json``.

    python -m rag bench refusal cmrc-trial cmrc-trial-hard --fallback reject --dump C
    python -m rag bench refusal policies-zh --folds 0,1,2 --fallback reject --dump P
    python -m rag.bench.fit_answerability C P --drop absent_word --write

One logistic regression per script (``latin`` from SciFact train, ``cjk`` from the CMRC 2018
trial: other articles' paragraphs, and its own paragraph with the answer cut out, and from the
everyday Chinese documents asked in a user's own words, with near misses), on the features of
``rag.retrieval.answerability.FEATURES``; label = the question's own relevant passages were
searchable (as is) or filtered out (removed), or it is a near miss no passage answers. Every
training set weighs alike, so a small set of questions asked in other words counts as much as a
large one asked as written. The operating point is chosen on the sets asked as written
(``OWN_WORDS_SETS`` fit the weights only): the threshold that refuses the most unanswerable
questions while refusing at most ``MAX_FALSE_REFUSALS`` of each set's answerable ones; the bias is
then shifted so that this threshold is probability 0.5 (``RAG_ANSWERABLE_THRESHOLD``). Rows from a
set that is not a training set are rejected: test data never tunes anything.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from rag.bench import squad
from rag.bench.answer_reader import READER_FOLDS
from rag.bench.refusal import SETS
from rag.bench.refusal_rows import Row, SetResult, load_dump, print_result
from rag.eval.metrics import auc
from rag.retrieval.answerability.model import FEATURES, WEIGHTS_FILE, load_models, model_for

# the training sets each script's model may be fit on, those its dumps hold (the shipped ones: the
# sets models/MANIFEST.json names; the ``-para`` sets of ``refusal.py`` are for measuring only: a
# fit with them was measured and not kept, docs/BENCHMARKS.md). ``squad2-zh``
# is measured on, never fit on: its licence (the translation's README: academic use only) keeps
# anything fit on it out of the defaults (../shared/bench/README.md); ``--hold-out squad2-zh``
# still decides its questions.
FIT_ON = {
    "latin": ("scifact-train", "squad2-en", "xquad-en", "policies-en"),
    "cjk": ("cmrc-trial", "cmrc-trial-hard", "xquad-zh", "policies-zh"),
}
# sets whose questions a shipped reader (reader-cjk.pt, sentence-reader-cjk.pt) was fine-tuned on,
# folds ``READER_FOLDS``: a model with the readers' features is fit on their other folds only, so it
# weighs the readers as they read new questions. A reader trained on more sets (``--squad``) ships
# with them added here.
READER_TRAINED_ON = ("cmrc-trial", "cmrc-trial-hard", "policies-zh", "policies-en")
# sets asked in a user's own words, with near misses on the same topic: their folds READER_FOLDS
# fit the weights (folds 3-4 judge the fit), never the operating point. Asked in other words than
# their answer, no threshold refuses at most MAX_FALSE_REFUSALS of their answerable questions
# without answering most of their near misses (docs/BENCHMARKS.md, "Tried and not kept").
OWN_WORDS_SETS = ("policies-zh", "policies-en")
MAX_FALSE_REFUSALS = 0.08  # answerable questions refused on train, at most (goals: <= 0.10-0.12 on test)


def command(drops: Sequence[str] = ()) -> str:
    """The command that writes a model fit without the ``drops`` features (its provenance)."""
    return "python -m rag.bench.fit_answerability DUMP" + "".join(f" --drop {d}" for d in drops) + " --write"


def matrix(rows: list[Row], names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    x = np.array([[r.features[n] for n in names] for r in rows], dtype=np.float64)
    y = np.array([1 if r.answerable else 0 for r in rows])
    return x, y


def operating_point(
    p: np.ndarray, y: np.ndarray, max_false: float = MAX_FALSE_REFUSALS, sets: np.ndarray | None = None
) -> tuple[float, float, float]:
    """(threshold, unanswerable refused, answerable refused): most refusals within ``max_false``.
    With ``sets`` (each row's training set), ``max_false`` holds on every set apart, not only on
    their pool, where a large set the model finds easy would let it refuse a hard one's answerable
    questions freely; the answerable refused returned is then the worst set's."""
    best = (0.0, 0.0, 0.0)
    groups = [sets == s for s in np.unique(sets)] if sets is not None else [np.ones(len(y), dtype=bool)]
    for t in np.unique(np.round(p, 4)):
        false = max(float((p[g & (y == 1)] < t).mean()) for g in groups if (g & (y == 1)).any())
        if false <= max_false:
            right = float((p[y == 0] < t).mean())
            if right > best[1]:
                best = (float(t), right, false)
    return best


def cv_auc(
    x: np.ndarray, y: np.ndarray, groups: np.ndarray, weights: np.ndarray | None = None, folds: int = 5
) -> float:
    """AUC of out-of-fold probabilities (fit with ``weights``); a question's two conditions stay in one fold."""
    from sklearn.linear_model import LogisticRegression

    uniq = np.unique(groups)
    fold_of = {g: i % folds for i, g in enumerate(uniq)}
    f = np.array([fold_of[g] for g in groups])
    p = np.zeros(len(y))
    for k in range(folds):
        w = None if weights is None else weights[f != k]
        m = LogisticRegression(C=1.0, max_iter=5000).fit(x[f != k], y[f != k], sample_weight=w)
        p[f == k] = m.predict_proba(x[f == k])[:, 1]
    return auc(p, y)


def set_weights(sets: np.ndarray) -> np.ndarray:
    """Each row's weight in the fit: every training set weighs as much as the largest."""
    names, counts = np.unique(sets, return_counts=True)
    per = dict(zip(names, counts.max() / counts, strict=True))
    return np.array([per[s] for s in sets])


def fit_script(rows: list[Row], script: str, drops: Sequence[str] = ()) -> dict:
    from sklearn.linear_model import LogisticRegression

    names = tuple(n for n in FEATURES if all(n in r.features for r in rows))
    x, y = matrix(rows, names)
    row_sets = np.array([r.set for r in rows])
    weights = set_weights(row_sets)
    model = LogisticRegression(C=1.0, max_iter=5000).fit(x, y, sample_weight=weights)
    # the absent-term rule refuses whatever the probability: the operating point counts it
    vetoed = np.array([bool(r.vetoed(names)) for r in rows])
    p = np.where(vetoed, 0.0, model.predict_proba(x)[:, 1])
    as_written = ~np.isin(row_sets, OWN_WORDS_SETS)
    if not as_written.any():
        raise SystemExit(
            f"{script}: no set asked as written to choose the operating point on; add a dump of one of "
            f"{', '.join(s for s in FIT_ON[script] if s not in OWN_WORDS_SETS)}"
        )
    t, right, false = operating_point(p[as_written], y[as_written], sets=row_sets[as_written])
    bias = float(model.intercept_[0]) - math.log(t / (1 - t)) if 0 < t < 1 else float(model.intercept_[0])
    groups = np.array([f"{r.set}:{r.qid}" for r in rows])
    sets = sorted({r.set for r in rows})
    chosen_on = sorted(set(row_sets[as_written]))
    return {
        "features": list(names),
        "weights": [round(float(w), 6) for w in model.coef_[0]],
        "bias": round(bias, 6),
        "provenance": {
            "data": sets,
            "questions": len(set(groups)),
            "label": "1 = the question's own relevant passages searchable (as is); 0 = filtered out (removed), "
            "or a near miss no passage answers",
            "absent_term_rule": f"refuses {vetoed[y == 1].mean():.3f} of answerable, {vetoed[y == 0].mean():.3f} "
            "of unanswerable training questions on its own",
            "weighting": "each set weighs as much as the largest",
            "operating_point": f"train threshold {t:.4f} (shifted to 0.5), chosen on {', '.join(chosen_on)}: "
            f"unanswerable refused {right:.3f}, answerable refused {false:.3f} on the worst of {len(chosen_on)} "
            f"sets (at most {MAX_FALSE_REFUSALS} on each)",
            "train_auc": round(auc(p, y), 4),
            "cv5_auc": round(cv_auc(x, y, groups, weights), 4),
            "p_top_alone_auc": round(auc(x[:, names.index("p_top")], y), 4),
            "command": command(drops),
            "date": datetime.now(UTC).date().isoformat(),
            "script": script,
        },
    }


def reader_read(r: Row) -> bool:
    """Whether a shipped reader was fine-tuned on ``r``'s question: folds ``READER_FOLDS`` of a
    ``READER_TRAINED_ON`` set (of an everyday set, its first round's documents only: the sentence
    reader read those, models/MANIFEST.json)."""
    return r.set in READER_TRAINED_ON and r.fold_key in READER_FOLDS and squad.first_round(r.set, r.qid)


READER_FEATURES = ("reader", "reader_sentence")


def reads(r: Row) -> bool:
    """Whether ``r`` carries a reader's reading (either reader: ``--drop reader`` keeps the
    sentence reader's, and a fit on it must keep out what that reader was fine-tuned on too)."""
    return any(f in r.features for f in READER_FEATURES)


def fit_rows(rows: list[Row], also: str = "") -> dict[str, list[Row]]:
    """Each model's rows (``latin``, ``cjk``, or ``<script>/reader`` when the rows carry the
    readers' features, ``reads``): its script's rows from its ``FIT_ON`` sets (an ``OWN_WORDS_SETS`` set's
    folds ``READER_FOLDS`` only: the others judge the fit), and set ``also``, a set only reported
    on, such as a paraphrased one, when its questions are to be decided; with the reader, only
    the questions it was never fine-tuned on (``reader_read``)."""
    out = {}
    for script, sources in FIT_ON.items():
        part = [
            r
            for r in rows
            if r.script == script
            and r.features
            and (r.set == also or (r.set in sources and (r.set not in OWN_WORDS_SETS or r.fold_key in READER_FOLDS)))
        ]
        key = script
        if any(reads(r) for r in part):
            part = [r for r in part if reads(r) and not reader_read(r)]
            key = f"{script}/reader"
        if part:
            out[key] = part
    return out


def fit(rows: list[Row], drops: Sequence[str] = ()) -> dict[str, dict]:
    """One model per script (``fit_rows``) on training rows; ``drops``: the features left out of
    them (``--drop``), named in each model's provenance command."""
    bad = sorted({r.set for r in rows if r.set not in SETS or not SETS[r.set].train})
    if bad:
        raise SystemExit(
            f"refusing to fit on {bad}: not training sets (train sets: "
            f"{', '.join(n for n, s in SETS.items() if s.train)})"
        )
    out = {}
    for key, part in fit_rows(rows).items():
        if len(part) >= 50:
            out[key] = fit_script(part, key.split("/")[0], drops)
    return out


def rescored(rows: list[Row], threshold: float = 0.5) -> list[SetResult]:
    """The dump's decisions under the shipped weights, per set. Exact for dumps made with
    ``--fallback reject`` (no wider retry: the decision is the answerability verdict alone)."""
    out: dict[str, SetResult] = {}
    for r in rows:
        model = model_for(r.script, features=r.features)
        p = model.probability(r.features) if not model.is_rule and r.features else r.probability
        refused = p is None or p < threshold or bool(r.vetoed(model.features))
        out.setdefault(r.set, SetResult(r.set)).rows.append(replace(r, refused=refused, probability=p))
    return list(out.values())


def transfer(rows: list[Row], held: str) -> list[SetResult]:
    """Each model refit without set ``held``'s rows, then ``held``'s questions decided by it at
    its own operating point: how the decision carries to a distribution it was not chosen on.
    ``held`` may be a set no model is fit on (``cmrc-trial-para``): its questions are decided
    by the models fit on the rest."""
    from rag.retrieval.answerability.model import AnswerabilityModel

    models = {
        key: AnswerabilityModel(key, tuple(m["features"]), tuple(m["weights"]), m["bias"])
        for key, m in fit([r for r in rows if r.set != held]).items()
    }
    result = SetResult(f"{held} (decided by models fit without it)")
    for key, part in fit_rows([r for r in rows if r.set == held], also=held).items():
        model = models.get(key)
        if model is None:
            continue
        for r in part:
            p = model.probability(r.features)
            refused = p < 0.5 or bool(r.vetoed(model.features))
            result.rows.append(replace(r, refused=refused, probability=p))
    return [result]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rag.bench.fit_answerability", description=__doc__.split("\n")[0])
    ap.add_argument("dumps", nargs="+", help="JSONL files written by `bench refusal --dump` on training sets")
    ap.add_argument("--write", action="store_true", help=f"write {WEIGHTS_FILE}")
    ap.add_argument(
        "--rescore", action="store_true", help="print the dumps' refusal lines under the shipped weights (any set)"
    )
    ap.add_argument(
        "--drop",
        action="append",
        default=[],
        help="fit without this feature (repeat): e.g. the readers' features for a script they do not separate",
    )
    ap.add_argument(
        "--hold-out",
        action="append",
        default=[],
        help="refit without this training set and decide its questions at that fit's operating point "
        "(repeat); a set no model is fit on (cmrc-trial-para) is decided by the models fit on the rest",
    )
    args = ap.parse_args(argv)
    rows = [r for d in args.dumps for r in load_dump(Path(d))]
    unknown = sorted(set(args.drop) - set(FEATURES))
    if unknown:
        raise SystemExit(f"--drop {', '.join(unknown)}: not features (features: {', '.join(FEATURES)})")
    if args.drop:
        rows = [replace(r, features={k: v for k, v in r.features.items() if k not in args.drop}) for r in rows]
    if args.hold_out:
        for held in args.hold_out:
            for result in transfer(rows, held):
                print_result(result)
        return 0
    if args.rescore:
        for result in rescored(rows):
            print_result(result)
        return 0
    models = fit(rows, args.drop)
    for script, m in models.items():
        prov = m["provenance"]
        print(f"{script}: {prov['questions']} questions from {prov['data']}")
        print(f"  weights {dict(zip(m['features'], m['weights'], strict=True))} bias {m['bias']}")
        print(f"  AUC train {prov['train_auc']} · 5-fold CV {prov['cv5_auc']} · p_top alone {prov['p_top_alone_auc']}")
        print(f"  {prov['operating_point']}")
        print(f"  absent-term rule: {prov['absent_term_rule']}")
    if args.write:  # a model the dumps don't refit stays as shipped
        kept = json.loads(WEIGHTS_FILE.read_text(encoding="utf-8"))["models"] if WEIGHTS_FILE.exists() else {}
        body = {"models": kept | models}
        WEIGHTS_FILE.write_text(json.dumps(body, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        load_models.cache_clear()
        print(f"wrote {WEIGHTS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
