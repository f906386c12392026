"""What a translation asks of the search: one frozen ``TranslationOptions`` (CTranslate2's
``TranslationOptions`` is the model), checked once, when it is made.

    opts = TranslationOptions(beam_size=4, num_hypotheses=2, max_length=128)
    TranslationOptions(beam_size=0)   # InvalidOption (a ValueError): "beam_size must be >= 1, not 0"

Every caller builds its options here and nowhere else checks them: the library (``Translator``,
``generate_ids``, the scheduler), the command line and the service, which turns an
``InvalidOption`` into a 422 naming ``InvalidOption.field`` (its own deployment limits, such as
the largest beam it serves, are the service's, in ``rendition.service.translation``).  Being frozen and
hashable, the options are also the key that groups compatible sentences into one search.

What a search reports back (decoding steps, cache size) is not an option: it is ``SearchStats``,
filled by ``generate_ids`` and by the scheduler's tickets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeGuard

import torch

_KV_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


class InvalidOption(ValueError):
    """An option out of range, or two options that do not go together; ``field`` names the option
    to change, ``kind`` is a stable code for it (the service's error ``type``)."""

    def __init__(self, field: str, message: str, kind: str | None = None):
        super().__init__(message)
        self.field = field
        self.kind = kind or f"{field}_out_of_range"


@dataclass(frozen=True)
class TranslationOptions:
    """How to search; the defaults are the library's and CTranslate2's (at them the logits
    processors are off).  Lengths count generated tokens, EOS included."""

    beam_size: int = 4
    num_hypotheses: int = 1  # n-best per sentence (<= beam_size; with sampling: n independent draws)
    length_penalty: float = 1.0  # GNMT alpha; 0: raw log-probability
    max_length: int = 256  # absolute cap on generated tokens
    max_length_a: float = 2.0  # relative cap: a * source_len + b (source with the target tag and </s>; held-out references need up to 1.8)
    max_length_b: int = 10
    min_length: int = 0  # EOS is forbidden before this many tokens
    repetition_penalty: float = 1.0  # > 1: a generated token's logit is divided by it (multiplied if < 0)
    no_repeat_ngram_size: int = 0  # > 0: no n-gram of this size occurs twice in a hypothesis
    target_prefix: tuple[int, ...] = ()  # forced first tokens of every hypothesis (counted in its score)
    sampling_topk: int = 1  # 1: argmax; k > 1: sample from the k most likely tokens; 0: from all (beam_size 1)
    sampling_temperature: float = 1.0  # sampling: logits / temperature
    sampling_seed: int | None = None  # sampling: a seed for reproducible draws (None: random)
    kv_cache_dtype: torch.dtype | None = None  # self-attention K/V storage; None: the model's dtype

    def __post_init__(self) -> None:
        if isinstance(self.target_prefix, list):  # (a list is accepted; stored as a tuple, so the options hash)
            object.__setattr__(self, "target_prefix", tuple(self.target_prefix))
        _at_least("beam_size", self.beam_size, 1)
        _at_least("num_hypotheses", self.num_hypotheses, 1)
        _number("length_penalty", self.length_penalty, 0.0)
        _at_least("max_length", self.max_length, 1)
        _number("max_length_a", self.max_length_a, 0.0)
        _at_least("max_length_b", self.max_length_b, 0)
        _at_least("min_length", self.min_length, 0)
        _number("repetition_penalty", self.repetition_penalty, 0.0, strict=True)
        _at_least("no_repeat_ngram_size", self.no_repeat_ngram_size, 0)
        _at_least("sampling_topk", self.sampling_topk, 0)
        _number("sampling_temperature", self.sampling_temperature, 0.0, strict=True)
        if self.sampling_seed is not None and not _is_int(self.sampling_seed):
            raise InvalidOption("sampling_seed", f"sampling_seed must be an integer or None, not {self.sampling_seed!r}")
        if self.sampling and self.beam_size != 1:
            raise InvalidOption(
                "beam_size",
                f"sampling (sampling_topk {self.sampling_topk}) needs beam_size 1, not {self.beam_size}",
                "sampling_needs_greedy",
            )
        if not self.sampling and self.num_hypotheses > self.beam_size:
            raise InvalidOption(
                "num_hypotheses", f"num_hypotheses {self.num_hypotheses} is larger than beam_size {self.beam_size}"
            )
        if self.min_length >= self.max_length:
            raise InvalidOption("min_length", f"min_length {self.min_length} must be below max_length {self.max_length}")
        if not all(_is_int(t) and t >= 0 for t in self.target_prefix):
            raise InvalidOption("target_prefix", "target_prefix must be token ids (integers >= 0)")
        if self.target_prefix and len(self.target_prefix) > self.max_length - 2:
            raise InvalidOption(
                "target_prefix",
                f"target_prefix is {len(self.target_prefix)} tokens; it must be at most {max(0, self.max_length - 2)} "
                f"(max_length {self.max_length} less room for a token and </s>)",
            )
        if self.kv_cache_dtype is not None and self.kv_cache_dtype not in _KV_DTYPES:
            raise InvalidOption("kv_cache_dtype", f"kv_cache_dtype must be None or one of {_KV_DTYPES}, not {self.kv_cache_dtype!r}")

    @property
    def sampling(self) -> bool:
        return self.sampling_topk != 1

    @property
    def processed(self) -> bool:
        """Whether any option changes the logits (then the generic, unfused step runs)."""
        return self.repetition_penalty != 1.0 or self.no_repeat_ngram_size > 0 or bool(self.target_prefix)

    @property
    def draws(self) -> int:
        """Independent searches per sentence: its n draws when sampling n hypotheses, else one."""
        return self.num_hypotheses if self.sampling else 1

    @property
    def rows(self) -> int:
        """Cache rows a sentence takes: its beams, or its draws when sampling n hypotheses."""
        return self.num_hypotheses if self.sampling else self.beam_size


@dataclass
class SearchStats:
    """What searches report: decoding steps run and the largest size of their decoder cache."""

    decode_steps: int = 0
    kv_cache_bytes: int = 0

    def add(self, other: SearchStats) -> None:
        self.decode_steps += other.decode_steps
        self.kv_cache_bytes = max(self.kv_cache_bytes, other.kv_cache_bytes)


def _is_int(x: object) -> TypeGuard[int]:
    return isinstance(x, int) and not isinstance(x, bool)


def _at_least(name: str, value: object, low: int) -> None:
    if not _is_int(value):
        raise InvalidOption(name, f"{name} must be an integer, not {value!r}")
    if value < low:
        raise InvalidOption(name, f"{name} must be >= {low}, not {value}")


def _number(name: str, value: object, low: float, strict: bool = False) -> None:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        raise InvalidOption(name, f"{name} must be a finite number, not {value!r}")
    if value < low or (strict and value == low):
        raise InvalidOption(name, f"{name} must be {'>' if strict else '>='} {low:g}, not {value:g}")
