"""CPU kernels for Shaw et al.'s relative self-attention at inference (CPU, float32, no gradients).

``rel_step_attention``: one decoding step over a by-reference KV cache.  A row's past keys and
values are not copied when beam search reorders rows or sentences finish (``model.translation.cache.RowHistory``):
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

Built once with the system C compiler (``model.kernels.ckernel``; ``RENDITION_ATTENTION_KERNEL=0`` turns it
off); where it cannot be built, or off CPU / float32, or with gradients, the torch path runs.
"""

from __future__ import annotations

import ctypes

import torch
from torch import Tensor

from model.kernels import ckernel

_C_SOURCE = r"""
#include <float.h>
#include <math.h>
#include <string.h>
/* 16-float vectors (GCC/Clang vector extensions: one AVX-512 register, or two AVX ones) */
typedef float v16 __attribute__((vector_size(64)));
static inline v16 load16(const float* p) { v16 v; memcpy(&v, p, sizeof v); return v; }
typedef float v8 __attribute__((vector_size(32)));
typedef float v4 __attribute__((vector_size(16)));
/* 16-bit (IEEE binary16) K/V storage: 16 halves <-> 16 floats, round to nearest even */
typedef unsigned short half_t;
#if defined(__AVX512F__) || defined(__F16C__)
#include <immintrin.h>
#endif
static inline v16 loadh16(const half_t* p) {
  v16 v;
#if defined(__AVX512F__)
  __m256i h; memcpy(&h, p, sizeof h);
  const __m512 f = _mm512_cvtph_ps(h); memcpy(&v, &f, sizeof v);
#elif defined(__F16C__)
  __m128i a, b; memcpy(&a, p, sizeof a); memcpy(&b, p + 8, sizeof b);
  const __m256 fa = _mm256_cvtph_ps(a), fb = _mm256_cvtph_ps(b);
  memcpy(&v, &fa, sizeof fa); memcpy((char*)&v + sizeof fa, &fb, sizeof fb);
#else
  for (int i = 0; i < 16; ++i) { _Float16 h; memcpy(&h, p + i, sizeof h); v[i] = (float)h; }
#endif
  return v;
}
static inline void storeh16(half_t* p, const float* x) {
#if defined(__AVX512F__)
  __m512 f; memcpy(&f, x, sizeof f);
  const __m256i h = _mm512_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); memcpy(p, &h, sizeof h);
#elif defined(__F16C__)
  __m256 a, b; memcpy(&a, x, sizeof a); memcpy(&b, x + 8, sizeof b);
  const __m128i ha = _mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT), hb = _mm256_cvtps_ph(b, _MM_FROUND_TO_NEAREST_INT);
  memcpy(p, &ha, sizeof ha); memcpy(p + 8, &hb, sizeof hb);
#else
  for (int i = 0; i < 16; ++i) { const _Float16 h = (_Float16)x[i]; memcpy(p + i, &h, sizeof h); }
#endif
}
/* (float storage: the same interface) */
static inline v16 loadf16(const float* p) { return load16(p); }
static inline void storef16(float* p, const float* x) { memcpy(p, x, 16 * sizeof(float)); }

static inline float hsum16(v16 v) {  /* a tree of halves, not a chain of 16 scalar adds */
  v8 lo, hi; v4 a, b;
  memcpy(&lo, &v, sizeof lo); memcpy(&hi, (const char*)&v + sizeof lo, sizeof hi);
  const v8 s8 = lo + hi;
  memcpy(&a, &s8, sizeof a); memcpy(&b, (const char*)&s8 + sizeof a, sizeof b);
  const v4 s4 = a + b;
  return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}

/* hsum16 of four vectors, each summed in hsum16's order (so bitwise equal to it), in 13 shuffles
   and adds where four hsum16 take about 32. */
static inline void hsum16x4(const v16* v, float* out) {
#if defined(__AVX512F__)
  __m512 a, b, c, d;
  memcpy(&a, v, 64); memcpy(&b, v + 1, 64); memcpy(&c, v + 2, 64); memcpy(&d, v + 3, 64);
  /* lane i + 8 onto lane i: [a, b] and [c, d], 8 lanes each */
  const __m512 x = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
  const __m512 y = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xEE));
  /* lane i + 4 onto lane i: [a, b, c, d], 4 lanes each */
  const __m512 z = _mm512_add_ps(_mm512_shuffle_f32x4(x, y, 0x88), _mm512_shuffle_f32x4(x, y, 0xDD));
  /* (s0 + s2) + (s1 + s3) in each 4 */
  const __m512 u = _mm512_add_ps(z, _mm512_permute_ps(z, 0x4E));
  const __m512 w = _mm512_add_ps(u, _mm512_permute_ps(u, 0xB1));
  float f[16];
  _mm512_storeu_ps(f, w);
  out[0] = f[0]; out[1] = f[4]; out[2] = f[8]; out[3] = f[12];
#else
  for (int i = 0; i < 4; ++i) out[i] = hsum16(v[i]);
#endif
}

/* Prefetch distance of the step kernel, in positions: the L2 streamer stops at 4 KB pages (16
   positions of a head at Dh = 64), so the kernel asks ahead itself. */
#define AHEAD 8
static inline void prefetch_position(const void* p, long bytes) {
  for (long b = 0; b < bytes; b += 64) __builtin_prefetch((const char*)p + b);
}
/* In GROUP_HEAD: row g's position j + AHEAD of storage S, unless past t or fetched by row 0 of the
   group (a beam's past shared with row 0).  A macro: as a function taking sr, it cost 25%. */
#define PREFETCH_AHEAD(S)                                                                            \
  { const long ja = j + AHEAD;                                                                       \
    if (ja <= t && (g == 0 || sr[g][ja] != sr[0][ja]))                                               \
      prefetch_position(S + ((sr[g][ja] * H + h) * T + ja) * Dh, Dh * sizeof(*S)); }

/* G rows of one sentence (its beams), one head, with NB blocks of 16 features (Dh = 16 NB): scores,
   softmax, weighted values, relative terms.  Row g's query, key and value are at q, kn, vn + g ldq
   and its output at out + g ldo; its past key and value of position j are read from storage row
   src[g ld + j].  The rows advance together over the positions: beams mostly share their past
   (the same storage row and position; see ``DecoderCache.compact``), so a shared key or value is
   read from memory once and then from L1 for the other beams.  Each row's arithmetic is that of a
   row alone (G = 1), in the same order.  The storage holds KT (float, or half_t read with
   loadh16 / written with storeh16). */
#define GROUP_HEAD(NAME, NB, G, KT, LD, ST)                                                          \
static void NAME(const float* q0, const float* kn0, const float* vn0, long ldq, KT* K, KT* V,        \
                 const long* src, long ld, const float* wk, const float* wv, float* out, long ldo,  \
                 long H, long h, long T, long t, long k, float scale) {                            \
  const long Dh = 16 * (NB);                                                                       \
  float e[G][t + 1], rl[G][k + 1], m[G], inv[G];                                                   \
  v16 q[G][NB], o[G][NB];                                                                          \
  const long* sr[G];                                                                               \
  for (int g = 0; g < (G); ++g) {                                                                  \
    const float *qr = q0 + g * ldq, *kn = kn0 + g * ldq, *vn = vn0 + g * ldq;                      \
    sr[g] = src + g * ld;                                                                          \
    for (int b = 0; b < (NB); ++b) {                             /* this step's key and value */   \
      ST(K + ((sr[g][t] * H + h) * T + t) * Dh + 16 * b, kn + 16 * b);                             \
      ST(V + ((sr[g][t] * H + h) * T + t) * Dh + 16 * b, vn + 16 * b);                             \
    }                                                                                              \
    for (int b = 0; b < (NB); ++b) { q[g][b] = scale * load16(qr + 16 * b); o[g][b] = (v16){0}; }  \
    for (long c = 0; c <= k && wk; ++c) { /* relative keys: q . w^K[c] for the k + 1 rows in reach */ \
      v16 a = q[g][0] * load16(wk + c * Dh);                                                       \
      for (int b = 1; b < (NB); ++b) a += q[g][b] * load16(wk + c * Dh + 16 * b);                  \
      rl[g][c] = hsum16(a);                                                                        \
    }                                                                                              \
    m[g] = -FLT_MAX;                                                                               \
  }                                                                                                \
  for (long j = 0; j <= t; ++j) {                                                                  \
    v16 a[G];                                                                                      \
    float x[G];                                                                                    \
    for (int g = 0; g < (G); ++g) {                                                                \
      PREFETCH_AHEAD(K)                                                                            \
      const KT* kj = K + ((sr[g][j] * H + h) * T + j) * Dh;                                        \
      a[g] = q[g][0] * LD(kj);                                                                     \
      for (int b = 1; b < (NB); ++b) a[g] += q[g][b] * LD(kj + 16 * b);                            \
    }                                                                                              \
    if ((G) == 4) hsum16x4(a, x); else for (int g = 0; g < (G); ++g) x[g] = hsum16(a[g]);          \
    for (int g = 0; g < (G); ++g) {                                                                \
      if (wk) { long c = j - t + k; x[g] += rl[g][c > 0 ? c : 0]; }  /* clip(j - t, k) + k */      \
      e[g][j] = x[g];                                                                              \
      m[g] = x[g] > m[g] ? x[g] : m[g];                                                            \
    }                                                                                              \
  }                                                                                                \
  for (int g = 0; g < (G); ++g) {                                                                  \
    float sum = 0.0f, *eg = e[g];                                                                  \
    const float mg = m[g];                                                                         \
    _Pragma("omp simd reduction(+:sum)")                                                           \
    for (long j = 0; j <= t; ++j) { eg[j] = expf(eg[j] - mg); sum += eg[j]; }                      \
    inv[g] = 1.0f / sum;                                                                           \
  }                                                                                                \
  for (long j = 0; j <= t; ++j)                                                                    \
    for (int g = 0; g < (G); ++g) {                                                                \
      PREFETCH_AHEAD(V)                                                                            \
      const KT* vj = V + ((sr[g][j] * H + h) * T + j) * Dh;                                        \
      const float p = e[g][j] * inv[g];                                                            \
      for (int b = 0; b < (NB); ++b) o[g][b] += p * LD(vj + 16 * b);                               \
    }                                                                                              \
  for (int g = 0; g < (G); ++g) {                                                                  \
    for (long c = 0; c <= k && wv; ++c) {                                                          \
      /* bucket c > 0 holds position t - k + c; bucket 0 every position j <= t - k */              \
      float w = 0.0f;                                                                              \
      if (c > 0) { long j = t - k + c; if (j >= 0) w = e[g][j]; }                                  \
      else for (long j = 0; j <= t - k; ++j) w += e[g][j];                                         \
      w *= inv[g];                                                                                 \
      for (int b = 0; b < (NB); ++b) o[g][b] += w * load16(wv + c * Dh + 16 * b);                  \
    }                                                                                              \
    for (int b = 0; b < (NB); ++b) memcpy(out + g * ldo + 16 * b, &o[g][b], sizeof(v16));          \
  }                                                                                                \
}
/* Groups of 1, 2 and 4 rows; the queries and accumulators of a group stay in registers with
   AVX-512's 32 (G NB <= 16), so wider groups are not built, and none without AVX-512. */
#if defined(__AVX512F__)
#define GROUP_MAX 4
#else
#define GROUP_MAX 1
#endif
#define GROUP_SIZES(NB, KT, LD, ST, SFX)                                                            \
GROUP_HEAD(head1_##SFX, NB, 1, KT, LD, ST)                                                          \
GROUP_HEAD(head2_##SFX, NB, 2, KT, LD, ST)                                                          \
GROUP_HEAD(head4_##SFX, NB, 4, KT, LD, ST)
GROUP_SIZES(1, float, loadf16, storef16, 16)
GROUP_SIZES(2, float, loadf16, storef16, 32)
GROUP_SIZES(4, float, loadf16, storef16, 64)
GROUP_SIZES(8, float, loadf16, storef16, 128)
GROUP_SIZES(1, half_t, loadh16, storeh16, h16)
GROUP_SIZES(2, half_t, loadh16, storeh16, h32)
GROUP_SIZES(4, half_t, loadh16, storeh16, h64)
GROUP_SIZES(8, half_t, loadh16, storeh16, h128)
#define GROUP_CALL(G, SFX) head##G##_##SFX(q, kn, vn, ldq, K, V, src, ld, wk, wv, out, ldo, H, h, T, t, k, scale)
#define GROUP_DISPATCH(SFX, KT)                                                                     \
  { KT *K = (KT*)Ks, *V = (KT*)Vs;                                                                  \
    if (G == 4) GROUP_CALL(4, SFX); else if (G == 2) GROUP_CALL(2, SFX); else GROUP_CALL(1, SFX); }

/* G (1, 2 or 4) rows, one head, for any supported Dh, float (half = 0) or half storage. */
static inline void step_group(const float* q, const float* kn, const float* vn, long ldq, void* Ks, void* Vs,
                              int half, const long* src, long ld, const float* wk, const float* wv, float* out,
                              long ldo, long G, long H, long h, long T, long t, long k, float scale, long Dh) {
  if (half) switch (Dh) {
    case 16: GROUP_DISPATCH(h16, half_t) break;
    case 32: GROUP_DISPATCH(h32, half_t) break;
    case 64: GROUP_DISPATCH(h64, half_t) break;
    default: GROUP_DISPATCH(h128, half_t) break;
  } else switch (Dh) {
    case 16: GROUP_DISPATCH(16, float) break;
    case 32: GROUP_DISPATCH(32, float) break;
    case 64: GROUP_DISPATCH(64, float) break;
    default: GROUP_DISPATCH(128, float) break;
  }
}

/* The largest group size (4, 2 or 1) that fits the rows left of a sentence and the registers. */
static inline long group_size(long left, long Dh) {
  const long most = 256 / Dh < GROUP_MAX ? 256 / Dh : GROUP_MAX;
  return left >= 4 && most >= 4 ? 4 : left >= 2 && most >= 2 ? 2 : 1;
}

/* Every (row, head) of a step: q, kn, vn (N, H, Dh) the queries (times scale in the kernel), keys
   and values of step t, rows ldq floats apart (a head's features at h Dh); K, V (S, H, T, Dh)
   storage of floats, or of halves (half = 1); src (N, ld) the storage row of each row's position
   j <= t; wk, wv (2k+1, Dh) or NULL; out rows ldo apart.  Each (row, head) first stores its key
   and value at (src[r, t], h, t): its own storage row, which no other row reads at position t.
   Rows come in sentences of ``beams`` adjacent rows, taken in groups of up to 4 (GROUP_HEAD).
   Shared by rel_step_attention and the fused decoding step. */
static void step_attention_rows(const float* q, const float* kn, const float* vn, long ldq, void* K, void* V,
                                int half, const long* src, long ld, const float* wk, const float* wv,
                                float* out, long ldo, long N, long beams, long H, long T, long Dh, long t,
                                long k, float scale, int threads) {
  if (beams < 1 || N % beams) beams = 1;
  long per = 0;  /* groups per sentence */
  for (long left = beams; left > 0; left -= group_size(left, Dh)) ++per;
  const long items = N / beams * per * H;
  #pragma omp parallel for num_threads(threads) schedule(static) if(threads > 1 && items > 1)
  for (long it = 0; it < items; ++it) {
    const long s = it / (per * H), gi = it / H % per, h = it % H;
    long r = s * beams, left = beams;
    for (long i = 0; i < gi; ++i) { const long g = group_size(left, Dh); r += g; left -= g; }
    const long G = group_size(left, Dh), o = r * ldq + h * Dh;
    step_group(q + o, kn + o, vn + o, ldq, K, V, half, src + r * ld, ld, wk, wv, out + r * ldo + h * Dh, ldo,
               G, H, h, T, t, k, scale, Dh);
  }
}

/* rel_step_attention: step_attention_rows for q, kn, vn, out (N, H, Dh) contiguous.  Dh in {16, 32,
   64, 128}; returns 0, or -1 for another Dh. */
int rel_step_attention(const float* q, const float* kn, const float* vn, void* K, void* V, int half,
                       const long* src, long ld, const float* wk, const float* wv, float* out,
                       long N, long beams, long H, long T, long Dh, long t, long k, float scale, int threads) {
  if (Dh != 16 && Dh != 32 && Dh != 64 && Dh != 128) return -1;
  step_attention_rows(q, kn, vn, H * Dh, K, V, half, src, ld, wk, wv, out, H * Dh, N, beams, H, T, Dh, t, k,
                      scale, threads);
  return 0;
}

/* Encoder relative self-attention of one query and one head over L keys.  Key j's q/k/v row is
   qkv + kr[j] * ld (q at 0, k at D, v at 2D of the row; kr NULL: row j), at position pos[j] (pos NULL:
   position kr[j], or j); the query is row qi at position pi.  uniform: equal weights on all L keys (a
   query with nothing to attend to, as torch's softmax over a fully masked row gives). */
#define ENC_HEAD(NAME, NB)                                                                           \
static void NAME(const float* qkv, long ld, long D, const long* kr, const long* pos, long L,         \
                 const float* qi, long pi, long h, const float* wk, const float* wv, long k,         \
                 float scale, int uniform, float* orow) {                                            \
  const long Dh = 16 * (NB);                                                                         \
  float e[L], bucket[2 * k + 1];                                                                     \
  v16 q[NB], o[NB];                                                                                  \
  for (int b = 0; b < (NB); ++b) { q[b] = scale * load16(qi + h * Dh + 16 * b); o[b] = (v16){0}; }  \
  float m = -FLT_MAX;                                                                                \
  for (long j = 0; j < L; ++j) {                                                                     \
    if (uniform) { e[j] = 0.0f; m = 0.0f; continue; }                                                \
    const float* kj = qkv + (kr ? kr[j] : j) * ld + D + h * Dh;                                      \
    v16 a = q[0] * load16(kj);                                                                       \
    for (int b = 1; b < (NB); ++b) a += q[b] * load16(kj + 16 * b);                                  \
    if (wk) {                             /* + q . w^K[clip(j - i, k) + k] */                        \
      long c = (pos ? pos[j] : kr ? kr[j] : j) - pi; c = (c < -k ? -k : c > k ? k : c) + k;         \
      for (int b = 0; b < (NB); ++b) a += q[b] * load16(wk + c * Dh + 16 * b);                       \
    }                                                                                                \
    e[j] = hsum16(a);                                                                                \
    m = e[j] > m ? e[j] : m;                                                                         \
  }                                                                                                  \
  float sum = 0.0f;                                                                                  \
  for (long j = 0; j < L; ++j) { e[j] = expf(e[j] - m); sum += e[j]; }                               \
  const float inv = 1.0f / sum;                                                                      \
  for (long c = 0; c < 2 * k + 1; ++c) bucket[c] = 0.0f;                                             \
  for (long j = 0; j < L; ++j) {                                                                     \
    const float p = e[j] * inv;                                                                      \
    const float* vj = qkv + (kr ? kr[j] : j) * ld + 2 * D + h * Dh;                                  \
    for (int b = 0; b < (NB); ++b) o[b] += p * load16(vj + 16 * b);                                  \
    if (wv) {                                                                                        \
      long c = (pos ? pos[j] : kr ? kr[j] : j) - pi; bucket[(c < -k ? -k : c > k ? k : c) + k] += p; \
    }                                                                                                \
  }                                                                                                  \
  for (long c = 0; c < 2 * k + 1 && wv; ++c)                                                         \
    if (bucket[c] != 0.0f)                                                                           \
      for (int b = 0; b < (NB); ++b) o[b] += bucket[c] * load16(wv + c * Dh + 16 * b);               \
  for (int b = 0; b < (NB); ++b) memcpy(orow + h * Dh + 16 * b, &o[b], sizeof(v16));                 \
}
ENC_HEAD(enc_16, 1)
ENC_HEAD(enc_32, 2)
ENC_HEAD(enc_64, 4)
ENC_HEAD(enc_128, 8)
static void enc_head(long Dh, const float* qkv, long ld, long D, const long* kr, const long* pos, long L,
                     const float* qi, long pi, long h, const float* wk, const float* wv, long k, float scale,
                     int uniform, float* orow) {
  switch (Dh) {
    case 16: enc_16(qkv, ld, D, kr, pos, L, qi, pi, h, wk, wv, k, scale, uniform, orow); break;
    case 32: enc_32(qkv, ld, D, kr, pos, L, qi, pi, h, wk, wv, k, scale, uniform, orow); break;
    case 64: enc_64(qkv, ld, D, kr, pos, L, qi, pi, h, wk, wv, k, scale, uniform, orow); break;
    default: enc_128(qkv, ld, D, kr, pos, L, qi, pi, h, wk, wv, k, scale, uniform, orow); break;
  }
}

/* qkv (B, T, 3D) the fused projections of every token (q, k, v of all heads); km (B, T) key mask
   (nonzero = real token); wk, wv (2k+1, Dh) or NULL; out (B, T, D) with heads side by side, as the
   output projection takes them; keys (B, T + 1) scratch.  Every query (padding too) attends to its
   sentence's real tokens (to all T, uniformly, when it has none).  Returns 0, or -1 for an
   unsupported Dh. */
int rel_self_attention(const float* qkv, const float* km, const float* wk, const float* wv, float* out,
                       long B, long T, long H, long Dh, long k, float scale, long* keys, int threads) {
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
"""


