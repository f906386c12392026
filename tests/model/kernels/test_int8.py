"""The int8 compute type (``rendition.model.kernels.fused_cpu``, ``rendition.model.kernels.compute_type``): the int8
linear map against an independent integer reference (numpy, int64) on every instruction-set variant
this CPU runs, in both activation ranges (8 bits with VNNI, 7 without); the fused encoder and step in
int8 near the float32 ones; the shipped translator in int8 against float32 (hypotheses, BLEU),
its resident weights, and the fallback to float32 where int8 cannot run."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

from rendition.model.kernels import fused_cpu, native
from rendition.model.kernels.compute_type import resolve_compute_type
from rendition.model.translation.backends import FusedCPUBackend
from rendition.model.translation.options import TranslationOptions
from rendition.model.translation.search import generate_ids
from rendition.model.translation.translator import Translator
from tests.model.native_variants import load_variant, need_int8

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(params=native.ISAS)
def variant(request, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each instruction-set variant in turn, loaded as the library (where the CPU runs it)."""
    return load_variant(request.param, monkeypatch)


@pytest.fixture(autouse=True)
def _default_levels_restored():
    """The activation range is global state of each loaded kernel library: after a test (and after
    its monkeypatches are undone), the library the other tests use gets this CPU's range back."""
    yield
    so = fused_cpu.kernel()
    address = fused_cpu._dnnl_address("dnnl_gemm_u8s8s32")
    if so is not None and address is not None:
        so.rk_set_dnnl_gemm_u8s8s32(address, fused_cpu.activation_levels())


@pytest.fixture
def levels(request, monkeypatch: pytest.MonkeyPatch):
    """The activation range the kernel is set to (255: VNNI; 127: without), restored after."""
    so = fused_cpu.kernel()
    address = fused_cpu._dnnl_address("dnnl_gemm_u8s8s32")

    def set_levels(n: int) -> int:
        so.rk_set_dnnl_gemm_u8s8s32(address, n)
        return n

    yield set_levels
    so.rk_set_dnnl_gemm_u8s8s32(address, fused_cpu.activation_levels())


