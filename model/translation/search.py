"""Beam search and greedy search over a changing set of sentences (continuous batching).

One search serves every caller: the service's scheduler adds sentences as requests arrive and steps
it without end; a batch translation (``generate_ids``) adds every sentence and steps until the search
is idle.  Sentences join at the next decoding step and leave as soon as they are done:

    search = BeamSearch(backend, TranslationOptions(beam_size=4))
    search.add("a", ids_a)            # waits for the next step
    done = search.step()              # one decoding step: [(key, hypotheses)] of the sentences done now
    search.add("b", ids_b)            # encoded and joined at the next step, next to "a"'s beams
    search.cancel("a")                # its beams leave at the next step

Each sentence is a group of ``beam_size`` rows of a ``DecoderCache`` (``rendition.model.translation.cache``)
at its own step: it starts with one live beam (the others at -inf, so the first step expands it),
and its result does not depend on which sentences share its steps.  ``beam_step`` is the pure core
(fairseq's ``search.py`` shape).  The rules: GNMT length penalty lp(L) = ((5 + L) / 6) ** alpha,
absolute and source-relative max length, min length, n-best output, CTranslate2's logits processors
(repetition penalty, no repeated n-gram), a target prefix, and with beam size 1 argmax or random
sampling (top-k, temperature; n draws per sentence).

A sentence is done when its n-th best finished hypothesis scores at least the best score any live
beam could still reach: scores only fall as hypotheses grow, and lp grows with length, so that
bound is live_score / lp(max_len).  This makes the search exact with respect to its beam (it never
stops early on a hypothesis that a live beam could still beat).
"""

from __future__ import annotations

import ctypes
import functools
import struct
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import numpy as np
import torch
from torch import Tensor

from rendition.model.kernels import native
from rendition.model.translation.cache import DecoderCache
from rendition.model.translation.options import SearchStats, TranslationOptions
from rendition.model.translation.transformer import TransformerConfig

NEG_INF = float("-inf")


class Seq2Seq(Protocol):
    """What the search drives: a back end (``rendition.model.translation.backends``)."""

    @property
    def cfg(self) -> TransformerConfig: ...

    @property
    def device(self) -> torch.device: ...

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]: ...

    def cross_states(self, mem: Tensor) -> list: ...

    def new_cache(self, beams: int, kv_dtype: torch.dtype | None = None) -> DecoderCache: ...

    # With a vocabulary shortlist (``shortlist`` not None): ``output_projection(ids)`` (in the back
    # end's own form), and ``decode_step(tokens, cache, output)`` computing the logits of those ids only.
    def decode_step(self, tokens: Tensor, cache: DecoderCache, output: Any = None) -> Tensor: ...

    def output_projection(self, ids: Tensor) -> Any: ...


@dataclass
class Hypothesis:
    tokens: list[int]  # without BOS/EOS
    score: float  # log-probability (including EOS) divided by the length penalty


def length_penalty(length: int, alpha: float) -> float:
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


