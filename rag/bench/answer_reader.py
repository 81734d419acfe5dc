"""An answer reader: a small cross-encoder that reads a question and a passage together and says
whether the passage *answers* it, not only whether it is about the same thing. An experiment for
the answerability stage, not part of the product: see ``rag.bench.fit_answer_reader``.

It is all-MiniLM-L6-v2 (the bundled embedder's weights) with its top ``TRAIN_LAYERS`` layers and a
linear head fine-tuned on SciFact train. Only those layers are saved; the rest is read from the
bundled package at load time. The model's vocabulary is English: CJK text is mostly unknown
tokens to it.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rag.config import BUNDLED_EMBEDDER

READER_FILE = Path("reader-latin.pt")  # where ``fit_answer_reader train --write`` saves (working directory)
TRAIN_LAYERS = 2  # top transformer layers fine-tuned (and shipped); the rest stay frozen
MAX_TOKENS = 256
BATCH = 8
READER_FOLDS = frozenset({0, 1, 2})  # of 5: the claims the reader is trained on; it is judged on the others


def fold_of(qid: str) -> int:
    """A training question's fold (0-4), stable across runs and machines."""
    return zlib.crc32(qid.encode()) % 5


def reader_base() -> str:
    """Directory of the bundled MiniLM weights the reader is built on."""
    from rag.embedder import bundled_path

    return str(bundled_path(BUNDLED_EMBEDDER))


class AnswerReader:
    """MiniLM encoder over ``[CLS] question [SEP] passage [SEP]``, mean-pooled, one logit."""

    def __init__(self, tokenizer: Any, model: Any, provenance: dict[str, Any] | None = None) -> None:
        self.tokenizer = tokenizer
        self.model = model
        self.provenance = provenance or {}
        self._lock = threading.Lock()  # the fast tokenizer is not thread-safe

    @classmethod
    def from_base(cls, base: str, layers: int = TRAIN_LAYERS) -> AnswerReader:
        """The untrained reader: the base encoder with a fresh head, all but the top ``layers``
        layers (and the embeddings) frozen."""
        import torch
        from transformers import AutoModel, AutoTokenizer

        tok = AutoTokenizer.from_pretrained(base)
        enc = AutoModel.from_pretrained(base)
        model = _ReaderNet(enc, torch.nn.Linear(enc.config.hidden_size, 1))
        frozen = max(0, len(enc.encoder.layer) - layers)
        for name, p in model.named_parameters():
            p.requires_grad = name.startswith("head.") or any(
                name.startswith(f"encoder.encoder.layer.{i}.") for i in range(frozen, len(enc.encoder.layer))
            )
        return cls(tok, model)

    @classmethod
    def load(cls, path: Path = READER_FILE, base: str | None = None) -> AnswerReader:
        import torch

        saved = torch.load(path, map_location="cpu", weights_only=True)
        reader = cls.from_base(
            base or reader_base(), int(saved.get("provenance", {}).get("trained_layers", TRAIN_LAYERS))
        )
        state = {k: v.float() for k, v in saved["state"].items()}
        missing = set(state) - set(reader.model.state_dict())
        if missing:
            raise RuntimeError(f"{path}: weights for unknown parameters {sorted(missing)[:3]}")
        reader.model.load_state_dict(state, strict=False)
        reader.model.eval()
        reader.provenance = dict(saved.get("provenance", {}))
        return reader

    def save(self, path: Path, provenance: dict[str, Any]) -> None:
        """Only the trained parameters, in half precision (the frozen rest comes from the package)."""
        import torch

        trained = {n for n, p in self.model.named_parameters() if p.requires_grad}
        state = {k: v.detach().half() for k, v in self.model.state_dict().items() if k in trained}
        torch.save({"state": state, "provenance": provenance}, path)

    @property
    def label(self) -> str:
        trained = self.provenance.get("data", "untrained")
        return f"all-MiniLM-L6-v2 cross-encoder fine-tuned on {trained} ({READER_FILE.name})"

    def logits(self, questions: Sequence[str], passages: Sequence[str]):
        with self._lock:
            batch = self.tokenizer(
                list(questions),
                list(passages),
                truncation="only_second",
                max_length=MAX_TOKENS,
                padding=True,
                return_tensors="pt",
            )
        return self.model(batch["input_ids"], batch["attention_mask"], batch.get("token_type_ids"))

    def scores(self, question: str, passages: Sequence[str]) -> list[float]:
        """P(the passage answers the question) for each passage."""
        import torch

        out: list[float] = []
        with torch.inference_mode():
            for i in range(0, len(passages), BATCH):
                part = passages[i : i + BATCH]
                out += torch.sigmoid(self.logits([question] * len(part), part)).tolist()
        return out

    def best(self, question: str, passages: Sequence[str]) -> float:
        return max(self.scores(question, passages), default=0.0)


def _net():
    import torch

    class ReaderNet(torch.nn.Module):
        def __init__(self, encoder, head) -> None:
            super().__init__()
            self.encoder = encoder
            self.head = head

        def forward(self, input_ids, attention_mask, token_type_ids=None):
            hidden = self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
            return self.head(pooled).squeeze(-1)

    return ReaderNet


def _ReaderNet(encoder, head):  # noqa: N802 - builds the torch module without importing torch at module load
    return _net()(encoder, head)
