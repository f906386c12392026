"""Encoder-decoder Transformer with relative position representations.

Shaw, Uszkoreit & Vaswani (2018), "Self-Attention with Relative Position Representations":

    e_ij = x_i W^Q (x_j W^K + a^K_ij)^T / sqrt(d_z)
    z_i  = sum_j alpha_ij (x_j W^V + a^V_ij)
    a_ij = w_clip(j - i, k),  clip(x, k) = max(-k, min(k, x))

with learned tables w^K, w^V of shape (2k+1, head_dim) per layer, shared across heads, used in
encoder and decoder self-attention (not cross-attention).  The tables are never expanded to an
(n, n, d) tensor: the key term is q @ w^K^T (2k+1 logits per query) gathered by the clipped
relative index, and the value term sums the attention weights into 2k+1 buckets, then multiplies
by w^V.

Pre-norm residual blocks with a final layer norm, ReLU feed-forward, tied source/target/output
embeddings scaled by sqrt(d_model).  Sinusoidal absolute positions are available as an option
(the paper's baseline).  ``encode`` / ``cross_states`` / ``decode_step`` are the seam for the KV cache
and beam search (``rendition.model.translation.cache`` and ``rendition.model.translation.search``).

This is the reference implementation, in plain torch (any device, training and inference).  The
CPU back ends of ``rendition.model.translation.backends`` compute the same functions with the native kernels
over these modules' weights.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from rendition.model.translation.cache import DecoderCache, DenseLayer, ReferenceLayer
from rendition.model.weights import JsonConfig

T = TypeVar("T")


@dataclass(frozen=True)
class TransformerConfig(JsonConfig):
    vocab_size: int
    d_model: int = 256
    n_heads: int = 4
    d_ff: int = 1024
    n_encoder_layers: int = 6
    n_decoder_layers: int = 2
    relative_positions: bool = True  # Shaw et al. tables in self-attention
    max_relative_position: int = 16  # k
    relative_values: bool = True  # False: keys only (the paper's ablation)
    sinusoidal_positions: bool = False  # absolute sinusoidal encoding (the paper's baseline)
    dropout: float = 0.1
    layer_norm_eps: float = 1e-6
    max_positions: int = 1024  # longest sequence the model accepts (source or target)
    pad_id: int = 0
    bos_id: int = 2
    eos_id: int = 3
    languages: tuple[str, ...] = ("en", "fr")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


def relative_index(q_len: int, k_len: int, k: int, device: torch.device | None = None) -> Tensor:
    """clip(j - i, k) + k for query positions 0..q_len-1 and key positions 0..k_len-1."""
    i = torch.arange(q_len, device=device).unsqueeze(1)
    j = torch.arange(k_len, device=device).unsqueeze(0)
    return (j - i).clamp(-k, k) + k  # (q_len, k_len)


def inference_copy(module: nn.Module, name: str, sources: tuple[Tensor, ...], build: Callable[[], T]) -> T:
    """A derived copy of some weights for inference (``build()``), kept on ``module`` under
    ``name`` and rebuilt whenever a source changes: storage, dtype, device or an in-place update."""
    key = tuple((t.data_ptr(), t.dtype, t.device, t._version) for t in sources)
    cached = module.__dict__.get(name)
    if cached is None or cached[0] != key:
        cached = (key, build())
        module.__dict__[name] = cached
    return cached[1]


def sinusoidal_table(n: int, d: int) -> Tensor:
    pos = torch.arange(n, dtype=torch.float32).unsqueeze(1)
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
    table = torch.zeros(n, d)
    table[:, 0::2] = torch.sin(pos * div)
    table[:, 1::2] = torch.cos(pos * div)
    return table  # (n, d)


class MultiHeadAttention(nn.Module):
    """Multi-head attention; with ``max_relative_position`` set, Shaw et al. relative self-attention."""

    # the relative tables w^K and w^V (None without relative values), set only with a window ``k``
    rel_k: Tensor
    rel_v: Tensor | None

    def __init__(self, cfg: TransformerConfig, relative: bool):
        super().__init__()
        d = cfg.d_model
        self.n_heads, self.head_dim = cfg.n_heads, cfg.head_dim
        self.q_proj = nn.Linear(d, d)
        self.k_proj = nn.Linear(d, d)
        self.v_proj = nn.Linear(d, d)
        self.out_proj = nn.Linear(d, d)
        self.dropout = cfg.dropout
        self.k = cfg.max_relative_position if relative else None
        if self.k is not None:
            n = 2 * self.k + 1
            self.rel_k = nn.Parameter(torch.randn(n, self.head_dim) * self.head_dim**-0.5)  # w^K
            self.rel_v = (
                nn.Parameter(torch.randn(n, self.head_dim) * self.head_dim**-0.5) if cfg.relative_values else None
            )  # w^V

    def fused_qkv(self) -> tuple[Tensor, Tensor]:
        """The three input projections as one (3D, D) weight and (3D,) bias: a copy for inference,
        built once and kept until a weight changes (a fresh concatenation when gradients are on)."""
        ws = (self.q_proj.weight, self.k_proj.weight, self.v_proj.weight)
        bs = (self.q_proj.bias, self.k_proj.bias, self.v_proj.bias)
        if torch.is_grad_enabled() and ws[0].requires_grad:
            return torch.cat(ws), torch.cat(bs)
        return inference_copy(self, "_qkv_copy", ws + bs, lambda: (torch.cat(ws).detach(), torch.cat(bs).detach()))

    def split(self, x: Tensor) -> Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, Dh)

    def merge(self, x: Tensor) -> Tensor:
        B, H, T, Dh = x.shape
        return x.transpose(1, 2).reshape(B, T, H * Dh)  # (B, T, D)

    def attend(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, rel_idx: Tensor | None) -> Tensor:
        """q (B,H,Tq,Dh), k/v (B,H,Tk,Dh), mask broadcastable to (B,H,Tq,Tk) with True = keep,
        rel_idx (Tq,Tk) long holding clip(j-i,k)+k (or (B,1,Tq,Tk): one table per row, when the rows
        are at different steps), or None for no relative term."""
        drop = self.dropout if self.training else 0.0
        if rel_idx is None:
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=drop)
        scale = self.head_dim**-0.5
        q = q * scale
        scores = q @ k.transpose(-1, -2)  # (B, H, Tq, Tk)
        rel_logits = q @ self.rel_k.to(q.dtype).t()  # (B, H, Tq, 2k+1)
        idx = rel_idx.expand(scores.shape)  # (Tq, Tk), or per row (B, 1, Tq, Tk)
        scores = scores + rel_logits.gather(-1, idx)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        attn = torch.softmax(scores.float(), dim=-1).to(q.dtype)
        if drop:
            attn = F.dropout(attn, drop)
        out = attn @ v  # (B, H, Tq, Dh)
        if self.rel_v is not None:
            buckets = attn.new_zeros(*attn.shape[:3], self.rel_v.shape[0])  # (B, H, Tq, 2k+1)
            buckets.scatter_add_(-1, idx, attn)
            out = out + buckets @ self.rel_v.to(q.dtype)
        return out

    def attend_beams(self, x: Tensor, k: Tensor, v: Tensor, bias: Tensor) -> Tensor:
        """Cross-attention of one decoding step, beams grouped by sentence: x (B*K, 1, D) with the
        K beams of a sentence adjacent, k/v (B, H, S, Dh) per sentence, bias (B, 1, 1, S) additive
        (0 or a large negative).  The K beams are the query rows of one product per sentence and
        head, so each sentence's K/V are read once, not once per beam.  Returns (B*K, 1, D)."""
        B, H, S, Dh = k.shape
        K = x.shape[0] // B
        q = self.q_proj(x).view(B, K, H, Dh).transpose(1, 2)  # (B, H, K, Dh)
        scores = (q * Dh**-0.5) @ k.transpose(-1, -2) + bias  # (B, H, K, S)
        out = torch.softmax(scores.float(), dim=-1).to(q.dtype) @ v  # (B, H, K, Dh)
        return self.out_proj(out.transpose(1, 2).reshape(B * K, 1, H * Dh))

    def forward(self, x: Tensor, mem: Tensor | None, mask: Tensor | None, rel_idx: Tensor | None) -> Tensor:
        src = x if mem is None else mem
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(src)), self.split(self.v_proj(src))
        return self.out_proj(self.merge(self.attend(q, k, v, mask, rel_idx)))


