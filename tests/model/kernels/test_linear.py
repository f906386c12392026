"""The sentence encoder's compute types (``rendition.model.kernels.linear``, ``resolve_encoder_compute_type``):
each reduced linear map against an independent reference, every ``nn.Linear`` of a DiSAN replaced,
``auto`` on this CPU and its fallback, and the shipped encoder's embeddings in int8 and bfloat16
against float32 (cosine >= 0.999 on test sentences)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import torch
from test_int8 import need_int8, reference_quantize_rows, sample_rows  # (on sys.path)
from torch import nn

from rendition.model.embedding.disan import DiSAN, DiSANConfig
from rendition.model.embedding.encoder import SentenceEncoder
from rendition.model.kernels import compute_type as ct
from rendition.model.kernels import fused_cpu
from rendition.model.kernels.compute_type import resolve_encoder_compute_type
from rendition.model.kernels.linear import Int8Linear, convert_linears

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("shape", [(1, 256, 512), (9, 512, 256), (40, 300, 300)])
def test_int8_linear_equals_integer_reference(shape: tuple[int, int, int]) -> None:
    need_int8()
    M, K, N = shape
    torch.manual_seed(M + K)
    lin = nn.Linear(K, N)
    x = sample_rows(M, K, seed=K)
    got = Int8Linear(lin)(x.reshape(1, M, K)).reshape(M, N)  # (leading dimensions kept)
    q = fused_cpu.QuantizedWeight(lin.weight)
    xq, xs, xz = reference_quantize_rows(x.numpy(), fused_cpu.activation_levels())
    acc = xq @ q.weight.numpy().astype(np.int64).T - xz[:, None] * q.colsum.numpy().astype(np.int64)[None, :]
    want = acc * (xs[:, None] * q.scale.numpy().astype(np.float64)[None, :]) + lin.bias.detach().numpy()
    assert got.shape == (M, N)
    np.testing.assert_allclose(got.numpy(), want, rtol=2e-5, atol=2e-4 * np.abs(want).max())


def test_int8_linear_takes_no_rows() -> None:
    need_int8()
    assert Int8Linear(nn.Linear(64, 32))(torch.zeros(2, 0, 64)).shape == (2, 0, 32)


def test_convert_linears_replaces_every_linear_map_of_a_disan() -> None:
    need_int8()
    kind = "int8"
    cfg = DiSANConfig(vocab_size=50, d_embed=24, d_model=16, blocks=2, d_out=8)
    model = DiSAN(cfg).eval()
    before = sum(type(m) is nn.Linear for m in model.modules())
    ids = torch.tensor([[5, 6, 7, 8, 0], [9, 10, 11, 12, 13]])
    with torch.no_grad():
        ref = model(ids)
        assert convert_linears(model, kind) == before > 0
        assert not any(type(m) is nn.Linear for m in model.modules())
        got = model(ids)
    assert torch.nn.functional.cosine_similarity(got, ref).min() > 0.99
    with pytest.raises(ValueError, match="compute_type"):
        convert_linears(model, "int4")


def test_encoder_auto_is_bfloat16_on_a_cpu_with_bfloat16_instructions() -> None:
    want = "float32" if ct.bfloat16_unavailable() else "bfloat16"
    assert resolve_encoder_compute_type("auto", "cpu") == (want, getattr(torch, want))
    assert resolve_encoder_compute_type("auto", "cpu", torch.float16) == ("float16", torch.float16)  # (asked: kept)
    assert resolve_encoder_compute_type("float32", "cpu", torch.bfloat16) == ("float32", torch.float32)
    assert resolve_encoder_compute_type("auto", "cuda:0") == ("float16", torch.float16)
    assert resolve_encoder_compute_type("int8", "cuda:0", "bfloat16") == ("bfloat16", torch.bfloat16)
    if fused_cpu.int8_unavailable() is None:
        assert resolve_encoder_compute_type("int8", "cpu") == ("int8", torch.float32)
    with pytest.raises(ValueError, match="compute_type must be one of"):
        resolve_encoder_compute_type("int4", "cpu")


def test_encoder_auto_and_int8_fall_back_to_float32_with_one_log_line(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(fused_cpu, "cpu_flags", lambda: frozenset({"sse2", "avx"}))  # (neither BF16, VNNI nor AVX2)
    for asked, why in (("auto", "AVX-512 BF16"), ("int8", "VNNI nor AVX2")):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="rendition.compute_type"):
            assert resolve_encoder_compute_type(asked, "cpu") == ("float32", torch.float32)
        lines = [r.getMessage() for r in caplog.records if r.name == "rendition.compute_type"]
        assert len(lines) == 1 and why in lines[0], lines


def test_sentences(n: int) -> list[str]:
    """Both sides of the first test pairs of the DDTP and everyday splits."""
    out = []
    for split in ("test.en-fr.tsv", "test.everyday.en-fr.tsv"):
        for line in (ROOT / "data" / "splits" / split).read_text("utf-8").splitlines()[:n]:
            out.extend(line.split("\t")[:2])
    return out


test_sentences.__test__ = False  # (a helper, not a test)


@pytest.fixture(scope="module")
def float32_embeddings() -> tuple[list[str], np.ndarray]:
    texts = test_sentences(100)
    enc = SentenceEncoder.from_pretrained(device="cpu", compute_type="float32")
    assert enc.compute_type == "float32"
    return texts, enc.encode(texts, truncate=True)


def cosines(float32_embeddings, kind: str) -> np.ndarray:
    texts, ref = float32_embeddings
    enc = SentenceEncoder.from_pretrained(device="cpu", compute_type=kind)
    assert enc.compute_type == kind
    cos = (enc.encode(texts, truncate=True) * ref).sum(1)  # (both L2-normalised)
    print(f"{kind}: cosine to float32 over {len(texts)} sentences: min {cos.min():.5f}, mean {cos.mean():.6f}")
    return cos


def test_shipped_encoder_in_bfloat16_keeps_cosine_0_999(float32_embeddings) -> None:
    """bfloat16, what auto runs on a CPU with bfloat16 instructions (it computes anywhere: emulated)."""
    cos = cosines(float32_embeddings, "bfloat16")
    assert cos.min() >= 0.999, cos.min()


def test_shipped_encoder_in_int8_stays_near_float32(float32_embeddings) -> None:
    """int8 (opt-in): every linear map int8; measured min 0.9984, mean 0.99954 on these sentences,
    short of the 0.999 bound on the worst sentence, which is why auto never picks it."""
    need_int8()
    cos = cosines(float32_embeddings, "int8")
    assert cos.min() >= 0.998 and cos.mean() >= 0.9995, (cos.min(), cos.mean())
