"""The encoder and the decoding step in one C call each (``rendition.model.kernels.fused_cpu``) against the torch
paths, for every supported head size and relative-position variant: the encoder with padding of
every kind, the step on the same by-reference cache through beam reorder and finished
sentences; and the shipped translator's hypotheses with them on and off."""

from __future__ import annotations

import threading

import pytest
import torch

from rendition.model.kernels import fused_cpu, native
from rendition.model.translation.backends import AttentionKernelBackend, FusedCPUBackend, TorchBackend, select_backend
from rendition.model.translation.cache import ReferenceCache
from rendition.model.translation.options import TranslationOptions
from rendition.model.translation.search import generate_ids
from rendition.model.translation.transformer import Transformer, TransformerConfig

# Where the native library was not built the module is skipped, unless RENDITION_REQUIRE_NATIVE=1 (CI):
# then it runs, and fails.
pytestmark = pytest.mark.skipif(
    not native.required() and fused_cpu.kernel() is None, reason="no step kernel (native library, MKL sgemm)"
)


def random_model(head_dim: int, rel: str, encoder_layers: int = 1) -> Transformer:
    cfg = TransformerConfig(
        vocab_size=50,
        d_model=2 * head_dim,
        n_heads=2,
        d_ff=48,
        n_encoder_layers=encoder_layers,
        n_decoder_layers=2,
        max_relative_position=3,
        relative_positions=rel != "none",
        relative_values=rel == "kv",
        sinusoidal_positions=rel == "none",
        dropout=0.0,
    )
    torch.manual_seed(head_dim)
    m = Transformer(cfg).eval()
    with torch.no_grad():  # non-trivial norms, biases and tables (they start as ones, zeros, ...)
        for name, p in m.named_parameters():
            if "norm" in name or name.endswith("bias") or "rel_" in name:
                p.add_(torch.randn_like(p) * 0.5)
    return m


def run_steps(m: Transformer, kv_dtype: torch.dtype | None = None, backend: type[TorchBackend] = FusedCPUBackend) -> list[torch.Tensor]:
    """Two steps with the 3 beams of each sentence on the same tokens, two on their own, a reorder
    within sentences, one sentence finishes (on the given back end: by default the fused step)."""
    be = backend(m)
    g = torch.Generator().manual_seed(1)
    B, K, T = 3, 3, 9
    src = torch.randint(4, 50, (B, 6), generator=g)
    src[1, 4:] = 0  # padding
    tokens = torch.randint(4, 50, (T, B * K), generator=g)
    out = []
    with torch.no_grad():
        mem, mask = be.encode(src)
        cache = be.new_cache(K, kv_dtype)
        cache.join(be.cross_states(mem), mask, T)
        assert isinstance(cache, ReferenceCache) == (backend is not TorchBackend)
        for t in range(2):
            out.append(be.decode_step(tokens[t, :B].repeat_interleave(K), cache))
        for t in range(2, 4):
            out.append(be.decode_step(tokens[t], cache))
        cache.reorder(torch.tensor([2, 0, 0, 3, 5, 4, 8, 6, 7]))
        cache.select(torch.tensor([0, 1, 2, 6, 7, 8]))  # sentence 1 finishes
        for t in range(4, T):
            out.append(be.decode_step(tokens[t, :6], cache))
    return out


@pytest.mark.parametrize("head_dim", [16, 32, 64, 128])
@pytest.mark.parametrize("rel", ["kv", "k", "none"])
def test_fused_encoder_equals_torch_encoder(head_dim: int, rel: str) -> None:
    """The encoder in one C call computes only the real tokens: at them it equals the torch encoder
    (which computes the padded batch), with trailing and interior padding (relative distances and
    sinusoidal positions are those of the original positions), a one-token sentence, sentences
    longer than k, and an all-padding row; padding rows of its output are zeros."""
    m = random_model(head_dim, rel, encoder_layers=2)
    g = torch.Generator().manual_seed(3)
    src = torch.randint(4, 50, (5, 11), generator=g)
    src[1, 6:] = 0  # trailing padding
    src[2, 3] = 0  # interior padding
    src[3, 1:] = 0  # one token
    src[4] = 0  # nothing at all
    with torch.no_grad():
        mem, mask = FusedCPUBackend(m).encode(src)
        ref, ref_mask = m.encode(src)  # (the torch reference)
    assert torch.equal(mask, ref_mask)
    real = src != 0
    torch.testing.assert_close(mem[real], ref[real], rtol=1e-5, atol=2e-5)
    assert not mem[~real].any()


