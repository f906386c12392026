/* The native kernels' interface: every entry point takes one struct of arguments (mirrored by the
   ctypes Structures of model/kernels/native.py, which checks their sizes against rk_struct_size
   when it loads a library).  One shared library is built per instruction set (setup.py:
   generic x86-64, AVX2, AVX-512); model/kernels/native.py loads the best one the CPU runs.

   Shapes are row-major and contiguous unless a stride is given; "long" is 64-bit (LP64). */
#ifndef RENDITION_KERNELS_H
#define RENDITION_KERNELS_H

#define RK_ABI_VERSION 6

/* One decoding step's self-attention over a by-reference KV cache (model/translation/cache.py). */
typedef struct {
  const float *q, *k, *v;   /* (rows, heads, head_dim): the step's queries (scaled here), keys, values */
  void *k_store, *v_store;  /* (storage rows, heads, max_len, head_dim) floats, or halves (half = 1) */
  const long* src;          /* (rows, src_stride): storage row of each row's position j <= t */
  long src_stride;
  const long* steps;        /* (rows,) each row's own step t (sentences that joined later), or NULL: t for all */
  const float *rel_k, *rel_v; /* (2 max_rel + 1, head_dim) relative tables, or NULL */
  float* out;               /* (rows, heads, head_dim) */
  long rows, beams, heads, max_len, head_dim, t, max_rel;
  float scale;
  int half, threads;
} rk_step_attention_args;

/* The encoder's relative self-attention from the fused Q/K/V projections. */
typedef struct {
  const float* qkv;         /* (batch, len, 3 D) */
  const float* key_mask;    /* (batch, len), nonzero = real token */
  const float *rel_k, *rel_v; /* (2 max_rel + 1, head_dim) or NULL */
  float* out;               /* (batch, len, D), heads side by side */
  long* scratch;            /* (batch, len + 1) */
  long batch, len, heads, head_dim, max_rel;
  float scale;
  int threads;
} rk_self_attention_args;

/* A linear map's weight W (out, in) in int8 (the int8 compute type): symmetric per output channel,
   W[n][k] ~ scale[n] w[n][k], |w| <= 127, and colsum[n] = sum_k w[n][k] (the compensation of the
   activations' zero point).  w NULL: the map is float32 (the float pointer beside it is used).
   packed: the same weight packed for oneDNN's matmul primitive (rk_qlinear_pack), or NULL; the
   products then run on it, with the gemm over w where no primitive serves (w may then be NULL: the
   packed weight is unpacked for it). */
typedef struct {
  const signed char* w;     /* (out, in) */
  const float* scale;       /* (out,) */
  const int* colsum;        /* (out,) */
  const void* packed;
} rk_qlinear;

/* A decoder layer's weights (torch's nn.Linear layout: (out, in)); w_qkv / b_qkv the fused
   self-attention input projections (3D, D) / (3D,); rel_k / rel_v NULL without relative positions.
   q_*: the int8 forms of w_qkv, w_o, wx_q, wx_o, w_1, w_2 (each used in place of its float weight,
   which may then be NULL, when its w is set). */
typedef struct {
  const float *ln1_g, *ln1_b, *w_qkv, *b_qkv, *rel_k, *rel_v, *w_o, *b_o;
  const float *ln2_g, *ln2_b, *wx_q, *bx_q, *wx_o, *bx_o;
  const float *ln3_g, *ln3_b, *w_1, *b_1, *w_2, *b_2;
  rk_qlinear q_qkv, q_o, qx_q, qx_o, q_1, q_2;
} rk_decoder_layer;

/* A decoder layer's cache: cross-attention K, V (sentences, heads, src_len, head_dim) and the
   self-attention K, V storage (storage rows, heads, max_len, head_dim), floats or halves. */
typedef struct {
  const float *cross_k, *cross_v;
  void *self_k, *self_v;
} rk_layer_cache;

typedef struct {
  const float *embed;       /* (vocab, D) */
  const float *norm_g, *norm_b; /* final layer norm */
  const float *out_proj;    /* (D, vocab): the tied embedding, transposed */
  const rk_decoder_layer* layers;
  long n_layers;
  rk_qlinear q_embed;       /* int8 embedding (vocab, D), or w NULL: used for the lookup (rows
                               dequantised) and the output projection in place of embed / out_proj */
} rk_decoder_weights;