def reference_quantize_rows(x: np.ndarray, levels: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Asymmetric per-row quantisation in float64: the range [min(lo, 0), max(hi, 0)] onto [0, levels]."""
    x = x.astype(np.float64)
    lo, hi = np.minimum(x.min(1), 0.0), np.maximum(x.max(1), 0.0)
    scale = (hi - lo) / levels
    scale[scale == 0] = 1.0
    zero = np.rint(-lo / scale)
    q = np.clip(np.rint(x / scale[:, None]) + zero[:, None], 0, levels)
    return q.astype(np.int64), scale, zero.astype(np.int64)


def sample_rows(M: int, K: int, seed: int) -> torch.Tensor:
    """Rows of every kind: signed, all positive (after a ReLU), all negative, all zero, one spike."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(M, K, generator=g) * 3
    if M >= 4:
        x[1] = x[1].relu()
        x[2] = -x[2].abs()
        x[3] = 0.0
    if M >= 5:
        x[4, K // 2] = 1000.0
    return x


@pytest.mark.parametrize("shape", [(1, 384, 1152), (7, 384, 384), (33, 1536, 384), (5, 384, 16000), (64, 96, 50)])
@pytest.mark.parametrize("n_levels", [255, 127])
def test_int8_linear_equals_integer_reference(variant: str, levels, shape, n_levels: int) -> None:
    M, K, N = shape
    if n_levels == 255 and not fused_cpu.has_vnni():  # (without VNNI, oneDNN's u8 x s8 pairs add in saturating int16)
        pytest.skip("8-bit activations need VNNI (oneDNN capped below it, or a CPU without it)")
    levels(n_levels)
    g = torch.Generator().manual_seed(M * N)
    w = torch.randn(N, K, generator=g) * 0.05
    w[0] = 0.0  # an all-zero output channel
    x = sample_rows(M, K, seed=K)
    qw = fused_cpu.QuantizedWeight(w)

    # the weights: symmetric per output channel, |q| <= 127, within half a step of W
    wn = w.numpy().astype(np.float64)
    amax = np.abs(wn).max(1)
    np.testing.assert_allclose(qw.scale.numpy(), np.where(amax > 0, amax / 127, 1.0), rtol=1e-6)
    wq = qw.weight.numpy().astype(np.int64)
    assert np.abs(wq).max() <= 127
    assert np.all(np.abs(wq * qw.scale.numpy()[:, None].astype(np.float64) - wn) <= qw.scale.numpy()[:, None] * 0.5001)
    np.testing.assert_array_equal(qw.colsum.numpy(), wq.sum(1))

    for threads in (1, 2):
        out = fused_cpu.qlinear(x, qw, threads=threads)
        # the activations: as the reference quantises them (a rounding tie may go either way)
        rq, rscale, rzero = reference_quantize_rows(x.numpy(), n_levels)
        xq = out["xq"].numpy().astype(np.int64)
        assert xq.max() <= n_levels
        np.testing.assert_allclose(out["x_scale"].numpy(), rscale, rtol=1e-6)
        np.testing.assert_array_equal(out["x_zero"].numpy(), rzero)
        assert np.abs(xq - rq).max() <= 1 and (xq != rq).mean() < 1e-3
        # the integer product: exact
        acc = xq @ wq.T  # int64
        np.testing.assert_array_equal(out["acc"].numpy().astype(np.int64), acc)
        # the dequantised result: float32 rounding of scale x scale x (acc - zero x colsum) only
        zero = out["x_zero"].numpy().astype(np.int64)
        want = out["x_scale"].numpy().astype(np.float64)[:, None] * qw.scale.numpy()[None, :] * (acc - zero[:, None] * wq.sum(1)[None, :])
        np.testing.assert_allclose(out["y"].numpy(), want, rtol=1e-5, atol=1e-6 * np.abs(want).max())
        # and it approximates the float32 product (but on the row with one spike: its other entries
        # round to a step of 1000 / levels)
        rows = [m for m in range(M) if m != 4]
        exact = x.numpy().astype(np.float64)[rows] @ wn.T
        assert np.abs(out["y"].numpy()[rows] - exact).max() <= 0.05 * np.abs(exact).max()


def test_every_variant_gives_the_same_int8_product(monkeypatch: pytest.MonkeyPatch) -> None:
    need_int8()
    x, qw = sample_rows(9, 384, seed=5), fused_cpu.QuantizedWeight(torch.randn(1000, 384) * 0.1)
    results = []
    for isa in native.ISAS:
        if isa in native.built() and native.cpu_supports(isa):
            monkeypatch.setenv("RENDITION_ISA", isa)
            monkeypatch.setattr(native, "_LIB", {})
            monkeypatch.setattr(fused_cpu, "_WIRED", {})
            monkeypatch.setattr(fused_cpu, "_INT8", {})
            monkeypatch.setattr(fused_cpu, "_PACKED", {})
            results.append(fused_cpu.qlinear(x, qw))
    for r in results[1:]:
        assert torch.equal(r["acc"], results[0]["acc"]) and torch.equal(r["xq"], results[0]["xq"])
        torch.testing.assert_close(r["y"], results[0]["y"], rtol=1e-6, atol=1e-6)


def need_packed() -> None:
    """Skip where int8 weights are not packed for oneDNN's matmul primitive; under
    RENDITION_REQUIRE_NATIVE=1 (CI, where the onednn-cpu-gomp wheel is installed) that is a failure."""
    need_int8()
    if not fused_cpu.packed_products():
        (pytest.fail if native.required() else pytest.skip)("int8 weights are not packed (oneDNN's matmul API)")


@pytest.mark.parametrize("NK", [(16000, 384), (1152, 384), (384, 1536), (50, 96)])
def test_packed_products_equal_the_gemm_exactly(variant: str, NK: tuple[int, int]) -> None:
    """The matmul primitive over the packed weight gives the gemm's integer sums, and so the same
    outputs, for every number of rows (each its own primitive), on 1 and 2 threads, and when called
    again (the primitives kept)."""
    need_packed()
    N, K = NK
    g = torch.Generator().manual_seed(N + K)
    w = torch.randn(N, K, generator=g) * 0.05
    packed, plain = fused_cpu.QuantizedWeight(w), fused_cpu.QuantizedWeight(w, pack=False)
    assert packed.packed() is not None and plain.packed() is None
    # the plain copy goes (the packed one is read), and unpacks to the same weight
    assert packed.tensors() == [packed.scale, packed.colsum] and torch.equal(packed.weight, plain.weight)
    assert packed.packed_bytes >= N * K and packed.nbytes == plain.nbytes - N * K + packed.packed_bytes
    kept = fused_cpu.QuantizedWeight(w, keep_plain=True)
    assert kept.packed() is not None and torch.equal(kept.tensors()[0], plain.weight)
    for M in (1, 2, 3, 4, 5, 8, 17, 64, 65, 130):
        x = sample_rows(M, K, seed=M)
        for threads in (1, 2, 1):
            a, b = fused_cpu.qlinear(x, packed, threads=threads), fused_cpu.qlinear(x, plain, threads=threads)
            assert torch.equal(a["acc"], b["acc"]), (M, threads)
            assert torch.equal(a["y"], b["y"]), (M, threads)
            np.testing.assert_array_equal(
                a["acc"].numpy().astype(np.int64), a["xq"].numpy().astype(np.int64) @ plain.weight.numpy().astype(np.int64).T
            )


def test_packed_products_past_the_primitive_table_and_from_worker_threads() -> None:
    """Products no primitive serves (a thread's table full: here its limit set to 0) run on the gemm,
    over the packed weight unpacked (its plain copy was dropped); large row counts run in blocks;
    products from other threads (each with its own primitives and thread count): all exact."""
    need_packed()
    so = fused_cpu.kernel()
    w = torch.randn(64, 32) * 0.1
    packed, plain = fused_cpu.QuantizedWeight(w), fused_cpu.QuantizedWeight(w, pack=False)
    assert packed.tensors() == [packed.scale, packed.colsum]  # (no plain copy)
    x = sample_rows(1100, 32, seed=1)
    so.rk_packed_forget()
    before = so.rk_packed_limit(0)
    try:
        for M in (1, 7, 300):
            assert torch.equal(fused_cpu.qlinear(x[:M], packed, threads=1)["acc"], fused_cpu.qlinear(x[:M], plain, threads=1)["acc"])
    finally:
        so.rk_packed_limit(before)
    for M in (1, 2, 255, 256, 257, 513, 1100):
        for threads in (1, 2):
            a = fused_cpu.qlinear(x[:M], packed, threads=threads)
            b = fused_cpu.qlinear(x[:M], plain, threads=threads)
            assert torch.equal(a["acc"], b["acc"]) and torch.equal(a["y"], b["y"]), (M, threads)
    results: dict[int, bool] = {}

    def work(i: int) -> None:
        torch.set_num_threads(1)
        xs = sample_rows(40 + i, 32, seed=i)
        results[i] = all(
            torch.equal(fused_cpu.qlinear(xs[:m], packed, threads=1)["acc"], fused_cpu.qlinear(xs[:m], plain, threads=1)["acc"])
            for m in range(1, 40 + i)
        )

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {0: True, 1: True, 2: True}


def test_packed_products_run_on_few_row_counts() -> None:
    """A primitive holds its JIT kernels (a tenth of a megabyte or more), so a thread must not keep
    one per row count: products run on exact counts up to 16, then multiples of 4 up to 64 and of
    16 up to 256 (blocks of 256 beyond), and every row count from 1 to 600 leaves a thread with 40
    primitives for one weight shape; the products stay the gemm's, the extra rows unseen."""
    need_packed()
    so = fused_cpu.kernel()
    expected = {1: 1, 16: 16, 17: 20, 24: 24, 63: 64, 64: 64, 65: 80, 200: 208, 256: 256, 257: 257, 273: 276, 600: 608}
    assert {m: so.rk_packed_rows(m) for m in expected} == expected
    counts = {so.rk_packed_rows(m) % 256 or 256 for m in range(1, 601)}
    assert len(counts) == 40
    w = torch.randn(48, 40) * 0.1
    packed, plain = fused_cpu.QuantizedWeight(w), fused_cpu.QuantizedWeight(w, pack=False)
    x = sample_rows(600, 40, seed=3)
    results: dict[str, object] = {}

    def work() -> None:  # (a fresh thread: a table of its own)
        torch.set_num_threads(1)
        exact = all(
            torch.equal(fused_cpu.qlinear(x[:m], packed, threads=1)["y"], fused_cpu.qlinear(x[:m], plain, threads=1)["y"])
            for m in range(1, 601)
        )
        results.update(exact=exact, primitives=so.rk_packed_count())

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert results == {"exact": True, "primitives": 40}


def random_model(head_dim: int = 32, rel: str = "kv"):
    from test_fused_cpu import random_model as make  # (this directory is on sys.path)

    return make(head_dim, rel, encoder_layers=2)


@pytest.mark.parametrize("rel", ["kv", "none"])
def test_int8_encoder_and_step_near_float32(rel: str) -> None:
    from test_fused_cpu import run_steps

    need_int8()
    m = random_model(32, rel)
    want = run_steps(m, backend=FusedCPUBackend)
    got = run_steps(m, backend=lambda model: FusedCPUBackend(model, "int8"))
    for a, b in zip(got, want):
        err = (a - b).abs().max() / b.abs().max()
        assert err < 0.05, err
        assert (a.argmax(-1) == b.argmax(-1)).float().mean() >= 0.8


def test_int8_tables_are_built_once_and_the_float_weights_can_go() -> None:
    need_int8()
    m = random_model(16, "kv")
    fused = fused_cpu.FusedTransformer(m, "int8")
    src = torch.tensor([[5, 6, 7, 3]])
    mem_before, _ = fused.encode(src)
    released = fused.release_float_weights()
    assert released >= 4 * m.embed.weight.numel()
    assert all(p.untyped_storage().nbytes() <= 4 for p in fused.quantized_parameters())
    assert m.embed.weight.shape == (m.cfg.vocab_size, m.cfg.d_model)  # (shapes, and the parameter count, kept)
    mem_after, _ = fused.encode(src)
    assert torch.equal(mem_before, mem_after)  # (the int8 tables do not read the float weights)


def test_int8_quantisation_in_row_blocks_changes_no_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """``QuantizedWeight`` quantises a few rows at a time (small temporaries): the scales, the int8
    weight and the column sums are those of the whole matrix at once, from float32 or float16."""
    g = torch.Generator().manual_seed(3)
    w = torch.randn(37, 24, generator=g)
    w[5] = 0.0
    for source in (w, w.half()):
        whole = fused_cpu.QuantizedWeight(source)
        monkeypatch.setattr(fused_cpu.QuantizedWeight, "BLOCK_BYTES", 4 * 24 * 5)  # 5 rows a block
        blocks = fused_cpu.QuantizedWeight(source)
        monkeypatch.undo()
        assert torch.equal(blocks.scale, whole.scale) and torch.equal(blocks.weight, whole.weight)
        assert torch.equal(blocks.colsum, whole.colsum)
        assert blocks.scale[5] == 1.0 and not blocks.weight[5].any()


def test_int8_refuses_a_bfloat16_kv_cache() -> None:
    need_int8()
    be = FusedCPUBackend(random_model(16, "kv"), "int8")
    with pytest.raises(ValueError, match="float32 or float16"):
        be.new_cache(2, torch.bfloat16)


# -- the compute type ----------------------------------------------------------------------------------
def test_auto_is_int8_on_this_cpu_when_it_has_vnni_or_avx2() -> None:
    need_int8()
    flags = fused_cpu.cpu_flags()
    if native.isa() == "generic" or not ({"avx512_vnni", "avx_vnni", "avx2"} & flags):
        pytest.skip("this CPU has neither VNNI nor AVX2")
    assert resolve_compute_type("auto", "cpu") == ("int8", None)
    assert resolve_compute_type("int8", "cpu") == ("int8", None)
    assert resolve_compute_type("auto", "cpu", torch.bfloat16) == ("bfloat16", torch.bfloat16)  # (asked for: kept)
    assert resolve_compute_type("float32", "cpu") == ("float32", torch.float32)
    assert resolve_compute_type("bfloat16", "cpu", "float32") == ("bfloat16", torch.bfloat16)
    assert resolve_compute_type("auto", "cuda:0") == ("float16", torch.float16)
    assert fused_cpu.activation_levels() == (255 if {"avx512_vnni", "avx_vnni"} & flags else 127)


def test_an_unknown_compute_type_is_refused() -> None:
    with pytest.raises(ValueError, match="compute_type must be one of"):
        resolve_compute_type("int4", "cpu")


@pytest.mark.parametrize("asked", ["auto", "int8"])
def test_a_cpu_without_vnni_or_avx2_falls_back_to_float32(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, asked: str
) -> None:
    """The generic variant of the native kernels is what a CPU without AVX2 loads; the capability
    check is also cut off at the CPU's flags."""
    for how in ("generic", "flags"):
        monkeypatch.setattr(native, "_LIB", {})
        monkeypatch.setattr(fused_cpu, "_WIRED", {})
        monkeypatch.setattr(fused_cpu, "_INT8", {})
        monkeypatch.setattr(fused_cpu, "_PACKED", {})
        if how == "generic":
            monkeypatch.setenv("RENDITION_ISA", "generic")
        else:
            monkeypatch.delenv("RENDITION_ISA", raising=False)
            monkeypatch.setattr(fused_cpu, "cpu_flags", lambda: frozenset({"sse2", "avx"}))
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="rendition.compute_type"):
            assert resolve_compute_type(asked, "cpu") == ("float32", torch.float32)
        lines = [r for r in caplog.records if r.name == "rendition.compute_type"]
        assert len(lines) == 1 and "int8 cannot run here" in lines[0].getMessage()
        assert ("VNNI nor AVX2" in lines[0].getMessage()) or fused_cpu.kernel() is None


# -- the shipped translator -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def translators() -> tuple[Translator, Translator]:
    need_int8()
    return Translator.from_pretrained(device="cpu", compute_type="float32"), Translator.from_pretrained(
        device="cpu", compute_type="int8"
    )


def test_shipped_translator_int8_weights_are_at_most_40_percent(translators) -> None:
    f32, i8 = translators
    assert f32.compute_type == "float32" and i8.compute_type == "int8"
    assert isinstance(i8.backend, FusedCPUBackend) and i8.backend.fused.int8
    ratio = i8.weight_bytes / f32.weight_bytes
    print(f"resident weights: float32 {f32.weight_bytes / 2**20:.1f} MiB, int8 {i8.weight_bytes / 2**20:.1f} MiB ({ratio:.0%})")
    assert ratio <= 0.40
    # no float32 copy of a quantised weight stays
    assert all(p.untyped_storage().nbytes() <= 4 for p in i8.backend.fused.quantized_parameters())
    assert sum(p.numel() for p in i8.model.parameters()) == sum(p.numel() for p in f32.model.parameters())


def reachable_tensors(root: object) -> list[torch.Tensor]:
    """Every tensor ``root`` holds, through modules, the project's own objects, containers and
    ``QuantizedWeight`` tables (inference copies kept in a module's ``__dict__`` included)."""
    seen: set[int] = set()
    out: list[torch.Tensor] = []
    todo = [root]
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, torch.Tensor):
            out.append(obj)
        elif isinstance(obj, dict):
            todo += obj.values()
        elif isinstance(obj, (list, tuple, set)):
            todo += obj
        elif isinstance(obj, torch.nn.Module) or type(obj).__module__.startswith("rendition."):
            todo += vars(obj).values()
    return out


