"""Continuous batching (``rendition.model.translation.search``, ``cache``): a sentence that joins a
running search mid-flight gets the result it gets alone, on every back end; cancelled sentences
leave at the next step; storage is reused."""

from __future__ import annotations

import random

import pytest
import torch

from rendition.model.kernels import native
from rendition.model.translation.backends import AttentionKernelBackend, FusedCPUBackend, TorchBackend
from rendition.model.translation.cache import DenseCache, ReferenceCache
from rendition.model.translation.options import TranslationOptions
from rendition.model.translation.search import BeamSearch, encoder_buckets, generate_ids
from rendition.model.translation.transformer import Transformer, TransformerConfig
from rendition.model.translation.translator import Translator

BACKENDS = (TorchBackend, AttentionKernelBackend, FusedCPUBackend)
SCORE_TOL, SCORE_REL = 1e-5, 1e-6  # float32: the same sums, but a product's blocking depends on how many rows share it
# int8: the same tokens, and a score within this share of itself.  The float32 products' 1e-6 become
# more where int8 re-quantises them: a value at a rounding boundary moves by one level (1/255 of its
# row's range).  A fraction of int8's own error against float32 (test_int8_continuous.py checks it);
# docs/architecture.md states the promise.
INT8_BATCH_REL = 2e-4


def random_model(rel: str = "kv", vocab: int = 96, seed: int = 0) -> Transformer:
    """A peaky random model (hypotheses differ and end) with head_dim 16; rel: none (sinusoidal
    positions), k (relative keys) or kv (relative keys and values)."""
    cfg = TransformerConfig(
        vocab_size=vocab, d_model=32, n_heads=2, d_ff=64, n_encoder_layers=1, n_decoder_layers=2,
        max_relative_position=3, relative_positions=rel != "none", relative_values=rel == "kv",
        sinusoidal_positions=rel == "none", dropout=0.0,
    )  # fmt: skip
    torch.manual_seed(seed)
    m = Transformer(cfg).eval()
    with torch.no_grad():
        m.embed.weight.mul_(6)
        for name, p in m.named_parameters():
            if "norm" in name or name.endswith("bias") or "rel_" in name:
                p.add_(torch.randn_like(p) * 0.5)
    return m


def random_sources(n: int, vocab: int, seed: int = 1) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(4, vocab) for _ in range(rng.randint(1, 14))] + [3] for _ in range(n)]


def alone(backend, src: list[int], opts: TranslationOptions):
    return generate_ids(backend, [src], opts)[0]


def run_staggered(search: BeamSearch, sources: list[list[int]], seed: int = 0) -> dict[int, list]:
    """Sentences join 0-3 at a time between steps, so each joins a search already running."""
    rng = random.Random(seed)
    queue, out = list(range(len(sources))), {}
    while queue or not search.idle:
        for _ in range(rng.randint(0, 3)):
            if queue:
                i = queue.pop(0)
                search.add(i, sources[i])
        out.update(search.step())
    return out


def scheduled_in_tickets(backend, sources: list[list[int]], opts: TranslationOptions, workers: int, per_ticket: int = 5) -> list:
    """The n-best of each source through a step-level scheduler (one thread a worker, at most 6
    sentences each), submitted in tickets of ``per_ticket`` sources, in input order."""
    from rendition.model.translation.scheduler import TranslationScheduler

    sched = TranslationScheduler(backend, workers=workers, threads=1, max_sentences=6)
    try:
        tickets = [sched.submit(sources[i : i + per_ticket], opts) for i in range(0, len(sources), per_ticket)]
        return [h for t in tickets for h in t.future.result(timeout=120)]
    finally:
        sched.close()


def assert_same(got, want, int8: bool = False) -> None:
    """The same hypotheses, and scores within float32's tolerance (``int8``: within INT8_BATCH_REL)."""
    assert [h.tokens for h in got] == [h.tokens for h in want]
    for g, w in zip(got, want):
        assert g.score == pytest.approx(w.score, rel=INT8_BATCH_REL if int8 else SCORE_REL, abs=SCORE_TOL)