/* One decoding step for rows = sentences x beams (beams adjacent): logits (rows, vocab). */
typedef struct {
  const rk_decoder_weights* weights;
  const rk_layer_cache* cache; /* n_layers entries */
  const long* tokens;       /* (rows,) */
  const long* src;          /* (rows, src_stride) storage rows, column t (steps[r]) already set */
  long src_stride;
  const long* steps;        /* (rows,) each row's own step, or NULL: t for all */
  const long* cross_rows;   /* (sentences,) each sentence's row of cross_k/v and mem_bias, or NULL: its own */
  const long* cross_lens;   /* (cross rows,) real source tokens of each (they come first), or NULL: src_len */
  const float* mem_bias;    /* (cross rows, src_len): 0 or the most negative float */
  const float* pos;         /* sinusoidal positions, or NULL: the row of step t (D), or with steps the
                               whole table (max_positions, D), row steps[r] for row r */
  float *x, *h, *qkv, *ff;  /* scratch (rows, D), (rows, D), (rows, 3D), (rows, d_ff) */
  float* logits;            /* (rows, vocab) */
  long rows, beams, d_model, heads, d_ff, vocab, src_len, max_len, t, max_rel;
  float emb_scale, eps;
  int half, threads;
  /* A vocabulary shortlist's output projection in place of the weights' (vocab is then its size),
     or both NULL: out_proj (D, vocab) float, or q_out (vocab, D) int8 rows of the embedding. */
  const float* out_proj;
  const rk_qlinear* q_out;
} rk_decoder_step_args;

typedef struct {
  const float *ln1_g, *ln1_b, *w_qkv, *b_qkv, *rel_k, *rel_v, *w_o, *b_o;
  const float *ln2_g, *ln2_b, *w_1, *b_1, *w_2, *b_2;
  rk_qlinear q_qkv, q_o, q_1, q_2;  /* int8 forms of w_qkv, w_o, w_1, w_2 (as in rk_decoder_layer) */
} rk_encoder_layer;

typedef struct {
  const float *embed, *norm_g, *norm_b;
  const float *positions;   /* (max_positions, D) sinusoidal table, or NULL */
  const rk_encoder_layer* layers;
  long n_layers;
  rk_qlinear q_embed;       /* int8 embedding for the lookup in place of embed, or w NULL */
} rk_encoder_weights;

/* The encoder over the real tokens of a padded batch: mem (batch, len, D), zeros at padding. */
typedef struct {
  const rk_encoder_weights* weights;
  const long* src;          /* (batch, len) token ids */
  float *x, *h, *qkv, *ff;  /* scratch for the n real tokens: (n, D), (n, D), (n, 3D), (n, d_ff) */
  long *rows, *pos, *off;   /* scratch (n,), (n,), (batch + 1,) */
  float* mem;
  long batch, len, pad, d_model, heads, d_ff, max_rel;
  float emb_scale, eps;
  int threads;
} rk_encoder_args;

/* Per row of logits (rows, vocab): the maxima of its chunks of `chunk` logits and its log-sum-exp. */
typedef struct {
  const float* logits;
  float *chunk_max, *lse;   /* (rows, vocab / chunk), (rows,) */
  long rows, vocab, chunk;
  int threads;
} rk_lse_args;

/* DiSAN token2token attention (model/embedding/disan.py), forward and backward. */
typedef struct {
  const float *a, *b, *h, *key_mask; /* (B, n, d) x3, (B, n) */
  const long* offsets;      /* NULL, or packed rows (forward only): a, b, h, s, den are (len, d) with
                               sentence bi in rows offsets[bi] .. offsets[bi + 1] - 1 (batch + 1
                               entries, offsets[batch] == len); key_mask unused */
  float *s, *den;           /* forward: out (B, n, d), den (B, n, d) or NULL; backward: inputs */
  const float* grad;        /* backward: dL/ds (B, n, d) */
  float *dq, *dk, *dh;      /* backward: outputs (B, n, d) */
  long batch, len, dim;
  float c;
  int direction;            /* 0 forward (j < i), 1 backward (j > i) */
  int threads;
} rk_disan_args;

/* One int8 linear map, y (M, N) = x (M, K) @ W^T dequantised (the kernel the int8 compute type runs
   for every projection; an entry point of its own for the tests).  x's rows are quantised to
   unsigned 8 bits with a zero point each: x[m][k] ~ x_scale[m] (xq[m][k] - x_zero[m]), xq in
   [0, act_max]; acc = xq @ w^T in int32; y = x_scale[m] scale[n] (acc - x_zero[m] colsum[n]). */
typedef struct {
  const float* x;           /* (M, K) */
  const rk_qlinear* w;      /* (N, K) */
  float* y;                 /* (M, N) */
  unsigned char* xq;        /* (M, K) out: the quantised rows, or NULL */
  float* x_scale;           /* (M,) out, or NULL */
  int *x_zero, *acc;        /* (M,), (M, N) out: zero points, int32 accumulators; or NULL */
  long M, N, K;
  int threads;
} rk_qlinear_args;

