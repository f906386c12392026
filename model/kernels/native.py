"""The native CPU kernels (``model/kernels/csrc``): the shared library for this CPU, loaded once.

``setup.py`` builds the C sources at install time into one library per instruction set
(``_native_generic``, ``_native_avx2``, ``_native_avx512``); ``library()`` loads the best one
the CPU supports (``RENDITION_ISA=generic|avx2|avx512`` forces one) and checks its ABI version
and the size of every argument struct against the ctypes mirrors below.  No compiler runs here.

Where no library was built (no C compiler at install time) or it does not load, ``library()``
warns once and returns None, and every caller runs its torch path; with
``RENDITION_REQUIRE_NATIVE=1`` (CI, the container image) it raises instead.  Each kernel also
has a switch, ``RENDITION_<NAME>_KERNEL=0``, that turns it off (``kernel(switch)``).
"""

from __future__ import annotations

import ctypes
import importlib.machinery
import os
import warnings
from ctypes import POINTER, c_float, c_int, c_long, c_void_p
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

ABI_VERSION = 6
ISAS = ("avx512", "avx2", "generic")  # best first
HERE = Path(__file__).resolve().parent

_P = c_void_p  # float* / long* / void*: a tensor's data_ptr(), or None for NULL


def _fields(names: str, ctype: Any) -> list[tuple[str, Any]]:
    return [(n, ctype) for n in names.split()]


class StepAttentionArgs(ctypes.Structure):
    _fields_ = (
        _fields("q k v k_store v_store src", _P) + _fields("src_stride", c_long) + _fields("steps rel_k rel_v out", _P)
        + _fields("rows beams heads max_len head_dim t max_rel", c_long) + _fields("scale", c_float)
        + _fields("half threads", c_int)
    )  # fmt: skip


class SelfAttentionArgs(ctypes.Structure):
    _fields_ = (
        _fields("qkv key_mask rel_k rel_v out scratch", _P) + _fields("batch len heads head_dim max_rel", c_long)
        + _fields("scale", c_float) + _fields("threads", c_int)
    )  # fmt: skip


DECODER_LAYER_FIELDS = (
    "ln1_g ln1_b w_qkv b_qkv rel_k rel_v w_o b_o ln2_g ln2_b wx_q bx_q wx_o bx_o ln3_g ln3_b w_1 b_1 w_2 b_2"
)
ENCODER_LAYER_FIELDS = "ln1_g ln1_b w_qkv b_qkv rel_k rel_v w_o b_o ln2_g ln2_b w_1 b_1 w_2 b_2"


DECODER_QLINEAR_FIELDS = "q_qkv q_o qx_q qx_o q_1 q_2"  # int8 forms of w_qkv w_o wx_q wx_o w_1 w_2
ENCODER_QLINEAR_FIELDS = "q_qkv q_o q_1 q_2"  # int8 forms of w_qkv w_o w_1 w_2


class QLinear(ctypes.Structure):
    """``rk_qlinear``: an int8 weight (out, in), its per-row scales and column sums (all NULL: float32),
    and its packed form for oneDNN's matmul primitive (or NULL)."""

    _fields_ = _fields("w scale colsum packed", _P)


class DecoderLayer(ctypes.Structure):
    _fields_ = _fields(DECODER_LAYER_FIELDS, _P) + _fields(DECODER_QLINEAR_FIELDS, QLinear)


class LayerCache(ctypes.Structure):
    _fields_ = _fields("cross_k cross_v self_k self_v", _P)


class DecoderWeights(ctypes.Structure):
    _fields_ = _fields("embed norm_g norm_b out_proj", _P) + [
        ("layers", POINTER(DecoderLayer)), ("n_layers", c_long), ("q_embed", QLinear)
    ]  # fmt: skip


class DecoderStepArgs(ctypes.Structure):
    _fields_ = (
        [("weights", POINTER(DecoderWeights)), ("cache", POINTER(LayerCache))] + _fields("tokens src", _P)
        + _fields("src_stride", c_long) + _fields("steps cross_rows cross_lens mem_bias pos x h qkv ff logits", _P)
        + _fields("rows beams d_model heads d_ff vocab src_len max_len t max_rel", c_long)
        + _fields("emb_scale eps", c_float) + _fields("half threads", c_int)
        + _fields("out_proj", _P) + [("q_out", POINTER(QLinear))]
    )  # fmt: skip


class EncoderLayer(ctypes.Structure):
    _fields_ = _fields(ENCODER_LAYER_FIELDS, _P) + _fields(ENCODER_QLINEAR_FIELDS, QLinear)


class EncoderWeights(ctypes.Structure):
    _fields_ = _fields("embed norm_g norm_b positions", _P) + [
        ("layers", POINTER(EncoderLayer)), ("n_layers", c_long), ("q_embed", QLinear)
    ]  # fmt: skip


