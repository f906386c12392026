"""The BLEU cost of keeping the spans that must not change (URLs, paths, code, names...; ``rendition.model.text.spans``):
every committed test split named, both directions, through the text pipeline without and with
the protection, side by side.

    python benchmarks/span_protection.py --sets en-fr everyday.en-fr conv.en-fr

Prints per split and direction sacreBLEU BLEU and chrF without and with the protection, and how
many source sentences hold a span the protection replaces.  Only those are translated a second
time: the pipeline sends every other sentence to the translator unchanged.  The figures and the
reason the protection is on by default (RENDITION_PROTECT_SPANS): docs/benchmarks.md.
"""

from __future__ import annotations

import argparse

import torch
from sacrebleu.metrics import BLEU, CHRF

from rendition.model.text import spans
from rendition.model.text.cli import translate_lines
from rendition.model.training.data import SPLITS_DIR, read_tsv
from rendition.model.translation.translator import DEFAULT_TRANSLATOR, Translator


def split_options(description: str, sets: list[str]) -> argparse.ArgumentParser:
    """The options of a script that translates committed test splits through the text pipeline."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--model-dir", default=str(DEFAULT_TRANSLATOR))
    ap.add_argument("--sets", nargs="+", default=sets)
    ap.add_argument("--compute-type", default="int8", help="int8 (default: the service's on a CPU that runs it), float32 ...")
    ap.add_argument("--beam-size", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    return ap


def main() -> None:
    a = split_options(__doc__.split("\n\n")[0], ["en-fr", "everyday.en-fr", "conv.en-fr"]).parse_args()
    torch.set_num_threads(a.threads)
    tr = Translator.from_pretrained(a.model_dir, compute_type=a.compute_type)
    for name in a.sets:
        pairs = read_tsv(SPLITS_DIR / f"test.{name}.tsv")
        for s, t in (("en", "fr"), ("fr", "en")):
            srcs = [p.src if s == "en" else p.tgt for p in pairs]
            refs = [p.tgt if s == "en" else p.src for p in pairs]
            held = [k for k, x in enumerate(srcs) if spans.spans(x, s)]
            plain = translate_lines(tr, srcs, s, t, progress=False, protect_spans=False, beam_size=a.beam_size)
            kept = translate_lines(tr, [srcs[k] for k in held], s, t, progress=False, beam_size=a.beam_size)
            protected = list(plain)
            for k, h in zip(held, kept):
                protected[k] = h
            row = [m().corpus_score(hyps, [refs]).score for hyps in (plain, protected) for m in (BLEU, CHRF)]
            print(
                f"{name} {s}-{t}: BLEU {row[0]:.2f} -> {row[2]:.2f} ({row[2] - row[0]:+.2f}), chrF {row[1]:.2f} -> {row[3]:.2f} "
                f"({len(srcs)} sentences, {len(held)} with a span kept)", flush=True,
            )  # fmt: skip


if __name__ == "__main__":
    main()
