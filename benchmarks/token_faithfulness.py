"""Token faithfulness on held-out sentences: do numbers, URLs, paths, command-line options and
identifiers come out of a translation unchanged?

    python benchmarks/token_faithfulness.py                                   # the shipped translator
    python benchmarks/token_faithfulness.py --model-dir OLD --model-dir NEW   # side by side

The sentences are every source side (both directions) of the committed test splits (DDTP, UI
strings, GNOME help, everyday, dialogue; ``data/splits/``) that holds at least one such token.  A
sentence counts as kept when every one of its tokens appears verbatim in the output.  The check is
strict: a number that French writes otherwise ("1.5" -> "1,5", "10:00" -> "10 h") counts as lost,
so the figure to read is the comparison between models on the same sentences, not the share alone.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

import torch

from rendition.model.training.data import SPLITS_DIR, read_tsv
from rendition.model.translation.translator import DEFAULT_TRANSLATOR, Translator

KINDS = {
    "url": r"https?://\S+[\w/]",
    "path": r"(?<!\w)/[\w.-]+(?:/[\w.-]+)+",
    "option": r"(?<![\w-])--?[a-z][\w-]+",
    "identifier": r"\b\w+(?:_\w+)+\b|\b[a-z]+[A-Z]\w*\b|\b\w+\.(?:txt|conf|py|sh|xml|html|json|so|deb)\b",
    "number": r"\b\d+(?:[.,:]\d+)*\b",
}
TOKEN = re.compile("|".join(f"(?P<{k}>{v})" for k, v in KINDS.items()))
SETS = ("en-fr", "ui.en-fr", "help.en-fr", "everyday.en-fr", "dialogue.en-fr")


def tokens(text: str) -> list[tuple[str, str]]:
    """(kind, token) for each number, URL, path, option and identifier of ``text``."""
    return [(m.lastgroup, m.group().rstrip(".,")) for m in TOKEN.finditer(text)]


def sentences(sets: tuple[str, ...] = SETS, splits_dir: Path = SPLITS_DIR) -> list[tuple[str, str, str, list[tuple[str, str]]]]:
    """(source, source language, target language, tokens) of each test sentence with tokens."""
    out = []
    for lp in sets:
        for p in read_tsv(splits_dir / f"test.{lp}.tsv"):
            for src, s, t in ((p.src, "en", "fr"), (p.tgt, "fr", "en")):
                if tk := tokens(src):
                    out.append((src, s, t, tk))
    return out


def measure(tr: Translator, rows: list, beam_size: int = 4) -> dict:
    kept, per_kind, lost = 0, Counter(), Counter()
    for s, t in (("en", "fr"), ("fr", "en")):
        sel = [r for r in rows if r[1] == s]
        for r, h in zip(sel, tr.translate([r[0] for r in sel], source=s, target=t, beam_size=beam_size)):
            missing = [(k, x) for k, x in r[3] if x not in h.text]
            kept += not missing
            per_kind.update(k for k, _ in r[3])
            lost.update(k for k, _ in missing)
    return {"sentences": len(rows), "kept": kept, "tokens": dict(per_kind), "lost": dict(lost)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model-dir", action="append", type=Path, help="repeat to compare (default: the shipped translator)")
    ap.add_argument("--compute-type", default="int8", help="int8 (default), float32 ...")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    rows = sentences()
    print(f"{len(rows)} test sentences hold numbers, URLs, paths, options or identifiers")
    for d in a.model_dir or [DEFAULT_TRANSLATOR]:
        r = measure(Translator.from_pretrained(d, compute_type=a.compute_type), rows)
        by_kind = ", ".join(f"{k} {r['tokens'][k] - r['lost'].get(k, 0)}/{r['tokens'][k]}" for k in KINDS if k in r["tokens"])
        print(f"{d}: {r['kept']}/{r['sentences']} sentences keep every token ({100 * r['kept'] / r['sentences']:.1f}%); tokens kept: {by_kind}")


if __name__ == "__main__":
    main()