class EncoderArgs(ctypes.Structure):
    _fields_ = (
        [("weights", POINTER(EncoderWeights))] + _fields("src x h qkv ff rows pos off mem", _P)
        + _fields("batch len pad d_model heads d_ff max_rel", c_long) + _fields("emb_scale eps", c_float)
        + _fields("threads", c_int)
    )  # fmt: skip


class LseArgs(ctypes.Structure):
    _fields_ = _fields("logits chunk_max lse", _P) + _fields("rows vocab chunk", c_long) + _fields("threads", c_int)


class DisanArgs(ctypes.Structure):
    _fields_ = (
        _fields("a b h key_mask offsets s den grad dq dk dh", _P) + _fields("batch len dim", c_long) + _fields("c", c_float)
        + _fields("direction threads", c_int)
    )  # fmt: skip


class QLinearArgs(ctypes.Structure):
    _fields_ = (
        _fields("x", _P) + [("w", POINTER(QLinear))] + _fields("y xq x_scale x_zero acc", _P) + _fields("M N K", c_long)
        + _fields("threads", c_int)
    )  # fmt: skip


DNNL_API = (  # rk_dnnl_api's functions, in its order
    "dnnl_engine_create", "dnnl_stream_create", "dnnl_stream_destroy", "dnnl_memory_desc_create_with_strides",
    "dnnl_memory_desc_create_with_tag", "dnnl_memory_desc_clone", "dnnl_memory_desc_destroy", "dnnl_memory_desc_equal",
    "dnnl_matmul_primitive_desc_create", "dnnl_reorder_primitive_desc_create", "dnnl_primitive_desc_query_md",
    "dnnl_primitive_desc_destroy", "dnnl_primitive_create", "dnnl_primitive_execute", "dnnl_primitive_destroy",
    "dnnl_memory_create", "dnnl_memory_set_data_handle", "dnnl_memory_destroy", "dnnl_memory_desc_get_size",
    "dnnl_primitive_desc_query",
)  # fmt: skip


class DnnlApi(ctypes.Structure):
    _fields_ = [("fn", c_void_p * len(DNNL_API))]


# In the order of the RK_* enum of rendition_kernels.h (rk_struct_size's argument).
STRUCTS = (
    StepAttentionArgs, SelfAttentionArgs, DecoderLayer, LayerCache, DecoderWeights, DecoderStepArgs,
    EncoderLayer, EncoderWeights, EncoderArgs, LseArgs, DisanArgs, QLinear, QLinearArgs, DnnlApi,
)  # fmt: skip
FUNCTIONS = {  # name: (argument struct, restype)
    "rk_step_attention": (StepAttentionArgs, c_int),
    "rk_self_attention": (SelfAttentionArgs, c_int),
    "rk_decoder_step": (DecoderStepArgs, c_int),
    "rk_encoder_forward": (EncoderArgs, c_int),
    "rk_lse_chunk_max": (LseArgs, None),
    "rk_disan_t2t": (DisanArgs, None),
    "rk_disan_t2t_backward": (DisanArgs, None),
    "rk_qlinear_forward": (QLinearArgs, c_int),
}


def enabled(switch: str) -> bool:
    """A kernel's environment switch: anything but 0/false/no/off leaves it on."""
    return os.environ.get(switch, "auto").lower() not in ("0", "false", "no", "off")


def required() -> bool:
    """``RENDITION_REQUIRE_NATIVE=1``: a library that is missing or does not load is an error."""
    return os.environ.get("RENDITION_REQUIRE_NATIVE", "").lower() in ("1", "true", "yes", "on")


def _path(isa: str) -> Path | None:
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        p = HERE / f"_native_{isa}{suffix}"
        if p.is_file():
            return p
    return None


def built() -> tuple[str, ...]:
    """The variants this installation has, best first."""
    return tuple(isa for isa in ISAS if _path(isa) is not None)


