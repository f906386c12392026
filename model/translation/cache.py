"""Typed KV cache for incremental decoding with relative position representations.

Per decoder layer: self-attention K/V preallocated for the maximum length and filled step by
step, plus cross-attention K/V computed once from the encoder output.  The relative position
index for the query at step t is clip(j - t, k) + k for j <= t; it is one precomputed row,
sliced per step, so the relative part of a step costs O(k * d) (q @ w^K^T and buckets @ w^V)
plus an O(t) gather, never building a table per step.

Rows are sentences x beams (N = B * beams, the beams of a sentence adjacent).  The
cross-attention K/V are kept once per *sentence* (B rows), not per beam: a decoding step attends
with the sentence's beams as the query rows of one product, so the encoder states are read once
per sentence and never copied per beam.  ``reorder(beam_idx)`` follows beam search (beams move
within their sentence, so the cross-attention K/V do not move); ``select(rows)`` shrinks the
batch when sentences finish (whole sentences: rows come in groups of ``beams``).

Two storage strategies, one class each behind the interface of ``DecoderCache`` /
``LayerCache`` (``self_attention``, ``reorder``, ``select``, ``expand``, ``nbytes``):

* ``DenseCache`` (any device, the torch reference): row r's past is in storage row r;
  ``reorder`` and ``select`` copy the filled part of the rows that move;
* ``ReferenceCache`` (``RowHistory``; CPU float32 inference with the C kernel of
  ``model.kernels.attention``): every live row writes its new K/V into its own storage row
  (``slots``), and ``src[r, j]`` names the storage row that holds row r's position j.  Beam
  search then moves rows by permuting that (N, max_len) index table: no K/V is ever copied, and a
  finished sentence's storage is simply no longer referenced.  Every ``COMPACT_EVERY`` steps,
  ``compact`` copies the past that all beams of a sentence share (most of it, soon) into the
  sentence's first storage row, once per position, so that the step kernel reads it as one
  contiguous run, and once for all beams.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, Protocol

import torch
from torch import Tensor

from model.kernels import attention as attention_kernels


class MultiHeadAttention(Protocol):
    """What a cache needs of a self-attention module (``model.translation.transformer.MultiHeadAttention``)."""

    head_dim: int
    k: int | None  # the relative window, or None
    rel_k: Tensor | None
    rel_v: Tensor | None

    def attend(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, rel_idx: Tensor | None) -> Tensor: ...

COMPACT_EVERY = 8  # by-reference beam search: steps between compactions of the shared past


@dataclass
class RowHistory:
    """By-reference K/V (shared by all layers): where each live row writes, and where its past is."""

    slots: Tensor  # (N,) int64: storage row each live row writes its K/V to (distinct)
    src: Tensor  # (N, max_len) int64: src[r, j] = storage row holding row r's position j
    compacted: int = 0  # positions below this are in their sentence's first storage row (compact)
    beams: int = 1  # rows per sentence (adjacent)

    @classmethod
    def start(cls, n: int, max_len: int, device: torch.device, beams: int = 1) -> RowHistory:
        return cls(torch.arange(n, device=device), torch.empty(n, max_len, dtype=torch.long, device=device), beams=beams)


# -- one decoder layer --------------------------------------------------------------------------------
@dataclass
class LayerCache(ABC):
    """One decoder layer's keys and values: the self-attention's, filled step by step, and the
    cross-attention's, computed once per sentence."""

    self_k: Tensor  # (N, H, max_len, Dh); by reference: (storage rows, H, max_len, Dh)
    self_v: Tensor  # (N, H, max_len, Dh)
    cross_k: Tensor  # (B, H, S, Dh), one row per sentence
    cross_v: Tensor  # (B, H, S, Dh)
    qkv: tuple[Tensor, Tensor] | None = None  # the layer's fused Q/K/V weight (3D, D) and bias, for the steps
    length: int = 0

    @classmethod
    def allocate(
        cls,
        n: int,
        heads: int,
        max_len: int,
        head_dim: int,
        cross_k: Tensor,
        cross_v: Tensor,
        qkv: tuple[Tensor, Tensor] | None = None,
        kv_dtype: torch.dtype | None = None,
    ) -> LayerCache:
        """Self-attention K/V storage of ``kv_dtype`` (default: the cross-attention's, i.e. the
        model's); a narrower one (float16) halves the memory a step reads and is read back
        converted to the computing dtype."""
        shape = (n, heads, max_len, head_dim)
        dtype = kv_dtype or cross_k.dtype
        return cls(cross_k.new_empty(shape, dtype=dtype), cross_k.new_empty(shape, dtype=dtype), cross_k, cross_v, qkv)

    @abstractmethod
    def self_attention(self, q: Tensor, k: Tensor, v: Tensor, attn: MultiHeadAttention, rel_idx: Tensor | None) -> Tensor:
        """Store this step's k, v (N, H, 1, Dh) and attend q (N, H, 1, Dh) over the past: (N, H, 1, Dh)."""

    @abstractmethod
    def select(self, rows: Tensor, sentences: Tensor) -> None:
        """Keep these rows (in this order) and these sentences' cross K/V."""

    @abstractmethod
    def expand(self, beams: int) -> None:
        """Every row becomes ``beams`` adjacent rows with its past."""

    def _select_cross(self, sentences: Tensor) -> None:
        self.cross_k = self.cross_k.index_select(0, sentences)
        self.cross_v = self.cross_v.index_select(0, sentences)

    def _expanded(self, beams: int, fill) -> None:
        """New self-attention storage with ``beams`` rows per old row; ``fill(new, old, t)`` copies the past."""
        t = self.length
        for name in ("self_k", "self_v"):
            old = getattr(self, name)
            new = old.new_empty((len(old) * beams, *old.shape[1:]))
            if t:
                fill(new, old, t)
            setattr(self, name, new)

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.self_k, self.self_v, self.cross_k, self.cross_v))