@pytest.mark.parametrize("head_dim", [16, 32, 64, 128])
@pytest.mark.parametrize("rel", ["kv", "k", "none"])
def test_step_kernel_equals_torch_step(head_dim: int, rel: str) -> None:
    m = random_model(head_dim, rel)
    fused = run_steps(m)
    torch_steps = run_steps(m, backend=AttentionKernelBackend)
    for a, b in zip(fused, torch_steps):
        torch.testing.assert_close(a, b, atol=2e-5, rtol=1e-4)


@pytest.mark.parametrize("rel", ["kv", "none"])
def test_float16_cache_same_in_every_mode(rel: str) -> None:
    """K/V stored as float16: the step in C, the torch step on the by-reference cache and the torch
    step on a dense cache read the same rounded values, so they agree as closely as with float32;
    all stay near the float32 cache's logits."""
    m = random_model(64, rel)
    exact = run_steps(m)
    fused = run_steps(m, torch.float16)
    by_ref = run_steps(m, torch.float16, backend=AttentionKernelBackend)
    dense = run_steps(m, torch.float16, backend=TorchBackend)
    for a, b, c, x in zip(fused, by_ref, dense, exact):
        torch.testing.assert_close(a, c, atol=2e-5, rtol=1e-4)
        torch.testing.assert_close(b, c, atol=2e-5, rtol=1e-4)
        torch.testing.assert_close(a, x, atol=2e-2, rtol=0)
        assert not torch.equal(a, x)  # (it really rounds)


def test_out_of_range_token_ids_raise_like_torch() -> None:
    """The C paths index the embedding with the ids: out-of-range ids raise IndexError (as torch's
    embedding does), never read outside the table."""
    m = random_model(16, "kv")
    be = FusedCPUBackend(m)
    with torch.no_grad():
        with pytest.raises(IndexError):
            be.encode(torch.tensor([[5, 50]]))  # vocab_size 50
        with pytest.raises(IndexError):
            be.encode(torch.tensor([[5, -1]]))
        with pytest.raises(TypeError):
            be.encode(torch.tensor([[5.0, 6.0]]))
        mem, mask = be.encode(torch.tensor([[5, 6]], dtype=torch.int32))  # (int32 ids work, as with torch)
        torch.testing.assert_close(mem, be.encode(torch.tensor([[5, 6]]))[0])
        cache = be.new_cache(1)
        cache.join(be.cross_states(mem), mask, 4)
        with pytest.raises(IndexError):
            be.decode_step(torch.tensor([50]), cache)
        with pytest.raises(ValueError, match="one per cache row"):
            be.decode_step(torch.tensor([7, 8]), cache)
        assert cache.positions().tolist() == [0]  # nothing happened
        assert be.decode_step(torch.tensor([7]), cache).shape == (1, 50)


def test_step_kernel_two_threads_equals_one() -> None:
    m = random_model(64, "kv")
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = run_steps(m)
        torch.set_num_threads(2)
        two = run_steps(m)
    finally:
        torch.set_num_threads(threads)
    for a, b in zip(one, two):
        torch.testing.assert_close(a, b, atol=2e-5, rtol=1e-4)


