"""DiSAN: Directional Self-Attention Network as a sentence encoder.

Shen, Zhou, Long, Jiang, Pan & Zhang (2018), "DiSAN: Directional Self-Attention Network for
RNN/CNN-Free Language Understanding":

    h     = elu(W_h x + b_h)                                        token features, (B, n, d)
    f_ij  = c * tanh((W1 h_i + W2 h_j + b) / c) + M_ij              one score per feature, c = 5
    P_ij  = softmax_j(f_ij)  (separately for every feature)
    s_i   = sum_j P_ij * h_j                                        multi-dimensional token2token
    F     = sigmoid(W_f1 s + W_f2 h + b_f),  u = F * h + (1 - F) * s fusion gate
    u     = [u_fw ; u_bw]                                            (B, n, 2d)
    (blocks > 1: each further layer reads the 2d features below, h = elu(W_h u + b_h) with one W_h per
    direction, and repeats the attention and gate; the pooling reads the top layer's u)
    z     = sum_i softmax_i(W2' elu(W1' u_i + b1') + b2') * u_i     multi-dimensional source2token

M_ij = 0 where j < i (forward) or j > i (backward) and j is not padding, else -inf; a row without
a valid key yields s_i = 0.

Implementations of the token2token attention:

* ``t2t_reference`` materialises the (B, n, n, d) score tensor -- the paper's direct form, kept
  as the ground truth for tests.
* ``t2t_attention`` (the fast path) never holds the (n, n, d) scores.  Two observations make it
  cheap.  (1) c * tanh(.) lies in [-c, c], so the softmax needs no running max: numerator
  sum_j e_ij h_j and denominator sum_j e_ij simply accumulate over keys (an online softmax whose
  max is a constant).  (2) With x = (q_i + k_j) / c, exp(c tanh x) = e^c exp(-2c / (1 + A_i B_j))
  where A_i = e^(2 q_i / c) and B_j = e^(2 k_j / c) are per-token (B, n, d) tensors, and e^c
  cancels in the softmax: one exp per (i, j, feature) instead of a tanh and an exp.  (Exact
  while |q|, |k| <= 20 c; beyond, the per-token exponentials are clamped to stay finite.)
  Only the keys a direction allows are visited.  Three back ends compute the same thing:
  - a C kernel (CPU; forward and backward, ``model/kernels/csrc/disan.c`` built at install time,
    vectorised, memory O(B n d)) -- the default on CPU, ``RENDITION_DISAN_KERNEL=0`` turns it off;
  - query x key tiles of at most ``max_block_elems`` elements, the tile body compiled with
    torch.compile (default on CUDA; ``RENDITION_DISAN_COMPILE=1`` on CPU, ``=0`` never);
  - the same tiles as in-place eager PyTorch: the path that works with no compiler at all.

Inference on CPU runs the same modules packed, a batch's tokens end to end without padding
(``model/embedding/packed.py``: the C kernel with sentence offsets); ``DiSAN.forward`` is the padded
form that training and the other devices use.
"""

from __future__ import annotations

import ctypes
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from rendition.model.kernels import native
from rendition.model.weights import JsonConfig


@dataclass(frozen=True)
class DiSANConfig(JsonConfig):
    vocab_size: int = 8000
    d_embed: int = 256  # token embedding size
    d_model: int = 256  # d: per-direction feature size; the sentence vector before the head is 2d
    d_out: int | None = 384  # optional linear head (None: output is 2d)
    blocks: int = 1  # depth: DiSA layers (fw + bw) stacked before the source2token pooling
    c: float = 5.0  # tanh scale of the token2token score
    max_length: int = 256  # longest input in tokens (longer input is truncated by the encoder)
    pad_id: int = 0
    dropout: float = 0.1
    block_q: int = 64  # query tile of the fast path
    max_block_elems: int = 1 << 23  # B * q * k * d elements per tile (8M floats = 32 MB)

    @property
    def dim(self) -> int:
        return self.d_out if self.d_out else 2 * self.d_model


# ------------------------------------------------------------------------------------------------
# token2token attention: reference (direct) and fast (tiled) forms
# ------------------------------------------------------------------------------------------------


