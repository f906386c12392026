"""The translator's encoder and its decoding step, each in one C call (CPU float32 inference).

A decoding step is about a hundred small torch calls (layer norms, projections, bias adds,
residual adds, the cross-attention's reshapes and softmax), each with its own dispatch cost; with
few rows, as at the end of every batch, those costs are most of the step.  Here the step runs as
one C function over the same weights:

    x = E[token] * sqrt(D) (+ sinusoidal position)
    per layer:  x += W_o SelfAttn(LN(x)) + b_o;  x += W_o' CrossAttn(LN(x)) + b_o';  x += FFN(LN(x))
    logits = LN(x) @ E^T

and so does the encoder, which computes only the real tokens of a padded batch: they are packed
into rows, each keeping its original position for the relative distances (and the sinusoidal
table), and the output has zeros at padding (which cross-attention masks out anyway).

The products are oneDNN's ``dnnl_sgemm`` (the ``onednn-cpu-gomp`` wheel, a dependency on x86-64
Linux; its JIT kernels are much faster than MKL's on AMD CPUs, where MKL takes a slow path; figures
in docs/benchmarks.md), or else the very MKL ``sgemm``
that torch calls (its address taken from torch's CPU library; same arguments, so every product is
bitwise the one ``x @ W.t()`` gives).  ``RENDITION_SGEMM=mkl`` keeps MKL's.  oneDNN's library
links ``libgomp.so.1`` and so shares torch's OpenMP runtime (and a worker thread's thread count).
The biases,
ReLU and residual adds are applied while the rows are in cache, and the decoder's self-attention
is the by-reference kernel of ``rendition.model.kernels.attention`` (``csrc/fused.c`` includes its code).  Results
equal the torch path up to float rounding (layer norm and softmax sums in another order, biases
added after the product instead of before).

``FusedTransformer`` holds the weight tables of one model; the fused CPU back end of
``rendition.model.translation.backends`` calls it when torch has an MKL ``sgemm`` and the native library is
installed (``RENDITION_FUSED_KERNEL=0`` turns it off).  It reads the model's weights and never
changes the model; the cache it steps is a ``model.translation.cache.ReferenceCache``, advanced
through that cache's own methods.

The int8 compute type (``FusedTransformer(model, "int8")``, as CTranslate2's ``compute_type="int8"``)
runs every linear map of the encoder and the decoding step, the output projection over the
vocabulary included, in u8 x s8 -> s32 products from the same library: the weights are
quantised once, symmetric per output channel (int8 and a float scale per row of W, with the row's
sum for the zero-point compensation) and packed once into the blocked layout of oneDNN's matmul
primitive (``csrc/packed.c``: AMX tiles or VNNI blocks; a primitive per row count, kept per
thread), with oneDNN's ``dnnl_gemm_u8s8s32`` for any product no primitive serves (the same
integer sums); each product's input rows are quantised when it runs, to
unsigned 8 bits with a zero point per row (the u8 x s8 form VNNI multiplies); the int32 sums are
dequantised in float32 with both scales, and the bias added after.  Layer norms, softmax, residuals,
the attention over the cache and the cross-attention's keys and values (computed once per sentence,
by the model) stay float32; the embedding is looked up from its int8 table (rows dequantised).
Where the CPU lacks VNNI, oneDNN sums pairs of u8 x s8 products in saturating 16 bits, so the
activations then take 7 bits (0..127) and no sum saturates.  ``int8_unavailable()`` says why the
int8 type cannot run here (None: it can); ``release_float_weights()`` drops the model's float32
copies of the quantised weights once the int8 tables are built.
"""

from __future__ import annotations

import ctypes
import functools
import os
import weakref
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from rendition.model.kernels import attention as attention_kernels
from rendition.model.kernels import native

if TYPE_CHECKING:
    from rendition.model.translation.transformer import DecoderLayer, EncoderLayer, Transformer


@functools.cache
def _dnnl_library() -> ctypes.CDLL | None:
    """The ``onednn-cpu-gomp`` wheel's oneDNN library (None: not installed, or none loads), found
    and loaded once.  The wheel holds the same library under three names (``libdnnl.so``,
    ``.so.3``, ``.so.3.2``: copies, not links); one is loaded, as each would map its own code and
    keep its own state."""
    try:
        files = metadata.files("onednn-cpu-gomp") or []
    except metadata.PackageNotFoundError:
        return None
    for f in sorted((f for f in files if f.name.startswith("libdnnl.so")), key=lambda f: f.name):
        try:  # (after torch: its libgomp.so.1 is the one oneDNN's library binds to)
            return ctypes.CDLL(str(f.locate()))
        except OSError:
            continue
    return None


