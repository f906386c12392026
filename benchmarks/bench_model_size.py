"""Decoding speed of translators of different sizes, side by side in one run.

For the size/speed trade-off behind the shipped model (docs/translator.md): each model
translates the same held-out sentences (DDTP test and the everyday test set, en->fr, beam 4,
batches of 32) at each thread count; rounds alternate between the models and the median is
reported, as sentences/s and output tokens/s.

    python benchmarks/bench_model_size.py MODEL_DIR [MODEL_DIR ...] [--threads 1 2] [--sentences 256] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from rendition.model.training.data import SPLITS_DIR, read_tsv
from rendition.model.translation.translator import Translator


def run(tr: Translator, sentences: list[str], batch: int) -> tuple[float, int]:
    t0 = time.perf_counter()
    tokens = 0
    for i in range(0, len(sentences), batch):
        outs = tr.translate(sentences[i : i + batch], source="en", target="fr", beam_size=4)
        tokens += sum(len(o.tokens) for o in outs)
    return time.perf_counter() - t0, tokens


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+", type=Path)
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--sentences", type=int, default=256, help="per test set")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    sets = {name: [p.src for p in read_tsv(SPLITS_DIR / f"test.{name}.tsv")[: a.sentences]] for name in ("en-fr", "everyday.en-fr")}
    models = {str(m): Translator.from_pretrained(m) for m in a.models}
    for name, tr in models.items():
        print(f"{name}: {tr.model.num_parameters() / 1e6:.1f}M parameters, vocabulary {tr.tokenizer.vocab_size}")
    for threads in a.threads:
        torch.set_num_threads(threads)
        for set_name, sents in sets.items():
            times: dict[str, list[tuple[float, int]]] = {m: [] for m in models}
            for tr in models.values():  # warm-up
                run(tr, sents[: a.batch], a.batch)
            for _ in range(a.rounds):
                for name, tr in models.items():
                    times[name].append(run(tr, sents, a.batch))
            for name in models:
                secs = statistics.median(t for t, _ in times[name])
                toks = times[name][0][1]
                print(f"threads={threads} set={set_name:<15} {name}: {len(sents) / secs:7.1f} sentences/s  {toks / secs:8.0f} output tokens/s  ({secs:.2f} s)")


if __name__ == "__main__":
    main()