def need(cls) -> None:
    """Skip a test of a native back end where the kernels are not built; under
    RENDITION_REQUIRE_NATIVE=1 (CI) that is a failure."""
    if cls is TorchBackend or cls.usable(random_model()):
        return
    if native.required():
        pytest.fail(f"the {cls.name} back end is unavailable and RENDITION_REQUIRE_NATIVE=1")
    pytest.skip(f"the {cls.name} back end is unavailable (native kernels not built)")


@pytest.fixture(scope="module")
def shipped_translator() -> Translator:
    return Translator.from_pretrained(device="cpu")


@pytest.mark.parametrize("backend_cls", BACKENDS, ids=lambda c: c.name)
@pytest.mark.parametrize("rel", ["none", "k", "kv"])
def test_a_sentence_joining_mid_flight_gets_its_result_alone(backend_cls, rel: str) -> None:
    need(backend_cls)
    check_joining_mid_flight(backend_cls(random_model(rel)))


def check_joining_mid_flight(backend, int8: bool = False) -> None:
    """24 sentences joining one search at staggered steps each get the result they get alone, and
    the search's cache is empty at the end (also run in int8: test_int8_continuous.py)."""
    sources = random_sources(24, 96)
    opts = TranslationOptions(beam_size=4, length_penalty=1.0, max_length_a=1.2, max_length_b=4)
    search = BeamSearch(backend, opts)
    out = run_staggered(search, sources)
    assert sorted(out) == list(range(len(sources)))
    for i, src in enumerate(sources):
        assert_same(out[i], alone(backend, src, opts), int8)
    assert search.cache.batch_size == 0


@pytest.mark.parametrize(
    "opts",
    [
        TranslationOptions(beam_size=3, length_penalty=0.0, max_length=6),  # most end at the absolute cap
        TranslationOptions(beam_size=2, min_length=5, length_penalty=0.6),  # EOS forbidden early, per sentence's own step
        TranslationOptions(beam_size=5, num_hypotheses=5, max_length_a=0.5, max_length_b=2),  # n-best, short relative caps
        TranslationOptions(beam_size=4, kv_cache_dtype=torch.float16),  # half storage
        TranslationOptions(beam_size=1, min_length=2, length_penalty=0.8),  # greedy
    ],
    ids=["abs-cap", "min-length", "n-best", "kv-half", "greedy"],
)
def test_joined_searches_keep_every_rule_of_a_search_alone(opts: TranslationOptions) -> None:
    need(FusedCPUBackend)
    backend = FusedCPUBackend(random_model("kv", seed=3))
    sources = random_sources(16, 96, seed=4)
    out = run_staggered(BeamSearch(backend, opts), sources, seed=2)
    for i, src in enumerate(sources):
        assert_same(out[i], alone(backend, src, opts))


def test_the_shipped_translator_joined_mid_flight_equals_alone(shipped_translator) -> None:
    tr = shipped_translator
    texts = ["Hello, how are you?", "The weather is nice today.", "This package contains the development files.",
             "Good morning", "A library for parsing and writing configuration files, with a command line tool.",
             "Click the button to save the document.", "Yes", "I see a rose."]  # fmt: skip
    sources = tr.preprocess(texts, "fr")
    opts = TranslationOptions(beam_size=4)
    out = run_staggered(BeamSearch(tr.backend, opts), sources, seed=5)
    for i, src in enumerate(sources):
        assert_same(out[i], alone(tr.backend, src, opts))


