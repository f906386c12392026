"""Beam search against exhaustive search on scripted models, and batch invariance on a real one."""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from rendition.model.tokenizer import Tokenizer
from rendition.model.translation.options import TranslationOptions
from rendition.model.translation.search import beam_step, generate_ids, length_penalty, lse_chunk_max, row_max
from rendition.model.translation.transformer import Transformer, TransformerConfig
from rendition.model.translation.translator import DEFAULT_TRANSLATOR, Translator

PAD, BOS, EOS, A, B, C = 0, 2, 3, 4, 5, 6
V = 7


@dataclass(frozen=True)
class _Cfg:
    pad_id: int = PAD
    bos_id: int = BOS
    eos_id: int = EOS


class _ScriptCache:
    """A cache (the interface ``BeamSearch`` drives) that keeps each row's tokens."""

    def __init__(self, beams: int):
        self.beams = beams
        self.hist: list[list[int]] = []

    reserved: list[tuple[int, int]] = []  # (sentences, positions) of every reserve() call, all caches

    def reserve(self, sentences: int, positions: int = 0, long_lived: bool = False) -> None:
        self.reserved.append((sentences, positions))

    def join(self, cross, mem_mask, max_len: int) -> None:
        self.hist += [[] for _ in range(mem_mask.shape[0] * self.beams)]

    def reorder(self, idx: torch.Tensor) -> None:
        self.hist = [list(self.hist[i]) for i in idx.tolist()]

    def select(self, rows: torch.Tensor) -> None:
        self.reorder(rows)

    @property
    def batch_size(self) -> int:
        return len(self.hist)

    def nbytes(self) -> int:
        return 0


class ScriptedModel:
    """Next-token distribution is a function of the generated prefix only (BOS excluded)."""

    cfg = _Cfg()
    device = torch.device("cpu")

    def __init__(self, table):
        self.table = table  # prefix tuple -> {token: prob}

    def encode(self, src):
        return torch.zeros(src.shape[0], src.shape[1], 1), (src != PAD)[:, None, None, :]

    def cross_states(self, mem):
        return []

    def new_cache(self, beams, kv_dtype=None):
        return _ScriptCache(beams)

    def decode_step(self, tokens, cache):
        out = torch.full((len(cache.hist), V), -math.inf)
        for r, tok in enumerate(tokens.tolist()):
            if tok != BOS:
                cache.hist[r].append(tok)
            for t, p in self.table(tuple(cache.hist[r])).items():
                if p > 0:
                    out[r, t] = math.log(p)
        return out


def exhaustive(table, max_len: int, alpha: float, min_length: int = 0) -> list[tuple[list[int], float]]:
    """Every sequence of content tokens followed by EOS within max_len tokens, scored as the search does."""
    results = []
    for n in range(0, max_len):
        for seq in itertools.product([A, B, C], repeat=n):
            lp, ok = 0.0, True
            for i, tok in enumerate((*seq, EOS)):
                p = table(tuple(seq[:i])).get(tok, 0.0)
                if p == 0 or (tok == EOS and i < min_length):
                    ok = False
                    break
                lp += math.log(p)
            if ok:
                results.append((list(seq), lp / length_penalty(n + 1, alpha)))
    return sorted(results, key=lambda r: -r[1])


HAND = {(): {A: 0.5, B: 0.4, EOS: 0.1}, (A,): {A: 0.3, B: 0.3, EOS: 0.4}, (B,): {EOS: 0.9, A: 0.05, B: 0.05}}


def hand_table(prefix):
    return HAND.get(prefix, {EOS: 0.7, A: 0.2, B: 0.1})


def random_table(seed: int):
    def table(prefix):
        rng = random.Random(hash((seed, prefix)))
        w = [rng.random() ** 3 for _ in range(4)]
        s = sum(w)
        return dict(zip([A, B, C, EOS], [x / s for x in w]))

    return table


def run(table, n_src: int = 1, **kw) -> list[list]:
    opts = TranslationOptions(max_length_a=100, **kw)
    return generate_ids(ScriptedModel(table), [[9, 9, 9]] * n_src, opts)


def test_hand_worked_example_beats_greedy() -> None:
    # greedy: A (0.5) then EOS (0.4) = 0.20 ; best: B EOS = 0.4 * 0.9 = 0.36
    greedy = run(hand_table, beam_size=1, length_penalty=0.0, max_length=6)[0][0]
    assert greedy.tokens == [A] and greedy.score == pytest.approx(math.log(0.2))
    best = run(hand_table, beam_size=2, num_hypotheses=2, length_penalty=0.0, max_length=6)[0]
    assert [h.tokens for h in best] == [[B], [A]]
    assert [h.score for h in best] == pytest.approx([math.log(0.36), math.log(0.2)])


