"""The relative-position Transformer against the paper's formulas, and the KV cache against full decoding."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
import torch

from rendition.model.kernels.fused_cpu import FusedTransformer
from rendition.model.translation.backends import AttentionKernelBackend, FusedCPUBackend, TorchBackend
from rendition.model.translation.cache import ReferenceCache
from rendition.model.translation.transformer import MultiHeadAttention, Transformer, TransformerConfig


def direct_relative_attention(att: MultiHeadAttention, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """Shaw et al. (2018) eqs. 3-5, written as loops over heads, i and j. keep (B, T, T) bool."""
    B, T, D = x.shape
    H, Dh, k = att.n_heads, att.head_dim, att.k
    q = att.q_proj(x).view(B, T, H, Dh)
    kk = att.k_proj(x).view(B, T, H, Dh)
    v = att.v_proj(x).view(B, T, H, Dh)
    z = torch.zeros(B, T, H, Dh, dtype=torch.float64)
    for b in range(B):
        for h in range(H):
            for i in range(T):
                e = torch.full((T,), -math.inf, dtype=torch.float64)
                for j in range(T):
                    if keep[b, i, j]:
                        a_k = att.rel_k[max(-k, min(k, j - i)) + k]
                        e[j] = float(q[b, i, h] @ (kk[b, j, h] + a_k)) / math.sqrt(Dh)
                alpha = torch.softmax(e, 0)
                for j in range(T):
                    if keep[b, i, j]:
                        a_v = att.rel_v[max(-k, min(k, j - i)) + k] if att.rel_v is not None else 0.0
                        z[b, i, h] += alpha[j] * (v[b, j, h] + a_v).double()
    return att.out_proj(z.view(B, T, D).float())


BACKENDS = {"fused_cpu": FusedCPUBackend, "by_reference": AttentionKernelBackend, "dense": TorchBackend}


@pytest.fixture(params=list(BACKENDS))
def cache_mode(request: pytest.FixtureRequest, need_kernel, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run a decoding test three ways, one back end each (``backend(cache_mode, model)``): the whole
    step in one C call (``rendition.model.kernels.fused_cpu``) over the by-reference KV cache; the torch step
    over the by-reference cache (its attention in C); the torch reference over the dense cache."""
    if request.param == "fused_cpu":  # every step of the test must run in C
        need_kernel("RENDITION_FUSED_KERNEL")
        calls = []
        real = FusedTransformer.decode_step
        monkeypatch.setattr(FusedTransformer, "decode_step", lambda *a: calls.append(1) or real(*a))
        yield request.param
        assert calls, "the step kernel was not used"
        return
    if request.param == "by_reference":
        need_kernel("RENDITION_ATTENTION_KERNEL")
    yield request.param


def backend(mode: str, m: Transformer) -> TorchBackend:
    return BACKENDS[mode](m)


def small_cfg(**kw) -> TransformerConfig:
    base = dict(vocab_size=40, d_model=32, n_heads=2, d_ff=48, n_encoder_layers=2, n_decoder_layers=2, max_relative_position=3, dropout=0.0)
    base.update(kw)
    return TransformerConfig(**base)


def small_model_and_sources(seed: int, n: int, pad_from: int) -> tuple[TransformerConfig, Transformer, torch.Tensor]:
    """A random small model and n random 6-token sources, the last padded from ``pad_from`` on."""
    torch.manual_seed(seed)
    cfg = small_cfg()
    src = torch.randint(4, cfg.vocab_size, (n, 6))
    src[n - 1, pad_from:] = cfg.pad_id
    return cfg, Transformer(cfg).eval(), src


