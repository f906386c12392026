"""The translator's encoder and its decoding step, each in one C call (CPU float32 inference).

A decoding step is about a hundred small torch calls (layer norms, projections, bias adds,
residual adds, the cross-attention's reshapes and softmax), each with its own dispatch cost; with
few rows, as at the end of every batch, those costs are most of the step.  Here the step runs as
one C function over the same weights:

    x = E[token] * sqrt(D) (+ sinusoidal position)
    per layer:  x += W_o SelfAttn(LN(x)) + b_o;  x += W_o' CrossAttn(LN(x)) + b_o';  x += FFN(LN(x))
    logits = LN(x) @ E^T

and so does the encoder, which computes only the real tokens of a padded batch: they are packed
into rows, each keeping its original position for the relative distances (and the sinusoidal
table), and the output has zeros at padding (which cross-attention masks out anyway).

The products are the very MKL ``sgemm`` that torch calls (its address is taken from torch's CPU
library; same arguments, so every product is bitwise the one ``x @ W.t()`` gives), the biases,
ReLU and residual adds are applied while the rows are in cache, and the decoder's self-attention
is the by-reference kernel of ``model.kernels.attention`` (one source, compiled in).  Results
equal the torch path up to float rounding (layer norm and softmax sums in another order, biases
added after the product instead of before).

Used by ``Transformer.encode`` and, for a by-reference cache (``model.translation.cache.RowHistory``),
``Transformer.decode_step``, when torch has an MKL ``sgemm`` and a C compiler is present;
``RENDITION_FUSED_KERNEL=0`` turns both off.
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from model.kernels import attention as attention_kernels
from model.kernels import ckernel

if TYPE_CHECKING:
    from model.translation.cache import DecoderCache
    from model.translation.transformer import Transformer

_STEP_SOURCE = r"""
#include <stddef.h>
/* Fortran BLAS sgemm (column-major).  Integer arguments are pointers to 64-bit values: an LP64 BLAS
   reads their low 32 bits (little-endian), an ILP64 one all 64. */
typedef void (*sgemm_t)(const char*, const char*, const long*, const long*, const long*, const float*,
                        const float*, const long*, const float*, const long*, const float*, float*, const long*);
static sgemm_t SGEMM = NULL;
void set_sgemm(void* fn) { SGEMM = (sgemm_t)fn; }

/* out (M, N), rows ldo apart = a (M, K), rows lda apart, @ W^T, W (N, K) row-major: the call torch
   makes for a @ W.t() */
static void mm_wt(const float* a, long lda, const float* W, float* out, long ldo, long M, long N, long K) {
  const float one = 1.0f, zero = 0.0f;
  SGEMM("T", "N", &N, &M, &K, &one, W, &K, a, &lda, &zero, out, &ldo);
}

static void layer_norm(const float* x, float* y, const float* g, const float* b, long N, long D, float eps,
                       int threads) {
  #pragma omp parallel for num_threads(threads) schedule(static) if(threads > 1 && N >= 16)
  for (long r = 0; r < N; ++r) {
    const float* xr = x + r * D;
    float* yr = y + r * D;
    float mean = 0.0f, var = 0.0f;
    for (long j = 0; j < D; ++j) mean += xr[j];
    mean /= (float)D;
    for (long j = 0; j < D; ++j) { const float d = xr[j] - mean; var += d * d; }
    const float rstd = 1.0f / sqrtf(var / (float)D + eps);
    for (long j = 0; j < D; ++j) yr[j] = (xr[j] - mean) * rstd * g[j] + b[j];
  }
}

/* y (N, D) += (t (N, D) + b) : a residual branch's output projection, its bias added after the product */
static void add_bias_residual(float* x, const float* t, const float* b, long N, long D, int threads) {
  #pragma omp parallel for num_threads(threads) schedule(static) if(threads > 1 && N >= 16)
  for (long r = 0; r < N; ++r)
    for (long j = 0; j < D; ++j) x[r * D + j] += t[r * D + j] + b[j];
}

