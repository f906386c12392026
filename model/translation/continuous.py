"""Continuous (in-flight) batching for beam search: sentences join a running search at the next
decoding step and leave it as soon as they are done.

vLLM and TGI schedule decoder-only generation this way; here it is the encoder-decoder beam
search of ``model.translation.search.generate``, with the same rules (GNMT length penalty,
absolute and source-relative max length, min length, n-best, the exact stopping bound), run by a
search that never ends:

    search = ContinuousBeamSearch(backend, SearchOptions(beam_size=4))
    search.add("a", ids_a)            # waits for the next step
    done = search.step()              # one decoding step: [(key, hypotheses)] of the sentences done now
    search.add("b", ids_b)            # encoded and joined at the next step, next to "a"'s beams
    search.cancel("a")                # its beams leave at the next step

``beam_size`` 1 is greedy search (``search.greedy``'s rule: the argmax token, done at EOS).
Each sentence is a group of ``beam_size`` rows of a ``CachePool`` (``model.translation.cache_pool``)
at its own step: it starts with one live beam (the others at -inf, so the first step expands it
as ``generate`` does), and its result does not depend on which sentences share its steps (the
tests compare joined searches with searches alone).  Options that change the logits (CTranslate2's
processors, a target prefix) and sampling keep ``generate``: ``supports(opts)`` says which.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Protocol

import torch
from torch import Tensor

from model.translation.cache_pool import CachePool
from model.translation.search import (
    NEG_INF,
    Hypothesis,
    SearchOptions,
    Seq2Seq,
    _chunk_size,
    _max_lengths,
    beam_step,
    length_penalty,
    lse_chunk_max,
    row_max,
)


class PoolSeq2Seq(Seq2Seq, Protocol):
    """What the continuous search drives: a back end (``model.translation.backends``)."""

    def new_pool(self, beams: int, kv_dtype: torch.dtype | None = None) -> CachePool: ...

    device: torch.device

    def cross_states(self, mem: Tensor) -> list: ...


@dataclass(eq=False)
class _Sentence:
    key: Hashable
    source_len: int
    max_len: int  # most tokens it may generate, EOS included
    lp_max: float  # length penalty at max_len: bounds what a live beam can still reach
    finished: list[Hypothesis] = field(default_factory=list)


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


class ContinuousBeamSearch:
    """A beam search over a changing set of sentences, one decoding step per ``step()`` call
    (one thread drives it; see ``model.translation.scheduler`` for the workers that do)."""

    def __init__(self, model: PoolSeq2Seq, opts: SearchOptions, capacity: int = 16):
        """``capacity``: how many sentences may run at once (the pool reserves their storage)."""
        opts.validate()
        if not self.supports(opts):
            raise ValueError("the continuous search runs beam search and greedy search without logits processors or sampling")
        self.model, self.opts = model, opts
        self.K = opts.beam_size
        self.pool = model.new_pool(self.K, opts.kv_cache_dtype)
        self.pool.reserve(capacity)
        self.device = dev = model.device
        self.sentences: list[_Sentence] = []  # live, in pool order
        self.scores = torch.zeros(0, self.K, device=dev)  # (B, K) running log-probabilities
        self.history = torch.zeros(0, self.K, 0, dtype=torch.long, device=dev)  # (B, K, width) tokens so far
        self.t = torch.zeros(0, dtype=torch.long, device=dev)  # (B,) each sentence's step
        self.tokens = torch.zeros(0, dtype=torch.long, device=dev)  # (B * K,) the next step's input tokens
        self.pending: dict[Hashable, list[int]] = {}  # added, joining at the next step
        self.cancelled: set[Hashable] = set()
        self.failed: list[tuple[Hashable, Exception]] = []  # sentences whose encoder pass raised (they never joined)
        self.decode_steps = 0

    @staticmethod
    def supports(opts: SearchOptions) -> bool:
        return not opts.processed and not opts.sampling

    # -- the caller's side ------------------------------------------------------------------------
    def add(self, key: Hashable, source: list[int]) -> None:
        """Queue a sentence (token ids with the target tag and </s>) to join at the next step."""
        if key in self.pending or any(s.key == key for s in self.sentences):
            raise ValueError(f"sentence {key!r} is already in the search")
        self.pending[key] = source

    def cancel(self, key: Hashable) -> None:
        """Drop a sentence: at once if it has not joined yet, else its beams leave at the next step."""
        if self.pending.pop(key, None) is None:
            self.cancelled.add(key)

    @property
    def live(self) -> int:
        """Sentences in the search (joined, not done)."""
        return len(self.sentences)

    @property
    def idle(self) -> bool:
        return not self.sentences and not self.pending

    def reserved_positions(self) -> int:
        """Cache positions the live sentences may fill (beams x max length each)."""
        return self.K * sum(s.max_len for s in self.sentences)

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
        K, opts, eos = self.K, self.opts, self.model.cfg.eos_id
        Nb = len(self.sentences)
        logits = self.model.decode_step(self.tokens, self.pool).float()  # (Nb * K, V)
        self.decode_steps += 1
        V = logits.shape[-1]
        t = self.t
        max_lens = torch.tensor([s.max_len for s in self.sentences], device=self.device)
        ending = max_lens - 1 == t  # (Nb,) sentences at their max length: EOS only
        forbid = t < opts.min_length  # (Nb,) EOS forbidden
        C = _chunk_size(V, 2 * K)
        if C is None or bool(ending.any()):
            lprobs, lse, cmax = self._log_probs(logits, ending, forbid).view(Nb, K, V), None, None
        else:  # scores + log_softmax(logits) = (scores - lse) + logits, without the normalised table
            lse, cmax = self._lse_chunk_max(logits, C, forbid)
            lprobs = logits.view(Nb, K, V)
        if K == 1:
            return self._greedy(lprobs.view(Nb, V), lse, cmax, ending)
        if lse is None:
            cand_scores, cand_tokens, cand_beams = beam_step(lprobs, self.scores, 2 * K)
        else:
            cand_scores, cand_tokens, cand_beams = beam_step(lprobs, self.scores - lse.view(Nb, K), 2 * K, cmax.view(Nb, K, -1))

        # Finish EOS candidates that rank within the top K.
        is_eos = (cand_tokens == eos) & torch.isfinite(cand_scores)
        eos_top = is_eos[:, :K]
        t_list = t.tolist()
        if bool(eos_top.any()):
            for r, c in eos_top.nonzero().tolist():
                s = self.sentences[r]
                prefix = self.history[r, int(cand_beams[r, c]), : t_list[r]].tolist()
                lp = float(length_penalty(t_list[r] + 1, opts.length_penalty))
                s.finished.append(Hypothesis(prefix, float(cand_scores[r, c]) / lp))
                s.finished.sort(key=lambda h: -h.score)

        # Continue with the K best non-EOS candidates.
        rank = torch.arange(2 * K, device=self.device).expand_as(cand_scores) + is_eos.long() * (2 * K)
        keep = rank.topk(K, dim=-1, largest=False).indices  # (Nb, K)
        self.scores = cand_scores.gather(1, keep)
        next_tokens = cand_tokens.gather(1, keep)
        beams = cand_beams.gather(1, keep)
        width = int(t.max()) + 1
        if width > self.history.shape[2]:
            self.history = torch.cat([self.history, self.history.new_zeros(Nb, K, width - self.history.shape[2])], 2)
        self.history = self.history.gather(1, beams.unsqueeze(-1).expand_as(self.history))
        self.history[torch.arange(Nb, device=self.device), :, t] = next_tokens

        # Which sentences are done?
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
        if done:
            self._keep([r for r in range(Nb) if r not in set(done)], row_beams)
        else:
            self.pool.reorder(row_beams)
        return out

    def _log_probs(self, logits: Tensor, ending: Tensor, forbid: Tensor) -> Tensor:
        """log_softmax of logits (N, V), rows = sentences x K: EOS forbidden where ``forbid`` (before
        min_length), only EOS, with its own log-probability, where ``ending`` (at max length)."""
        eos, K = self.model.cfg.eos_id, self.K
        lprobs = torch.log_softmax(logits, dim=-1)
        eos_lp = lprobs[:, eos].clone()
        rows_end = ending.repeat_interleave(K)
        lprobs[:, eos] = eos_lp.masked_fill(forbid.repeat_interleave(K), NEG_INF)
        lprobs.masked_fill_(rows_end.unsqueeze(1), NEG_INF)
        lprobs[:, eos] = torch.where(rows_end, eos_lp, lprobs[:, eos])  # (min_length or not)
        return lprobs

    def _lse_chunk_max(self, logits: Tensor, C: int, forbid: Tensor) -> tuple[Tensor, Tensor]:
        """``lse_chunk_max`` of logits (N, V); then EOS set to -inf in the rows of sentences that
        ``forbid`` it (the normaliser still counts it, as log_softmax then -inf does)."""
        eos = self.model.cfg.eos_id
        lse, cmax = lse_chunk_max(logits, C)
        if bool(forbid.any()):
            rows = forbid.repeat_interleave(self.K)
            logits[rows, eos] = NEG_INF
            c = eos // C
            cmax[rows, c] = logits[rows, c * C : (c + 1) * C].amax(-1)
        return lse, cmax

    def _greedy(self, lprobs: Tensor, lse: Tensor | None, cmax: Tensor | None, ending: Tensor) -> list:
        """beam_size 1: the argmax token of each sentence (``search.greedy``'s rule): lprobs (Nb, V)
        log-probabilities, or the raw logits with their ``lse`` and chunk maxima."""
        eos, opts = self.model.cfg.eos_id, self.opts
        if lse is None:
            best, tokens = row_max(lprobs)
        else:
            best, tokens = row_max(lprobs, cmax)
            best = best - lse
        Nb = len(self.sentences)
        self.scores = self.scores + best.unsqueeze(1)
        t = self.t
        width = int(t.max()) + 1
        if width > self.history.shape[2]:
            self.history = torch.cat([self.history, self.history.new_zeros(Nb, 1, width - self.history.shape[2])], 2)
        self.history[torch.arange(Nb, device=self.device), 0, t] = tokens
        t_list, done, out = t.tolist(), [], []
        scores = self.scores[:, 0].tolist()
        for r, end in enumerate((tokens == eos).tolist()):
            if end or self.sentences[r].max_len - 1 <= t_list[r]:
                n = t_list[r] if end else t_list[r] + 1  # tokens without EOS
                lp = float(length_penalty(t_list[r] + 1, opts.length_penalty))
                out.append((self.sentences[r].key, [Hypothesis(self.history[r, 0, :n].tolist(), scores[r] / lp)]))
                done.append(r)
        self.tokens = tokens
        self.t = t + 1
        if done:
            self._keep([r for r in range(Nb) if r not in set(done)])
        return out

    # -- joining and leaving ----------------------------------------------------------------------
    def _keep(self, kept: list[int], row_beams: Tensor | None = None) -> None:
        """Keep these sentences (pool order); ``row_beams`` (B * K,): the rows' sources this step
        (one gather both follows the beams and drops the others)."""
        K = self.K
        idx = torch.tensor(kept, dtype=torch.long, device=self.device)
        rows = row_beams if row_beams is not None else torch.arange(len(self.sentences) * K, device=self.device)
        self.pool.select(rows.view(-1, K).index_select(0, idx).view(-1))
        self.sentences = [self.sentences[r] for r in kept]
        self.scores, self.history, self.t = self.scores[idx], self.history[idx], self.t[idx]
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
            max_lens = _max_lengths(torch.tensor([len(ids) for _, ids in batch]), opts).tolist()
            try:
                mem, mem_mask = self.model.encode(src)
                cross = self.model.cross_states(mem)
            except Exception as e:  # only these sentences fail; the running ones go on
                self.failed.extend((key, e) for key, _ in batch)
                continue
            self.pool.join(cross, mem_mask, max(max_lens))
            b = len(batch)
            for (key, ids), m in zip(batch, max_lens):
                lp_max = float(length_penalty(m, opts.length_penalty))
                self.sentences.append(_Sentence(key, len(ids), m, lp_max))
            first = torch.full((b, K), NEG_INF, device=dev)
            first[:, 0] = 0.0  # one live beam: the first step expands it (the others' rows are copies)
            self.scores = torch.cat([self.scores, first])
            self.history = torch.cat([self.history, self.history.new_zeros(b, K, self.history.shape[2])])
            self.t = torch.cat([self.t, self.t.new_zeros(b)])
            self.tokens = torch.cat([self.tokens, torch.full((b * K,), cfg.bos_id, dtype=torch.long, device=dev)])
