"""The vocabulary shortlist (``rendition.model.translation.shortlist``): the file format, and searches restricted to it on every back end -- with every
token in the list the same results as without it, with a real list each hypothesis' score the sum
of log-probabilities normalised over the sentence's candidates (computed here from full logits),
and a sentence's result the same alone or joined to a running search or a scheduler's worker."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
import torch
from test_continuous import (  # (this directory is on sys.path)
    assert_same,
    need,
    random_model,
    run_staggered,
    scheduled_in_tickets,
)

from rendition.model.export.shortlist import build_from_pairs
from rendition.model.kernels import fused_cpu, native
from rendition.model.tokenizer import BOS_ID, EOS_ID, UNK_ID
from rendition.model.translation import shortlist as sl_mod
from rendition.model.translation.backends import AttentionKernelBackend, FusedCPUBackend, TorchBackend, select_backend
from rendition.model.translation.options import TranslationOptions
from rendition.model.translation.search import BeamSearch, generate_ids
from rendition.model.translation.shortlist import FILENAME, Shortlist, ShortlistError
from rendition.model.translation.translator import DEFAULT_TRANSLATOR, Translator
from tests.model.shortlist_pairs import HAND_SRC, HAND_TGT

VOCAB = 512  # (more than 16 x 2 x beam tokens: the chunked top-k and the native log-sum-exp run)
KINDS = ["torch", "cpu-attention", "fused-cpu", "int8"]


def make_backend(kind: str, model):
    if kind == "int8":
        so = fused_cpu.kernel()
        if so is None or not fused_cpu._INT8.get(id(so)):
            (pytest.fail if native.required() else pytest.skip)("no int8 kernel (native library, oneDNN's int8 gemm)")
        return select_backend(model, "int8")
    cls = {"torch": TorchBackend, "cpu-attention": AttentionKernelBackend, "fused-cpu": FusedCPUBackend}[kind]
    need(cls)
    return cls(model)


def sources(n: int, seed: int = 1) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(4, VOCAB) for _ in range(rng.randint(1, 12))] + [EOS_ID] for _ in range(n)]


def every_token() -> Shortlist:
    """A shortlist whose always-on tokens are the whole vocabulary."""
    return Shortlist(np.zeros(VOCAB + 1, dtype=np.int64), np.zeros(0, dtype=np.int64), np.arange(VOCAB), VOCAB, 10, VOCAB)


def random_shortlist(seed: int = 0, per_token: int = 6, frequent: int = 12) -> Shortlist:
    """Each source token with ``per_token`` random targets; the tokens 4 .. 4 + frequent always on."""
    rng = np.random.default_rng(seed)
    lists = [rng.choice(np.arange(4, VOCAB), per_token, replace=False) for _ in range(VOCAB)]
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in lists])])
    ranking = np.concatenate([np.arange(4, VOCAB), np.arange(4)])
    return Shortlist(offsets, np.concatenate(lists), ranking, VOCAB, per_token, frequent)


@pytest.fixture(scope="module")
def model():
    return random_model("kv", vocab=VOCAB, seed=5)


def with_shortlist(backend, shortlist):
    backend.shortlist = shortlist
    return backend


def test_save_load_round_trip_and_loading_with_fewer_or_more(tmp_path) -> None:
    sl = build_from_pairs(HAND_SRC, HAND_TGT, 12, top_k=2, frequent=1)
    sl.save(tmp_path / FILENAME)
    back = Shortlist.load(tmp_path, vocab_size=12)  # (a model directory)
    for s in range(12):
        assert back.list_of(s).tolist() == sl.list_of(s).tolist()
    assert Shortlist.load(tmp_path / FILENAME, top_k=1).list_of(5).tolist() == [8]
    raised = Shortlist.load(tmp_path, frequent=2)  # 8 becomes always on: 5's list keeps 9
    assert raised.list_of(5).tolist() == [9] and 8 in raised.candidates([4]).tolist()
    with pytest.raises(ShortlistError, match="top_k can be lowered"):
        Shortlist.load(tmp_path, top_k=3)
    with pytest.raises(ShortlistError, match="top_k can be lowered"):
        Shortlist.load(tmp_path, frequent=0)
    with pytest.raises(ShortlistError, match="vocabulary of 12"):
        Shortlist.load(tmp_path, vocab_size=16000)
    with pytest.raises(ShortlistError, match="no shortlist"):
        Shortlist.load(tmp_path / "missing")
    (tmp_path / "bad.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(ShortlistError, match="not a shortlist file"):
        Shortlist.load(tmp_path / "bad.safetensors")


def test_source_tokens_are_always_candidates_and_the_union_aligns() -> None:
    sl = random_shortlist(per_token=3, frequent=0)
    rng = random.Random(0)
    lists = []
    for _ in range(50):
        src = [rng.randrange(4, VOCAB) for _ in range(rng.randint(1, 20))]
        c = sl.candidates(src)
        assert set(src) <= set(c.tolist()) and {UNK_ID, EOS_ID} <= set(c.tolist()) and BOS_ID not in c
        assert np.all(np.diff(c) > 0)
        lists.append(c)
    u = sl.union(lists[:5])
    assert len(u) % sl_mod.ALIGN == 0 and set(np.concatenate(lists[:5]).tolist()) <= set(u.tolist())
    assert np.all(np.diff(u) > 0)
    with pytest.raises(ShortlistError):
        sl.candidates([VOCAB])


# -- searches restricted to a shortlist ---------------------------------------------------------------
OPTIONS = [
    TranslationOptions(beam_size=4, max_length_a=1.2, max_length_b=4),
    TranslationOptions(beam_size=1, min_length=2, length_penalty=0.8),
    TranslationOptions(beam_size=3, min_length=3, num_hypotheses=3, repetition_penalty=1.5, no_repeat_ngram_size=2),
    TranslationOptions(beam_size=2, target_prefix=(5, 7)),
    TranslationOptions(beam_size=1, sampling_topk=5, sampling_seed=3, num_hypotheses=2),
]
OPTION_IDS = ["beam", "greedy-min-length", "processors", "prefix", "sample"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("opts", OPTIONS, ids=OPTION_IDS)
def test_a_shortlist_of_every_token_gives_the_results_without_it(model, kind: str, opts: TranslationOptions) -> None:
    backend = make_backend(kind, model)
    srcs = sources(6)
    want = generate_ids(backend, srcs, opts)
    got = generate_ids(with_shortlist(make_backend(kind, model), every_token()), srcs, opts)
    for g, w in zip(got, want):
        assert_same(g, w)


def full_step_log_probs(backend, src: list[int], tokens: list[int], allowed: np.ndarray) -> list[float]:
    """Teacher-forced on the back end without a shortlist: per step the full logits, restricted to
    ``allowed`` and renormalised with torch.log_softmax; the log-probability of each token of
    ``tokens`` + EOS."""
    assert backend.shortlist is None
    cols = torch.from_numpy(allowed)
    with torch.inference_mode():
        mem, mask = backend.encode(torch.tensor([src]))
        cache = backend.new_cache(1)
        cache.reserve(1)
        cache.join(backend.cross_states(mem), mask, len(tokens) + 2)
        out, prev = [], BOS_ID
        for tok in [*tokens, EOS_ID]:
            logits = backend.decode_step(torch.tensor([prev]), cache)[0].float()
            lp = torch.log_softmax(logits[cols], -1)
            where = (cols == tok).nonzero()
            assert len(where) == 1, f"token {tok} is not a candidate"
            out.append(float(lp[where[0, 0]]))
            prev = tok
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_scores_are_log_probabilities_normalised_over_the_sentences_candidates(model, kind: str) -> None:
    """Beam search over a real shortlist: every hypothesis' tokens are the sentence's candidates, its
    score the sum of the restricted log-probabilities of a reference; greedy search takes the
    restricted argmax at every step."""
    sl = random_shortlist()
    plain = make_backend(kind, model)
    restricted = with_shortlist(make_backend(kind, model), sl)
    srcs = sources(5, seed=2)
    beam = TranslationOptions(beam_size=4, num_hypotheses=4, length_penalty=0.0, max_length=10)
    for src, hyps in zip(srcs, generate_ids(restricted, srcs, beam)):
        allowed = sl.candidates(src)
        for h in hyps:
            assert set(h.tokens) <= set(allowed.tolist())
            ref = full_step_log_probs(plain, src, h.tokens, allowed)  # (beam search ends every hypothesis with EOS)
            assert h.score == pytest.approx(sum(ref), abs=1e-3)
    greedy = TranslationOptions(beam_size=1, length_penalty=0.0, max_length=10)
    for src, (h,) in zip(srcs, generate_ids(restricted, srcs, greedy)):
        allowed = sl.candidates(src)
        cols = torch.from_numpy(allowed)
        with torch.inference_mode():  # the restricted argmax, step by step
            mem, mask = plain.encode(torch.tensor([src]))
            cache = plain.new_cache(1)
            cache.join(plain.cross_states(mem), mask, 12)
            prev, picked = BOS_ID, []
            for _ in range(len(h.tokens) + 1):
                logits = plain.decode_step(torch.tensor([prev]), cache)[0].float()
                prev = int(cols[logits[cols].argmax()])
                picked.append(prev)
        assert picked[: len(h.tokens)] == h.tokens
        if len(h.tokens) < greedy.max_length - 1:  # (at max_length - 1 EOS is the only choice)
            assert picked[-1] == EOS_ID


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("opts", OPTIONS, ids=OPTION_IDS)
def test_a_sentence_joined_mid_flight_gets_its_result_alone_with_a_shortlist(model, kind: str, opts: TranslationOptions) -> None:
    backend = with_shortlist(make_backend(kind, model), random_shortlist(seed=1))
    srcs = sources(12, seed=4)
    search = BeamSearch(backend, opts)
    out = run_staggered(search, srcs, seed=3)
    assert search.shortlist_builds > 1
    for i, src in enumerate(srcs):
        assert_same(out[i], generate_ids(backend, [src], opts)[0], int8=kind == "int8")
        allowed = set(backend.shortlist.candidates([*src, *opts.target_prefix]).tolist())
        assert all(set(h.tokens) <= allowed for h in out[i])
        if opts.target_prefix:
            assert all(h.tokens[:2] == [5, 7] for h in out[i])
        if opts.no_repeat_ngram_size == 2:
            grams = [tuple(out[i][0].tokens[j : j + 2]) for j in range(len(out[i][0].tokens) - 1)]
            assert len(grams) == len(set(grams))


@pytest.mark.parametrize("kind", ["torch", "int8"])
@pytest.mark.parametrize("workers", [1, 2])
def test_scheduler_results_equal_searches_alone_with_a_shortlist(model, kind: str, workers: int) -> None:
    backend = with_shortlist(make_backend(kind, model), random_shortlist(seed=2))
    srcs = sources(20, seed=3)
    opts = TranslationOptions(beam_size=3, max_length_a=1.0, max_length_b=3)
    got = scheduled_in_tickets(backend, srcs, opts, workers)
    for src, hyps in zip(srcs, got):
        assert_same(hyps, generate_ids(backend, [src], opts)[0], int8=kind == "int8")
        assert all(math.isfinite(h.score) for h in hyps)


def test_the_translator_loads_the_model_directorys_shortlist(tmp_path) -> None:
    for name in ("sentencepiece.model", "config.json", "model.safetensors"):
        (tmp_path / name).symlink_to(DEFAULT_TRANSLATOR / name)
    with pytest.raises(ShortlistError, match="build-shortlist"):
        Translator.from_pretrained(tmp_path, shortlist=True)
    vocab = json.loads((tmp_path / "config.json").read_text())["vocab_size"]
    ranking = np.arange(vocab)
    Shortlist(np.zeros(vocab + 1, dtype=np.int64), np.zeros(0, dtype=np.int64), ranking, vocab, 1, vocab).save(tmp_path / FILENAME)
    texts = ["Open the file report-2024.txt", "The cat sleeps."]
    tr = Translator.from_pretrained(tmp_path, shortlist=True)
    assert tr.shortlist is not None and tr.backend.shortlist is tr.shortlist
    base = Translator.from_pretrained(tmp_path)
    assert base.shortlist is None and base.backend.shortlist is None
    assert [t.tokens for t in tr.translate(texts, "en", "fr")] == [t.tokens for t in base.translate(texts, "en", "fr")]
    with pytest.raises(ShortlistError, match="vocabulary of 12"):
        Translator.from_pretrained(tmp_path, shortlist=build_from_pairs(HAND_SRC, HAND_TGT, 12))