def direction_mask(n: int, direction: str, device: torch.device | None = None) -> Tensor:
    """(n, n) bool, True where query i may attend key j: j < i (fw) or j > i (bw)."""
    i = torch.arange(n, device=device).unsqueeze(1)
    j = torch.arange(n, device=device).unsqueeze(0)
    if direction == "fw":
        return j < i
    if direction == "bw":
        return j > i
    raise ValueError(f"direction must be 'fw' or 'bw', not {direction!r}")


def t2t_reference(h: Tensor, q: Tensor, k: Tensor, mask: Tensor, direction: str, c: float = 5.0) -> Tensor:
    """Direct multi-dimensional token2token attention.

    h: values (B, n, d); q = W1 h (B, n, d); k = W2 h + b (B, n, d); mask: (B, n) bool, True = token.
    """
    B, n, d = h.shape
    logits = c * torch.tanh((q.unsqueeze(2) + k.unsqueeze(1)) / c)  # (B, n, n, d)
    allowed = direction_mask(n, direction, h.device).unsqueeze(0) & mask.unsqueeze(1)  # (B, n, n)
    logits = logits.masked_fill(~allowed.unsqueeze(-1), float("-inf"))
    p = torch.softmax(logits, dim=2)  # over keys j, per feature
    p = torch.nan_to_num(p, nan=0.0)  # rows with no valid key -> 0
    return (p * h.unsqueeze(1)).sum(2)  # (B, n, d)


def token_factors(q: Tensor, k: Tensor, c: float, dtype: torch.dtype = torch.float32) -> tuple[Tensor, Tensor]:
    """A = e^(2 q / c), B = e^(2 k / c) in ``dtype``, the per-token factors of
    exp(c tanh((q_i + k_j) / c)) = e^c exp(-2c / (1 + A_i B_j)).  Clamping 2q/c, 2k/c to +-40 keeps
    the product finite in float32 (tanh is saturated long before)."""
    a = torch.exp(((2.0 / c) * q.to(dtype)).clamp(-40.0, 40.0))
    b = torch.exp(((2.0 / c) * k.to(dtype)).clamp(-40.0, 40.0))
    return a, b


def _tile_eager(a: Tensor, b: Tensor, h: Tensor, m: Tensor, c: float) -> tuple[Tensor, Tensor]:
    """One tile: a = exp(2 q / c) (B, tq, d), b = exp(2 k / c) (B, tk, d), h (B, tk, d), m (B, tq, tk) 0/1."""
    if torch.is_grad_enabled() and (a.requires_grad or b.requires_grad or h.requires_grad):
        return _tile_fused(a, b, h, m, c)
    e = a.unsqueeze(2) * b.unsqueeze(1)  # (B, tq, tk, d): the only tile-sized buffer
    e = e.add_(1.0).reciprocal_().mul_(-2.0 * c).exp_().mul_(m.unsqueeze(-1))
    den = e.sum(2)
    num = e.mul_(h.unsqueeze(1)).sum(2)
    return num, den  # (B, tq, d) each


def _tile_fused(a: Tensor, b: Tensor, h: Tensor, m: Tensor, c: float) -> tuple[Tensor, Tensor]:
    e = torch.exp((-2.0 * c) / (1.0 + a.unsqueeze(2) * b.unsqueeze(1))) * m.unsqueeze(-1)  # (B, tq, tk, d), fused
    return (e * h.unsqueeze(1)).sum(2), e.sum(2)


_COMPILED: dict[str, Callable[..., Any]] = {}
_COMPILE_FAILED = False


def compile_enabled(device: torch.device) -> bool:
    """auto: compile on CUDA (Triton); on CPU the C kernel is used, and compiling the tile (which
    takes minutes on a small CPU) happens only with RENDITION_DISAN_COMPILE=1."""
    flag = os.environ.get("RENDITION_DISAN_COMPILE", "auto").lower()
    if flag in ("0", "false", "no", "off") or _COMPILE_FAILED:
        return False
    if flag in ("1", "true", "yes", "on"):
        return True
    return device.type == "cuda"  # auto: try, fall back to eager on the first failure


