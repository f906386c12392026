"""Typed KV cache for incremental decoding with relative position representations, which
sentences join and leave between decoding steps (continuous batching).

Rows are sentences x ``beams`` (the beams of a sentence adjacent).  ``BeamSearch``
(``rendition.model.translation.search``) adds newly arrived sentences at the next step (``join``) and drops
finished or cancelled ones at once (``select``), so each sentence is at its own step.  With relative
positions only the distance j - t matters, so a sentence's rows keep their own positions 0, 1, ... t
and the attention of a step takes each row's own t (``steps``, one per row); a sentence's result is
the same whichever sentences share its steps.  ``reorder(beam_idx)`` follows beam search (beams move
within their sentence).

Cross-attention keys and values are computed once per sentence and kept once per sentence, not per
beam: a decoding step attends with the sentence's beams as the query rows of one product.
Self-attention storage grows to the longest output any sentence in the cache may reach.

One class per storage strategy, behind the interface of ``DecoderCache`` (``join``, ``select``,
``reorder``, ``advance``, ``positions``, ``nbytes``; transformers' ``cache_utils`` has the same shape):

* ``DenseCache`` (any device, the torch reference; ``Transformer.decode_step``): row r's past in
  storage row r; a step attends over every position up to the largest step, masked per row, with
  each row's own relative index; the cross K/V as one (B, H, S, Dh) tensor padded to the longest
  source (a joiner is appended, ``select`` gathers and trims);
* ``ReferenceCache`` (CPU float32/float16 storage, the C kernels of ``rendition.model.kernels``): storage rows
  come in groups of ``beams``, and ``src[r, j]`` names the storage row holding row r's position j:
  beam search moves rows by permuting that (N, max_len) index table (no K/V is copied), a finished
  sentence's group goes back to the free list, and every ``COMPACT_EVERY`` reorders the past that
  all beams of a sentence share is copied into the group's first storage row, so that the step
  kernel reads it as one contiguous run, once for all beams.  The cross K/V sit in per-sentence
  slots (row g of (groups, H, S, Dh), g the sentence's storage group), which the fused step kernel
  reads through ``cross_rows`` over each sentence's real tokens only (``cross_lens``): joins and
  leaves move nobody else's.
"""

from __future__ import annotations

import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import torch
import torch.nn.functional as F
from torch import Tensor

from rendition.model.kernels import attention as attention_kernels
from rendition.model.weights import release_rows

if TYPE_CHECKING:
    from rendition.model.translation.transformer import Transformer


class MultiHeadAttention(Protocol):
    """What a cache needs of a self-attention module (``model.translation.transformer.MultiHeadAttention``)."""

    head_dim: int
    k: int | None  # the relative window, or None
    rel_k: Tensor  # (there when k is set)
    rel_v: Tensor | None

    def attend(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, rel_idx: Tensor | None) -> Tensor: ...


COMPACT_EVERY = 8  # by-reference beam search: steps between compactions of the shared past
RELEASE_AFTER = 64  # by-reference storage: steps a group stays free before its pages go back to the system (looked at every as many steps)


def _pad_cat(old: Tensor | None, new: Tensor, dim: int, fill: float | bool = 0) -> Tensor:
    """old and new padded with ``fill`` to the same size along ``dim``, then concatenated along 0."""
    if old is None or old.shape[0] == 0:
        return new.contiguous()
    width = max(old.shape[dim], new.shape[dim])

    def pad(x: Tensor) -> Tensor:
        missing = width - x.shape[dim]
        if not missing:
            return x
        spec = [0, 0] * (x.dim() - 1 - dim % x.dim()) + [0, missing]
        return F.pad(x, spec, value=fill)

    return torch.cat([pad(old), pad(new)], 0)