/* y (N, D), rows ld apart: += b (D), then the ReLU if relu */
static void add_bias(float* y, long ld, const float* b, long N, long D, int relu, int threads) {
  #pragma omp parallel for num_threads(threads) schedule(static) if(threads > 1 && N >= 16)
  for (long r = 0; r < N; ++r) {
    float* yr = y + r * ld;
    if (relu) for (long j = 0; j < D; ++j) { const float v = yr[j] + b[j]; yr[j] = v > 0.0f ? v : 0.0f; }
    else for (long j = 0; j < D; ++j) yr[j] += b[j];
  }
}

/* x (N, D) = E[id] * emb_scale (+ a sinusoidal row: P[prow[r]], or P[0] without prow), id = ids[r],
   or ids[idx[r]] with idx */
static void embed_rows(float* x, const float* E, const long* ids, const long* idx, long N, long D,
                       float emb_scale, const float* P, const long* prow) {
  for (long r = 0; r < N; ++r) {
    const float* e = E + ids[idx ? idx[r] : r] * D;
    const float* p = P ? P + (prow ? prow[r] : 0) * D : NULL;
    for (long j = 0; j < D; ++j) x[r * D + j] = e[j] * emb_scale + (p ? p[j] : 0.0f);
  }
}

/* qkv (N, 3D) = LN(x) @ Wqkv^T + b (h: the normalised rows) */
static void qkv_block(const float* x, float* h, float* qkv, const float* g, const float* beta, const float* w,
                      const float* b, long N, long D, float eps, int threads) {
  layer_norm(x, h, g, beta, N, D, eps, threads);
  mm_wt(h, D, w, qkv, 3 * D, N, 3 * D, D);
  add_bias(qkv, 3 * D, b, N, 3 * D, 0, threads);
}

/* x += relu(LN(x) @ W1^T + b1) @ W2^T + b2 (h, ff: scratch) */
static void ffn_block(float* x, float* h, float* ff, const float* g, const float* beta, const float* w1,
                      const float* b1, const float* w2, const float* b2, long N, long D, long F, float eps,
                      int threads) {
  layer_norm(x, h, g, beta, N, D, eps, threads);
  mm_wt(h, D, w1, ff, F, N, F, D);
  add_bias(ff, F, b1, N, F, 1, threads);
  mm_wt(ff, F, w2, h, D, N, D, F);
  add_bias_residual(x, h, b2, N, D, threads);
}

/* Cross-attention of one query row and one head: q (Dh), Kc/Vc (S, Dh) of its sentence and head,
   bias (S) additive (0 or the most negative float). */
#define CROSS_HEAD(NAME, NB)                                                                         \
static void NAME(const float* qr, const float* Kc, const float* Vc, const float* bias, long S,       \
                 float scale, float* orow) {                                                         \
  float e[S];                                                                                        \
  v16 q[NB], o[NB];                                                                                  \
  for (int b = 0; b < (NB); ++b) { q[b] = scale * load16(qr + 16 * b); o[b] = (v16){0}; }           \
  float m = -FLT_MAX;                                                                                \
  for (long j = 0; j < S; ++j) {                                                                     \
    const float* kj = Kc + j * 16 * (NB);                                                            \
    v16 a = q[0] * load16(kj);                                                                       \
    for (int b = 1; b < (NB); ++b) a += q[b] * load16(kj + 16 * b);                                  \
    e[j] = hsum16(a) + bias[j];                                                                      \
    m = e[j] > m ? e[j] : m;                                                                         \
  }                                                                                                  \
  float sum = 0.0f;                                                                                  \
  for (long j = 0; j < S; ++j) { e[j] = expf(e[j] - m); sum += e[j]; }                               \
  const float inv = 1.0f / sum;                                                                      \
  for (long j = 0; j < S; ++j) {                                                                     \
    const float p = e[j] * inv;                                                                      \
    const float* vj = Vc + j * 16 * (NB);                                                            \
    for (int b = 0; b < (NB); ++b) o[b] += p * load16(vj + 16 * b);                                  \
  }                                                                                                  \
  for (int b = 0; b < (NB); ++b) memcpy(orow + 16 * b, &o[b], sizeof(v16));                          \
}
CROSS_HEAD(cross_16, 1)
CROSS_HEAD(cross_32, 2)
CROSS_HEAD(cross_64, 4)
CROSS_HEAD(cross_128, 8)

/* Weights: W[0] embedding (V, D), W[1], W[2] final layer norm, W[3] output projection (D, V), then
   per layer NW pointers (in this order).  Per-step buffers: C per layer the cross-attention K, V
   (B, H, S, Dh), the self-attention K, V storage (slots, H, T, Dh): floats, or halves
   with half = 1. */