def test_length_penalty_changes_the_winner_as_worked_out() -> None:
    # alpha = 0: [B] wins (0.36).  With alpha = 8, lp grows fast with length and longer
    # hypotheses win.  Checked against exhaustive search, and the winner must change with alpha.
    winners = set()
    for alpha in (0.0, 1.0, 3.0, 8.0):
        got = run(hand_table, beam_size=8, num_hypotheses=3, length_penalty=alpha, max_length=5)[0]
        want = exhaustive(hand_table, 5, alpha)[:3]
        assert [h.tokens for h in got] == [w[0] for w in want]
        assert [h.score for h in got] == pytest.approx([w[1] for w in want])
        winners.add(tuple(got[0].tokens))
    assert len(winners) > 1


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("alpha", [0.0, 0.6, 2.0])
def test_wide_beam_equals_exhaustive_search(seed: int, alpha: float) -> None:
    max_len = 4  # at most 27 live prefixes: a beam of 27 is exhaustive
    table = random_table(seed)
    got = run(table, beam_size=27, num_hypotheses=5, length_penalty=alpha, max_length=max_len)[0]
    want = exhaustive(table, max_len, alpha)[:5]
    assert [h.tokens for h in got] == [w[0] for w in want]
    assert [h.score for h in got] == pytest.approx([w[1] for w in want])


@pytest.mark.parametrize("seed", range(4))
def test_narrow_beam_nbest_sorted_and_scores_true(seed: int) -> None:
    table = random_table(seed)
    all_scores = {tuple(s): sc for s, sc in exhaustive(table, 6, 1.0)}
    got = run(table, n_src=3, beam_size=3, num_hypotheses=3, length_penalty=1.0, max_length=6)
    for hyps in got:
        assert len(hyps) == 3
        assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
        for h in hyps:
            assert h.score == pytest.approx(all_scores[tuple(h.tokens)])


def test_min_length_and_max_length() -> None:
    got = run(hand_table, beam_size=4, length_penalty=0.0, max_length=6, min_length=2)[0][0]
    want = exhaustive(hand_table, 6, 0.0, min_length=2)[0]
    assert got.tokens == want[0] and len(got.tokens) >= 2

    def mostly_a(prefix):
        return {A: 0.95, EOS: 0.05} if len(prefix) < 4 else {A: 0.5, EOS: 0.5}

    for k in (1, 3):
        h = run(mostly_a, beam_size=k, length_penalty=0.0, max_length=5)[0][0]
        assert h.tokens == [A] * 4 and h.score == pytest.approx(4 * math.log(0.95) + math.log(0.5))
        h = run(mostly_a, beam_size=k, length_penalty=0.0, max_length=3, min_length=2)[0][0]  # EOS forced at 3
        assert h.tokens == [A] * 2 and h.score == pytest.approx(2 * math.log(0.95) + math.log(0.05))


def test_beam_step_picks_global_top_k() -> None:
    lprobs = torch.log_softmax(torch.randn(2, 3, 5), -1)
    scores = torch.randn(2, 3)
    s, t, b = beam_step(lprobs, scores, 4)
    total = (scores[:, :, None] + lprobs).view(2, -1)
    ref = total.sort(-1, descending=True)
    torch.testing.assert_close(s, ref.values[:, :4])
    torch.testing.assert_close(b * 5 + t, ref.indices[:, :4])


@pytest.mark.parametrize("V,K", [(8000, 4), (8001, 4), (4096, 4), (8000, 1), (320, 1)])
def test_two_stage_beam_step_equals_one_top_k_over_the_whole_table(V: int, K: int) -> None:
    """Vocabularies that split into chunks take the two-stage path (8000, 4096), 8001 the plain one,
    as does one live beam with fewer chunks than candidates (320 = 5 x 64 < 8); dead beams (-inf
    running score) as at step 0, and a row with only one finite token (EOS forced)."""
    g = torch.Generator().manual_seed(V)
    B, n = 5, 8
    lprobs = torch.log_softmax(torch.randn(B, K, V, generator=g) * 3, -1)
    lprobs[4] = float("-inf")
    lprobs[4, :, 3] = torch.tensor([-0.1, -0.2, -0.3, -0.4])[:K]
    scores = torch.randn(B, K, generator=g)
    scores[0, 1:] = float("-inf")
    s, t, b = beam_step(lprobs, scores, n)
    ref = (scores[:, :, None] + lprobs).view(B, -1).topk(n, -1)
    torch.testing.assert_close(s, ref.values)
    finite = torch.isfinite(ref.values)
    assert torch.equal((b * V + t)[finite], ref.indices[finite])
    assert s.shape == t.shape == b.shape == (B, n) and bool((t < V).all()) and bool((b < K).all())


