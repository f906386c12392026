"""The by-reference step-attention kernel against the dense torch attention, and by-reference decoding
against dense decoding through beam reorders and finished sentences."""

from __future__ import annotations

import pytest
import torch

from rendition.model.kernels import attention as attention_kernels
from rendition.model.kernels import native
from rendition.model.translation.backends import AttentionKernelBackend, TorchBackend, select_backend
from rendition.model.translation.cache import DenseCache, ReferenceCache
from rendition.model.translation.options import TranslationOptions
from rendition.model.translation.search import generate_ids
from rendition.model.translation.transformer import MultiHeadAttention, Transformer, TransformerConfig

# Where the native library was not built the module is skipped, unless RENDITION_REQUIRE_NATIVE=1 (CI):
# then it runs, and fails.
pytestmark = pytest.mark.skipif(
    not native.required() and attention_kernels.kernel() is None, reason="native kernels not built"
)


@pytest.mark.parametrize("head_dim", [16, 32, 64, 128])
@pytest.mark.parametrize("t", [0, 2, 9, 40])
@pytest.mark.parametrize("rel", ["kv", "k", "none"])
@pytest.mark.parametrize("kv_dtype", [torch.float32, torch.float16])
def test_kernel_equals_dense_attention_over_gathered_history(head_dim: int, t: int, rel: str, kv_dtype) -> None:
    """Rows read their past from other storage rows (as after beam reorders): the kernel must store
    the step's K/V in each row's own storage row (float16 storage: rounded as torch rounds) and
    equal MultiHeadAttention.attend on the history gathered into a dense (N, H, t+1, Dh) tensor."""
    g = torch.Generator().manual_seed(head_dim * 100 + t)
    H, N, S, T, k = 3, 5, 7, 48, 4
    cfg = TransformerConfig(
        vocab_size=10,
        d_model=H * head_dim,
        n_heads=H,
        max_relative_position=k,
        relative_positions=rel != "none",
        relative_values=rel == "kv",
        dropout=0.0,
    )
    att = MultiHeadAttention(cfg, relative=rel != "none").eval()
    if rel != "none":
        with torch.no_grad():
            att.rel_k.normal_(0, 1.0, generator=g)
            if att.rel_v is not None:
                att.rel_v.normal_(0, 1.0, generator=g)
    k_store = torch.randn(S, H, T, head_dim, generator=g).to(kv_dtype)
    v_store = torch.randn(S, H, T, head_dim, generator=g).to(kv_dtype)
    src = torch.randint(0, S, (N, T), generator=g)
    src[0] = 3  # one row whose whole past is one storage row
    src[:, t] = torch.tensor([3, 0, 6, 1, 2])  # this step: every row's own storage row
    q = torch.randn(N, H, 1, head_dim, generator=g) * 3
    k_new = torch.randn(N, H, 1, head_dim, generator=g)
    v_new = torch.randn(N, H, 1, head_dim, generator=g)

    pos = torch.arange(t + 1)
    want_k, want_v = k_store.clone(), v_store.clone()
    want_k[src[:, t], :, t] = k_new[:, :, 0].to(kv_dtype)
    want_v[src[:, t], :, t] = v_new[:, :, 0].to(kv_dtype)
    k_dense = want_k[src[:, : t + 1], :, pos].permute(0, 2, 1, 3).float()  # (N, H, t+1, Dh)
    v_dense = want_v[src[:, : t + 1], :, pos].permute(0, 2, 1, 3).float()
    rel_idx = None if rel == "none" else (pos - t).clamp(-k, k).add(k).unsqueeze(0)  # (1, t+1)
    with torch.no_grad():
        want = att.attend(q, k_dense, v_dense, None, rel_idx)
        got = attention_kernels.rel_step_attention(
            q,
            k_new,
            v_new,
            k_store,
            v_store,
            src,
            t,
            att.rel_k if att.k else None,
            att.rel_v if att.k else None,
            k,
            scale=head_dim**-0.5,
        )
    assert torch.equal(k_store, want_k) and torch.equal(v_store, want_v)  # the step's K/V stored, nothing else
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("head_dim", [16, 64, 128])
@pytest.mark.parametrize("beams", [2, 3, 4, 5, 6])
@pytest.mark.parametrize("kv_dtype", [torch.float32, torch.float16])
def test_beams_read_in_groups_equal_rows_read_alone(head_dim: int, beams: int, kv_dtype) -> None:
    """With ``beams`` > 1 the kernel takes a sentence's rows in groups of up to 4 (4 + 1, 4 + 2,
    2 + 1 ...) that walk the positions together; each row's arithmetic, the four-way horizontal
    sum included, must be that of the row alone: bitwise the same outputs and stores.  The
    sentences' beams share a long past in one storage row and then diverge, as after
    ``DecoderCache.compact``."""
    g = torch.Generator().manual_seed(head_dim + beams)
    H, B, T, t, k = 2, 3, 64, 50, 4
    N = B * beams
    k_store = torch.randn(N, H, T, head_dim, generator=g).to(kv_dtype)
    v_store = torch.randn(N, H, T, head_dim, generator=g).to(kv_dtype)
    first = torch.arange(B).repeat_interleave(beams) * beams  # each sentence's first storage row
    own = first + torch.randint(0, beams, (N,), generator=g)  # a diverged past
    src = torch.where(torch.arange(T) < 30, first.unsqueeze(1), own.unsqueeze(1))
    src[:, 40::3] = first.unsqueeze(1)
    src[:, t] = torch.arange(N)
    q, k_new, v_new = (torch.randn(N, H, 1, head_dim, generator=g) * 2 for _ in range(3))
    wk, wv = (torch.randn(2 * k + 1, head_dim, generator=g) for _ in range(2))
    outs, stores = [], []
    for n in (1, beams):
        ks, vs = k_store.clone(), v_store.clone()
        outs.append(attention_kernels.rel_step_attention(q, k_new, v_new, ks, vs, src, t, wk, wv, k, head_dim**-0.5, n))
        stores.append((ks, vs))
    assert torch.equal(outs[0], outs[1])
    assert torch.equal(stores[0][0], stores[1][0]) and torch.equal(stores[0][1], stores[1][1])
    assert not torch.equal(stores[0][0], k_store)  # (the step's keys were stored)


