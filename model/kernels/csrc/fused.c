/* The translator's encoder and its decoding step, each in one call (model/kernels/fused_cpu.py), over
   oneDNN's sgemm (rk_set_dnnl_sgemm; about 2.5x MKL's on AMD CPUs, where MKL takes a slow path) or
   the MKL sgemm that torch itself calls (rk_set_sgemm), whose products are then bitwise torch's.
   With the int8 compute type (rk_qlinear weights) the linear maps run on oneDNN's u8 x s8 -> s32
   products instead (qmm_wt): its matmul primitive over weights packed once (packed.c), or its gemm;
   layer norms, softmax, residuals and attention stay float32. */
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>

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

/* oneDNN's dnnl_gemm_u8s8s32 (row-major; C = alpha (A - ao)(B - bo) + beta C + co; dnnl_dim_t is
   int64).  The offsets are passed as 0: the activations' zero points are compensated in dequantise
   with the weights' column sums. */
typedef int (*dnnl_gemm_u8s8s32_t)(char, char, char, long, long, long, float, const uint8_t*, long, uint8_t,
                                   const int8_t*, long, int8_t, float, int32_t*, long, const int32_t*);
static dnnl_gemm_u8s8s32_t DNNL_GEMM_U8S8S32 = NULL;
static int ACT_MAX = 255;
void rk_set_dnnl_gemm_u8s8s32(void* fn, int act_max) {
  DNNL_GEMM_U8S8S32 = (dnnl_gemm_u8s8s32_t)fn;
  ACT_MAX = act_max == 127 ? 127 : 255;
}

/* A buffer grown as needed (NULL: no memory) and kept between calls (the service's workers call step
   after step); rk_release_scratch, called by a thread when its work is done (a worker that goes idle,
   the end of a batch translation), frees those over SCRATCH_KEEP bytes, so that what a thread keeps
   does not depend on the largest input it has seen. */
typedef struct { void* p; size_t cap; } scratch;
#define SCRATCH_KEEP ((size_t)8 << 20)
static void* grow(scratch* b, size_t bytes) {
  if (bytes > b->cap) {
    free(b->p);
    b->p = malloc(bytes);
    b->cap = b->p ? bytes : 0;
  }
  return b->p;
}
static void shrink(scratch* b) {
  if (b->cap <= SCRATCH_KEEP) return;
  free(b->p);
  b->p = NULL;
  b->cap = 0;
}

/* Per calling thread: the quantised activations, the int32 products of the packed path whose output
   rows are not contiguous or are fewer than the rows the product runs on (rk_packed_rows), and
   quantised rows copied with those extra rows. */
static __thread scratch QBUF, PBUF, XBUF;
static void* qscratch(size_t bytes) { return grow(&QBUF, bytes); }

/* Per calling thread: a packed weight without its plain copy, unpacked for the gemm (the rare
   product no primitive serves).  The one unpacked last is kept. */
static __thread scratch UBUF;
static __thread unsigned long UFOR = 0;
static const signed char* unpacked(const void* packed, long N, long K) {
  if (UFOR == rk_qlinear_packed_id(packed) && UBUF.p) return UBUF.p;
  signed char* w = grow(&UBUF, (size_t)N * K);
  UFOR = 0;
  if (!w || rk_qlinear_unpack(packed, w) != 0) abort();  /* (no memory, or oneDNN cannot reorder) */
  UFOR = rk_qlinear_packed_id(packed);
  return w;
}

/* The calling thread's scratch buffers over SCRATCH_KEEP bytes, freed (at most 4 x SCRATCH_KEEP kept). */
void rk_release_scratch(void) {
  shrink(&QBUF);
  shrink(&PBUF);
  shrink(&XBUF);
  if (UBUF.cap > SCRATCH_KEEP) UFOR = 0;
  shrink(&UBUF);
}

/* Rows of x (M, K), ld apart, to unsigned 8 bits with a zero point each, the range [lo, hi] of a
   row (widened to hold 0) mapped onto [0, ACT_MAX]: x ~ s[m] (q - z[m]). */
static void quantize_rows(const float* x, long ld, long M, long K, uint8_t* q, float* s, int* z, int threads) {
  const float levels = (float)ACT_MAX;
  #pragma omp parallel for num_threads(threads) schedule(static) if(threads > 1 && M * K >= (1L << 16))
  for (long m = 0; m < M; ++m) {
    const float* xr = x + m * ld;
    uint8_t* qr = q + m * K;
    float lo = 0.0f, hi = 0.0f;
    for (long k = 0; k < K; ++k) { lo = xr[k] < lo ? xr[k] : lo; hi = xr[k] > hi ? xr[k] : hi; }
    float scale = (hi - lo) / levels;
    if (!(scale > 0.0f) || !isfinite(scale)) scale = 1.0f;  /* (an all-zero row) */
    const float inv = 1.0f / scale;
    const float zp = nearbyintf(-lo * inv);
    for (long k = 0; k < K; ++k) {
      float v = nearbyintf(xr[k] * inv) + zp;
      v = v < 0.0f ? 0.0f : (v > levels ? levels : v);
      qr[k] = (uint8_t)v;
    }
    s[m] = scale;
    z[m] = (int)zp;
  }
}

