"""Token faithfulness on held-out sentences: do numbers, URLs, e-mail addresses, paths (POSIX and
Windows), command-line options, identifiers, person and company names and commands come out of a
translation unchanged?

    python benchmarks/token_faithfulness.py                                   # the shipped translator
    python benchmarks/token_faithfulness.py --model-dir OLD --model-dir NEW   # side by side
    python benchmarks/token_faithfulness.py --sets verbatim                   # names and code only
    python benchmarks/token_faithfulness.py --pipeline                        # through the text pipeline,
                                                                              # spans unprotected, then protected

The sentences are every source side (both directions) of the committed test splits (DDTP, UI
strings, GNOME help, everyday, dialogue; ``data/splits/``) that holds at least one such token, found
by pattern, and the names-and-code set ``test.verbatim.en-fr.tsv``: sentences written for this
check (not the training templates of ``corpus/verbatim.py``), each with the tokens it must keep
listed in ``test.verbatim.tokens.tsv`` (person and company names, commands with their arguments,
Windows paths with spaces cannot be found by pattern).  A sentence counts as kept when every one
of its tokens appears verbatim in the output.  The check is strict: a number that French writes
otherwise ("1.5" -> "1,5", "10:00" -> "10 h") counts as lost, so the figure to read is the
comparison between models on the same sentences, not the share alone.  ``--pipeline`` translates
through the text pipeline every path runs (``rendition.model.text.pipeline``), once without and once
with the protection of the spans that must not change (``rendition.model.text.spans``).
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

import torch

from rendition.model.text.cli import translate_lines
from rendition.model.training.data import SPLITS_DIR, read_tsv
from rendition.model.translation.translator import DEFAULT_TRANSLATOR, Translator

KINDS = {
    "email": r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+",
    "winpath": r"\b[A-Z]:\\[\w.\\-]*\w|\\\\[\w.-]+(?:\\[\w.-]+)+",
    "url": r"https?://\S+[\w/]",
    "path": r"(?<!\w)/[\w.-]+(?:/[\w.-]+)+",
    "option": r"(?<![\w-])--?[a-z][\w-]+",
    "identifier": r"\b\w+(?:_\w+)+\b|\b[a-z]+[A-Z]\w*\b|\b\w+\.(?:txt|conf|py|sh|xml|html|json|so|deb)\b",
    "number": r"\b\d+(?:[.,:]\d+)*\b",
}
TOKEN = re.compile("|".join(f"(?P<{k}>{v})" for k, v in KINDS.items()))
LISTED = ("name", "company", "command")  # kinds only the names-and-code set lists
SETS = ("en-fr", "ui.en-fr", "help.en-fr", "everyday.en-fr", "dialogue.en-fr")
VERBATIM = "verbatim"  # test.verbatim.en-fr.tsv with test.verbatim.tokens.tsv


def tokens(text: str) -> list[tuple[str, str]]:
    """(kind, token) for each number, URL, path, option and identifier of ``text``."""
    return [(m.lastgroup, m.group().rstrip(".,")) for m in TOKEN.finditer(text)]


def listed_tokens(path: Path) -> dict[str, list[tuple[str, str]]]:
    """English sentence -> its (kind, token) list from a ``.tokens.tsv`` file (``kind:token|...``)."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            en, listed = line.split("\t")
            out[en] = [tuple(t.split(":", 1)) for t in listed.split("|")]
    return out


def sentences(sets: tuple[str, ...] = (*SETS, VERBATIM), splits_dir: Path = SPLITS_DIR) -> list[tuple[str, str, str, list[tuple[str, str]]]]:
    """(source, source language, target language, tokens) of each test sentence with tokens."""
    out = []
    for lp in sets:
        if lp == VERBATIM:
            listed = listed_tokens(splits_dir / f"test.{VERBATIM}.tokens.tsv")
            for p in read_tsv(splits_dir / f"test.{VERBATIM}.en-fr.tsv"):
                out += [(p.src, "en", "fr", listed[p.src]), (p.tgt, "fr", "en", listed[p.src])]
            continue
        for p in read_tsv(splits_dir / f"test.{lp}.tsv"):
            for src, s, t in ((p.src, "en", "fr"), (p.tgt, "fr", "en")):
                if tk := tokens(src):
                    out.append((src, s, t, tk))
    return out


class Piped:
    """A translator seen through the text pipeline (``translate`` as ``measure`` calls it)."""

    def __init__(self, tr: Translator, protect_spans: bool):
        self.tr, self.protect_spans = tr, protect_spans

    def translate(self, texts: list[str], source: str, target: str, beam_size: int = 4) -> list:
        done = translate_lines(self.tr, texts, source, target, progress=False, protect_spans=self.protect_spans, beam_size=beam_size)
        return [type("T", (), {"text": t})() for t in done]


def measure(tr: Translator | Piped, rows: list, beam_size: int = 4) -> dict:
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
    ap.add_argument("--sets", nargs="+", default=[*SETS, VERBATIM], help=f"test splits (default: all; {VERBATIM!r}: the names-and-code set)")
    ap.add_argument("--pipeline", action="store_true", help="through the text pipeline, spans unprotected then protected")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    rows = sentences(tuple(a.sets))
    print(f"{len(rows)} test sentences hold numbers, URLs, e-mail addresses, paths, options, identifiers, names or commands")
    for d in a.model_dir or [DEFAULT_TRANSLATOR]:
        tr = Translator.from_pretrained(d, compute_type=a.compute_type)
        for name, t in [("pipeline, spans unprotected", Piped(tr, False)), ("pipeline, spans protected", Piped(tr, True))] if a.pipeline else [("", tr)]:
            r = measure(t, rows)
            by_kind = ", ".join(f"{k} {r['tokens'][k] - r['lost'].get(k, 0)}/{r['tokens'][k]}" for k in (*KINDS, *LISTED) if k in r["tokens"])
            label = f"{d} ({name})" if name else str(d)
            print(f"{label}: {r['kept']}/{r['sentences']} sentences keep every token ({100 * r['kept'] / r['sentences']:.1f}%); tokens kept: {by_kind}")


if __name__ == "__main__":
    main()
