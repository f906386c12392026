/* The translator's encoder and its decoding step, each in one call (model/kernels/fused_cpu.py), over
   oneDNN's sgemm (rk_set_dnnl_sgemm; about 2.5x MKL's on AMD CPUs, where MKL takes a slow path) or
   the MKL sgemm that torch itself calls (rk_set_sgemm), whose products are then bitwise torch's. */
#include <omp.h>

#include "rendition_kernels.h"
#include "attention_impl.h"

/* Fortran BLAS sgemm (column-major).  Integer arguments are pointers to 64-bit values: an LP64 BLAS
   reads their low 32 bits (little-endian), an ILP64 one all 64. */
typedef void (*sgemm_t)(const char*, const char*, const long*, const long*, const long*, const float*,
                        const float*, const long*, const float*, const long*, const float*, float*, const long*);
/* oneDNN's dnnl_sgemm (row-major, arguments by value; dnnl_dim_t is int64). */
typedef int (*dnnl_sgemm_t)(char, char, long, long, long, float, const float*, long, const float*, long, float,
                            float*, long);
static sgemm_t SGEMM = NULL;
static dnnl_sgemm_t DNNL_SGEMM = NULL;
void rk_set_sgemm(void* fn) { SGEMM = (sgemm_t)fn; DNNL_SGEMM = NULL; }
void rk_set_dnnl_sgemm(void* fn) { DNNL_SGEMM = (dnnl_sgemm_t)fn; SGEMM = NULL; }

/* Threads for oneDNN's products, set by each entry point from its args (per calling thread).  oneDNN's
   sgemm runs single-threaded when called from a thread other than the process's main thread (measured:
   docs/experiments.md), which is where the service's workers call it; so the products are split here instead, each
   thread computing its own block of output columns with a single-threaded sgemm (every output element
   is one thread's dot product over all of K, as in an unsplit call). */
static __thread int GEMM_THREADS = 1;

/* Split N into `parts` blocks of whole 64-column panels; block t is [n0, n1). */
static void split_cols(long N, int t, int parts, long* n0, long* n1) {
  const long panels = (N + 63) / 64;
  *n0 = (panels * t / parts) * 64;
  *n1 = (panels * (t + 1) / parts) * 64;
  if (*n0 > N) *n0 = N;
  if (*n1 > N) *n1 = N;
}

/* Threads worth using for an (M, N, K) product: one per 64-column panel at most, and none for a tiny one. */
static int gemm_parts(long M, long N, long K) {
  if (GEMM_THREADS <= 1 || omp_in_parallel() || M * N * K < (1L << 20)) return 1;
  const long panels = (N + 63) / 64;
  return panels < GEMM_THREADS ? (int)panels : GEMM_THREADS;
}

/* out (M, N), rows ldo apart = a (M, K), rows lda apart, @ W^T, W (N, K) row-major: with MKL the call
   torch makes for a @ W.t() */
static void mm_wt(const float* a, long lda, const float* W, float* out, long ldo, long M, long N, long K) {
  if (DNNL_SGEMM) {
    const int parts = gemm_parts(M, N, K);
    if (parts <= 1) { DNNL_SGEMM('N', 'T', M, N, K, 1.0f, a, lda, W, K, 0.0f, out, ldo); return; }
    #pragma omp parallel num_threads(parts)
    {
      long n0, n1;
      split_cols(N, omp_get_thread_num(), omp_get_num_threads(), &n0, &n1);
      if (n1 > n0) DNNL_SGEMM('N', 'T', M, n1 - n0, K, 1.0f, a, lda, W + n0 * K, K, 0.0f, out + n0, ldo);
    }
    return;
  }
  const float one = 1.0f, zero = 0.0f;
  SGEMM("T", "N", &N, &M, &K, &one, W, &K, a, &lda, &zero, out, &ldo);
}