def _lse_forbidding(logits: Tensor, C: int, forbid: int | None, rows: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """``lse_chunk_max`` of logits (N, V); with ``forbid`` (a token id: EOS before min_length) that
    token's logit is then set to -inf in place, in the ``rows`` (N,) bool given (default: all), and
    its chunk's maxima recomputed: what log_softmax followed by forbidding the token gives (the
    normaliser still counts it)."""
    lse, cmax = lse_chunk_max(logits, C)
    if forbid is not None:
        c, sel = forbid // C, slice(None) if rows is None else rows
        logits[sel, forbid] = NEG_INF
        cmax[sel, c] = logits[sel, c * C : (c + 1) * C].amax(-1)
    return lse, cmax


def _process_logits(
    logits: Tensor, prev: Tensor, lengths: Tensor, opts: TranslationOptions, local: Tensor | None = None
) -> Tensor:
    """CTranslate2's logits processors on logits (N, V) given each row's tokens so far: the first
    ``lengths[r]`` (N,) of ``prev[r]`` (N, W).  The repetition penalty on the tokens already
    generated, then no repeated n-gram (a token that would complete an n-gram the row holds already
    is disabled).  ``local`` (vocabulary,): with a shortlist, each token's column of ``logits``
    (-1: not in the list; ``prev`` holds vocabulary ids)."""
    N, W = prev.shape
    V = logits.shape[1]
    pos = torch.arange(W, device=prev.device)
    if opts.repetition_penalty != 1.0 and W:
        seen = torch.zeros(N, V + 1, dtype=torch.bool, device=logits.device)
        cols = prev if local is None else local[prev].masked_fill(local[prev] < 0, V)
        seen.scatter_(1, cols.masked_fill(pos >= lengths.unsqueeze(1), V), True)  # (column V: no token)
        p = opts.repetition_penalty
        logits = torch.where(seen[:, :V], torch.where(logits < 0, logits * p, logits / p), logits)
    n = opts.no_repeat_ngram_size
    if n and W >= n:
        grams = prev.unfold(1, n, 1)  # (N, W - n + 1, n): every n-gram of the row's storage
        tail = prev.gather(1, (lengths.unsqueeze(1) - (n - 1) + pos[: n - 1]).clamp(min=0))  # (N, n - 1) its last tokens
        match = (grams[:, :, : n - 1] == tail.unsqueeze(1)).all(-1)
        match &= pos[: W - n + 1] + n <= lengths.unsqueeze(1)  # n-grams of generated tokens only
        rows, cols = match.nonzero(as_tuple=True)
        banned = grams[rows, cols, n - 1]
        if local is not None:  # (a token outside the list has no logit to disable)
            banned = local[banned]
            rows, banned = rows[banned >= 0], banned[banned >= 0]
        logits = logits.clone()
        logits[rows, banned] = NEG_INF
    return logits


def _force_prefix(logits: Tensor, lengths: Tensor, prefix: Tensor) -> Tensor:
    """Rows still in the target prefix (``lengths`` (N,) < its length) keep only its next token
    possible: as in CTranslate2, the forced token's log-probability is then 0, so a hypothesis'
    score is that of what follows the prefix."""
    inside = lengths < len(prefix)
    if not bool(inside.any()):
        return logits
    tok = prefix[lengths.clamp(max=len(prefix) - 1)].unsqueeze(1)  # (N, 1)
    forced = torch.full_like(logits, NEG_INF).scatter_(1, tok, logits.gather(1, tok))
    return torch.where(inside.unsqueeze(1), forced, logits)


def _sample(
    lprobs: Tensor, opts: TranslationOptions, gens: list[torch.Generator | None] | None, cols: list[Tensor] | None = None
) -> tuple[Tensor, Tensor]:
    """One token per row of log-probabilities (N, V) from the top-k at the temperature, each row
    drawn with its own generator when given (a seeded sentence draws the same whatever runs beside
    it); returns (their log-probabilities, the tokens).  ``cols``: with a vocabulary shortlist, each
    row's own columns (its sentence's candidates), the only ones it draws from (so a seeded draw
    does not depend on the other sentences' columns)."""
    scaled = lprobs / opts.sampling_temperature
    if opts.sampling_topk > 0 and opts.sampling_topk < scaled.shape[1]:
        kth = scaled.topk(opts.sampling_topk, dim=-1).values[:, -1:]
        scaled = scaled.masked_fill(scaled < kth, NEG_INF)
    probs = torch.softmax(scaled, -1)
    if cols is not None:
        gs: list[torch.Generator | None] = gens or [None] * len(cols)
        tokens = torch.cat([c[torch.multinomial(probs[r, c], 1, generator=g)] for r, (c, g) in enumerate(zip(cols, gs))])
    elif gens is None:
        tokens = torch.multinomial(probs, 1).squeeze(1)
    else:
        tokens = torch.cat([torch.multinomial(probs[r], 1, generator=g) for r, g in enumerate(gens)])
    return lprobs.gather(1, tokens.unsqueeze(1)).squeeze(1), tokens


def _float32(x: float) -> float:
    """``x`` rounded to the nearest float32 (as a Python float)."""
    return struct.unpack("f", struct.pack("f", x))[0]


def max_output_lengths(src_lens: list[int], opts: TranslationOptions) -> list[int]:
    """Per source length (tokens with the target tag and </s>), the most tokens a search may generate,
    EOS included: min(max_length, a * source_len + b) in float32, at least 1; a hypothesis this long
    was ended by the limit.  In plain Python, float32 rounding emulated (a source length times a
    float32 is exact in a double, and so is the sum of two float32 of these sizes, so rounding each
    to float32 is float32 arithmetic): the service calls this on its event loop twice a request,
    where numpy's calls cost several times as much and torch's release the GIL."""
    a, b, cap = _float32(opts.max_length_a), _float32(opts.max_length_b), max(1, opts.max_length)
    return [min(max(int(_float32(_float32(n * a) + b)), 1), cap) for n in src_lens]


def reached_limit(hyp: Hypothesis, limit: int) -> bool:
    """Whether ``hyp`` was ended by its length limit (``max_output_lengths``, EOS counted) rather
    than by </s>."""
    return len(hyp.tokens) + 1 >= limit


def ended_by_limit(sources: Sequence[Sequence[int]], results: Sequence[Sequence[Hypothesis]], opts: TranslationOptions) -> list[bool]:
    """Per source (tokens with the target tag and </s>): whether its best hypothesis reached its
    length limit (``max_output_lengths``) instead of ending with </s>: a cut translation, which
    the text pipeline decodes once more (``rendition.model.text.pipeline.fallback_options``)."""
    limits = max_output_lengths([len(x) for x in sources], opts)
    return [reached_limit(hyps[0], limit) for hyps, limit in zip(results, limits)]


def encoder_buckets(lengths: list[int], slack: float = 1.25) -> list[list[int]]:
    """Indices grouped for batched encoder passes: sorted by length, a group grows while its
    padded size (longest x count) stays within ``slack`` x its real tokens (plus a few), so
    sentences of very different lengths do not pad each other."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    groups: list[list[int]] = []
    real = 0
    for i in order:
        if groups and (len(groups[-1]) + 1) * lengths[i] <= slack * (real + lengths[i]) + 8:
            groups[-1].append(i)
            real += lengths[i]
        else:
            groups.append([i])
            real = lengths[i]
    return groups


@dataclass(eq=False)
class _Sentence:
    key: Hashable
    max_len: int  # most tokens it may generate, EOS included
    lp_max: float  # length penalty at max_len: bounds what a live beam can still reach
    finished: list[Hypothesis] = field(default_factory=list)
    gen: torch.Generator | None = None  # seeded sampling: this sentence's draws
    candidates: np.ndarray | None = None  # with a vocabulary shortlist: its candidate target tokens


@dataclass(frozen=True)
class _Draw:
    """Sampling n hypotheses: draw j of the sentence ``key`` (each runs as a sentence of its own)."""

    key: Hashable
    j: int


class BeamSearch:
    """A beam search over a changing set of sentences, one decoding step per ``step()`` call
    (one thread drives it; see ``rendition.model.translation.scheduler`` for the workers that do).
    ``beam_size`` 1 is greedy search (the argmax token, or a sampled one; done at EOS)."""

    def __init__(
        self, model: Seq2Seq, opts: TranslationOptions, capacity: int = 16, positions: int = 0, long_lived: bool = False
    ):
        """``capacity``: how many sentences may run at once, ``positions``: the most steps one may
        take (the cache reserves their storage; it grows by copying beyond them); ``long_lived``:
        the search serves sentence after sentence (a scheduler worker's), not one batch."""
        self.model, self.opts = model, opts
        self.K = opts.beam_size
        self.draws = opts.draws
        self.cache = model.new_cache(self.K, opts.kv_cache_dtype)
        self.cache.reserve(capacity, positions, long_lived)
        self.device = dev = model.device
        self.sentences: list[_Sentence] = []  # live, in cache order
        self.scores = torch.zeros(0, self.K, device=dev)  # (B, K) running log-probabilities
        self.history = torch.zeros(0, self.K, 0, dtype=torch.long, device=dev)  # (B, K, width) tokens so far
        self.t = torch.zeros(0, dtype=torch.long, device=dev)  # (B,) each sentence's step
        self.max_lens = torch.zeros(0, dtype=torch.long, device=dev)  # (B,) each sentence's max_len
        self.tokens = torch.zeros(0, dtype=torch.long, device=dev)  # (B * K,) the next step's input tokens
        self.prefix = torch.tensor(opts.target_prefix, dtype=torch.long, device=dev)
        self.pending: dict[Hashable, list[int]] = {}  # added, joining at the next step
        self.cancelled: set[Hashable] = set()
        self.failed: list[tuple[Hashable, Exception]] = []  # sentences whose encoder pass raised (they never joined)
        self.drawn: dict[Hashable, list[Hypothesis]] = {}  # sampling n: the draws done so far per sentence
        self.decode_steps = 0
        # A vocabulary shortlist (``rendition.model.translation.shortlist``) on the back end: each step
        # computes the logits of ``vocab_ids`` only (V',), the union of the live sentences'
        # candidates, and each sentence's rows keep only its own candidates (the others' columns
        # at -inf, before normalising): a sentence's result does not depend on who shares its
        # steps.  The search maps its choices back to vocabulary ids (``history`` and ``tokens``
        # hold vocabulary ids).  The projection is gathered again when sentences join; when they
        # leave, only their rows of the mask go.
        self.shortlist = getattr(model, "shortlist", None)
        self.vocab_ids: Tensor | None = None  # (V',) sorted
        self._output = None  # the back end's output projection for vocab_ids
        self._local: Tensor | None = None  # (vocabulary,) each id's column in the logits, -1: none
        self._eos_col = -1  # EOS's column in the logits
        self._blocked: Tensor | None = None  # (B, 1, V') -inf: not a candidate of that sentence, else 0
        self._cols: list[Tensor] = []  # per sentence its candidates' columns (sampling draws among them)
        self._stale = True
        self.shortlist_builds = 0  # times the projection was gathered
        self.shortlist_rows = 0  # V' summed over the decoding steps

    # -- the caller's side ------------------------------------------------------------------------
    def add(self, key: Hashable, source: list[int]) -> None:
        """Queue a sentence (token ids with the target tag and </s>) to join at the next step."""
        if key in self.pending or key in self.drawn or any(s.key == key for s in self.sentences):
            raise ValueError(f"sentence {key!r} is already in the search")
        if self.draws == 1:
            self.pending[key] = source
            return
        self.drawn[key] = []
        for j in range(self.draws):
            self.pending[_Draw(key, j)] = source

    def cancel(self, key: Hashable) -> None:
        """Drop a sentence: at once if it has not joined yet, else its beams leave at the next step."""
        keys = [key] if self.draws == 1 else [_Draw(key, j) for j in range(self.draws)]
        self.drawn.pop(key, None)
        for k in keys:
            if self.pending.pop(k, None) is None:
                self.cancelled.add(k)

    @property
    def live(self) -> int:
        """Sentences in the search (joined, not done)."""
        return len(self.sentences)

    @property
    def idle(self) -> bool:
        return not self.sentences and not self.pending

    # -- one step ---------------------------------------------------------------------------------
    @torch.inference_mode()
    def step(self) -> list[tuple[Hashable, list[Hypothesis]]]:
        """Drop cancelled sentences, join the pending ones, run one decoding step for every live
        sentence; returns the sentences done at this step with their n-best hypotheses.  Sentences
        whose encoder pass raised are in ``failed`` (the caller takes them); an exception of the
        decoding step itself leaves the search unusable (the caller drops it)."""
        self._leave_cancelled()
        self._join_pending()
        if not self.sentences:
            return []
        done = self._step()
        return done if self.draws == 1 else self._gather_draws(done)

    def _restrict(self) -> None:
        """The union of the live sentences' candidates, its output projection, and each sentence's
        mask of the columns that are not its own candidates."""
        assert self.shortlist is not None
        cands = [s.candidates for s in self.sentences]
        ids = self.shortlist.union(cands)
        self.vocab_ids = torch.from_numpy(ids).to(self.device)
        self._output = self.model.output_projection(self.vocab_ids)
        local = torch.full((self.shortlist.vocab_size,), -1, dtype=torch.long, device=self.device)
        local[self.vocab_ids] = torch.arange(len(ids), device=self.device)
        self._local = local
        self._eos_col = int(local[self.model.cfg.eos_id])
        blocked = torch.full((len(cands), len(ids)), NEG_INF)
        self._cols = [local[torch.from_numpy(c).to(self.device)] for c in cands]
        for r, c in enumerate(self._cols):
            blocked[r, c.cpu()] = 0.0
        self._blocked = blocked.to(self.device).unsqueeze(1)  # (an addition: much faster than masked_fill_ broadcast)
        self._stale = False
        self.shortlist_builds += 1

    def _step(self) -> list[tuple[Hashable, list[Hypothesis]]]:
        K, opts = self.K, self.opts
        Nb = len(self.sentences)
        if self.shortlist is None:
            logits = self.model.decode_step(self.tokens, self.cache).float()  # (Nb * K, V)
            eos = self.model.cfg.eos_id
        else:  # (Nb * K, V') over vocab_ids; eos: its column
            if self._stale:
                self._restrict()
            logits = self.model.decode_step(self.tokens, self.cache, self._output).float()
            assert self._blocked is not None
            logits.view(Nb, K, -1).add_(self._blocked)
            eos = self._eos_col
            self.shortlist_rows += logits.shape[-1]
        self.decode_steps += 1
        V = logits.shape[-1]
        t = self.t
        ending = self.max_lens - 1 == t  # (Nb,) sentences at their max length: EOS only
        forbid = t < opts.min_length if opts.min_length else None  # (Nb,) EOS forbidden
        C = _chunk_size(V, 2 * K)
        lse = cmax = None
        if C is None or opts.processed or opts.sampling or bool(ending.any()):
            lprobs = self._log_probs(logits, eos, ending, forbid).view(Nb, K, V)
        else:  # scores + log_softmax(logits) = (scores - lse) + logits, without the normalised table
            rows = None if forbid is None else forbid.repeat_interleave(K)
            lse, cmax = _lse_forbidding(logits, C, None if rows is None or not bool(rows.any()) else eos, rows)
            lprobs = logits.view(Nb, K, V)
        if K == 1:
            return self._greedy(lprobs.view(Nb, V), lse, cmax)
        scores = self.scores if lse is None else self.scores - lse.view(Nb, K)
        cand_scores, cand_tokens, cand_beams = beam_step(lprobs, scores, 2 * K, None if cmax is None else cmax.view(Nb, K, -1))
        if self.vocab_ids is not None:  # (columns -> vocabulary ids)
            cand_tokens, eos = self.vocab_ids[cand_tokens], self.model.cfg.eos_id

        # Finish EOS candidates that rank within the top K.
        is_eos = (cand_tokens == eos) & torch.isfinite(cand_scores)
        eos_top = is_eos[:, :K]
        t_list = t.tolist()
        if bool(eos_top.any()):
            for r, c in eos_top.nonzero().tolist():
                s = self.sentences[r]
                prefix = self.history[r, int(cand_beams[r, c]), : t_list[r]].tolist()
                lp = length_penalty(t_list[r] + 1, opts.length_penalty)
                s.finished.append(Hypothesis(prefix, float(cand_scores[r, c]) / lp))
                s.finished.sort(key=lambda h: -h.score)

        # Continue with the K best non-EOS candidates.
        rank = torch.arange(2 * K, device=self.device).expand_as(cand_scores) + is_eos.long() * (2 * K)
        keep = rank.topk(K, dim=-1, largest=False).indices  # (Nb, K)
        self.scores = cand_scores.gather(1, keep)
        next_tokens = cand_tokens.gather(1, keep)
        beams = cand_beams.gather(1, keep)
        self._grow_history(t)
        self.history = self.history.gather(1, beams.unsqueeze(-1).expand_as(self.history))
        self.history[torch.arange(Nb, device=self.device), :, t] = next_tokens

        # Which sentences are done?  (-inf live scores: nothing left to extend)
        n_best = opts.num_hypotheses
        best_live = self.scores[:, 0].tolist()
        done = []
        for r, s in enumerate(self.sentences):
            if len(s.finished) >= n_best:
                if s.finished[n_best - 1].score >= best_live[r] / s.lp_max:
                    done.append(r)
            elif s.max_len - 1 <= t_list[r]:
                done.append(r)
        row_beams = (beams + torch.arange(Nb, device=self.device).unsqueeze(1) * K).view(-1)
        self.tokens = next_tokens.reshape(-1)
        self.t = t + 1
        out = [(self.sentences[r].key, self.sentences[r].finished[:n_best]) for r in done]
        if done:  # one gather both follows the beams and drops finished sentences
            self._keep([r for r in range(Nb) if r not in set(done)], row_beams)
        else:
            self.cache.reorder(row_beams)
        return out

    def _log_probs(self, logits: Tensor, eos: int, ending: Tensor, forbid: Tensor | None) -> Tensor:
        """The unfused step on logits (N, V), rows = sentences x K: the logits processors and the
        target prefix, log_softmax, EOS (``eos``: its column) forbidden where ``forbid`` (before
        min_length), only EOS, with its own log-probability, where ``ending`` (at max length,
        min_length or not).  With a shortlist the logits are over vocab_ids: the prefix's and the
        history's tokens are mapped to their columns."""
        K, opts, local = self.K, self.opts, self._local
        if opts.processed:
            lengths = self.t.repeat_interleave(K)
            if opts.repetition_penalty != 1.0 or opts.no_repeat_ngram_size:
                logits = _process_logits(logits, self.history.view(len(logits), -1), lengths, opts, local)
            if len(self.prefix):
                logits = _force_prefix(logits, lengths, self.prefix if local is None else local[self.prefix])
        lprobs = torch.log_softmax(logits, dim=-1)
        eos_lp = lprobs[:, eos].clone()
        rows_end = ending.repeat_interleave(K)
        if forbid is not None:
            lprobs[:, eos] = eos_lp.masked_fill(forbid.repeat_interleave(K), NEG_INF)
        if bool(rows_end.any()):
            lprobs.masked_fill_(rows_end.unsqueeze(1), NEG_INF)
            lprobs[:, eos] = torch.where(rows_end, eos_lp, lprobs[:, eos])
        return lprobs

    def _greedy(self, lprobs: Tensor, lse: Tensor | None, cmax: Tensor | None) -> list:
        """beam_size 1: the argmax (or a sampled) token of each sentence: lprobs (Nb, V)
        log-probabilities, or the raw logits with their ``lse`` and chunk maxima."""
        eos, opts = self.model.cfg.eos_id, self.opts
        if opts.sampling:
            gens = None if opts.sampling_seed is None else [s.gen for s in self.sentences]
            best, tokens = _sample(lprobs, opts, gens, self._cols if self.shortlist is not None else None)
        else:
            best, tokens = row_max(lprobs, cmax)
            best = best if lse is None else best - lse
        if self.vocab_ids is not None:  # (columns -> vocabulary ids)
            tokens = self.vocab_ids[tokens]
        Nb = len(self.sentences)
        self.scores = self.scores + best.unsqueeze(1)
        t = self.t
        self._grow_history(t)
        self.history[torch.arange(Nb, device=self.device), 0, t] = tokens
        t_list, done, out = t.tolist(), [], []
        scores = self.scores[:, 0].tolist()
        for r, end in enumerate((tokens == eos).tolist()):
            if end or self.sentences[r].max_len - 1 <= t_list[r]:
                n = t_list[r] if end else t_list[r] + 1  # tokens without EOS
                lp = length_penalty(t_list[r] + 1, opts.length_penalty)
                out.append((self.sentences[r].key, [Hypothesis(self.history[r, 0, :n].tolist(), scores[r] / lp)]))
                done.append(r)
        self.tokens = tokens
        self.t = t + 1
        if done:
            self._keep([r for r in range(Nb) if r not in set(done)])
        return out

    def _grow_history(self, t: Tensor) -> None:
        width = int(t.max()) + 1
        if width > self.history.shape[2]:
            B, K, w = self.history.shape
            self.history = torch.cat([self.history, self.history.new_zeros(B, K, max(width, 2 * w) - w)], 2)

    def _gather_draws(self, done: list[tuple[Hashable, list[Hypothesis]]]) -> list[tuple[Hashable, list[Hypothesis]]]:
        """Sampling n: a sentence is done when its n draws are, with them best first."""
        out = []
        for key, hyps in done:
            draw = cast(_Draw, key)  # (with draws, every running sentence is a _Draw)
            got = self.drawn.get(draw.key)
            if got is None:  # (cancelled)
                continue
            got.extend(hyps)
            if len(got) == self.draws:
                del self.drawn[draw.key]
                out.append((draw.key, sorted(got, key=lambda h: -h.score)))
        return out

    # -- joining and leaving ----------------------------------------------------------------------
    def _keep(self, kept: list[int], row_beams: Tensor | None = None) -> None:
        """Keep these sentences (cache order); ``row_beams`` (B * K,): the rows' sources this step
        (one gather both follows the beams and drops the others)."""
        K = self.K
        idx = torch.tensor(kept, dtype=torch.long, device=self.device)
        rows = row_beams if row_beams is not None else torch.arange(len(self.sentences) * K, device=self.device)
        self.cache.select(rows.view(-1, K).index_select(0, idx).view(-1))
        self.sentences = [self.sentences[r] for r in kept]
        if self._blocked is not None and not self._stale:  # (the projection stays: it holds the kept sentences' candidates)
            self._blocked = self._blocked[idx]
            self._cols = [self._cols[r] for r in kept]
        self.scores, self.history, self.t = self.scores[idx], self.history[idx], self.t[idx]
        self.max_lens = self.max_lens[idx]
        self.tokens = self.tokens.view(-1, K).index_select(0, idx).view(-1)

    def _leave_cancelled(self) -> None:
        if not self.cancelled:
            return
        gone = self.cancelled
        self.cancelled = set()
        kept = [r for r, s in enumerate(self.sentences) if s.key not in gone]
        if len(kept) < len(self.sentences):
            self._keep(kept)

    def _join_pending(self) -> None:
        if not self.pending:
            return
        items = list(self.pending.items())
        self.pending = {}
        cfg, K, opts, dev = self.model.cfg, self.K, self.opts, self.device
        for group in encoder_buckets([len(src) for _, src in items]):
            batch = [items[i] for i in group]
            width = max(len(src) for _, src in batch)
            src = torch.full((len(batch), width), cfg.pad_id, dtype=torch.long)
            for r, (_, ids) in enumerate(batch):
                src[r, : len(ids)] = torch.tensor(ids)
            src = src.to(dev)
            m_list = max_output_lengths([len(ids) for _, ids in batch], opts)
            try:
                mem, mem_mask = self.model.encode(src)
                cross = self.model.cross_states(mem)
            except Exception as e:  # only these sentences fail; the running ones go on
                self.failed.extend((key, e) for key, _ in batch)
                continue
            self.cache.join(cross, mem_mask, max(m_list))
            b = len(batch)
            self._stale = True
            for (key, ids), m in zip(batch, m_list):
                s = _Sentence(key, m, length_penalty(m, opts.length_penalty))
                if self.shortlist is not None:  # (the target prefix must stay possible)
                    s.candidates = self.shortlist.candidates([*ids, *opts.target_prefix])
                if opts.sampling and opts.sampling_seed is not None:  # draw j of a sentence: seed + j
                    s.gen = torch.Generator(device=dev).manual_seed(opts.sampling_seed + (key.j if isinstance(key, _Draw) else 0))
                self.sentences.append(s)
            first = torch.full((b, K), NEG_INF, device=dev)
            first[:, 0] = 0.0  # one live beam: the first step expands it (the others' rows are copies)
            self.scores = torch.cat([self.scores, first])
            self.history = torch.cat([self.history, self.history.new_zeros(b, K, self.history.shape[2])])
            self.t = torch.cat([self.t, self.t.new_zeros(b)])
            self.max_lens = torch.cat([self.max_lens, torch.tensor(m_list, dtype=torch.long, device=dev)])
            self.tokens = torch.cat([self.tokens, torch.full((b * K,), cfg.bos_id, dtype=torch.long, device=dev)])


def generate_ids(
    model: Seq2Seq,
    sources: list[list[int]],
    opts: TranslationOptions,
    max_batch_tokens: int = 16384,
    stats: SearchStats | None = None,
) -> list[list[Hypothesis]]:
    """Every sentence (token ids, unpadded) through one search, stepped until it is idle: sentences
    join, shortest first, while the running ones hold at most ``max_batch_tokens`` source tokens x
    beams (at least one at a time).  n-best per source, in input order.  ``stats``, when given,
    gets the decoding steps run and the cache's largest size."""
    draws = opts.draws
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]), reverse=True)  # (popped from the end)
    cost = [len(s) * opts.beam_size * draws for s in sources]
    # the cache's storage, reserved once: as many sentences as the first fill admits (later ones
    # take the places of those that finish), as many positions as the longest may take
    first, budget = 0, 0
    for i in reversed(order):
        if first and budget + cost[i] > max_batch_tokens:
            break
        first, budget = first + 1, budget + cost[i]
    positions = max(max_output_lengths([len(s) for s in sources], opts), default=0)
    search = BeamSearch(model, opts, capacity=max(first, 1), positions=positions)
    results: list[list[Hypothesis]] = [[] for _ in sources]
    running, kv_bytes = 0, 0
    while order or not search.idle:
        while order and (running == 0 or running + cost[order[-1]] <= max_batch_tokens):
            i = order.pop()
            search.add(i, sources[i])
            running += cost[i]
        for key, hyps in search.step():
            i = cast(int, key)  # (the sentences' keys here are their indices)
            results[i] = hyps
            running -= cost[i]
        if search.failed:
            raise search.failed[0][1]
        kv_bytes = max(kv_bytes, search.cache.nbytes())
    if stats is not None:
        stats.add(SearchStats(search.decode_steps, kv_bytes))
    return results
