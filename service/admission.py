"""Admission: what a request will cost, refused at once when it cannot be served in time.

Cost model (translation): a sentence of ``s`` source tokens searched with ``beam`` rows may run
for ``L`` output steps (``max_output_lengths``: the request's ``max_length`` or 2.0 x source + 10,
whichever is smaller), so its worst case is ``units = max(s, 32) x beam x L`` (a step has a part
that does not grow with the source: the decoder layers and the output layer) and its model time
``units x RENDITION_DECODE_UNIT_S``.  The unit time was measured with the shipped translator on
this machine (``benchmarks/admission.py``, ``docs/reliability.md``), forcing every hypothesis to
run to its length limit, so the estimate is an upper bound for real text (which usually ends
earlier).  Embeddings cost ``tokens x RENDITION_DECODE_UNIT_S`` (one encoder pass, no search).

* ``check_alone``: a request whose estimate *alone* exceeds ``RENDITION_REQUEST_TIMEOUT_S`` can
  never finish before its 504, so it gets a 422 naming the limit and the estimate, before any work.
* ``Ledger``: the estimated seconds of the work admitted and not yet finished.  While that is over
  the timeout, new work would only wait behind it into a 504, so ``Gate`` (a pure ASGI check run
  before the body is read) and ``Ledger.admit`` answer 429 with ``Retry-After`` at once.

Inputs that tokenize to nothing usable are refused here too (``check_usable``): a text whose
pieces are all ``<unk>`` (or that has none) has no translation and no meaningful embedding.
Whether a tokenizer covers every script is read from it (``has_byte_fallback``): with SentencePiece
``byte_fallback`` unknown characters become byte pieces and nothing is ``<unk>``.
"""

from __future__ import annotations

import contextlib
import math
from collections import defaultdict
from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from rendition.model.tokenizer import UNK_ID, Tokenizer
from rendition.service.errors import APIError, invalid
from rendition.service.settings import Settings

MIN_SOURCE_TOKENS = 32  # a decoding step has a cost that does not grow with the source (decoder, output layer)
UNSUPPORTED_SHARE = 0.5  # without byte fallback: a text with more <unk> pieces than this is refused


def translation_units(src_lens: Sequence[int], beam: int, out_limits: Sequence[int]) -> int:
    """source tokens (counted as at least MIN_SOURCE_TOKENS) x beam x max output tokens, summed over the sentences."""
    return sum(max(s, MIN_SOURCE_TOKENS) * beam * n for s, n in zip(src_lens, out_limits))


def embedding_units(src_lens: Sequence[int]) -> int:
    return sum(src_lens)


def estimate_seconds(units: int, settings: Settings) -> float:
    return units * settings.decode_unit_s


def check_alone(units: int, settings: Settings, what: str = "this request") -> float:
    """The estimate in seconds; a 422 naming the timeout when it alone would exceed it."""
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


class Ledger:
    """Estimated seconds of admitted, unfinished work, and per model the requests past the gate
    and their mean sentence count (one per app; event-loop only, no locks)."""

    def __init__(self, budget_s: float):
        self.budget_s = budget_s
        self.in_flight_s = 0.0
        self.requests: dict[str, int] = defaultdict(int)  # past the gate, not answered yet
        self.sentences: dict[str, float] = defaultdict(lambda: 1.0)  # running mean per request

    def observe(self, model: str, sentences: int) -> None:
        self.sentences[model] = 0.8 * self.sentences[model] + 0.2 * sentences

    def crowded(self, model: str, max_queue: int, max_batch: int) -> bool:
        """The requests already past the gate would fill the queue and the running batch: a burst
        is shed here, before each of its requests is parsed only to find the queue full."""
        per_request = min(self.sentences[model], max_queue / 2)  # (larger requests are queued in halves)
        return self.requests[model] * per_request >= max_queue + max_batch

    def full(self) -> bool:
        return self.in_flight_s >= self.budget_s

    def retry_after(self) -> int:
        return max(1, math.ceil(min(self.in_flight_s, self.budget_s) / 2))

    def overloaded(self) -> APIError:
        return APIError(
            429,
            f"the server has {self.in_flight_s:.1f} s of estimated work in flight (the limit is the request timeout, "
            f"{self.budget_s:g} s, RENDITION_REQUEST_TIMEOUT_S); retry in {self.retry_after()} s",
            kind="overloaded",
            headers={"Retry-After": str(self.retry_after())},
        )

    @contextlib.contextmanager
    def admit(self, seconds: float) -> Iterator[None]:
        """Hold ``seconds`` of the budget while the block runs; 429 when it would overflow (a request
        is always admitted when nothing else is in flight, as check_alone has passed)."""
        if self.in_flight_s > 0 and self.in_flight_s + seconds > self.budget_s:
            raise self.overloaded()
        self.in_flight_s += seconds
        try:
            yield
        finally:
            self.in_flight_s = max(0.0, self.in_flight_s - seconds)


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
        unknown = sum(i == UNK_ID for i in seq)
        known = sum(i != UNK_ID and i not in blank for i in seq)
        if not known:
            raise invalid(loc, "decodes to no usable tokens (nothing in it is in the model's vocabulary)", "no_usable_tokens")
        if not fallback and unknown > UNSUPPORTED_SHARE * (unknown + known):
            chars = sorted({c for c in text if not c.isspace() and UNK_ID in tokenizer.encode([c])[0]})[:10]
            raise invalid(
                loc,
                f"mostly in a script this model's tokenizer does not cover (no byte fallback): {''.join(chars)!r}",
                "unsupported_script",
            )