/* out (M, N) = a (M, K) @ P (K, N), all row-major and contiguous: with MKL the call torch makes for a @ P */
static void mm(const float* a, const float* P, float* out, long M, long N, long K) {
  if (DNNL_SGEMM) {
    const int parts = gemm_parts(M, N, K);
    if (parts <= 1) { DNNL_SGEMM('N', 'N', M, N, K, 1.0f, a, K, P, N, 0.0f, out, N); return; }
    #pragma omp parallel num_threads(parts)
    {
      long n0, n1;
      split_cols(N, omp_get_thread_num(), omp_get_num_threads(), &n0, &n1);
      if (n1 > n0) DNNL_SGEMM('N', 'N', M, n1 - n0, K, 1.0f, a, K, P + n0, N, 0.0f, out + n0, N);
    }
    return;
  }
  const float one = 1.0f, zero = 0.0f;
  SGEMM("N", "N", &N, &M, &K, &one, P, &N, a, &K, &zero, out, &N);
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

/* One decoding step (rk_decoder_step_args): rows are sentences x beams (beams adjacent); src column
   t already holds each row's storage row.  Returns 0, or -1 (no sgemm / unsupported Dh). */
int rk_decoder_step(const rk_decoder_step_args* a) {
  const rk_decoder_weights* W = a->weights;
  const long L = W->n_layers, N = a->rows, beams = a->beams, D = a->d_model, H = a->heads, F = a->d_ff,
             V = a->vocab, S = a->src_len, T = a->max_len, t = a->t, k = a->max_rel, ld = a->src_stride;
  const long* src = a->src;
  const int half = a->half, threads = a->threads;
  GEMM_THREADS = threads;
  const float eps = a->eps;
  float *x = a->x, *h = a->h, *qkv = a->qkv, *ff = a->ff;
  const long Dh = D / H;
  if ((!SGEMM && !DNNL_SGEMM) || (Dh != 16 && Dh != 32 && Dh != 64 && Dh != 128)) return -1;
  const float scale = 1.0f / sqrtf((float)Dh);
  embed_rows(x, W->embed, a->tokens, NULL, N, D, a->emb_scale, a->pos, a->pos ? a->steps : NULL);
  for (long l = 0; l < L; ++l) {
    const rk_decoder_layer* w = W->layers + l;
    const float *ck = a->cache[l].cross_k, *cv = a->cache[l].cross_v;
    void *K = a->cache[l].self_k, *Vs = a->cache[l].self_v;
    const float *wk = k ? w->rel_k : NULL, *wv = k ? w->rel_v : NULL;
    /* self-attention (relative, by-reference cache); its output goes to h */
    qkv_block(x, h, qkv, w->ln1_g, w->ln1_b, w->w_qkv, w->b_qkv, N, D, eps, threads);
    step_attention_rows(qkv, qkv + D, qkv + 2 * D, 3 * D, K, Vs, half, src, ld, a->steps, wk, wv, h, D, N, beams,
                        H, T, Dh, t, k, scale, threads);
    mm_wt(h, D, w->w_o, qkv, D, N, D, D);
    add_bias_residual(x, qkv, w->b_o, N, D, threads);
    /* cross-attention: queries in qkv[:, :D], heads' outputs in qkv[:, D:2D] */
    layer_norm(x, h, w->ln2_g, w->ln2_b, N, D, eps, threads);
    mm_wt(h, D, w->wx_q, qkv, 3 * D, N, D, D);
    add_bias(qkv, 3 * D, w->bx_q, N, D, 0, threads);
    #pragma omp parallel for num_threads(threads) schedule(static) if(threads > 1 && N * H > 1)
    for (long rh = 0; rh < N * H; ++rh) {
      const long r = rh / H, hd = rh % H, b = a->cross_rows ? a->cross_rows[r / beams] : r / beams;
      const long Sb = a->cross_lens ? a->cross_lens[b] : S;  /* (padding comes last, weight exactly 0) */
      const float* qr = qkv + r * 3 * D + hd * Dh;
      const float *kc = ck + (b * H + hd) * S * Dh, *vc = cv + (b * H + hd) * S * Dh;
      float* orow = qkv + r * 3 * D + D + hd * Dh;
      switch (Dh) {
        case 16: cross_16(qr, kc, vc, a->mem_bias + b * S, Sb, scale, orow); break;
        case 32: cross_32(qr, kc, vc, a->mem_bias + b * S, Sb, scale, orow); break;
        case 64: cross_64(qr, kc, vc, a->mem_bias + b * S, Sb, scale, orow); break;
        default: cross_128(qr, kc, vc, a->mem_bias + b * S, Sb, scale, orow); break;
      }
    }
    mm_wt(qkv + D, 3 * D, w->wx_o, h, D, N, D, D);
    add_bias_residual(x, h, w->bx_o, N, D, threads);
    /* feed-forward */
    ffn_block(x, h, ff, w->ln3_g, w->ln3_b, w->w_1, w->b_1, w->w_2, w->b_2, N, D, F, eps, threads);
  }
  layer_norm(x, h, W->norm_g, W->norm_b, N, D, eps, threads);
  mm(h, W->out_proj, a->logits, N, V, D);  /* h @ (D, V) */
  return 0;
}

/* The encoder (rk_encoder_args): only the n real tokens of src are computed; they are packed into
   rows, each keeping its original position for the relative distances and the sinusoidal table.
   mem: the encoder output, zeros at padding.  Returns 0, or -1. */
int rk_encoder_forward(const rk_encoder_args* a) {
  const rk_encoder_weights* W = a->weights;
  const long L = W->n_layers, B = a->batch, T = a->len, pad = a->pad, D = a->d_model, H = a->heads, F = a->d_ff,
             k = a->max_rel;
  const long* src = a->src;
  const int threads = a->threads;
  GEMM_THREADS = threads;
  const float eps = a->eps;
  float *x = a->x, *h = a->h, *qkv = a->qkv, *ff = a->ff, *mem = a->mem;
  long *rows = a->rows, *pos = a->pos, *off = a->off;
  const long Dh = D / H;
  if ((!SGEMM && !DNNL_SGEMM) || (Dh != 16 && Dh != 32 && Dh != 64 && Dh != 128)) return -1;
  const float scale = 1.0f / sqrtf((float)Dh);
  long n = 0;
  for (long b = 0; b < B; ++b) {
    off[b] = n;
    for (long t = 0; t < T; ++t)
      if (src[b * T + t] != pad) { rows[n] = b * T + t; pos[n] = t; ++n; }
  }
  off[B] = n;
  embed_rows(x, W->embed, src, rows, n, D, a->emb_scale, W->positions, pos);
  for (long l = 0; l < L && n > 0; ++l) {
    const rk_encoder_layer* w = W->layers + l;
    const float *wk = k ? w->rel_k : NULL, *wv = k ? w->rel_v : NULL;
    qkv_block(x, h, qkv, w->ln1_g, w->ln1_b, w->w_qkv, w->b_qkv, n, D, eps, threads);
    #pragma omp parallel for num_threads(threads) schedule(static) if(threads > 1 && n * H > 1)
    for (long rh = 0; rh < n * H; ++rh) {
      const long r = rh / H, hd = rh % H;
      const long b = rows[r] / T;  /* (the rows of a sentence are contiguous) */
      enc_head(Dh, qkv + off[b] * 3 * D, 3 * D, D, NULL, pos + off[b], off[b + 1] - off[b], qkv + r * 3 * D, pos[r], hd,
               wk, wv, k, scale, 0, h + r * D);
    }
    mm_wt(h, D, w->w_o, qkv, D, n, D, D);
    add_bias_residual(x, qkv, w->b_o, n, D, threads);
    ffn_block(x, h, ff, w->ln2_g, w->ln2_b, w->w_1, w->b_1, w->w_2, w->b_2, n, D, F, eps, threads);
  }
  memset(mem, 0, sizeof(float) * B * T * D);
  layer_norm(x, h, W->norm_g, W->norm_b, n, D, eps, threads);
  for (long r = 0; r < n; ++r) memcpy(mem + rows[r] * D, h + r * D, sizeof(float) * D);
  return 0;
}