enum { LN1_G, LN1_B, W_QKV, B_QKV, REL_K, REL_V, W_O, B_O, LN2_G, LN2_B, WX_Q, BX_Q, WX_O, BX_O,
       LN3_G, LN3_B, W_1, B_1, W_2, B_2, NW };

/* tokens (N,) at step t; src (N, ld) storage rows (column t already set to each row's slot);
   bias (B, S); pos (D) or NULL; x, h (N, D), qkv (N, 3D), ff (N, F) scratch; logits (N, V).
   Rows are sentences x beams (beams adjacent).  Returns 0, or -1 (no sgemm / unsupported Dh). */
int decoder_step(const float* const* W, void* const* C, int half, long L, const long* tokens, long N,
                 long beams, long D, long H, long F, long V, long S, long T, long t, long k,
                 const long* src, long ld, const float* bias, const float* pos, float emb_scale,
                 float eps, float* x, float* h, float* qkv, float* ff, float* logits, int threads) {
  const long Dh = D / H;
  if (!SGEMM || (Dh != 16 && Dh != 32 && Dh != 64 && Dh != 128)) return -1;
  const float scale = 1.0f / sqrtf((float)Dh);
  embed_rows(x, W[0], tokens, NULL, N, D, emb_scale, pos, NULL);
  for (long l = 0; l < L; ++l) {
    const float* const* w = W + 4 + l * NW;
    const float *ck = C[4 * l], *cv = C[4 * l + 1];
    void *K = C[4 * l + 2], *Vs = C[4 * l + 3];
    const float *wk = k ? w[REL_K] : NULL, *wv = k ? w[REL_V] : NULL;
    /* self-attention (relative, by-reference cache); its output goes to h */
    qkv_block(x, h, qkv, w[LN1_G], w[LN1_B], w[W_QKV], w[B_QKV], N, D, eps, threads);
    step_attention_rows(qkv, qkv + D, qkv + 2 * D, 3 * D, K, Vs, half, src, ld, wk, wv, h, D, N, beams, H, T,
                        Dh, t, k, scale, threads);
    mm_wt(h, D, w[W_O], qkv, D, N, D, D);
    add_bias_residual(x, qkv, w[B_O], N, D, threads);
    /* cross-attention: queries in qkv[:, :D], heads' outputs in qkv[:, D:2D] */
    layer_norm(x, h, w[LN2_G], w[LN2_B], N, D, eps, threads);
    mm_wt(h, D, w[WX_Q], qkv, 3 * D, N, D, D);
    add_bias(qkv, 3 * D, w[BX_Q], N, D, 0, threads);
    #pragma omp parallel for num_threads(threads) schedule(static) if(threads > 1 && N * H > 1)
    for (long rh = 0; rh < N * H; ++rh) {
      const long r = rh / H, hd = rh % H, b = r / beams;
      const float* qr = qkv + r * 3 * D + hd * Dh;
      const float *kc = ck + (b * H + hd) * S * Dh, *vc = cv + (b * H + hd) * S * Dh;
      float* orow = qkv + r * 3 * D + D + hd * Dh;
      switch (Dh) {
        case 16: cross_16(qr, kc, vc, bias + b * S, S, scale, orow); break;
        case 32: cross_32(qr, kc, vc, bias + b * S, S, scale, orow); break;
        case 64: cross_64(qr, kc, vc, bias + b * S, S, scale, orow); break;
        default: cross_128(qr, kc, vc, bias + b * S, S, scale, orow); break;
      }
    }
    mm_wt(qkv + D, 3 * D, w[WX_O], h, D, N, D, D);
    add_bias_residual(x, h, w[BX_O], N, D, threads);
    /* feed-forward */
    ffn_block(x, h, ff, w[LN3_G], w[LN3_B], w[W_1], w[B_1], w[W_2], w[B_2], N, D, F, eps, threads);
  }
  layer_norm(x, h, W[1], W[2], N, D, eps, threads);
  const float one = 1.0f, zero = 0.0f;
  SGEMM("N", "N", &V, &N, &D, &one, W[3], &V, h, &D, &zero, logits, &V);  /* h @ (D, V): torch's call */
  return 0;
}

