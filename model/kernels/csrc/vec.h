/* Vector helpers shared by the kernels: 16-float vectors (GCC/Clang vector extensions: one AVX-512
   register, or two AVX ones), IEEE binary16 K/V storage, horizontal sums.  Compiled once per ISA
   (setup.py): the #if branches pick the instructions of the variant being built. */
#ifndef RENDITION_VEC_H
#define RENDITION_VEC_H
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

#endif