@dataclass
class DenseLayerCache(LayerCache):
    """Row r's past in storage row r (any device)."""

    def update(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Append k, v (N, H, 1, Dh); return all keys and values so far (N, H, t+1, Dh)."""
        t = self.length
        self.self_k[:, :, t : t + 1] = k
        self.self_v[:, :, t : t + 1] = v
        self.length = t + 1
        return self.self_k[:, :, : t + 1].to(k.dtype), self.self_v[:, :, : t + 1].to(v.dtype)

    def self_attention(self, q: Tensor, k: Tensor, v: Tensor, attn: MultiHeadAttention, rel_idx: Tensor | None) -> Tensor:
        k_all, v_all = self.update(k, v)  # (N, H, t+1, Dh)
        return attn.attend(q, k_all, v_all, None, rel_idx)

    def reorder(self, rows: Tensor, sources: Tensor) -> None:
        """Row rows[i] takes the past of row sources[i]; every other row keeps its own.  Only the
        moved rows' filled part is read and written (beam search moves under half the rows a
        step), and the gather completes before the scatter, so a row that is both a source and
        overwritten is read first."""
        t = self.length
        for buf in (self.self_k, self.self_v):
            part = buf[:, :, :t]  # (N, H, t, Dh) view of the filled part
            part.index_copy_(0, rows, part.index_select(0, sources))

    def select(self, rows: Tensor, sentences: Tensor) -> None:
        """Only the filled part of the self-attention K/V is copied."""
        t = self.length
        for name in ("self_k", "self_v"):
            old = getattr(self, name)
            new = old.new_empty((len(rows), *old.shape[1:]))
            if t:
                torch.index_select(old[:, :, :t], 0, rows, out=new[:, :, :t])
            setattr(self, name, new)
        self._select_cross(sentences)

    def expand(self, beams: int) -> None:
        """Only the filled part is copied."""

        def fill(new: Tensor, old: Tensor, t: int) -> None:
            new[:, :, :t] = old[:, :, :t].repeat_interleave(beams, 0)

        self._expanded(beams, fill)


@dataclass
class ReferenceLayerCache(LayerCache):
    """Row r's position j in storage row ``history.src[r, j]`` (see the module docstring)."""

    history: RowHistory | None = None  # shared by the layers of a ReferenceCache

    def next_position(self) -> int:
        """Take the next position t, recording each row's storage row for it; the step's K/V are
        stored there by the kernel of ``model.kernels.attention``."""
        h = self.history
        t = self.length
        h.src[:, t] = h.slots  # (the same for every layer)
        self.length = t + 1
        return t

    def self_attention(self, q: Tensor, k: Tensor, v: Tensor, attn: MultiHeadAttention, rel_idx: Tensor | None) -> Tensor:
        """The C kernel stores k, v and reads each row's past where it lies."""
        t = self.next_position()
        rk = attn.rel_k if attn.k is not None else None
        rv = attn.rel_v if attn.k is not None else None
        h = self.history
        return attention_kernels.rel_step_attention(
            q, k, v, self.self_k, self.self_v, h.src, t, rk, rv, attn.k or 0, attn.head_dim**-0.5, h.beams
        )  # (N, H, 1, Dh)

    def select(self, rows: Tensor, sentences: Tensor) -> None:
        """Nothing moves but the cross K/V (``ReferenceCache.select`` moves the history)."""
        self._select_cross(sentences)

    def expand(self, beams: int) -> None:
        """Storage row s moves to row s * beams; the other new rows start empty."""

        def fill(new: Tensor, old: Tensor, t: int) -> None:
            new.view(len(old), beams, *old.shape[1:])[:, 0, :, :t] = old[:, :, :t]

        self._expanded(beams, fill)


