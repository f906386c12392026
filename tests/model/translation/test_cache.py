"""The KV caches, each storage strategy behind the one interface: a scripted search (steps, beam
reorders, sentences joining at other steps, sentences finishing) must attend, row by row, over
exactly the keys and values that row's own history holds (kept here by hand); the dense cache's
reorder equals a full gather; the by-reference cache moves no key or value when rows move."""

from __future__ import annotations

import pytest
import torch

from rendition.model.translation.cache import RELEASE_AFTER, DecoderCache, DenseCache, ReferenceCache
from rendition.model.translation.transformer import MultiHeadAttention, TransformerConfig

H, DH, K_REL = 2, 16, 3
CACHES = [DenseCache, ReferenceCache]
QKV = (torch.zeros(3 * H * DH, H * DH), torch.zeros(3 * H * DH))


@pytest.fixture(params=CACHES, ids=lambda c: c.__name__)
def cache_type(request, need_kernel) -> type[DecoderCache]:
    if request.param is ReferenceCache:
        need_kernel("RENDITION_ATTENTION_KERNEL")  # (its self_attention is the C step kernel)
    return request.param


def attention() -> MultiHeadAttention:
    torch.manual_seed(0)
    attn = MultiHeadAttention(TransformerConfig(vocab_size=10, d_model=H * DH, n_heads=H, max_relative_position=K_REL), True).eval()
    with torch.no_grad():
        attn.rel_k.normal_(), attn.rel_v.normal_()
    return attn


def new_cache(cache_type: type[DecoderCache], beams: int = 1, kv_dtype: torch.dtype = torch.float32) -> DecoderCache:
    return cache_type([QKV, QKV], H, DH, K_REL, beams, kv_dtype, torch.device("cpu"))


def join(cache: DecoderCache, sentences: int, max_len: int = 12, src_len: int = 4) -> None:
    cross = torch.randn(sentences, H, src_len, DH)
    cache.join([(cross, cross.clone())] * 2, torch.ones(sentences, 1, 1, src_len, dtype=torch.bool), max_len)


def test_both_strategies_share_the_interface() -> None:
    for cls in CACHES:
        assert issubclass(cls, DecoderCache)
        for name in ("join", "reorder", "select", "attend", "nbytes", "memory_bias", "positions", "advance"):
            assert callable(getattr(cls, name))
        for name in ("self_attention", "nbytes"):
            assert callable(getattr(cls.layer_type, name))


@torch.no_grad()
def test_a_scripted_search_attends_over_each_rows_own_history(cache_type: type[DecoderCache]) -> None:
    attn, g = attention(), torch.Generator().manual_seed(1)
    K = 2
    cache = new_cache(cache_type, beams=K)
    join(cache, 3)
    past: list[list[tuple[torch.Tensor, torch.Tensor]]] = [[] for _ in range(3 * K)]  # per row: (k, v) per position

    def step() -> None:
        n = cache.batch_size
        steps = cache.positions().tolist()
        q, k, v = (torch.randn(n, H, 1, DH, generator=g) for _ in range(3))
        for layer in cache.layers:
            got = layer.self_attention(q, k, v, attn)
        cache.advance()
        for r in range(n):
            past[r].append((k[r], v[r]))
            t = steps[r] + 1
            assert len(past[r]) == t
            rel = (torch.arange(t) - (t - 1)).clamp(-K_REL, K_REL).unsqueeze(0) + K_REL  # (1, t)
            ks = torch.cat([p[0] for p in past[r]], 1)  # (H, t, Dh)
            vs = torch.cat([p[1] for p in past[r]], 1)
            want = attn.attend(q[r : r + 1], ks[None], vs[None], None, rel)
            torch.testing.assert_close(got[r : r + 1], want, atol=1e-5, rtol=1e-4)

    step()
    step()
    beam_idx = torch.tensor([1, 1, 2, 3, 5, 4])  # beams take each other's past within their sentence
    cache.reorder(beam_idx)
    past = [list(past[i]) for i in beam_idx.tolist()]
    step()
    join(cache, 1, src_len=6)  # a sentence joins at step 0 beside the others at step 3 (a longer source)
    past += [[] for _ in range(K)]
    step()
    step()
    keep = torch.tensor([1, 0, 4, 5, 6, 7])  # sentence 1 finishes; the others' beams follow (reordered)
    cache.select(keep)
    past = [list(past[i]) for i in keep.tolist()]
    step()
    assert cache.positions().tolist() == [6, 6, 6, 6, 3, 3] and cache.batch_size == 6
    assert cache.layers[0].cross_k.shape[0] == 3


