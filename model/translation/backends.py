"""How a ``Transformer`` runs at inference: one back-end object per model, chosen once at load.

A back end has the interface beam search drives (``rendition.model.translation.search``): ``cfg``,
``device``, ``encode(src)``, ``cross_states(mem)``, ``new_cache(beams, kv_dtype)``,
``decode_step(tokens, cache, output=None)`` and ``output_projection(ids)`` (the output projection
restricted to some tokens, which ``decode_step`` then computes the logits of: a vocabulary shortlist,
``rendition.model.translation.shortlist``; ``shortlist`` holds it, or None).  All compute the same functions (the tests compare them):

* ``TorchBackend`` ("torch"): the reference model itself, ``Transformer`` as written, with a
  ``DenseCache``; any device and dtype (CUDA runs this one);
* ``AttentionKernelBackend`` ("cpu-attention"): torch for the projections, the C attention kernels
  (``rendition.model.kernels.attention``) for the encoder's relative self-attention and for the decoding
  step's attention over a ``ReferenceCache`` (keys and values kept by reference);
* ``FusedCPUBackend`` ("fused-cpu"): the encoder and each decoding step in one C call over torch's
  MKL sgemm (``rendition.model.kernels.fused_cpu``), with a ``ReferenceCache``; with ``compute_type="int8"``
  its linear maps run in int8 (the only back end that does).

``select_backend(model)`` takes the fastest one that can run the model where it is (CPU float32
inference and the native library for the last two; ``RENDITION_FUSED_KERNEL=0`` /
``RENDITION_ATTENTION_KERNEL=0`` rule them out).  A back end checks, once per batch, that the model
is still where it was chosen for (its weights' device and dtype, eval mode).
"""

from __future__ import annotations

from typing import cast

import torch
import torch.nn.functional as F
from torch import Tensor

from rendition.model.kernels import attention as attention_kernels
from rendition.model.kernels.fused_cpu import FusedTransformer, QuantizedWeight
from rendition.model.translation.cache import DecoderCache, DenseCache, ReferenceCache
from rendition.model.translation.shortlist import Shortlist
from rendition.model.translation.transformer import Transformer, TransformerConfig


class TorchBackend:
    """The reference: ``Transformer.encode`` / ``cross_states`` / ``decode_step`` with a dense cache."""

    name = "torch"
    cache_type: type[DecoderCache] = DenseCache
    fused_qkv = True  # whether caches carry the model's fused Q/K/V weights (the torch step reads them)
    shortlist: Shortlist | None = None  # searches on this back end compute logits over its candidates only

    def __init__(self, model: Transformer):
        self.model = model
        w = model.embed.weight
        self._placed = (w.device, w.dtype)

    @staticmethod
    def usable(model: Transformer) -> bool:
        """Whether this back end can run ``model`` as it is now (the reference runs any)."""
        return True

    @property
    def cfg(self) -> TransformerConfig:
        return self.model.cfg

    def _check_placement(self) -> None:
        w = self.model.embed.weight
        if (w.device, w.dtype) != self._placed:
            raise RuntimeError(
                f"the {self.name} back end was chosen for a model on {self._placed[0]} in {self._placed[1]}; it is now on "
                f"{w.device} in {w.dtype} (choose the back end again after moving the model)"
            )

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        self._check_placement()
        return self.model.encode(src)

    def cross_states(self, mem: Tensor) -> list[tuple[Tensor, Tensor]]:
        return self.model.cross_states(mem)

    @property
    def device(self) -> torch.device:
        return self._placed[0]

    def new_cache(self, beams: int, kv_dtype: torch.dtype | None = None) -> DecoderCache:
        """An empty cache for a search (``rendition.model.translation.search``) with ``beams`` rows per sentence."""
        return self.cache_type.for_model(self.model, beams, kv_dtype, self.fused_qkv)

    def output_projection(self, ids: Tensor) -> Tensor | QuantizedWeight:
        """The output projection's columns for the token ``ids`` (V',): what ``decode_step`` takes as
        ``output`` to compute the logits of those tokens only (a vocabulary shortlist).  Float (D, V')
        columns here; the int8 fused back end gives quantised rows."""
        return self.model.output_weight_t().index_select(1, ids.to(self.device))

    def decode_step(self, tokens: Tensor, cache: DecoderCache, output: Tensor | None = None) -> Tensor:
        """Logits (N, V) of the next token, or (N, V') over the columns ``output_projection`` gave."""
        return self.model.decode_step(tokens, cache, output)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"


