"""Packed DiSAN inference (rendition.model.embedding.packed): the C kernel over packed rows against the direct
reference sentence by sentence, the packed forward against the padded model with the paper's direct
attention, and SentenceEncoder's packed passes against its padded buckets.

The packed path needs the C kernel; these tests do not skip without it: under
RENDITION_REQUIRE_NATIVE=1 (CI) a missing kernel is an error, elsewhere they fail."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import torch

from rendition.model.embedding import packed
from rendition.model.embedding.disan import DiSAN, DiSANConfig, t2t_reference
from rendition.model.embedding.encoder import SentenceEncoder
from rendition.model.tokenizer import Tokenizer

ROOT = Path(__file__).resolve().parents[3]
SPM = ROOT / "model" / "pretrained" / "translator" / "sentencepiece.model"
SENTS = ["A tool for converting audio files.", "x", "", "Outil de conversion de fichiers audio.", "Hello, how are you?"]
LENGTHS = [5, 0, 1, 13, 2, 40, 7, 1]


def _model(blocks: int, seed: int = 0, d_out: int | None = 20) -> DiSAN:
    torch.manual_seed(seed)
    m = DiSAN(DiSANConfig(vocab_size=100, d_embed=16, d_model=24, d_out=d_out, blocks=blocks, dropout=0.0)).eval()
    with torch.no_grad():  # larger gate and attention weights than the init, so every term matters
        for p in m.parameters():
            p.mul_(3.0)
    return m


def _seqs(lengths: list[int], seed: int = 0) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(1, 100) for _ in range(n)] for n in lengths]


def test_pack_layout():
    ids, off = packed.pack([[4, 5], [], [6], [7, 8, 9]])
    assert ids.tolist() == [4, 5, 6, 7, 8, 9] and off.tolist() == [0, 2, 2, 3, 6]
    ids, off = packed.pack([])
    assert ids.numel() == 0 and off.tolist() == [0]


@pytest.mark.parametrize("direction", ["fw", "bw"])
def test_t2t_packed_equals_reference_per_sentence(direction):
    g = torch.Generator().manual_seed(1)
    d = 19  # not a multiple of any vector width
    lengths = [3, 0, 1, 9, 30, 2]
    h, q, k = (torch.randn(sum(lengths), d, generator=g) * s for s in (1.0, 3.0, 3.0))
    _, off = packed.pack([[1] * n for n in lengths])
    out = packed.t2t_packed(h, q, k, off, direction)
    for b, n in enumerate(lengths):
        a, z = int(off[b]), int(off[b + 1])
        if n == 0:
            continue
        ref = t2t_reference(
            *(x[a:z].unsqueeze(0).double() for x in (h, q, k)), torch.ones(1, n, dtype=torch.bool), direction
        )
        torch.testing.assert_close(out[a:z].double(), ref[0], atol=2e-6, rtol=1e-5)
    # a sentence's first (fw) / last (bw) token has no key: 0, as in the padded form
    firsts = off[:-1][torch.tensor(lengths) > 0] if direction == "fw" else off[1:][torch.tensor(lengths) > 0] - 1
    assert out[firsts].abs().max() == 0


def test_t2t_packed_rejects_bad_offsets():
    h = torch.zeros(5, 4)
    for off in ([0, 3], [1, 5], [0, 4, 3, 5], []):
        with pytest.raises(ValueError, match="offsets"):
            packed.t2t_packed(h, h, h, torch.tensor(off, dtype=torch.long), "fw")
    with pytest.raises(ValueError, match="direction"):
        packed.t2t_packed(h, h, h, torch.tensor([0, 5]), "up")


@pytest.mark.parametrize("blocks", [1, 2])
@pytest.mark.parametrize("d_out", [20, None])
def test_packed_forward_equals_padded_direct_model(blocks, d_out):
    m = _model(blocks, d_out=d_out)
    assert packed.available(m)
    seqs = _seqs(LENGTHS)
    with torch.no_grad():
        ref = m(SentenceEncoder.pad(seqs), fast=False)  # padded, the paper's direct token2token form
        out = packed.packed_forward(m, *packed.pack(seqs))
    assert out.shape == (len(seqs), m.cfg.dim)
    torch.testing.assert_close(out, ref, atol=2e-5, rtol=1e-5)
    if d_out is None:
        assert out[1].abs().max() == 0  # the empty sentence pools to 0, as in the padded form


def test_packed_forward_is_independent_of_neighbours():
    m = _model(2)
    seqs = _seqs(LENGTHS, seed=3)
    with torch.no_grad():
        together = packed.packed_forward(m, *packed.pack(seqs))
        alone = torch.cat([packed.packed_forward(m, *packed.pack([s])) for s in seqs])
    torch.testing.assert_close(together, alone, atol=1e-6, rtol=1e-6)


def test_packed_forward_bfloat16_close_to_float32():
    m = _model(1)
    seqs = _seqs(LENGTHS, seed=4)
    with torch.no_grad():
        ref = packed.packed_forward(m, *packed.pack(seqs))
        half = packed.packed_forward(m.to(torch.bfloat16), *packed.pack(seqs))
    assert half.dtype == torch.bfloat16
    cos = torch.nn.functional.cosine_similarity(half.float(), ref, dim=-1)
    assert cos[torch.tensor(LENGTHS) > 0].min() > 0.999


def test_packed_forward_refuses_training_mode():
    m = _model(1).train()
    with pytest.raises(RuntimeError, match="inference"):
        packed.packed_forward(m, *packed.pack([[1, 2]]))


@pytest.fixture()
def encoder() -> SentenceEncoder:
    tok = Tokenizer(SPM)
    torch.manual_seed(0)
    cfg = DiSANConfig(vocab_size=tok.vocab_size, d_embed=16, d_model=12, d_out=10, max_length=24, dropout=0.0)
    return SentenceEncoder(DiSAN(cfg), tok, packed_tokens=16)


def test_passes_in_order_and_bounded(encoder):
    lengths = [5, 1, 9, 3, 3, 20, 7, 0, 16]
    p = encoder.passes(lengths)
    assert [i for x in p for i in x] == list(range(len(lengths)))  # input order, every index once
    assert all(sum(lengths[i] for i in x) <= 16 or len(x) == 1 for x in p)  # over the budget: alone
    assert [5] in p  # 20 tokens: a pass of its own
    assert all(len(x) <= 2 for x in encoder.passes(lengths, batch_size=2))


def test_encoder_packed_equals_padded_buckets(encoder, monkeypatch):
    assert encoder.backend == "cpu-kernel-packed"
    sents = SENTS * 3 + ["word " * 20]
    got = encoder.encode(sents, normalize=False)
    monkeypatch.setenv("RENDITION_DISAN_KERNEL", "0")  # no kernel: padded length buckets, eager tiles
    assert encoder.backend == "torch"
    ref = encoder.encode(sents, normalize=False)
    np.testing.assert_allclose(got, ref, atol=2e-5, rtol=1e-5)



def test_linear_layers_run_on_few_row_counts():
    sizes = {packed.rows(n) for n in range(1, packed.BLOCK_ROWS + 1)}
    assert len(sizes) <= 28  # (oneDNN keeps a primitive per shape: a server's batches leave at most these)
    assert all(n <= packed.rows(n) <= n + 63 for n in range(1, packed.BLOCK_ROWS + 1))


@pytest.mark.parametrize("T", [1, 16, 17, 300, 1024, 1025, 2500])
def test_blocked_padded_linear_equals_the_layer(T):
    torch.manual_seed(T)
    lin = torch.nn.Linear(24, 40)
    x = torch.randn(T, 24)
    seen: list[int] = []
    hook = lin.register_forward_hook(lambda m, args, out: seen.append(args[0].shape[0]))
    with torch.no_grad():
        got, want = packed.linear(lin, x), lin(x)
    hook.remove()
    torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-6)
    assert all(n == packed.rows(n) <= packed.BLOCK_ROWS for n in seen[:-1])
