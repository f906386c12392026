"""scripts/gpu_bundle.py and scripts/gpu-train.sh, on any machine: the int8 round trip against its
error bound, the choice of checkpoints to average, the en-de bundle (corpus, tokenizer, config),
and whole dry runs of the training call with a tiny model, en-fr and en-de (its parts joined give
back the exported average; en-de's scores come back)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("gpu_bundle", ROOT / "scripts" / "gpu_bundle.py")
assert spec is not None and spec.loader is not None
gpu_bundle = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu_bundle)


def test_pack_unpack_stays_within_half_a_step_per_row(tmp_path: Path) -> None:
    g = torch.Generator().manual_seed(0)
    weights = {
        "w": (torch.randn(64, 96, generator=g) * torch.linspace(0.01, 3, 64)[:, None]).half(),
        "emb": torch.randn(128, 48, generator=g).half(),
        "bias": torch.randn(96, generator=g).half(),  # a vector: kept as it is
        "small": torch.randn(8, 8, generator=g).half(),  # under 4,096 entries: kept as it is
    }
    (tmp_path / "m").mkdir()
    save_file(weights, str(tmp_path / "m" / "model.safetensors"))
    gpu_bundle.pack(tmp_path / "m", tmp_path / "p.safetensors")
    gpu_bundle.unpack(tmp_path / "p.safetensors", tmp_path / "u")
    back = load_file(str(tmp_path / "u" / "model.safetensors"))
    assert set(back) == set(weights)
    for name in ("bias", "small"):
        assert torch.equal(back[name], weights[name])
    for name in ("w", "emb"):
        w = weights[name].float()
        assert back[name].dtype == torch.float16
        half_step = w.abs().amax(dim=1, keepdim=True) / 127 / 2
        fp16_rounding = w.abs() * 2**-10
        assert bool(((back[name].float() - w).abs() <= half_step + fp16_rounding + 1e-7).all())
    packed = load_file(str(tmp_path / "p.safetensors"))
    assert packed["w.q"].dtype == torch.int8 and packed["w.scale"].shape == (64, 1)


def test_average_takes_the_last_half_of_the_run(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for step in (250, 500, 750, 1000, 1250, 1500, 1600):
        save_file({"model.x": torch.full((3,), float(step)), "opt.x.exp_avg": torch.zeros(3)}, str(run / f"checkpoint_{step}.safetensors"))
    save_file({"model.x": torch.zeros(3)}, str(run / "checkpoint_last.safetensors"))  # not a numbered checkpoint
    for name in ("config.json", "sentencepiece.model"):
        (run / name).write_text(name)
    assert gpu_bundle.average(run, tmp_path / "out", last=6) == ["1000", "1250", "1500", "1600"]
    mean = torch.full((3,), (1000 + 1250 + 1500 + 1600) / 4)  # exported in float16
    assert torch.allclose(load_file(str(tmp_path / "out" / "model.safetensors"))["x"].float(), mean, rtol=2**-10)
    assert gpu_bundle.average(run, tmp_path / "out2", last=2) == ["1500", "1600"]
    assert json.loads((tmp_path / "out2" / "averaged.json").read_text()) == {"steps": [1500, 1600]}


def test_gpu_train_dry_run_brings_back_the_export_in_parts(tmp_path: Path) -> None:
    from rendition.model.translation.transformer import Transformer, TransformerConfig

    shipped = TransformerConfig.load(ROOT / "model" / "pretrained" / "translator" / "config.json")
    tiny = replace(shipped, d_model=32, n_heads=2, d_ff=64, n_encoder_layers=1, n_decoder_layers=1)
    (tmp_path / "init").mkdir()
    save_file({k: v.half() for k, v in Transformer(tiny).state_dict().items()}, str(tmp_path / "init" / "model.safetensors"))
    gpu_bundle.pack(tmp_path / "init", tmp_path / "init.i8.safetensors")
    rows = [f"ui\tOpen file number {i}\tOuvrir le fichier numéro {i}" for i in range(200)]
    subprocess.run(["xz", "-z", "-c"], input="\n".join(rows).encode() + b"\n", stdout=(tmp_path / "c.tsv.xz").open("wb"), check=True)
    args = (
        "--max-tokens 800 --save-every 2 --eval-every 100 --bleu-sentences 0 --valid-sets en-fr --threads 1 "
        f"--d-model 32 --n-heads 2 --d-ff 64 --n-encoder-layers 1 --n-decoder-layers 1 --max-relative-position {shipped.max_relative_position}"
    )
    dry_run({"OUT": str(tmp_path / "out"), "TRAIN_CORPUS_XZ": str(tmp_path / "c.tsv.xz"), "TRAIN_INIT": str(tmp_path / "init.i8.safetensors"), "TRAIN_ARGS": args})
    joined = joined_parts(tmp_path / "out")
    assert set(joined) == set(Transformer(tiny).state_dict()) and all(v.dtype == torch.float16 for v in joined.values())
    listing = subprocess.run(["tar", "tzf", str(tmp_path / "out" / "run.tgz")], capture_output=True, text=True, check=True).stdout
    assert "train.log" in listing and "run/log.jsonl" in listing and "export/averaged.json" in listing


def dry_run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHON": sys.executable, "TRAIN_DEVICE": "cpu", "TRAIN_MINUTES": "0.02", **env}
    r = subprocess.run([str(ROOT / "scripts" / "gpu-train.sh"), "--dry-run"], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "training ended with status 0" in r.stdout, r.stdout
    return r


def joined_parts(out: Path) -> dict[str, torch.Tensor]:
    parts = sorted(out.glob("model.safetensors.part-*"))
    assert parts and all(p.stat().st_size <= 15 * 2**20 for p in parts)
    (out / "joined.safetensors").write_bytes(b"".join(p.read_bytes() for p in parts))
    return load_file(str(out / "joined.safetensors"))


@pytest.fixture(scope="module")
def en_de_bundle(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A small en-de corpus (DDTP and dictionary rows of the held-out splits) and its bundle, with
    a tiny model's shape."""
    from rendition.model.training.data import SPLITS_DIR, read_tsv
    from rendition.model.translation.transformer import TransformerConfig

    d = tmp_path_factory.mktemp("en-de")
    rows = [f"ddtp\t{p.src}\t{p.tgt}" for p in read_tsv(SPLITS_DIR / "valid.en-de.tsv")[:600]]
    rows += [f"dict\t{p.src}\t{p.tgt}" for p in read_tsv(SPLITS_DIR / "valid.dict.en-de.tsv")[:400]]
    (d / "corpus.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    shipped = TransformerConfig.load(gpu_bundle.SHIPPED_CONFIG)
    replace(shipped, d_model=32, n_heads=2, d_ff=64, n_encoder_layers=1, n_decoder_layers=1).save(d / "tiny.json")
    gpu_bundle.bundle("en-de", d / "corpus.tsv", d / "bundle", cap="dict=100", vocab_size=1000, shape=d / "tiny.json")
    return d / "corpus.tsv", d / "bundle"


def test_en_de_bundle_holds_the_corpus_its_tokenizer_and_the_config(en_de_bundle: tuple[Path, Path]) -> None:
    from rendition.model.tokenizer import UNK_ID, Tokenizer
    from rendition.model.translation.transformer import TransformerConfig

    corpus, bundle = en_de_bundle
    assert sorted(p.name for p in bundle.iterdir()) == sorted(gpu_bundle.BUNDLE_FILES)
    unpacked = subprocess.run(["xz", "-dc", str(bundle / "corpus.tsv.xz")], capture_output=True, check=True).stdout
    assert unpacked == corpus.read_bytes()
    tok = Tokenizer(bundle / "sentencepiece.model")
    assert tok.languages() == ["en", "de"] and tok.vocab_size == 1000
    assert UNK_ID not in tok.encode(["Größe: 5 € – 日本"])[0]  # byte fallback: no unknown piece
    cfg = TransformerConfig.load(bundle / "config.json")
    assert cfg.languages == ("en", "de") and cfg.vocab_size == 1000 and (cfg.d_model, cfg.n_encoder_layers) == (32, 1)


def test_gpu_train_dry_run_en_de_trains_from_scratch_and_scores_both_ways(en_de_bundle: tuple[Path, Path], tmp_path: Path) -> None:
    from rendition.model.translation.transformer import Transformer, TransformerConfig

    _, bundle = en_de_bundle
    args = "--max-tokens 800 --save-every 2 --eval-every 100 --bleu-sentences 0 --valid-sets en-de --threads 1 --cap dict=100"
    out = tmp_path / "out"
    r = dry_run({"OUT": str(out), "TRAIN_PAIR": "en-de", "TRAIN_BUNDLE": str(bundle), "TRAIN_ARGS": args, "TRAIN_EVAL_LIMIT": "3"})
    assert "the check skipped" in r.stdout
    cfg = TransformerConfig.load(out / "config.json")
    assert cfg.languages == ("en", "de") and cfg.d_model == 32  # the bundle's shape, not the shipped one
    joined = joined_parts(out)
    assert set(joined) == set(Transformer(cfg).state_dict()) and all(v.dtype == torch.float16 for v in joined.values())
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(("model.", "joined."))) == ["config.json", "eval.json", "run.tgz"]
    scores = json.loads((out / "eval.json").read_text())
    assert set(scores) == {"en-de", "de-en"} and all(s["sentences"] == 3 and s["beam_size"] == 4 for s in scores.values())
    train_config = json.loads(subprocess.run(["tar", "xzOf", str(out / "run.tgz"), "run/train_config.json"], capture_output=True, check=True).stdout)
    assert train_config["pairs"] == ["en-de"] and train_config["cap"] == "dict=100" and train_config["init_from"] == ""


