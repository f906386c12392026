"""Packed DiSAN inference on CPU: a batch's sentences as one (T, d) matrix of tokens, no padding.

The padded forward (``DiSAN.forward``) runs on (B, n, d) with n the batch's longest sentence; on a
batch of mixed lengths most of that work is padding, and short batches pay the per-operation cost
of every layer once per bucket.  Here every token-wise layer (embedding, W_h, W1/W2, the fusion
gate, the source2token MLP, the head's input) runs once on the T real tokens of the whole batch,
and only the two operations that look across tokens know where sentences start:

* token2token attention: the C kernel with ``offsets`` (``model/kernels/csrc/disan.c``): row r
  attends to the rows of its own sentence before it (fw) or after it (bw);
* source2token pooling: a softmax over each sentence's rows (a segment softmax, per feature).

The weights are the model's own modules; this is a second way to run ``DiSAN``, forward only,
equal to ``DiSAN.forward`` on the padded batch (tests/model/embedding/test_packed.py).

oneDNN builds (and keeps) a primitive per matrix shape, so linear layers over every row count a
server's batches ever had would leave one behind for each: the rows go through the linear layers
(``linear``) in blocks of ``BLOCK_ROWS``, the last one padded up to one of a few sizes (``rows``).

    ids, offsets = pack(seqs)                  # (T,), (B + 1,)
    vecs = packed_forward(model, ids, offsets)  # (B, dim)
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import cast

import torch
import torch.nn.functional as F
from torch import Tensor

from rendition.model.embedding.disan import (
    DirectionalSelfAttention,
    DiSAN,
    Source2Token,
    UpperBlock,
    cpu_kernel,
    token_factors,
)
from rendition.model.kernels import native


def available(model: DiSAN) -> bool:
    """Whether the packed path can run this model here: CPU weights and the DiSAN C kernel."""
    return next(model.parameters()).device.type == "cpu" and cpu_kernel() is not None


def pack(seqs: Sequence[Sequence[int]]) -> tuple[Tensor, Tensor]:
    """Token ids of B sentences -> ids (T,) int64 and offsets (B + 1,) int64: sentence b is
    ids[offsets[b]:offsets[b + 1]]."""
    lengths = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    offsets = torch.zeros(len(seqs) + 1, dtype=torch.long)
    torch.cumsum(lengths, 0, out=offsets[1:])
    ids = torch.tensor([t for s in seqs for t in s], dtype=torch.long)
    return ids, offsets


def t2t_packed(h: Tensor, q: Tensor, k: Tensor, offsets: Tensor, direction: str, c: float = 5.0) -> Tensor:
    """token2token attention over packed rows: h, q = W1 h, k = W2 h + b (T, d); offsets (B + 1,).
    Returns s (T, d) in h's dtype (computed in float32)."""
    so = cpu_kernel()
    if so is None:
        raise RuntimeError("the packed path needs the DiSAN C kernel")
    if direction not in ("fw", "bw"):
        raise ValueError(f"direction must be 'fw' or 'bw', not {direction!r}")
    T, d = h.shape
    off = offsets.to(device="cpu", dtype=torch.long).contiguous()
    if off.numel() < 1 or int(off[0]) != 0 or int(off[-1]) != T or bool((off[1:] < off[:-1]).any()):
        raise ValueError(f"offsets must rise from 0 to the number of rows ({T})")
    a, b = (x.contiguous() for x in token_factors(q, k, c))  # (T, d) each, float32
    hv = h.float().contiguous()
    out = torch.empty_like(hv)
    if T * d:
        args = native.DisanArgs(
            a=a.data_ptr(), b=b.data_ptr(), h=hv.data_ptr(), offsets=off.data_ptr(), s=out.data_ptr(),
            batch=off.numel() - 1, len=T, dim=d, c=c, direction=0 if direction == "fw" else 1,
            threads=torch.get_num_threads(),
        )  # fmt: skip
        so.rk_disan_t2t(ctypes.byref(args))
    return out.to(h.dtype)