@pytest.mark.parametrize("head_dim", [16, 64])
@pytest.mark.parametrize("rel", ["kv", "k"])
def test_encoder_kernel_equals_torch_attention(head_dim: int, rel: str) -> None:
    """The encoder with its attention in C (``AttentionKernelBackend``) equals the torch reference, with
    trailing and interior padding, a one-token sentence and an all-padding row, sentences longer
    than k on both sides of every query.  (The encoder in one C call, which skips padding, is
    tested in test_fused_cpu.py.)"""
    torch.manual_seed(head_dim)
    cfg = TransformerConfig(
        vocab_size=30,
        d_model=2 * head_dim,
        n_heads=2,
        d_ff=48,
        n_encoder_layers=2,
        n_decoder_layers=1,
        max_relative_position=3,
        relative_values=rel == "kv",
        dropout=0.0,
    )
    m = Transformer(cfg).eval()
    with torch.no_grad():
        for layer in m.encoder_layers:
            layer.self_attn.rel_k.normal_(0, 1.0)
            if layer.self_attn.rel_v is not None:
                layer.self_attn.rel_v.normal_(0, 1.0)
    src = torch.randint(4, 30, (5, 11))
    src[1, 6:] = cfg.pad_id  # trailing padding
    src[2, 3] = cfg.pad_id  # interior padding
    src[3, 1:] = cfg.pad_id  # one token
    src[4] = cfg.pad_id  # nothing at all
    with torch.no_grad():
        mem, mask = AttentionKernelBackend(m).encode(src)
        ref, _ = m.encode(src)
    torch.testing.assert_close(mem, ref, rtol=1e-5, atol=1e-5)


def test_unsupported_head_dim_is_refused() -> None:
    m = Transformer(TransformerConfig(vocab_size=30, d_model=96, n_heads=2, n_encoder_layers=1, n_decoder_layers=1)).eval()
    assert type(select_backend(m)) is TorchBackend  # head_dim 48
    q = torch.zeros(1, 1, 1, 48)
    store = torch.zeros(1, 1, 4, 48)
    with pytest.raises(ValueError, match="head_dim 48"):
        attention_kernels.rel_step_attention(q, q, q, store, store, torch.zeros(1, 4, dtype=torch.long), 0, None, None, 0)


def test_by_reference_only_for_float32_cpu_inference() -> None:
    """The kernel back ends (by-reference cache) are chosen for a float32 CPU model in eval mode only;
    a back end refuses a model moved to another dtype, or put back into training, after it was chosen."""
    m = Transformer(TransformerConfig(vocab_size=30, d_model=32, n_heads=2, n_encoder_layers=1, n_decoder_layers=1)).eval()
    assert type(select_backend(m)) is not TorchBackend
    be = AttentionKernelBackend(m)
    assert type(select_backend(m.train())) is TorchBackend  # training: the torch reference (it has a backward)
    with pytest.raises(RuntimeError, match="training"):
        be.encode(torch.tensor([[5, 6]]))
    assert type(select_backend(m.eval().double())) is TorchBackend
    with pytest.raises(RuntimeError, match="float64"):
        be.encode(torch.tensor([[5, 6]]))


@pytest.mark.slow
@pytest.mark.parametrize("beam_size", [1, 4])
def test_translation_by_reference_equals_dense(beam_size: int, shipped_batch) -> None:
    """The shipped translator with the by-reference cache and with the dense one (kernel switched
    off): same hypotheses and scores, through reorders, sentences finishing at different steps
    and n-best lists."""
    tr, src = shipped_batch
    by_ref_backend, dense_backend = AttentionKernelBackend(tr.model), TorchBackend(tr.model)
    assert isinstance(by_ref_backend.new_cache(beam_size), ReferenceCache)
    assert isinstance(dense_backend.new_cache(beam_size), DenseCache)
    by_ref = generate_ids(by_ref_backend, src, TranslationOptions(beam_size=beam_size, num_hypotheses=beam_size))
    dense = generate_ids(dense_backend, src, TranslationOptions(beam_size=beam_size, num_hypotheses=beam_size))
    assert len({len(hyps[0].tokens) for hyps in dense}) > 1  # sentences really finish at different steps
    for a, b in zip(by_ref, dense):
        assert [h.tokens for h in a] == [h.tokens for h in b]
        assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-4)
