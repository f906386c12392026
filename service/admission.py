"""Admission: what a request will cost, refused at once when it cannot be served in time.

Work unit (translation): a decoding step of a sentence of ``s`` source tokens searched with
``beam`` rows costs ``max(s, 32) x beam`` units (a step has a part that does not grow with the
source: the decoder layers and the output layer), so a sentence that runs ``L`` steps costs
``max(s, 32) x beam x L`` units.  Embeddings cost ``tokens`` units (one encoder pass, no search).

* ``check_alone`` (the worst case): every hypothesis decoding to its length limit
  (``max_output_lengths``: the request's ``max_length`` or 2.0 x source + 10, whichever is
  smaller) at ``RENDITION_DECODE_UNIT_S`` seconds per unit, measured with EOS forbidden
  (``benchmarks/bench_admission.py``, ``docs/reliability.md``).  A request whose worst case
  *alone* exceeds ``RENDITION_REQUEST_TIMEOUT_S`` can never be sure to finish before its 504: a
  422 naming the limit and the estimate, before any work.
* ``Ledger`` (what the work really costs): each admitted sentence holds its *expected* units,
  ``max(s, 32) x beam x E`` with ``E = min(limit, margin x ratio x s)``, where ``ratio`` is the
  output/source ratio measured per language pair on the sentences finished so far, counted in the
  decoding steps each took part in (``OutputRatio``, starting at ``RENDITION_OUTPUT_RATIO``), and
  ``margin`` is ``OUTPUT_MARGIN``.
  A sentence's units leave the ledger the moment the search finishes it (the scheduler reports
  each sentence; ``Admitted.finished``).  The ledger's seconds are its units x the measured
  service rate (``ServiceRate``: wall seconds per unit over the decoding steps run while the
  translator is busy, starting at ``RENDITION_SERVICE_UNIT_S``), so a change of rate revalues the
  whole ledger.  While those seconds fill ``BUDGET_SHARE`` of the request timeout (the rest is
  left for the estimate's error), new work would only wait behind it into a 504, so ``Gate`` (a pure ASGI check run before the body is read) and ``Ledger.admit``
  answer 429 with ``Retry-After`` at once.

Inputs that tokenize to nothing usable are refused here too (``check_usable``): a text whose
pieces are all ``<unk>`` (or that has none) has no translation and no meaningful embedding.
Whether a tokenizer covers every script is read from it (``has_byte_fallback``): with SentencePiece
``byte_fallback`` unknown characters become byte pieces and nothing is ``<unk>``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from rendition.model.tokenizer import UNK_ID, Tokenizer
from rendition.model.translation.scheduler import MIN_SOURCE_TOKENS
from rendition.service.errors import APIError, invalid
from rendition.service.settings import Settings

UNSUPPORTED_SHARE = 0.5  # without byte fallback: a text with more <unk> pieces than this is refused
OUTPUT_MARGIN = 1.1  # a sentence is expected to run up to this x the measured steps per source token
RATIO_WEIGHT_TOKENS = 10000  # source tokens of finished sentences over which the measured ratio moves by ~63%
RATE_WEIGHT_UNITS = 131_072  # units of busy decoding steps over which the measured rate moves by ~63% (8-16 steps)
RATE_SAMPLE_RANGE = 2.0  # one step's rate counts as at most this x, at least 1 / this x the average (a stall is no trend)
BUDGET_SHARE = 0.75  # the ledger admits expected work up to this share of the request timeout (the rest: estimate error)
Pair = tuple[str, str]


def translation_units(src_lens: Sequence[int], beam: int, out_limits: Sequence[int]) -> int:
    """source tokens (counted as at least MIN_SOURCE_TOKENS) x beam x output tokens, summed over the sentences."""
    return sum(max(s, MIN_SOURCE_TOKENS) * beam * n for s, n in zip(src_lens, out_limits))


def embedding_units(src_lens: Sequence[int]) -> int:
    return sum(src_lens)


def estimate_seconds(units: int, settings: Settings) -> float:
    return units * settings.decode_unit_s


def check_alone(units: int, settings: Settings, what: str = "this request") -> float:
    """The worst-case estimate in seconds; a 422 naming the timeout when it alone would exceed it."""
    seconds = estimate_seconds(units, settings)
    if seconds > settings.request_timeout_s:
        raise APIError(
            422,
            f"{what} is too costly to finish within the request timeout of {settings.request_timeout_s:g} s "
            f"(RENDITION_REQUEST_TIMEOUT_S): {units:,} units (source tokens x beam x max output tokens) x "
            f"{settings.decode_unit_s:g} s (RENDITION_DECODE_UNIT_S) = {seconds:.1f} s; send fewer or shorter "
            "texts, a smaller beam_size or a smaller max_length",
            kind="request_too_costly",
        )
    return seconds


class ServiceRate:
    """Wall seconds per unit of translation work while the translator is busy: a moving average
    over the decoding steps that compute at least ``busy_units`` (a lightly loaded step costs more
    per unit, and the rate matters only when work queues up), each step's wall period (since the
    worker's previous step: what runs between steps and the waits for a core count too) over its
    units, weighted by its units, divided by the workers that step side by side, each step's rate
    clamped to ``RATE_SAMPLE_RANGE`` of the average.  ``step`` is called from the workers' threads
    (a float assignment: a lost update only delays the average)."""

    def __init__(self, start_s: float, busy_units: int = 0, workers: int = 1):
        self.value = start_s
        self.busy_units = busy_units
        self.workers = workers
        self.steps = 0  # busy steps measured

    def step(self, units: int, seconds: float) -> None:
        if units <= 0 or units < self.busy_units:
            return
        weight = min(1.0, units / RATE_WEIGHT_UNITS)
        sample = min(max(seconds / units / self.workers, self.value / RATE_SAMPLE_RANGE), self.value * RATE_SAMPLE_RANGE)
        self.value += weight * (sample - self.value)
        self.steps += 1


class OutputRatio:
    """Decoding steps per source token of one language pair's finished sentences (the output a
    sentence costs: its tokens, EOS, and the steps the search runs on until no live beam can beat
    its best hypothesis): a moving average weighted by source tokens (so it estimates the total
    work of many sentences)."""

    def __init__(self, start: float):
        self.value = start
        self.sentences = 0

    def observe(self, source_tokens: int, steps: int) -> None:
        if source_tokens <= 0:
            return
        weight = min(1.0, source_tokens / RATIO_WEIGHT_TOKENS)
        self.value += weight * (steps / source_tokens - self.value)
        self.sentences += 1


class Ledger:
    """Expected units of admitted, unfinished translation work (valued at the measured service
    rate), and per model the requests past the gate and their mean sentence count (one per app;
    event-loop only: the scheduler's reports reach it through the loop)."""

    def __init__(self, timeout_s: float, rate: ServiceRate | None = None, start_ratio: float = 1.0,
                 on_ratio: Callable[[Pair, OutputRatio], None] | None = None):  # fmt: skip
        self.budget_s = BUDGET_SHARE * timeout_s
        self.rate = rate or ServiceRate(4e-5)
        self.in_flight_units = 0
        self.ratios: dict[Pair, OutputRatio] = defaultdict(lambda: OutputRatio(start_ratio))
        self.on_ratio = on_ratio  # (a pair's first measured sentence: the Prometheus gauge reads its ratio from then on)
        self.requests: dict[str, int] = defaultdict(int)  # past the gate, not answered yet
        self.sentences: dict[str, float] = defaultdict(lambda: 1.0)  # running mean per request
        self.entries = 0  # translation requests holding units (``Admitted``)
        self.request_units = 0.0  # running mean of an admitted translation request's units

    @property
    def in_flight_s(self) -> float:
        return self.in_flight_units * self.rate.value

    def observe(self, model: str, sentences: int) -> None:
        self.sentences[model] = 0.8 * self.sentences[model] + 0.2 * sentences

    def crowded(self, model: str, max_queue: int, max_batch: int) -> bool:
        """The requests already past the gate would fill the queue and the running batch: a burst
        is shed here, before each of its requests is parsed only to find the queue full."""
        per_request = min(self.sentences[model], max_queue / 2)  # (larger requests are queued in halves)
        return self.requests[model] * per_request >= max_queue + max_batch

    def expected_s(self, pending: int = 0) -> float:
        """Seconds of the work in flight and of ``pending`` requests past the gate and not admitted
        yet, at the mean admitted request's units."""
        return (self.in_flight_units + pending * self.request_units) * self.rate.value

    def full(self, pending: int = 0) -> bool:
        """``expected_s(pending)`` fills the budget (in a burst, the gate refuses what admission would)."""
        return self.expected_s(pending) >= self.budget_s

    def pending(self, model: str) -> int:
        """Translation requests past the gate that hold no units yet (parsing, tokenizing)."""
        return max(0, self.requests[model] - self.entries)

    def retry_after(self, seconds: float) -> int:
        return max(1, math.ceil(min(seconds, self.budget_s) / 2))

    def overloaded(self, pending: int = 0) -> APIError:
        """The 429 for work that would overflow the budget (``pending``: see ``expected_s``)."""
        seconds = self.expected_s(pending)
        retry = self.retry_after(seconds)
        where = f"in flight and in {pending} requests being read" if pending else "in flight"
        return APIError(
            429,
            f"the server has {seconds:.1f} s of expected work {where} (the limit is {self.budget_s:g} s, "
            f"{BUDGET_SHARE:g} of the request timeout, RENDITION_REQUEST_TIMEOUT_S); retry in {retry} s",
            kind="overloaded",
            headers={"Retry-After": str(retry)},
        )

    def expected_lengths(self, src_lens: Sequence[int], out_limits: Sequence[int], pair: Pair) -> list[int]:
        """Per sentence the output steps expected: ``OUTPUT_MARGIN`` x the pair's measured ratio x
        its source tokens, at most its limit."""
        ratio = OUTPUT_MARGIN * self.ratios[pair].value
        return [max(1, min(n, math.ceil(ratio * s))) for s, n in zip(src_lens, out_limits)]

    def admit(self, src_lens: Sequence[int], rows: int, out_limits: Sequence[int], pair: Pair) -> Admitted:
        """The entry of a request's sentences; 429 when their expected seconds would overflow the
        budget (a request is always admitted when nothing else is in flight, as check_alone has
        passed).  Hold it with ``with``: its units count from entering to leaving, less each
        sentence ``finished`` on the way."""
        lengths = self.expected_lengths(src_lens, out_limits, pair)
        units = [max(s, MIN_SOURCE_TOKENS) * rows * n for s, n in zip(src_lens, lengths)]
        if self.in_flight_units > 0 and self.in_flight_s + sum(units) * self.rate.value > self.budget_s:
            raise self.overloaded()
        self.request_units = 0.8 * self.request_units + 0.2 * sum(units) if self.request_units else float(sum(units))
        return Admitted(self, units, list(src_lens), pair)

    def measured(self, pair: Pair, source_tokens: int, steps: int) -> None:
        ratio = self.ratios[pair]
        ratio.observe(source_tokens, steps)
        if ratio.sentences == 1 and self.on_ratio is not None:
            self.on_ratio(pair, ratio)


class Admitted:
    """One request's sentences in the ledger (``Ledger.admit``)."""

    def __init__(self, ledger: Ledger, units: list[int], src_lens: list[int], pair: Pair):
        self.ledger, self.units, self.src_lens, self.pair = ledger, units, src_lens, pair

    def __enter__(self) -> Callable[[int, int], None]:
        """Counts the units; gives ``finished``, for the queue's per-sentence reports."""
        self.ledger.in_flight_units += sum(self.units)
        self.ledger.entries += 1
        return self.finished

    def __exit__(self, *exc: object) -> None:
        self.ledger.in_flight_units -= sum(self.units)
        self.ledger.entries -= 1
        self.units = [0] * len(self.units)

    def finished(self, index: int, steps: int) -> None:
        """Sentence ``index`` is done after ``steps`` decoding steps: its units leave the ledger and
        its steps are measured."""
        if not self.units[index]:
            return
        self.ledger.in_flight_units -= self.units[index]
        self.units[index] = 0
        self.ledger.measured(self.pair, self.src_lens[index], steps)


def cosine(rows: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Cosine similarity of unit rows to a unit vector, clamped to [-1, 1] (float32 rounding gives
    1.0000001 for identical vectors)."""
    return np.clip(rows @ v, -1.0, 1.0)


# -- usable input --------------------------------------------------------------------------------


@lru_cache(maxsize=8)
def _vocab_facts(sp_id: int, sp: Any) -> tuple[bool, frozenset[int]]:  # noqa: ARG001 (sp_id keys the cache)
    """(byte fallback?, ids of pieces that are only the word-boundary mark "▁")."""
    n = sp.get_piece_size()
    return any(sp.is_byte(i) for i in range(n)), frozenset(i for i in range(n) if not sp.id_to_piece(i).strip("▁"))


def has_byte_fallback(tokenizer: Tokenizer) -> bool:
    """True when the SentencePiece model has byte pieces (``<0x00>``..``<0xFF>``, trained with
    ``byte_fallback``): then no character is ever ``<unk>``."""
    return _vocab_facts(id(tokenizer.sp), tokenizer.sp)[0]


def check_usable(tokenizer: Tokenizer, ids: Sequence[Sequence[int]], where: Sequence[str | list], texts: Sequence[str]) -> None:
    """422 for a text (its token ids, without language tag or </s>) with no usable tokens (only
    ``<unk>`` and bare word boundaries); without byte fallback, also for one whose pieces are
    mostly ``<unk>`` (a script the tokenizer does not cover), naming the characters it cannot read."""
    fallback, blank = _vocab_facts(id(tokenizer.sp), tokenizer.sp)
    for seq, loc, text in zip(ids, where, texts):
        unknown = seq.count(UNK_ID)
        known = len(seq) - unknown - sum(map(blank.__contains__, seq))  # (UNK_ID is not in blank)
        if not known:
            raise invalid(loc, "decodes to no usable tokens (nothing in it is in the model's vocabulary)", "no_usable_tokens")
        if not fallback and unknown > UNSUPPORTED_SHARE * (unknown + known):
            chars = sorted({c for c in text if not c.isspace() and UNK_ID in tokenizer.encode([c])[0]})[:10]
            raise invalid(
                loc,
                f"mostly in a script this model's tokenizer does not cover (no byte fallback): {''.join(chars)!r}",
                "unsupported_script",
            )