def test_products_split_across_threads_equal_torch() -> None:
    """Products large enough to be split into column blocks, one per thread (fused.c ``mm_wt`` /
    ``mm``: a 64-row step's output projection of 64 x 2,000 x 256, the encoder's 480 rows), from the
    main thread and from another thread (where the split is what gives oneDNN's sgemm its threads),
    agree with the torch step and the torch encoder; the column count is no multiple of the 64-column
    panels, so the last block is a partial one."""
    cfg = TransformerConfig(
        vocab_size=2000, d_model=256, n_heads=4, d_ff=1000, n_encoder_layers=1, n_decoder_layers=1,
        max_relative_position=4, relative_positions=True, relative_values=True, dropout=0.0,
    )  # fmt: skip
    torch.manual_seed(0)
    m = Transformer(cfg).eval()
    g = torch.Generator().manual_seed(2)
    src = torch.randint(4, 2000, (16, 30), generator=g)
    tokens = torch.randint(4, 2000, (3, 64), generator=g)

    def steps(backend: type[TorchBackend]) -> list[torch.Tensor]:
        be = backend(m)
        with torch.no_grad():
            mem, mask = be.encode(src)
            cache = be.new_cache(4)
            cache.join(be.cross_states(mem), mask, 4)
            out = [mem, be.decode_step(tokens[0, :16].repeat_interleave(4), cache)]
            out += [be.decode_step(tokens[t], cache) for t in (1, 2)]
        return out

    reference = steps(TorchBackend)
    threads = torch.get_num_threads()
    results: dict[str, list[torch.Tensor]] = {}

    def on_two_threads(key: str) -> None:
        torch.set_num_threads(2)
        results[key] = steps(FusedCPUBackend)

    try:
        on_two_threads("main")
        worker = threading.Thread(target=on_two_threads, args=("worker",))
        worker.start()
        worker.join()
    finally:
        torch.set_num_threads(threads)
    for key in ("main", "worker"):
        for a, b in zip(results[key], reference):
            torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)


def test_without_sgemm_the_torch_step_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither oneDNN's nor MKL's sgemm: no step kernel, the attention-kernel back end is chosen, and
    decoding works (the torch step)."""
    monkeypatch.setattr(fused_cpu, "_sgemm_address", lambda: None)
    monkeypatch.setattr(fused_cpu, "_dnnl_sgemm_address", lambda: None)
    monkeypatch.setattr(fused_cpu, "_WIRED", {})
    assert fused_cpu.kernel() is None
    m = random_model(16, "kv")
    assert type(select_backend(m)) is AttentionKernelBackend
    assert all(torch.isfinite(x).all() for x in run_steps(m, backend=AttentionKernelBackend))


@pytest.mark.slow
@pytest.mark.parametrize("beam_size", [1, 4])
def test_shipped_translator_same_hypotheses_with_and_without_fused_kernels(beam_size: int, shipped_batch) -> None:
    tr, src = shipped_batch
    assert type(tr.backend) is FusedCPUBackend  # (chosen at load)
    opts = dict(beam_size=beam_size, num_hypotheses=beam_size)
    fused = generate_ids(tr.backend, src, TranslationOptions(**opts))
    plain = generate_ids(AttentionKernelBackend(tr.model), src, TranslationOptions(**opts))
    for a, b in zip(fused, plain):
        assert [h.tokens for h in a] == [h.tokens for h in b]
        assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-4)


@pytest.mark.parametrize("sgemm", ["onednn", "mkl"])
def test_both_sgemms_give_the_torch_step(monkeypatch: pytest.MonkeyPatch, sgemm: str) -> None:
    """oneDNN's sgemm (the default where the onednn-cpu-gomp wheel is installed: x86-64 Linux, so in
    CI) and MKL's (RENDITION_SGEMM=mkl) compute the same step, to float rounding."""
    monkeypatch.setenv("RENDITION_SGEMM", "mkl" if sgemm == "mkl" else "auto")
    monkeypatch.setattr(fused_cpu, "_WIRED", {})
    assert fused_cpu.sgemm_name() == sgemm
    m = random_model(32, "kv")
    for a, b in zip(run_steps(m, backend=FusedCPUBackend), run_steps(m, backend=TorchBackend)):
        torch.testing.assert_close(a, b, atol=2e-5, rtol=1e-4)
    monkeypatch.setenv("RENDITION_SGEMM", "auto")  # wire the library back as the other tests found it
    monkeypatch.setattr(fused_cpu, "_WIRED", {})
    fused_cpu.kernel()