@pytest.mark.parametrize("beam_idx", [[0, 0, 2, 1], [1, 0, 3, 2], [0, 1, 2, 3], [3, 3, 3, 3], [1, 2, 3, 0]])
def test_dense_reorder_equals_a_full_gather(beam_idx: list[int]) -> None:
    """reorder() copies only the rows that move; the result must equal gathering every row,
    including rows that are both a source and overwritten (chains and cycles)."""
    torch.manual_seed(5)
    cache = new_cache(DenseCache, beams=4)
    join(cache, 1, max_len=7)
    for lc in cache.layers:
        lc.self_k.normal_(), lc.self_v.normal_()
    cache.steps.fill_(5)
    idx = torch.tensor(beam_idx)
    want = [(lc.self_k[:, :, :5][idx].clone(), lc.self_v[:, :, :5][idx].clone()) for lc in cache.layers]
    cache.reorder(idx)
    for lc, (k, v) in zip(cache.layers, want):
        assert torch.equal(lc.self_k[:, :, :5], k) and torch.equal(lc.self_v[:, :, :5], v)


@torch.no_grad()
def test_by_reference_rows_move_without_copying_keys_or_values(need_kernel) -> None:
    need_kernel("RENDITION_ATTENTION_KERNEL")
    attn = attention()
    cache = new_cache(ReferenceCache, beams=2)
    join(cache, 2)
    for _ in range(3):
        q = torch.randn(4, H, 1, DH)
        for layer in cache.layers:
            layer.self_attention(q, q, q, attn)
        cache.advance()
    stores = [(lc.self_k[:, :, :3].clone(), lc.self_v[:, :, :3].clone()) for lc in cache.layers]  # (the filled part;
    cache.reorder(torch.tensor([1, 1, 3, 2]))  # one reorder: no compaction yet)                   the rest is not initialised)
    cache.select(torch.tensor([2, 3]))
    for lc, (k, v) in zip(cache.layers, stores):
        # only the index table moved: the kept sentence's storage rows (group 1: rows 2 and 3) are bit
        # for bit the same (compared as integers: rows not yet written hold whatever memory had, NaN
        # included); the finished sentence's group may have handed its pages back
        assert torch.equal(lc.self_k[2:, :, :3].view(torch.int32), k[2:].view(torch.int32))
        assert torch.equal(lc.self_v[2:, :, :3].view(torch.int32), v[2:].view(torch.int32))
    assert cache.src[:, :3].tolist() == [[3, 3, 3], [2, 2, 2]]


def test_a_finished_sentence_hands_its_storage_pages_back(need_kernel) -> None:
    """Storage is reserved for many sentences and positions, but a finished sentence's rows (and its
    cross-attention slot), once left free for ``RELEASE_AFTER`` steps, go back to the system: they read as zeros (all but the pages they share
    with the rows around them), the live sentence's rows are untouched.  What stays resident follows the sentences running, not all the search has seen."""
    need_kernel("RENDITION_ATTENTION_KERNEL")
    attn = attention()
    cache = new_cache(ReferenceCache, beams=2)
    cache.reserve(4, 512, long_lived=True)  # (a group: 2 rows x 2 heads x 512 positions x 16 x 4 bytes = 128 KiB, whole pages)
    join(cache, 2, src_len=1024)
    for _ in range(3):
        q = torch.randn(4, H, 1, DH)
        for layer in cache.layers:
            layer.self_attention(q, q, q, attn)
        cache.advance()
    kept = [(lc.self_k[2:4].clone(), lc.self_v[2:4].clone()) for lc in cache.layers]
    cache.select(torch.tensor([2, 3]))  # (sentence 0, storage group 0, is done)
    for _ in range(RELEASE_AFTER - 1):
        cache.advance()
    assert zeros(cache.cross_store[0][0][0]) == 0  # (a group reused soon keeps its pages)
    for _ in range(RELEASE_AFTER + 1):  # (free groups are looked at every RELEASE_AFTER steps)
        cache.advance()
    for lc, (k, v) in zip(cache.layers, kept):
        # (the three positions written, in 4 blocks of 512 positions: a block's first page is shared
        # with the rows before the group unless the storage starts on a page)
        assert zeros(lc.self_k[0:2, :, :3]) >= 0.75 and zeros(lc.self_v[0:2, :, :3]) >= 0.75
        assert torch.equal(lc.self_k[2:4].view(torch.int32), k.view(torch.int32))
        assert torch.equal(lc.self_v[2:4].view(torch.int32), v.view(torch.int32))
    for xk, xv in cache.cross_store:
        assert zeros(xk[0]) > 0.9 and zeros(xv[0]) > 0.9 and zeros(xk[1]) == zeros(xv[1]) == 0