enum { RK_STEP_ATTENTION, RK_SELF_ATTENTION, RK_DECODER_LAYER, RK_LAYER_CACHE, RK_DECODER_WEIGHTS,
       RK_DECODER_STEP, RK_ENCODER_LAYER, RK_ENCODER_WEIGHTS, RK_ENCODER, RK_LSE, RK_DISAN, RK_QLINEAR,
       RK_QLINEAR_ARGS, RK_DNNL_API, RK_STRUCTS };

int rk_abi_version(void);
long rk_struct_size(int which);   /* sizeof the struct RK_<which>, or -1 */
const char* rk_isa(void);         /* the instruction set this library was built for */
int rk_cpu_supports(const char* isa); /* 1 when the running CPU has it ("avx2", "avx512") */

/* Return 0, or -1 for an unsupported head_dim (16, 32, 64, 128) or no sgemm (rk_set_sgemm / rk_set_dnnl_sgemm),
   or int8 weights without rk_set_dnnl_gemm_u8s8s32. */
int rk_step_attention(const rk_step_attention_args* a);
int rk_self_attention(const rk_self_attention_args* a);
void rk_set_sgemm(void* fortran_sgemm);
void rk_set_dnnl_sgemm(void* dnnl_sgemm);  /* oneDNN's row-major sgemm in place of the Fortran one */
void rk_release_scratch(void);  /* the calling thread's scratch buffers over 8 MiB, freed (when its work is done) */
/* oneDNN's dnnl_gemm_u8s8s32 (row-major, arguments by value) for the int8 maps, and the largest
   quantised activation: 255 where the CPU multiplies u8 x s8 with VNNI (int32 sums), 127 where
   oneDNN pairs products in saturating int16 sums (2 x 127 x 127 fits). */
void rk_set_dnnl_gemm_u8s8s32(void* fn, int act_max);
/* Returns 0, or -1 without rk_set_dnnl_gemm_u8s8s32. */
int rk_qlinear_forward(const rk_qlinear_args* a);

/* oneDNN's C API functions the packed products call, in this order: dnnl_engine_create,
   dnnl_stream_create, dnnl_stream_destroy, dnnl_memory_desc_create_with_strides,
   dnnl_memory_desc_create_with_tag, dnnl_memory_desc_clone, dnnl_memory_desc_destroy,
   dnnl_memory_desc_equal, dnnl_matmul_primitive_desc_create, dnnl_reorder_primitive_desc_create,
   dnnl_primitive_desc_query_md, dnnl_primitive_desc_destroy, dnnl_primitive_create,
   dnnl_primitive_execute, dnnl_primitive_destroy, dnnl_memory_create, dnnl_memory_set_data_handle,
   dnnl_memory_destroy, dnnl_memory_desc_get_size, dnnl_primitive_desc_query. */
typedef struct { void* fn[20]; } rk_dnnl_api;
int rk_set_dnnl_api(const rk_dnnl_api* api);  /* 0, or -1: a NULL address or no CPU engine */
/* w (N, K) int8 row-major packed for the matmul primitive (a handle for rk_qlinear.packed), or NULL
   (no API set, or oneDNN refused); rk_qlinear_free releases it. */
void* rk_qlinear_pack(const signed char* w, long N, long K);
void rk_qlinear_free(void* packed);
long rk_qlinear_packed_bytes(const void* packed);  /* the packed weight's bytes */
int rk_qlinear_unpack(const void* packed, signed char* w);  /* back to w (N, K) row-major: 0, or -1 */
unsigned long rk_qlinear_packed_id(const void* packed);  /* unique in the process, never reused */
/* out (M, N) int32, rows ldo apart = xq (M, K) @ W^T over a packed weight: 0, or -1 (not done:
   no primitive but oneDNN's reference one for this shape, or the calling thread's table is full).
   xq and out must hold rk_packed_rows(M) >= M rows: the product runs on that many (rows past M are
   read, and written with values of no use). */
int rk_packed_gemm(const void* packed, const unsigned char* xq, int* out, long ldo, long M, int threads);
long rk_packed_rows(long M);  /* the rows a product of M rows runs on (a few counts: primitives bounded) */
long rk_packed_count(void);  /* the calling thread's primitives */
void rk_packed_forget(void);  /* drop the calling thread's primitives */
long rk_packed_limit(long entries);  /* primitives per thread at most (tests: 0); returns the old limit */
int rk_decoder_step(const rk_decoder_step_args* a);
int rk_encoder_forward(const rk_encoder_args* a);
void rk_lse_chunk_max(const rk_lse_args* a);
void rk_disan_t2t(const rk_disan_args* a);
void rk_disan_t2t_backward(const rk_disan_args* a);

#endif