def _dnnl_address(symbol: str) -> int | None:
    """Address of a function of oneDNN's C API in the ``onednn-cpu-gomp`` wheel's library, or None
    (not installed, not loadable, no such symbol)."""
    lib = _dnnl_library()
    try:
        return None if lib is None else ctypes.cast(getattr(lib, symbol), ctypes.c_void_p).value
    except AttributeError:
        return None


def _dnnl_sgemm_address() -> int | None:
    """Address of oneDNN's ``dnnl_sgemm``, or None (see ``_dnnl_address``; ``RENDITION_SGEMM=mkl``)."""
    if os.environ.get("RENDITION_SGEMM", "auto").lower() == "mkl":
        return None
    return _dnnl_address("dnnl_sgemm")


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags as Linux reports them (/proc/cpuinfo; empty elsewhere)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.partition(":")[2].split())
    except OSError:
        pass
    return frozenset()


def has_vnni() -> bool:
    """Whether oneDNN's int8 products run on VNNI here (AVX-512 VNNI or AVX-VNNI, not capped off by
    ``ONEDNN_MAX_CPU_ISA``): their u8 x s8 sums are then int32 throughout."""
    cap = (os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA") or "ALL").upper()
    if cap != "ALL" and "VNNI" not in cap and "AMX" not in cap:
        return False
    return bool({"avx512_vnni", "avx_vnni"} & cpu_flags())


def activation_levels() -> int:
    """The largest quantised activation: 255 with VNNI, else 127 (oneDNN's pairs of u8 x s8 products
    then add in saturating int16: 2 x 127 x 127 fits, 2 x 255 x 127 does not)."""
    return 255 if has_vnni() else 127


def _sgemm_address() -> int | None:
    """Address of MKL's ``sgemm_`` inside torch's CPU library, or None."""
    if not torch.backends.mkl.is_available():
        return None
    lib_dir = Path(torch.__file__).parent / "lib"
    for name in ("libtorch_cpu.so", "libtorch_cpu.dylib"):
        if (lib_dir / name).is_file():
            try:
                return ctypes.cast(ctypes.CDLL(str(lib_dir / name)).sgemm_, ctypes.c_void_p).value
            except (OSError, AttributeError):
                return None
    return None


_WIRED: dict[int, str | None] = {}  # per loaded library: the sgemm it calls ("onednn", "mkl"), or None
_INT8: dict[int, bool] = {}  # per loaded library: whether it has oneDNN's int8 gemm
_PACKED: dict[int, bool] = {}  # per loaded library: whether int8 weights are packed for oneDNN's matmul


def _wire_packed(so: ctypes.CDLL) -> bool:
    """Hand the library oneDNN's matmul API (``csrc/packed.c``) unless ``RENDITION_INT8_PACKED=0``;
    whether it took it."""
    if not native.enabled("RENDITION_INT8_PACKED"):
        return False
    addresses = [_dnnl_address(name) for name in native.DNNL_API]
    if any(a is None for a in addresses):
        return False
    return so.rk_set_dnnl_api(ctypes.byref(native.DnnlApi((ctypes.c_void_p * len(addresses))(*addresses)))) == 0


def packed_products() -> bool:
    """Whether the int8 products run on weights packed for oneDNN's matmul primitive."""
    so = kernel()
    return so is not None and _PACKED.get(id(so), False)


def kernel() -> ctypes.CDLL | None:
    """The native library wired to an sgemm (oneDNN's, else torch's MKL one), or None (not built,
    no sgemm, or ``RENDITION_FUSED_KERNEL=0``)."""
    so = native.kernel("RENDITION_FUSED_KERNEL")
    if so is None:
        return None
    if id(so) not in _WIRED:
        _WIRED[id(so)] = None
        if (address := _dnnl_sgemm_address()) is not None:
            so.rk_set_dnnl_sgemm(address)
            _WIRED[id(so)] = "onednn"
        elif (address := _sgemm_address()) is not None:
            so.rk_set_sgemm(address)
            _WIRED[id(so)] = "mkl"
        address = _dnnl_address("dnnl_gemm_u8s8s32")
        so.rk_set_dnnl_gemm_u8s8s32(address, activation_levels())
        _INT8[id(so)] = address is not None
        _PACKED[id(so)] = _wire_packed(so)
    return so if _WIRED[id(so)] else None


def int8_unavailable() -> str | None:
    """Why the int8 compute type cannot run here, or None when it can: it needs the fused kernels
    wired to oneDNN's int8 gemm, and a CPU with VNNI or AVX2 (the native library's avx2 or avx512
    variant: ``RENDITION_ISA=generic`` stands for a CPU without them)."""
    so = kernel()
    if so is None:
        return "the fused native kernels are unavailable"
    if not _INT8.get(id(so)):
        return "oneDNN's dnnl_gemm_u8s8s32 was not found (the onednn-cpu-gomp package)"
    if native.isa() == "generic":
        return "the CPU has neither VNNI nor AVX2 (the generic variant of the native kernels is loaded)"
    if not ({"avx512_vnni", "avx_vnni", "avx2"} & cpu_flags()):
        return "the CPU has neither VNNI nor AVX2"
    return None


class QuantizedWeight:
    """A linear map's weight W (out, in) in int8, symmetric per output channel: W ~ scale[:, None] *
    weight, |weight| <= 127; colsum the rows' sums (int32), for the activations' zero points.

    Where oneDNN's matmul API is wired (``packed_products()``), the weight is also packed once into
    the blocked layout of oneDNN's matmul primitive (``csrc/packed.c``), which the products then
    read; the plain copy is then dropped unless ``keep_plain`` (the embedding keeps it: tokens are
    looked up by row), and ``weight`` unpacks it when asked.  ``pack=False``: the plain weight only."""

    BLOCK_BYTES = 1 << 22  # float32 rows quantised at a time: the temporaries stay this small

    def __init__(self, w: Tensor, pack: bool = True, keep_plain: bool = False):
        w = w.detach()
        rows, cols = w.shape
        self.shape = (rows, cols)
        self.scale = torch.empty(rows, dtype=torch.float32)
        plain = torch.empty(rows, cols, dtype=torch.int8)
        step = max(1, self.BLOCK_BYTES // (4 * max(1, cols)))
        for r in range(0, rows, step):  # (row by row arithmetic: the blocks change no value)
            block = w[r : r + step].to(torch.float32)
            amax = block.abs().amax(dim=1)
            scale = torch.where(amax > 0, amax / 127.0, torch.ones_like(amax))
            self.scale[r : r + step] = scale
            plain[r : r + step] = torch.round(block / scale[:, None]).clamp_(-127, 127).to(torch.int8)
        self.colsum = plain.sum(dim=1, dtype=torch.int32).contiguous()
        self._plain: Tensor | None = plain
        self._packed: int | None = None  # the packed form's handle
        if pack and packed_products():
            so = kernel()
            assert so is not None
            handle = so.rk_qlinear_pack(plain.data_ptr(), rows, cols)
            if handle:
                self._packed = handle
                weakref.finalize(self, so.rk_qlinear_free, handle)
                if not keep_plain:
                    self._plain = None

    @property
    def weight(self) -> Tensor:
        """The int8 weight (out, in): the plain copy, or the packed one unpacked (a new tensor)."""
        if self._plain is not None:
            return self._plain
        so = kernel()
        out = torch.empty(self.shape, dtype=torch.int8)
        if so is None or so.rk_qlinear_unpack(self._packed, out.data_ptr()) != 0:
            raise RuntimeError("the packed int8 weight could not be unpacked")
        return out

    def tensors(self) -> list[Tensor]:
        """The tensors it holds (the plain weight where kept, the scales, the sums)."""
        return [t for t in (self._plain, self.scale, self.colsum) if t is not None]

    @property
    def nbytes(self) -> int:
        """Bytes of its tensors and of its packed form."""
        return sum(t.numel() * t.element_size() for t in self.tensors()) + self.packed_bytes

    @property
    def packed_bytes(self) -> int:
        """Bytes of the packed form (oneDNN's memory, outside torch's tensors), 0 without one."""
        so = kernel()
        return int(so.rk_qlinear_packed_bytes(self._packed)) if self._packed and so is not None else 0

    def packed(self) -> int | None:
        """The handle of the packed form, or None (the products run on oneDNN's gemm)."""
        return self._packed

    def rows(self, ids: Tensor) -> QuantizedWeight:
        """The weight of the output channels ``ids`` (V',): its rows, scales and sums, gathered (plain,
        not packed: a search's own rows, where packing would cost more than it saves)."""
        out = object.__new__(QuantizedWeight)
        ids = ids.to(torch.long)
        out._plain, out.scale, out.colsum = (t.index_select(0, ids) for t in (self.weight, self.scale, self.colsum))
        out._packed, out.shape = None, (int(ids.numel()), self.shape[1])
        return out

    def dequantized(self) -> Tensor:
        """The float32 weight this one stands for (for tests and references)."""
        return self.weight.to(torch.float32) * self.scale[:, None]

    def struct(self) -> native.QLinear:
        return native.QLinear(native.ptr(self._plain), self.scale.data_ptr(), self.colsum.data_ptr(), self._packed)


def qlinear(x: Tensor, w: QuantizedWeight, threads: int | None = None) -> dict[str, Tensor]:
    """``x (M, K) @ W^T`` with the int8 kernel (``rk_qlinear_forward``): y (M, N), and what it
    computed on the way: xq (M, K) uint8, x_scale (M,), x_zero (M,) and acc (M, N) int32."""
    so = kernel()
    if so is None or not _INT8.get(id(so)):
        raise RuntimeError("no int8 kernel here (native library and oneDNN's dnnl_gemm_u8s8s32)")
    x = x.detach().to(torch.float32).contiguous()
    (M, K), N = x.shape, w.shape[0]
    if w.shape[1] != K:
        raise ValueError(f"x has {K} features, the weight {w.shape[1]}")
    out = dict(
        y=torch.empty(M, N), xq=torch.empty(M, K, dtype=torch.uint8), x_scale=torch.empty(M),
        x_zero=torch.empty(M, dtype=torch.int32), acc=torch.empty(M, N, dtype=torch.int32),
    )  # fmt: skip
    q = w.struct()
    args = native.QLinearArgs(
        x=x.data_ptr(), w=ctypes.pointer(q), **{k: t.data_ptr() for k, t in out.items()}, M=M, N=N, K=K,
        threads=threads or torch.get_num_threads(),
    )  # fmt: skip
    if so.rk_qlinear_forward(ctypes.byref(args)) != 0:
        raise RuntimeError("rk_qlinear_forward failed")
    return out


def sgemm_name() -> str | None:
    """Which sgemm the fused kernels call ("onednn" or "mkl"), or None."""
    so = kernel()
    return _WIRED.get(id(so)) if so is not None else None


def _checked_ids(ids: Tensor, vocab_size: int) -> Tensor:
    """Contiguous int64 token ids, each in [0, vocab_size): the C code indexes the embedding with
    them (an id out of range is the IndexError torch's embedding raises, not a wild read)."""
    if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise TypeError(f"token ids must be integers, not {ids.dtype}")
    if ids.numel() and not (0 <= int(ids.min()) and int(ids.max()) < vocab_size):
        raise IndexError(f"token id out of range: ids must be in [0, {vocab_size})")
    return ids.to(torch.long).contiguous()


def _struct(
    cls: type[ctypes.Structure], tensors: dict[str, Tensor | QuantizedWeight | None], keep: list
) -> ctypes.Structure:
    """cls with each field the data pointer of a tensor (detached, contiguous; None: NULL) or the
    ``QLinear`` of a quantised weight, the tensors appended to ``keep`` (whoever holds the struct must
    hold them too)."""
    fields: dict[str, object] = {}
    for k, w in tensors.items():
        if isinstance(w, QuantizedWeight):
            keep.append(w)
            fields[k] = w.struct()
        else:
            w = w.detach().contiguous() if w is not None else None
            keep.append(w)
            fields[k] = native.ptr(w)
    return cls(**fields)


class _Weights:
    """A weights struct (``rk_decoder_weights`` / ``rk_encoder_weights``) with its layer array,
    holding every tensor it points to."""

    def __init__(self, cls: type[ctypes.Structure], layer_cls: type[ctypes.Structure], top: dict, layers: list[dict]):
        self.keep: list = []
        self.layers = (layer_cls * len(layers))(*(_struct(layer_cls, lw, self.keep) for lw in layers))
        self.struct = _struct(cls, top, self.keep)
        self.struct.layers, self.struct.n_layers = self.layers, len(layers)


def _tensors(obj: Any) -> list[Tensor]:
    """The tensors in obj: a tensor, a ``QuantizedWeight``, or a tuple / list / dict of them."""
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, QuantizedWeight):
        return obj.tensors()
    if isinstance(obj, dict):
        obj = list(obj.values())
    if isinstance(obj, (tuple, list)):
        return [t for x in obj for t in _tensors(x)]
    return []


def _unique_bytes(tensors: Any) -> int:
    """Bytes of the distinct storages under the given tensors (a view or a shared tensor counts once)."""
    seen: dict[int, int] = {}
    for t in tensors:
        st = t.untyped_storage()
        seen[st.data_ptr()] = max(seen.get(st.data_ptr(), 0), st.nbytes())
    return sum(seen.values())


def resident_weight_bytes(model: nn.Module, fused: FusedTransformer | None = None) -> int:
    """Bytes of the weights an inference model keeps resident: its parameters and buffers, the
    inference copies it made of them (``inference_copy``: the fused Q/K/V, the transposed output
    projection) and the fused kernels' own tables (the int8 ones); each storage counted once."""
    tensors = list(model.parameters()) + list(model.buffers())
    for module in model.modules():
        for name, value in module.__dict__.items():
            if name.endswith("_copy") and isinstance(value, tuple):
                tensors += _tensors(value[1])
    packed = 0
    if fused is not None:
        tensors += [t for entry in (fused._encoder, fused._decoder) if entry is not None for t in _tensors(entry[1].keep)]
        packed = fused.packed_bytes()
    return _unique_bytes(tensors) + packed


def _version(params: tuple[Tensor, ...]) -> tuple:
    """Identifies the weights' current storage and values (an in-place update bumps _version)."""
    return tuple((t.data_ptr(), t.dtype, t.device, t._version) for t in params)


COMPUTE_TYPES = ("float32", "int8")


def _quantized(w: Tensor, int8: bool) -> dict[str, Tensor | QuantizedWeight | None]:
    """A linear map's two table fields: the float32 weight, or (int8) its quantised form."""
    return {"w": None, "q": QuantizedWeight(w)} if int8 else {"w": w, "q": None}


def _self_attention(layer: EncoderLayer | DecoderLayer, int8: bool) -> tuple[dict, torch.Tensor]:
    """A layer's self-attention fields of the native tables (its norm, the fused Q/K/V bias, the
    relative tables, the output bias) and the fused Q/K/V weight, float or to be quantised."""
    sa = layer.self_attn
    if int8:
        w_qkv = torch.cat((sa.q_proj.weight, sa.k_proj.weight, sa.v_proj.weight))
        b_qkv = torch.cat((sa.q_proj.bias, sa.k_proj.bias, sa.v_proj.bias))
    else:
        w_qkv, b_qkv = sa.fused_qkv()
    relative = sa.k is not None
    fields = dict(
        ln1_g=layer.self_attn_norm.weight, ln1_b=layer.self_attn_norm.bias, b_qkv=b_qkv,
        rel_k=sa.rel_k if relative else None, rel_v=sa.rel_v if relative else None, b_o=sa.out_proj.bias,
    )  # fmt: skip
    return fields, w_qkv


def _linear_fields(int8: bool, **weights: Tensor) -> dict[str, Tensor | QuantizedWeight | None]:
    """Table fields of linear maps: ``w_o=W`` -> ``w_o`` (float32, or None) and ``q_o`` (int8, or None)."""
    out: dict[str, Tensor | QuantizedWeight | None] = {}
    for name, w in weights.items():
        f = _quantized(w, int8)
        out[name] = f["w"]
        q_name = "q" + name[1:]  # w_qkv -> q_qkv, wx_q -> qx_q
        if f["q"] is not None:
            out[q_name] = f["q"]
    return out


class FusedTransformer:
    """The fused encoder and decoding step of one ``Transformer`` (CPU inference).

    ``compute_type``: "float32" (the model's weights as they are) or "int8" (every linear map and the
    tied output projection in int8, see the module's docstring).  The float32 weight tables are
    built from the model's tensors when first needed and rebuilt when a weight changes (checked
    once per ``encode`` and once per ``refresh``, i.e. per search); the int8 ones are quantised
    once, here, and a later change of the model's weights is not seen."""

    def __init__(self, model: Transformer, compute_type: str = "float32"):
        if compute_type not in COMPUTE_TYPES:
            raise ValueError(f"compute_type must be one of {COMPUTE_TYPES}, not {compute_type!r}")
        self.model = model
        self.compute_type = compute_type
        self._encoder: tuple[tuple, _Weights] | None = None
        self._decoder: tuple[tuple, _Weights] | None = None
        if compute_type == "int8":
            if (reason := int8_unavailable()) is not None:
                raise RuntimeError(f"the int8 compute type cannot run here: {reason}")
            with torch.no_grad():
                self.q_embed = q_embed = QuantizedWeight(model.embed.weight, keep_plain=True)  # (tied: lookup and output projection)
                self._encoder = ((), self._build_encoder(q_embed))
                self._decoder = ((), self._build_decoder(q_embed))

    @staticmethod
    def usable(model: Transformer) -> bool:
        """Whether this model can run here: CPU float32 inference with a supported head size, the
        library built and wired to sgemm."""
        return attention_kernels.serves(model) and kernel() is not None

    @property
    def int8(self) -> bool:
        return self.compute_type == "int8"

    # -- weight tables ---------------------------------------------------------------------------
    def _build_encoder(self, q_embed: QuantizedWeight | None = None) -> _Weights:
        m, int8 = self.model, self.int8
        layers = []
        for layer in m.encoder_layers:
            ffn = layer.ffn
            fields, w_qkv = _self_attention(layer, int8)
            layers.append(dict(
                **fields, ln2_g=layer.ffn_norm.weight, ln2_b=layer.ffn_norm.bias, b_1=ffn.fc1.bias, b_2=ffn.fc2.bias,
                **_linear_fields(int8, w_qkv=w_qkv, w_o=layer.self_attn.out_proj.weight, w_1=ffn.fc1.weight, w_2=ffn.fc2.weight),
            ))  # fmt: skip
        top = dict(
            embed=None if int8 else m.embed.weight, norm_g=m.encoder_norm.weight, norm_b=m.encoder_norm.bias,
            positions=m.positions, **({"q_embed": q_embed} if int8 else {}),
        )  # fmt: skip
        return _Weights(native.EncoderWeights, native.EncoderLayer, top, layers)

    def _build_decoder(self, q_embed: QuantizedWeight | None = None) -> _Weights:
        m, int8 = self.model, self.int8
        layers = []
        for layer in m.decoder_layers:
            sa, ca, ffn = layer.self_attn, layer.cross_attn, layer.ffn
            fields, w_qkv = _self_attention(layer, int8)
            layers.append(dict(
                **fields, ln2_g=layer.cross_attn_norm.weight, ln2_b=layer.cross_attn_norm.bias,
                bx_q=ca.q_proj.bias, bx_o=ca.out_proj.bias, ln3_g=layer.ffn_norm.weight, ln3_b=layer.ffn_norm.bias,
                b_1=ffn.fc1.bias, b_2=ffn.fc2.bias,
                **_linear_fields(
                    int8, w_qkv=w_qkv, w_o=sa.out_proj.weight, wx_q=ca.q_proj.weight, wx_o=ca.out_proj.weight,
                    w_1=ffn.fc1.weight, w_2=ffn.fc2.weight,
                ),
            ))  # fmt: skip
        top = dict(
            embed=None if int8 else m.embed.weight, norm_g=m.decoder_norm.weight, norm_b=m.decoder_norm.bias,
            out_proj=None if int8 else m.output_weight_t(), **({"q_embed": q_embed} if int8 else {}),
        )  # fmt: skip
        return _Weights(native.DecoderWeights, native.DecoderLayer, top, layers)

    def _encoder_weights(self) -> _Weights:
        if self.int8:
            assert self._encoder is not None
            return self._encoder[1]
        m = self.model
        key = _version(tuple(p for name, p in m.named_parameters() if not name.startswith("decoder")))
        if self._encoder is None or self._encoder[0] != key:
            self._encoder = (key, self._build_encoder())
        return self._encoder[1]

    def refresh(self) -> None:
        """Rebuild the decoder's table if a weight changed (call when a search starts: the steps
        then read the weights as they were then).  The int8 tables are never rebuilt."""
        if self.int8:
            return
        m = self.model
        key = _version(tuple(p for name, p in m.named_parameters() if not name.startswith("encoder")))
        if self._decoder is None or self._decoder[0] != key:
            self._decoder = (key, self._build_decoder())

    def quantized_parameters(self) -> list[Tensor]:
        """The model's float32 weights the int8 tables stand for (empty in float32): every linear
        map of the encoder and of the decoder's step, and the embedding."""
        if not self.int8:
            return []
        m = self.model
        out = [m.embed.weight]
        for layer in m.encoder_layers:
            sa, ffn = layer.self_attn, layer.ffn
            out += [sa.q_proj.weight, sa.k_proj.weight, sa.v_proj.weight, sa.out_proj.weight, ffn.fc1.weight, ffn.fc2.weight]
        for dlayer in m.decoder_layers:
            sa, ca, ffn = dlayer.self_attn, dlayer.cross_attn, dlayer.ffn
            out += [sa.q_proj.weight, sa.k_proj.weight, sa.v_proj.weight, sa.out_proj.weight, ca.q_proj.weight,
                    ca.out_proj.weight, ffn.fc1.weight, ffn.fc2.weight]  # fmt: skip
        return out

    def release_float_weights(self) -> int:
        """int8: drop the model's float32 copies of the quantised weights (and its inference copies
        of them), so that only the int8 tables stay resident; returns the bytes released.  Each such
        parameter keeps its shape (and so the model its parameter count) as a one-element zero tensor
        expanded (finite: the service's load checks pass): the model can then run only through this
        object.  The cross-attention's key and value maps stay float32: the model computes them
        once per sentence (``cross_states``)."""
        if not self.int8:
            raise RuntimeError("release_float_weights() is for the int8 compute type")
        released = 0
        for p in self.quantized_parameters():
            released += p.untyped_storage().nbytes()
            p.data = torch.zeros(1, dtype=p.dtype, device=p.device).expand(p.shape)
        for module in self.model.modules():
            for name in ("_qkv_copy", "_out_proj_copy"):
                if (copy := module.__dict__.pop(name, None)) is not None:
                    released += sum(t.untyped_storage().nbytes() for t in _tensors(copy))
        return released

    def table_bytes(self) -> int:
        """Bytes of the weight tables' own tensors (those not shared with the model's parameters) and
        of their packed forms."""
        params = {p.untyped_storage().data_ptr() for p in self.model.parameters()}
        params |= {b.untyped_storage().data_ptr() for b in self.model.buffers()}
        tables = [t for entry in (self._encoder, self._decoder) if entry is not None for t in _tensors(entry[1].keep)]
        return _unique_bytes(t for t in tables if t.untyped_storage().data_ptr() not in params) + self.packed_bytes()

    def packed_bytes(self) -> int:
        """Bytes of the int8 weights' packed forms (each counted once)."""
        weights = {id(w): w for entry in (self._encoder, self._decoder) if entry is not None
                   for w in entry[1].keep if isinstance(w, QuantizedWeight)}  # fmt: skip
        return sum(w.packed_bytes for w in weights.values())

    def output_rows(self, ids: Tensor) -> QuantizedWeight:
        """int8: the quantised output projection's rows for the token ``ids`` (a vocabulary shortlist)."""
        if not self.int8:
            raise RuntimeError("output_rows() is for the int8 compute type")
        return self.q_embed.rows(ids)

    # -- the two calls ---------------------------------------------------------------------------
    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """``Transformer.encode`` in one C call, computing only the real (non-padding) tokens:
        memory (B, S, D) with zeros at padding, and the key mask (B, 1, 1, S)."""
        so = kernel()
        assert so is not None, "check usable() first"
        model = self.model
        cfg = model.cfg
        model.check_source(src)
        B, T = src.shape
        D, F = cfg.d_model, cfg.d_ff
        src = _checked_ids(src, cfg.vocab_size)
        mask = src != cfg.pad_id
        n = int(mask.sum())
        x, h, qkv, ff = torch.empty(n, D), torch.empty(n, D), torch.empty(n, 3 * D), torch.empty(n, F)
        rows, pos, off = (
            torch.empty(n, dtype=torch.long),
            torch.empty(n, dtype=torch.long),
            torch.empty(B + 1, dtype=torch.long),
        )
        mem = torch.empty(B, T, D)
        weights = self._encoder_weights()
        args = native.EncoderArgs(
            weights=ctypes.pointer(weights.struct), src=src.data_ptr(), x=x.data_ptr(), h=h.data_ptr(),
            qkv=qkv.data_ptr(), ff=ff.data_ptr(), rows=rows.data_ptr(), pos=pos.data_ptr(), off=off.data_ptr(),
            mem=mem.data_ptr(), batch=B, len=T, pad=cfg.pad_id, d_model=D, heads=cfg.n_heads, d_ff=F,
            max_rel=cfg.max_relative_position if cfg.relative_positions else 0, emb_scale=model.emb_scale,
            eps=cfg.layer_norm_eps, threads=torch.get_num_threads(),
        )  # fmt: skip
        rc = so.rk_encoder_forward(ctypes.byref(args))
        if rc != 0:
            raise ValueError(f"head_dim {cfg.head_dim} not supported by the fused kernels")
        return mem, mask[:, None, None, :]

    def decode_step(self, tokens: Tensor, cache: Any, output: Tensor | QuantizedWeight | None = None) -> Tensor:
        """``Transformer.decode_step`` for a by-reference cache (``ReferenceCache``, whose rows are
        each at their own step), in one C call: logits (N, V).  ``output``: the output projection
        restricted to V' tokens (a vocabulary shortlist): float32 (D, V') columns of E^T, or in
        int8 the ``output_rows`` of those tokens; the logits are then (N, V').
        Call ``refresh()`` when a search starts."""
        so = kernel()
        assert so is not None and self._decoder is not None, "check usable() and refresh() first"
        model = self.model
        cfg = model.cfg
        tokens = _checked_ids(tokens, cfg.vocab_size)
        if tokens.shape != (cache.batch_size,):
            raise ValueError(f"expected {cache.batch_size} tokens (one per cache row), got shape {tuple(tokens.shape)}")
        t, steps = cache.begin_step()  # (records every row's storage row for its position; t: the largest step)
        N, D, V, F = tokens.shape[0], cfg.d_model, cfg.vocab_size, cfg.d_ff
        cross, bias, cross_rows, cross_lens = cache.cross_tables()  # cross K/V slots [(G, H, S, Dh) x 2], (G, S), (B,), (G,)
        S = bias.shape[-1]
        caches = (native.LayerCache * len(cache.layers))(
            *(native.LayerCache(ck.data_ptr(), cv.data_ptr(), lc.self_k.data_ptr(), lc.self_v.data_ptr())
              for (ck, cv), lc in zip(cross, cache.layers))
        )  # fmt: skip
        src = cache.src
        x, h = torch.empty(N, D), torch.empty(N, D)
        out_proj, q_out = None, None
        if isinstance(output, QuantizedWeight):
            if not self.int8 or output.shape[1] != D:
                raise ValueError("a quantised output projection needs the int8 compute type and (V', D) rows")
            V, q_out = output.shape[0], ctypes.pointer(output.struct())
        elif output is not None:
            if self.int8 or output.dtype != torch.float32 or output.dim() != 2 or output.shape[0] != D:
                raise ValueError("a float output projection needs the float32 compute type and (D, V') float32 columns")
            out_proj = output = output.contiguous()
            V = output.shape[1]
        qkv, ff, logits = torch.empty(N, 3 * D), torch.empty(N, F), torch.empty(N, V)
        pos = None  # the sinusoidal table (rows picked by steps)
        if model.positions is not None:
            pos = model.positions.contiguous()
        args = native.DecoderStepArgs(
            weights=ctypes.pointer(self._decoder[1].struct), cache=caches, tokens=tokens.data_ptr(), src=src.data_ptr(),
            src_stride=src.stride(0), steps=native.ptr(steps), cross_rows=native.ptr(cross_rows),
            cross_lens=native.ptr(cross_lens), mem_bias=bias.data_ptr(), pos=native.ptr(pos), x=x.data_ptr(), h=h.data_ptr(),
            qkv=qkv.data_ptr(), ff=ff.data_ptr(), logits=logits.data_ptr(), rows=N, beams=cache.beams, d_model=D,
            heads=cfg.n_heads, d_ff=F, vocab=V, src_len=S, max_len=cache.layers[0].self_k.shape[2], t=t,
            max_rel=cfg.max_relative_position if cache.k is not None else 0, emb_scale=model.emb_scale,
            eps=cfg.layer_norm_eps, half=attention_kernels._half(cache.layers[0].self_k), threads=torch.get_num_threads(),
            out_proj=native.ptr(out_proj), q_out=q_out,
        )  # fmt: skip
        rc = so.rk_decoder_step(ctypes.byref(args))
        if rc != 0:
            raise ValueError(f"head_dim {cfg.head_dim} not supported by the step kernel")
        cache.advance()
        return logits