class FeedForward(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.fc1 = nn.Linear(cfg.d_model, cfg.d_ff)
        self.fc2 = nn.Linear(cfg.d_ff, cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.dropout(F.relu(self.fc1(x))))

    def infer(self, x: Tensor) -> Tensor:
        """forward() at inference: no dropout call, the ReLU in place, no module calls."""
        return F.linear(F.relu_(F.linear(x, self.fc1.weight, self.fc1.bias)), self.fc2.weight, self.fc2.bias)


class EncoderLayer(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.self_attn_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.self_attn = MultiHeadAttention(cfg, relative=cfg.relative_positions)
        self.ffn_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.ffn = FeedForward(cfg)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: Tensor, mask: Tensor, rel_idx: Tensor | None) -> Tensor:
        x = x + self.dropout(self.self_attn(self.self_attn_norm(x), None, mask, rel_idx))
        return x + self.dropout(self.ffn(self.ffn_norm(x)))


class DecoderLayer(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.self_attn_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.self_attn = MultiHeadAttention(cfg, relative=cfg.relative_positions)
        self.cross_attn_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.cross_attn = MultiHeadAttention(cfg, relative=False)
        self.ffn_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.ffn = FeedForward(cfg)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: Tensor, mem: Tensor, self_mask: Tensor, mem_mask: Tensor, rel_idx: Tensor | None) -> Tensor:
        """Full (teacher-forced) pass over the whole target prefix."""
        x = x + self.dropout(self.self_attn(self.self_attn_norm(x), None, self_mask, rel_idx))
        x = x + self.dropout(self.cross_attn(self.cross_attn_norm(x), mem, mem_mask, None))
        return x + self.dropout(self.ffn(self.ffn_norm(x)))

    def step(self, x: Tensor, cache: DenseLayer | ReferenceLayer, mem_bias: Tensor) -> Tensor:
        """One incremental step: x (N, 1, D), N = sentences x beams; appends this step's K/V to
        the cache.  mem_bias (B, 1, 1, S): 0 for source tokens, a large negative number for padding."""
        sa = self.self_attn
        h = self.self_attn_norm(x)
        N, H, Dh = x.shape[0], sa.n_heads, sa.head_dim
        assert cache.qkv is not None, "a torch step needs the cache's fused Q/K/V weights"
        qkv = F.linear(h, *cache.qkv).view(N, 3, H, 1, Dh)  # one product for q, k and v
        q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]  # (N, H, 1, Dh)
        a = cache.self_attention(q, k, v, sa)  # stores k, v; each row at its own step; (N, H, 1, Dh)
        x = x + sa.out_proj(a.reshape(N, 1, H * Dh))  # (a view unless SDPA returned a strided result)
        cross_k, cross_v = cache.cross_k, cache.cross_v
        assert cross_k is not None and cross_v is not None, "no sentence joined the cache"
        x = x + self.cross_attn.attend_beams(self.cross_attn_norm(x), cross_k, cross_v, mem_bias)
        return x + self.ffn.infer(self.ffn_norm(x))


