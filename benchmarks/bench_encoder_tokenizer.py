"""Tokenizers for the sentence encoder, by measurement: tokens per sentence and <unk> rate on the
held-out splits, for the shipped tokenizer extended with byte fallback and for new byte-fallback
unigram models of several sizes trained on the broad distillation set (rendition.model.training.distill_data).

Fewer tokens per sentence means less token2token work (DiSAN is quadratic in length); a larger
vocabulary costs embedding parameters (vocab x d_embed) and needs more data per piece.

    python benchmarks/bench_encoder_tokenizer.py --runs RUNS --sizes 8000 16000   # RUNS: distill_data's --runs folder
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rendition.model.embedding.encoder import DEFAULT_ENCODER  # noqa: E402
from rendition.model.tokenizer import UNK_ID, Tokenizer, train_tokenizer, with_byte_fallback  # noqa: E402
from rendition.model.training.data import SPLITS_DIR, read_tsv  # noqa: E402
from rendition.model.training.distill_data import GENERAL_SOURCES, english_list, parallel_pairs  # noqa: E402


def held_out_sets() -> dict[str, list[str]]:
    sets: dict[str, list[str]] = {}
    general = [p for src in GENERAL_SOURCES for p in read_tsv(SPLITS_DIR / f"test.{src}.en-fr.tsv")]
    sets["general en"] = [p.src for p in general]
    sets["general fr"] = [p.tgt for p in general]
    ddtp = read_tsv(SPLITS_DIR / "test.en-fr.tsv")
    sets["ddtp en"] = [p.src for p in ddtp]
    sets["ddtp fr"] = [p.tgt for p in ddtp]
    sets["ddtp de"] = [p.tgt for p in read_tsv(SPLITS_DIR / "test.en-de.tsv")]
    return sets


def measure(tok: Tokenizer, sets: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    out = {}
    for name, sents in sets.items():
        ids = tok.encode(sents)
        n = sum(len(x) for x in ids)
        out[name] = {"tokens_per_sentence": n / len(sents), "unk_rate": sum(x.count(UNK_ID) for x in ids) / max(1, n)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=Path, required=True, help="directory with english.txt (python -m rendition.model.training.distill_data build)")
    ap.add_argument("--sizes", type=int, nargs="*", default=[8000, 16000], help="new unigram models to train and measure")
    ap.add_argument("--multiword", action="store_true", help="train them with pieces that span words (train_tokenizer(multiword=True))")
    ap.add_argument("--models", type=Path, nargs="*", default=[], help="SentencePiece models to measure as they are")
    ap.add_argument("--sample", type=int, default=200_000, help="training sentences (half English, half translations)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    sets = held_out_sets()
    rng = random.Random(0)
    english = english_list(args.runs)[: args.sample // 2]
    pairs = parallel_pairs()
    foreign = [xx for xx, _ in rng.sample(pairs, min(len(pairs), args.sample // 2))]
    texts = english + foreign
    rng.shuffle(texts)
    res: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        shipped = with_byte_fallback(DEFAULT_ENCODER / "sentencepiece.model", Path(tmp) / "shipped_bf.model")
        res[f"shipped + bytes ({shipped.vocab_size})"] = measure(shipped, sets)
        for size in args.sizes:
            tok = train_tokenizer(texts, Path(tmp) / f"bf{size}", size, ("en", "fr", "de"), byte_fallback=True, multiword=args.multiword)
            res[f"new unigram {size}" + (f" multi-word ({tok.vocab_size})" if args.multiword else "")] = measure(tok, sets)
        for path in args.models:
            tok = Tokenizer(path)
            res[f"{path.name} ({tok.vocab_size})"] = measure(tok, sets)
    cols = list(sets)
    print("| tokenizer | " + " | ".join(f"{c} tok/sent" for c in cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for name, r in res.items():
        print(f"| {name} | " + " | ".join(f"{r[c]['tokens_per_sentence']:.2f}" for c in cols) + " |")
    if args.json:
        args.json.write_text(json.dumps(res, indent=2) + "\n")


if __name__ == "__main__":
    main()