@pytest.mark.parametrize("values", [True, False])
@pytest.mark.parametrize("case", ["encoder", "decoder"])
def test_relative_attention_matches_paper_formulas(case: str, values: bool) -> None:
    torch.manual_seed(0)
    cfg = small_cfg(relative_values=values)
    att = MultiHeadAttention(cfg, relative=True).eval()
    with torch.no_grad():  # non-trivial tables
        att.rel_k.normal_(0, 1.0)
        if att.rel_v is not None:
            att.rel_v.normal_(0, 1.0)
    B, T = 2, 9  # T > 2k+1 so clipping matters
    x = torch.randn(B, T, cfg.d_model)
    if case == "encoder":
        lengths = torch.tensor([T, 5])
        pad = torch.arange(T)[None, :] < lengths[:, None]  # (B, T) key padding
        keep = pad[:, None, :].expand(B, T, T)
        mask = pad[:, None, None, :]
    else:
        keep = torch.ones(T, T, dtype=torch.bool).tril().expand(B, T, T)
        mask = keep[0]
    from rendition.model.translation.transformer import relative_index

    with torch.no_grad():
        fast = att(x, None, mask, relative_index(T, T, cfg.max_relative_position))
        ref = direct_relative_attention(att, x, keep)
    torch.testing.assert_close(fast, ref, atol=1e-5, rtol=1e-5)


def test_relative_attention_depends_on_tables() -> None:
    """Guard against a test that cannot fail: changing w^K or w^V changes the output."""
    torch.manual_seed(0)
    cfg = small_cfg()
    att = MultiHeadAttention(cfg, relative=True).eval()
    x = torch.randn(1, 6, cfg.d_model)
    from rendition.model.translation.transformer import relative_index

    idx = relative_index(6, 6, 3)
    with torch.no_grad():
        a = att(x, None, None, idx)
        att.rel_k[0] += 1.0
        b = att(x, None, None, idx)
        att.rel_v[-1] += 1.0
        c = att(x, None, None, idx)
    assert (a - b).abs().max() > 1e-4 and (b - c).abs().max() > 1e-4


@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(relative_values=False),
        dict(relative_positions=False, sinusoidal_positions=True),
        dict(sinusoidal_positions=True),
    ],
)
def test_cached_decoding_equals_full_decoding(kw: dict, cache_mode: str) -> None:
    torch.manual_seed(1)
    cfg = small_cfg(**kw)
    m = Transformer(cfg).eval()
    be = backend(cache_mode, m)
    if cfg.relative_positions:
        with torch.no_grad():
            for layer in m.decoder_layers:
                layer.self_attn.rel_k.normal_(0, 1.0)
    B, S, T = 3, 7, 25  # T well beyond k = 3
    src = torch.randint(4, cfg.vocab_size, (B, S))
    src[1, 4:] = cfg.pad_id
    tgt = torch.randint(4, cfg.vocab_size, (B, T))
    with torch.no_grad():
        full = m(src, tgt)  # (B, T, V)
        mem, mask = be.encode(src)
        cache = be.new_cache(1)
        cache.join(be.cross_states(mem), mask, T + 5)
        assert isinstance(cache, ReferenceCache) == (cache_mode != "dense")
        steps = torch.stack([be.decode_step(tgt[:, t], cache) for t in range(T)], 1)
    assert cache.positions().tolist() == [T] * B
    torch.testing.assert_close(steps, full, atol=1e-5, rtol=1e-4)


def test_cache_reorder_and_select_follow_rows(cache_mode: str) -> None:
    torch.manual_seed(2)
    cfg = small_cfg()
    m = Transformer(cfg).eval()
    be = backend(cache_mode, m)
    src = torch.randint(4, cfg.vocab_size, (3, 5))
    tgt = torch.randint(4, cfg.vocab_size, (3, 6))
    with torch.no_grad():
        full = m(src, tgt)
        mem, mask = be.encode(src)
        cache = be.new_cache(1)
        cache.join(be.cross_states(mem), mask, 10)
        for t in range(3):
            be.decode_step(tgt[:, t], cache)
        # Rows swap places and row 1 is dropped (a finished sentence): select follows the rows
        # (self-attention past and cross-attention states; reorder within sentences is below).
        perm = torch.tensor([2, 1, 0])
        keep = torch.tensor([0, 2])
        rows = perm[keep]
        cache.select(rows)
        out = torch.stack([be.decode_step(tgt[rows, t], cache) for t in range(3, 6)], 1)
    torch.testing.assert_close(out, full[rows, 3:6], atol=1e-5, rtol=1e-4)


