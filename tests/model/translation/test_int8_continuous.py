"""Continuous batching (``model.translation.search.BeamSearch``) and the step-level scheduler with the int8 compute type: a sentence that
joins a running search, or shares a worker's search with others, gets the result it gets alone (each
row's activations are quantised on their own, so a row's result does not depend on its neighbours)."""

from __future__ import annotations

import pytest
import torch
from test_continuous import (  # (on sys.path)
    alone,
    assert_same,
    check_joining_mid_flight,
    random_model,
    random_sources,
    scheduled_in_tickets,
)

from rendition.model.kernels import fused_cpu, native
from rendition.model.translation.backends import FusedCPUBackend, select_backend
from rendition.model.translation.options import TranslationOptions


def int8_backend(rel: str = "kv", seed: int = 0) -> FusedCPUBackend:
    """The fused back end in int8 over a random model; skipped where int8 cannot run (a failure
    under RENDITION_REQUIRE_NATIVE=1)."""
    so = fused_cpu.kernel()
    if so is None or not fused_cpu._INT8.get(id(so)):
        (pytest.fail if native.required() else pytest.skip)("no int8 kernel (native library, oneDNN's int8 gemm)")
    backend = select_backend(random_model(rel, seed=seed), "int8")
    assert isinstance(backend, FusedCPUBackend) and backend.fused.int8
    return backend


@pytest.mark.parametrize("rel", ["none", "k", "kv"])
def test_a_sentence_joining_mid_flight_gets_its_result_alone_in_int8(rel: str) -> None:
    check_joining_mid_flight(int8_backend(rel))


@pytest.mark.parametrize("workers", [1, 2])
def test_scheduler_results_equal_searches_alone_in_int8(workers: int) -> None:
    backend = int8_backend("kv", seed=21)
    sources = random_sources(20, 96, seed=3)
    opts = TranslationOptions(beam_size=3, max_length_a=1.0, max_length_b=3)
    got = scheduled_in_tickets(backend, sources, opts, workers)
    for src, hyps in zip(sources, got):
        assert_same(hyps, alone(backend, src, opts))
    assert torch.isfinite(torch.tensor([h.score for hs in got for h in hs])).all()