def _open(isa: str) -> ctypes.CDLL:
    path = _path(isa)
    if path is None:
        raise FileNotFoundError(f"the {isa} variant of the native kernels was not built (model/kernels/_native_{isa}*)")
    lib = ctypes.CDLL(str(path))
    lib.rk_abi_version.restype = c_int
    if lib.rk_abi_version() != ABI_VERSION:
        raise ImportError(f"{path.name}: ABI version {lib.rk_abi_version()}, expected {ABI_VERSION}; reinstall")
    lib.rk_struct_size.argtypes, lib.rk_struct_size.restype = [c_int], c_long
    for i, struct in enumerate(STRUCTS):
        if lib.rk_struct_size(i) != ctypes.sizeof(struct):
            raise ImportError(f"{path.name}: {struct.__name__} is {lib.rk_struct_size(i)} bytes in C, {ctypes.sizeof(struct)} here")
    lib.rk_isa.restype = ctypes.c_char_p
    lib.rk_cpu_supports.argtypes, lib.rk_cpu_supports.restype = [ctypes.c_char_p], c_int
    lib.rk_set_sgemm.argtypes, lib.rk_set_sgemm.restype = [c_void_p], None
    lib.rk_set_dnnl_sgemm.argtypes, lib.rk_set_dnnl_sgemm.restype = [c_void_p], None
    lib.rk_set_dnnl_gemm_u8s8s32.argtypes, lib.rk_set_dnnl_gemm_u8s8s32.restype = [c_void_p, c_int], None
    lib.rk_set_dnnl_api.argtypes, lib.rk_set_dnnl_api.restype = [POINTER(DnnlApi)], c_int
    lib.rk_qlinear_pack.argtypes, lib.rk_qlinear_pack.restype = [c_void_p, c_long, c_long], c_void_p
    lib.rk_qlinear_free.argtypes, lib.rk_qlinear_free.restype = [c_void_p], None
    lib.rk_qlinear_packed_bytes.argtypes, lib.rk_qlinear_packed_bytes.restype = [c_void_p], c_long
    lib.rk_packed_forget.argtypes, lib.rk_packed_forget.restype = [], None
    lib.rk_qlinear_unpack.argtypes, lib.rk_qlinear_unpack.restype = [c_void_p, c_void_p], c_int
    lib.rk_packed_limit.argtypes, lib.rk_packed_limit.restype = [c_long], c_long
    lib.rk_packed_gemm.argtypes = [c_void_p, c_void_p, c_void_p, c_long, c_long, c_int]
    lib.rk_packed_gemm.restype = c_int
    lib.rk_packed_rows.argtypes, lib.rk_packed_rows.restype = [c_long], c_long
    lib.rk_packed_count.argtypes, lib.rk_packed_count.restype = [], c_long
    lib.rk_release_scratch.argtypes, lib.rk_release_scratch.restype = [], None
    for name, (struct, restype) in FUNCTIONS.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = [POINTER(struct)], restype
    return lib


def cpu_supports(isa: str) -> bool:
    """Whether this CPU runs the ``isa`` variant (asked of the generic library: cpuid)."""
    return isa == "generic" or bool(_open("generic").rk_cpu_supports(isa.encode()))


def select_isa() -> str:
    """``RENDITION_ISA`` when set (it must be built and supported), else the best variant that is."""
    forced = os.environ.get("RENDITION_ISA", "").strip().lower()
    if forced:
        if forced not in ISAS:
            raise ValueError(f"RENDITION_ISA must be one of {ISAS}, not {forced!r}")
        if not cpu_supports(forced):
            raise RuntimeError(f"RENDITION_ISA={forced}: this CPU does not support it")
        return forced
    for isa in built():
        if cpu_supports(isa):
            return isa
    raise FileNotFoundError("no variant of the native kernels was built (model/kernels/_native_*); reinstall with a C compiler")


_LIB: dict[str, ctypes.CDLL | None] = {}  # "lib": the loaded library (or None: unavailable), once per process


def library() -> ctypes.CDLL | None:
    """The native library for this CPU, loaded and checked once; None when it is unavailable
    (warned once), or an exception under ``RENDITION_REQUIRE_NATIVE=1``."""
    if "lib" not in _LIB:
        try:
            _LIB["lib"] = _open(select_isa())
        except (OSError, ImportError, RuntimeError, ValueError) as e:
            if required():
                raise RuntimeError(f"native kernels unavailable and RENDITION_REQUIRE_NATIVE=1: {e}") from e
            warnings.warn(f"native kernels unavailable ({type(e).__name__}: {e}); using the torch paths", stacklevel=2)
            _LIB["lib"] = None
    return _LIB["lib"]


def kernel(switch: str) -> ctypes.CDLL | None:
    """The library, unless ``switch`` (``RENDITION_<NAME>_KERNEL``) turns this kernel off."""
    return library() if enabled(switch) else None


def isa() -> str | None:
    """The instruction set of the loaded library (None: no library)."""
    lib = library()
    return lib.rk_isa().decode() if lib is not None else None


def release_scratch() -> None:
    """Free the calling thread's large scratch buffers of the native kernels (a thread whose work
    is done: an idle worker, the end of a batch translation); nothing when no library is loaded."""
    lib = _LIB.get("lib")
    if lib is not None:
        lib.rk_release_scratch()


def ptr(t: torch.Tensor | None) -> int | None:
    """A tensor's data pointer, or None (NULL) for None."""
    return t.data_ptr() if t is not None else None
