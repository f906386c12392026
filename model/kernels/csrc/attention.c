/* Shaw et al.'s relative self-attention at inference (CPU, float32): the decoder's step over a
   by-reference KV cache and the encoder's full self-attention (model/kernels/attention.py). */
#include "rendition_kernels.h"
#include "attention_impl.h"

/* step_attention_rows for q, kn, vn, out (N, H, Dh) contiguous.  Dh in {16, 32, 64, 128}; returns 0,
   or -1 for another Dh. */
int rk_step_attention(const rk_step_attention_args* a) {
  const float *q = a->q, *kn = a->k, *vn = a->v, *wk = a->rel_k, *wv = a->rel_v;
  void *K = a->k_store, *V = a->v_store;
  const long* src = a->src;
  const long ld = a->src_stride, N = a->rows, beams = a->beams, H = a->heads, T = a->max_len, Dh = a->head_dim;
  const long t = a->t, k = a->max_rel;
  float* out = a->out;
  if (Dh != 16 && Dh != 32 && Dh != 64 && Dh != 128) return -1;
  step_attention_rows(q, kn, vn, H * Dh, K, V, a->half, src, ld, a->steps, wk, wv, out, H * Dh, N, beams, H, T, Dh,
                      t, k, a->scale, a->threads);
  return 0;
}

/* qkv (B, T, 3D) the fused projections of every token (q, k, v of all heads); km (B, T) key mask
   (nonzero = real token); wk, wv (2k+1, Dh) or NULL; out (B, T, D) with heads side by side, as the
   output projection takes them; keys (B, T + 1) scratch.  Every query (padding too) attends to its
   sentence's real tokens (to all T, uniformly, when it has none).  Returns 0, or -1 for an
   unsupported Dh. */
int rk_self_attention(const rk_self_attention_args* a) {
  const float *qkv = a->qkv, *km = a->key_mask, *wk = a->rel_k, *wv = a->rel_v;
  float* out = a->out;
  long* keys = a->scratch;
  const long B = a->batch, T = a->len, H = a->heads, Dh = a->head_dim, k = a->max_rel;
  const float scale = a->scale;
  const int threads = a->threads;
  if (Dh != 16 && Dh != 32 && Dh != 64 && Dh != 128) return -1;
  const long D = H * Dh;
  for (long b = 0; b < B; ++b) {  /* keys[b]: the count, then the real tokens' positions */
    long* kb = keys + b * (T + 1);
    kb[0] = 0;
    for (long j = 0; j < T; ++j)
      if (km[b * T + j] != 0.0f) kb[1 + kb[0]++] = j;
  }
  #pragma omp parallel for num_threads(threads) schedule(static) if(threads > 1 && B * T * H > 1)
  for (long bih = 0; bih < B * T * H; ++bih) {
    const long b = bih / (T * H), i = (bih / H) % T, h = bih % H;
    const float* x = qkv + b * T * 3 * D;
    const long* kb = keys + b * (T + 1);
    const int none = kb[0] == 0;
    enc_head(Dh, x, 3 * D, D, none ? NULL : kb + 1, NULL, none ? T : kb[0], x + i * 3 * D, i, h, wk, wv, k,
             scale, none, out + (b * T + i) * D);
  }
  return 0;
}