def _tile(q: Tensor, k: Tensor, h: Tensor, m: Tensor, c: float, impl: str) -> tuple[Tensor, Tensor]:
    global _COMPILE_FAILED
    if impl == "compiled" or (impl == "auto" and compile_enabled(q.device)):
        fn = _COMPILED.get("tile")
        if fn is None:
            fn = _COMPILED["tile"] = torch.compile(_tile_fused, dynamic=True)
        try:
            return fn(q, k, h, m, c)
        except Exception as e:  # no C++ compiler / triton: keep working, eagerly
            if impl == "compiled":
                raise
            _COMPILE_FAILED = True
            warnings.warn(f"torch.compile unavailable for DiSAN ({type(e).__name__}); using the eager path", stacklevel=2)
    return _tile_eager(q, k, h, m, c)


# ------------------------------------------------------------------------------------------------
# CPU kernel (model/kernels/csrc/disan.c, built at install time): per (sentence, query) one stream over
# exactly the keys its direction allows, accumulating numerator and denominator in registers.
# ------------------------------------------------------------------------------------------------


def cpu_kernel() -> ctypes.CDLL | None:
    """The native library (ctypes), or None (not built, or ``RENDITION_DISAN_KERNEL=0``)."""
    return native.kernel("RENDITION_DISAN_KERNEL")


class _T2TKernel(torch.autograd.Function):
    """C kernel forward and backward (CPU, float32): memory O(B n d), the (i, j) work recomputed."""

    @staticmethod
    def forward(ctx: Any, h: Tensor, q: Tensor, k: Tensor, mask: Tensor, direction: str, c: float) -> Tensor:
        so = cpu_kernel()
        assert so is not None  # (t2t_kernel runs only where it loaded)
        B, n, d = h.shape
        a, b = (x.contiguous() for x in token_factors(q, k, c))
        hv = h.float().contiguous()
        km = mask.float().contiguous()
        out = torch.empty_like(hv)
        den = torch.empty_like(hv) if ctx.needs_input_grad[0] or ctx.needs_input_grad[1] or ctx.needs_input_grad[2] else None
        dr = 0 if direction == "fw" else 1
        if B * n * d:
            args = native.DisanArgs(
                a=a.data_ptr(), b=b.data_ptr(), h=hv.data_ptr(), key_mask=km.data_ptr(), s=out.data_ptr(),
                den=native.ptr(den), batch=B, len=n, dim=d, c=c, direction=dr, threads=torch.get_num_threads(),
            )
            so.rk_disan_t2t(ctypes.byref(args))
        if den is not None:
            ctx.save_for_backward(a, b, hv, km, out, den)
        ctx.dr, ctx.c = dr, c
        return out.to(h.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, ...]:
        so = cpu_kernel()
        assert so is not None
        a, b, hv, km, out, den = ctx.saved_tensors
        B, n, d = hv.shape
        g = g.float().contiguous()
        dq, dk, dh = torch.empty_like(hv), torch.empty_like(hv), torch.empty_like(hv)
        if B * n * d:
            args = native.DisanArgs(
                a=a.data_ptr(), b=b.data_ptr(), h=hv.data_ptr(), key_mask=km.data_ptr(), s=out.data_ptr(),
                den=den.data_ptr(), grad=g.data_ptr(), dq=dq.data_ptr(), dk=dk.data_ptr(), dh=dh.data_ptr(),
                batch=B, len=n, dim=d, c=ctx.c, direction=ctx.dr, threads=torch.get_num_threads(),
            )  # fmt: skip
            so.rk_disan_t2t_backward(ctypes.byref(args))
        return dh, dq, dk, None, None, None


def t2t_kernel(h: Tensor, q: Tensor, k: Tensor, mask: Tensor, direction: str, c: float = 5.0) -> Tensor:
    """token2token attention through the C kernel (CPU; differentiable); memory O(B n d)."""
    if cpu_kernel() is None:
        raise RuntimeError("DiSAN C kernel unavailable")
    if h.device.type != "cpu":
        raise RuntimeError("the DiSAN C kernel runs on CPU tensors only")
    if direction not in ("fw", "bw"):
        raise ValueError(f"direction must be 'fw' or 'bw', not {direction!r}")
    return _T2TKernel.apply(h, q, k, mask, direction, c)


