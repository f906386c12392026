"""DiSAN: Directional Self-Attention Network as a sentence encoder.

Shen, Zhou, Long, Jiang, Pan & Zhang (2018), "DiSAN: Directional Self-Attention Network for
RNN/CNN-Free Language Understanding":

    h     = elu(W_h x + b_h)                                        token features, (B, n, d)
    f_ij  = c * tanh((W1 h_i + W2 h_j + b) / c) + M_ij              one score per feature, c = 5
    P_ij  = softmax_j(f_ij)  (separately for every feature)
    s_i   = sum_j P_ij * h_j                                        multi-dimensional token2token
    F     = sigmoid(W_f1 s + W_f2 h + b_f),  u = F * h + (1 - F) * s fusion gate
    u     = [u_fw ; u_bw]                                            (B, n, 2d)
    z     = sum_i softmax_i(W2' elu(W1' u_i + b1') + b2') * u_i     multi-dimensional source2token

M_ij = 0 where j < i (forward) or j > i (backward) and j is not padding, else -inf; a row without
a valid key yields s_i = 0.

Two implementations of the token2token attention:

* ``t2t_reference`` materialises the (B, n, n, d) score tensor -- the paper's direct form, kept
  as the ground truth for tests.
* ``t2t_attention`` (the fast path) never holds more than a bounded (B, q, k, d) tile.  Because
  c * tanh(.) lies in [-c, c], exp(f_ij) lies in [e^-c, e^c]: the softmax needs no running max,
  so numerator sum_j e_ij h_j and denominator sum_j e_ij simply accumulate over key tiles (an
  online softmax whose max is a constant).  Only the tiles of the triangle a direction needs are
  visited; the diagonal tile is masked.  The tile body is compiled with torch.compile (fused into
  a single loop that never writes the tile) when a compiler is available, and runs as in-place
  eager PyTorch otherwise (``RENDITION_DISAN_COMPILE=0`` forces eager).
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn


@dataclass(frozen=True)
class DiSANConfig:
    vocab_size: int = 8000
    d_embed: int = 256  # token embedding size
    d_model: int = 256  # d: per-direction feature size; the sentence vector before the head is 2d
    d_out: int | None = 384  # optional linear head (None: output is 2d)
    c: float = 5.0  # tanh scale of the token2token score
    max_length: int = 256  # longest input in tokens (longer input is truncated by the encoder)
    pad_id: int = 0
    dropout: float = 0.1
    block_q: int = 64  # query tile of the fast path
    max_block_elems: int = 1 << 23  # B * q * k * d elements per tile (8M floats = 32 MB)

    @property
    def dim(self) -> int:
        return self.d_out if self.d_out else 2 * self.d_model

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json() + "\n")

    @classmethod
    def load(cls, path: str | Path) -> DiSANConfig:
        raw = json.loads(Path(path).read_text())
        known = {f.name for f in fields(cls)}
        unknown = set(raw) - known
        if unknown:
            raise ValueError(f"{path}: unknown config keys {sorted(unknown)}")
        return cls(**raw)


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


def _tile_eager(q: Tensor, k: Tensor, h: Tensor, m: Tensor, c: float) -> tuple[Tensor, Tensor]:
    """One tile: q (B, tq, d) already divided by c, k (B, tk, d) likewise, h (B, tk, d), m (B, tq, tk) float."""
    e = q.unsqueeze(2) + k.unsqueeze(1)  # (B, tq, tk, d)
    if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or h.requires_grad):
        e = torch.exp(c * torch.tanh(e)) * m.unsqueeze(-1)
        return (e * h.unsqueeze(1)).sum(2), e.sum(2)
    e = e.tanh_().mul_(c).exp_().mul_(m.unsqueeze(-1))  # in place: one (B, tq, tk, d) buffer
    den = e.sum(2)
    num = e.mul_(h.unsqueeze(1)).sum(2)
    return num, den  # (B, tq, d) each


def _tile_fused(q: Tensor, k: Tensor, h: Tensor, m: Tensor, c: float) -> tuple[Tensor, Tensor]:
    e = torch.exp(c * torch.tanh(q.unsqueeze(2) + k.unsqueeze(1))) * m.unsqueeze(-1)  # fused, never stored
    return (e * h.unsqueeze(1)).sum(2), e.sum(2)


_COMPILED: dict[str, object] = {}
_COMPILE_FAILED = False


def compile_enabled() -> bool:
    flag = os.environ.get("RENDITION_DISAN_COMPILE", "auto").lower()
    if flag in ("0", "false", "no", "off") or _COMPILE_FAILED:
        return False
    if flag in ("1", "true", "yes", "on"):
        return True
    return True  # auto: try, fall back to eager on the first failure


def _tile(q: Tensor, k: Tensor, h: Tensor, m: Tensor, c: float, impl: str) -> tuple[Tensor, Tensor]:
    global _COMPILE_FAILED
    if impl == "compiled" or (impl == "auto" and compile_enabled()):
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

    impl: "auto" (compiled if possible), "compiled", or "eager".
    """
    B, n, d = h.shape
    if direction not in ("fw", "bw"):
        raise ValueError(f"direction must be 'fw' or 'bw', not {direction!r}")
    qs, ks = q / c, k / c  # c * tanh(x / c): the 1/c folded once into (B, n, d) tensors
    keym = mask.to(h.dtype)  # (B, n)
    pos = torch.arange(n, device=h.device)
    out = []
    for q0 in range(0, n, block_q):
        q1 = min(n, q0 + block_q)
        tq = q1 - q0
        lo, hi = (0, q1 - 1) if direction == "fw" else (q0 + 1, n)  # keys this query tile can see
        num = h.new_zeros(B, tq, d)
        den = h.new_zeros(B, tq, d)
        tk = max(1, max_block_elems // max(1, B * tq * d))  # key tile under the element budget
        for k0 in range(lo, hi, tk):
            k1 = min(hi, k0 + tk)
            qi = pos[q0:q1].unsqueeze(1)
            kj = pos[k0:k1].unsqueeze(0)
            tri = (kj < qi) if direction == "fw" else (kj > qi)  # (tq, tk)
            m = tri.to(h.dtype).unsqueeze(0) * keym[:, None, k0:k1]  # (B, tq, tk)
            tn, td = _tile(qs[:, q0:q1], ks[:, k0:k1], h[:, k0:k1], m, c, impl)
            num = num + tn
            den = den + td
        out.append(torch.where(den > 0, num / den.clamp_min(1e-30), torch.zeros_like(num)))
    return torch.cat(out, dim=1) if out else h.new_zeros(B, 0, d)


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


class DiSAN(nn.Module):
    def __init__(self, cfg: DiSANConfig):
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_embed, padding_idx=cfg.pad_id)
        self.fc_h = nn.Linear(cfg.d_embed, d)
        self.fw = DirectionalSelfAttention(d, "fw", cfg.c)
        self.bw = DirectionalSelfAttention(d, "bw", cfg.c)
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
        x = self.drop(self.embed(ids))  # (B, n, d_embed)
        h = F.elu(self.fc_h(x))  # (B, n, d)
        kw = dict(fast=fast, block_q=self.cfg.block_q, max_block_elems=self.cfg.max_block_elems, impl=impl)
        u = torch.cat([self.fw(h, mask, **kw), self.bw(h, mask, **kw)], dim=-1)  # (B, n, 2d)
        z = self.s2t(self.drop(u), mask)  # (B, 2d)
        return self.head(z) if self.head is not None else z

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


def param_bytes(model: nn.Module) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


__all__ = ["DiSAN", "DiSANConfig", "t2t_attention", "t2t_reference", "direction_mask"]