def test_row_max_equals_max() -> None:
    x = torch.randn(37, 8000)
    x[3, 7999] = 100.0
    vals, idx = row_max(x)
    ref = x.max(-1)
    assert torch.equal(vals, ref.values) and torch.equal(idx, ref.indices)


@pytest.mark.parametrize("kernel", ["auto", "0"])
def test_lse_chunk_max_equals_logsumexp_and_chunk_maxima(kernel: str, set_kernel, need_kernel) -> None:
    """The C pass (auto) and the torch fallback (kernel off) against torch.logsumexp and amax, on
    rows with large offsets (exp would overflow without the max shift) and one peaked row."""
    set_kernel("RENDITION_SEARCH_KERNEL", kernel)
    if kernel == "auto":
        need_kernel("RENDITION_SEARCH_KERNEL")  # the C pass really runs (skip / fail where it is missing)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(37, 8000, generator=g) * 4
    x[5] += 300.0
    x[6] -= 300.0
    x[7, 4321] = 80.0
    lse, cmax = lse_chunk_max(x, 64)
    torch.testing.assert_close(lse, torch.logsumexp(x.double(), -1).float(), rtol=1e-6, atol=1e-5)
    assert torch.equal(cmax, x.view(37, 125, 64).amax(-1))
    # the search's use of it: beam_step on raw logits with scores - lse == beam_step on log_softmax
    scores = torch.randn(37, generator=g)
    lp = torch.log_softmax(x, -1)
    s1, t1, b1 = beam_step(lp.view(1, 37, 8000), scores.view(1, 37), 8)
    s2, t2, b2 = beam_step(x.view(1, 37, 8000), (scores - lse).view(1, 37), 8, cmax.view(1, 37, -1))
    torch.testing.assert_close(s1, s2)
    assert torch.equal(t1, t2) and torch.equal(b1, b2)


# -- a real (randomly initialised) model ---------------------------------------------------------
@pytest.fixture(scope="module")
def random_translator() -> Translator:
    torch.manual_seed(0)
    tok = Tokenizer(DEFAULT_TRANSLATOR / "sentencepiece.model")
    cfg = TransformerConfig(vocab_size=tok.vocab_size, d_model=32, n_heads=2, d_ff=64, n_encoder_layers=2, n_decoder_layers=1, dropout=0.0)
    m = Transformer(cfg)
    with torch.no_grad():  # peaky output distributions so hypotheses differ and end
        m.embed.weight.mul_(8)
    return Translator(m, tok)


SENTS = [
    "This package contains the development files.",
    "Hi",
    "A library for parsing and writing configuration files in several formats, with a command line tool.",
    "Documentation for the foo library",
]


@pytest.mark.parametrize("beam", [1, 4])
def test_batch_invariance(random_translator: Translator, beam: int) -> None:
    batch = random_translator.translate(SENTS, "en", "fr", beam_size=beam, num_hypotheses=1, max_length=24)
    for s, b in zip(SENTS, batch):
        alone = random_translator.translate([s], "en", "fr", beam_size=beam, max_length=24)[0]
        assert alone.tokens == b.tokens
        assert alone.score == pytest.approx(b.score, abs=1e-4)


def test_greedy_equals_manual_argmax(random_translator: Translator) -> None:
    tr = random_translator
    src_ids = tr.preprocess([SENTS[0]], "fr")
    src = torch.tensor(src_ids)
    model = tr.model
    with torch.no_grad():
        prefix = [model.cfg.bos_id]
        total = 0.0
        for _ in range(12):
            logits = model(src, torch.tensor([prefix]))[0, -1]
            lp = torch.log_softmax(logits, -1)
            tok = int(lp.argmax())
            total += float(lp[tok])
            if tok == model.cfg.eos_id:
                break
            prefix.append(tok)
    got = tr.translate([SENTS[0]], "en", "fr", beam_size=1, length_penalty=0.0, max_length=12)[0]
    if tok == model.cfg.eos_id:
        assert got.tokens == prefix[1:]
        assert got.score == pytest.approx(total, abs=1e-4)
    else:
        assert got.tokens[:11] == prefix[1:12]


def test_lse_forbidding_a_token() -> None:
    """EOS forbidden on raw logits: the normaliser counts it (as log_softmax then forbidding does),
    its logit becomes -inf, and its chunk's maximum is that of the other tokens."""
    from rendition.model.translation.search import _lse_forbidding

    g = torch.Generator().manual_seed(5)
    x = torch.randn(6, 8000, generator=g)
    x[:, 3] = 50.0  # the forbidden token is its chunk's (and the row's) maximum
    want_lse = torch.logsumexp(x, -1)
    lse, cmax = _lse_forbidding(x, 64, 3)
    torch.testing.assert_close(lse, want_lse)
    assert torch.isinf(x[:, 3]).all()
    torch.testing.assert_close(cmax, x.view(6, 125, 64).amax(-1))
    assert (cmax[:, 0] < 50).all()