def test_config_round_trip_and_unknown_keys(tmp_path) -> None:
    cfg = small_cfg(languages=("en", "fr", "de"))
    cfg.save(tmp_path / "config.json")
    assert TransformerConfig.load(tmp_path / "config.json") == cfg
    (tmp_path / "bad.json").write_text('{"vocab_size": 10, "bogus": 1}')
    with pytest.raises(ValueError, match="bogus"):
        TransformerConfig.load(tmp_path / "bad.json")


def test_inference_output_projection_follows_weight_updates() -> None:
    """logits() keeps a transposed copy of the tied embedding for inference; it must never go stale."""
    torch.manual_seed(3)
    m = Transformer(small_cfg()).eval()
    h = torch.randn(4, m.cfg.d_model)
    with torch.no_grad():
        torch.testing.assert_close(m.logits(h), h @ m.embed.weight.t())
        m.embed.weight.mul_(2.0)  # in-place update (as an optimiser step or load_state_dict does)
        torch.testing.assert_close(m.logits(h), h @ m.embed.weight.t())
    m.load_state_dict({k: v * 0.5 for k, v in m.state_dict().items()})
    with torch.inference_mode():
        torch.testing.assert_close(m.logits(h), h @ m.embed.weight.t())
    m.double()
    with torch.no_grad():
        out = m.logits(h.double())
    assert out.dtype == torch.float64
    torch.testing.assert_close(out, h.double() @ m.embed.weight.t())


def test_fused_qkv_copy_follows_weight_updates() -> None:
    """fused_qkv() keeps its concatenated copy between calls at inference; it must never go stale,
    and with gradients on it must stay connected to the weights."""
    torch.manual_seed(8)
    sa = Transformer(small_cfg()).eval().decoder_layers[0].self_attn

    def fresh() -> tuple[torch.Tensor, torch.Tensor]:
        return (
            torch.cat([sa.q_proj.weight, sa.k_proj.weight, sa.v_proj.weight]),
            torch.cat([sa.q_proj.bias, sa.k_proj.bias, sa.v_proj.bias]),
        )

    with torch.no_grad():
        first = sa.fused_qkv()
        assert sa.fused_qkv()[0] is first[0]  # kept, not rebuilt
        torch.testing.assert_close(first, fresh())
        sa.k_proj.weight.mul_(2.0)  # in-place update, as an optimiser step does
        sa.v_proj.bias.add_(1.0)
        torch.testing.assert_close(sa.fused_qkv(), fresh())
    sa.load_state_dict({k: v * 0.5 for k, v in sa.state_dict().items()})
    with torch.inference_mode():
        torch.testing.assert_close(sa.fused_qkv(), fresh())
    w, _ = sa.fused_qkv()  # gradients on: a fresh concatenation
    assert w.requires_grad and w.grad_fn is not None


