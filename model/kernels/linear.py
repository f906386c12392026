"""Linear maps in int8, as drop-in ``nn.Module`` replacements of ``nn.Linear`` (CPU inference):
the sentence encoder's int8 compute type (``rendition.model.kernels.compute_type``).

``Int8Linear``: the weight quantised once, symmetric per output channel
(``fused_cpu.QuantizedWeight``); each call quantises its input rows to unsigned 8 bits with a zero
point each and runs oneDNN's ``dnnl_gemm_u8s8s32`` through ``rk_qlinear_forward``, the very kernel
the translator's int8 type runs; the bias is added in float32 after the product.  It takes and
gives float32, so the rest of a model (activations, attention, pooling) stays float32.
``convert_linears(model, "int8")`` replaces every ``nn.Linear`` of a model in place.
"""

from __future__ import annotations

import ctypes

import torch
from torch import Tensor, nn

from rendition.model.kernels import fused_cpu, native


class Int8Linear(nn.Module):
    """``nn.Linear`` with an int8 weight (per output channel) and per-row int8 activations."""

    bias: Tensor | None  # (a buffer)

    def __init__(self, linear: nn.Linear):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.qweight = fused_cpu.QuantizedWeight(linear.weight)
        bias = linear.bias.detach().to(torch.float32).clone() if linear.bias is not None else None
        self.register_buffer("bias", bias)
        self._struct = self.qweight.struct()

    def forward(self, x: Tensor) -> Tensor:
        if x.requires_grad and torch.is_grad_enabled():
            raise RuntimeError("Int8Linear is for inference only")
        so = fused_cpu.kernel()
        if so is None or not fused_cpu._INT8.get(id(so)):
            raise RuntimeError("no int8 kernel here (native library and oneDNN's dnnl_gemm_u8s8s32)")
        lead = x.shape[:-1]
        x2 = x.detach().reshape(-1, self.in_features).to(torch.float32).contiguous()
        M = x2.shape[0]
        y = torch.empty(M, self.out_features)
        if M:
            args = native.QLinearArgs(
                x=x2.data_ptr(), w=ctypes.pointer(self._struct), y=y.data_ptr(), xq=None, x_scale=None,
                x_zero=None, acc=None, M=M, N=self.out_features, K=self.in_features, threads=torch.get_num_threads(),
            )  # fmt: skip
            if so.rk_qlinear_forward(ctypes.byref(args)) != 0:
                raise RuntimeError("rk_qlinear_forward failed")
        if self.bias is not None:
            y += self.bias
        return y.reshape(*lead, self.out_features)

    @property
    def nbytes(self) -> int:
        return self.qweight.nbytes + (self.bias.numel() * 4 if self.bias is not None else 0)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, int8"


LINEARS: dict[str, type[nn.Module]] = {"int8": Int8Linear}


def convert_linears(model: nn.Module, compute_type: str) -> int:
    """Replace every ``nn.Linear`` of ``model`` (on CPU, float32, in eval mode) by its
    ``compute_type`` form ("int8"); returns how many were replaced.  The model is
    then for inference only."""
    cls = LINEARS.get(compute_type)
    if cls is None:
        raise ValueError(f"compute_type must be one of {tuple(LINEARS)}, not {compute_type!r}")
    if model.training:
        raise RuntimeError("convert_linears is for inference: call model.eval() first")
    n = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is nn.Linear:
                if child.weight.device.type != "cpu":
                    raise ValueError(f"{compute_type} linear maps run on CPU, not {child.weight.device}")
                setattr(parent, name, cls(child))
                n += 1
    return n


__all__ = ["Int8Linear", "LINEARS", "convert_linears"]
