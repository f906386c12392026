/* The attention kernels' bodies (static): the decoder's step attention over a by-reference KV cache
   (GROUP_HEAD, step_attention_rows) and the encoder's relative self-attention of one query and
   head (ENC_HEAD, enc_head).  Included by attention.c and fused.c, each a translation unit of its
   own, as the kernels were built before they became files. */
#ifndef RENDITION_ATTENTION_IMPL_H
#define RENDITION_ATTENTION_IMPL_H
#include <float.h>
#include <math.h>
#include <string.h>

#include "vec.h"

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
   Rows come in sentences of ``beams`` adjacent rows, taken in groups of up to 4 (GROUP_HEAD).  steps
   (N) or NULL: each row's own step in place of t (a sentence that joined a running search later is
   at an earlier step than the others; the beams of a sentence share theirs).
   Shared by rel_step_attention and the fused decoding step. */
static void step_attention_rows(const float* q, const float* kn, const float* vn, long ldq, void* K, void* V,
                                int half, const long* src, long ld, const long* steps, const float* wk,
                                const float* wv, float* out, long ldo, long N, long beams, long H, long T,
                                long Dh, long t, long k, float scale, int threads) {
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
               G, H, h, T, steps ? steps[r] : t, k, scale, Dh);
  }
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

#endif
