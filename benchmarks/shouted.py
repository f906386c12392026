"""Sentences written in capitals (``rendition.model.text.casing``): committed test splits with every
source sentence in capitals, through the text pipeline as the capitals came and in sentence case
(the pipeline's default), scored without case against the reference.

    python benchmarks/shouted.py --sets everyday.en-fr dialogue.en-fr --limit 500

Prints per split and direction sacreBLEU BLEU and chrF (both case-insensitive) of the sentences
sent in capitals as they are, then in sentence case, and beside them the same sentences as
written: how much of what capitals cost the sentence case wins back.  The figures:
docs/api.md (Sentences written in capitals).
"""

from __future__ import annotations

import sys
from pathlib import Path
from unittest import mock

import torch
from sacrebleu.metrics import BLEU, CHRF

from rendition.model.text import casing
from rendition.model.text.cli import translate_lines
from rendition.model.training.data import SPLITS_DIR, read_tsv
from rendition.model.translation.translator import Translator

sys.path.insert(0, str(Path(__file__).resolve().parent))
from span_protection import split_options  # noqa: E402


def main() -> None:
    ap = split_options(__doc__.split("\n\n")[0], ["everyday.en-fr", "dialogue.en-fr"])
    ap.add_argument("--limit", type=int, default=500, help="the first N sentences of each split")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    tr = Translator.from_pretrained(a.model_dir, compute_type=a.compute_type)
    bleu, chrf = BLEU(lowercase=True), CHRF(lowercase=True)
    for name in a.sets:
        pairs = read_tsv(SPLITS_DIR / f"test.{name}.tsv")[: a.limit]
        for s, t in (("en", "fr"), ("fr", "en")):
            srcs = [p.src if s == "en" else p.tgt for p in pairs]
            refs = [p.tgt if s == "en" else p.src for p in pairs]
            loud = [x.upper() for x in srcs]
            shouted = sum(casing.shouted(x, s) for x in loud)
            with mock.patch.object(casing, "shouted", lambda *_: False):
                as_sent = translate_lines(tr, loud, s, t, progress=False, beam_size=a.beam_size)
            cased = translate_lines(tr, loud, s, t, progress=False, beam_size=a.beam_size)
            written = translate_lines(tr, srcs, s, t, progress=False, beam_size=a.beam_size)
            row = [(bleu.corpus_score(h, [refs]).score, chrf.corpus_score(h, [refs]).score) for h in (as_sent, cased, written)]
            print(
                f"{name} {s}-{t} ({len(srcs)} sentences, {shouted} taken as written in capitals): BLEU in capitals "
                f"{row[0][0]:.2f} -> {row[1][0]:.2f} in sentence case (as written {row[2][0]:.2f}); chrF "
                f"{row[0][1]:.2f} -> {row[1][1]:.2f} ({row[2][1]:.2f})", flush=True,
            )  # fmt: skip


if __name__ == "__main__":
    main()
