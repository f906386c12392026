/* Int8 weights packed once for oneDNN's matmul primitive (the layout its JIT kernel reads: AMX tiles
   or VNNI blocks), and the products over them.

   oneDNN's BLAS-like dnnl_gemm_u8s8s32 repacks the whole weight matrix on every call, which for a
   decoding step's few rows costs more than the arithmetic.  Here a weight is reordered once
   (rk_qlinear_pack) into the blocked format the matmul primitive picks for it; each product then
   runs a primitive made for its number of rows (M), kept per calling thread and reused.  The
   products are the same integer sums as the gemm's (u8 x s8 -> s32, exact), so the int8 results do
   not change.

   oneDNN's C API is reached through addresses set from Python (rk_set_dnnl_api), as the gemm's is;
   the few enum values used below are those of oneDNN 3.x's stable C API. */
#include <omp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rendition_kernels.h"

typedef void* dnnl_handle;  /* engine, stream, memory, memory desc, primitive desc, primitive */
typedef struct { int arg; dnnl_handle memory; } dnnl_exec_arg;

enum { DNNL_CPU = 1, DNNL_STREAM_IN_ORDER = 1, DNNL_S32 = 4, DNNL_S8 = 5, DNNL_U8 = 6, DNNL_TAG_ANY = 1,
       DNNL_QUERY_IMPL_INFO_STR = 8, DNNL_QUERY_WEIGHTS_MD = 131, DNNL_ARG_SRC = 1, DNNL_ARG_DST = 17, DNNL_ARG_WEIGHTS = 33 };
#define DNNL_MEMORY_ALLOCATE ((void*)(size_t)-1)

static struct {
  int (*engine_create)(dnnl_handle*, int, size_t);
  int (*stream_create)(dnnl_handle*, dnnl_handle, unsigned);
  int (*stream_destroy)(dnnl_handle);
  int (*md_create_with_strides)(dnnl_handle*, int, const int64_t*, int, const int64_t*);
  int (*md_create_with_tag)(dnnl_handle*, int, const int64_t*, int, int);
  int (*md_clone)(dnnl_handle*, const void*);
  int (*md_destroy)(dnnl_handle);
  int (*md_equal)(const void*, const void*);
  int (*matmul_pd_create)(dnnl_handle*, dnnl_handle, const void*, const void*, const void*, const void*,
                          const void*);
  int (*reorder_pd_create)(dnnl_handle*, const void*, dnnl_handle, const void*, dnnl_handle, const void*);
  const void* (*pd_query_md)(const void*, int, int);
  int (*pd_destroy)(dnnl_handle);
  int (*primitive_create)(dnnl_handle*, const void*);
  int (*primitive_execute)(const void*, dnnl_handle, int, const dnnl_exec_arg*);
  int (*primitive_destroy)(dnnl_handle);
  int (*memory_create)(dnnl_handle*, const void*, dnnl_handle, void*);
  int (*memory_set_data_handle)(dnnl_handle, void*);
  int (*memory_destroy)(dnnl_handle);
  size_t (*md_get_size)(const void*);
  int (*pd_query)(const void*, int, int, void*);
} API;
static dnnl_handle ENGINE = NULL;

/* The addresses, in rk_dnnl_api's order; returns 0, or -1 (a missing address, or no CPU engine). */
int rk_set_dnnl_api(const rk_dnnl_api* a) {
  if (sizeof API != sizeof a->fn) return -1;
  for (size_t i = 0; i < sizeof a->fn / sizeof a->fn[0]; ++i)
    if (!a->fn[i]) return -1;
  memcpy(&API, a->fn, sizeof API);
  if (!ENGINE && API.engine_create(&ENGINE, DNNL_CPU, 0) != 0) {
    ENGINE = NULL;
    return -1;
  }
  return 0;
}

struct rk_packed {
  unsigned long id;    /* unique in the process (an address may be reused after a free) */
  dnnl_handle engine;  /* the engine it was packed on (of the library variant that packed it) */
  dnnl_handle md;      /* the packed weights' (K, N) desc, oneDNN's choice */
  dnnl_handle memory;  /* the packed weights (owned by oneDNN) */
  long N, K;
};