BLOCK_ROWS = 1024


def rows(n: int) -> int:
    """The rows a linear layer runs on for ``n`` (at most ``BLOCK_ROWS``): a multiple of 16 up to
    256, of 64 above (28 sizes)."""
    step = 16 if n <= 256 else 64
    return -(-n // step) * step


def linear(m: torch.nn.Linear, x: Tensor) -> Tensor:
    """``m(x)`` for x (T, in), in blocks of ``BLOCK_ROWS`` rows, the last one padded to ``rows``."""
    T = x.shape[0]
    if T == rows(T) and T <= BLOCK_ROWS:
        return m(x)
    out = x.new_empty(T, m.out_features)
    for r in range(0, T, BLOCK_ROWS):
        n = min(BLOCK_ROWS, T - r)
        if n == rows(n):
            out[r : r + n] = m(x[r : r + n])
        else:
            block = x.new_zeros(rows(n), x.shape[1])
            block[:n] = x[r : r + n]
            out[r : r + n] = m(block)[:n]
    return out


def _disa(m: DirectionalSelfAttention, h: Tensor, offsets: Tensor) -> Tensor:
    """One direction's attention and fusion gate on packed rows (T, d) -> (T, d)."""
    s = t2t_packed(h, linear(m.w1, h), linear(m.w2, h) + m.b, offsets, m.direction, m.c)
    gate = torch.sigmoid(linear(m.wf1, s) + linear(m.wf2, h))
    return gate * h + (1 - gate) * s


def _s2t(m: Source2Token, u: Tensor, seg: Tensor, B: int) -> Tensor:
    """source2token pooling per sentence: u (T, D), seg (T,) sentence of each row -> (B, D); a
    sentence without tokens pools to 0, as in the padded form."""
    logits = linear(m.w2, F.elu(linear(m.w1, u))).float()  # (T, D)
    D = logits.shape[1]
    idx = seg.unsqueeze(1).expand(-1, D)
    top = logits.new_full((B, D), float("-inf")).scatter_reduce(0, idx, logits, "amax", include_self=True)
    e = torch.exp(logits - top.index_select(0, seg))  # (T, D), at most 1
    den = logits.new_zeros(B, D).index_add_(0, seg, e)
    num = logits.new_zeros(B, D).index_add_(0, seg, e * u.float())
    return torch.where(den > 0, num / den.clamp_min(1e-30), torch.zeros_like(num)).to(u.dtype)


def packed_forward(model: DiSAN, ids: Tensor, offsets: Tensor) -> Tensor:
    """ids (T,) token ids of B sentences packed end to end, offsets (B + 1,) -> (B, dim) sentence
    vectors, as ``model(padded ids)`` gives them.  Inference only (no dropout)."""
    if model.training:
        raise RuntimeError("packed_forward is for inference: call model.eval() first")
    B = offsets.numel() - 1
    seg = torch.repeat_interleave(torch.arange(B), offsets[1:] - offsets[:-1])  # (T,)
    h = F.elu(linear(model.fc_h, model.embed(ids)))  # (T, d)
    u = torch.cat([_disa(model.fw, h, offsets), _disa(model.bw, h, offsets)], dim=-1)  # (T, 2d)
    for block in cast("Sequence[UpperBlock]", model.upper):
        h_fw, h_bw = F.elu(linear(block.fc, u)).chunk(2, dim=-1)
        u = torch.cat(
            [_disa(block.fw, h_fw.contiguous(), offsets), _disa(block.bw, h_bw.contiguous(), offsets)], dim=-1
        )
    z = _s2t(model.s2t, u, seg, B)  # (B, 2d)
    return linear(model.head, z) if model.head is not None else z


__all__ = ["available", "linear", "pack", "packed_forward", "rows", "t2t_packed"]
