"""Batched beam search and greedy decoding over ``Transformer.encode`` / ``decode_step``.

``beam_step`` is the pure core (fairseq's ``search.py`` shape); ``generate`` runs batch x beam
as one tensor program, with GNMT length penalty lp(L) = ((5 + L) / 6) ** alpha, absolute and
source-relative max length, min length, n-best output, and finished sentences dropping out of
the batch (and the KV cache) as soon as they are done.

A sentence is done when its n-th best finished hypothesis scores at least the best score any
live beam could still reach: scores only fall as hypotheses grow, and lp grows with length, so
that bound is live_score / lp(max_len).  This makes the search exact with respect to its beam
(it never stops early on a hypothesis that a live beam could still beat).
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import torch
from torch import Tensor

from model.kernels import native
from model.translation.cache import DecoderCache
from model.translation.transformer import TransformerConfig

NEG_INF = float("-inf")


class Seq2Seq(Protocol):
    """What the search drives: a ``Transformer`` (the torch reference) or one of its back ends
    (``model.translation.backends``)."""

    cfg: TransformerConfig

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]: ...

    def init_cache(self, mem: Tensor, mem_mask: Tensor, max_len: int, beams: int = 1, kv_dtype: torch.dtype | None = None) -> DecoderCache: ...

    def decode_step(self, tokens: Tensor, cache: DecoderCache) -> Tensor: ...


@dataclass
class Hypothesis:
    tokens: list[int]  # without BOS/EOS
    score: float  # log-probability (including EOS) divided by the length penalty


@dataclass
class SearchOptions:
    beam_size: int = 4
    num_hypotheses: int = 1
    length_penalty: float = 1.0  # GNMT alpha; 0 = raw log-probability
    max_length: int = 256  # absolute cap on generated tokens (EOS included)
    max_length_a: float = 1.5  # relative cap: a * source_len + b
    max_length_b: int = 10
    min_length: int = 0  # EOS is forbidden before this many tokens
    stats: dict[str, int] = field(default_factory=dict)  # filled: decode_steps, kv_cache_bytes
    should_stop: Callable[[], bool] | None = None  # checked once per step; True ends the search (returns what finished)
    kv_cache_dtype: torch.dtype | None = None  # self-attention K/V storage; None: the model's dtype
    # CTranslate2's decoding options (at their defaults the search above runs unchanged)
    repetition_penalty: float = 1.0  # > 1: a generated token's logit is divided by it (multiplied if < 0)
    no_repeat_ngram_size: int = 0  # > 0: no n-gram of this size occurs twice in a hypothesis
    target_prefix: tuple[int, ...] = ()  # forced first tokens of every hypothesis (counted in its score)
    sampling_topk: int = 1  # 1: argmax; k > 1: sample from the k most likely tokens; 0: from all (beam_size 1)
    sampling_temperature: float = 1.0  # sampling: logits / temperature
    sampling_seed: int | None = None  # sampling: a seed for reproducible draws (None: random)

    @property
    def sampling(self) -> bool:
        return self.sampling_topk != 1

    @property
    def processed(self) -> bool:
        """Whether any option changes the logits (then the generic, unfused step runs)."""
        return self.repetition_penalty != 1.0 or self.no_repeat_ngram_size > 0 or bool(self.target_prefix)

    def validate(self) -> None:
        if self.beam_size < 1:
            raise ValueError("beam_size must be >= 1")
        if self.num_hypotheses < 1 or (self.num_hypotheses > self.beam_size and not self.sampling):
            raise ValueError("num_hypotheses must be between 1 and beam_size (any number when sampling)")
        if self.max_length < 1:
            raise ValueError("max_length must be >= 1")
        if self.repetition_penalty <= 0 or self.no_repeat_ngram_size < 0:
            raise ValueError("repetition_penalty must be > 0 and no_repeat_ngram_size >= 0")
        if self.sampling_topk < 0 or self.sampling_temperature <= 0:
            raise ValueError("sampling_topk must be >= 0 and sampling_temperature > 0")
        if self.sampling and self.beam_size != 1:
            raise ValueError("sampling (sampling_topk != 1) needs beam_size 1")
        if len(self.target_prefix) >= self.max_length:
            raise ValueError("target_prefix must be shorter than max_length")


def length_penalty(length: Tensor | int, alpha: float) -> Tensor | float:
    if alpha == 0:
        return 1.0 if isinstance(length, int) else torch.ones_like(length, dtype=torch.float32)
    return ((5.0 + length) / 6.0) ** alpha


@functools.lru_cache(maxsize=64)
def _chunk_size(V: int, n: int) -> int | None:
    """A divisor of V between 32 and 256 (nearest 64) for the two-stage top-k, or None."""
    if V < 16 * n:
        return None
    for c in sorted(range(32, 257), key=lambda c: abs(c - 64)):
        if V % c == 0:
            return c
    return None


def beam_step(lprobs: Tensor, scores: Tensor, n: int, chunk_max: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """lprobs (B, K, V) log-probs of the next token, scores (B, K) running scores.

    Returns the n best continuations per sentence: (scores, tokens, beams), each (B, n), best
    first.  Same result as a top-n over the B x (K * V) table scores + lprobs, in two stages:
    the vocabulary is cut into chunks of C tokens and only the n chunks with the highest maxima
    are searched (every one of the n best candidates lies in one of them), so the full table is
    never formed and the big top-k runs over V / C chunk maxima instead of V scores.
    ``chunk_max`` (B, K, V / C), when given, holds those chunk maxima of ``lprobs`` already
    (``lse_chunk_max`` computes them in the pass that normalises the logits)."""
    B, K, V = lprobs.shape
    C = _chunk_size(V, n)
    if C is None or K * (V // C) < n:  # (too few chunks to hold n candidates)
        total = (scores.unsqueeze(-1) + lprobs).view(B, K * V)
        top, flat = total.topk(n, dim=-1)
        return top, flat % V, flat // V
    nc = V // C
    if chunk_max is None:
        chunk_max = lprobs.reshape(B, K, nc, C).amax(-1)
    chunk = (chunk_max + scores.unsqueeze(-1)).view(B, K * nc).topk(n, dim=-1).indices  # (B, n) = beam * nc + chunk
    vals = lprobs.reshape(B, K * nc, C).gather(1, chunk.unsqueeze(-1).expand(B, n, C))  # (B, n, C)
    vals = vals + scores.gather(1, chunk // nc).unsqueeze(-1)
    top, j = vals.view(B, n * C).topk(n, dim=-1)  # (B, n)
    flat = chunk.gather(1, j // C) * C + j % C  # index into K * V
    return top, flat % V, flat // V


def row_max(x: Tensor, chunk_max: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """x.max(-1) for x (N, V), via chunk maxima when V splits into chunks (several times faster
    on CPU than the indexed max over the whole row); ``chunk_max`` (N, V / C) may be given."""
    N, V = x.shape
    C = _chunk_size(V, 1)
    if C is None:
        return x.max(-1)
    if chunk_max is None:
        chunk_max = x.view(N, V // C, C).amax(-1)
    chunk = chunk_max.argmax(-1)  # (N,) chunk holding the row maximum
    vals, j = x.view(N, V // C, C).gather(1, chunk.view(N, 1, 1).expand(N, 1, C))[:, 0].max(-1)
    return vals, chunk * C + j


def lse_chunk_max(logits: Tensor, C: int) -> tuple[Tensor, Tensor]:
    """logits (N, V) -> (logsumexp over V (N,), maxima of the chunks of C logits (N, V / C)).

    log_softmax(logits) = logits - lse[:, None], and its chunk maxima are chunk_max - lse[:, None]:
    a search can work on the raw logits with scores - lse and never form the normalised table."""
    N, V = logits.shape
    if (
        logits.device.type == "cpu"
        and logits.dtype == torch.float32
        and logits.is_contiguous()
        and N > 0
        and (so := native.kernel("RENDITION_SEARCH_KERNEL")) is not None
    ):  # one read-only pass over the logits (model/kernels/csrc/search.c)
        cmax, lse = logits.new_empty(N, V // C), logits.new_empty(N)
        args = native.LseArgs(
            logits=logits.data_ptr(), chunk_max=cmax.data_ptr(), lse=lse.data_ptr(), rows=N, vocab=V, chunk=C,
            threads=torch.get_num_threads(),
        )
        so.rk_lse_chunk_max(ctypes.byref(args))
        return lse, cmax
    return torch.logsumexp(logits, -1), logits.view(N, V // C, C).amax(-1)


def _lse_forbidding(logits: Tensor, C: int, forbid: int | None) -> tuple[Tensor, Tensor]:
    """``lse_chunk_max`` of logits (N, V); with ``forbid`` (a token id: EOS before min_length) that
    token's logit is then set to -inf in place and its chunk's maxima recomputed, which is what
    log_softmax followed by forbidding the token gives (the normaliser still counts it)."""
    lse, cmax = lse_chunk_max(logits, C)
    if forbid is not None:
        logits[:, forbid] = NEG_INF
        c = forbid // C
        cmax[:, c] = logits[:, c * C : (c + 1) * C].amax(-1)
    return lse, cmax


def _log_probs(logits: Tensor, eos: int, forbid_eos: bool, ending: Tensor | None) -> Tensor:
    """log_softmax of logits (N, V) with EOS forbidden when ``forbid_eos`` (before min_length), and
    the rows where ``ending`` (N,) holds (a sentence at its max length) EOS only, with its own
    log-probability: a sentence at its max length ends, min_length or not."""
    lprobs = torch.log_softmax(logits, dim=-1)
    if ending is not None:
        eos_only = torch.full_like(lprobs, NEG_INF)
        eos_only[:, eos] = lprobs[:, eos]
    if forbid_eos:
        lprobs[:, eos] = NEG_INF
    if ending is not None:
        lprobs = torch.where(ending.view(-1, 1), eos_only, lprobs)
    return lprobs


def _process_logits(logits: Tensor, prev: Tensor, opts: SearchOptions) -> Tensor:
    """CTranslate2's logits processors on logits (N, V) given each row's tokens so far (N, t):
    the repetition penalty on the tokens already generated, then no repeated n-gram (a token that
    would complete an n-gram the row holds already is disabled)."""
    if opts.repetition_penalty != 1.0 and prev.shape[1]:
        seen = logits.gather(1, prev)
        p = opts.repetition_penalty
        logits = logits.scatter(1, prev, torch.where(seen < 0, seen * p, seen / p))
    n = opts.no_repeat_ngram_size
    if n and prev.shape[1] >= n:
        grams = prev.unfold(1, n, 1)  # (N, t - n + 1, n): every n-gram so far
        match = (grams[:, :, : n - 1] == prev[:, prev.shape[1] - (n - 1) :].unsqueeze(1)).all(-1)
        rows, cols = match.nonzero(as_tuple=True)
        logits = logits.clone()
        logits[rows, grams[rows, cols, n - 1]] = NEG_INF
    return logits


def _force(logits: Tensor, token: int) -> Tensor:
    """Only ``token`` stays possible: a target prefix step (as in CTranslate2, the forced token's
    log-probability is then 0, so a hypothesis' score is that of what follows the prefix)."""
    forced = torch.full_like(logits, NEG_INF)
    forced[:, token] = logits[:, token]
    return forced


def _step_log_probs(
    logits: Tensor, prev: Tensor, t: int, eos: int, ending: Tensor | None, opts: SearchOptions
) -> Tensor:
    """The unfused step: processors, log_softmax, min length, max length, target prefix."""
    if opts.processed:
        logits = _process_logits(logits, prev, opts)
    if t < len(opts.target_prefix):
        logits = _force(logits, opts.target_prefix[t])
    return _log_probs(logits, eos, t < opts.min_length, ending)


def _sample(lprobs: Tensor, opts: SearchOptions, gen: torch.Generator | None) -> tuple[Tensor, Tensor]:
    """One token per row of log-probabilities (N, V) from the top-k at the temperature; returns
    (their log-probabilities, the tokens)."""
    scaled = lprobs / opts.sampling_temperature
    if opts.sampling_topk > 0 and opts.sampling_topk < scaled.shape[1]:
        kth = scaled.topk(opts.sampling_topk, dim=-1).values[:, -1:]
        scaled = scaled.masked_fill(scaled < kth, NEG_INF)
    tokens = torch.multinomial(torch.softmax(scaled, -1), 1, generator=gen).squeeze(1)
    return lprobs.gather(1, tokens.unsqueeze(1)).squeeze(1), tokens


def _ending(max_lens: Tensor, t: int, end_steps: set[int]) -> Tensor | None:
    """(N,) bool: the sentences whose max length ends at step t; None when there are none."""
    if t not in end_steps:
        return None
    ending = max_lens - 1 == t
    return ending if bool(ending.any()) else None


def _kv(opts: SearchOptions) -> dict:
    return {} if opts.kv_cache_dtype is None else {"kv_dtype": opts.kv_cache_dtype}


def _max_lengths(src_lens: Tensor, opts: SearchOptions) -> Tensor:
    rel = (src_lens.float() * opts.max_length_a + opts.max_length_b).long()
    return rel.clamp(max=opts.max_length).clamp(min=1)


def max_output_lengths(src_lens: list[int], opts: SearchOptions) -> list[int]:
    """Per source length (tokens with the target tag and </s>), the most tokens a search may
    generate, EOS included; a hypothesis this long was ended by the limit, not by the model.

    ``_max_lengths``' float32 arithmetic in numpy, not torch: the service calls this on its event
    loop, where every torch op releases the GIL and then waits to get it back from the workers."""
    rel = (np.asarray(src_lens, dtype=np.float32) * np.float32(opts.max_length_a) + np.float32(opts.max_length_b)).astype(np.int64)
    return np.clip(rel, 1, max(1, opts.max_length)).tolist()


@torch.inference_mode()
def generate(model: Seq2Seq, src: Tensor, opts: SearchOptions) -> list[list[Hypothesis]]:
    """src (B, S) padded token ids -> per sentence, up to num_hypotheses hypotheses, best first."""
    opts.validate()
    if opts.beam_size == 1 and opts.num_hypotheses > 1:  # sampling: n independent draws per sentence
        n = opts.num_hypotheses
        draws = greedy(model, src.repeat_interleave(n, 0), opts)
        return [sorted(draws[i * n : (i + 1) * n], key=lambda h: -h.score) for i in range(src.shape[0])]
    if opts.beam_size == 1:
        return [[h] for h in greedy(model, src, opts)]
    cfg = model.cfg
    device = src.device
    B, K = src.shape[0], opts.beam_size
    src_lens = (src != cfg.pad_id).sum(1)
    max_lens = _max_lengths(src_lens, opts)  # (B,)
    T = int(max_lens.max())

    mem, mem_mask = model.encode(src)
    # The first step runs one row per sentence (every beam would start from the same BOS); the
    # cache then expands to K rows per sentence (beams of a sentence adjacent) sharing that step.
    cache = model.init_cache(mem, mem_mask, T, **_kv(opts))
    del mem

    alive = torch.arange(B, device=device)  # original sentence index of each live row group
    scores = torch.zeros(B, 1, device=device)  # (sentences, live beams): one at the first step
    history = torch.empty(B, K, 0, dtype=torch.long, device=device)
    tokens = torch.full((B,), cfg.bos_id, dtype=torch.long, device=device)
    finished: list[list[Hypothesis]] = [[] for _ in range(B)]
    lp_max = length_penalty(max_lens.float(), opts.length_penalty)  # (B,)
    max_len_list, n_best = max_lens.tolist(), opts.num_hypotheses
    end_steps = {n - 1 for n in max_len_list}  # steps at which some sentence must end
    kv_bytes = 0

    for t in range(T):
        logits = model.decode_step(tokens, cache).float()  # (Nb * live beams, V)
        Nb, V = len(alive), logits.shape[-1]
        if t == 0 and V < 2 * K:  # too few tokens for 2K candidates from one beam: K rows now
            cache.expand(K)
            logits = logits.repeat_interleave(K, 0)
            scores = torch.cat([scores, torch.full((B, K - 1), NEG_INF, device=device)], 1)
        if t <= 1:  # the cache is largest once expanded (it only shrinks afterwards)
            kv_bytes = max(kv_bytes, cache.nbytes())
        kl = scores.shape[1]  # live beams per sentence
        ending = _ending(max_lens[alive], t, end_steps)  # (Nb,) sentences that must end now, or None
        C = _chunk_size(V, 2 * K)
        if C is None or ending is not None or opts.processed:
            rows = ending.repeat_interleave(kl) if ending is not None else None
            prev = history[:, :kl].reshape(Nb * kl, t)
            lprobs = _step_log_probs(logits, prev, t, cfg.eos_id, rows, opts).view(Nb, kl, V)
            cand_scores, cand_tokens, cand_beams = beam_step(lprobs, scores, 2 * K)  # (Nb, 2K)
        else:  # scores + log_softmax(logits) = (scores - lse) + logits, without the normalised table
            lse, cmax = _lse_forbidding(logits, C, cfg.eos_id if t < opts.min_length else None)
            cand_scores, cand_tokens, cand_beams = beam_step(
                logits.view(Nb, kl, V), scores - lse.view(Nb, kl), 2 * K, cmax.view(Nb, kl, -1)
            )

        # Finish EOS candidates that rank within the top K.
        is_eos = (cand_tokens == cfg.eos_id) & torch.isfinite(cand_scores)
        eos_top = is_eos[:, :K]
        if bool(eos_top.any()):
            lp = float(length_penalty(t + 1, opts.length_penalty))
            alive_l = alive.tolist()
            for r, c in eos_top.nonzero().tolist():
                b = alive_l[r]
                prefix = history[r, int(cand_beams[r, c])].tolist()
                finished[b].append(Hypothesis(prefix, float(cand_scores[r, c]) / lp))
                finished[b].sort(key=lambda h: -h.score)

        # Continue with the K best non-EOS candidates.
        rank = torch.arange(2 * K, device=device).expand_as(cand_scores) + is_eos.long() * (2 * K)
        keep = rank.topk(K, dim=-1, largest=False).indices  # (Nb, K)
        scores = cand_scores.gather(1, keep)
        next_tokens = cand_tokens.gather(1, keep)
        beams = cand_beams.gather(1, keep)
        history = torch.cat([history.gather(1, beams.unsqueeze(-1).expand_as(history)), next_tokens.unsqueeze(-1)], -1)
        if kl < K:  # after the first step: K rows per sentence, same past
            cache.expand(K)
            beams = torch.arange(K, device=device).expand(Nb, K)  # each row keeps its own copy

        # Which sentences are done?  (-inf live scores: nothing left to extend)
        done = []
        best_live = (scores[:, 0] / lp_max[alive]).tolist()
        for r, b in enumerate(alive.tolist()):
            hyps = finished[b]
            if len(hyps) >= n_best:
                if hyps[n_best - 1].score >= best_live[r]:
                    done.append(r)
            elif max_len_list[b] - 1 <= t:
                done.append(r)
        row_beams = (beams + torch.arange(len(alive), device=device).unsqueeze(1) * K).view(-1)
        if done:
            keep_rows = torch.tensor(sorted(set(range(len(alive))) - set(done)), dtype=torch.long, device=device)
            if keep_rows.numel() == 0:
                break
            alive, scores, history = alive[keep_rows], scores[keep_rows], history[keep_rows]
            next_tokens = next_tokens[keep_rows]
            # One gather both follows the beams and drops finished sentences.
            cache.select(row_beams.view(-1, K)[keep_rows].view(-1))
        else:
            cache.reorder(row_beams)
        tokens = next_tokens.reshape(-1)
        if opts.should_stop is not None and opts.should_stop():
            break
    opts.stats["decode_steps"] = opts.stats.get("decode_steps", 0) + t + 1
    opts.stats["kv_cache_bytes"] = max(opts.stats.get("kv_cache_bytes", 0), kv_bytes)
    return [h[:n_best] for h in finished]


@torch.inference_mode()
def greedy(model: Seq2Seq, src: Tensor, opts: SearchOptions) -> list[Hypothesis]:
    """beam_size=1 fast path: argmax per step, finished sentences drop out of the batch."""
    cfg = model.cfg
    device = src.device
    B = src.shape[0]
    max_lens = _max_lengths((src != cfg.pad_id).sum(1), opts)
    T = int(max_lens.max())
    mem, mem_mask = model.encode(src)
    cache = model.init_cache(mem, mem_mask, T, **_kv(opts))
    alive = torch.arange(B, device=device)
    tokens = torch.full((B,), cfg.bos_id, dtype=torch.long, device=device)
    scores = torch.zeros(B, device=device)
    out: list[list[int]] = [[] for _ in range(B)]
    final: list[float] = [0.0] * B
    end_steps = {n - 1 for n in max_lens.tolist()}  # steps at which some sentence must end
    kv_bytes = cache.nbytes()  # (it only shrinks)
    gen = None
    if opts.sampling and opts.sampling_seed is not None:
        gen = torch.Generator(device=device).manual_seed(opts.sampling_seed)
    for t in range(T):
        logits = model.decode_step(tokens, cache).float()
        ending = _ending(max_lens[alive], t, end_steps)
        C = _chunk_size(logits.shape[1], 1)
        if opts.processed or opts.sampling:
            prev = torch.tensor([out[b] for b in alive.tolist()], dtype=torch.long, device=device).view(len(alive), t)
            lprobs = _step_log_probs(logits, prev, t, cfg.eos_id, ending, opts)
            best, tokens = _sample(lprobs, opts, gen) if opts.sampling else row_max(lprobs)
        elif C is None or ending is not None:
            best, tokens = row_max(_log_probs(logits, cfg.eos_id, t < opts.min_length, ending))
        else:  # max of log_softmax(logits) = max(logits) - lse, without the normalised table
            lse, cmax = _lse_forbidding(logits, C, cfg.eos_id if t < opts.min_length else None)
            best, tokens = row_max(logits, cmax)
            best = best - lse
        scores = scores + best
        ended = tokens == cfg.eos_id
        for b, tok, end in zip(alive.tolist(), tokens.tolist(), ended.tolist()):
            if not end:
                out[b].append(tok)
        if bool(ended.any()):
            lp = float(length_penalty(t + 1, opts.length_penalty))
            for r in ended.nonzero().flatten().tolist():
                final[int(alive[r])] = float(scores[r]) / lp
            keep = (~ended).nonzero().flatten()
            if keep.numel() == 0:
                break
            alive, tokens, scores = alive[keep], tokens[keep], scores[keep]
            cache.select(keep)
        if opts.should_stop is not None and opts.should_stop():
            break
    opts.stats["decode_steps"] = opts.stats.get("decode_steps", 0) + t + 1
    opts.stats["kv_cache_bytes"] = max(opts.stats.get("kv_cache_bytes", 0), kv_bytes)
    return [Hypothesis(toks, sc) for toks, sc in zip(out, final)]


def generate_sorted(model: Seq2Seq, sources: list[list[int]], opts: SearchOptions, max_batch_tokens: int) -> list[list[Hypothesis]]:
    """``generate`` over token-id lists (unpadded) in batches sorted by length under a budget of
    source tokens x beam size (at least one sentence a batch); n-best per source, in input order."""
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    results: list[list[Hypothesis]] = [[] for _ in sources]
    pad = model.cfg.pad_id
    start = 0
    while start < len(order):
        end = start + 1
        while end < len(order) and len(sources[order[end]]) * (end + 1 - start) * opts.beam_size <= max_batch_tokens:
            end += 1
        idx = order[start:end]
        src = torch.full((len(idx), max(len(sources[i]) for i in idx)), pad, dtype=torch.long)
        for r, i in enumerate(idx):
            src[r, : len(sources[i])] = torch.tensor(sources[i])
        for i, hyps in zip(idx, generate(model, src.to(model.device), opts)):
            results[i] = hyps
        start = end
    return results
