"""The translator's compute type, as CTranslate2's ``compute_type``: how its weights are held and
its products computed.

* ``int8``: CPU only; the fused CPU back end with every linear map in int8 (weights quantised once,
  per output channel; activations per row at run time; ``rendition.model.kernels.fused_cpu``), float32 for
  the rest.  It needs the native kernels wired to oneDNN's int8 gemm and a CPU with VNNI (AVX-512
  VNNI or AVX-VNNI) or AVX2; elsewhere float32 runs instead, with one log line;
* ``float32``, ``float16``, ``bfloat16``: the model's weights in that dtype (the fused CPU back end
  for float32 on CPU, the torch one otherwise);
* ``auto``: int8 on a CPU that runs it, else float32 (one log line saying why); on a GPU the dtype
  asked for, else float16.

``resolve_compute_type`` turns the name asked for into the type that runs and the dtype the model
is loaded in; ``Translator.from_pretrained(compute_type=...)`` calls it.
"""

from __future__ import annotations

import logging

import torch
from torch import nn

from rendition.model.kernels import fused_cpu

log = logging.getLogger("rendition.compute_type")

COMPUTE_TYPES = ("auto", "int8", "float32", "float16", "bfloat16")
FLOAT_TYPES = ("float32", "float16", "bfloat16")


def _dtype_name(dtype: str | torch.dtype | None) -> str | None:
    return None if dtype is None else str(dtype).removeprefix("torch.")


def resolve_compute_type(
    compute_type: str, device: str | torch.device, dtype: str | torch.dtype | None = None
) -> tuple[str, torch.dtype | None]:
    """(the compute type that runs, the dtype to load the model in: None for as stored, float32).

    ``dtype`` is the model's dtype otherwise asked for (a float type or None); an explicit float
    ``compute_type`` takes precedence over it, and ``auto`` keeps it where int8 does not run."""
    name = str(compute_type).strip().lower()
    if name not in COMPUTE_TYPES:
        raise ValueError(f"compute_type must be one of {COMPUTE_TYPES}, not {compute_type!r}")
    if name in FLOAT_TYPES:
        return name, getattr(torch, name)
    dev = torch.device(device)
    asked = _dtype_name(dtype)
    if asked is not None and asked not in FLOAT_TYPES:
        raise ValueError(f"dtype must be one of {FLOAT_TYPES}, not {dtype!r}")
    if dev.type != "cpu":
        fallback = asked or "float16"
        if name == "int8":
            log.warning("compute_type int8 runs on CPU only; using %s on %s", fallback, dev)
        return fallback, getattr(torch, fallback)
    if name == "auto" and asked not in (None, "float32"):
        return asked, getattr(torch, asked)  # (a float type asked for on CPU: kept)
    reason = fused_cpu.int8_unavailable()
    if reason is None:
        return "int8", None
    fallback = asked or "float32"
    if name == "int8":
        log.warning("compute_type int8 cannot run here (%s); using %s", reason, fallback)
    else:
        log.info("compute_type auto: %s (int8 cannot run here: %s)", fallback, reason)
    return fallback, getattr(torch, fallback)


def weight_bytes(model: nn.Module, backend: object) -> int:
    """Bytes of the weights an inference translator keeps resident (its model's parameters and
    buffers, the inference copies made of them, the int8 tables of a fused back end), each
    storage counted once."""
    return fused_cpu.resident_weight_bytes(model, getattr(backend, "fused", None))


# ------------------------------------------------------------------------------------------------
# the sentence encoder
# ------------------------------------------------------------------------------------------------
ENCODER_COMPUTE_TYPES = ("auto", "int8", "bfloat16", "float32", "float16")


def bfloat16_unavailable() -> str | None:
    """Why bfloat16 products would be emulated (slow) here: no AVX-512 BF16 or AMX; or None."""
    if {"avx512_bf16", "amx_bf16"} & fused_cpu.cpu_flags():
        return None
    return "the CPU has neither AVX-512 BF16 nor AMX"


def resolve_encoder_compute_type(
    compute_type: str, device: str | torch.device, dtype: str | torch.dtype | None = None
) -> tuple[str, torch.dtype | None]:
    """The sentence encoder's compute type: (the type that runs, the dtype to load the model in).

    * ``bfloat16``, ``float32``, ``float16``: the model in that dtype (on CPU the token2token
      attention computes in float32 either way);
    * ``int8`` (CPU): every linear map in int8 (``rendition.model.kernels.linear``), the rest float32; it needs
      the native int8 kernel (VNNI or AVX2), else float32 runs, with one log line.  Opt-in only:
      it is slower than bfloat16 and its embeddings are further from float32's
      (docs/benchmarks.md, "Encoder compute types");
    * ``auto``: on a CPU, bfloat16 where it has AVX-512 BF16 or AMX, else float32 (one log line);
      a non-float32 ``dtype`` asked for is kept; on a GPU the dtype asked for, else float16.
    """
    name = str(compute_type).strip().lower()
    if name not in ENCODER_COMPUTE_TYPES:
        raise ValueError(f"compute_type must be one of {ENCODER_COMPUTE_TYPES}, not {compute_type!r}")
    dev = torch.device(device)
    asked = _dtype_name(dtype)
    if asked is not None and asked not in FLOAT_TYPES:
        raise ValueError(f"dtype must be one of {FLOAT_TYPES}, not {dtype!r}")
    if name in FLOAT_TYPES:
        return name, getattr(torch, name)
    if dev.type != "cpu":
        fallback = asked or "float16"
        if name == "int8":
            log.warning("encoder compute_type int8 runs on CPU only; using %s on %s", fallback, dev)
        return fallback, getattr(torch, fallback)
    if name == "int8":
        if (reason := fused_cpu.int8_unavailable()) is not None:
            log.warning("encoder compute_type int8 cannot run here (%s); using float32", reason)
            return "float32", torch.float32
        return "int8", torch.float32
    if asked not in (None, "float32"):
        return asked, getattr(torch, asked)  # (auto, a float type asked for on CPU: kept)
    if (reason := bfloat16_unavailable()) is not None:
        log.info("encoder compute_type auto: float32 (bfloat16 would be emulated: %s)", reason)
        return "float32", torch.float32
    return "bfloat16", torch.bfloat16