# -- the whole decoder ----------------------------------------------------------------------------------
class DecoderCache(ABC):
    """The decoder's cache for rows = sentences x beams: one ``layer_type`` per layer, the memory
    mask, the step counter and the relative-position row.  ``reorder`` / ``select`` / ``expand``
    follow beam search; how the K/V move is the subclass's storage strategy."""

    layer_type: ClassVar[type[LayerCache]]

    def __init__(self, layers: list[LayerCache], mem_mask: Tensor, max_len: int, k: int | None, beams: int = 1):
        self.layers = layers
        self.mem_mask = mem_mask  # (B, 1, 1, S), one row per sentence
        self._mem_bias: Tensor | None = None
        self.beams = beams  # rows per sentence
        self.max_len = max_len
        self.seq_len = 0
        self.k = k
        if k is not None:
            # clip(d, k) + k for d = -(max_len-1) .. 0; step t uses the last t+1 entries.
            d = torch.arange(-(max_len - 1), 1, device=mem_mask.device)
            self._rel_row = (d.clamp(-k, k) + k).unsqueeze(0)  # (1, max_len)

    @classmethod
    def allocate(
        cls,
        cross: list[tuple[Tensor, Tensor, tuple[Tensor, Tensor]]],
        mem_mask: Tensor,
        heads: int,
        max_len: int,
        head_dim: int,
        k: int | None,
        beams: int = 1,
        kv_dtype: torch.dtype | None = None,
    ) -> DecoderCache:
        """A cache with per layer (cross K, cross V, fused Q/K/V weights) from ``cross``."""
        n = mem_mask.shape[0] * beams
        layers = [cls.layer_type.allocate(n, heads, max_len, head_dim, ck, cv, qkv, kv_dtype) for ck, cv, qkv in cross]
        return cls(layers, mem_mask, max_len, k, beams)

    def positions(self) -> int:
        """The step every row is at (the position of this step's token); refuses a full cache."""
        if self.seq_len >= self.max_len:
            raise RuntimeError(f"cache is full ({self.max_len} steps)")
        return self.seq_len

    def step_relative_index(self) -> Tensor | None:
        if self.k is None:
            return None
        return self._rel_row[:, self.max_len - 1 - self.seq_len :]  # (1, t+1)

    def advance(self) -> None:
        self.seq_len += 1

    @abstractmethod
    def reorder(self, beam_idx: Tensor) -> None:
        """Beam search: row i takes the past of row beam_idx[i] (same sentence)."""

    def expand(self, beams: int) -> None:
        """One row per sentence becomes ``beams`` adjacent rows sharing its past (beam search
        runs its first step once per sentence, then expands)."""
        assert self.beams == 1, "expand a cache with one row per sentence"
        for layer in self.layers:
            layer.expand(beams)
        self.beams = beams

    def select(self, rows: Tensor) -> None:
        """Keep only these rows (finished sentences drop out).  With beams > 1, rows come in
        whole sentences: groups of ``beams`` rows of one sentence (in any order within a group)."""
        sentences = self._sentences(rows)
        for layer in self.layers:
            layer.select(rows, sentences)
        self.mem_mask = self.mem_mask.index_select(0, sentences)
        self._mem_bias = None

    def _sentences(self, rows: Tensor) -> Tensor:
        return rows if self.beams == 1 else rows.view(-1, self.beams)[:, 0] // self.beams

    def memory_bias(self, dtype: torch.dtype) -> Tensor:
        """(B, 1, 1, S) additive cross-attention bias: 0 for source tokens, the dtype's most
        negative number for padding; built once per batch of sentences, not per step."""
        if self._mem_bias is None or self._mem_bias.dtype != dtype:
            bias = torch.zeros(self.mem_mask.shape, dtype=dtype, device=self.mem_mask.device)
            self._mem_bias = bias.masked_fill_(~self.mem_mask, torch.finfo(dtype).min)
        return self._mem_bias

    @property
    def batch_size(self) -> int:
        """Rows (sentences x beams)."""
        return self.mem_mask.shape[0] * self.beams

    def nbytes(self) -> int:
        return sum(layer.nbytes() for layer in self.layers)


