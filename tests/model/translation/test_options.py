"""``TranslationOptions`` (``rendition.model.translation.options``): every value out of range, and every pair
of options that do not go together, is refused when the options are made, with an
``InvalidOption`` (a ValueError) naming the option; legitimate options are kept as given."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from rendition.model.translation.options import InvalidOption, SearchStats, TranslationOptions


@pytest.mark.parametrize(
    ("values", "field", "needle"),
    [
        ({"beam_size": 0}, "beam_size", "beam_size must be >= 1, not 0"),
        ({"beam_size": 2.5}, "beam_size", "must be an integer"),
        ({"beam_size": True}, "beam_size", "must be an integer"),
        ({"num_hypotheses": 0}, "num_hypotheses", ">= 1"),
        ({"beam_size": 2, "num_hypotheses": 3}, "num_hypotheses", "num_hypotheses 3 is larger than beam_size 2"),
        ({"length_penalty": -0.5}, "length_penalty", "length_penalty must be >= 0"),
        ({"length_penalty": math.nan}, "length_penalty", "finite number"),
        ({"length_penalty": math.inf}, "length_penalty", "finite number"),
        ({"length_penalty": "1"}, "length_penalty", "finite number"),
        ({"max_length": 0}, "max_length", "max_length must be >= 1"),
        ({"max_length_a": -1.0}, "max_length_a", ">= 0"),
        ({"max_length_b": -1}, "max_length_b", ">= 0"),
        ({"min_length": -1}, "min_length", ">= 0"),
        ({"min_length": 10, "max_length": 10}, "min_length", "min_length 10 must be below max_length 10"),
        ({"repetition_penalty": 0.0}, "repetition_penalty", "repetition_penalty must be > 0"),
        ({"repetition_penalty": -1.0}, "repetition_penalty", "> 0"),
        ({"no_repeat_ngram_size": -1}, "no_repeat_ngram_size", ">= 0"),
        ({"sampling_topk": -1}, "sampling_topk", ">= 0"),
        ({"beam_size": 1, "sampling_topk": 5, "sampling_temperature": 0.0}, "sampling_temperature", "> 0"),
        ({"beam_size": 4, "sampling_topk": 5}, "beam_size", "needs beam_size 1, not 4"),
        ({"beam_size": 1, "sampling_topk": 0, "sampling_seed": 1.5}, "sampling_seed", "integer or None"),
        ({"target_prefix": (5, -1)}, "target_prefix", "token ids"),
        ({"target_prefix": (5, 6, 7), "max_length": 4}, "target_prefix", "at most 2"),
        ({"kv_cache_dtype": torch.int8}, "kv_cache_dtype", "kv_cache_dtype"),
    ],
)
def test_each_bad_value_is_refused_naming_its_option(values: dict, field: str, needle: str) -> None:
    with pytest.raises(InvalidOption, match=needle) as e:
        TranslationOptions(**values)
    assert isinstance(e.value, ValueError) and e.value.field == field
    assert e.value.kind  # (the service's error type)


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"beam_size": 1, "num_hypotheses": 1, "min_length": 0, "max_length": 1},
        {"beam_size": 5, "num_hypotheses": 5, "length_penalty": 0.0, "max_length_a": 0.0, "max_length_b": 0},
        {"beam_size": 1, "sampling_topk": 0, "sampling_temperature": 0.5, "num_hypotheses": 7, "sampling_seed": 3},
        {"target_prefix": (5, 6), "max_length": 4, "repetition_penalty": 0.5, "no_repeat_ngram_size": 3},
        {"kv_cache_dtype": torch.float16, "min_length": 255},
    ],
)
def test_legitimate_options_are_kept_as_given(values: dict) -> None:
    opts = TranslationOptions(**values)
    assert {k: getattr(opts, k) for k in values} == values


def test_options_are_frozen_hashable_and_a_search_key() -> None:
    a, b = TranslationOptions(beam_size=2), TranslationOptions(beam_size=2)
    assert a == b and hash(a) == hash(b) and len({a, b, TranslationOptions(beam_size=3)}) == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.beam_size = 5  # type: ignore[misc]
    assert TranslationOptions(target_prefix=[4, 5]).target_prefix == (4, 5)  # (a list is stored as a tuple)
    # replace() checks again
    with pytest.raises(InvalidOption, match="beam_size"):
        dataclasses.replace(a, beam_size=0)


def test_rows_and_flags() -> None:
    assert TranslationOptions(beam_size=4, num_hypotheses=2).rows == 4
    sampled = TranslationOptions(beam_size=1, sampling_topk=3, num_hypotheses=6)
    assert sampled.sampling and sampled.rows == 6
    assert not TranslationOptions().processed and TranslationOptions(no_repeat_ngram_size=2).processed


def test_search_stats_add_sums_steps_and_keeps_the_largest_cache() -> None:
    s = SearchStats(3, 100)
    s.add(SearchStats(4, 50))
    assert s == SearchStats(7, 100)