/* (M, K) u8 rows ld apart, (K, N) s8 in the packed desc wmd (NULL: format any), (M, N) s32 rows ldo apart */
static int matmul_pd(dnnl_handle engine, dnnl_handle* pd, long M, long N, long K, long ld, long ldo, const void* wmd) {
  const int64_t sd[2] = {M, K}, ss[2] = {ld, 1}, wd[2] = {K, N}, dd[2] = {M, N}, ds[2] = {ldo, 1};
  dnnl_handle src = NULL, wany = NULL, dst = NULL;
  int rc = API.md_create_with_strides(&src, 2, sd, DNNL_U8, ss);
  if (rc == 0 && !wmd) rc = API.md_create_with_tag(&wany, 2, wd, DNNL_S8, DNNL_TAG_ANY);
  if (rc == 0) rc = API.md_create_with_strides(&dst, 2, dd, DNNL_S32, ds);
  if (rc == 0) rc = API.matmul_pd_create(pd, engine, src, wmd ? wmd : wany, NULL, dst, NULL);
  const char* impl = NULL;  /* oneDNN's reference implementation is far slower than its gemm: refused */
  if (rc == 0 && (API.pd_query(*pd, DNNL_QUERY_IMPL_INFO_STR, 0, &impl) != 0 || !impl || !strncmp(impl, "ref", 3))) {
    API.pd_destroy(*pd);
    *pd = NULL;
    rc = -1;
  }
  if (src) API.md_destroy(src);
  if (wany) API.md_destroy(wany);
  if (dst) API.md_destroy(dst);
  return rc;
}

/* Copy the weight between its plain form w (N, K) row-major and its packed memory: to_packed, or back. */
static int copy_weight(const struct rk_packed* P, signed char* w, int to_packed) {
  const int64_t wd[2] = {P->K, P->N}, ws[2] = {1, P->K};  /* w (N, K) row-major is (K, N) with strides (1, K) */
  dnnl_handle plain_md = NULL, plain = NULL, rpd = NULL, reorder = NULL, stream = NULL;
  int rc = API.md_create_with_strides(&plain_md, 2, wd, DNNL_S8, ws);
  if (rc == 0) rc = API.memory_create(&plain, plain_md, P->engine, w);
  if (rc == 0)
    rc = to_packed ? API.reorder_pd_create(&rpd, plain_md, P->engine, P->md, P->engine, NULL)
                   : API.reorder_pd_create(&rpd, P->md, P->engine, plain_md, P->engine, NULL);
  if (rc == 0) rc = API.primitive_create(&reorder, rpd);
  if (rc == 0) rc = API.stream_create(&stream, P->engine, DNNL_STREAM_IN_ORDER);
  if (rc == 0) {
    const dnnl_exec_arg args[2] = {{DNNL_ARG_SRC, to_packed ? plain : P->memory},
                                   {DNNL_ARG_DST, to_packed ? P->memory : plain}};
    rc = API.primitive_execute(reorder, stream, 2, args);
  }
  if (stream) API.stream_destroy(stream);
  if (reorder) API.primitive_destroy(reorder);
  if (rpd) API.pd_destroy(rpd);
  if (plain) API.memory_destroy(plain);
  if (plain_md) API.md_destroy(plain_md);
  return rc == 0 ? 0 : -1;
}

/* The weight w (N, K) row-major, packed for the matmul primitive; NULL where that cannot be done. */
void* rk_qlinear_pack(const signed char* w, long N, long K) {
  static unsigned long next_id = 0;
  if (!ENGINE || !w || N <= 0 || K <= 0) return NULL;
  struct rk_packed* P = calloc(1, sizeof *P);
  if (!P) return NULL;
  P->engine = ENGINE;
  P->N = N;
  P->K = K;
  P->id = __atomic_add_fetch(&next_id, 1, __ATOMIC_RELAXED);
  dnnl_handle pd = NULL;
  int rc = matmul_pd(ENGINE, &pd, 64, N, K, K, N, NULL);
  if (rc == 0) rc = API.md_clone(&P->md, API.pd_query_md(pd, DNNL_QUERY_WEIGHTS_MD, 0));
  if (rc == 0) rc = API.memory_create(&P->memory, P->md, ENGINE, DNNL_MEMORY_ALLOCATE);
  if (rc == 0) rc = copy_weight(P, (signed char*)w, 1);
  if (pd) API.pd_destroy(pd);
  if (rc != 0) {
    rk_qlinear_free(P);
    return NULL;
  }
  return P;
}

/* The packed weight back in its plain form: w (N, K) row-major. */
int rk_qlinear_unpack(const void* packed, signed char* w) {
  return packed && w ? copy_weight(packed, w, 0) : -1;
}

