"""The recipe both Chinese readers are fine-tuned with (``fit_cjk_reader``,
``fit_cjk_sentence_reader``), and how the weights they write name what built them: the data, the
folds, the losses and the command that rebuilds them, every step of it."""

from __future__ import annotations

import random
import shlex
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from rag.bench.answer_reader import READER_FOLDS
from rag.eval.datasets import dataset_name
from rag.readers.loader import MODELS_DIR

BATCH = 16


def fine_tune(encoder, top, head_params: list, n: int, batch_loss, epochs: int, lr: float, seed: int, name: str):
    """The loop both readers are fit with: ``epochs`` shuffled passes over ``n`` examples in
    batches of ``BATCH``; AdamW on the ``top`` layers at ``lr`` and the heads at 10x, with a
    linear decay. ``batch_loss(indices)`` is a batch's mean loss (``name`` in the log). Returns
    each epoch's mean loss."""
    import torch

    top.requires_grad_(True)
    opt = torch.optim.AdamW(
        [{"params": top.parameters(), "lr": lr}, {"params": head_params, "lr": 10 * lr}], weight_decay=0.01
    )
    steps = epochs * ((n + BATCH - 1) // BATCH)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1 - s / steps))
    rng, losses = random.Random(seed), []
    encoder.train()
    for _ in range(epochs):
        order = list(range(n))
        rng.shuffle(order)
        total = 0.0
        for s in range(0, n, BATCH):
            idx = order[s : s + BATCH]
            loss = batch_loss(idx)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss.detach()) * len(idx)
        losses.append(total / n)
        print(f"  epoch {len(losses)}: mean {name} {losses[-1]:.4f}", flush=True)
    encoder.eval()
    top.requires_grad_(False)
    return losses


def add_own_words_option(ap) -> None:
    """``--own-words [ROUNDS]``: also fit on the fit folds' questions asked in a user's own words,
    one copy per round of rewrites (``rag.bench.own_words.ROUNDS``; the first round when bare)."""
    ap.add_argument(
        "--own-words",
        type=int,
        nargs="?",
        const=1,
        default=0,
        metavar="ROUNDS",
        help="also fit on the fit folds' questions in a user's own words, ROUNDS rounds of rewrites (1 if bare)",
    )


def rebuild_command(command: str, argv: Sequence[str], shipped: Path, init: Path | None) -> str:
    """The command that rebuilds the weights a run of ``command`` with ``argv`` writes: its own
    arguments less ``--out`` (the rebuild writes the ``shipped`` file); when it started from saved
    weights (``--init``), after the command that rebuilt those, starting from what that one wrote,
    so a reader fine-tuned in steps names every step."""
    import torch

    own, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--out" or a == "--init":
            skip = True
        elif not a.startswith(("--out=", "--init=")):
            own.append(shlex.quote(a))
    if init is None:
        return " ".join([command, *own])
    prior = torch.load(init, map_location="cpu", weights_only=True)["provenance"]["command"]
    start = shipped.relative_to(MODELS_DIR.parent)  # a shipped file: models/NAME
    return f"{prior} && {' '.join([command, *own, '--init', str(start)])}"


def write_fine_tune(path: Path, args, top, heads: dict, losses: list[float], command: str, **extra) -> None:
    """Write fine-tuned ``top`` layers and ``heads`` (name -> module; float16) to ``path`` with
    their provenance: ``args``' data, epochs, learning rate, other paragraphs and paraphrases,
    the training folds, the losses, ``command``, the date and ``extra``."""
    import torch

    torch.save(
        {
            "train_layers": args.layers,
            "layers": {k: v.half() for k, v in top.state_dict().items()},
            **{name: {k: v.half() for k, v in h.state_dict().items()} for name, h in heads.items()},
            "provenance": {
                "data": dataset_name(args.data),  # the benchmark name, never a path
                "folds": sorted(READER_FOLDS),
                "epochs": args.epochs,
                "lr": args.lr,
                "others": args.others,
                "paraphrase": args.paraphrase,
                **extra,
                "losses": [round(x, 4) for x in losses],
                "command": command,
                "date": datetime.now(UTC).date().isoformat(),
            },
        },
        path,
    )
    print(f"wrote {path}; record its sha256: python -m rag models --update")