def t2t_attention(
    h: Tensor,
    q: Tensor,
    k: Tensor,
    mask: Tensor,
    direction: str,
    c: float = 5.0,
    block_q: int = 64,
    max_block_elems: int = 1 << 23,
    impl: str = "auto",
) -> Tensor:
    """Tiled token2token attention, equal to ``t2t_reference``; visits only the needed triangle.

    impl: "auto" (C kernel for CPU inference, else torch.compile'd tiles if possible, else eager
    tiles), "kernel", "compiled", or "eager".
    """
    B, n, d = h.shape
    if direction not in ("fw", "bw"):
        raise ValueError(f"direction must be 'fw' or 'bw', not {direction!r}")
    if impl == "kernel" or (impl == "auto" and h.device.type == "cpu" and cpu_kernel() is not None):
        return t2t_kernel(h, q, k, mask, direction, c)
    dtype = h.dtype
    # e^c cancels in the softmax and the two exponentials are per token (token_factors), so a tile
    # costs one exp per (i, j, feature).
    work = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    a, b = token_factors(q, k, c, work)
    hv = h.to(work)
    keym = mask.to(work)  # (B, n)
    pos = torch.arange(n, device=h.device)
    out = []
    for q0 in range(0, n, block_q):
        q1 = min(n, q0 + block_q)
        tq = q1 - q0
        lo, hi = (0, q1 - 1) if direction == "fw" else (q0 + 1, n)  # keys this query tile can see
        num = hv.new_zeros(B, tq, d)
        den = hv.new_zeros(B, tq, d)
        tk = max(1, max_block_elems // max(1, B * tq * d))  # key tile under the element budget
        for k0 in range(lo, hi, tk):
            k1 = min(hi, k0 + tk)
            qi = pos[q0:q1].unsqueeze(1)
            kj = pos[k0:k1].unsqueeze(0)
            tri = (kj < qi) if direction == "fw" else (kj > qi)  # (tq, tk)
            m = tri.to(work).unsqueeze(0) * keym[:, None, k0:k1]  # (B, tq, tk)
            tn, td = _tile(a[:, q0:q1], b[:, k0:k1], hv[:, k0:k1], m, c, impl)
            num = num + tn
            den = den + td
        out.append(torch.where(den > 0, num / den.clamp_min(1e-30), torch.zeros_like(num)))  # no key -> 0
    return torch.cat(out, dim=1).to(dtype) if out else h.new_zeros(B, 0, d)


# ------------------------------------------------------------------------------------------------
# modules
# ------------------------------------------------------------------------------------------------


class DirectionalSelfAttention(nn.Module):
    """DiSA block for one direction: masked multi-dimensional token2token attention + fusion gate."""

    def __init__(self, d: int, direction: str, c: float):
        super().__init__()
        self.direction, self.c = direction, c
        self.w1 = nn.Linear(d, d, bias=False)  # query side, W1 h_i
        self.w2 = nn.Linear(d, d, bias=False)  # key side, W2 h_j
        self.b = nn.Parameter(torch.zeros(d))  # the one shared bias
        self.wf1 = nn.Linear(d, d, bias=False)  # W_f1 s
        self.wf2 = nn.Linear(d, d)  # W_f2 h + b_f

    def forward(self, h: Tensor, mask: Tensor, fast: bool = True, block_q: int = 64, max_block_elems: int = 1 << 23, impl: str = "auto") -> Tensor:
        q, k = self.w1(h), self.w2(h) + self.b  # (B, n, d)
        if fast:
            s = t2t_attention(h, q, k, mask, self.direction, self.c, block_q, max_block_elems, impl)
        else:
            s = t2t_reference(h, q, k, mask, self.direction, self.c)
        gate = torch.sigmoid(self.wf1(s) + self.wf2(h))
        u = gate * h + (1 - gate) * s
        return u * mask.unsqueeze(-1).to(u.dtype)  # (B, n, d), padding zeroed


class Source2Token(nn.Module):
    """Multi-dimensional source2token attention: a per-feature softmax over tokens."""

    def __init__(self, d: int):
        super().__init__()
        self.w1 = nn.Linear(d, d)
        self.w2 = nn.Linear(d, d)

    def forward(self, u: Tensor, mask: Tensor) -> Tensor:
        logits = self.w2(F.elu(self.w1(u)))  # (B, n, D)
        logits = logits.masked_fill(~mask.unsqueeze(-1), float("-inf"))
        p = torch.nan_to_num(torch.softmax(logits, dim=1), nan=0.0)  # all-padding row -> 0
        return (p * u).sum(1)  # (B, D)


class UpperBlock(nn.Module):
    """A further DiSA layer over the (B, n, 2d) output of the one below: each direction has its own
    h = elu(W_h u + b_h) (the paper's per-block fc; both maps held as one (2d, 2d) Linear, forward
    features first), then its masked token2token attention and fusion gate."""

    def __init__(self, d: int, c: float):
        super().__init__()
        self.fc = nn.Linear(2 * d, 2 * d)  # [W_h^fw ; W_h^bw]
        self.fw = DirectionalSelfAttention(d, "fw", c)
        self.bw = DirectionalSelfAttention(d, "bw", c)

    def forward(self, u: Tensor, mask: Tensor, **kw: Any) -> Tensor:
        h_fw, h_bw = F.elu(self.fc(u)).chunk(2, dim=-1)  # (B, n, d) each
        return torch.cat([self.fw(h_fw, mask, **kw), self.bw(h_bw, mask, **kw)], dim=-1)  # (B, n, 2d)


class DiSAN(nn.Module):
    def __init__(self, cfg: DiSANConfig):
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_embed, padding_idx=cfg.pad_id)
        self.fc_h = nn.Linear(cfg.d_embed, d)
        self.fw = DirectionalSelfAttention(d, "fw", cfg.c)
        self.bw = DirectionalSelfAttention(d, "bw", cfg.c)
        if cfg.blocks < 1:
            raise ValueError(f"blocks must be >= 1, not {cfg.blocks}")
        self.upper = nn.ModuleList(UpperBlock(d, cfg.c) for _ in range(cfg.blocks - 1))  # layers 2..blocks
        self.s2t = Source2Token(2 * d)
        self.head = nn.Linear(2 * d, cfg.d_out) if cfg.d_out else None
        self.drop = nn.Dropout(cfg.dropout)
        nn.init.normal_(self.embed.weight, std=d**-0.5)
        with torch.no_grad():
            self.embed.weight[cfg.pad_id].zero_()

    def forward(self, ids: Tensor, mask: Tensor | None = None, fast: bool = True, impl: str = "auto") -> Tensor:
        """ids: (B, n) token ids (pad = cfg.pad_id) -> (B, dim) sentence vectors."""
        if mask is None:
            mask = ids != self.cfg.pad_id
        return self.pool(self.features(ids, mask, fast, impl), mask)

    def features(self, ids: Tensor, mask: Tensor, fast: bool = True, impl: str = "auto") -> Tensor:
        """ids, mask: (B, n) -> (B, n, 2d): the context-aware token features u the pooling reads."""
        x = self.drop(self.embed(ids))  # (B, n, d_embed)
        h = F.elu(self.fc_h(x))  # (B, n, d)
        kw = dict(fast=fast, block_q=self.cfg.block_q, max_block_elems=self.cfg.max_block_elems, impl=impl)
        u = torch.cat([self.fw(h, mask, **kw), self.bw(h, mask, **kw)], dim=-1)  # (B, n, 2d)
        for block in self.upper:
            u = block(u, mask, **kw)  # (B, n, 2d)
        return u

    def pool(self, u: Tensor, mask: Tensor) -> Tensor:
        """(B, n, 2d) token features -> (B, dim) sentence vectors (source2token, then the head)."""
        z = self.s2t(self.drop(u), mask)  # (B, 2d)
        return self.head(z) if self.head is not None else z

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


__all__ = ["DiSAN", "DiSANConfig", "t2t_attention", "t2t_reference", "direction_mask"]
