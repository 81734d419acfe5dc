"""Fine-tune the Chinese sentence reader (``rag.readers.sentence_reader``) on CMRC 2018 trial.

    python -m rag.bench.fit_cjk_sentence_reader [--data ../shared/bench/cmrc2018-trial/beir] [--write]

Examples come from a *training* set only (CMRC 2018 trial, its BEIR view). Per question, the model
reads windows (``sentence_reader.windows``) of the answerer's sentences (``split_sentences``) of:
- its own paragraph: the target is the sentences that overlap an answer string, or "none" in a
  window without one;
- the same paragraph with its answer sentences cut out (``hard_negatives.gut``): "none";
- the ``OTHERS`` other paragraphs sharing most characters with the question: "none" unless a
  sentence holds the answer string.
The paragraph's title is its heading for half of the questions (a stable hash) and blanked for the
other half: RGB-style news passages have none, and without a title the sentence that names the
topic is no longer the only one holding the question's words. Only questions of folds
``READER_FOLDS`` train; the script prints, on the held-out folds, how often the best sentence of
the own paragraph holds the answer, beside the sentence with the most of the question's
characters (what ``reader.focus`` and, roughly, term coverage choose), with and without titles,
and the AUC of the best sentence's probability, own paragraph vs gutted copy.

``--own-words [ROUNDS]`` adds the fit folds' examples asked in a user's own words, once per round
of rewrites (``rag.bench.own_words``), and reports the held-out folds' rewrites too; ``--init``
starts from saved weights (the shipped ones, say) instead of e5-small's. ``--squad`` adds
SQuAD-shaped sets (``rag.bench.squad``, folds by article): an answerable question's own paragraph
and its gutted copy as above, an unanswerable one's own paragraph with "none" as its target (it
was written to look answerable from there); their held-out articles get a report of their own.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from rag.answer.sentences import split_sentences
from rag.bench import squad
from rag.bench.answer_reader import READER_FOLDS, fold_of

# the same recipe as the answer reader, and its data
from rag.bench.fine_tune import add_own_words_option, fine_tune, rebuild_command, write_fine_tune
from rag.bench.hard_negatives import gut
from rag.bench.reader_pairs import cmrc_beir, own_worded, paraphrased, squad_split, train_questions
from rag.eval.metrics import auc
from rag.readers.reader import grams, load_fine_tuned, padded, untrained
from rag.readers.sentence_reader import (
    MAX_QUESTION_TOKENS,
    MAX_TOKENS,
    SENTENCE_READER_FILE,
    TRAIN_LAYERS,
    Encoded,
    encode,
    sentence_logits,
    untrained_heads,
    windows,
)

DEFAULT_DATA = Path("../shared/bench/cmrc2018-trial/beir")
COMMAND = "python -m rag.bench.fit_cjk_sentence_reader"
OTHERS = 1
EPOCHS = 2
PARAPHRASE = 0  # paraphrased copies per example (1 doubles the ~30-minute fit; not measured)


@dataclass(frozen=True)
class Example:
    qid: str
    question: str
    sentences: tuple[str, ...]  # one window's sentences
    answer: tuple[int, ...]  # indices of the sentences holding the answer (empty: none does)
    heading: str
    role: str  # own / gutted / other


def titled(qid: str) -> bool:
    """Half of the questions keep their paragraph's title as the heading (a stable hash)."""
    return hashlib.sha1(qid.encode()).digest()[0] % 2 == 0


def _answer_sentences(text: str, answers: list[str]) -> tuple[list[str], set[int]]:
    """The answerer's sentences of ``text`` and the indices of those overlapping an answer occurrence."""
    spans = []
    for a in answers:
        at = text.find(a)
        while at >= 0:
            spans.append((at, at + len(a)))
            at = text.find(a, at + 1)
    segs = split_sentences(text)
    hit = {i for i, s in enumerate(segs) if any(a < s.end and s.start < b for a, b in spans)}
    return [s.text for s in segs], hit


def _windows_of(tok, qid, question, text, answers, heading, role) -> list[Example]:
    sents, hit = _answer_sentences(text, answers)
    out = []
    for first, enc in windows(tok, question, sents, heading):
        k = len(enc.spans)
        inside = tuple(i - first for i in sorted(hit) if first <= i < first + k)
        out.append(Example(qid, question, tuple(sents[first : first + k]), inside, heading, role))
    return out