/* Encoder weights: W[0] embedding, W[1], W[2] final layer norm, W[3] sinusoidal table (max_pos, D)
   or NULL, then per layer NE pointers in this order. */
enum { E_LN1_G, E_LN1_B, E_W_QKV, E_B_QKV, E_REL_K, E_REL_V, E_W_O, E_B_O, E_LN2_G, E_LN2_B,
       E_W_1, E_B_1, E_W_2, E_B_2, NE };

/* src (B, T) token ids, pad = padding id.  Only the n real tokens are computed: they are packed
   into rows (x, h (n, D), qkv (n, 3D), ff (n, F) scratch; rows, pos (n,), off (B + 1,) scratch),
   each keeping its original position for the relative distances and the sinusoidal table.
   mem (B, T, D): the encoder output, zeros at padding.  Returns 0, or -1. */
int encoder_forward(const float* const* W, long L, const long* src, long B, long T, long pad, long D,
                    long H, long F, long k, float emb_scale, float eps, float* x, float* h, float* qkv,
                    float* ff, long* rows, long* pos, long* off, float* mem, int threads) {
  const long Dh = D / H;
  if (!SGEMM || (Dh != 16 && Dh != 32 && Dh != 64 && Dh != 128)) return -1;
  const float scale = 1.0f / sqrtf((float)Dh);
  long n = 0;
  for (long b = 0; b < B; ++b) {
    off[b] = n;
    for (long t = 0; t < T; ++t)
      if (src[b * T + t] != pad) { rows[n] = b * T + t; pos[n] = t; ++n; }
  }
  off[B] = n;
  embed_rows(x, W[0], src, rows, n, D, emb_scale, W[3], pos);
  for (long l = 0; l < L && n > 0; ++l) {
    const float* const* w = W + 4 + l * NE;
    const float *wk = k ? w[E_REL_K] : NULL, *wv = k ? w[E_REL_V] : NULL;
    qkv_block(x, h, qkv, w[E_LN1_G], w[E_LN1_B], w[E_W_QKV], w[E_B_QKV], n, D, eps, threads);
    #pragma omp parallel for num_threads(threads) schedule(static) if(threads > 1 && n * H > 1)
    for (long rh = 0; rh < n * H; ++rh) {
      const long r = rh / H, hd = rh % H;
      const long b = rows[r] / T;  /* (the rows of a sentence are contiguous) */
      enc_head(Dh, qkv + off[b] * 3 * D, 3 * D, D, NULL, pos + off[b], off[b + 1] - off[b], qkv + r * 3 * D, pos[r], hd,
               wk, wv, k, scale, 0, h + r * D);
    }
    mm_wt(h, D, w[E_W_O], qkv, D, n, D, D);
    add_bias_residual(x, qkv, w[E_B_O], n, D, threads);
    ffn_block(x, h, ff, w[E_LN2_G], w[E_LN2_B], w[E_W_1], w[E_B_1], w[E_W_2], w[E_B_2], n, D, F, eps, threads);
  }
  memset(mem, 0, sizeof(float) * B * T * D);
  layer_norm(x, h, W[1], W[2], n, D, eps, threads);
  for (long r = 0; r < n; ++r) memcpy(mem + rows[r] * D, h + r * D, sizeof(float) * D);
  return 0;
}
"""


def _sgemm_address() -> int | None:
    """Address of MKL's ``sgemm_`` inside torch's CPU library, or None."""
    if not torch.backends.mkl.is_available():
        return None
    lib_dir = Path(torch.__file__).parent / "lib"
    for name in ("libtorch_cpu.so", "libtorch_cpu.dylib"):
        if (lib_dir / name).is_file():
            try:
                return ctypes.cast(ctypes.CDLL(str(lib_dir / name)).sgemm_, ctypes.c_void_p).value
            except (OSError, AttributeError):
                return None
    return None


_WIRED: dict[int, bool] = {}


def kernel() -> ctypes.CDLL | None:
    """The compiled step, wired to torch's sgemm, or None."""
    so = ckernel.load("fused_cpu", attention_kernels._C_SOURCE + _STEP_SOURCE, "RENDITION_FUSED_KERNEL")
    if so is None:
        return None
    wired = _WIRED.get(id(so))
    if wired is None:
        address = _sgemm_address()
        wired = _WIRED[id(so)] = address is not None
        if wired:
            P, L = ctypes.c_void_p, ctypes.c_long
            so.set_sgemm.argtypes, so.set_sgemm.restype = [P], None
            so.set_sgemm(address)
            so.decoder_step.argtypes = (
                [P, P, ctypes.c_int, L, P] + [L] * 10 + [P, L, P, P] + [ctypes.c_float] * 2 + [P] * 5 + [ctypes.c_int]
            )
            so.decoder_step.restype = ctypes.c_int
            so.encoder_forward.argtypes = [P, L, P] + [L] * 7 + [ctypes.c_float] * 2 + [P] * 8 + [ctypes.c_int]
            so.encoder_forward.restype = ctypes.c_int
    return so if wired else None


