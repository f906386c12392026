"""The paper's ablation on our data (Shaw et al. 2018, Tables 1-3) at an equal, short budget.

Every variant trains the same small model (d_model 128, 4 heads, d_ff 512, 3 encoder / 1 decoder
layers) for the same number of steps and batch size on en<->fr, then reports validation loss and
greedy BLEU on 300 validation sentences per direction.  Results go to docs/ablation.md.

    python scripts/ablation.py [--steps 600] [--only abs rel16 ...]
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from dataclasses import replace
from pathlib import Path

from model.train import TrainConfig, train
from model.transformer import TransformerConfig
from model.translator import DEFAULT_TRANSLATOR

ROOT = Path(__file__).resolve().parent.parent
BASE = TransformerConfig(vocab_size=0, d_model=128, n_heads=4, d_ff=512, n_encoder_layers=3, n_decoder_layers=1)
VARIANTS = {
    "abs": ("absolute sinusoidal", replace(BASE, relative_positions=False, sinusoidal_positions=True)),
    "rel16": ("relative, k=16", BASE),
    "rel0": ("relative, k=0", replace(BASE, max_relative_position=0)),
    "rel2": ("relative, k=2", replace(BASE, max_relative_position=2)),
    "rel64": ("relative, k=64", replace(BASE, max_relative_position=64)),
    "rel16keys": ("relative, k=16, keys only (no a^V)", replace(BASE, relative_values=False)),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--only", nargs="+", default=list(VARIANTS))
    ap.add_argument("--runs", type=Path, default=ROOT / "runs" / "ablation")
    a = ap.parse_args()
    results_file = a.runs / "results.json"
    results = json.loads(results_file.read_text()) if results_file.exists() else {}
    for name in a.only:
        label, mcfg = VARIANTS[name]
        if results.get(name, {}).get("step", 0) >= a.steps:
            continue  # done at this budget (a larger --steps resumes from the run's last checkpoint)
        run = a.runs / name
        run.mkdir(parents=True, exist_ok=True)
        shutil.copy(DEFAULT_TRANSLATOR / "sentencepiece.model", run / "sentencepiece.model")
        cfg = TrainConfig(
            run_dir=str(run), max_steps=a.steps, max_minutes=1e9, eval_every=a.steps, save_every=100,
            keep_checkpoints=1, bleu_sentences=300, threads=a.threads, max_tokens=2500, warmup=300, lr=1.5e-3,
        )
        t0 = time.time()
        train(cfg, mcfg)
        rows = [json.loads(x) for x in (run / "log.jsonl").read_text().splitlines()]
        last = [r for r in rows if r["kind"] == "valid"][-1]
        results[name] = {"label": label, **{k: v for k, v in last.items() if k != "kind"}, "wall_s": time.time() - t0}
        results_file.write_text(json.dumps(results, indent=2))
        write_table(results, a.steps)


def write_table(results: dict, steps: int) -> None:
    lines = [
        "# Ablation: position representations (Shaw et al. 2018, Tables 1-3, on DDTP en<->fr)",
        "",
        f"Budget per variant: {steps} steps of ~2,500-token batches (same data order), d_model 128, 4 heads,",
        "d_ff 512, 3 encoder / 1 decoder layers, Adam lr 1.5e-3 with 300 warm-up steps, label smoothing 0.1,",
        "1 CPU thread (shared with other jobs; wall time is indicative only).  Validation: cross-entropy on",
        "500 validation pairs x 2 directions; BLEU is greedy on the first 300 validation sentences per direction",
        "(sacreBLEU, 13a).  Short budget: differences of a point or less are within noise.",
        "",
        "| variant | valid CE | BLEU en-fr | BLEU fr-en |",
        "|---|---|---|---|",
    ]
    for name in VARIANTS:
        if name in results:
            r = results[name]
            lines.append(
                f"| {r['label']} | {r['valid_loss']:.3f} | {r['bleu_en-fr']:.1f} | {r['bleu_fr-en']:.1f} |"
            )
    (ROOT / "docs" / "ablation.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
