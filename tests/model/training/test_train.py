"""Training loop: schedule, checkpoints, resume, averaging export (rendition.model.training.train)."""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from rendition.model.training.data import SPLITS_DIR, read_tsv, write_tsv
from rendition.model.training.train import TrainConfig, export, lr_at, train
from rendition.model.translation.transformer import Transformer, TransformerConfig
from rendition.model.weights import load_weights


def test_lr_schedule_is_linear_warmup_then_inverse_sqrt() -> None:
    cfg = TrainConfig(lr=1e-3, warmup=100)
    assert lr_at(1, cfg) == pytest.approx(1e-5)
    assert lr_at(50, cfg) == pytest.approx(5e-4)
    assert lr_at(100, cfg) == pytest.approx(1e-3)
    assert lr_at(400, cfg) == pytest.approx(1e-3 * math.sqrt(100 / 400))


@pytest.fixture(scope="module")
def splits(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pairs = read_tsv(SPLITS_DIR / "valid.en-fr.tsv")
    d = tmp_path_factory.mktemp("splits")
    write_tsv(d / "train.en-fr.tsv", pairs[:400])
    write_tsv(d / "valid.en-fr.tsv", pairs[400:440])
    return d


def test_train_checkpoints_resume_and_export(splits: Path, tmp_path: Path) -> None:
    torch.manual_seed(0)
    run = tmp_path / "run"
    cfg = TrainConfig(
        run_dir=str(run), vocab_size=600, tokenizer_langs=("en", "fr"), max_tokens=600, warmup=5,
        max_steps=6, max_minutes=60, eval_every=6, save_every=2, keep_checkpoints=2, bleu_sentences=4, threads=1,
    )  # fmt: skip
    mcfg = TransformerConfig(vocab_size=0, d_model=32, n_heads=2, d_ff=64, n_encoder_layers=1, n_decoder_layers=1)
    train(cfg, mcfg, splits)
    kept = sorted(p.name for p in run.glob("checkpoint_[0-9]*.safetensors"))
    assert kept == ["checkpoint_4.safetensors", "checkpoint_6.safetensors"]  # keep_checkpoints=2
    log = [json.loads(x) for x in (run / "log.jsonl").read_text().splitlines()]
    valid = [r for r in log if r["kind"] == "valid"]
    assert valid[-1]["step"] == 6 and math.isfinite(valid[-1]["valid_loss"]) and "bleu_en-fr" in valid[-1]
    assert (run / "curves.png").stat().st_size > 0

    # Resume to step 9 with a different shape on the command line: the run keeps its stored shape
    # and continues from step 6 (the optimizer state comes back too: no pickle, safetensors only).
    train(replace(cfg, max_steps=9, eval_every=100), replace(mcfg, d_model=64), splits)
    assert TransformerConfig.load(run / "config.json").d_model == 32
    steps = [json.loads(x)["step"] for x in (run / "log.jsonl").read_text().splitlines()]
    assert max(steps) == 9
    kept = sorted(int(p.stem.split("_")[1]) for p in run.glob("checkpoint_[0-9]*.safetensors"))
    assert kept == [8, 9]

    # export averages the last n checkpoints and writes a loadable model directory
    out = export(run, tmp_path / "out", last_n=2, dtype=torch.float32)
    a, b = (load_file(str(run / f"checkpoint_{s}.safetensors")) for s in (8, 9))
    got = load_file(str(out / "model.safetensors"))
    for k, v in got.items():
        torch.testing.assert_close(v, (a[f"model.{k}"] + b[f"model.{k}"]) / 2)
    m = Transformer(TransformerConfig.load(out / "config.json"))
    load_weights(m, out / "model.safetensors")
    assert (out / "sentencepiece.model").read_bytes() == (run / "sentencepiece.model").read_bytes()

    # blended with another model of the run's shape and tokenizer (here checkpoint 8's weights alone):
    # (1 - w) x the average + w x the other
    other = tmp_path / "other"
    other.mkdir()
    save_file({k[len("model.") :]: v for k, v in a.items() if k.startswith("model.")}, str(other / "model.safetensors"))
    shutil.copy(run / "sentencepiece.model", other / "sentencepiece.model")
    export(run, tmp_path / "blend", last_n=2, blend=(other, 0.25))
    blended = load_file(str(tmp_path / "blend" / "model.safetensors"))
    for k, v in blended.items():
        want = 0.75 * (a[f"model.{k}"] + b[f"model.{k}"]) / 2 + 0.25 * a[f"model.{k}"]
        torch.testing.assert_close(v.float(), want, atol=2e-3, rtol=2e-3)  # (written in float16)
    with pytest.raises(ValueError, match="blend weight"):
        export(run, tmp_path / "bad", blend=(other, 1.5))
    (other / "sentencepiece.model").write_bytes(b"another")
    with pytest.raises(ValueError, match="another tokenizer"):
        export(run, tmp_path / "bad", blend=(other, 0.5))


def test_corpus_rows_train_the_directions_their_source_names(tmp_path: Path) -> None:
    from rendition.model.training.data import Pair
    from rendition.model.training.train import read_corpus_pairs

    corpus = tmp_path / "corpus.tsv"
    corpus.write_text(
        "ui\tOpen\tOuvrir\nrealised\tThe dog sleeps.\tLe chien dort.\n"
        "realised>fr\tThe infant sleeps.\tL'enfant dort.\nlexicon>en\tthe fridge\tle frigo\n",
        encoding="utf-8",
    )
    pairs = read_corpus_pairs(corpus, "realised=2,lexicon=3")
    assert pairs["both"] == [Pair("Open", "Ouvrir")] + [Pair("The dog sleeps.", "Le chien dort.")] * 2
    assert pairs["en-fr"] == [Pair("The infant sleeps.", "L'enfant dort.")] * 2  # learnt only into French
    assert pairs["fr-en"] == [Pair("the fridge", "le frigo")] * 3  # only into English
    corpus.write_text("realised>de\ta\tb\n", encoding="utf-8")
    with pytest.raises(ValueError, match="NAME>en or NAME>fr"):
        read_corpus_pairs(corpus, "")
    assert read_corpus_pairs(corpus, "", lang="de") == {"both": [], "en-de": [Pair("a", "b")], "de-en": []}


def test_corpus_cap_applies_before_the_upsampling(tmp_path: Path) -> None:
    from rendition.model.training.train import read_corpus_pairs

    corpus = tmp_path / "corpus.tsv"
    corpus.write_text(
        "".join(f"dict\tword{i}\tWort{i}\n" for i in range(20)) + "ddtp\tA tool.\tEin Werkzeug.\n", encoding="utf-8"
    )
    pairs = read_corpus_pairs(corpus, "dict=2,ddtp=3", cap="dict=5", lang="de", seed=3)["both"]
    assert len(pairs) == 5 * 2 + 3 and len(set(pairs)) == 6


@pytest.fixture(scope="module")
def anchor_run(splits: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[TrainConfig, TransformerConfig, Path]:
    """A tiny trained run (no dropout) and its export, the anchor of the tests below."""
    torch.manual_seed(0)
    d = tmp_path_factory.mktemp("anchor")
    cfg = TrainConfig(
        run_dir=str(d / "run"), vocab_size=600, tokenizer_langs=("en", "fr"), max_tokens=600, warmup=5,
        max_steps=4, max_minutes=60, eval_every=100, save_every=4, keep_checkpoints=1, bleu_sentences=0, threads=1,
    )  # fmt: skip
    mcfg = TransformerConfig(vocab_size=0, d_model=32, n_heads=2, d_ff=64, n_encoder_layers=1, n_decoder_layers=1, dropout=0.0)
    train(cfg, mcfg, splits)
    return cfg, mcfg, export(Path(cfg.run_dir), d / "export", dtype=torch.float32)


def test_anchored_loss_adds_the_anchor_kl_to_the_reference_loss_per_token(anchor_run: tuple[TrainConfig, TransformerConfig, Path], tmp_path: Path) -> None:
    from rendition.model.tokenizer import PAD_ID, Tokenizer
    from rendition.model.training.train import Data, Session, collate, load_anchor, load_examples, read_tsv

    cfg, mcfg, anchor_dir = anchor_run
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(anchor_dir / "sentencepiece.model", run / "sentencepiece.model")
    w = 3.0
    cfg = replace(cfg, run_dir=str(run), anchor_from=str(anchor_dir), anchor_weight=w, label_smoothing=0.1)
    model_cfg = TransformerConfig.load(anchor_dir / "config.json")
    anchor = load_anchor(cfg, run, model_cfg)
    tok = Tokenizer(str(run / "sentencepiece.model"))
    examples = load_examples(tok, read_tsv(SPLITS_DIR / "valid.en-fr.tsv")[:4], "en", "fr", 160)
    batch = collate(examples, [0, 1, 2, 3])
    flags = torch.tensor([True, False, True, False])

    def session(seed: int) -> Session:
        torch.manual_seed(seed)
        model = Transformer(model_cfg)
        opt = torch.optim.Adam(model.parameters())
        return Session(cfg, run, model, opt, {"step": 0}, Data(examples, [], []), tok, None, anchor)  # type: ignore[arg-type]

    # the model is the anchor (no dropout): every anchored token's KL is 0, so the loss is the references' alone
    s = session(0)
    s.model.load_state_dict(anchor.state_dict())
    plain = float(s.step(batch, torch.zeros(4, dtype=torch.bool)))  # no row anchored
    s.model.load_state_dict(anchor.state_dict())
    assert float(s.step(batch, torch.ones(4, dtype=torch.bool))) == pytest.approx(plain, rel=1e-5)

    # another model: the loss against a per-token computation in float64
    s = session(1)
    src, tin, tout = batch
    with torch.no_grad():  # (before the step moves the weights)
        logp = s.model(src, tin).double().log_softmax(-1)
        loga = anchor(src, tin).double().log_softmax(-1)
    got = float(s.step(batch, flags))
    total, n, V, eps = 0.0, 0, logp.shape[-1], cfg.label_smoothing
    for b in range(4):
        for t in range(tout.shape[1]):
            y = int(tout[b, t])
            if y == PAD_ID:
                continue
            ce = -(1 - eps) * logp[b, t, y] - eps / V * logp[b, t].sum()  # label smoothing over the whole vocabulary
            kl = (loga[b, t].exp() * (loga[b, t] - logp[b, t])).sum()
            total += float(ce + w * kl) if flags[b] else float(ce)
            n += 1
    assert got == pytest.approx(total / n, rel=1e-4)
    with pytest.raises(ValueError, match="anchor weight"):
        load_anchor(replace(cfg, anchor_weight=-1.0), run, model_cfg)


def test_anchor_skip_rows_and_a_foreign_anchor(anchor_run: tuple[TrainConfig, TransformerConfig, Path], tmp_path: Path) -> None:
    from rendition.model.tokenizer import Tokenizer
    from rendition.model.training.train import load_anchor, load_data, read_corpus_pairs, source_pairs

    cfg, mcfg, anchor_dir = anchor_run
    corpus = tmp_path / "corpus.tsv"
    corpus.write_text(
        "ui\tOpen\tOuvrir\nconversation\tI am hungry.\tJ'ai faim.\nconversation>fr\tHe has been waiting.\tIl attend.\n"
        "ddtp\tA tool.\tUn outil.\n",
        encoding="utf-8",
    )
    skip = source_pairs(corpus, {"conversation"})
    assert {p.src for p in skip} == {"I am hungry.", "He has been waiting."}
    tok = Tokenizer(str(anchor_dir / "sentencepiece.model"))
    data = load_data(replace(cfg, corpus=str(corpus), valid_sets=""), tok, read_corpus_pairs(corpus, ""), SPLITS_DIR, skip)
    assert len(data.train) == len(data.anchored) == 7  # three rows both ways, one into French only
    learnt = {tok.decode([ex[1]])[0]: a for ex, a in zip(data.train, data.anchored)}
    assert learnt == {"Ouvrir": True, "Open": True, "Un outil.": True, "A tool.": True, "J'ai faim.": False, "I am hungry.": False, "Il attend.": False}

    # an anchor with another tokenizer or shape is refused
    run = tmp_path / "run"
    run.mkdir()
    (run / "sentencepiece.model").write_bytes(b"another")
    with pytest.raises(ValueError, match="another tokenizer"):
        load_anchor(replace(cfg, anchor_from=str(anchor_dir)), run, mcfg)
    shutil.copy(anchor_dir / "sentencepiece.model", run / "sentencepiece.model")
    with pytest.raises(ValueError, match="without dropout"):
        load_anchor(replace(cfg, anchor_from=str(anchor_dir)), run, replace(TransformerConfig.load(anchor_dir / "config.json"), dropout=0.1))
    with pytest.raises(ValueError, match="another shape"):
        load_anchor(replace(cfg, anchor_from=str(anchor_dir)), run, replace(TransformerConfig.load(anchor_dir / "config.json"), d_model=64))