@pytest.mark.parametrize("backend_cls", BACKENDS, ids=lambda c: c.name)
def test_a_cancelled_sentence_leaves_at_the_next_step_and_the_others_are_unchanged(backend_cls) -> None:
    need(backend_cls)
    backend = backend_cls(random_model("kv", seed=5))
    opts = TranslationOptions(beam_size=4, max_length=40, max_length_a=3.0)
    sources = random_sources(3, 96, seed=9)
    search = BeamSearch(backend, opts)
    for i, src in enumerate(sources):
        search.add(i, src)
    out = dict(search.step())
    assert search.cache.batch_size == 4 * search.live
    live = search.live
    assert 1 in [s.key for s in search.sentences], "the sentence to cancel ended at the first step"
    search.cancel(1)
    out.update(search.step())
    assert 1 not in [s.key for s in search.sentences]
    assert search.live <= live - 1 and search.cache.batch_size == 4 * search.live
    while not search.idle:
        out.update(search.step())
    assert 1 not in out
    for i in (0, 2):
        assert_same(out[i], alone(backend, sources[i], opts))


def test_a_cancelled_sentence_that_has_not_joined_never_runs() -> None:
    backend = TorchBackend(random_model())
    search = BeamSearch(backend, TranslationOptions(beam_size=2))
    search.add("a", [5, 6, 3])
    search.cancel("a")
    assert search.idle and search.step() == []


def test_the_reference_cache_reuses_the_storage_of_finished_sentences() -> None:
    need(FusedCPUBackend)
    backend = FusedCPUBackend(random_model("kv", seed=7))
    search = BeamSearch(backend, TranslationOptions(beam_size=4))
    assert isinstance(search.cache, ReferenceCache)
    sources = random_sources(200, 96, seed=11)
    queue, out, most = list(range(len(sources))), {}, 0
    while queue or not search.idle:
        while queue and search.live + len(search.pending) < 8:  # at most 8 sentences at once
            i = queue.pop(0)
            search.add(i, sources[i])
        out.update(search.step())
        most = max(most, search.cache.groups)
    assert len(out) == len(sources)
    assert most <= 32  # 200 sentences ran in storage for at most 32 (it grows by doubling from 16)
    assert len(search.cache.free) == search.cache.groups  # everything returned


def test_the_torch_back_end_keeps_a_dense_cache_and_bfloat16_storage_stays_dense() -> None:
    m = random_model()
    assert isinstance(TorchBackend(m).new_cache(4), DenseCache)
    need(FusedCPUBackend)
    assert isinstance(FusedCPUBackend(m).new_cache(4), ReferenceCache)
    assert isinstance(FusedCPUBackend(m).new_cache(4, torch.bfloat16), DenseCache)


@pytest.mark.parametrize(
    "opts",
    [
        TranslationOptions(beam_size=1, sampling_topk=5, sampling_seed=3),
        TranslationOptions(beam_size=1, sampling_topk=0, sampling_temperature=1.5, sampling_seed=4, num_hypotheses=3),
        TranslationOptions(beam_size=3, repetition_penalty=1.5, no_repeat_ngram_size=2),
        TranslationOptions(beam_size=1, no_repeat_ngram_size=1),
        TranslationOptions(beam_size=2, target_prefix=(5, 7)),
    ],
    ids=["sample", "sample-n", "processors", "greedy-no-repeat", "prefix"],
)
def test_sampling_processors_and_prefix_run_joined_mid_flight(opts: TranslationOptions) -> None:
    """The options that change the logits, and seeded sampling (each sentence draws with its own
    generator), give a sentence joining a running search the result it gets alone."""
    backend = TorchBackend(random_model("kv", seed=6))
    sources = random_sources(12, 96, seed=8)
    out = run_staggered(BeamSearch(backend, opts), sources, seed=3)
    for i, src in enumerate(sources):
        assert_same(out[i], alone(backend, src, opts))
        assert len(out[i]) == opts.num_hypotheses
        if opts.target_prefix:
            assert all(h.tokens[:2] == [5, 7] for h in out[i])
        if opts.no_repeat_ngram_size == 1:
            assert len(set(out[i][0].tokens)) == len(out[i][0].tokens)


def test_encoder_buckets_group_sentences_of_similar_length() -> None:
    lengths = [3, 40, 4, 38, 5, 3, 41]
    groups = encoder_buckets(lengths)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    for g in groups:
        longest, real = max(lengths[i] for i in g), sum(lengths[i] for i in g)
        assert longest * len(g) <= 1.25 * real + 8
    assert len(groups) == 2