def _checked_ids(ids: Tensor, vocab_size: int) -> Tensor:
    """Contiguous int64 token ids, each in [0, vocab_size): the C code indexes the embedding with
    them (an id out of range is the IndexError torch's embedding raises, not a wild read)."""
    if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise TypeError(f"token ids must be integers, not {ids.dtype}")
    if ids.numel() and not (0 <= int(ids.min()) and int(ids.max()) < vocab_size):
        raise IndexError(f"token id out of range: ids must be in [0, {vocab_size})")
    return ids.to(torch.long).contiguous()


def _weights(model: Transformer, cache: DecoderCache) -> ctypes.Array:
    """The pointer table of the weights (see ``decoder_step``), built once per cache: the weights
    are read as they are when a search starts."""
    table = cache.__dict__.get("_step_weights")
    if table is None:
        keep = [model.embed.weight, model.decoder_norm.weight, model.decoder_norm.bias, model.output_weight_t()]
        for layer, lc in zip(model.decoder_layers, cache.layers):
            sa, ca, ffn = layer.self_attn, layer.cross_attn, layer.ffn
            rel_k = sa.rel_k if sa.k is not None else None  # (None: a NULL pointer)
            rel_v = sa.rel_v if sa.k is not None else None
            keep += [
                layer.self_attn_norm.weight, layer.self_attn_norm.bias, *lc.qkv, rel_k, rel_v,
                sa.out_proj.weight, sa.out_proj.bias, layer.cross_attn_norm.weight, layer.cross_attn_norm.bias,
                ca.q_proj.weight, ca.q_proj.bias, ca.out_proj.weight, ca.out_proj.bias,
                layer.ffn_norm.weight, layer.ffn_norm.bias, ffn.fc1.weight, ffn.fc1.bias, ffn.fc2.weight, ffn.fc2.bias,
            ]  # fmt: skip
        table = cache.__dict__["_step_weights"] = _pointer_table(keep)
    return table


def _pointer_table(tensors: list[Tensor | None]) -> ctypes.Array:
    """A C array of the tensors' data pointers (detached, contiguous; None: NULL), which keeps
    them alive as long as it lives."""
    keep = [w.detach().contiguous() if w is not None else None for w in tensors]
    table = (ctypes.c_void_p * len(keep))(*(w.data_ptr() if w is not None else None for w in keep))
    table._keep = keep
    return table


