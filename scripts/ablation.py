"""The paper's ablation on our data (Shaw et al. 2018, Tables 1-3) at an equal, short budget.

Every variant trains the same small model (d_model 128, 4 heads, d_ff 512, 3 encoder / 1 decoder
layers) for the same number of steps and batch size on en<->fr, then reports validation loss and
greedy BLEU on 300 validation sentences per direction.  Results go to docs/experiments.md.

    python scripts/ablation.py [--steps 600] [--only abs rel16 ...]
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from dataclasses import replace
from pathlib import Path

from rendition.model.training.train import TrainConfig, train
from rendition.model.translation.transformer import TransformerConfig
from rendition.model.translation.translator import DEFAULT_TRANSLATOR

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
        write_table(a.runs)


def budgets(runs: Path) -> dict[int, dict[str, dict]]:
    """Every validation row of every variant's run log, by budget (step) then variant."""
    out: dict[int, dict[str, dict]] = {}
    for name in VARIANTS:
        log = runs / name / "log.jsonl"
        if log.is_file():
            for row in map(json.loads, log.read_text().splitlines()):
                if row["kind"] == "valid":
                    out.setdefault(row["step"], {})[name] = row
    return out


START, END = "<!-- results:start (written by scripts/ablation.py) -->", "<!-- results:end -->"


def write_table(runs: Path, doc: Path = ROOT / "docs" / "experiments.md") -> None:
    """One table per budget that at least two variants reached, largest first, between the
    markers in docs/experiments.md (the prose around them is kept)."""
    lines = [START]
    for steps, rows in sorted(budgets(runs).items(), reverse=True):
        if len(rows) < 2:
            continue
        lines += ["", f"**{steps} steps**", "", "| variant | valid CE | BLEU en-fr | BLEU fr-en |", "|---|---|---|---|"]
        for name, r in rows.items():
            lines.append(f"| {VARIANTS[name][0]} | {r['valid_loss']:.3f} | {r['bleu_en-fr']:.1f} | {r['bleu_fr-en']:.1f} |")
    lines += ["", END]
    text = doc.read_text() if doc.is_file() else f"# Ablation\n\n{START}\n{END}\n"
    if START not in text:
        text += f"\n{START}\n{END}\n"
    head, rest = text.split(START, 1)
    tail = rest.split(END, 1)[1] if END in rest else ""
    doc.write_text(head + "\n".join(lines) + tail)


if __name__ == "__main__":
    main()
