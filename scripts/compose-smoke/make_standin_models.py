"""Tiny random translator + encoder directories for the compose smoke test (run inside the image).

Used only when the shipped weights (model/pretrained/*/model.safetensors) are not there yet: the
smoke test checks deployment plumbing, not translation quality.

    python make_standin_models.py OUT_DIR   # writes OUT_DIR/translator and OUT_DIR/encoder
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file

from rendition.model.embedding.disan import DiSAN, DiSANConfig
from rendition.model.translation.transformer import Transformer, TransformerConfig
from rendition.model.translation.translator import DEFAULT_TRANSLATOR


def main(out: Path) -> None:
    torch.manual_seed(0)
    spm = DEFAULT_TRANSLATOR / "sentencepiece.model"

    tdir = out / "translator"
    tdir.mkdir(parents=True, exist_ok=True)
    tcfg = TransformerConfig(
        vocab_size=8000,
        d_model=32,
        n_heads=2,
        d_ff=64,
        n_encoder_layers=1,
        n_decoder_layers=1,
        languages=("en", "fr", "de"),
    )
    save_file(Transformer(tcfg).state_dict(), str(tdir / "model.safetensors"))
    tcfg.save(tdir / "config.json")
    shutil.copy(spm, tdir / "sentencepiece.model")

    edir = out / "encoder"
    edir.mkdir(parents=True, exist_ok=True)
    ecfg = DiSANConfig(vocab_size=8000, d_embed=32, d_model=32, d_out=48)
    save_file({k: v.contiguous() for k, v in DiSAN(ecfg).state_dict().items()}, str(edir / "model.safetensors"))
    ecfg.save(edir / "config.json")
    shutil.copy(spm, edir / "sentencepiece.model")
    print(f"stand-in models written to {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