def test_int8_translator_holds_no_float32_copy_of_a_quantised_weight(translators) -> None:
    """After loading and translating (so that every lazy copy is made), the int8 translator holds
    no float32 matrix of a quantised linear map: not the model's parameters (placeholders of 4
    bytes), not an inference copy (the fused Q/K/V of the torch step), not in the kernels' tables
    nor in a cache the back end makes.  The float32 matrices left are the cross-attention's key
    and value maps, which stay float32 (the model computes them once per sentence)."""
    _, i8 = translators
    i8.translate(SENTENCES[:2], "en", "fr", beam_size=4)
    i8.translate(SENTENCES[:2], "fr", "en", beam_size=2)
    cache = i8.backend.new_cache(4)
    mem, mask = i8.backend.encode(torch.tensor([i8.preprocess(SENTENCES[:1], "fr")[0]]))
    cache.join(i8.backend.cross_states(mem), mask, 16)
    assert all(layer.qkv is None for layer in cache.layers)
    m = i8.model
    kept = {p.untyped_storage().data_ptr() for layer in m.decoder_layers for p in (layer.cross_attn.k_proj.weight, layer.cross_attn.v_proj.weight)}
    smallest = min(p.shape.numel() for p in i8.backend.fused.quantized_parameters())
    matrices = [
        t for t in reachable_tensors((i8, cache)) if t.is_floating_point() and t.untyped_storage().nbytes() >= 4 * smallest
    ]
    strays = [tuple(t.shape) for t in matrices if t.untyped_storage().data_ptr() not in kept and t.dim() == 2]
    assert not strays, strays
    assert not any("_qkv_copy" in vars(mod) or "_out_proj_copy" in vars(mod) for mod in m.modules())
    assert all(p.untyped_storage().nbytes() <= 4 for p in i8.backend.fused.quantized_parameters())


