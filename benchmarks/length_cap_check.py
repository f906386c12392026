"""Is legitimate text ever refused for length?  Every sentence of the held-out test splits, alone
and doubled (``sentence + " " + sentence``), through the service's rules: split into sentences
(``rendition.model.text.segment``), beam search under the length caps (``TranslationOptions``: min(max_length,
a x source + b)), and for a translation that reaches its cap without ending the second decoding
with no repeated n-gram (RENDITION_LENGTH_FALLBACK_NO_REPEAT_NGRAM); a text is *refused* when a
sentence of it still reaches its cap.

    python benchmarks/length_cap_check.py                    # every en-fr test split, both directions
    python benchmarks/length_cap_check.py --per-split 50     # a slice: the first 50 pairs of each

Prints, per split and direction, the texts checked, the sentences that needed the second decoding
and the texts refused (listed); exits 1 when any was refused.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass

from rendition.model.text import segment
from rendition.model.training.data import SPLITS_DIR, read_tsv
from rendition.model.translation.options import TranslationOptions
from rendition.model.translation.search import max_output_lengths
from rendition.model.translation.translator import Translator

SPLITS = (
    "test.en-fr.tsv",
    "test.ui.en-fr.tsv",
    "test.help.en-fr.tsv",
    "test.everyday.en-fr.tsv",
    "test.dialogue.en-fr.tsv",
    "test.daily.en-fr.tsv",
    "test.dict.en-fr.tsv",
)


@dataclass
class Counts:
    texts: int = 0
    sentences: int = 0
    fallbacks: int = 0  # sentences decoded a second time
    refused: int = 0  # texts with a sentence at its cap after the second decoding


def default_fallback_ngram() -> int:
    from rendition.service.settings import Settings

    return Settings.model_fields["length_fallback_no_repeat_ngram"].default


def check(tr: Translator, texts: list[str], source: str, target: str, beam: int, max_length: int, ngram: int) -> tuple[Counts, list[str]]:
    """The service's length rule over ``texts``: (counts, the texts refused)."""
    docs = [segment.split(t, source) for t in texts]
    sentences = [s for d in docs for s in d.sentences]
    owner = [i for i, d in enumerate(docs) for _ in d.sentences]
    opts = TranslationOptions(beam_size=beam, max_length=max_length)
    ids = tr.preprocess(sentences, target)
    limits = max_output_lengths([len(x) for x in ids], opts)
    first = tr.core(ids, opts)
    cut = [len(h[0].tokens) + 1 >= lim for h, lim in zip(first, limits)]
    redo = [k for k, c in enumerate(cut) if c]
    if redo and ngram > 0:
        again = TranslationOptions(beam_size=beam, max_length=max_length, no_repeat_ngram_size=ngram)
        second = tr.core([ids[k] for k in redo], again)
        for k, h in zip(redo, second):
            cut[k] = len(h[0].tokens) + 1 >= limits[k]
    refused = sorted({owner[k] for k, c in enumerate(cut) if c})
    return Counts(len(texts), len(sentences), len(redo), len(refused)), [texts[i] for i in refused]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-split", type=int, default=0, help="the first N pairs of each split (0: all)")
    ap.add_argument("--beam", type=int, default=4, help="RENDITION_DEFAULT_BEAM_SIZE")
    ap.add_argument("--max-length", type=int, default=256, help="RENDITION_DEFAULT_MAX_LENGTH")
    ap.add_argument("--ngram", type=int, default=None, help="the fallback's no-repeat n-gram size (default: the service's)")
    ap.add_argument("--batch", type=int, default=64, help="texts per search")
    ap.add_argument("--json", help="write the counts here")
    args = ap.parse_args()
    ngram = default_fallback_ngram() if args.ngram is None else args.ngram
    tr = Translator.from_pretrained(device="cpu")
    report: dict[str, dict] = {}
    total = Counts()
    t0 = time.perf_counter()
    for name in SPLITS:
        pairs = read_tsv(SPLITS_DIR / name)
        if args.per_split:
            pairs = pairs[: args.per_split]
        for source, target, side in (("en", "fr", 0), ("fr", "en", 1)):
            lines = [p.src if side == 0 else p.tgt for p in pairs]
            for form, texts in (("alone", lines), ("doubled", [f"{x} {x}" for x in lines])):
                c = Counts()
                refused: list[str] = []
                for s in range(0, len(texts), args.batch):
                    part, why = check(tr, texts[s : s + args.batch], source, target, args.beam, args.max_length, ngram)
                    c.texts, c.sentences = c.texts + part.texts, c.sentences + part.sentences
                    c.fallbacks, c.refused = c.fallbacks + part.fallbacks, c.refused + part.refused
                    refused += why
                key = f"{name} {source}-{target} {form}"
                report[key] = c.__dict__ | {"refused_texts": refused[:20]}
                for f in ("texts", "sentences", "fallbacks", "refused"):
                    setattr(total, f, getattr(total, f) + getattr(c, f))
                print(f"{key:45s} texts {c.texts:5d} sentences {c.sentences:5d} second decodings {c.fallbacks:3d} refused {c.refused}", flush=True)
                for t in refused[:5]:
                    print(f"    refused: {t[:160]!r}")
    summary = total.__dict__ | {"fallback_no_repeat_ngram": ngram, "max_length_a": TranslationOptions().max_length_a, "seconds": round(time.perf_counter() - t0)}
    print(json.dumps(summary))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"total": summary, "splits": report}, f, indent=1, ensure_ascii=False)
    sys.exit(1 if total.refused else 0)


if __name__ == "__main__":
    main()
