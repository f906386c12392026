"""scripts/gpu_bundle.py and scripts/gpu-train.sh, on any machine: the int8 round trip against its
error bound, the choice of checkpoints to average, and a whole dry run of the training call with a
tiny model (its parts joined give back the exported average)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

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
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "OUT": str(tmp_path / "out"),
        "TRAIN_DEVICE": "cpu",
        "TRAIN_MINUTES": "0.02",
        "TRAIN_CORPUS_XZ": str(tmp_path / "c.tsv.xz"),
        "TRAIN_INIT": str(tmp_path / "init.i8.safetensors"),
        "TRAIN_ARGS": args,
    }
    r = subprocess.run([str(ROOT / "scripts" / "gpu-train.sh"), "--dry-run"], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "training ended with status 0" in r.stdout, r.stdout
    parts = sorted((tmp_path / "out").glob("model.safetensors.part-*"))
    assert parts and all(p.stat().st_size <= 15 * 2**20 for p in parts)
    (tmp_path / "joined.safetensors").write_bytes(b"".join(p.read_bytes() for p in parts))
    joined = load_file(str(tmp_path / "joined.safetensors"))
    assert set(joined) == set(Transformer(tiny).state_dict()) and all(v.dtype == torch.float16 for v in joined.values())
    listing = subprocess.run(["tar", "tzf", str(tmp_path / "out" / "run.tgz")], capture_output=True, text=True, check=True).stdout
    assert "train.log" in listing and "run/log.jsonl" in listing and "export/averaged.json" in listing
