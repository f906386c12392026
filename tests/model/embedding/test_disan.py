"""DiSAN: the fast token2token paths (C kernel, eager tiles) against the direct reference, and the
reference against a literal per-(i, j, feature) loop over the paper's formula."""

from __future__ import annotations

import dataclasses
import math
import os

import pytest
import torch

from rendition.model.embedding.disan import DiSAN, DiSANConfig, cpu_kernel, direction_mask, t2t_attention, t2t_reference
from rendition.model.kernels import native

# The C kernel is tested where it is built, and always under RENDITION_REQUIRE_NATIVE=1 (CI), where a
# missing one then fails instead of dropping out of the list.
IMPLS = ["eager"] + (["kernel"] if native.required() or cpu_kernel() is not None else [])
if os.environ.get("RENDITION_TEST_COMPILE") == "1":  # torch.compile takes minutes on a loaded 2-core box
    IMPLS.append("compiled")


def random_case(B: int, n: int, d: int, lengths: list[int], seed: int = 0, scale: float = 3.0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(B, n, d, generator=g, dtype=dtype)
    q = torch.randn(B, n, d, generator=g, dtype=dtype) * scale
    k = torch.randn(B, n, d, generator=g, dtype=dtype) * scale
    mask = torch.arange(n).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)  # (B, n)
    return h, q, k, mask


def loop_formula(h, q, k, mask, direction, c=5.0):
    """s_i = sum_j softmax_j(c tanh((q_i + k_j) / c) + M_ij) h_j, one feature at a time."""
    B, n, d = h.shape
    out = torch.zeros_like(h)
    for b in range(B):
        for i in range(n):
            keys = [j for j in range(n) if mask[b, j] and (j < i if direction == "fw" else j > i)]
            for t in range(d):
                if not keys:
                    continue
                f = [c * math.tanh((q[b, i, t].item() + k[b, j, t].item()) / c) for j in keys]
                m = max(f)
                w = [math.exp(x - m) for x in f]
                out[b, i, t] = sum(wi * h[b, j, t].item() for wi, j in zip(w, keys)) / sum(w)
    return out


@pytest.mark.parametrize("direction", ["fw", "bw"])
def test_reference_matches_loop_formula(direction):
    h, q, k, mask = random_case(2, 6, 3, [6, 3])
    torch.testing.assert_close(t2t_reference(h, q, k, mask, direction), loop_formula(h, q, k, mask, direction))


def test_direction_masks():
    fw, bw = direction_mask(4, "fw"), direction_mask(4, "bw")
    assert fw.tolist()[2] == [True, True, False, False]  # query 2 sees keys 0, 1
    assert bw.tolist()[2] == [False, False, False, True]  # query 2 sees key 3
    assert not fw.diagonal().any() and not bw.diagonal().any()


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("direction", ["fw", "bw"])
def test_fast_equals_reference_with_padding(impl, direction):
    # odd sizes, several query tiles and key tiles (tiny element budget), rows of length 0, 1 and full
    h, q, k, mask = random_case(5, 23, 7, [23, 17, 1, 0, 9], seed=1)
    ref = t2t_reference(h, q, k, mask, direction)
    fast = t2t_attention(h, q, k, mask, direction, block_q=8, max_block_elems=5 * 8 * 5 * 7, impl=impl)
    tol = dict(atol=2e-6, rtol=2e-5) if impl == "kernel" else {}  # the kernel computes in float32
    torch.testing.assert_close(fast, ref, **tol)
    assert torch.isfinite(fast).all()
    assert (fast[3] == 0).all()  # all-padding row: zeros, not NaN


@pytest.mark.parametrize("impl", IMPLS)
def test_edge_cases_length_one_and_all_padding(impl):
    for lengths, n in (([1], 1), ([0, 0], 4), ([1, 0, 2], 2)):
        h, q, k, mask = random_case(len(lengths), n, 5, lengths, seed=2)
        for direction in ("fw", "bw"):
            ref = t2t_reference(h, q, k, mask, direction)
            fast = t2t_attention(h, q, k, mask, direction, impl=impl)
            torch.testing.assert_close(fast, ref, atol=1e-6, rtol=1e-5)
            assert not torch.isnan(fast).any()
    # length 1: no key in either direction -> exactly zero
    h, q, k, mask = random_case(1, 1, 4, [1])
    assert (t2t_attention(h, q, k, mask, "fw", impl=impl) == 0).all()


def test_large_scores_saturate_without_overflow():
    # |q|, |k| up to ~90 (tanh saturated almost everywhere): exact while |q|, |k| <= 20 c = 100
    h, q, k, mask = random_case(2, 9, 4, [9, 5], seed=3, scale=25.0)
    assert q.abs().max() > 50
    for impl in IMPLS:
        fast = t2t_attention(h, q, k, mask, "fw", impl=impl)
        torch.testing.assert_close(fast, t2t_reference(h, q, k, mask, "fw"), atol=1e-5, rtol=1e-4)
    # far outside that range the exponentials are clamped: still finite, never NaN
    h, q, k, mask = random_case(2, 9, 4, [9, 5], seed=3, scale=1e4)
    for impl in IMPLS:
        assert torch.isfinite(t2t_attention(h, q, k, mask, "bw", impl=impl)).all()


