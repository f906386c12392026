"""CPU kernels for Shaw et al.'s relative self-attention at inference (CPU, float32, no gradients).

``rel_step_attention``: one decoding step over a by-reference KV cache.  A row's past keys and
values are not copied when beam search reorders rows or sentences finish (``model.translation.cache.ReferenceCache``):
row r's key at position j lives in storage row ``src[r, j]``, and the kernel reads it there.  Per
(row, head), after storing the step's own key and value in the row's storage row:

    e_j = q . K[src[r, j], j] + q . w^K[clip(j - t, k)]     (the k + 1 relative logits computed once)
    p   = softmax(e)
    z   = sum_j p_j V[src[r, j], j] + sum_c (sum of p_j with clip(j - t, k) = c) w^V[c]

which is the attention of the query at step t exactly as ``MultiHeadAttention.attend`` computes it
on a dense cache.  The beams of a sentence are taken together, up to four rows per pass over the
positions: their shared past (``DecoderCache.compact``) is then read from memory once, not once per
beam, and each row's arithmetic stays that of the row alone.

``rel_self_attention``: the encoder's full relative self-attention with a key mask, straight from
the fused Q/K/V projections to the heads-side-by-side layout the output projection takes (no
split/merge copies, no (B, H, T, T) tensors).

The C code is ``model/kernels/csrc/attention.c`` (built at install time, ``rendition.model.kernels.native``);
``RENDITION_ATTENTION_KERNEL=0`` turns it off.  Where it is unavailable, or off CPU / float32, or
with gradients, the torch path runs.
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from rendition.model.kernels import native
from rendition.model.kernels.native import ptr as _ptr

if TYPE_CHECKING:
    from rendition.model.translation.transformer import Transformer


def kernel() -> ctypes.CDLL | None:
    """The native library, or None (not built, or ``RENDITION_ATTENTION_KERNEL=0``)."""
    return native.kernel("RENDITION_ATTENTION_KERNEL")


SUPPORTED_HEAD_DIMS = (16, 32, 64, 128)
KV_DTYPES = (torch.float32, torch.float16)  # K/V storage the step kernel reads


def serves(model: Transformer) -> bool:
    """Whether a model is one these kernels serve: CPU float32 weights, eval mode, a supported head size."""
    w = model.embed.weight
    return (
        not model.training
        and w.device.type == "cpu"
        and w.dtype == torch.float32
        and model.cfg.head_dim in SUPPORTED_HEAD_DIMS
    )


def _tables(rel_k: Tensor | None, rel_v: Tensor | None, max_rel: int) -> tuple[Tensor | None, Tensor | None, int]:
    """The relative tables as the kernels take them: contiguous, detached, w^V only with w^K,
    and k = 0 without tables."""
    if rel_k is None:
        return None, None, 0
    wv = rel_v.detach().contiguous() if rel_v is not None else None
    return rel_k.detach().contiguous(), wv, max_rel


def _half(store: Tensor) -> int:
    """1 for float16 K/V storage, 0 for float32."""
    if store.dtype not in KV_DTYPES:
        raise ValueError(f"K/V storage must be one of {KV_DTYPES}, not {store.dtype}")
    return int(store.dtype == torch.float16)


def _check(rc: int, head_dim: int) -> None:
    if rc != 0:
        raise ValueError(f"head_dim {head_dim} not supported by the attention kernels {SUPPORTED_HEAD_DIMS}")


def rel_step_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    k_store: Tensor,
    v_store: Tensor,
    src: Tensor,
    t: int,
    rel_k: Tensor | None,
    rel_v: Tensor | None,
    max_rel: int,
    scale: float = 1.0,
    beams: int = 1,
    steps: Tensor | None = None,
) -> Tensor:
    """q, k, v (N, H, 1, Dh): the step's queries (multiplied by ``scale``, Dh^-0.5, in the kernel), keys and values;
    k_store / v_store (S, H, T, Dh) contiguous storage, into which k and v are written at
    (src[:, t], :, t); src (N, >= t+1) int64 storage rows; rel_k / rel_v (2k+1, Dh) or None,
    max_rel = k; beams: rows per sentence (adjacent), read in groups; steps (N,) int64 contiguous
    or None: each row's own step in place of t (equal within a sentence).  Returns (N, H, 1, Dh)."""
    so = kernel()
    assert so is not None, "rel_step_attention needs the C kernel (check usable() first)"
    N, H, _, Dh = q.shape
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    out = torch.empty_like(q)
    wk, wv, max_rel = _tables(rel_k, rel_v, max_rel)
    args = native.StepAttentionArgs(
        q=q.data_ptr(), k=k.data_ptr(), v=v.data_ptr(), k_store=k_store.data_ptr(), v_store=v_store.data_ptr(),
        src=src.data_ptr(), src_stride=src.stride(0), steps=_ptr(steps), rel_k=_ptr(wk), rel_v=_ptr(wv), out=out.data_ptr(), rows=N,
        beams=beams, heads=H, max_len=v_store.shape[2], head_dim=Dh, t=t, max_rel=max_rel, scale=scale,
        half=_half(k_store), threads=torch.get_num_threads(),
    )  # fmt: skip
    rc = so.rk_step_attention(ctypes.byref(args))
    _check(rc, Dh)
    return out


def rel_self_attention(
    qkv: Tensor, key_mask: Tensor, heads: int, rel_k: Tensor | None, rel_v: Tensor | None, max_rel: int
) -> Tensor:
    """Encoder self-attention in one call: qkv (B, T, 3D) the fused Q/K/V projections, key_mask
    (B, T) True for real tokens, rel_k / rel_v (2k+1, Dh) or None, max_rel = k.  Returns (B, T, D)
    with the heads side by side: what ``MultiHeadAttention`` computes before its output projection."""
    so = kernel()
    assert so is not None, "rel_self_attention needs the C kernel (check usable() first)"
    B, T, D3 = qkv.shape
    D = D3 // 3
    Dh = D // heads
    qkv = qkv.contiguous()
    km = key_mask.to(torch.float32).contiguous()
    out = qkv.new_empty(B, T, D)
    keys = torch.empty(B, T + 1, dtype=torch.long)  # (scratch)
    wk, wv, max_rel = _tables(rel_k, rel_v, max_rel)
    args = native.SelfAttentionArgs(
        qkv=qkv.data_ptr(), key_mask=km.data_ptr(), rel_k=_ptr(wk), rel_v=_ptr(wv), out=out.data_ptr(),
        scratch=keys.data_ptr(), batch=B, len=T, heads=heads, head_dim=Dh, max_rel=max_rel, scale=Dh**-0.5,
        threads=torch.get_num_threads(),
    )  # fmt: skip
    rc = so.rk_self_attention(ctypes.byref(args))
    _check(rc, Dh)
    return out