def examples(tok, data: Path, others: int = OTHERS) -> list[Example]:
    out: list[Example] = []
    for t in train_questions(data, others):
        heading = t.title if titled(t.qid) else ""
        out += _windows_of(tok, t.qid, t.question, t.text, t.answers, heading, "own")
        out += [replace(e, answer=()) for e in _windows_of(tok, t.qid, t.question, t.gutted, [], heading, "gutted")]
        for doc in t.near:
            h = doc.title if titled(t.qid) else ""
            out += _windows_of(tok, t.qid, t.question, doc.text, t.answers, h, "other")[:1]
    return out


def squad_examples(tok, questions: list[squad.SquadQuestion]) -> list[Example]:
    """Examples of SQuAD-shaped questions (ids ``<qid>@<set>``): an answerable one's own paragraph
    and its gutted copy, an unanswerable one's own paragraph with no answer (role ``impossible``)."""
    out: list[Example] = []
    for q in questions:
        qid = f"{q.qid}@{q.source}"
        heading = q.title if titled(qid) else ""
        if q.impossible:
            out += [
                replace(e, role="impossible") for e in _windows_of(tok, qid, q.question, q.context, [], heading, "own")
            ]
            continue
        out += _windows_of(tok, qid, q.question, q.context, list(q.answers), heading, "own")
        gutted = gut(q.context, list(q.answers))
        if gutted is not None:
            out += _windows_of(tok, qid, q.question, gutted, [], heading, "gutted")
    return out


def _encoded(tok, e: Example) -> Encoded:
    """The example's window as the model reads it: every one of its sentences, with room for a
    paraphrased question up to ``MAX_QUESTION_TOKENS`` longer than the one the window was cut for."""
    enc = encode(tok, e.question, e.sentences, e.heading, MAX_TOKENS + MAX_QUESTION_TOKENS)
    assert len(enc.spans) == len(e.sentences), e.qid  # the targets index these sentences
    return enc


def precompute(encoder, tok, items: list[Example], cut: int, batch: int = 16) -> list:
    """Per example (encoded, hidden states after the lower ``cut`` layers)."""
    import torch

    encs = [_encoded(tok, e) for e in items]
    order = sorted(range(len(items)), key=lambda i: len(encs[i].ids))
    out: list = [None] * len(items)
    with torch.inference_mode():
        for s in range(0, len(order), batch):
            idx = order[s : s + batch]
            h = encoder(*padded([encs[i].ids for i in idx]), stop=cut)
            for j, i in enumerate(idx):
                out[i] = (encs[i], h[j, : len(encs[i].ids)].clone())
    return out


def _top(encoder, cached: list, cut: int):
    import torch

    n = max(len(enc.ids) for enc, _ in cached)
    hidden = torch.zeros(len(cached), n, cached[0][1].shape[-1])
    for j, (enc, h) in enumerate(cached):
        hidden[j, : len(enc.ids)] = h
    return encoder(*padded([enc.ids for enc, _ in cached]), start=cut, x=hidden)


def _target(e: Example):
    import torch

    t = torch.zeros(len(e.sentences) + 1)
    if e.answer:
        t[[1 + i for i in e.answer]] = 1.0 / len(e.answer)
    else:
        t[0] = 1.0
    return t


def train(encoder, heads, cached: list, items: list[Example], epochs: int, layers: int, lr: float, seed: int = 13):
    import torch

    head, null_head = heads
    cut = len(encoder.layers) - layers
    targets = [_target(e) for e in items]

    def batch_loss(idx: list[int]):
        hidden = _top(encoder, [cached[i] for i in idx], cut)
        loss = 0.0
        for j, i in enumerate(idx):
            null, logits = sentence_logits(hidden[j], cached[i][0], head, null_head)
            loss = loss - (targets[i] * torch.log_softmax(torch.cat([null[None], logits]), 0)).sum()
        return loss / len(idx)

    params = [*head.parameters(), *null_head.parameters()]
    return fine_tune(encoder, encoder.layers[cut:], params, len(cached), batch_loss, epochs, lr, seed, "cross-entropy")


def sentence_probs(encoder, heads, cached: list, cut: int, batch: int = 32) -> list[np.ndarray]:
    """P(sentence holds the answer) per example's sentences (softmax with "none")."""
    import torch

    out = []
    with torch.inference_mode():
        for s in range(0, len(cached), batch):
            part = cached[s : s + batch]
            hidden = _top(encoder, part, cut)
            for j, (enc, _) in enumerate(part):
                null, logits = sentence_logits(hidden[j], enc, *heads)
                out.append(torch.softmax(torch.cat([null[None], logits]), 0)[1:].numpy())
    return out


