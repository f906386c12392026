/* What this library is: its ABI version, its structs' sizes (checked by model/kernels/native.py
   against its ctypes mirrors), the instruction set it was built for, and what the CPU running it
   supports (GCC/Clang's cpuid-based __builtin_cpu_supports), for choosing a variant at run time. */
#include <string.h>

#include "rendition_kernels.h"

#ifndef RK_ISA
#define RK_ISA "generic"
#endif

int rk_abi_version(void) { return RK_ABI_VERSION; }

long rk_struct_size(int which) {
  switch (which) {
    case RK_STEP_ATTENTION: return sizeof(rk_step_attention_args);
    case RK_SELF_ATTENTION: return sizeof(rk_self_attention_args);
    case RK_DECODER_LAYER: return sizeof(rk_decoder_layer);
    case RK_LAYER_CACHE: return sizeof(rk_layer_cache);
    case RK_DECODER_WEIGHTS: return sizeof(rk_decoder_weights);
    case RK_DECODER_STEP: return sizeof(rk_decoder_step_args);
    case RK_ENCODER_LAYER: return sizeof(rk_encoder_layer);
    case RK_ENCODER_WEIGHTS: return sizeof(rk_encoder_weights);
    case RK_ENCODER: return sizeof(rk_encoder_args);
    case RK_LSE: return sizeof(rk_lse_args);
    case RK_DISAN: return sizeof(rk_disan_args);
    case RK_QLINEAR: return sizeof(rk_qlinear);
    case RK_QLINEAR_ARGS: return sizeof(rk_qlinear_args);
    case RK_DNNL_API: return sizeof(rk_dnnl_api);
    default: return -1;
  }
}

const char* rk_isa(void) { return RK_ISA; }

int rk_cpu_supports(const char* isa) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (strcmp(isa, "avx2") == 0)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c") &&
           __builtin_cpu_supports("bmi2");
  if (strcmp(isa, "avx512") == 0)
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl") && rk_cpu_supports("avx2");
#endif
  return strcmp(isa, "generic") == 0;
}
