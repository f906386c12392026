"""SentenceEncoder API, save/load, the ``rendition embed`` command, and the distillation helpers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from rendition.model.embedding.disan import DiSAN, DiSANConfig
from rendition.model.embedding.encoder import DEFAULT_ENCODER, SentenceEncoder
from rendition.model.text.segment import InputTooLong
from rendition.model.tokenizer import Tokenizer
from rendition.model.training.distill import distill_loss, length_batches, pair_cosines, retrieval_accuracy
from rendition.model.weights import ModelLoadError

ROOT = Path(__file__).resolve().parents[3]
SPM = ROOT / "model" / "pretrained" / "translator" / "sentencepiece.model"
SENTS = [
    "A tool for converting audio files.",
    "Library for parsing XML documents quickly and safely, with a streaming interface.",
    "x",
    "",
    "Utilities for managing IBM's Journaled File System (JFS) under Linux.",
    "Outil de conversion de fichiers audio.",
]


@pytest.fixture(scope="module")
def encoder() -> SentenceEncoder:
    tok = Tokenizer(SPM)
    torch.manual_seed(0)
    cfg = DiSANConfig(vocab_size=tok.vocab_size, d_embed=16, d_model=12, d_out=10, max_length=24, dropout=0.0)
    return SentenceEncoder(DiSAN(cfg), tok)


def test_encode_shape_norm_and_order(encoder):
    out = encoder.encode(SENTS, batch_size=2)
    assert out.shape == (len(SENTS), encoder.dim) == (6, 10) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)
    one_by_one = np.concatenate([encoder.encode([s]) for s in SENTS])
    np.testing.assert_allclose(out, one_by_one, atol=1e-5)  # bucketing/padding does not change results
    raw = encoder.encode(SENTS, normalize=False)
    np.testing.assert_allclose(raw / np.linalg.norm(raw, axis=1, keepdims=True), out, atol=1e-5)
    assert encoder.encode([]).shape == (0, 10)
    with pytest.raises(TypeError):
        encoder.encode("a single string")


def test_truncation_and_token_counts(encoder):
    long = " ".join(["word"] * 100)
    counts = encoder.count_tokens(["hello world", long, ""])
    assert counts[1] == encoder.max_length == 24 and counts[2] == 0
    assert counts[0] == len(encoder.tokenizer.encode(["hello world"])[0])
    # over max_length: refused by default, naming the limit; with truncate=True text beyond it does not count
    with pytest.raises(InputTooLong, match="input 1 is 100 tokens long; the limit is 24 tokens") as e:
        encoder.encode(["hello world", long])
    assert (e.value.index, e.value.length, e.value.limit) == (1, 100, 24)
    cut = encoder.encode([long], truncate=True)
    np.testing.assert_allclose(cut, encoder.encode([long + " and much more text"], truncate=True), atol=1e-6)
    np.testing.assert_array_equal(cut, encoder.encode([" ".join(["word"] * 24)]))


def test_buckets_sorted_and_bounded(encoder):
    lengths = [5, 1, 9, 3, 3, 12, 7]
    b = encoder.buckets(lengths, batch_size=3)
    assert sorted(i for x in b for i in x) == list(range(7))
    assert all(len(x) <= 3 for x in b)
    flat = [lengths[i] for x in b for i in x]
    assert flat == sorted(flat)


def test_save_and_load_roundtrip(encoder, tmp_path):
    encoder.save_pretrained(tmp_path, dtype=torch.float32, int8_embeddings=False)
    assert {p.name for p in tmp_path.iterdir()} >= {"config.json", "model.safetensors", "sentencepiece.model"}
    again = SentenceEncoder.from_pretrained(tmp_path, device="cpu")
    np.testing.assert_array_equal(again.encode(SENTS), encoder.encode(SENTS))
    half = tmp_path / "half"
    encoder.save_pretrained(half, int8_embeddings=False)
    np.testing.assert_allclose(SentenceEncoder.from_pretrained(half, device="cpu").encode(SENTS), encoder.encode(SENTS), atol=5e-3)
    default = tmp_path / "default"
    encoder.save_pretrained(default)  # fp16 weights, int8 token embeddings
    assert (default / "model.safetensors").stat().st_size < 0.65 * (half / "model.safetensors").stat().st_size
    cos = (SentenceEncoder.from_pretrained(default, device="cpu").encode(SENTS) * encoder.encode(SENTS)).sum(1)
    assert cos.min() > 0.999
    (tmp_path / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(ModelLoadError):
        SentenceEncoder.from_pretrained(tmp_path, device="cpu")


@pytest.mark.slow
def test_cli_embed_jsonl_and_npy(encoder, tmp_path):
    model_dir = tmp_path / "enc"
    encoder.save_pretrained(model_dir, dtype=torch.float32, int8_embeddings=False)
    lines = "A tool for audio.\nUn outil pour l'audio.\n"
    # float32, as the in-process reference (auto is bfloat16 on a CPU with AVX-512 BF16)
    cmd = [sys.executable, "-m", "rendition.model.cli", "embed", "--model", str(model_dir), "--threads", "1", "--compute-type", "float32"]
    res = subprocess.run(cmd, input=lines, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert res.returncode == 0, res.stderr
    rows = [json.loads(x) for x in res.stdout.splitlines()]
    assert [r["text"] for r in rows] == ["A tool for audio.", "Un outil pour l'audio."]
    expected = encoder.encode(["A tool for audio.", "Un outil pour l'audio."])
    np.testing.assert_allclose(np.array([r["embedding"] for r in rows]), expected, atol=1e-5)
    res = subprocess.run([*cmd, "--output", str(tmp_path / "v.npy")], input=lines, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert res.returncode == 0, res.stderr
    np.testing.assert_allclose(np.load(tmp_path / "v.npy"), expected, atol=1e-6)


def test_retrieval_accuracy_and_cosines():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(50, 8))
    assert retrieval_accuracy(a, a + 0.01 * rng.normal(size=a.shape)) == (1.0, 1.0)
    shuffled = a[np.r_[1:50, 0]]  # every target shifted by one: nothing is retrieved correctly
    assert retrieval_accuracy(a, shuffled) == (0.0, 0.0)
    c = pair_cosines(np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]]), [(0, 1), (0, 2)])
    np.testing.assert_allclose(c, [0.0, 2**-0.5])


def test_length_batches_cover_everything_once():
    import random

    lengths = [random.Random(1).randint(1, 60) for _ in range(1000)]
    batches = length_batches(lengths, 32, random.Random(0), pool=4)
    assert sorted(i for b in batches for i in b) == list(range(1000))
    spread = np.mean([max(lengths[i] for i in b) - min(lengths[i] for i in b) for b in batches])
    assert spread < 20  # sorted within pools: little padding


@pytest.mark.skipif(not (DEFAULT_ENCODER / "model.safetensors").is_file(), reason="no shipped encoder")
def test_shipped_encoder_loads_and_separates_translations():
    enc = SentenceEncoder.from_pretrained(device="cpu")
    assert enc.dim == 384
    en = ["Utilities for managing the JFS file system.", "Documentation for the Python programming language."]
    fr = ["Utilitaires pour gérer le système de fichiers JFS.", "Documentation pour le langage de programmation Python."]
    sim = enc.encode(en) @ enc.encode(fr).T
    assert sim[0, 0] > sim[0, 1] and sim[1, 1] > sim[1, 0]


def test_distill_loss_is_distance_plus_weighted_similarity_term():
    rng = np.random.default_rng(0)
    pred, target = rng.normal(size=(5, 7)), rng.normal(size=(5, 7))
    dist = np.mean(np.sum((pred - target) ** 2, axis=1))  # mean squared distance per sentence
    cos = lambda a: (a / np.linalg.norm(a, axis=1, keepdims=True)) @ (a / np.linalg.norm(a, axis=1, keepdims=True)).T  # noqa: E731
    sim = np.mean((cos(pred) - cos(target)) ** 2)
    p, t = torch.tensor(pred), torch.tensor(target)
    assert float(distill_loss(p, t)) == pytest.approx(dist, rel=1e-9)
    assert float(distill_loss(p, t, 10.0)) == pytest.approx(dist + 10.0 * sim, rel=1e-9)
    # the similarity term is zero when the student is the teacher up to a per-sentence scale
    assert float(distill_loss(t * 3.0, t, 10.0)) == pytest.approx(float(distill_loss(t * 3.0, t)), rel=1e-9)