/* y (M, N), rows ldy apart = s[m] W.scale[n] (acc - z[m] W.colsum[n]) for columns [n0, n1); acc
   (int32, rows ldacc apart) may be y's own storage (read before each element is written). */
static void dequantize(const void* acc, long ldacc, const float* s, const int* z, const rk_qlinear* W, float* y,
                       long ldy, long M, long n0, long n1) {
  const float* restrict ws = W->scale;
  const int* restrict wc = W->colsum;
  for (long m = 0; m < M; ++m) {
    const char* ar = (const char*)acc + m * ldacc * sizeof(int32_t);
    float* yr = y + m * ldy;
    const float sm = s[m];
    const int zm = z[m];
    for (long n = n0; n < n1; ++n) {
      int32_t v;  /* (memcpy: acc may be y's own storage) */
      memcpy(&v, ar + n * sizeof(int32_t), sizeof v);
      yr[n] = sm * ws[n] * (float)(v - zm * wc[n]);
    }
  }
}

/* y (M, N), rows ldy apart = xq (M, K) @ W^T dequantised (quantised rows: scale s, zero point z;
   xq's buffer holds xq_rows >= M rows); acc: where the int32 products go (rows ldacc apart), or
   NULL: into y itself. */
static void qgemm(const uint8_t* xq, long xq_rows, const float* s, const int* z, const rk_qlinear* W, float* y,
                  long ldy, int32_t* acc, long ldacc, long M, long N, long K) {
  void* out = acc ? (void*)acc : (void*)y;
  const long ld = acc ? ldacc : ldy;
  static const int32_t zero = 0;
  if (W->packed) {  /* (the primitives run on rk_packed_rows(M) rows and write contiguous rows: where
                       the caller's buffers do not hold that, scratch buffers) */
    const long rows = rk_packed_rows(M);
    const uint8_t* xp = xq;
    if (xq_rows < rows) {
      uint8_t* copy = grow(&XBUF, (size_t)rows * K);
      if (copy) {
        memcpy(copy, xq, (size_t)M * K);
        memset(copy + M * K, 0, (size_t)(rows - M) * K);
      }
      xp = copy;
    }
    int32_t* pout = ld == N && rows == M ? (int32_t*)out : grow(&PBUF, (size_t)rows * N * sizeof(int32_t));
    if (xp && pout && rk_packed_gemm(W->packed, xp, pout, N, M, GEMM_THREADS) == 0) {
      const int parts = GEMM_THREADS > 1 && !omp_in_parallel() && M * N >= (1L << 15) ? GEMM_THREADS : 1;
      #pragma omp parallel num_threads(parts) if(parts > 1)
      {
        long n0, n1;
        split_cols(N, omp_get_thread_num(), omp_get_num_threads(), &n0, &n1);
        if (n1 > n0) dequantize(pout, N, s, z, W, y, ldy, M, n0, n1);
      }
      if (acc && pout != acc)  /* (the caller reads the integer sums too) */
        for (long m = 0; m < M; ++m) memcpy(acc + m * ldacc, pout + m * N, (size_t)N * sizeof(int32_t));
      return;
    }
  }
  const signed char* w = W->w ? W->w : unpacked(W->packed, N, K);  /* (packed alone: unpacked for the gemm) */
  const int parts = gemm_parts(M, N, K);
  if (parts <= 1) {
    DNNL_GEMM_U8S8S32('N', 'T', 'F', M, N, K, 1.0f, xq, K, 0, w, K, 0, 0.0f, (int32_t*)out, ld, &zero);
    dequantize(out, ld, s, z, W, y, ldy, M, 0, N);
    return;
  }
  #pragma omp parallel num_threads(parts)
  {
    long n0, n1;
    split_cols(N, omp_get_thread_num(), omp_get_num_threads(), &n0, &n1);
    if (n1 > n0) {
      DNNL_GEMM_U8S8S32('N', 'T', 'F', M, n1 - n0, K, 1.0f, xq, K, 0, w + n0 * K, K, 0, 0.0f, (int32_t*)out + n0,
                        ld, &zero);
      dequantize(out, ld, s, z, W, y, ldy, M, n0, n1);
    }
  }
}

