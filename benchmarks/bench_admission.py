"""Measure ``RENDITION_DECODE_UNIT_S``: seconds of translator time per admission unit
(source tokens x beam x max output tokens, ``rendition.service.admission``).

Runs the shipped translator (or ``--model``) on one search per group of sentences
(``Translator.core``, groups under a token budget), with EOS forbidden until the length limit
(``min_length``), so every hypothesis runs to its limit: the worst case the admission check must
bound.  Prints seconds per unit for each shape and the largest, which is the setting's value.

    python benchmarks/bench_admission.py [--threads 2] [--model DIR]
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from rendition.model.translation.options import TranslationOptions
from rendition.model.translation.search import max_output_lengths
from rendition.service.admission import translation_units
from rendition.service.engines import TranslationEngine, TranslationJob, load_translator

SENTENCE = "The committee will meet again next week to discuss the budget of the new school in the village."


def measure(engine: TranslationEngine, words: int, sentences: int, beam: int, max_length: int) -> dict:
    text = " ".join((SENTENCE.split() * 50)[:words]) + "."
    ids = engine.pre(TranslationJob([text] * sentences, "en", "fr"))
    limits = max_output_lengths([len(x) for x in ids], TranslationOptions(max_length=max_length))
    opts = TranslationOptions(beam_size=beam, max_length=max_length, min_length=min(limits) - 1)
    budget, start, seconds = 8192, 0, 0.0  # source tokens x beam per group
    per_batch = max(1, min(64, budget // (len(ids[0]) * beam)))
    while start < len(ids):
        batch = ids[start : start + per_batch]
        t0 = time.perf_counter()
        engine.translator.core(batch, opts)
        seconds += time.perf_counter() - t0
        start += per_batch
    units = translation_units([len(x) for x in ids], beam, limits)
    return {"source_tokens": len(ids[0]), "sentences": sentences, "beam": beam, "max_length": max_length,
            "out_limit": limits[0], "units": units, "seconds": round(seconds, 3), "unit_s": seconds / units}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model", default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    engine = TranslationEngine(load_translator(args.model, "cpu", "float32"))
    engine.translator.core(engine.pre(TranslationJob(["Hello."], "en", "fr")), TranslationOptions(beam_size=2, max_length=8))  # warm-up
    shapes = [  # (words, sentences, beam, max_length)
        (5, 16, 1, 16), (5, 16, 4, 16), (20, 8, 4, 64), (20, 8, 8, 64), (40, 4, 8, 128), (80, 2, 4, 256),
        (150, 1, 8, 512),
    ]
    rows = [min((measure(engine, *s) for _ in range(2)), key=lambda r: r["seconds"]) for s in shapes]  # best of 2
    for r in rows:
        print(json.dumps(r))
    print(json.dumps({"decode_unit_s_max": max(r["unit_s"] for r in rows)}))


if __name__ == "__main__":
    main()