@pytest.mark.parametrize("direction", ["fw", "bw"])
@pytest.mark.skipif("kernel" not in IMPLS, reason="native kernels not built")
def test_kernel_gradients_match_reference(direction):
    h, q, k, mask = random_case(3, 11, 6, [11, 4, 0], seed=4)
    g = torch.randn(3, 11, 6, dtype=torch.float64)
    grads = []
    for fn in (lambda *a: t2t_reference(*a), lambda *a: t2t_attention(*a, impl="kernel")):
        xs = [t.clone().requires_grad_() for t in (h, q, k)]
        (fn(xs[0], xs[1], xs[2], mask, direction) * g).sum().backward()
        grads.append([x.grad for x in xs])
    for a, b in zip(*grads):
        torch.testing.assert_close(b, a, atol=1e-5, rtol=1e-4)


def small_model(seed: int = 0, **kw) -> DiSAN:
    torch.manual_seed(seed)
    cfg = DiSANConfig(vocab_size=50, d_embed=12, d_model=10, d_out=kw.pop("d_out", 7), dropout=0.0, **kw)
    return DiSAN(cfg).eval().double()


def test_model_fast_equals_direct_and_ignores_padding():
    model = small_model(block_q=4, max_block_elems=64)
    ids = torch.tensor([[5, 9, 3, 12, 7, 8, 30, 2, 4], [6, 7, 8, 0, 0, 0, 0, 0, 0], [11, 0, 0, 0, 0, 0, 0, 0, 0]])
    with torch.no_grad():
        direct = model(ids, fast=False)
        for impl in IMPLS:
            torch.testing.assert_close(model(ids, impl=impl), direct, atol=1e-6, rtol=1e-5)
        alone = model(ids[1:2, :3], fast=False)  # same sentence without the padding
    torch.testing.assert_close(direct[1:2], alone)
    assert direct.shape == (3, 7)


def disa_by_hand(blk, h, mask, direction):
    """One DiSA block: token2token scores by the loop formula, then the fusion gate, padding zeroed."""
    s = loop_formula(h, h @ blk.w1.weight.T, h @ blk.w2.weight.T + blk.b, mask, direction)
    gate = torch.sigmoid(s @ blk.wf1.weight.T + h @ blk.wf2.weight.T + blk.wf2.bias)
    return (gate * h + (1 - gate) * s) * mask.unsqueeze(-1)


def source2token_by_hand(model, u, mask):
    logits = torch.nn.functional.elu(u @ model.s2t.w1.weight.T + model.s2t.w1.bias) @ model.s2t.w2.weight.T + model.s2t.w2.bias
    logits[~mask] = float("-inf")
    return (torch.softmax(logits, dim=1) * u).sum(1)


def test_model_matches_paper_pipeline_by_hand():
    """Recompute h, both DiSA blocks, the fusion gate and source2token with explicit formulas."""
    model = small_model(d_out=None)
    ids = torch.tensor([[5, 9, 3, 12], [6, 7, 0, 0]])
    mask = ids != 0
    with torch.no_grad():
        h = torch.nn.functional.elu(model.fc_h(model.embed(ids)))
        u = torch.cat([disa_by_hand(model.fw, h, mask, "fw"), disa_by_hand(model.bw, h, mask, "bw")], -1)
        z = source2token_by_hand(model, u, mask)
        torch.testing.assert_close(model(ids, fast=False), z)
        assert model.cfg.dim == 20 and z.shape == (2, 20)


def test_stacked_layers_match_the_pipeline_by_hand():
    """blocks = 3: every further layer maps the 2d features below to one h per direction,
    h_fw = elu(W_fw u + b_fw) and h_bw = elu(W_bw u + b_bw), and repeats both DiSA blocks; the pooling
    reads the top layer.  Fast paths equal the direct form, and padding changes nothing."""
    model = small_model(d_out=None, blocks=3)
    assert len(model.upper) == 2 and model.num_parameters() > small_model(d_out=None).num_parameters()
    ids = torch.tensor([[5, 9, 3, 12, 7], [6, 7, 0, 0, 0]])
    mask = ids != 0
    with torch.no_grad():
        h = torch.nn.functional.elu(model.fc_h(model.embed(ids)))
        u = torch.cat([disa_by_hand(model.fw, h, mask, "fw"), disa_by_hand(model.bw, h, mask, "bw")], -1)
        for layer in model.upper:
            w, b = layer.fc.weight, layer.fc.bias  # (2d, 2d): forward rows first
            h_fw = torch.nn.functional.elu(u @ w[:10].T + b[:10])
            h_bw = torch.nn.functional.elu(u @ w[10:].T + b[10:])
            u = torch.cat([disa_by_hand(layer.fw, h_fw, mask, "fw"), disa_by_hand(layer.bw, h_bw, mask, "bw")], -1)
        z = source2token_by_hand(model, u, mask)
        torch.testing.assert_close(model(ids, fast=False), z)
        for impl in IMPLS:
            torch.testing.assert_close(model(ids, impl=impl), z, atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(model(ids[1:2, :2], fast=False), z[1:2])
    with pytest.raises(ValueError, match="blocks"):
        small_model(blocks=0)


def test_all_padding_sentence_gives_finite_vector():
    model = small_model()
    with torch.no_grad():
        out = model(torch.zeros(2, 3, dtype=torch.long))
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out[0], model.head.bias)  # zero pooled vector -> the head's bias


def test_config_roundtrip(tmp_path):
    cfg = DiSANConfig(vocab_size=123, d_model=16, d_out=None)
    cfg.save(tmp_path / "config.json")
    assert DiSANConfig.load(tmp_path / "config.json") == cfg
    assert cfg.dim == 32
    (tmp_path / "bad.json").write_text('{"vocab_size": 5, "nope": 1}')
    with pytest.raises(ValueError, match="nope"):
        DiSANConfig.load(tmp_path / "bad.json")
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.d_model = 3  # type: ignore[misc]