def decode_step(model: Transformer, tokens: Tensor, cache: DecoderCache) -> Tensor:
    """``Transformer.decode_step`` for a by-reference cache, in one C call: logits (N, V)."""
    so = kernel()
    assert so is not None and cache.history is not None, "check kernel() and a by-reference cache first"
    cfg = model.cfg
    tokens = _checked_ids(tokens, cfg.vocab_size)
    if tokens.shape != (cache.batch_size,):
        raise ValueError(f"expected {cache.batch_size} tokens (one per cache row), got shape {tuple(tokens.shape)}")
    t = cache.seq_len
    for lc in cache.layers:
        lc.next_position()  # (every layer records the same storage rows for position t)
    N, D, V, F = tokens.shape[0], cfg.d_model, cfg.vocab_size, cfg.d_ff
    bias = cache.memory_bias(torch.float32)  # (B, 1, 1, S)
    S = bias.shape[-1]
    per_step = []
    for lc in cache.layers:
        per_step += [lc.cross_k.data_ptr(), lc.cross_v.data_ptr(), lc.self_k.data_ptr(), lc.self_v.data_ptr()]
    src = cache.history.src
    x, h = torch.empty(N, D), torch.empty(N, D)
    qkv, ff, logits = torch.empty(N, 3 * D), torch.empty(N, F), torch.empty(N, V)
    pos = model.positions[t].contiguous() if model.positions is not None else None
    rc = so.decoder_step(
        _weights(model, cache), (ctypes.c_void_p * len(per_step))(*per_step),
        attention_kernels._half(cache.layers[0].self_k), len(cache.layers), tokens.data_ptr(), N,
        cache.beams, D, cfg.n_heads, F, V, S, cache.layers[0].self_k.shape[2], t, cfg.max_relative_position if cache.k is not None else 0,
        src.data_ptr(), src.stride(0), bias.data_ptr(), pos.data_ptr() if pos is not None else None, model.emb_scale,
        cfg.layer_norm_eps, x.data_ptr(), h.data_ptr(), qkv.data_ptr(), ff.data_ptr(), logits.data_ptr(),
        torch.get_num_threads(),
    )  # fmt: skip
    if rc != 0:
        raise ValueError(f"head_dim {cfg.head_dim} not supported by the step kernel")
    cache.advance()
    return logits


def usable(model: Transformer, x: Tensor) -> bool:
    """Whether ``encode`` / ``decode_step`` can serve this model on tensors like x (CPU float32
    inference, a supported head size, the kernel built and wired)."""
    return not model.training and attention_kernels.usable(x, model.cfg.head_dim) and kernel() is not None


def _encoder_weights(model: Transformer) -> ctypes.Array:
    """Pointer table of the encoder's weights (see ``encoder_forward``), rebuilt when a weight changes."""

    def build() -> ctypes.Array:
        keep = [model.embed.weight, model.encoder_norm.weight, model.encoder_norm.bias, model.positions]
        for layer in model.encoder_layers:
            sa, ffn = layer.self_attn, layer.ffn
            keep += [
                layer.self_attn_norm.weight, layer.self_attn_norm.bias, *sa.fused_qkv(),
                sa.rel_k if sa.k is not None else None, sa.rel_v if sa.k is not None else None,
                sa.out_proj.weight, sa.out_proj.bias, layer.ffn_norm.weight, layer.ffn_norm.bias,
                ffn.fc1.weight, ffn.fc1.bias, ffn.fc2.weight, ffn.fc2.bias,
            ]  # fmt: skip
        return _pointer_table(keep)

    from model.translation.transformer import inference_copy  # (model.translation.transformer imports this module)

    params = tuple(p for name, p in model.named_parameters() if not name.startswith("decoder"))
    return inference_copy(model, "_encoder_table", params, build)


def encode(model: Transformer, src: Tensor) -> tuple[Tensor, Tensor]:
    """``Transformer.encode`` in one C call, computing only the real (non-padding) tokens:
    memory (B, S, D) with zeros at padding, and the key mask (B, 1, 1, S)."""
    so = kernel()
    assert so is not None, "check usable() first"
    cfg = model.cfg
    B, T = src.shape
    D, F = cfg.d_model, cfg.d_ff
    src = _checked_ids(src, cfg.vocab_size)
    mask = src != cfg.pad_id
    n = int(mask.sum())
    x, h, qkv, ff = torch.empty(n, D), torch.empty(n, D), torch.empty(n, 3 * D), torch.empty(n, F)
    rows, pos, off = (
        torch.empty(n, dtype=torch.long),
        torch.empty(n, dtype=torch.long),
        torch.empty(B + 1, dtype=torch.long),
    )
    mem = torch.empty(B, T, D)
    rc = so.encoder_forward(
        _encoder_weights(model), len(model.encoder_layers), src.data_ptr(), B, T, cfg.pad_id, D, cfg.n_heads, F,
        cfg.max_relative_position if cfg.relative_positions else 0, model.emb_scale, cfg.layer_norm_eps,
        x.data_ptr(), h.data_ptr(), qkv.data_ptr(), ff.data_ptr(), rows.data_ptr(), pos.data_ptr(), off.data_ptr(),
        mem.data_ptr(), torch.get_num_threads(),
    )  # fmt: skip
    if rc != 0:
        raise ValueError(f"head_dim {cfg.head_dim} not supported by the fused kernels")
    return mem, mask[:, None, None, :]