class Transformer(nn.Module):
    positions: Tensor | None  # the sinusoidal table (a buffer), or None

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model, padding_idx=cfg.pad_id)
        nn.init.normal_(self.embed.weight, std=cfg.d_model**-0.5)
        with torch.no_grad():
            self.embed.weight[cfg.pad_id].zero_()
        # (nn.ModuleList's items are typed as plain Modules: the casts give the checker the layers' own types)
        encoder = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_encoder_layers))
        self.encoder_layers = cast("Sequence[EncoderLayer]", encoder)
        self.encoder_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        decoder = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_decoder_layers))
        self.decoder_layers = cast("Sequence[DecoderLayer]", decoder)
        self.decoder_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.dropout = nn.Dropout(cfg.dropout)
        if cfg.sinusoidal_positions:
            self.register_buffer("positions", sinusoidal_table(cfg.max_positions, cfg.d_model), persistent=False)
        else:
            self.positions = None
        self.emb_scale = math.sqrt(cfg.d_model)

    # -- pieces ---------------------------------------------------------------------------------
    def embed_tokens(self, tokens: Tensor) -> Tensor:
        x = F.embedding(tokens, self.embed.weight, self.cfg.pad_id) * self.emb_scale  # (B, T, D)
        if self.positions is not None:
            x = x + self.positions[: tokens.shape[1]].to(x.dtype)
        return self.dropout(x) if self.training else x

    def rel_idx(self, q_len: int, k_len: int, device: torch.device) -> Tensor | None:
        if not self.cfg.relative_positions:
            return None
        return relative_index(q_len, k_len, self.cfg.max_relative_position, device)

    def output_weight_t(self) -> Tensor:
        """The tied output projection as a contiguous (D, V) copy for inference (about 15% faster
        on CPU than the transposed view), rebuilt whenever the embedding changes."""
        w = self.embed.weight
        return inference_copy(self, "_out_proj_copy", (w,), lambda: w.detach().t().contiguous())

    def logits(self, h: Tensor) -> Tensor:
        w = self.embed.weight  # (V, D), tied
        if torch.is_grad_enabled() and w.requires_grad:
            return h @ w.t()  # (..., V)
        return h @ self.output_weight_t()

    # -- encoder / full decoder ----------------------------------------------------------------
    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """src (B, S) -> memory (B, S, D) and key mask (B, 1, 1, S) (True = real token)."""
        self.check_source(src)
        mask = (src != self.cfg.pad_id)[:, None, None, :]
        x = self.embed_tokens(src)
        rel = self.rel_idx(src.shape[1], src.shape[1], src.device)
        for layer in self.encoder_layers:
            x = layer(x, mask, rel)
        return self.encoder_norm(x), mask

    def check_source(self, src: Tensor) -> None:
        if src.shape[1] > self.cfg.max_positions:
            raise ValueError(f"source longer than max_positions={self.cfg.max_positions}")

    def decode(self, tgt_in: Tensor, mem: Tensor, mem_mask: Tensor) -> Tensor:
        """Teacher-forced decoding: tgt_in (B, T) -> logits (B, T, V)."""
        T = tgt_in.shape[1]
        causal = torch.ones(T, T, dtype=torch.bool, device=tgt_in.device).tril()
        x = self.embed_tokens(tgt_in)
        rel = self.rel_idx(T, T, tgt_in.device)
        for layer in self.decoder_layers:
            x = layer(x, mem, causal, mem_mask, rel)
        return self.logits(self.decoder_norm(x))

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        mem, mask = self.encode(src)
        return self.decode(tgt_in, mem, mask)

    # -- incremental decoding -------------------------------------------------------------------
    def cross_states(self, mem: Tensor) -> list[tuple[Tensor, Tensor]]:
        """Per decoder layer: the cross-attention keys and values of memory (B, S, D), each
        (B, H, S, Dh) contiguous."""
        cross = []
        for layer in self.decoder_layers:
            ca = layer.cross_attn
            cross.append((ca.split(ca.k_proj(mem)).contiguous(), ca.split(ca.v_proj(mem)).contiguous()))  # (B, H, S, Dh)
        return cross

    def decode_step(self, tokens: Tensor, cache: DecoderCache, output: Tensor | None = None) -> Tensor:
        """tokens (N,) at step cache.positions() -> logits (N, V); advances the cache by one.  The
        step is one per row (sentences join a ``rendition.model.translation.cache`` cache at different times).
        ``output`` (D, V'): columns of the output projection to use instead (a vocabulary shortlist's,
        ``rendition.model.translation.shortlist``): logits (N, V')."""
        pos = cache.positions()  # (N,) steps
        x = F.embedding(tokens[:, None], self.embed.weight, self.cfg.pad_id) * self.emb_scale  # (N, 1, D)
        if self.positions is not None:
            x = x + self.positions[pos].to(x.dtype).view(-1, 1, x.shape[-1])
        if self.training:
            x = self.dropout(x)
        mem_bias = cache.memory_bias(x.dtype)  # (B, 1, 1, S)
        for layer, lc in zip(self.decoder_layers, cache.layers):
            x = layer.step(x, lc, mem_bias)
        cache.advance()
        h = self.decoder_norm(x)
        return (self.logits(h) if output is None else h @ output.to(h.dtype))[:, 0]

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
