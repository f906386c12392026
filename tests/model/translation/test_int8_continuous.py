"""Continuous batching (``model.translation.search.BeamSearch``) and the step-level scheduler with the
int8 compute type, on each instruction-set variant of the native kernels this CPU runs and under
each instruction set oneDNN can be capped to here: a sentence that joins a running search, or shares
a worker's search with others, gets the tokens it gets alone, and a score within ``INT8_BATCH_REL``
of its score alone (docs/architecture.md, "int8 and the batch").  Each row's activations are
quantised on their own and the integer products are exact, but the float32 values that are
quantised come from products whose blocking may depend on the number of rows, and a value at a
rounding boundary then moves by one level.  The bound is checked to be a small fraction of int8's
own error against float32."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from test_continuous import (  # (on sys.path)
    INT8_BATCH_REL,
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
from rendition.model.translation.search import generate_ids

ROOT = Path(__file__).resolve().parents[3]


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
def test_a_sentence_joining_mid_flight_gets_its_result_alone_in_int8(int8_variant: str, rel: str) -> None:
    check_joining_mid_flight(int8_backend(rel), int8=True)


@pytest.mark.parametrize("workers", [1, 2])
def test_scheduler_results_equal_searches_alone_in_int8(int8_variant: str, workers: int) -> None:
    backend = int8_backend("kv", seed=21)
    sources = random_sources(20, 96, seed=3)
    opts = TranslationOptions(beam_size=3, max_length_a=1.0, max_length_b=3)
    got = scheduled_in_tickets(backend, sources, opts, workers)
    for src, hyps in zip(sources, got):
        assert_same(hyps, alone(backend, src, opts), int8=True)
    assert torch.isfinite(torch.tensor([h.score for hs in got for h in hs])).all()


def test_the_int8_batch_bound_is_a_small_share_of_the_int8_error() -> None:
    """Of the hypotheses float32 and int8 agree on, the median relative difference of their scores
    (int8's own error) is at least twice INT8_BATCH_REL: the batch may move a score by less than
    half of what quantising moves it."""
    model, sources = random_model("kv", seed=21), random_sources(20, 96, seed=3)
    opts = TranslationOptions(beam_size=4, num_hypotheses=2)
    f32 = generate_ids(FusedCPUBackend(model), sources, opts)
    i8 = generate_ids(int8_backend("kv", seed=21), sources, opts)
    rel = [abs(a.score - b.score) / abs(a.score) for fs, qs in zip(f32, i8) for a, b in zip(fs, qs) if a.tokens == b.tokens]
    assert len(rel) >= 10
    assert INT8_BATCH_REL <= np.median(rel) / 2, np.median(rel)


def onednn_caps() -> list[str]:
    """The instruction sets oneDNN can be capped to on this CPU below its best (``ONEDNN_MAX_CPU_ISA``):
    AVX2 everywhere it runs, AVX-512 with VNNI and without AMX (as an AMD EPYC), AVX-VNNI."""
    flags = fused_cpu.cpu_flags()
    caps = [cap for cap, need in (("AVX2", "avx2"), ("AVX2_VNNI", "avx_vnni"), ("AVX512_CORE_VNNI", "avx512_vnni")) if need in flags]
    return caps


@pytest.mark.slow
@pytest.mark.parametrize("cap", onednn_caps())
def test_int8_products_and_batching_under_each_onednn_isa(cap: str) -> None:
    """oneDNN picks its kernels for the CPU (AMX, AVX-512 VNNI, AVX2) once per process: the int8
    products against the integer reference and the batching tests above run again (on this CPU's
    best kernel variant) in a process whose oneDNN is capped to ``cap``."""
    env = {**os.environ, "ONEDNN_MAX_CPU_ISA": cap}
    tests = [
        "tests/model/kernels/test_int8.py::test_int8_linear_equals_integer_reference",
        "tests/model/kernels/test_int8.py::test_every_variant_gives_the_same_int8_product",
        "tests/model/translation/test_int8_continuous.py::test_a_sentence_joining_mid_flight_gets_its_result_alone_in_int8",
        "tests/model/translation/test_int8_continuous.py::test_scheduler_results_equal_searches_alone_in_int8",
    ]
    best = native.isa()  # (the kernel variants themselves are the tests' own parameter: this CPU's best one here)
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", f"{best} or every_variant", *tests], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=900)
    print(out.stdout[-2000:])
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