class LayerCache:
    """One decoder layer's keys and values: what ``DecoderLayer.step`` uses (``qkv``, ``cross_k``,
    ``cross_v``, ``self_attention``) and the self-attention storage."""

    def __init__(self, cache: DecoderCache, qkv: tuple[Tensor, Tensor] | None, index: int = 0):
        # (a weak reference: a strong one would make cache and layers a reference cycle, whose K/V
        # storage only Python's cyclic collector frees, searches after the search that made it)
        self.cache: DecoderCache = weakref.proxy(cache)
        self.qkv = qkv  # the layer's fused Q/K/V weight (3D, D) and bias, for the torch steps (None: not those)
        self.index = index  # (the layer's place in the decoder)
        self.self_k: Tensor | None = None  # DenseCache: (N, H, T, Dh); ReferenceCache: (storage rows, H, T, Dh)
        self.self_v: Tensor | None = None

    def self_attention(self, q: Tensor, k: Tensor, v: Tensor, attn: MultiHeadAttention) -> Tensor:
        """Store this step's k, v (N, H, 1, Dh) at each row's own step and attend q over its past."""
        return self.cache.attend(self, q, k, v, attn)

    def storage(self) -> tuple[Tensor, Tensor]:
        """The self-attention K/V storage (there once the cache has rows)."""
        assert self.self_k is not None and self.self_v is not None, "the cache has no storage yet"
        return self.self_k, self.self_v

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.self_k, self.self_v) if t is not None)


class DenseLayer(LayerCache):
    """A ``DenseCache`` layer: the live sentences' cross-attention K/V (B, H, S, Dh)."""

    def __init__(self, cache: DecoderCache, qkv: tuple[Tensor, Tensor] | None, index: int = 0):
        super().__init__(cache, qkv, index)
        self.cross_k: Tensor | None = None
        self.cross_v: Tensor | None = None

    def nbytes(self) -> int:
        cross = sum(t.numel() * t.element_size() for t in (self.cross_k, self.cross_v) if t is not None)
        return super().nbytes() + cross


class ReferenceLayer(LayerCache):
    """A ``ReferenceCache`` layer: its cross-attention K/V live in the cache's slots; ``cross_k`` /
    ``cross_v`` gather the live sentences' (for the torch step; the fused step reads the slots)."""

    cache: ReferenceCache

    @property
    def cross_k(self) -> Tensor:
        return self.cache.gathered_cross(self.index)[0]

    @property
    def cross_v(self) -> Tensor:
        return self.cache.gathered_cross(self.index)[1]


L = TypeVar("L", bound=LayerCache)