def test_beam_grouped_cache_equals_full_decoding_per_row(cache_mode: str) -> None:
    """new_cache(K): K rows per sentence share one cross-attention K/V; every row still
    decodes exactly as the full decoder does on that row's own prefix and sentence; reorder
    within sentences and select of whole sentences keep that true."""
    torch.manual_seed(4)
    cfg = small_cfg()
    m = Transformer(cfg).eval()
    be = backend(cache_mode, m)
    B, K, T = 3, 2, 7
    src = torch.randint(4, cfg.vocab_size, (B, 6))
    src[1, 4:] = cfg.pad_id  # padding in one sentence
    tgt = torch.randint(4, cfg.vocab_size, (B * K, T))
    with torch.no_grad():
        mem, mask = be.encode(src)
        full = m.decode(tgt, mem.repeat_interleave(K, 0), mask.repeat_interleave(K, 0))  # (B*K, T, V)
        cache = be.new_cache(K)
        cache.join(be.cross_states(mem), mask, T)
        assert cache.layers[0].cross_k.shape[0] == B and cache.batch_size == B * K
        assert cache.beams == K  # (the step kernel reads beams in groups)
        steps = [be.decode_step(tgt[:, t], cache) for t in range(3)]
        torch.testing.assert_close(torch.stack(steps, 1), full[:, :3], atol=1e-5, rtol=1e-4)
        # beams swap within each sentence, then sentence 1 finishes and drops out
        perm = torch.tensor([1, 0, 2, 3, 5, 4])
        cache.reorder(perm)
        keep = torch.tensor([0, 1, 4, 5])
        cache.select(keep)
        rows = perm[keep]
        out = torch.stack([be.decode_step(tgt[rows, t], cache) for t in range(3, T)], 1)
    # rows now carry the past of perm[keep] but continue with that row's own tokens
    ref_tgt = tgt[rows]
    with torch.no_grad():
        ref = m.decode(ref_tgt, mem.repeat_interleave(K, 0)[rows], mask.repeat_interleave(K, 0)[rows])
    torch.testing.assert_close(out, ref[:, 3:], atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("every", [1, 8])
def test_compaction_keeps_every_beam_decoding_as_the_full_decoder(cache_mode: str, every: int, monkeypatch) -> None:
    """Beam search moves rows every step (parents drawn at random within each sentence, with
    steps where all beams of a sentence take the same parent, so their pasts merge), and a
    sentence finishes on the way; by reference, ``ReferenceCache.compact`` then copies the shared
    past into each sentence's first storage row.  Every row at every step must still decode as
    the full decoder does on that row's own history, and the shared positions must end up in the
    first storage row of the sentence's group."""
    from rendition.model.translation import cache as cache_module

    monkeypatch.setattr(cache_module, "COMPACT_EVERY", every)
    B, K, T = 3, 4, 20
    cfg, m, src = small_model_and_sources(7, B, pad_from=4)
    be = backend(cache_mode, m)
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():
        mem, mask = be.encode(src)
        cache = be.new_cache(K)
        cache.join(be.cross_states(mem), mask, T)
        sents = torch.arange(B)  # the live sentences (their original index)
        hist = torch.empty(B * K, 0, dtype=torch.long)
        anc = torch.empty(B * K, 0, dtype=torch.long)  # anc[r, j]: which row wrote r's position j
        moved, frontier, reorders = False, 0, 0
        for t in range(T):
            if t:
                b = len(sents)
                parent = torch.randint(0, K, (b, K), generator=g)
                parent[sents == 1] = 2 if t in (3, 11) else parent[sents == 1]  # all continue beam 2
                parent[sents == 2] = 3 if t == 6 else parent[sents == 2]
                beam_idx = (parent + torch.arange(b).unsqueeze(1) * K).view(-1)
                if t == 9:  # sentence 0 finishes: select follows the beams and drops it
                    beam_idx = beam_idx.view(b, K)[1:].reshape(-1)
                    sents = sents[1:]
                    cache.select(beam_idx)
                else:  # (every ``every``-th reorder compacts)
                    reorders += 1
                    before = cache.src[:, :t].index_select(0, beam_idx) if isinstance(cache, ReferenceCache) else None
                    cache.reorder(beam_idx)
                    if before is not None and reorders % every == 0:
                        moved |= bool((before != cache.src[:, :t]).any())
                hist, anc = hist[beam_idx], anc[beam_idx]
                if isinstance(cache, ReferenceCache) and reorders % every == 0 and t != 9:
                    same = (anc.view(len(sents), K, t) == anc.view(len(sents), K, t)[:, :1]).all(1)
                    frontier = int(same.cumprod(1).sum(1).min())  # every live sentence's beams share j < frontier
            anc = torch.cat([anc, torch.arange(len(hist)).unsqueeze(1) + t * B * K], 1)
            tokens = torch.randint(4, cfg.vocab_size, (len(hist),), generator=g)
            hist = torch.cat([hist, tokens.unsqueeze(1)], 1)
            step = be.decode_step(tokens, cache)
            rows = sents.repeat_interleave(K)
            want = m.decode(hist, mem[rows], mask[rows])[:, -1]
            torch.testing.assert_close(step, want, atol=1e-5, rtol=1e-4, msg=f"step {t}")
    if not isinstance(cache, ReferenceCache):
        return
    assert moved, "the scripted merges must make compact() move some of the shared past"
    compacted = int(cache.compacted.min())
    assert compacted == frontier >= 6  # (sentence 2 shares positions < 6 at least)
    base = sents.repeat_interleave(K).unsqueeze(1) * K  # the first storage row of each sentence's group
    assert torch.equal(cache.src[:, :compacted], base.expand(-1, compacted))
