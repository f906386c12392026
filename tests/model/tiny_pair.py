"""A real second language pair for the tests: a tiny English <-> German translator trained with
the project's own training code (``rendition.model.training.train``) on short rows of the en-de
validation split, about ten seconds of one CPU core.  Its translations are poor but depend on the
input; it is a real model all the same (its own tokenizer, config and weights, loaded as a pair
package)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import torch

from rendition.model.training.data import SPLITS_DIR, read_tsv, write_tsv
from rendition.model.training.train import TrainConfig, export, train
from rendition.model.translation.transformer import TransformerConfig


def train_tiny_en_de(root: Path) -> Path:
    """Train it under ``root`` and return its model directory (``root / "en-de"``)."""
    rows = [r for r in read_tsv(SPLITS_DIR / "valid.en-de.tsv") if len(r.src) < 40][:110]
    splits = root / "splits"
    splits.mkdir(parents=True)
    write_tsv(splits / "train.en-de.tsv", rows[:100])
    write_tsv(splits / "valid.en-de.tsv", rows[100:])
    torch.manual_seed(0)
    cfg = TrainConfig(
        run_dir=str(root / "run"), pairs=("en-de",), vocab_size=300, tokenizer_langs=("en", "de"), max_tokens=600,
        lr=3e-3, warmup=20, max_steps=300, max_minutes=5, eval_every=1000, save_every=300, keep_checkpoints=1,
        bleu_sentences=2, threads=1, valid_sets="en-de",
    )  # fmt: skip
    model = TransformerConfig(vocab_size=0, d_model=64, n_heads=2, d_ff=128, n_encoder_layers=1, n_decoder_layers=1)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):  # (its progress bar)
        train(cfg, model, splits)
    return export(root / "run", root / "en-de", dtype=torch.float32)