class _CPUBackend(TorchBackend):
    """CPU float32 inference with the native kernels: keys and values kept by reference."""

    cache_type = ReferenceCache

    def _check_placement(self) -> None:
        super()._check_placement()
        if self.model.training:
            raise RuntimeError(f"the {self.name} back end serves inference only (the model is in training mode)")

    def new_cache(self, beams: int, kv_dtype: torch.dtype | None = None) -> DecoderCache:
        # The step kernel stores float32 or float16 K/V; other storage (bfloat16) is kept dense and
        # stepped by the reference.
        by_reference = kv_dtype is None or kv_dtype in attention_kernels.KV_DTYPES
        return (self.cache_type if by_reference else DenseCache).for_model(self.model, beams, kv_dtype, self.fused_qkv)


class AttentionKernelBackend(_CPUBackend):
    """Torch for the projections; the encoder's relative self-attention and the step's attention
    over the by-reference cache in C (``rendition.model.kernels.attention``)."""

    name = "cpu-attention"

    @staticmethod
    def usable(model: Transformer) -> bool:
        return attention_kernels.serves(model) and attention_kernels.kernel() is not None

    @torch.no_grad()
    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """``Transformer.encode`` with each layer's attention in one C call (one fused Q/K/V product,
        then the whole relative attention; no split/merge copies, no (B, H, T, T) tensors)."""
        self._check_placement()
        model = self.model
        if not model.cfg.relative_positions:  # (the torch path is already one scaled_dot_product_attention)
            return model.encode(src)
        model.check_source(src)
        mask = (src != model.cfg.pad_id)[:, None, None, :]
        x = model.embed_tokens(src)
        for layer in model.encoder_layers:
            sa = layer.self_attn
            qkv = F.linear(layer.self_attn_norm(x), *sa.fused_qkv())  # (B, T, 3D)
            a = attention_kernels.rel_self_attention(qkv, mask[:, 0, 0], sa.n_heads, sa.rel_k, sa.rel_v, sa.k or 0)
            x = x + sa.out_proj(a)
            x = x + layer.ffn.infer(layer.ffn_norm(x))
        return model.encoder_norm(x), mask


class FusedCPUBackend(_CPUBackend):
    """The encoder and each decoding step in one C call (``rendition.model.kernels.fused_cpu``)."""

    name = "fused-cpu"

    def __init__(self, model: Transformer, compute_type: str = "float32"):
        super().__init__(model)
        self.fused = FusedTransformer(model, compute_type)
        # int8: every step reads the int8 tables, so no float32 Q/K/V copy is made for the caches
        # (after ``release_float_weights`` it would be one of zeros)
        self.fused_qkv = not self.fused.int8

    @staticmethod
    def usable(model: Transformer) -> bool:
        return FusedTransformer.usable(model)

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        self._check_placement()
        return self.fused.encode(src)

    def new_cache(self, beams: int, kv_dtype: torch.dtype | None = None) -> DecoderCache:
        if self.fused.int8 and not (kv_dtype is None or kv_dtype in attention_kernels.KV_DTYPES):
            raise ValueError(f"the int8 compute type stores K/V in float32 or float16, not {kv_dtype}")  # (only the fused step runs int8)
        self.fused.refresh()  # (the cache's steps read the weights as they are now)
        return super().new_cache(beams, kv_dtype)

    def output_projection(self, ids: Tensor) -> Tensor | QuantizedWeight:
        """float32: the (D, V') columns of the output projection; int8: the quantised rows of the
        tied embedding for ``ids``."""
        if self.fused.int8:
            return self.fused.output_rows(ids)
        return super().output_projection(ids)

    def decode_step(self, tokens: Tensor, cache: DecoderCache, output: Tensor | QuantizedWeight | None = None) -> Tensor:
        if isinstance(cache, ReferenceCache):
            return self.fused.decode_step(tokens, cache, output)
        # (a dense cache: bfloat16 K/V storage, which int8 refuses, so ``output`` is float columns)
        return self.model.decode_step(tokens, cache, cast("Tensor | None", output))


BACKENDS: tuple[type[TorchBackend], ...] = (FusedCPUBackend, AttentionKernelBackend, TorchBackend)  # fastest first


def select_backend(model: Transformer, compute_type: str = "float32") -> TorchBackend:
    """The fastest back end that can run ``model`` as it is now (device, dtype, mode, kernels);
    ``compute_type="int8"``: the fused CPU back end in int8 (``rendition.model.kernels.compute_type``
    decides when it can run)."""
    if compute_type == "int8":
        return FusedCPUBackend(model, "int8")
    for cls in BACKENDS[:-1]:
        if cls.usable(model):
            return cls(model)
    return TorchBackend(model)