def test_mix_counts_an_epoch_of_the_capped_and_upsampled_rows(en_de_bundle: tuple[Path, Path]) -> None:
    from rendition.model.tokenizer import Tokenizer
    from rendition.model.training.corpus.rows import read_rows

    corpus, bundle = en_de_bundle
    shares = gpu_bundle.mix(corpus, bundle / "sentencepiece.model", "dict=100", "ddtp=2")
    ddtp = [(e, x) for s, e, x in read_rows(corpus) if s == "ddtp"]
    tok = Tokenizer(bundle / "sentencepiece.model")
    assert shares["ddtp"] == (2 * 600, 2 * sum(len(ids) for ids in tok.encode([t for pair in ddtp for t in pair])))
    assert shares["dict"][0] == 100 and set(shares) == {"ddtp", "dict"}


def test_transplant_keeps_the_body_and_the_rows_of_shared_pieces(en_de_bundle: tuple[Path, Path], tmp_path: Path) -> None:
    """The en-fr translator's body under the en-de tokenizer: a tiny stand-in with the shipped
    tokenizer, moved onto the bundle's (tiny shape, 1,000 pieces)."""
    import shutil

    from rendition.model.tokenizer import Tokenizer
    from rendition.model.translation.transformer import Transformer, TransformerConfig

    _, bundle = en_de_bundle
    shipped_dir = ROOT / "model" / "pretrained" / "translator"
    cfg = TransformerConfig.load(bundle / "config.json")
    old = {k: v.half() for k, v in Transformer(replace(cfg, vocab_size=16_000, languages=("en", "fr"))).state_dict().items()}
    (tmp_path / "enfr").mkdir()
    save_file(old, str(tmp_path / "enfr" / "model.safetensors"))
    shutil.copy(shipped_dir / "sentencepiece.model", tmp_path / "enfr" / "sentencepiece.model")
    for name in ("config.json", "sentencepiece.model"):
        shutil.copy(bundle / name, tmp_path / name)
    old_pieces = Tokenizer(shipped_dir / "sentencepiece.model").pieces()
    new_pieces = Tokenizer(bundle / "sentencepiece.model").pieces()
    shared = set(old_pieces) & set(new_pieces)
    assert gpu_bundle.transplant(tmp_path / "enfr", tmp_path) == len(shared) > 300
    gpu_bundle.unpack(tmp_path / "init.i8.safetensors", tmp_path / "init")
    init = load_file(str(tmp_path / "init" / "model.safetensors"))
    assert set(init) == set(old) and init["embed.weight"].shape == (1000, cfg.d_model)

    def close(a: torch.Tensor, b: torch.Tensor) -> bool:  # within the int8 packing's half step per row
        return bool(((a.float() - b.float()).abs() <= b.float().abs().amax(dim=-1, keepdim=True) / 254 + 1e-3).all())

    assert all(close(init[k], old[k]) for k in old if k != "embed.weight")
    rows = [(new_pieces.index(p), old_pieces.index(p)) for p in sorted(shared)]
    assert close(init["embed.weight"][[n for n, _ in rows]], old["embed.weight"][[o for _, o in rows]])
    fresh = [i for i, p in enumerate(new_pieces) if p not in shared]
    torch.manual_seed(1)
    assert close(init["embed.weight"][fresh], Transformer(cfg).embed.weight.detach()[fresh].half())  # a fresh model's rows

    # a bundle holding the transplant starts the en-de call from it
    shutil.copy(bundle / "corpus.tsv.xz", tmp_path / "corpus.tsv.xz")
    args = "--max-tokens 800 --save-every 2 --eval-every 100 --bleu-sentences 0 --valid-sets en-de --threads 1"
    r = dry_run({"OUT": str(tmp_path / "out"), "TRAIN_PAIR": "en-de", "TRAIN_BUNDLE": str(tmp_path), "TRAIN_ARGS": args, "TRAIN_EVAL_LIMIT": "2"})
    log = subprocess.run(["tar", "xzOf", str(tmp_path / "out" / "run.tgz"), "train.log"], capture_output=True, text=True, check=True).stdout
    assert "--init-from" in r.stdout and "initialised from" in log