def kernel() -> ctypes.CDLL | None:
    """The compiled library, or None (no C compiler, or ``RENDITION_ATTENTION_KERNEL=0``)."""
    so = ckernel.load("attention_kernels", _C_SOURCE, "RENDITION_ATTENTION_KERNEL")
    if so is not None and not so.rel_step_attention.argtypes:
        P, L = ctypes.c_void_p, ctypes.c_long
        so.rel_step_attention.argtypes = [P, P, P, P, P, ctypes.c_int, P, L, P, P, P, L, L, L, L, L, L, L, ctypes.c_float, ctypes.c_int]
        so.rel_step_attention.restype = ctypes.c_int
        so.rel_self_attention.argtypes = [P] * 5 + [L] * 5 + [ctypes.c_float, P, ctypes.c_int]
        so.rel_self_attention.restype = ctypes.c_int
    return so


SUPPORTED_HEAD_DIMS = (16, 32, 64, 128)
KV_DTYPES = (torch.float32, torch.float16)  # K/V storage the step kernel reads


def usable(x: Tensor, head_dim: int) -> bool:
    """Whether the by-reference cache and this kernel can serve a decoder working on tensors like x."""
    return (
        x.device.type == "cpu"
        and x.dtype == torch.float32
        and head_dim in SUPPORTED_HEAD_DIMS
        and not torch.is_grad_enabled()
        and kernel() is not None
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


def _ptr(t: Tensor | None) -> int | None:
    return t.data_ptr() if t is not None else None


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
) -> Tensor:
    """q, k, v (N, H, 1, Dh): the step's queries (multiplied by ``scale``, Dh^-0.5, in the kernel), keys and values;
    k_store / v_store (S, H, T, Dh) contiguous storage, into which k and v are written at
    (src[:, t], :, t); src (N, >= t+1) int64 storage rows; rel_k / rel_v (2k+1, Dh) or None,
    max_rel = k; beams: rows per sentence (adjacent), read in groups.  Returns (N, H, 1, Dh)."""
    so = kernel()
    assert so is not None, "rel_step_attention needs the C kernel (check usable() first)"
    N, H, _, Dh = q.shape
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    out = torch.empty_like(q)
    wk, wv, max_rel = _tables(rel_k, rel_v, max_rel)
    rc = so.rel_step_attention(
        q.data_ptr(), k.data_ptr(), v.data_ptr(), k_store.data_ptr(), v_store.data_ptr(), _half(k_store), src.data_ptr(), src.stride(0),
        _ptr(wk), _ptr(wv), out.data_ptr(), N, beams, H, v_store.shape[2], Dh, t, max_rel, scale, torch.get_num_threads(),
    )  # fmt: skip
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
    rc = so.rel_self_attention(
        qkv.data_ptr(), km.data_ptr(), _ptr(wk), _ptr(wv), out.data_ptr(),
        B, T, heads, Dh, max_rel, Dh**-0.5, keys.data_ptr(), torch.get_num_threads(),
    )  # fmt: skip
    _check(rc, Dh)
    return out
