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
is the by-reference kernel of ``model.kernels.attention`` (``csrc/fused.c`` includes its code).  Results
equal the torch path up to float rounding (layer norm and softmax sums in another order, biases
added after the product instead of before).

``FusedTransformer`` holds the weight tables of one model; the fused CPU back end of
``model.translation.backends`` calls it when torch has an MKL ``sgemm`` and the native library is
installed (``RENDITION_FUSED_KERNEL=0`` turns it off).  It reads the model's weights and never
changes the model; the cache it steps is a ``model.translation.cache.ReferenceCache``, advanced
through that cache's own methods.
"""

from __future__ import annotations

import ctypes
import os
from importlib import metadata
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from model.kernels import attention as attention_kernels
from model.kernels import native


def _dnnl_sgemm_address() -> int | None:
    """Address of oneDNN's ``dnnl_sgemm`` from the ``onednn-cpu-gomp`` wheel's library, or None
    (not installed, not loadable, or ``RENDITION_SGEMM=mkl``)."""
    if os.environ.get("RENDITION_SGEMM", "auto").lower() == "mkl":
        return None
    try:
        files = metadata.files("onednn-cpu-gomp") or []
    except metadata.PackageNotFoundError:
        return None
    for f in files:
        if f.name.startswith("libdnnl.so"):
            try:  # (after torch: its libgomp.so.1 is the one oneDNN's library binds to)
                lib = ctypes.CDLL(str(f.locate()))
                return ctypes.cast(lib.dnnl_sgemm, ctypes.c_void_p).value
            except (OSError, AttributeError):
                continue
    return None


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
    return so if _WIRED[id(so)] else None


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


def _struct(cls: type[ctypes.Structure], tensors: dict[str, Tensor | None], keep: list) -> ctypes.Structure:
    """cls with each field the data pointer of a tensor (detached, contiguous; None: NULL), the
    tensors appended to ``keep`` (whoever holds the struct must hold them too)."""
    ts = {k: w.detach().contiguous() if w is not None else None for k, w in tensors.items()}
    keep += ts.values()
    return cls(**{k: native.ptr(w) for k, w in ts.items()})


class _Weights:
    """A weights struct (``rk_decoder_weights`` / ``rk_encoder_weights``) with its layer array,
    holding every tensor it points to."""

    def __init__(self, cls: type[ctypes.Structure], layer_cls: type[ctypes.Structure], top: dict, layers: list[dict]):
        self.keep: list = []
        self.layers = (layer_cls * len(layers))(*(_struct(layer_cls, lw, self.keep) for lw in layers))
        self.struct = _struct(cls, top, self.keep)
        self.struct.layers, self.struct.n_layers = self.layers, len(layers)


def _version(params: tuple[Tensor, ...]) -> tuple:
    """Identifies the weights' current storage and values (an in-place update bumps _version)."""
    return tuple((t.data_ptr(), t.dtype, t.device, t._version) for t in params)


class FusedTransformer:
    """The fused encoder and decoding step of one ``Transformer`` (CPU float32 inference).

    The weight tables are built from the model's tensors when first needed and rebuilt when a
    weight changes (checked once per ``encode`` and once per ``refresh``, i.e. per search)."""

    def __init__(self, model: nn.Module):
        self.model = model
        self._encoder: tuple[tuple, _Weights] | None = None
        self._decoder: tuple[tuple, _Weights] | None = None

    @staticmethod
    def usable(model: nn.Module) -> bool:
        """Whether this model can run here: CPU float32 inference with a supported head size, the
        library built and wired to sgemm."""
        return attention_kernels.serves(model) and kernel() is not None

    # -- weight tables ---------------------------------------------------------------------------
    def _encoder_weights(self) -> _Weights:
        m = self.model
        key = _version(tuple(p for name, p in m.named_parameters() if not name.startswith("decoder")))
        if self._encoder is None or self._encoder[0] != key:
            layers = []
            for layer in m.encoder_layers:
                sa, ffn = layer.self_attn, layer.ffn
                w_qkv, b_qkv = sa.fused_qkv()
                layers.append(dict(
                    ln1_g=layer.self_attn_norm.weight, ln1_b=layer.self_attn_norm.bias, w_qkv=w_qkv, b_qkv=b_qkv,
                    rel_k=sa.rel_k if sa.k is not None else None, rel_v=sa.rel_v if sa.k is not None else None,
                    w_o=sa.out_proj.weight, b_o=sa.out_proj.bias, ln2_g=layer.ffn_norm.weight, ln2_b=layer.ffn_norm.bias,
                    w_1=ffn.fc1.weight, b_1=ffn.fc1.bias, w_2=ffn.fc2.weight, b_2=ffn.fc2.bias,
                ))  # fmt: skip
            top = dict(embed=m.embed.weight, norm_g=m.encoder_norm.weight, norm_b=m.encoder_norm.bias, positions=m.positions)
            self._encoder = (key, _Weights(native.EncoderWeights, native.EncoderLayer, top, layers))
        return self._encoder[1]

    def refresh(self) -> None:
        """Rebuild the decoder's table if a weight changed (call when a search starts: the steps
        then read the weights as they were then)."""
        m = self.model
        key = _version(tuple(p for name, p in m.named_parameters() if not name.startswith("encoder")))
        if self._decoder is None or self._decoder[0] != key:
            layers = []
            for layer in m.decoder_layers:
                sa, ca, ffn = layer.self_attn, layer.cross_attn, layer.ffn
                w_qkv, b_qkv = sa.fused_qkv()
                layers.append(dict(
                    ln1_g=layer.self_attn_norm.weight, ln1_b=layer.self_attn_norm.bias, w_qkv=w_qkv, b_qkv=b_qkv,
                    rel_k=sa.rel_k if sa.k is not None else None, rel_v=sa.rel_v if sa.k is not None else None,
                    w_o=sa.out_proj.weight, b_o=sa.out_proj.bias, ln2_g=layer.cross_attn_norm.weight,
                    ln2_b=layer.cross_attn_norm.bias, wx_q=ca.q_proj.weight, bx_q=ca.q_proj.bias,
                    wx_o=ca.out_proj.weight, bx_o=ca.out_proj.bias, ln3_g=layer.ffn_norm.weight,
                    ln3_b=layer.ffn_norm.bias, w_1=ffn.fc1.weight, b_1=ffn.fc1.bias, w_2=ffn.fc2.weight, b_2=ffn.fc2.bias,
                ))  # fmt: skip
            top = dict(
                embed=m.embed.weight, norm_g=m.decoder_norm.weight, norm_b=m.decoder_norm.bias,
                out_proj=m.output_weight_t(),
            )
            self._decoder = (key, _Weights(native.DecoderWeights, native.DecoderLayer, top, layers))

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

    def decode_step(self, tokens: Tensor, cache: Any) -> Tensor:
        """``Transformer.decode_step`` for a by-reference cache (``ReferenceCache``, whose rows are
        each at their own step), in one C call: logits (N, V).
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
        )  # fmt: skip
        rc = so.rk_decoder_step(ctypes.byref(args))
        if rc != 0:
            raise ValueError(f"head_dim {cfg.head_dim} not supported by the step kernel")
        cache.advance()
        return logits