class DecoderCache(ABC, Generic[L]):
    """Rows = sentences x ``beams`` (beams adjacent), each sentence at its own step ``steps``."""

    layer_type: type[L]
    if TYPE_CHECKING:  # (an attribute of DenseCache, a property of ReferenceCache)

        @property
        def mem_mask(self) -> Tensor:
            """(B, 1, 1, S) the live sentences' source masks."""

    WIDEN = 64  # storage positions grow in steps of this many

    def __init__(
        self,
        qkv: list[tuple[Tensor, Tensor] | None],
        heads: int,
        head_dim: int,
        k: int | None,
        beams: int,
        kv_dtype: torch.dtype,
        device: torch.device,
    ):
        self.layers = [self.layer_type(self, w, i) for i, w in enumerate(qkv)]
        self.heads, self.head_dim, self.k, self.beams = heads, head_dim, k, beams
        self.kv_dtype = kv_dtype
        self.device = device
        self._mem_bias: Tensor | None = None
        self.steps = torch.zeros(0, dtype=torch.long, device=device)  # (N,) each row's step
        self.max_len = 0  # storage positions per row

    @classmethod
    def for_model(
        cls, model: Transformer, beams: int, kv_dtype: torch.dtype | None = None, fused_qkv: bool = True
    ) -> DecoderCache:
        """An empty cache for ``model`` (a ``Transformer``), storing self-attention K/V as ``kv_dtype``
        (default: the model's dtype); ``fused_qkv=False``: its layers get no Q/K/V weights (a step
        that reads weight tables of its own, the int8 one)."""
        cfg = model.cfg
        w = model.embed.weight
        qkv = [layer.self_attn.fused_qkv() if fused_qkv else None for layer in model.decoder_layers]
        k = cfg.max_relative_position if cfg.relative_positions else None
        return cls(qkv, cfg.n_heads, cfg.head_dim, k, beams, kv_dtype or w.dtype, w.device)

    # -- sentences join and leave ---------------------------------------------------------------------
    def join(self, cross: list[tuple[Tensor, Tensor]], mem_mask: Tensor, max_len: int) -> None:
        """Add b sentences (``beams`` rows each, at step 0) after the present ones: ``cross`` per
        layer their cross-attention K/V (b, H, S', Dh) (``Transformer.cross_states``), mem_mask
        (b, 1, 1, S'), max_len the most steps any of them may take."""
        n = mem_mask.shape[0] * self.beams
        self._mem_bias = None
        self.steps = torch.cat([self.steps, self.steps.new_zeros(n)])
        if max_len > self.max_len:  # (in steps of WIDEN positions: storage is copied when it widens)
            self._widen(-(-max_len // self.WIDEN) * self.WIDEN)
        self._add_rows(n)
        self._join_cross(cross, mem_mask)

    @abstractmethod
    def _join_cross(self, cross: list[tuple[Tensor, Tensor]], mem_mask: Tensor) -> None:
        """Keep the cross-attention K/V of the sentences that join (after ``_add_rows``)."""

    def select(self, rows: Tensor) -> None:
        """Keep only these rows, in whole sentences (groups of ``beams`` rows of one sentence, in
        any order within the group)."""
        sentences = rows.view(-1, self.beams)[:, 0] // self.beams
        self._mem_bias = None
        self._select_cross(sentences)
        self._select_rows(rows, sentences)
        self.steps = self.steps.index_select(0, rows)

    @abstractmethod
    def _select_cross(self, sentences: Tensor) -> None:
        """Keep only these sentences' cross-attention K/V."""

    def reserve(self, sentences: int, positions: int = 0, long_lived: bool = False) -> None:  # noqa: B027 (a hint; most storage ignores it)
        """A hint: this many sentences may run at once, and rows may reach this many positions
        (storage that grows by copying reserves it); ``long_lived``: the cache serves sentence
        after sentence (a scheduler's search), not one batch (storage that keeps its groups
        hands back the pages of the ones left free)."""

    @abstractmethod
    def reorder(self, beam_idx: Tensor) -> None:
        """Beam search: row i takes the past of row beam_idx[i] (same sentence)."""

    @abstractmethod
    def attend(self, layer: LayerCache, q: Tensor, k: Tensor, v: Tensor, attn: MultiHeadAttention) -> Tensor:
        """A layer's step self-attention (N, H, 1, Dh), each row at its own step."""

    @abstractmethod
    def _widen(self, max_len: int) -> None:
        """Storage for ``max_len`` positions per row (the filled part kept)."""

    @abstractmethod
    def _add_rows(self, n: int) -> None:
        """Storage for n new rows at the end."""

    @abstractmethod
    def _select_rows(self, rows: Tensor, sentences: Tensor) -> None:
        """The storage part of ``select`` (``self.steps`` still the old rows')."""

    # -- a step ------------------------------------------------------------------------------------
    def positions(self) -> Tensor:
        """(N,) each row's step (the position of its token this step); refuses a full row."""
        if len(self.steps) and int(self.steps.max()) >= self.max_len:
            raise RuntimeError(f"a row of the cache is full ({self.max_len} steps)")
        return self.steps

    def advance(self) -> None:
        self.steps += 1

    def memory_bias(self, dtype: torch.dtype) -> Tensor:
        """(B, 1, 1, S) additive cross-attention bias (0, or the dtype's most negative number)."""
        if self._mem_bias is None or self._mem_bias.dtype != dtype:
            bias = torch.zeros(self.mem_mask.shape, dtype=dtype, device=self.device)
            self._mem_bias = bias.masked_fill_(~self.mem_mask, torch.finfo(dtype).min)
        return self._mem_bias

    @property
    def batch_size(self) -> int:
        """Rows (sentences x beams)."""
        return len(self.steps)

    def nbytes(self) -> int:
        return sum(layer.nbytes() for layer in self.layers)

    def _storage(self, rows: int, max_len: int, alloc: Callable[..., Tensor] = torch.zeros) -> Tensor:
        return alloc(rows, self.heads, max_len, self.head_dim, dtype=self.kv_dtype, device=self.device)

    def _regrow(self, rows: int | None, max_len: int, alloc: Callable[..., Tensor] = torch.zeros) -> None:
        """Every layer's self-attention storage as ``rows`` rows (None: as many as now) of ``max_len``
        positions, the filled part copied over."""
        for layer in self.layers:
            for name in ("self_k", "self_v"):
                old = getattr(layer, name)
                new = self._storage(rows if rows is not None else 0 if old is None else len(old), max_len, alloc)
                if old is not None and len(old):
                    new[: len(old), :, : old.shape[2]] = old
                setattr(layer, name, new)


class DenseCache(DecoderCache[DenseLayer]):
    """Row r's past in storage row r (any device): the torch reference."""

    layer_type = DenseLayer
    mem_mask: Tensor

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.mem_mask = torch.zeros(0, 1, 1, 0, dtype=torch.bool, device=self.device)  # (B, 1, 1, S)

    def _join_cross(self, cross: list[tuple[Tensor, Tensor]], mem_mask: Tensor) -> None:
        """Cross-attention K/V of the sentences that join (after ``_add_rows``): appended, the
        cache's padded to the longest source."""
        for layer, (ck, cv) in zip(self.layers, cross):
            layer.cross_k = _pad_cat(layer.cross_k, ck, 2)
            layer.cross_v = _pad_cat(layer.cross_v, cv, 2)
        self.mem_mask = _pad_cat(self.mem_mask, mem_mask, 3, False)

    def _select_cross(self, sentences: Tensor) -> None:
        """The kept sentences' cross-attention K/V, trimmed to the longest kept source."""
        mask = self.mem_mask.index_select(0, sentences)
        used = int(mask.flatten(1).any(0).nonzero().max()) + 1 if mask.numel() and mask.any() else 0
        self.mem_mask = mask[..., :used].contiguous()
        for layer in self.layers:
            assert layer.cross_k is not None and layer.cross_v is not None, "no sentence joined the cache"
            layer.cross_k = layer.cross_k[:, :, :used].index_select(0, sentences)
            layer.cross_v = layer.cross_v[:, :, :used].index_select(0, sentences)

    def _widen(self, max_len: int) -> None:
        self._regrow(None, max_len)  # (zeros: the positions a row has not reached are attended with weight 0)
        self.max_len = max_len

    def _add_rows(self, n: int) -> None:
        for layer in self.layers:
            self_k, self_v = layer.storage()
            layer.self_k = torch.cat([self_k, self._storage(n, self.max_len)])
            layer.self_v = torch.cat([self_v, self._storage(n, self.max_len)])

    def _select_rows(self, rows: Tensor, sentences: Tensor) -> None:
        for layer in self.layers:
            self_k, self_v = layer.storage()
            layer.self_k = self_k.index_select(0, rows)
            layer.self_v = self_v.index_select(0, rows)

    def reorder(self, beam_idx: Tensor) -> None:
        """Only the moved rows' filled part is copied (gathered before it is scattered)."""
        moved = (beam_idx != torch.arange(len(beam_idx), device=beam_idx.device)).nonzero().flatten()
        if moved.numel() == 0:
            return
        sources = beam_idx.index_select(0, moved)
        t = int(self.steps.max())
        for layer in self.layers:
            for buf in layer.storage():
                part = buf[:, :, :t]
                part.index_copy_(0, moved, part.index_select(0, sources))

    def attend(self, layer: LayerCache, q: Tensor, k: Tensor, v: Tensor, attn: MultiHeadAttention) -> Tensor:
        """Every row over positions 0 .. max step, masked beyond its own step; relative index
        clip(j - t_r, k) + k per row.  Storage is zero-initialised, so masked positions hold finite
        numbers that get weight 0."""
        steps = self.steps
        rows = torch.arange(len(steps), device=steps.device)
        self_k, self_v = layer.self_k, layer.self_v
        assert self_k is not None and self_v is not None, "the cache has no storage yet"
        self_k[rows, :, steps] = k[:, :, 0].to(self_k.dtype)
        self_v[rows, :, steps] = v[:, :, 0].to(self_v.dtype)
        T = int(steps.max()) + 1
        j = torch.arange(T, device=steps.device)
        d = j.unsqueeze(0) - steps.unsqueeze(1)  # (N, T): j - t_r
        mask = (d <= 0)[:, None, None, :]  # (N, 1, 1, T)
        rel = (d.clamp(-attn.k, attn.k) + attn.k)[:, None, None, :] if attn.k is not None else None
        k_all, v_all = self_k[:, :, :T].to(q.dtype), self_v[:, :, :T].to(q.dtype)
        return attn.attend(q, k_all, v_all, mask, rel)  # (N, H, 1, Dh)


class ReferenceCache(DecoderCache[ReferenceLayer]):
    """Storage rows in groups of ``beams``, read by reference (the C step kernels)."""

    layer_type = ReferenceLayer

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.slots = torch.zeros(0, dtype=torch.long)  # (N,) the storage row each row writes to
        self.src = torch.zeros(0, 0, dtype=torch.long)  # (N, max_len): storage row of row r's position j
        self.compacted = torch.zeros(0, dtype=torch.long)  # (B,) positions below: in the group's first row
        self.free: list[int] = []  # free storage groups (storage rows g*beams .. g*beams + beams - 1)
        self.groups = 0  # storage groups allocated
        self._reorders = 0
        self._clock = 0  # steps taken
        self._idle: dict[int, int] = {}  # free groups whose pages are still resident -> the step they were freed
        self._long_lived = False  # (reserve)
        self._reserved = 16
        self._reserved_len = 0
        self.cross_store: list[tuple[Tensor, Tensor]] = []  # per layer: the cross K/V slots (groups, H, S, Dh)
        self.cross_mask = torch.zeros(0, 0, dtype=torch.bool)  # (groups, S)
        self.cross_lens = torch.zeros(0, dtype=torch.long)  # (groups,)
        self._store_bias: Tensor | None = None

    def reserve(self, sentences: int, positions: int = 0, long_lived: bool = False) -> None:
        """Storage for this many sentences at once and ``positions`` per row (allocated at the
        first join), so the cache does not grow by copying as a search fills up.  Uninitialised
        storage: the pages a row never writes are never touched.  ``long_lived``: groups left
        free hand their pages back (``advance``); a one-batch cache is freed whole at its end."""
        self._reserved = max(self._reserved, sentences)
        self._reserved_len = max(self._reserved_len, positions)
        self._long_lived = self._long_lived or long_lived

    def join(self, cross: list[tuple[Tensor, Tensor]], mem_mask: Tensor, max_len: int) -> None:
        super().join(cross, mem_mask, max(max_len, self._reserved_len))

    def _widen(self, max_len: int) -> None:
        self._regrow(self.groups * self.beams, max_len, torch.empty)  # (the kernel reads only positions written)
        src = torch.zeros(len(self.src), max_len, dtype=torch.long)
        src[:, : self.src.shape[1]] = self.src
        self.src = src
        self.max_len = max_len

    def _add_rows(self, n: int) -> None:
        need = n // self.beams
        if len(self.free) < need:  # grow the storage: at least double it (at first: what was reserved)
            more = max(need - len(self.free), self.groups, self._reserved - self.groups)
            self._regrow((self.groups + more) * self.beams, self.max_len, torch.empty)
            self.free.extend(range(self.groups, self.groups + more))
            self.groups += more
        self.free.sort(reverse=True)  # (lowest groups first: storage stays dense)
        groups = torch.tensor([self.free.pop() for _ in range(need)], dtype=torch.long)
        for g in groups.tolist():
            self._idle.pop(g, None)
        slots = (groups.unsqueeze(1) * self.beams + torch.arange(self.beams)).view(-1)
        self.slots = torch.cat([self.slots, slots])
        self.src = torch.cat([self.src, torch.zeros(n, self.max_len, dtype=torch.long)])
        self.compacted = torch.cat([self.compacted, torch.zeros(need, dtype=torch.long)])

    def sentence_groups(self) -> Tensor:
        """(B,) the storage group (and cross-attention slot) of each live sentence, in cache order."""
        return self.slots.view(-1, self.beams)[:, 0] // self.beams

    def _join_cross(self, cross: list[tuple[Tensor, Tensor]], mem_mask: Tensor) -> None:
        b, S = mem_mask.shape[0], mem_mask.shape[-1]
        G, width = self.groups, self.cross_mask.shape[1]
        if G > len(self.cross_mask) or S > width:  # grow the slots (sources in steps of 32 positions)
            width = max(width, -(-S // 32) * 32)
            mask = torch.zeros(G, width, dtype=torch.bool)
            mask[: len(self.cross_mask), : self.cross_mask.shape[1]] = self.cross_mask
            lens = torch.zeros(G, dtype=torch.long)
            lens[: len(self.cross_lens)] = self.cross_lens
            self.cross_mask, self.cross_lens = mask, lens
            live = self.sentence_groups()[:-b]  # (the sentences already running keep their slots)
            store = []
            for i, (ck, _) in enumerate(cross):
                pair: list[Tensor] = []
                for j in (0, 1):
                    # uninitialised: a slot's pages are touched only once a sentence uses it
                    new = ck.new_empty(G, self.heads, width, self.head_dim)
                    if self.cross_store and len(live):
                        old = self.cross_store[i][j]
                        new[live, :, : old.shape[2]] = old[live]
                    pair.append(new)
                store.append((pair[0], pair[1]))
            self.cross_store = store
        g = self.sentence_groups()[-b:]
        for (xk, xv), (ck, cv) in zip(self.cross_store, cross):
            xk[g, :, :S] = ck  # (past the source: never written, so its pages are never touched;
            xv[g, :, :S] = cv  # the step kernel reads each slot up to its length, gathered_cross masks)
        real = mem_mask.view(b, S)
        self.cross_mask[g] = False
        self.cross_mask[g, :S] = real
        self.cross_lens[g] = real.sum(1)  # (sources are right-padded: the real tokens come first)
        self._store_bias = None

    def _select_cross(self, sentences: Tensor) -> None:
        pass  # (a sentence's slot is its storage group, kept or freed with it)

    def cross_tables(self) -> tuple[list[tuple[Tensor, Tensor]], Tensor, Tensor, Tensor]:
        """For the fused step kernel: per layer the cross K/V slots (groups, H, S, Dh), the additive
        bias (groups, S), each live sentence's slot (B,), and each slot's real source length."""
        if self._store_bias is None:
            self._store_bias = torch.zeros(self.cross_mask.shape).masked_fill_(~self.cross_mask, torch.finfo(torch.float32).min)
        return self.cross_store, self._store_bias, self.sentence_groups(), self.cross_lens

    @property
    def mem_mask(self) -> Tensor:
        """(B, 1, 1, S) the live sentences' source masks (gathered from the slots, for the torch step)."""
        groups = self.sentence_groups()
        used = int(self.cross_lens[groups].max()) if len(groups) else 0
        return self.cross_mask[groups, :used].view(len(groups), 1, 1, used)

    def gathered_cross(self, layer: int) -> tuple[Tensor, Tensor]:
        """The live sentences' cross K/V (B, H, S, Dh), gathered from the slots (for the torch step)."""
        groups = self.sentence_groups()
        used = int(self.cross_lens[groups].max()) if len(groups) else 0
        xk, xv = self.cross_store[layer]
        past = ~self.cross_mask[groups, :used].view(len(groups), 1, used, 1)  # (a slot past its source is uninitialised)
        return xk[groups, :, :used].masked_fill(past, 0), xv[groups, :, :used].masked_fill(past, 0)

    def nbytes(self) -> int:
        slots = sum(t.numel() * t.element_size() for pair in self.cross_store for t in pair)
        return super().nbytes() + slots

    def _select_rows(self, rows: Tensor, sentences: Tensor) -> None:
        kept = set(sentences.tolist())
        freed = [int(g) for s, g in enumerate(self.sentence_groups().tolist()) if s not in kept]
        if self._long_lived:
            self._idle.update((g, self._clock) for g in freed)
        self.free.extend(freed)
        self.slots = self.slots.view(-1, self.beams).index_select(0, sentences).view(-1)
        self.src = self.src.index_select(0, rows)
        self.compacted = self.compacted.index_select(0, sentences)

    def advance(self) -> None:
        super().advance()
        self._clock += 1
        if self._clock % RELEASE_AFTER == 0 and self._idle:
            self._release([g for g, freed in self._idle.items() if self._clock - freed >= RELEASE_AFTER])

    def _release(self, groups: list[int]) -> None:
        """The storage pages of these free groups (their self-attention K/V rows and cross-attention
        slots) go back to the system (``rendition.model.weights.release_rows``).  Storage is reserved
        for ``reserve``'s sentences and positions; a group left free for ``RELEASE_AFTER`` steps
        (the lowest free groups are taken first, so these are the ones a burst used) hands its pages
        back: what stays resident follows the sentences running lately, not every group and
        position the search has used, and the groups in steady use are not faulted in again."""
        for g in groups:
            del self._idle[g]
            for layer in self.layers:
                for buf in (layer.self_k, layer.self_v):
                    if buf is not None:
                        release_rows(buf, g * self.beams, (g + 1) * self.beams)
            for pair in self.cross_store:
                for buf in pair:
                    release_rows(buf, g, g + 1)

    def reorder(self, beam_idx: Tensor) -> None:
        """Only the index table moves."""
        self.src = self.src.index_select(0, beam_idx)
        self._reorders += 1
        if self._reorders % COMPACT_EVERY == 0:
            self.compact()

    def begin_step(self) -> tuple[int, Tensor]:
        """Record each row's storage row for its position this step; (largest step, steps)."""
        steps = self.positions()
        self.src.scatter_(1, steps.unsqueeze(1), self.slots.unsqueeze(1))
        return int(steps.max()) if len(steps) else 0, steps

    def attend(self, layer: LayerCache, q: Tensor, k: Tensor, v: Tensor, attn: MultiHeadAttention) -> Tensor:
        """The C kernel stores k, v and reads each row's past where it lies, at the row's own step."""
        t, steps = self.begin_step()  # (the same for every layer)
        rk = attn.rel_k if attn.k is not None else None
        rv = attn.rel_v if attn.k is not None else None
        self_k, self_v = layer.self_k, layer.self_v
        assert self_k is not None and self_v is not None, "the cache has no storage yet"
        return attention_kernels.rel_step_attention(
            q, k, v, self_k, self_v, self.src, t, rk, rv, attn.k or 0, attn.head_dim**-0.5, self.beams, steps
        )  # (N, H, 1, Dh)

    def compact(self) -> None:
        """beams > 1: move each sentence's shared past into one storage row.

        The beams of a sentence soon share most of their past (position j's key and value are the
        same node for all of them), but that node sits in whichever storage row the beams'
        ancestor at step j wrote to, so a row's past hops between its sentence's storage rows.
        Sharing is prefix-closed, so each sentence has a frontier f: its beams share positions
        j < f.  Those positions' K/V are copied into the sentence group's first storage row, and
        every beam's ``src`` points there: the shared past becomes one contiguous run per head,
        read once from memory for all beams.  Positions move once per sentence (``compacted``)."""
        n = self.beams
        N = len(self.steps)
        if n == 1 or N == 0:
            return
        G = N // n
        filled = self.steps.view(G, n)[:, 0]  # (G,) positions written so far
        lo, hi = int(self.compacted.min()), int(filled.max())
        if hi <= lo:
            return
        w = hi - lo
        src = self.src[:, lo:hi].view(G, n, w)
        lead = src[:, 0]  # (G, w)
        valid = torch.arange(lo, hi).unsqueeze(0) < filled.unsqueeze(1)
        shared = ((src == lead.unsqueeze(1)).all(1) & valid).cumprod(1).bool()  # (G, w): j < frontier
        base = self.slots.view(G, n)[:, :1]  # (G, 1): the group's first storage row
        move = shared & (lead != base)
        if move.any():
            g, j = move.nonzero(as_tuple=True)
            to, frm, pos = base[g, 0], lead[g, j], j + lo
            for layer in self.layers:
                for buf in layer.storage():
                    buf[to, :, pos] = buf[frm, :, pos]  # (moves, H, Dh)
            self.src[:, lo:hi] = torch.where(shared.unsqueeze(1), base.unsqueeze(-1), src).view(N, w)
        self.compacted = torch.maximum(self.compacted, lo + shared.sum(1))