class DenseCache(DecoderCache):
    """Row r's past in storage row r: rows that move are copied (any device)."""

    layer_type = DenseLayerCache

    def reorder(self, beam_idx: Tensor) -> None:
        moved = (beam_idx != torch.arange(len(beam_idx), device=beam_idx.device)).nonzero().flatten()
        if moved.numel() == 0:
            return
        sources = beam_idx.index_select(0, moved)
        for layer in self.layers:
            layer.reorder(moved, sources)


class ReferenceCache(DecoderCache):
    """By reference (CPU float32 inference with the C step kernel): rows move by their index table."""

    layer_type = ReferenceLayerCache

    def __init__(self, layers: list[LayerCache], mem_mask: Tensor, max_len: int, k: int | None, beams: int = 1):
        super().__init__(layers, mem_mask, max_len, k, beams)
        self.history = RowHistory.start(self.batch_size, max_len, mem_mask.device, beams)
        for layer in layers:
            layer.history = self.history

    @property
    def src(self) -> Tensor:
        """(N, max_len) the storage row of each row's position j."""
        return self.history.src

    def begin_step(self) -> tuple[int, None]:
        """Record each row's storage row for position t in every layer (the fused step kernel
        stores the K/V there); (t, None: every row is at step t)."""
        t = self.positions()
        for layer in self.layers:
            layer.next_position()
        return t, None

    def reorder(self, beam_idx: Tensor) -> None:
        """Only the index table moves."""
        self.history.src = self.history.src.index_select(0, beam_idx)
        if self.seq_len % COMPACT_EVERY == 0:
            self.compact()

    def compact(self) -> None:
        """beams > 1: move each sentence's shared past into one storage row.

        The beams of a sentence soon share most of their past (position j's key and value are the
        same node for all of them), but that node sits in whichever storage row the beams'
        ancestor at step j wrote to, so a row's past hops between its sentence's storage rows
        from one position to the next.  Sharing is prefix-closed (beams that share their ancestor
        at step j share everything before it), so each sentence has a frontier f: its beams
        share positions j < f.  Those positions' K/V are copied into the sentence group's first
        storage row, and every beam's ``src`` points there: the shared past becomes one
        contiguous run per head, read once from memory for all beams.  Overwriting that storage
        row's own entry at such a position loses nothing, since no live row references any
        other node there.  Positions move once: the scan starts at the smallest frontier so far."""
        h, n = self.history, self.beams
        t = self.layers[0].length if self.layers else 0
        if n == 1 or t <= h.compacted:
            return
        lo = h.compacted
        src = h.src[:, lo:t].view(-1, n, t - lo)  # (B, beams, w)
        lead = src[:, 0]  # (B, w)
        shared = (src == lead.unsqueeze(1)).all(1).cumprod(1).bool()  # (B, w): j < f
        base = (h.slots.view(-1, n)[:, 0] // n * n).unsqueeze(1)  # (B, 1): the group's first row
        move = shared & (lead != base)
        if move.any():
            b, j = move.nonzero(as_tuple=True)
            to, frm, pos = base[b, 0], lead[b, j], j + lo
            for layer in self.layers:
                for buf in (layer.self_k, layer.self_v):
                    buf[to, :, pos] = buf[frm, :, pos]  # (moves, H, Dh)
            h.src[:, lo:t] = torch.where(shared.unsqueeze(1), base.unsqueeze(-1), src).view(-1, t - lo)
        h.compacted = lo + int(shared.sum(1).min())

    def expand(self, beams: int) -> None:
        super().expand(beams)
        h = self.history
        h.src = (h.src * beams).repeat_interleave(beams, 0)
        h.slots = (h.slots.unsqueeze(1) * beams + torch.arange(beams, device=h.slots.device)).view(-1)
        h.beams = beams

    def select(self, rows: Tensor) -> None:
        # Row i takes the past of rows[i]; it writes on into a storage row of its own sentence
        # group (distinct, and never written beyond the current position by anyone).
        sentences = self._sentences(rows)
        h = self.history
        h.src = h.src.index_select(0, rows)
        h.slots = h.slots.view(-1, self.beams).index_select(0, sentences).view(-1)
        super().select(rows)