SENTENCES = [
    "Utilities for managing disk partitions",
    "This package contains the documentation.",
    "A small, fast and secure web server with support for virtual hosts, CGI scripts and access logs",
    "Python bindings",
    "The library is used by many programs to read configuration files.",
    "Open the file and save your changes.",
    "The server could not be reached.",
    "Command-line tools for the archive format",
]


@pytest.mark.parametrize("beam_size", [1, 4])
def test_shipped_translator_int8_mostly_equals_float32(translators, beam_size: int) -> None:
    f32, i8 = translators
    a = [t.text for t in f32.translate(SENTENCES, "en", "fr", beam_size=beam_size)]
    b = [t.text for t in i8.translate(SENTENCES, "en", "fr", beam_size=beam_size)]
    same = sum(x == y for x, y in zip(a, b))
    assert same >= 0.6 * len(SENTENCES), list(zip(a, b))


def paired_bootstrap_bleu_delta(hyp_a: list[str], hyp_b: list[str], refs: list[str], samples: int = 1000, seed: int = 0) -> tuple[float, float, float]:
    """BLEU(a) - BLEU(b) on the whole set, and its 95% interval over ``samples`` resamplings of the
    sentences (paired: both systems on the same resampled sentences; Koehn 2004)."""
    from sacrebleu.metrics import BLEU

    bleu = BLEU()

    def stats(hyps: list[str]) -> np.ndarray:  # per sentence: n-gram matches (4), n-gram totals (4), lengths (2)
        rows = []
        for h, r in zip(hyps, refs):
            s = bleu.corpus_score([h], [[r]])
            rows.append([*s.counts, *s.totals, s.sys_len, s.ref_len])
        return np.array(rows, dtype=np.int64)

    def score(st: np.ndarray) -> float:
        return BLEU.compute_bleu(st[:4].tolist(), st[4:8].tolist(), int(st[8]), int(st[9])).score

    a, b = stats(hyp_a), stats(hyp_b)
    rng = np.random.default_rng(seed)
    deltas = []
    for _ in range(samples):
        idx = rng.integers(0, len(refs), len(refs))
        deltas.append(score(a[idx].sum(0)) - score(b[idx].sum(0)))
    lo, hi = np.percentile(deltas, [2.5, 97.5])
    return score(a.sum(0)) - score(b.sum(0)), float(lo), float(hi)