/* y (M, N), rows ldy apart = x (M, K), rows ldx apart, @ W^T with an int8 W: x quantised per row. */
static void qmm_wt(const float* x, long ldx, const rk_qlinear* W, float* y, long ldy, long M, long N, long K) {
  const long rows = W->packed ? rk_packed_rows(M) : M;  /* (room for the rows a packed product runs on) */
  char* buf = qscratch((size_t)M * (sizeof(float) + sizeof(int)) + (size_t)rows * K);
  float* s = (float*)buf;
  int* z = (int*)(buf + M * sizeof(float));
  uint8_t* xq = (uint8_t*)(buf + M * (sizeof(float) + sizeof(int)));
  quantize_rows(x, ldx, M, K, xq, s, z, GEMM_THREADS);
  if (rows > M) memset(xq + M * K, 0, (size_t)(rows - M) * K);
  qgemm(xq, rows, s, z, W, y, ldy, NULL, 0, M, N, K);
}

/* A linear map's product: the int8 one where the map has int8 weights, else the float32 one. */
static void linear(const float* x, long ldx, const float* W, const rk_qlinear* Q, float* y, long ldy, long M, long N,
                   long K) {
  if (Q->w || Q->packed) qmm_wt(x, ldx, Q, y, ldy, M, N, K);
  else mm_wt(x, ldx, W, y, ldy, M, N, K);
}