unsigned long rk_qlinear_packed_id(const void* packed) { return packed ? ((const struct rk_packed*)packed)->id : 0; }

long rk_qlinear_packed_bytes(const void* packed) {
  const struct rk_packed* P = packed;
  return P ? (long)API.md_get_size(P->md) : 0;
}

void rk_qlinear_free(void* packed) {
  struct rk_packed* P = packed;
  if (!P) return;
  if (P->memory) API.memory_destroy(P->memory);
  if (P->md) API.md_destroy(P->md);
  free(P);
}

/* Per calling thread: a stream and the primitives made so far, by (N, K, M, ld of the output,
   threads, the packed desc), in an open-addressing table; weights of one shape share them.  Each
   entry owns a copy of the desc it was made for and memory objects for its source and destination,
   their data handles set per call.

   A primitive holds its JIT kernels, sizeable whatever the weight's shape (docs/benchmarks.md), so one per
   distinct row count would grow without bound in a server whose batches take every size: products
   run on a few row counts instead (rk_packed_rows: exact up to 16, then multiples of 4 up to 64 (a
   beam of 4 decodes in those) and of 16 up to MAX_ROWS (AMX computes 16 rows at a time), in blocks
   of MAX_ROWS), the caller's buffers holding the extra rows, whose outputs are not used.  A thread
   then holds at most 40 primitives per weight shape and thread count. */
#define SLOTS 8192
#define MAX_ROWS 256
typedef struct {
  dnnl_handle engine;
  long N, K, M, ldo;
  int threads;
  int failed;      /* no primitive for this M with this packing: the gemm does it */
  dnnl_handle md, prim, src, dst;
} entry;
static long LIMIT = SLOTS * 3 / 4;  /* entries a thread makes at most (rk_packed_limit) */
static __thread entry* TABLE = NULL;
static __thread long USED = 0;
static __thread dnnl_handle STREAM = NULL, STREAM_ENGINE = NULL;

/* A thread's table and stream go with the thread (a key whose destructor runs at its exit). */
static pthread_key_t EXIT_KEY;
static pthread_once_t EXIT_ONCE = PTHREAD_ONCE_INIT;
static void at_thread_exit(void* unused) {
  (void)unused;
  rk_packed_forget();
  if (STREAM) API.stream_destroy(STREAM);
  STREAM = NULL;
}
static void make_exit_key(void) { pthread_key_create(&EXIT_KEY, at_thread_exit); }

static entry* lookup(const struct rk_packed* P, long M, long ldo, int threads) {
  if (!TABLE) {
    TABLE = calloc(SLOTS, sizeof(entry));
    if (!TABLE) return NULL;
    pthread_once(&EXIT_ONCE, make_exit_key);
    pthread_setspecific(EXIT_KEY, TABLE);
  }
  const uint64_t h = (uint64_t)P->N * 0x9E3779B97F4A7C15ull ^ (uint64_t)P->K * 0xBF58476D1CE4E5B9ull ^
                     (uint64_t)M * 0xC2B2AE3D27D4EB4Full ^ (uint64_t)ldo * 0x165667B19E3779F9ull ^ (uint64_t)threads;
  for (long probe = 0; probe < SLOTS; ++probe) {
    entry* e = TABLE + ((h >> 17) + probe) % SLOTS;
    if (!e->md) {
      if (USED >= __atomic_load_n(&LIMIT, __ATOMIC_RELAXED) || API.md_clone(&e->md, P->md) != 0) {
        e->md = NULL;
        return NULL;  /* (full enough, or no memory: the gemm does it) */
      }
      e->engine = P->engine; e->N = P->N; e->K = P->K; e->M = M; e->ldo = ldo; e->threads = threads;
      ++USED;
      return e;
    }
    if (e->engine == P->engine && e->N == P->N && e->K == P->K && e->M == M && e->ldo == ldo && e->threads == threads &&
        API.md_equal(e->md, P->md))
      return e;
  }
  return NULL;
}

