"""The CUDA paths, run where a GPU is (``scripts/gpu-check.sh``: ``pytest -m gpu``); deselected
elsewhere (``conftest.py``).  A missing GPU is a failure here, not a skip."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rendition.model.embedding.encoder import SentenceEncoder
from rendition.model.training.data import SPLITS_DIR, read_tsv
from rendition.model.translation.translator import Translator

pytestmark = pytest.mark.gpu

SENTENCES = [p.src for p in read_tsv(SPLITS_DIR / "test.en-fr.tsv")[:24]]


def test_a_cuda_device_is_visible() -> None:
    assert torch.cuda.is_available(), "no CUDA device: run these tests on a GPU machine (scripts/gpu-check.sh)"


@pytest.fixture(scope="module")
def cpu_outputs() -> list[str]:
    return [t.text for t in Translator.from_pretrained(device="cpu").translate(SENTENCES, "en", "fr", beam_size=4)]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_translator_on_cuda_matches_cpu(cpu_outputs: list[str], dtype: str) -> None:
    tr = Translator.from_pretrained(device="cuda", dtype=dtype)
    out = [t.text for t in tr.translate(SENTENCES, "en", "fr", beam_size=4)]
    same = sum(a == b for a, b in zip(out, cpu_outputs))
    # float32 differs from the CPU only in summation order; half precision may flip a near tie
    assert same >= (len(SENTENCES) - 1 if dtype == "float32" else int(0.75 * len(SENTENCES))), (dtype, same)


def test_cuda_batch_equals_one_by_one() -> None:
    tr = Translator.from_pretrained(device="cuda", dtype="float32")
    joined = [t.text for t in tr.translate(SENTENCES[:8], "en", "fr", beam_size=4)]
    alone = [tr.translate([s], "en", "fr", beam_size=4)[0].text for s in SENTENCES[:8]]
    assert joined == alone


def test_encoder_on_cuda_matches_cpu() -> None:
    texts = ["Open the file.", "Le chien dort sous le lit.", "a library for parsing XML"]
    cpu = SentenceEncoder.from_pretrained(device="cpu").encode(texts)
    gpu = SentenceEncoder.from_pretrained(device="cuda", dtype="float16").encode(texts)
    cos = (cpu * gpu).sum(1) / (np.linalg.norm(cpu, axis=1) * np.linalg.norm(gpu, axis=1))
    assert cos.min() > 0.999, cos