@pytest.mark.parametrize("beam", [1, 4])
def test_min_length_fast_path_equals_log_softmax_path(random_translator: Translator, beam: int, monkeypatch) -> None:
    """Before min_length the search forbids EOS on the raw logits (log-sum-exp pass, EOS's chunk
    maximum recomputed); with the vocabulary unchunkable it takes the log_softmax path instead.
    Same hypotheses, same scores, and no hypothesis shorter than min_length."""
    import rendition.model.translation.search as search

    kw = dict(beam_size=beam, num_hypotheses=beam, length_penalty=0.0, max_length=24, min_length=18)
    fast = random_translator.translate(SENTS, "en", "fr", **kw)
    monkeypatch.setattr(search, "_chunk_size", lambda V, n: None)
    slow = random_translator.translate(SENTS, "en", "fr", **kw)
    rel_a, rel_b = TranslationOptions().max_length_a, TranslationOptions().max_length_b
    caps = [min(24, int(rel_a * len(ids) + rel_b)) for ids in random_translator.preprocess(SENTS, "fr")]
    assert min(caps) < 18  # one sentence reaches its max length before min_length: it still ends there
    for a, b, cap in zip(fast, slow, caps):
        assert [h for h, _ in a.hypotheses] == [h for h, _ in b.hypotheses]
        assert [s for _, s in a.hypotheses] == pytest.approx([s for _, s in b.hypotheses], abs=1e-4)
        assert len(a.tokens) >= min(17, cap - 1)  # EOS (the 18th token at the earliest) is not among the tokens
    free = random_translator.translate(SENTS, "en", "fr", **(kw | {"min_length": 0}))
    assert any(len(x.tokens) < 17 for x in free)  # (without it one does end earlier)


def test_unknown_pair_lists_supported(random_translator: Translator) -> None:
    with pytest.raises(ValueError, match="en-fr"):
        random_translator.translate(["x"], "en", "xx")


def test_max_output_lengths_are_where_the_search_stops() -> None:
    """``max_output_lengths`` (the service calls it on its event loop to tell a translation cut at
    its limit) is where the search stops a model that never wants to: a hypothesis of
    cap - 1 tokens and the forced </s>, for any source lengths and length options."""
    from rendition.model.translation.search import max_output_lengths

    def never_done(prefix):
        return {A: 0.9, EOS: 0.1}

    rng = random.Random(5)
    for _ in range(40):
        lens = [rng.randint(1, 60) for _ in range(rng.randint(1, 6))]
        opts = TranslationOptions(
            beam_size=rng.choice([1, 2]),
            max_length=rng.choice([1, 2, 7, 24]),
            max_length_a=rng.choice([0.0, 0.3, 1.1, 1.2, 1 / 3, rng.uniform(0, 1)]),
            max_length_b=rng.choice([0, 1, 5, rng.randint(0, 20)]),
        )
        hyps = generate_ids(ScriptedModel(never_done), [[9] * n for n in lens], opts)
        assert [len(h[0].tokens) + 1 for h in hyps] == max_output_lengths(lens, opts), (lens, opts)
    for _ in range(2000):  # the float32 formula, as numpy computes it
        lens = [rng.randint(0, 5000) for _ in range(4)]
        opts = TranslationOptions(max_length=rng.choice([1, 256, 4096]), max_length_a=rng.uniform(0, 5), max_length_b=rng.randint(0, 200))
        rel = (np.asarray(lens, np.float32) * np.float32(opts.max_length_a) + np.float32(opts.max_length_b)).astype(np.int64)
        assert max_output_lengths(lens, opts) == np.clip(rel, 1, opts.max_length).tolist(), (lens, opts)


def test_one_search_reserves_the_first_fill_and_the_longest_output_at_once() -> None:
    """``generate_ids`` tells the cache, before any sentence joins, how many sentences the token
    budget admits at first (the shortest first) and how many steps the longest source may take, so
    that storage which grows by copying is allocated once."""
    _ScriptCache.reserved.clear()
    def table(prefix):
        return {EOS: 1.0}

    lens = [3, 3, 4, 5, 9, 30]  # (source tokens: tag, ids, </s>)
    opts = TranslationOptions(beam_size=2, max_length_a=1.0, max_length_b=5)
    generate_ids(ScriptedModel(table), [[9] * n for n in lens], opts, max_batch_tokens=2 * (3 + 3 + 4 + 5))
    assert _ScriptCache.reserved == [(4, 35)]  # 3, 3, 4, 5 fit the budget; 30 x 1.0 + 5 steps
    _ScriptCache.reserved.clear()
    generate_ids(ScriptedModel(table), [[9] * 50], opts, max_batch_tokens=10)  # over the budget alone: still one
    assert _ScriptCache.reserved == [(1, 55)]
