/* One read-only pass over a step's logits (N, V) instead of log_softmax (which writes an N x V table)
   followed by the chunk maxima of that table: per row, the maximum of every chunk of C logits and
   log(sum(exp(logits))).  The row (32 KB at V = 8000) stays in L1 between the max and the exp-sum
   sweep; expf is vectorised (glibc's libmvec under -ffast-math).  (model/translation/search.py) */
#include "rendition_kernels.h"

#include <float.h>
#include <math.h>
void rk_lse_chunk_max(const rk_lse_args* a) {
  const float* x = a->logits;
  float *cmax = a->chunk_max, *lse = a->lse;
  const long N = a->rows, V = a->vocab, C = a->chunk;
  const int threads = a->threads;
  const long nc = V / C;
  #pragma omp parallel for num_threads(threads) schedule(static) if(threads > 1 && N > 1)
  for (long r = 0; r < N; ++r) {
    const float* xr = x + r * V;
    float* cr = cmax + r * nc;
    float M = -FLT_MAX, S = 0.0f;
    for (long c = 0; c < nc; ++c) {
      const float* xc = xr + c * C;
      float m = -FLT_MAX;
      #pragma omp simd reduction(max:m)
      for (long t = 0; t < C; ++t) m = xc[t] > m ? xc[t] : m;
      cr[c] = m;
      M = m > M ? m : M;
    }
    /* (exponents clamped at -87, where expf is still a normal float: -inf logits, as a vocabulary
       shortlist masks them, would send every vector holding one down libmvec's scalar path) */
    #pragma omp simd reduction(+:S)
    for (long t = 0; t < V; ++t) {
      const float d = xr[t] - M;
      S += expf(d > -87.0f ? d : -87.0f);
    }
    lse[r] = M + logf(S);
  }
}
