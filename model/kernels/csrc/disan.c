/* DiSAN's multi-dimensional token2token attention on CPU, forward and backward
   (model/embedding/disan.py): per (sentence, query) one stream over exactly the keys its direction
   allows, numerator and denominator accumulated in registers; the loop over features vectorised
   (expf from glibc's libmvec under -ffast-math). */
#include "rendition_kernels.h"

#include <math.h>
#include <string.h>
/* The sentence holding packed row r: the last bi with offsets[bi] <= r (binary search). */
static long packed_sentence(const long* offsets, long batch, long r) {
  long lo = 0, hi = batch - 1;
  while (lo < hi) {
    long mid = (lo + hi + 1) / 2;
    if (offsets[mid] <= r) lo = mid; else hi = mid - 1;
  }
  return lo;
}

/* forward: out = s (B, n, d); den (B, n, d) may be NULL (kept for the backward).  Row r's keys are
   rows [lo, hi) of the same sentence, key j skipped when km[j] == 0 (km NULL: packed, no padding). */
void rk_disan_t2t(const rk_disan_args* args) {
  const float *a = args->a, *b = args->b, *h = args->h, *km = args->key_mask;
  const long* off = args->offsets;
  float *out = args->s, *den_out = args->den;
  const long B = args->batch, n = args->len, d = args->dim;
  const long rows = off ? n : B * n;
  const int dir = args->direction, threads = args->threads;
  const float c = args->c;
  const float m2c = -2.0f * c;
  if (off) km = NULL;
  #pragma omp parallel for num_threads(threads) schedule(dynamic, 8)
  for (long r = 0; r < rows; ++r) {
    long lo, hi;                                              /* this sentence's rows */
    if (off) {
      long bi = packed_sentence(off, B, r);
      lo = off[bi], hi = off[bi + 1];
    } else {
      lo = r - r % n, hi = lo + n;
    }
    float num[d], den[d];
    memset(num, 0, sizeof(float) * d);
    memset(den, 0, sizeof(float) * d);
    long j0 = dir == 0 ? lo : r + 1, j1 = dir == 0 ? r : hi;  /* fw: j < i, bw: j > i */
    const float* ai = a + r * d;
    for (long j = j0; j < j1; ++j) {
      if (km && km[j] == 0.0f) continue;                       /* padding key */
      const float* bj = b + j * d;
      const float* hj = h + j * d;
      #pragma omp simd
      for (long t = 0; t < d; ++t) {
        float x = expf(m2c / (1.0f + ai[t] * bj[t]));          /* e^-c exp(c tanh((q_i + k_j) / c)) */
        den[t] += x;
        num[t] += x * hj[t];
      }
    }
    float* o = out + r * d;
    for (long t = 0; t < d; ++t) o[t] = den[t] > 0.0f ? num[t] / den[t] : 0.0f;
    if (den_out) memcpy(den_out + r * d, den, sizeof(float) * d);
  }
}
/* backward (padded rows only: offsets must be NULL): given g = dL/ds, dq_i = sum_j w_ij, dk_j = sum_i w_ij, dh_j = sum_i p_ij g_i, where
   w_ij = p_ij (h_j - s_i) g_i (1 - tanh^2) and p_ij = e_ij / den_i.  Parallel over sentences. */
void rk_disan_t2t_backward(const rk_disan_args* args) {
  const float *a = args->a, *b = args->b, *h = args->h, *km = args->key_mask, *s = args->s, *den = args->den;
  const float* g = args->grad;
  float *dq = args->dq, *dk = args->dk, *dh = args->dh;
  const long B = args->batch, n = args->len, d = args->dim;
  const int dir = args->direction, threads = args->threads;
  const float c = args->c;
  const float m2c = -2.0f * c;
  memset(dq, 0, sizeof(float) * B * n * d);
  memset(dk, 0, sizeof(float) * B * n * d);
  memset(dh, 0, sizeof(float) * B * n * d);
  #pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (long bi = 0; bi < B; ++bi) {
    float inv[d];
    for (long i = 0; i < n; ++i) {
      long r = bi * n + i;
      long j0 = dir == 0 ? 0 : i + 1, j1 = dir == 0 ? i : n;
      const float* ai = a + r * d;
      const float* si = s + r * d;
      const float* gi = g + r * d;
      float* dqi = dq + r * d;
      for (long t = 0; t < d; ++t) {
        inv[t] = den[r * d + t] > 0.0f ? gi[t] / den[r * d + t] : 0.0f;   /* g_i / den_i */
      }
      for (long j = j0; j < j1; ++j) {
        if (km[bi * n + j] == 0.0f) continue;
        long rj = bi * n + j;
        const float* bj = b + rj * d;
        const float* hj = h + rj * d;
        float* dkj = dk + rj * d;
        float* dhj = dh + rj * d;
        #pragma omp simd
        for (long t = 0; t < d; ++t) {
          float u = 1.0f / (1.0f + ai[t] * bj[t]);          /* tanh = 1 - 2u, 1 - tanh^2 = 4u(1 - u) */
          float pg = expf(m2c * u) * inv[t];                  /* p_ij g_i */
          float w = pg * (hj[t] - si[t]) * 4.0f * u * (1.0f - u);
          dqi[t] += w;
          dkj[t] += w;
          dhj[t] += pg;
        }
      }
    }
  }
}