def test_the_paired_bootstrap_against_sacrebleu() -> None:
    refs = ["the cat sat on the mat", "a dog runs in the park", "open the file", "save your changes now"]
    a = ["the cat sat on a mat", "a dog runs in the park", "open the file", "save the changes now"]
    b = ["a cat is on the mat", "the dog ran in a park", "open file", "save your changes now"]
    import sacrebleu

    delta, lo, hi = paired_bootstrap_bleu_delta(a, b, refs, samples=200)
    assert delta == pytest.approx(sacrebleu.corpus_bleu(a, [refs]).score - sacrebleu.corpus_bleu(b, [refs]).score)
    assert lo <= hi
    assert paired_bootstrap_bleu_delta(a, a, refs, samples=50) == (0.0, 0.0, 0.0)


@pytest.mark.slow
@pytest.mark.parametrize("direction", ["en-fr", "fr-en"])
def test_shipped_translator_int8_not_shown_worse_than_float32_by_0_3_bleu(translators, direction: str) -> None:
    """On 100 held-out sentences int8 and float32 differ in a few sentences only, and which ones
    depends on the CPU's kernels: one changed sentence moves BLEU by about 0.3, so the whole-split
    claim (int8 within 0.3 BLEU of float32: docs/benchmarks.md) cannot be checked on such a slice.
    What it can resolve is a paired criterion: resampling the sentences, int8 is not shown to lose
    more than 0.3 BLEU (the upper end of the 95% interval of int8 - float32 is above -0.3); a
    broken int8 path (a whole point lost) fails it."""
    pairs = [line.split("\t") for line in (ROOT / "data/splits/test.en-fr.tsv").read_text("utf-8").splitlines()[:100]]
    src, ref = ([p[0] for p in pairs], [p[1] for p in pairs]) if direction == "en-fr" else ([p[1] for p in pairs], [p[0] for p in pairs])
    s, t = direction.split("-")
    hyps = {tr.compute_type: [x.text for x in tr.translate(src, s, t, beam_size=4)] for tr in translators}
    delta, lo, hi = paired_bootstrap_bleu_delta(hyps["int8"], hyps["float32"], ref)
    print(f"{direction}: int8 - float32 = {delta:+.2f} BLEU, 95% interval [{lo:+.2f}, {hi:+.2f}]")
    assert hi >= -0.3, (delta, lo, hi)


def test_int8_translator_runs_the_torch_path_nowhere(translators) -> None:
    """The int8 back end serves the whole search (its steps never reach the released float weights)."""
    _, i8 = translators
    hyps = generate_ids(i8.backend, i8.preprocess(SENTENCES[:3], "fr"), TranslationOptions(beam_size=4, num_hypotheses=2))
    assert all(torch.isfinite(torch.tensor([h.score for h in hs])).all() for hs in hyps)
    assert all(hs[0].tokens for hs in hyps) and all(i8.tokenizer.decode([hs[0].tokens])[0].strip() for hs in hyps)
