"""The native library: built at install time for each instruction set, the best one the CPU runs
loaded at run time, its structs' sizes checked; every variant this CPU can run computes what the
torch paths compute (the shipped translator's hypotheses, the DiSAN and log-sum-exp kernels)."""

from __future__ import annotations

import ctypes

import pytest
import torch

from rendition.model.embedding.disan import t2t_attention, t2t_reference
from rendition.model.kernels import fused_cpu, native
from rendition.model.translation.backends import AttentionKernelBackend, FusedCPUBackend, TorchBackend
from rendition.model.translation.options import TranslationOptions
from rendition.model.translation.search import generate_ids, lse_chunk_max


def test_library_loads_with_the_best_variant_this_cpu_runs(need_kernel) -> None:
    lib = need_kernel("RENDITION_FUSED_KERNEL")
    best = next(isa for isa in native.ISAS if isa in native.built() and native.cpu_supports(isa))
    assert native.isa() == best and lib.rk_isa().decode() == best
    assert "generic" in native.built()  # every installation has the baseline


def test_struct_sizes_agree_with_c(need_kernel) -> None:
    lib = need_kernel("RENDITION_FUSED_KERNEL")
    for i, struct in enumerate(native.STRUCTS):
        assert lib.rk_struct_size(i) == ctypes.sizeof(struct)
    assert lib.rk_struct_size(len(native.STRUCTS)) == -1


def test_a_forced_isa_the_cpu_lacks_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RENDITION_ISA", "sse1")
    with pytest.raises(ValueError, match="RENDITION_ISA"):
        native.select_isa()


@pytest.fixture(params=native.ISAS)
def variant(request, monkeypatch: pytest.MonkeyPatch, need_kernel) -> str:
    """Each instruction-set variant in turn, loaded as the library (where the CPU runs it)."""
    isa = request.param
    need_kernel("RENDITION_FUSED_KERNEL")
    if not native.cpu_supports(isa):
        pytest.skip(f"this CPU cannot run the {isa} variant")
    if isa not in native.built():  # (setup.py builds every variant on x86-64)
        (pytest.fail if native.required() else pytest.skip)(f"the {isa} variant was not built")
    monkeypatch.setenv("RENDITION_ISA", isa)
    monkeypatch.setattr(native, "_LIB", {})
    monkeypatch.setattr(fused_cpu, "_WIRED", {})
    assert native.isa() == isa
    return isa


@pytest.mark.slow
@pytest.mark.parametrize("backend", [FusedCPUBackend, AttentionKernelBackend])
def test_each_variant_translates_as_the_torch_path(variant: str, backend, shipped_batch, set_kernel) -> None:
    tr, src = shipped_batch
    opts = dict(beam_size=4, num_hypotheses=2)
    fast = generate_ids(backend(tr.model), src, TranslationOptions(**opts))
    set_kernel("RENDITION_SEARCH_KERNEL", "0")
    plain = generate_ids(TorchBackend(tr.model), src, TranslationOptions(**opts))
    for a, b in zip(fast, plain):
        assert [h.tokens for h in a] == [h.tokens for h in b]
        assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-4)


def test_each_variant_disan_and_lse_kernels(variant: str) -> None:
    g = torch.Generator().manual_seed(0)
    h, q, k = (torch.randn(3, 13, 24, generator=g) * 3 for _ in range(3))
    mask = torch.arange(13) < torch.tensor([13, 7, 1]).unsqueeze(1)
    for direction in ("fw", "bw"):
        torch.testing.assert_close(
            t2t_attention(h, q, k, mask, direction, impl="kernel"), t2t_reference(h, q, k, mask, direction),
            atol=1e-5, rtol=1e-4,
        )  # fmt: skip
    x = torch.randn(9, 8000, generator=g) * 4
    lse, cmax = lse_chunk_max(x, 64)
    torch.testing.assert_close(lse, torch.logsumexp(x.double(), -1).float(), rtol=1e-6, atol=1e-5)
    assert torch.equal(cmax, x.view(9, 125, 64).amax(-1))