def overlap_scores(e: Example) -> np.ndarray:
    """The baseline: each sentence's share of the question's characters and pairs (heading's left out)."""
    q = grams(e.question) - grams(e.heading)
    return np.array([len(q & grams(s)) / max(len(q), 1) for s in e.sentences])


def report(items: list[Example], probs: list[np.ndarray], asked: str = "") -> dict[str, float]:
    """Held-out: the best sentence of the own paragraph (over its windows) holds the answer,
    model vs character overlap, with and without titles; and own vs gutted AUC of the best
    sentence's probability."""
    by_q: dict[str, dict[str, list[tuple[Example, np.ndarray]]]] = {}
    for e, p in zip(items, probs, strict=True):
        by_q.setdefault(e.qid, {}).setdefault(e.role, []).append((e, p))
    hits = {"reader": {True: [], False: []}, "overlap": {True: [], False: []}}
    own_best, gut_best = [], []
    for roles in by_q.values():
        own = roles.get("own", [])
        if not any(e.answer for e, _ in own):
            continue
        t = titled(own[0][0].qid)
        for name, score in (("reader", lambda e, p: p), ("overlap", lambda e, p: overlap_scores(e))):
            best = max(((float(s), e, i) for e, p in own for i, s in enumerate(score(e, p))), key=lambda x: x[0])
            hits[name][t].append(best[2] in best[1].answer)
        own_best.append(max(float(p.max()) for _, p in own))
        gut_best.append(max((float(p.max()) for _, p in roles.get("gutted", [])), default=0.0))
    out = {}
    for name in ("reader", "overlap"):
        for t, label in ((True, "titled"), (False, "untitled")):
            out[f"{name} {label}"] = float(np.mean(hits[name][t]))
    y = np.array([1] * len(own_best) + [0] * len(gut_best))
    out["own vs gutted AUC"] = auc(np.array(own_best + gut_best), y)
    n = {t: len(hits["reader"][t]) for t in (True, False)}
    print(
        f"held-out{asked} best sentence holds the answer: reader {out['reader titled']:.3f} titled ({n[True]}) · "
        f"{out['reader untitled']:.3f} untitled ({n[False]}); character overlap {out['overlap titled']:.3f} · "
        f"{out['overlap untitled']:.3f}"
    )
    print(
        f"held-out{asked} own paragraph vs gutted copy, best sentence's probability: AUC {out['own vs gutted AUC']:.3f}"
    )
    return out


def squad_report(items: list[Example], probs: list[np.ndarray]) -> None:
    """Per held-out SQuAD-shaped set: how often the best sentence of an answerable question's own
    paragraph holds the answer, and the AUC of the best sentence's probability, answerable
    questions' own paragraph against unanswerable ones' (the same paragraphs, no answer)."""
    best: dict[str, dict[str, float]] = {}
    hit: dict[str, bool] = {}
    for e, p in zip(items, probs, strict=True):
        if e.role not in ("own", "impossible") or not len(p):
            continue
        i = int(p.argmax())
        if float(p[i]) > best.get(e.qid, {}).get(e.role, -1.0):
            best.setdefault(e.qid, {})[e.role] = float(p[i])
            hit[e.qid] = i in e.answer
    for source in sorted({q.split("@", 1)[1] for q in best}):
        qs = [q for q in best if q.endswith(f"@{source}")]
        own = [best[q]["own"] for q in qs if "own" in best[q]]
        none = [best[q]["impossible"] for q in qs if "impossible" in best[q]]
        y = np.array([1] * len(own) + [0] * len(none))
        holds = np.mean([hit[q] for q in qs if "own" in best[q]]) if own else float("nan")
        print(
            f"held-out {source} ({len(qs)} questions): best sentence holds the answer {holds:.3f} · "
            f"answerable vs unanswerable, best sentence's probability: AUC {auc(np.array(own + none), y):.3f}"
        )


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m rag.bench.fit_cjk_sentence_reader", description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--epochs", type=int, default=EPOCHS)
    ap.add_argument("--others", type=int, default=OTHERS, help="other paragraphs' windows per question")
    ap.add_argument("--lr", type=float, default=1e-4, help="learning rate of the fine-tuned layers (heads: 10x)")
    ap.add_argument("--layers", type=int, default=TRAIN_LAYERS, help="top layers fine-tuned (and written)")
    ap.add_argument("--paraphrase", type=int, default=PARAPHRASE, help="paraphrased copies of each training example")
    add_own_words_option(ap)
    ap.add_argument("--init", type=Path, help="start from these saved weights (e.g. models/sentence-reader-cjk.pt)")
    ap.add_argument("--limit", type=int, default=0, help="first N training examples only (a smoke run)")
    ap.add_argument("--evaluate", type=Path, help="judge these saved weights on the held-out folds (no training)")
    ap.add_argument(
        "--squad",
        default="",
        help=f"also fit on these SQuAD-shaped sets (comma-separated, of {', '.join(squad.SOURCES)}; articles by fold)",
    )
    ap.add_argument("--squad-questions", type=int, default=0, help="fit questions per SQuAD-shaped set (0: all)")
    ap.add_argument(
        "--first-round",
        action="store_true",
        help="of the everyday sets, the first round's documents only (those the shipped weights read)",
    )
    ap.add_argument("--bench-data", type=Path, default=Path("../shared/bench"), help="the benchmark data folder")
    ap.add_argument("--write", action="store_true", help=f"write {SENTENCE_READER_FILE.name}")
    return ap