static int make(entry* e, const struct rk_packed* P) {
  dnnl_handle pd = NULL;
  const int64_t sd[2] = {e->M, P->K}, ss[2] = {P->K, 1}, dd[2] = {e->M, P->N}, ds[2] = {e->ldo, 1};
  dnnl_handle smd = NULL, dmd = NULL;
  int rc = matmul_pd(P->engine, &pd, e->M, P->N, P->K, P->K, e->ldo, e->md);
  if (rc == 0) rc = API.primitive_create(&e->prim, pd);
  if (rc == 0) rc = API.md_create_with_strides(&smd, 2, sd, DNNL_U8, ss);
  if (rc == 0) rc = API.md_create_with_strides(&dmd, 2, dd, DNNL_S32, ds);
  if (rc == 0) rc = API.memory_create(&e->src, smd, P->engine, NULL);
  if (rc == 0) rc = API.memory_create(&e->dst, dmd, P->engine, NULL);
  if (smd) API.md_destroy(smd);
  if (dmd) API.md_destroy(dmd);
  if (pd) API.pd_destroy(pd);
  return rc;
}

/* out (M, N) int32, rows ldo apart = xq (M, K) u8 @ W^T over the packed weights, on `threads`
   threads.  Returns 0, or -1 (no primitive for this shape: the caller runs the gemm). */
static int packed_rows(const struct rk_packed* P, const unsigned char* xq, int* out, long ldo, long M, int threads);

static long block_rows(long M) { return M <= 16 ? M : M <= 64 ? (M + 3) / 4 * 4 : (M + 15) / 16 * 16; }

long rk_packed_rows(long M) {
  if (M <= 0) return 0;
  const long tail = M % MAX_ROWS;
  return M - tail + (tail ? block_rows(tail) : 0);
}

int rk_packed_gemm(const void* packed, const unsigned char* xq, int* out, long ldo, long M, int threads) {
  /* in blocks of at most MAX_ROWS rows, the last one run on rk_packed_rows's count */
  const struct rk_packed* P = packed;
  if (!P || M <= 0) return -1;
  for (long m0 = 0; m0 < M; m0 += MAX_ROWS) {
    const long rows = M - m0 < MAX_ROWS ? M - m0 : MAX_ROWS;
    if (packed_rows(P, xq + m0 * P->K, out + m0 * ldo, ldo, block_rows(rows), threads) != 0) return -1;
  }
  return 0;
}

long rk_packed_count(void) { return USED; }

static int packed_rows(const struct rk_packed* P, const unsigned char* xq, int* out, long ldo, long M, int threads) {
  if (STREAM && STREAM_ENGINE != P->engine) {  /* (a weight packed by another variant of this library) */
    API.stream_destroy(STREAM);
    STREAM = NULL;
  }
  if (!STREAM) {
    if (API.stream_create(&STREAM, P->engine, DNNL_STREAM_IN_ORDER) != 0) {
      STREAM = NULL;
      return -1;
    }
    STREAM_ENGINE = P->engine;
  }
  entry* e = lookup(P, M, ldo, threads);
  if (!e || e->failed) return -1;
  const int before = omp_get_max_threads();
  if (before != threads) omp_set_num_threads(threads);  /* (oneDNN's primitives use this thread's count) */
  int rc = 0;
  if (!e->prim && make(e, P) != 0) {
    e->failed = 1;
    rc = -1;
  }
  if (rc == 0) {
    API.memory_set_data_handle(e->src, (void*)xq);
    API.memory_set_data_handle(e->dst, out);
    const dnnl_exec_arg args[3] = {{DNNL_ARG_SRC, e->src}, {DNNL_ARG_WEIGHTS, P->memory}, {DNNL_ARG_DST, e->dst}};
    rc = API.primitive_execute(e->prim, STREAM, 3, args) == 0 ? 0 : -1;
  }
  if (before != threads) omp_set_num_threads(before);
  return rc;
}

/* Drop the calling thread's primitives (their weights stay packed). */
void rk_packed_forget(void) {
  if (!TABLE) return;
  for (long i = 0; i < SLOTS; ++i) {
    entry* e = TABLE + i;
    if (e->prim) API.primitive_destroy(e->prim);
    if (e->src) API.memory_destroy(e->src);
    if (e->dst) API.memory_destroy(e->dst);
    if (e->md) API.md_destroy(e->md);
  }
  free(TABLE);
  TABLE = NULL;
  USED = 0;
}

/* At most `entries` primitives per thread from now on (clamped to the table's size); returns the
   limit before.  With 0, every product runs on the gemm (over the weight unpacked where the plain
   copy was dropped): for tests of that path. */
long rk_packed_limit(long entries) {
  const long cap = SLOTS * 3 / 4;
  entries = entries < 0 ? 0 : (entries > cap ? cap : entries);
  return __atomic_exchange_n(&LIMIT, entries, __ATOMIC_RELAXED);
}