def test_a_cross_slot_past_its_source_is_never_written_and_reads_as_zeros() -> None:
    """A sentence's cross-attention slot is as wide as the longest source, but only its own source
    is written (the rest of the slot's pages are never touched); the step kernel reads each slot up
    to its length, and ``gathered_cross`` (the torch step) masks what lies past it."""
    cache = new_cache(ReferenceCache)
    cache.reserve(4, 64, long_lived=True)
    join(cache, 1, src_len=40)
    join(cache, 1, src_len=4)
    short = int(cache.sentence_groups()[1])
    for xk, xv in cache.cross_store:
        assert xk.shape[2] == 64
        xk[short, :, 4:] = float("nan")  # (what an uninitialised slot may hold)
        xv[short, :, 4:] = float("nan")
    for layer in range(len(cache.cross_store)):
        k, v = cache.gathered_cross(layer)
        assert k.shape[2] == 40 and torch.isfinite(k).all() and torch.isfinite(v).all()
        assert zeros(k[1, :, 4:]) == zeros(v[1, :, 4:]) == 1
        assert torch.equal(k[1, :, :4], cache.cross_store[layer][0][short, :, :4])


def zeros(t: torch.Tensor) -> float:
    """The share of the tensor's values that are exactly zero."""
    return (t == 0).float().mean().item()


def test_nbytes_counts_self_and_cross_storage() -> None:
    cache = new_cache(DenseCache)
    join(cache, 2, max_len=64)  # (self-attention storage grows in steps of 64 positions)
    per_layer = 2 * (2 * H * 64 * DH) * 4 + 2 * (2 * H * 4 * DH) * 4
    assert cache.nbytes() == 2 * per_layer
    half = new_cache(DenseCache, kv_dtype=torch.float16)
    join(half, 2, max_len=64)
    assert half.nbytes() == 2 * (2 * (2 * H * 64 * DH) * 2 + 2 * (2 * H * 4 * DH) * 4)


def test_by_reference_storage_reserved_once_does_not_move(need_kernel) -> None:
    """``reserve(sentences, positions)``: the first join allocates storage for both, so sentences
    joining later (longer ones too) neither grow nor copy it."""
    need_kernel("RENDITION_ATTENTION_KERNEL")
    cache = new_cache(ReferenceCache, beams=2)
    cache.reserve(20, 100)
    join(cache, 18, max_len=12)
    ptrs = [(lc.self_k.data_ptr(), lc.self_v.data_ptr()) for lc in cache.layers]
    assert cache.layers[0].self_k.shape == (20 * 2, H, 128, DH) and cache.max_len == 128  # (in steps of 64)
    cache.select(torch.arange(2, 36))  # one sentence finishes; three join, one of them long
    join(cache, 3, max_len=90)
    assert [(lc.self_k.data_ptr(), lc.self_v.data_ptr()) for lc in cache.layers] == ptrs
    join(cache, 1, max_len=12)  # a 21st: beyond the reservation, the storage grows
    assert cache.layers[0].self_k.shape[0] > 20 * 2


def test_a_dropped_cache_frees_its_storage_without_the_cyclic_collector(cache_type: type[DecoderCache]) -> None:
    """Layers refer to their cache weakly: the last reference to a cache frees it (and its K/V
    storage) at once, not at Python's next full collection, searches later."""
    import gc
    import weakref

    cache = new_cache(cache_type, beams=2)
    join(cache, 3)
    storage = weakref.ref(cache.layers[0].self_k if cache.layers[0].self_k is not None else cache.layers[0])
    gone = weakref.ref(cache)
    gc.disable()
    try:
        del cache
        assert gone() is None and storage() is None
    finally:
        gc.enable()