int rk_qlinear_forward(const rk_qlinear_args* a) {
  if (!DNNL_GEMM_U8S8S32) return -1;
  const long M = a->M, N = a->N, K = a->K;
  GEMM_THREADS = a->threads;
  char* buf = malloc((size_t)M * (sizeof(float) + sizeof(int) + (size_t)K) + 1);
  if (!buf) return -1;
  float* s = a->x_scale ? a->x_scale : (float*)buf;
  int* z = a->x_zero ? a->x_zero : (int*)(buf + M * sizeof(float));
  uint8_t* xq = a->xq ? a->xq : (uint8_t*)(buf + M * (sizeof(float) + sizeof(int)));
  quantize_rows(a->x, K, M, K, xq, s, z, a->threads);
  qgemm(xq, M, s, z, a->w, a->y, N, a->acc, N, M, N, K);
  free(buf);
  return 0;
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
   or ids[idx[r]] with idx; E the int8 table QE (rows dequantised) where QE->w is set */
static void embed_rows(float* x, const float* E, const rk_qlinear* QE, const long* ids, const long* idx, long N,
                       long D, float emb_scale, const float* P, const long* prow) {
  for (long r = 0; r < N; ++r) {
    const long id = ids[idx ? idx[r] : r];
    const float* p = P ? P + (prow ? prow[r] : 0) * D : NULL;
    if (QE->w) {
      const signed char* e = QE->w + id * D;
      const float es = QE->scale[id] * emb_scale;
      for (long j = 0; j < D; ++j) x[r * D + j] = (float)e[j] * es + (p ? p[j] : 0.0f);
    } else {
      const float* e = E + id * D;
      for (long j = 0; j < D; ++j) x[r * D + j] = e[j] * emb_scale + (p ? p[j] : 0.0f);
    }
  }
}

/* qkv (N, 3D) = LN(x) @ Wqkv^T + b (h: the normalised rows) */
static void qkv_block(const float* x, float* h, float* qkv, const float* g, const float* beta, const float* w,
                      const rk_qlinear* qw, const float* b, long N, long D, float eps, int threads) {
  layer_norm(x, h, g, beta, N, D, eps, threads);
  linear(h, D, w, qw, qkv, 3 * D, N, 3 * D, D);
  add_bias(qkv, 3 * D, b, N, 3 * D, 0, threads);
}

/* x += relu(LN(x) @ W1^T + b1) @ W2^T + b2 (h, ff: scratch) */
static void ffn_block(float* x, float* h, float* ff, const float* g, const float* beta, const float* w1,
                      const rk_qlinear* q1, const float* b1, const float* w2, const rk_qlinear* q2, const float* b2,
                      long N, long D, long F, float eps, int threads) {
  layer_norm(x, h, g, beta, N, D, eps, threads);
  linear(h, D, w1, q1, ff, F, N, F, D);
  add_bias(ff, F, b1, N, F, 1, threads);
  linear(ff, F, w2, q2, h, D, N, D, F);
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
  if ((W->q_embed.w || (L > 0 && (W->layers[0].q_qkv.w || W->layers[0].q_qkv.packed))) && !DNNL_GEMM_U8S8S32) return -1;
  const float scale = 1.0f / sqrtf((float)Dh);
  embed_rows(x, W->embed, &W->q_embed, a->tokens, NULL, N, D, a->emb_scale, a->pos, a->pos ? a->steps : NULL);
  for (long l = 0; l < L; ++l) {
    const rk_decoder_layer* w = W->layers + l;
    const float *ck = a->cache[l].cross_k, *cv = a->cache[l].cross_v;
    void *K = a->cache[l].self_k, *Vs = a->cache[l].self_v;
    const float *wk = k ? w->rel_k : NULL, *wv = k ? w->rel_v : NULL;
    /* self-attention (relative, by-reference cache); its output goes to h */
    qkv_block(x, h, qkv, w->ln1_g, w->ln1_b, w->w_qkv, &w->q_qkv, w->b_qkv, N, D, eps, threads);
    step_attention_rows(qkv, qkv + D, qkv + 2 * D, 3 * D, K, Vs, half, src, ld, a->steps, wk, wv, h, D, N, beams,
                        H, T, Dh, t, k, scale, threads);
    linear(h, D, w->w_o, &w->q_o, qkv, D, N, D, D);
    add_bias_residual(x, qkv, w->b_o, N, D, threads);
    /* cross-attention: queries in qkv[:, :D], heads' outputs in qkv[:, D:2D] */
    layer_norm(x, h, w->ln2_g, w->ln2_b, N, D, eps, threads);
    linear(h, D, w->wx_q, &w->qx_q, qkv, 3 * D, N, D, D);
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
    linear(qkv + D, 3 * D, w->wx_o, &w->qx_o, h, D, N, D, D);
    add_bias_residual(x, h, w->bx_o, N, D, threads);
    /* feed-forward */
    ffn_block(x, h, ff, w->ln3_g, w->ln3_b, w->w_1, &w->q_1, w->b_1, w->w_2, &w->q_2, w->b_2, N, D, F, eps, threads);
  }
  layer_norm(x, h, W->norm_g, W->norm_b, N, D, eps, threads);
  if (a->q_out) qmm_wt(h, D, a->q_out, a->logits, V, N, V, D);  /* a shortlist's rows of E, int8 */
  else if (a->out_proj) mm(h, a->out_proj, a->logits, N, V, D);  /* a shortlist's columns of E^T */
  else if (W->q_embed.w) qmm_wt(h, D, &W->q_embed, a->logits, V, N, V, D);  /* h @ E^T, E int8 (V, D) */
  else mm(h, W->out_proj, a->logits, N, V, D);  /* h @ (D, V) */
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
  if ((W->q_embed.w || (L > 0 && (W->layers[0].q_qkv.w || W->layers[0].q_qkv.packed))) && !DNNL_GEMM_U8S8S32) return -1;
  const float scale = 1.0f / sqrtf((float)Dh);
  long n = 0;
  for (long b = 0; b < B; ++b) {
    off[b] = n;
    for (long t = 0; t < T; ++t)
      if (src[b * T + t] != pad) { rows[n] = b * T + t; pos[n] = t; ++n; }
  }
  off[B] = n;
  embed_rows(x, W->embed, &W->q_embed, src, rows, n, D, a->emb_scale, W->positions, pos);
  for (long l = 0; l < L && n > 0; ++l) {
    const rk_encoder_layer* w = W->layers + l;
    const float *wk = k ? w->rel_k : NULL, *wv = k ? w->rel_v : NULL;
    qkv_block(x, h, qkv, w->ln1_g, w->ln1_b, w->w_qkv, &w->q_qkv, w->b_qkv, n, D, eps, threads);
    #pragma omp parallel for num_threads(threads) schedule(static) if(threads > 1 && n * H > 1)
    for (long rh = 0; rh < n * H; ++rh) {
      const long r = rh / H, hd = rh % H;
      const long b = rows[r] / T;  /* (the rows of a sentence are contiguous) */
      enc_head(Dh, qkv + off[b] * 3 * D, 3 * D, D, NULL, pos + off[b], off[b + 1] - off[b], qkv + r * 3 * D, pos[r], hd,
               wk, wv, k, scale, 0, h + r * D);
    }
    linear(h, D, w->w_o, &w->q_o, qkv, D, n, D, D);
    add_bias_residual(x, qkv, w->b_o, n, D, threads);
    ffn_block(x, h, ff, w->ln2_g, w->ln2_b, w->w_1, &w->q_1, w->b_1, w->w_2, &w->q_2, w->b_2, n, D, F, eps, threads);
  }
  memset(mem, 0, sizeof(float) * B * T * D);
  layer_norm(x, h, W->norm_g, W->norm_b, n, D, eps, threads);
  for (long r = 0; r < n; ++r) memcpy(mem + rows[r] * D, h + r * D, sizeof(float) * D);
  return 0;
}