def main(argv: list[str] | None = None) -> int:
    import torch

    args = _parser().parse_args(argv)
    command = rebuild_command(COMMAND, sys.argv[1:] if argv is None else argv, SENTENCE_READER_FILE, args.init)
    torch.manual_seed(13)
    t0 = time.perf_counter()
    tok, encoder, _ = untrained()
    heads = untrained_heads(encoder.word.weight.shape[1])
    items = examples(tok, cmrc_beir(args.data), args.others)
    fit = [e for e in items if fold_of(e.qid) in READER_FOLDS][: args.limit or None]
    fit += [e for k in range(args.paraphrase) for e in paraphrased(fit, seed=13 + k)]
    if args.own_words:  # the fit folds' examples, whatever --limit kept, asked in each round's words
        fit += own_worded([e for e in items if fold_of(e.qid) in READER_FOLDS], rounds=args.own_words)
    held = [e for e in items if fold_of(e.qid) not in READER_FOLDS]
    held_own = own_worded(held)
    sources = [s for s in args.squad.split(",") if s]
    s_fit, s_held = (
        squad_split(sources, args.bench_data, args.squad_questions, first_round=args.first_round)
        if sources
        else ([], [])
    )
    s_fit, s_held = squad_examples(tok, s_fit), squad_examples(tok, s_held)
    fit += s_fit
    print(
        f"{len(items)} windows from {len({e.qid for e in items})} questions; fit on {len(fit)} ({len(s_fit)} from "
        f"SQuAD-shaped sets), held out {len(held)} (and {len(held_own)} asked in a user's own words, "
        f"{len(s_held)} SQuAD-shaped)"
    )
    cut = len(encoder.layers) - args.layers
    cached_fit = [] if args.evaluate else precompute(encoder, tok, fit, cut)
    cached_held, cached_own = precompute(encoder, tok, held, cut), precompute(encoder, tok, held_own, cut)
    cached_squad = precompute(encoder, tok, s_held, cut) if s_held else []
    print(f"lower {cut} layers computed in {time.perf_counter() - t0:.0f} s", flush=True)
    if args.evaluate or args.init:
        load_fine_tuned(encoder, args.evaluate or args.init, head=heads[0], null_head=heads[1])
    losses = [] if args.evaluate else train(encoder, heads, cached_fit, fit, args.epochs, args.layers, args.lr)
    held_out = report(held, sentence_probs(encoder, heads, cached_held, cut))
    held_out |= {
        f"own words, {k}": v
        for k, v in report(held_own, sentence_probs(encoder, heads, cached_own, cut), " (own words)").items()
    }
    if s_held:
        squad_report(s_held, sentence_probs(encoder, heads, cached_squad, cut))
    print(f"took {time.perf_counter() - t0:.0f} s")
    if args.write and not args.evaluate:
        head, null_head = heads
        held = {k: round(v, 4) for k, v in held_out.items()}
        write_fine_tune(
            SENTENCE_READER_FILE,
            args,
            encoder.layers[cut:],
            {"head": head, "null_head": null_head},
            losses,
            command,
            examples=len(fit),
            held_out=held,
            own_words=args.own_words,
            squad=sources,
            init=args.init.name if args.init else "",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
